"""The library: the headless API that the CLI, the TUI and later servers all call.

    lib = Library()                     # LOCALREASON_HOME or the per-user data folder
    report = lib.ingest(["~/notes"], collection="work")
    lib.collections(); lib.documents(); lib.document("doc_..."); lib.chunk("chk_...")

Ingestion is a two-stage pipeline: a background thread reads, hashes, parses and
chunks files while the calling thread embeds them in large batches and writes
each document in its own transaction. Embedding is the slow part, so the rest
hides behind it.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .config import Settings, load_settings
from .errors import Interrupted, IngestFileError, LibraryError, NotFoundError, StorageFull, ValidationError
from .ids import check_id, derived_id, id_kind, random_id
from .ingest.chunk import ChunkParams
from .ingest.walk import Candidate, discover, name_is_text, os_reason, path_text, read_regular
from .ingest.worker import Job, Limits, ParseWorker, shared_worker
from .store import lock as write_lock
from .store.db import Store, now
from .store.vectors import VectorIndex
from . import retrieval
from .retrieval import UNSET
from .types import (LEVEL_PARAGRAPH, Chunk, Collection, Document, Evidence, EvidencePacket, ExpandResult,
                    FileResult, IngestReport, ItemHit, SearchHit)  # fmt: skip

DEFAULT_COLLECTION = "default"
EMBED_GROUP = 256
"""Paragraph chunks gathered (across documents) before one embedding call: large enough for full batches."""


@dataclass(frozen=True)
class Progress:
    """One step of a long operation, for progress bars."""

    done: int
    total: int
    chunks: int
    path: str = ""
    status: str = ""


ProgressCallback = Callable[[Progress], None]


@dataclass
class _Prepared:
    path: str
    """The file's path as text (see walk.path_text): its identity in the library."""
    doc: dict
    chunks: list[Chunk]
    status: str
    notes: list[str]

    @property
    def paragraphs(self) -> list[Chunk]:
        return [c for c in self.chunks if c.level == LEVEL_PARAGRAPH]


