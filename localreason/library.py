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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .config import Settings, load_settings
from .errors import Interrupted, IngestFileError, LibraryError, NotFoundError, ValidationError
from .ids import check_id, derived_id, id_kind, random_id
from .ingest.chunk import ChunkParams, chunk_document
from .ingest.parse import parse_bytes
from .ingest.walk import Candidate, discover, os_reason
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
    candidate: Candidate
    doc: dict
    chunks: list[Chunk]
    status: str
    notes: list[str]

    @property
    def paragraphs(self) -> list[Chunk]:
        return [c for c in self.chunks if c.level == LEVEL_PARAGRAPH]


class Library:
    """A local library of collections, documents and chunks under one data folder."""

    def __init__(self, home: str | Path | None = None, *, settings: Settings | None = None, embedder=None,
                 generator=None) -> None:  # fmt: skip
        self.settings = settings or load_settings(home)
        self._store: Store | None = None
        self._vectors: VectorIndex | None = None
        self._embedder = embedder
        self._generator = generator
        self._init_lock = threading.RLock()
        """Lazy parts are created once even when front ends call from several threads (the TUI does)."""

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
        if self._vectors is not None and self._vectors.dirty:
            self._save_vectors()
        if self._store is not None:
            self._store.close()
            self._store = None
        self._vectors = None

    def __enter__(self) -> "Library":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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

    def _record_model(self, dim: int) -> None:
        self.store.set_meta("embedding_model", self.embedder.name)
        self.store.set_meta("embedding_fingerprint", self.embedder.fingerprint)
        self.store.set_meta("embedding_dim", str(dim))

    @property
    def vectors(self) -> VectorIndex:
        """The FAISS index, loaded (or rebuilt from SQLite) on first use."""
        return self._lazy("_vectors", self._open_vectors)

    def _open_vectors(self) -> VectorIndex:
        self.check_embedding_model()
        dim = self.store.get_meta("embedding_dim")
        dim = int(dim) if dim else int(self.embedder.dim)
        return VectorIndex.open(self.settings.vectors_path, self.store, dim, self.embedder.fingerprint)

    def _save_vectors(self) -> None:
        if self._vectors is not None:
            self._vectors.save(self.store.generation(), self.embedder.fingerprint)

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

        With ``prune``, documents whose files have disappeared from the given
        folders (or a given file that no longer exists) are removed.
        """
        paths = [str(p) for p in paths]
        if not paths:
            raise ValidationError("No paths given.", hint="Name at least one file or folder to ingest.")
        start = time.perf_counter()
        col = self.ensure_collection(collection)
        report = IngestReport(col.id, col.name)
        candidates, problems, roots = discover(paths, include, exclude)
        for p in problems:
            report.files.append(FileResult(str(p.path), p.status, p.reason))
        for root in roots:
            self.store.add_source(col.id, str(root), list(include or []), list(exclude or []))
        for c in candidates:
            if c.root is None:
                self.store.add_source(col.id, str(c.path), [], [])
        known = self.store.hashes_for(col.id)
        total = len(candidates)
        try:
            self._run_pipeline(col, candidates, known, report, progress, total)
            if prune:
                self._prune(col, candidates, roots, problems, known, report)
        except KeyboardInterrupt as exc:
            report.seconds = time.perf_counter() - start
            self._save_vectors_if_dirty()
            raise Interrupted(report) from exc
        self._save_vectors_if_dirty()
        report.seconds = time.perf_counter() - start
        return report

    def _save_vectors_if_dirty(self) -> None:
        if self._vectors is not None and self._vectors.dirty:
            self._save_vectors()

    def _run_pipeline(self, col: Collection, candidates: list[Candidate], known: dict, report: IngestReport,
                      progress: ProgressCallback | None, total: int) -> None:  # fmt: skip
        params = ChunkParams(self.settings.chunk_tokens, self.settings.chunk_overlap, self.settings.section_max_tokens)
        max_bytes = int(self.settings.max_file_mb * 1024 * 1024)
        items: queue.Queue = queue.Queue(maxsize=64)
        stop = threading.Event()
        done_marker = object()

        def produce() -> None:
            try:
                for cand in candidates:
                    if stop.is_set():
                        return
                    items.put(_prepare(cand, col.id, known, params, max_bytes))
            finally:
                items.put(done_marker)

        worker = threading.Thread(target=produce, name="localreason-parse", daemon=True)
        worker.start()
        pending: list[_Prepared] = []
        pending_chunks = 0
        state = {"done": 0, "chunks": 0}

        def record(result: FileResult) -> None:
            report.files.append(result)
            state["done"] += 1
            state["chunks"] += result.chunks
            if progress:
                progress(Progress(state["done"], total, state["chunks"], result.path, result.status))

        try:
            while True:
                item = items.get()
                if item is done_marker:
                    break
                if isinstance(item, FileResult):
                    record(item)
                    continue
                pending.append(item)
                pending_chunks += len(item.paragraphs)
                if pending_chunks >= EMBED_GROUP:
                    for result in self._commit(pending):
                        record(result)
                    pending, pending_chunks = [], 0
            for result in self._commit(pending):
                record(result)
        finally:
            stop.set()
            while worker.is_alive():  # unblock a producer waiting on a full queue
                try:
                    items.get(timeout=0.05)
                except queue.Empty:
                    pass

    def _commit(self, prepared: list[_Prepared]) -> list[FileResult]:
        """Embed the new paragraph texts of ``prepared`` in one call, then write each document on its own."""
        if not prepared:
            return []
        vectors = self.vectors  # checks the model and loads/rebuilds the index first
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
            self._record_model(int(new_vecs.shape[1]))
        results = []
        for p, summary in zip(prepared, summaries):
            p.doc["embedding"] = by_text[summary].tobytes()
            paras = p.paragraphs
            if paras:
                doc_vecs = np.vstack([by_text[c.text] if c.text in by_text
                                      else np.frombuffer(reuse[c.text], dtype=np.float32) for c in paras])  # fmt: skip
            else:
                doc_vecs = np.zeros((0, vectors.dim), dtype=np.float32)
            removed, added = self.store.replace_document(p.doc, p.chunks, doc_vecs)
            vectors.remove(removed)
            vectors.add(added, doc_vecs)
            results.append(FileResult(str(p.candidate.path), p.status, "; ".join(p.notes), p.doc["id"], len(paras)))
        return results

    def _prune(self, col: Collection, candidates: list[Candidate], roots: list[Path], problems, known: dict,
               report: IngestReport) -> None:  # fmt: skip
        seen = {str(c.path) for c in candidates}
        missing_files = {str(p.path) for p in problems if p.reason == "no such file or folder"}
        doomed: list[tuple[str, str]] = []
        for path, (doc_id, _) in known.items():
            under_root = any(path.startswith(str(r) + os.sep) for r in roots)
            if (under_root and path not in seen) or path in missing_files:
                doomed.append((path, doc_id))
        if not doomed:
            return
        self.vectors.remove(self.store.delete_documents(d for _, d in doomed))
        for path, doc_id in doomed:
            report.files.append(FileResult(path, "removed", "the file no longer exists", doc_id))
        for path in missing_files:
            self.store.db.execute("DELETE FROM sources WHERE collection_id = ? AND path = ?", (col.id, path))

    def sync(self, collection: str | None = None, progress: ProgressCallback | None = None) -> list[IngestReport]:
        """Re-ingest every folder and file previously ingested (into ``collection``, or all), with pruning."""
        cols = [self.collection(collection)] if collection is not None else self.collections()
        reports = []
        for col in cols:
            for source in self.store.sources(col.id):
                reports.append(self.ingest([source["path"]], col.name, include=source["include"],
                                           exclude=source["exclude"], prune=True, progress=progress))  # fmt: skip
        return reports

    # ------------------------------------------------------------ remove and reindex

    def remove(self, target: str) -> dict:
        """Remove a document (by id) or a whole collection (by id or name)."""
        kind = id_kind(target) if isinstance(target, str) else None
        if kind == "chunk":
            raise ValidationError("Chunks cannot be removed on their own.",
                                  hint="Remove the document that holds it (its doc_ id).")  # fmt: skip
        if kind == "document":
            doc = self.document(target)
            self.vectors.remove(self.store.delete_documents([doc.id]))
            self.store.db.execute("DELETE FROM sources WHERE collection_id = ? AND path = ?",
                                  (doc.collection_id, doc.source_path))  # fmt: skip
            self._save_vectors()
            return {"removed": "document", "id": doc.id, "title": doc.title, "chunks": doc.chunk_count}
        col = self.collection(target)
        self.vectors.remove(self.store.delete_collection(col.id))
        self._save_vectors()
        return {"removed": "collection", "id": col.id, "name": col.name, "documents": col.document_count,
                "chunks": col.chunk_count}  # fmt: skip

    def reindex(self, progress: ProgressCallback | None = None, batch: int = 512) -> int:
        """Re-embed every paragraph chunk with the configured model, in one transaction; return the count."""
        store = self.store
        rows = store.db.execute("SELECT rowid, text FROM chunks WHERE level = 2 ORDER BY rowid").fetchall()
        updates = []
        for i in range(0, len(rows), batch):
            part = rows[i:i + batch]
            vecs = self.embedder.embed([r[1] for r in part])
            updates += [(v.tobytes(), r[0]) for r, v in zip(part, vecs)]
            if progress:
                progress(Progress(min(i + batch, len(rows)), len(rows), min(i + batch, len(rows))))
        docs = store.db.execute("SELECT id, title, text FROM documents").fetchall()
        doc_vecs = self.embedder.embed([document_summary(d[1], d[2]) for d in docs]) if docs else []
        dim = int(self.embedder.embed(["dimension probe"]).shape[1])
        with store.transaction():
            store.db.executemany("UPDATE chunks SET embedding = ? WHERE rowid = ?", updates)
            store.db.executemany("UPDATE documents SET embedding = ? WHERE id = ?",
                                 [(v.tobytes(), d[0]) for d, v in zip(docs, doc_vecs)])  # fmt: skip
            self._record_model(dim)
            store.bump_generation()
        self._vectors = VectorIndex(self.settings.vectors_path, dim)
        self._vectors.rebuild(store)
        self._save_vectors()
        return len(rows)


# ---------------------------------------------------------------- helpers


def document_summary(title: str, text: str, chars: int = 400) -> str:
    """What a document's own vector is made from (find_items): its title and opening text."""
    return f"{title}\n{' '.join(text[:chars].split())}"