class Library:
    """A local library of collections, documents and chunks under one data folder.

    Safe to use beside other processes on the same folder: each read sees every write
    committed before it (the vector index catches up with other processes' writes
    before each use), and writers (ingest, sync, remove, reindex) take turns.
    """

    def __init__(self, home: str | Path | None = None, *, settings: Settings | None = None, embedder=None,
                 generator=None) -> None:  # fmt: skip
        self.settings = settings or load_settings(home)
        self._store: Store | None = None
        self._vectors: VectorIndex | None = None
        self._embedder = embedder
        self._generator = generator
        self._init_lock = threading.RLock()
        """Lazy parts are created once even when front ends call from several threads (the TUI does)."""
        self._write_mutex = threading.RLock()
        self._write_depth = 0
        self._write_fd: int | None = None
        self.notice: Callable[[str], None] | None = None
        """Told (one line for a person) when a write must wait for another program's."""

    # ------------------------------------------------------------ lifecycle

    @property
    def home(self) -> Path:
        return self.settings.home

    def _lazy(self, attr: str, make):
        """``self.<attr>``, made by ``make()`` the first time (once, whichever thread asks first)."""
        value = getattr(self, attr)
        if value is None:
            with self._init_lock:
                value = getattr(self, attr)
                if value is None:
                    value = make()
                    setattr(self, attr, value)
        return value

    @property
    def store(self) -> Store:
        return self._lazy("_store", lambda: Store(self.settings.db_path))

    @property
    def embedder(self):
        """The embedding backend, created on first use (the model itself loads on first embed)."""
        return self._lazy("_embedder", self._make_embedder)

    def _make_embedder(self):
        from .embed import SentenceTransformerEmbedder
        from .models import resolve_embedding_model

        return SentenceTransformerEmbedder(resolve_embedding_model(self.settings), self.settings.embed_batch_size)

    def close(self) -> None:
        self._save_vectors_if_dirty()
        if self._store is not None:
            self._store.close()
            self._store = None
        self._vectors = None

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def _writing(self, what: str):
        """Hold the library's writer lock (reentrant within this process: sync calls ingest)."""
        with self._write_mutex:
            if self._write_depth == 0:
                self.store  # the folder exists and the schema is current
                self._write_fd = write_lock.acquire(self.settings.lock_path, what, self.notice)
            self._write_depth += 1
            try:
                yield
            finally:
                self._write_depth -= 1
                if self._write_depth == 0 and self._write_fd is not None:
                    write_lock.release(self._write_fd)
                    self._write_fd = None

    # ------------------------------------------------------------ embedding model identity

    def check_embedding_model(self) -> None:
        """Refuse to mix vectors: the configured model must be the one that built this library."""
        store = self.store
        stored = store.get_meta("embedding_fingerprint")
        if stored is None or store.paragraph_count() == 0:
            return
        if stored != self.embedder.fingerprint:
            built_with = store.get_meta("embedding_model") or "another model"
            raise LibraryError(
                f"This library's vectors were made with the embedding model {built_with!r}, "
                f"but the configured model is {self.embedder.name!r} (a different model).",
                hint=f"Set LOCALREASON_EMBEDDING_MODEL back to {built_with!r}, or run `localreason reindex` "
                "to re-embed every chunk with the configured model.",
            )

    def _model_meta(self, dim: int) -> dict[str, str]:
        return {"embedding_model": self.embedder.name, "embedding_fingerprint": self.embedder.fingerprint,
                "embedding_dim": str(dim)}  # fmt: skip

    def _vector_identity(self) -> str:
        """What a vector cache must have been built from: this model and the current vector epoch."""
        return f"{self.embedder.fingerprint}@{self.store.vector_epoch()}"

    @property
    def vectors(self) -> VectorIndex:
        """The FAISS index, loaded (or rebuilt from SQLite) on first use and in step with the database."""
        vectors = self._lazy("_vectors", self._open_vectors)
        if vectors.generation != self.store.generation():  # another process wrote since
            with self._init_lock:
                if self._vectors is vectors and vectors.identity != self._vector_identity():
                    self._vectors = None  # re-embedded elsewhere (reindex): start again from SQLite
                    return self._lazy("_vectors", self._open_vectors)
            vectors.sync(self.store)
        return vectors

    def _open_vectors(self) -> VectorIndex:
        self.check_embedding_model()
        dim = self.store.get_meta("embedding_dim")
        dim = int(dim) if dim else int(self.embedder.dim)
        vectors = VectorIndex.open(self.settings.vectors_path, self.store, dim, self._vector_identity())
        if vectors.repaired and not self.store.read_only:  # publish the repair: other processes need not redo it
            vectors.save()
        return vectors

    def _save_vectors_if_dirty(self) -> None:
        """Publish the index for other processes; a full or read-only disk only costs them a rebuild."""
        if self._vectors is not None and self._vectors.dirty and self._store is not None \
                and not self._store.read_only:  # fmt: skip
            self._vectors.save()

    # ------------------------------------------------------------ lookup

    def collections(self) -> list[Collection]:
        return self.store.collection_rows()

    def collection(self, id_or_name: str) -> Collection:
        """A collection by id or by name."""
        if not isinstance(id_or_name, str) or not id_or_name.strip():
            raise ValidationError("The collection is empty.", hint="Give a collection name or id.")
        if id_or_name.startswith("col_"):
            check_id(id_or_name, "collection", "collection id")
        found = self.store.find_collection(id_or_name)
        if found is None:
            raise NotFoundError(f"No collection {id_or_name!r} in this library.",
                                hint="`localreason library` lists the collections.")  # fmt: skip
        return found

    def documents(self, collection: str | None = None) -> list[Document]:
        cid = self.collection(collection).id if collection is not None else None
        return self.store.document_rows(cid)

    def document(self, document_id: str) -> Document:
        check_id(document_id, "document", "document id")
        doc = self.store.document_row(document_id)
        if doc is None:
            raise NotFoundError(f"No document {document_id} in this library.",
                                hint="`localreason library --documents` lists the documents.")  # fmt: skip
        return doc

    def document_text(self, document_id: str) -> str:
        self.document(document_id)
        return self.store.document_text(document_id) or ""

    def chunk(self, chunk_id: str) -> Chunk:
        check_id(chunk_id, "chunk", "chunk id")
        chunk = self.store.chunk_row(chunk_id)
        if chunk is None:
            raise NotFoundError(f"No chunk {chunk_id} in this library.")
        return chunk

    def chunks(self, document_id: str, level: int | None = None) -> list[Chunk]:
        self.document(document_id)
        return self.store.chunk_rows(document_id, level)

    def get(self, any_id: str) -> Collection | Document | Chunk:
        """Look up a collection, document or chunk by its id (the prefix says which)."""
        kind = id_kind(any_id) if isinstance(any_id, str) else None
        prefixed = {"col_": "collection", "doc_": "document", "chk_": "chunk"}
        if kind is None and isinstance(any_id, str) and any_id[:4] in prefixed:
            check_id(any_id, prefixed[any_id[:4]], f"{prefixed[any_id[:4]]} id")  # raises with the specific reason
        if kind is None:
            raise ValidationError(
                f"{any_id!r} is not a valid id.",
                hint="Ids start with col_, doc_ or chk_ followed by 16 characters; `localreason library` lists them.",
            )
        return {"collection": self.collection, "document": self.document, "chunk": self.chunk}[kind](any_id)

    # ------------------------------------------------------------ retrieval (see retrieval.py)

    def find_items(self, query: str, *, limit: object = 10) -> list[ItemHit]:
        """Documents and collections about ``query`` (by meaning, or by literal title/path/name)."""
        return retrieval.find_items(self, query, limit=limit)

    def deep_search(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                    limit: object = 10) -> list[SearchHit]:  # fmt: skip
        """Passages about ``query``, best first (hybrid dense + BM25), optionally scoped."""
        return retrieval.deep_search(self, query, document_id=document_id, collection_id=collection_id, limit=limit)

    def deep_read(self, chunk_id: str) -> dict:
        """One chunk in full with its place in the document tree."""
        return retrieval.deep_read(self, chunk_id)

    def deep_expand(self, chunk_id: str, direction: str, *, window: object = 2) -> ExpandResult:
        """Move from a chunk: ``up``, ``down``, ``previous``, ``next`` or ``surrounding``."""
        return retrieval.deep_expand(self, chunk_id, direction, window=window)

    def progressive_search(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                           limit: object = 50) -> Evidence:  # fmt: skip
        """The bounded, ranked evidence set that ``reason`` uses."""
        return retrieval.progressive_search(self, query, document_id=document_id, collection_id=collection_id,
                                            limit=limit)  # fmt: skip

    def evidence_packet(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                        limit: object = 50, max_tokens: object = 8000) -> EvidencePacket:  # fmt: skip
        """Exactly the evidence packet ``reason`` would send to the model."""
        return retrieval.evidence_packet(self, query, document_id=document_id, collection_id=collection_id,
                                         limit=limit, max_tokens=max_tokens)  # fmt: skip

    # ------------------------------------------------------------ reason

    @property
    def generator(self):
        """The configured GGUF model, shared by every Library of this process and loaded on first use."""
        return self._lazy("_generator", self._make_generator)

    def _make_generator(self):
        from .generate import shared_generator
        from .models import resolve_gguf

        return shared_generator(resolve_gguf(self.settings))

    def ask(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET, limit: object = 50,
            max_tokens: object = 8000, stage=None, cancel=None):  # fmt: skip
        """Answer ``query`` from the library with verified citations (see reason.py). Read-only."""
        from .reason import reason

        return reason(self, query, generator=self.generator, document_id=document_id, collection_id=collection_id,
                      limit=limit, max_tokens=max_tokens, style=self.settings.answer_style,
                      lead=self.settings.answer_lead, stage=stage, cancel=cancel)  # fmt: skip

    # ------------------------------------------------------------ collections

    def ensure_collection(self, name: str) -> Collection:
        name = _check_collection_name(name)
        found = self.store.find_collection(name)
        if found is None:
            self.store.insert_collection(random_id("col"), name)
            found = self.store.find_collection(name)
        assert found is not None
        return found

    # ------------------------------------------------------------ ingest

    def ingest(self, paths: Iterable[str | Path], collection: str = DEFAULT_COLLECTION, *,
               include: list[str] | None = None, exclude: list[str] | None = None, prune: bool = False,
               progress: ProgressCallback | None = None) -> IngestReport:  # fmt: skip
        """Add files and folders to ``collection``; skip unchanged files, re-index changed ones.

        Every file given (or found in a given folder) appears in the report as added,
        updated, unchanged, skipped or failed with a reason. With ``prune``, documents
        whose files have disappeared from the given folders (or a given file that no
        longer exists) are removed. If the disk fills up, the run stops, what was
        committed is kept, and ``report.stopped`` says why.
        """
        paths = [str(p) for p in paths]
        if not paths:
            raise ValidationError("No paths given.", hint="Name at least one file or folder to ingest.")
        name = _check_collection_name(collection)
        with self._writing(f"ingest into {name!r}"):
            return self._ingest(paths, name, include, exclude, prune, progress)

    def _ingest(self, paths: list[str], collection: str, include, exclude, prune: bool,
                progress: ProgressCallback | None) -> IngestReport:  # fmt: skip
        start = time.perf_counter()
        col = self.ensure_collection(collection)
        report = IngestReport(col.id, col.name)
        candidates, problems, roots = discover(paths, include, exclude)
        for p in problems:
            report.files.append(FileResult(path_text(p.path), p.status, p.reason))
        known = self.store.hashes_for(col.id)
        try:
            for root in roots:
                self.store.add_source(col.id, path_text(root), list(include or []), list(exclude or []))
            for c in candidates:
                if c.root is None and name_is_text(c.path):
                    self.store.add_source(col.id, path_text(c.path), [], [])
            self._run_pipeline(col, candidates, known, report, progress)
            if prune and not report.stopped:
                self._prune(col, candidates, roots, problems, known, report)
        except StorageFull as exc:
            report.stopped = f"{exc.message} {exc.hint or ''}".strip()
        except KeyboardInterrupt as exc:
            report.seconds = time.perf_counter() - start
            self._save_vectors_if_dirty()
            raise Interrupted(report) from exc
        self._save_vectors_if_dirty()
        report.seconds = time.perf_counter() - start
        return report

    def _limits(self) -> Limits:
        s = self.settings
        return Limits(s.max_parse_seconds, s.max_parse_memory_mb, int(s.max_unpacked_mb * 2**20))

    def _run_pipeline(self, col: Collection, candidates: list[Candidate], known: dict, report: IngestReport,
                      progress: ProgressCallback | None) -> None:  # fmt: skip
        """Prepare files on a background thread (parsing in a child process) while this one embeds and writes."""
        s = self.settings
        params = ChunkParams(s.chunk_tokens, s.chunk_overlap, s.section_max_tokens)
        max_bytes = int(s.max_file_mb * 1024 * 1024)
        items: queue.Queue = queue.Queue(maxsize=64)
        stop = threading.Event()
        done_marker = object()
        parser = shared_worker(self._limits())
        crash: list[BaseException] = []

        def produce() -> None:
            try:
                for cand in candidates:
                    if stop.is_set():
                        return
                    items.put(_prepare(cand, col.id, known, params, max_bytes, parser))
            except BaseException as exc:  # noqa: BLE001 - reported below as the reason for the files not done
                crash.append(exc)
            finally:
                items.put(done_marker)

        worker = threading.Thread(target=produce, name="localreason-parse", daemon=True)
        tally = _Tally(report, progress, len(candidates))
        worker.start()
        finished = False
        try:
            self._consume(items, done_marker, tally)
            finished = True
        except StorageFull as exc:
            tally.fail_rest(candidates, f"not ingested: {exc.message}")
            raise
        finally:
            stop.set()
            if not finished:
                parser.kill()  # a parse in progress ends now (Ctrl-C, a full disk); the next ingest starts another
            while worker.is_alive():  # unblock a producer waiting on a full queue
                try:
                    items.get(timeout=0.05)
                except queue.Empty:
                    pass
        why = f"{crash[0].__class__.__name__}: {crash[0]}" if crash else "an internal error"
        tally.fail_rest(candidates, f"not processed ({why}); run the same command again")

    def _consume(self, items: queue.Queue, done_marker: object, tally: "_Tally") -> None:
        """Take prepared files off the queue; embed and write them in groups of about EMBED_GROUP paragraphs."""
        pending: list[_Prepared] = []
        pending_chunks = 0
        while True:
            item = items.get()
            if item is done_marker:
                break
            if isinstance(item, FileResult):
                tally.record(item)
                continue
            pending.append(item)
            pending_chunks += len(item.paragraphs)
            if pending_chunks >= EMBED_GROUP:
                self._commit(pending, tally)
                pending, pending_chunks = [], 0
        self._commit(pending, tally)

    def _commit(self, prepared: list[_Prepared], tally: "_Tally") -> None:
        """Embed the new paragraph texts of ``prepared`` in one call, then write each document on its own."""
        if not prepared:
            return
        vectors = self.vectors  # checks the model and loads/catches up the index first
        reuse: dict[str, bytes] = {}
        for p in prepared:
            if p.status == "updated":
                reuse.update(self.store.old_embeddings(p.doc["id"]))
        summaries = [document_summary(p.doc["title"], p.doc["text"]) for p in prepared]
        new_texts = list(dict.fromkeys([c.text for p in prepared for c in p.paragraphs if c.text not in reuse]
                                       + summaries))  # fmt: skip
        new_vecs = self.embedder.embed(new_texts) if new_texts else None
        by_text = {t: new_vecs[i] for i, t in enumerate(new_texts)} if new_vecs is not None else {}
        if new_vecs is not None and self.store.get_meta("embedding_fingerprint") is None:
            with self.store.transaction():
                for key, value in self._model_meta(int(new_vecs.shape[1])).items():
                    self.store.set_meta(key, value)
        for i, (p, summary) in enumerate(zip(prepared, summaries)):
            p.doc["embedding"] = by_text[summary].tobytes()
            paras = p.paragraphs
            if paras:
                doc_vecs = np.vstack([by_text[c.text] if c.text in by_text
                                      else np.frombuffer(reuse[c.text], dtype=np.float32) for c in paras])  # fmt: skip
            else:
                doc_vecs = np.zeros((0, vectors.dim), dtype=np.float32)
            try:
                vectors.apply(self.store.replace_document(p.doc, p.chunks, doc_vecs), doc_vecs)
            except StorageFull as exc:
                for q in prepared[i:]:
                    tally.record(FileResult(q.path, "failed", f"not written: {exc.message}"))
                raise
            tally.record(FileResult(p.path, p.status, "; ".join(p.notes), p.doc["id"], len(paras)))

    def _prune(self, col: Collection, candidates: list[Candidate], roots: list[Path], problems, known: dict,
               report: IngestReport) -> None:  # fmt: skip
        seen = {path_text(c.path) for c in candidates}
        missing_files = {path_text(p.path) for p in problems if p.reason == "no such file or folder"}
        root_texts = [path_text(r) for r in roots]
        doomed: list[tuple[str, str]] = []
        for path, (doc_id, _) in known.items():
            under_root = any(path.startswith(r + os.sep) for r in root_texts)
            if (under_root and path not in seen) or path in missing_files:
                doomed.append((path, doc_id))
        if not doomed:
            return
        write = self.store.delete_documents((d for _, d in doomed), [(col.id, path) for path in missing_files])
        self.vectors.apply(write)
        for path, doc_id in doomed:
            report.files.append(FileResult(path, "removed", "the file no longer exists", doc_id))

    def sync(self, collection: str | None = None, progress: ProgressCallback | None = None) -> list[IngestReport]:
        """Re-ingest every folder and file previously ingested (into ``collection``, or all), with pruning."""
        with self._writing("sync"):
            cols = [self.collection(collection)] if collection is not None else self.collections()
            reports = []
            for col in cols:
                for source in self.store.sources(col.id):
                    reports.append(self.ingest([source["path"]], col.name, include=source["include"],
                                               exclude=source["exclude"], prune=True, progress=progress))  # fmt: skip
                    if reports[-1].stopped:
                        return reports
            return reports

    # ------------------------------------------------------------ remove and reindex

    def remove(self, target: str) -> dict:
        """Remove a document (by id) or a whole collection (by id or name)."""
        kind = id_kind(target) if isinstance(target, str) else None
        if kind == "chunk":
            raise ValidationError("Chunks cannot be removed on their own.",
                                  hint="Remove the document that holds it (its doc_ id).")  # fmt: skip
        with self._writing("remove"):
            if kind == "document":
                doc = self.document(target)
                self.vectors.apply(self.store.delete_documents([doc.id], [(doc.collection_id, doc.source_path)]))
                self._save_vectors_if_dirty()
                return {"removed": "document", "id": doc.id, "title": doc.title, "chunks": doc.chunk_count}
            col = self.collection(target)
            self.vectors.apply(self.store.delete_collection(col.id))
            self._save_vectors_if_dirty()
            return {"removed": "collection", "id": col.id, "name": col.name, "documents": col.document_count,
                    "chunks": col.chunk_count}  # fmt: skip

    def reindex(self, progress: ProgressCallback | None = None, batch: int = 512) -> int:
        """Re-embed every paragraph chunk with the configured model, in one transaction; return the count."""
        with self._writing("reindex"):
            store = self.store
            rows = store.paragraph_texts()
            updates = []
            for i in range(0, len(rows), batch):
                part = rows[i:i + batch]
                vecs = self.embedder.embed([text for _, text in part])
                updates += [(v.tobytes(), rowid) for (rowid, _), v in zip(part, vecs)]
                if progress:
                    progress(Progress(min(i + batch, len(rows)), len(rows), min(i + batch, len(rows))))
            docs = store.document_texts()
            doc_vecs = self.embedder.embed([document_summary(title, text) for _, title, text in docs]) if docs else []
            dim = int(self.embedder.embed(["dimension probe"]).shape[1])
            store.reembed(updates, [(v.tobytes(), d[0]) for d, v in zip(docs, doc_vecs)], self._model_meta(dim))
            with self._init_lock:
                self._vectors = None  # the next use builds it from the new vectors
            self.vectors
            self._save_vectors_if_dirty()
            return len(rows)


class _Tally:
    """The report of one run as files finish, with progress, so that every file given is accounted for."""

    def __init__(self, report: IngestReport, progress: ProgressCallback | None, total: int) -> None:
        self.report = report
        self.progress = progress
        self.total = total
        self.done: set[str] = set()
        self.chunks = 0

    def record(self, result: FileResult) -> None:
        self.report.files.append(result)
        self.done.add(result.path)
        self.chunks += result.chunks
        if self.progress:
            self.progress(Progress(len(self.done), self.total, self.chunks, result.path, result.status))

    def fail_rest(self, candidates: list[Candidate], reason: str) -> None:
        """Report every candidate that has no result yet as failed with ``reason``."""
        for cand in candidates:
            if path_text(cand.path) not in self.done:
                self.record(FileResult(path_text(cand.path), "failed", reason))


# ---------------------------------------------------------------- helpers


def document_summary(title: str, text: str, chars: int = 400) -> str:
    """What a document's own vector is made from (find_items): its title and opening text."""
    return f"{title}\n{' '.join(text[:chars].split())}"


def _check_collection_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("The collection name is empty.", hint="Give a name such as 'work' or 'notes'.")
    name = " ".join(name.split())
    if not name.isprintable() or any("\ud800" <= ch <= "\udfff" for ch in name):
        raise ValidationError(f"The collection name \u201c{name.encode('utf-8', 'backslashreplace').decode()}\u201d "
                              "contains bytes that are not valid UTF-8 or control characters.",
                              hint="Use a plain name such as 'work' or 'notes'.")  # fmt: skip
    if len(name) > 80:
        raise ValidationError(f"The collection name is {len(name)} characters long; the limit is 80.")
    if id_kind(name) is not None or name.startswith(("col_", "doc_", "chk_")):
        raise ValidationError(f"{name!r} looks like an id; a collection name cannot start with col_, doc_ or chk_.")
    return name