def _check_collection_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("The collection name is empty.", hint="Give a name such as 'work' or 'notes'.")
    name = " ".join(name.split())
    if len(name) > 80:
        raise ValidationError(f"The collection name is {len(name)} characters long; the limit is 80.")
    if id_kind(name) is not None or name.startswith(("col_", "doc_", "chk_")):
        raise ValidationError(f"{name!r} looks like an id; a collection name cannot start with col_, doc_ or chk_.")
    return name


def _prepare(cand: Candidate, collection_id: str, known: dict, params: ChunkParams,
             max_bytes: int) -> _Prepared | FileResult:  # fmt: skip
    """Read, hash, parse and chunk one file (runs on the parsing thread, no database access)."""
    path = str(cand.path)
    if cand.format is None:
        kind = cand.path.suffix or "no extension"
        return FileResult(path, "skipped", f"unsupported file type ({kind})")
    try:
        size = cand.path.stat().st_size
        if size > max_bytes:
            return FileResult(path, "failed", f"too large ({size / 2**20:.1f} MB; the limit is "
                              f"{max_bytes / 2**20:.0f} MB, set by max_file_mb / LOCALREASON_MAX_FILE_MB)")  # fmt: skip
        if size == 0:
            return FileResult(path, "skipped", "empty file")
        data = cand.path.read_bytes()
    except OSError as exc:
        return FileResult(path, "failed", os_reason(exc, cand.path))
    content_hash = hashlib.blake2b(data, digest_size=16).hexdigest()
    previous = known.get(path)
    if previous and previous[1] == content_hash:
        return FileResult(path, "unchanged", "", previous[0])
    try:
        parsed = parse_bytes(data, cand.path, cand.format)
    except IngestFileError as exc:
        return FileResult(path, exc.status, exc.message)
    except RecursionError:
        return FileResult(path, "failed", "the file is nested too deeply to parse")
    except Exception as exc:  # a parser bug or a file no parser expected: report it, keep going
        return FileResult(path, "failed", f"could not be parsed ({exc.__class__.__name__}: {exc})")
    doc_id = derived_id("doc", collection_id, path)
    chunks = chunk_document(parsed, doc_id, params)
    stamp = now()
    doc = {
        "id": doc_id, "collection_id": collection_id, "title": parsed.title or cand.path.name,
        "source_path": path, "format": parsed.format, "content_hash": content_hash, "size_bytes": size,
        "mtime": cand.path.stat().st_mtime, "char_count": len(parsed.text),
        "token_count": sum(c.token_count for c in chunks if c.level == 1), "text": parsed.text,
        "updated_at": stamp,
    }  # fmt: skip
    return _Prepared(cand, doc, chunks, "updated" if previous else "added", parsed.notes)