def _prepare(cand: Candidate, collection_id: str, known: dict, params: ChunkParams, max_bytes: int,
             parser: ParseWorker) -> _Prepared | FileResult:  # fmt: skip
    """Read, hash, parse and chunk one file (on the parsing thread); any fault fails this file only."""
    path = path_text(cand.path)
    try:
        return _prepare_file(cand, path, collection_id, known, params, max_bytes, parser)
    except IngestFileError as exc:
        return FileResult(path, exc.status, exc.message)
    except FileNotFoundError:
        return FileResult(path, "failed", "the file was moved or deleted before it could be read")
    except OSError as exc:
        return FileResult(path, "failed", os_reason(exc, cand.path))
    except Exception as exc:  # a bug: report it against this file and go on with the others
        return FileResult(path, "failed", f"could not be ingested ({exc.__class__.__name__}: {exc})")


def _prepare_file(cand: Candidate, path: str, collection_id: str, known: dict, params: ChunkParams,
                  max_bytes: int, parser: ParseWorker) -> _Prepared | FileResult:  # fmt: skip
    if cand.format is None:
        kind = cand.path.suffix or "no extension"
        return FileResult(path, "skipped", f"unsupported file type ({path_text(kind)})")
    data, st = read_regular(cand.path, max_bytes)
    if not data:
        return FileResult(path, "skipped", "empty file")
    content_hash = hashlib.blake2b(data, digest_size=16).hexdigest()
    previous = known.get(path)
    if previous and previous[1] == content_hash:
        return FileResult(path, "unchanged", "", previous[0])
    doc_id = derived_id("doc", collection_id, path)
    parsed = parser.parse(Job(path, data, cand.format, doc_id, params, parser.limits.unpacked_bytes))
    notes = list(parsed.notes)
    if not name_is_text(cand.path):
        notes.append("the file name is not valid UTF-8; it is shown with \\x escapes")
    doc = {
        "id": doc_id, "collection_id": collection_id, "title": parsed.title or cand.path.name,
        "source_path": path, "format": parsed.format, "content_hash": content_hash, "size_bytes": len(data),
        "mtime": st.st_mtime, "char_count": len(parsed.text),
        "token_count": sum(c.token_count for c in parsed.chunks if c.level == 1), "text": parsed.text,
        "updated_at": now(),
    }  # fmt: skip
    return _Prepared(path, doc, parsed.chunks, "updated" if previous else "added", notes)
