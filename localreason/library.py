"""The library: the headless API that the CLI, the TUI and the servers all call.

    lib = Library()                     # LOCALREASON_HOME or the per-user data folder
    report = lib.ingest(["~/notes"], collection="work")
    lib.collections(); lib.documents(); lib.document("doc_..."); lib.chunk("chk_...")

It owns the library's parts (the SQLite store, the FAISS index kept in step with it,
the embedding and generation models, all made on first use), the writer lock, and
the check that the vectors were made by the configured model. The work itself lives
elsewhere: ingest/pipeline.py (ingest, prune, reindex), search/ (retrieval) and
reason/ (answers).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from .config import Settings, load_settings
from .errors import Interrupted, LibraryError, LocalReasonError, ModelError, NotFoundError, ValidationError
from .ids import LISTED_BY, check_id, id_kind, random_id
from .store.db import Store, now
from .store.vectors import VectorIndex
from . import search
from .search import UNSET, Grant, Index
from .types import (Chunk, Collection, Document, Evidence, EvidencePacket, ExpandResult, IngestReport, ItemHit,
                    SearchHit)  # fmt: skip

log = logging.getLogger("localreason")

if TYPE_CHECKING:  # the ingest modules load when something is written (__getattr__ below)
    from .ingest.pipeline import Ingestor, ProgressCallback

DEFAULT_COLLECTION = "default"


def open_store(settings: Settings) -> Store:
    """The store the settings name: the SQLite file in the library folder (``local``), or a PostgreSQL server."""
    if settings.store != "local":
        from .store.postgres.store import PgStore

        store = PgStore(settings.store)
    else:
        store = Store(settings.db_path)
    unfinished = store.get_meta("copy_incomplete")
    if unfinished:  # what a copy stopped half way left: neither searched, served nor changed (store/transfer.py)
        where = store.path
        store.close()
        raise LibraryError(f"The library in {where} is an unfinished copy ({unfinished}): `localreason store copy` "
                           "stopped before it had copied and checked everything.",
                           hint="Run the same `localreason store copy` command again: it starts that copy over. "
                           "Nothing reads or changes this library until then.")  # fmt: skip
    return store


class Library:
    """A local library of collections, documents and chunks under one data folder.

    Safe to use beside other processes on the same folder: each read sees every write
    committed before it (the vector index catches up with other processes' writes
    before each use), and writers (ingest, sync, remove, reindex) take turns.
    """

    def __init__(self, home: str | Path | None = None, *, settings: Settings | None = None, embedder=None,
                 generator=None, reader: object = None) -> None:  # fmt: skip
        self.settings = settings or load_settings(home)
        self._reader = reader
        """The reader (readers.py); None: the packaged one, loaded on first use when the setting is auto."""
        self._reader_problem: str | None = None
        self._reread_problem: str | None = None
        self._store: Store | None = None
        self._vectors: VectorIndex | None = None
        self._embedder = embedder
        self._generator = generator
        self._init_lock = threading.RLock()
        """Lazy parts are created once even when front ends call from several threads (the TUI does)."""
        self._write_mutex = threading.RLock()
        self._write_depth = 0
        self._write_fd = None
        self.notice: Callable[[str], None] | None = None
        """Told (one line for a person) when a write must wait for another program's."""
        self.catch_up_on_use = True
        """Whether each use of ``vectors`` first applies other processes' writes (see ``catch_up``)."""
        self._turn: Callable = nullcontext
        """Taken around each change of the stored rows and the vector index during a write (see ``in_turns``)."""

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
        return self._lazy("_store", self.open_store)

    def open_store(self) -> Store:
        """A new connection to this library's store (the servers check keys through one of their own)."""
        return open_store(self.settings)

    @property
    def embedder(self):
        """The embedding backend, created on first use (the model itself loads on first embed)."""
        return self._lazy("_embedder", self._make_embedder)

    def _make_embedder(self):
        from .embed import make_embedder
        from .models import resolve_embedding_model

        s = self.settings
        return make_embedder(resolve_embedding_model(s), s.embedding_backend, s.embed_batch_size, s.cache_path,
                             notice=lambda message: self.notice(message) if self.notice else None,
                             threads=s.threads)  # fmt: skip

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
    def writing(self, what: str):
        """Hold the library's writer lock, ``what`` naming the write for a program that waits for it (reentrant
        within this process: sync calls ingest; one thread at a time)."""
        with self._write_mutex:
            if self._write_depth == 0:
                self.store  # the folder exists and the schema is current
                self._write_fd = self.store.acquire_writer(what, self.notice)
            self._write_depth += 1
            try:
                yield
            finally:
                self._write_depth -= 1
                if self._write_depth == 0 and self._write_fd is not None:
                    self.store.release_writer(self._write_fd)
                    self._write_fd = None

    @contextmanager
    def in_turns(self, turn: Callable):
        """While this thread writes (inside ``writing``), take ``turn()`` (the service's write lock) around each
        change of the stored rows and the vector index only, not around walking, parsing and embedding files: a
        long ingest then holds up this process's searches for one group's writes at a time, never for the whole
        ingest. Each document is still written whole, so a search sees it before or after, never half."""
        before, self._turn = self._turn, turn
        try:
            yield
        finally:
            self._turn = before

    def turn(self):
        """One change's turn (see ``in_turns``); nothing to wait for outside a service."""
        return self._turn()

    @contextmanager
    def own_write_done(self):
        """Wait until no thread of this process is writing (another process's write is not waited for)."""
        with self._write_mutex:
            yield

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

    def _vector_identity(self) -> str:
        """What a vector cache must have been built from: this model and the current vector epoch."""
        return f"{self.embedder.fingerprint}@{self.store.vector_epoch()}"

    @property
    def vectors(self) -> VectorIndex:
        """The FAISS index, loaded (or rebuilt from SQLite) on first use and in step with the database.

        Each use first catches up with what other processes wrote, unless ``catch_up_on_use`` is off
        (the service does it itself, under its write lock, so no search runs while the index changes).
        """
        vectors = self._lazy("_vectors", self._open_vectors)
        if self.catch_up_on_use and self.stale():  # (PostgreSQL: a reindex on another machine; see ``stale``)
            return self.catch_up()
        return vectors

    def stale(self) -> bool:
        """Whether another process (or another Library) changed the database since the index was read; for a
        PostgreSQL store, whose vector index is the database's own, whether another machine re-embedded it."""
        vectors = self._vectors
        if vectors is None:
            return False
        if vectors.follows_store:  # (a reindex elsewhere: this process's model may no longer be the library's)
            return vectors.identity != _library_identity(self)
        return vectors.generation != self.store.generation()

    def catch_up(self) -> VectorIndex:
        """Bring the vector index in step with the database: apply other processes' writes, or reload it
        when they re-embedded everything (reindex)."""
        with self._init_lock:
            vectors = self._lazy("_vectors", self._open_vectors)
            if vectors.follows_store:  # PostgreSQL: opened again when the library's model or epoch changed
                if vectors.identity != _library_identity(self):
                    self._vectors = None  # (check_embedding_model refuses a model that is not the library's)
                return self._lazy("_vectors", self._open_vectors)
            if vectors.generation == self.store.generation():
                return vectors
            if vectors.identity != self._vector_identity():
                self._vectors = None  # re-embedded elsewhere (reindex): start again from SQLite
                return self._lazy("_vectors", self._open_vectors)
            vectors.sync(self.store)
            return vectors

    def _open_vectors(self) -> VectorIndex:
        self.check_embedding_model()
        dim = self.store.get_meta("embedding_dim")
        dim = int(dim) if dim else int(self.embedder.dim)
        if self.settings.store != "local":
            from .store.postgres.vectors import PgVectors

            return PgVectors(self.store, dim, self._vector_identity())
        vectors = VectorIndex.open(self.settings.vectors_path, self.store, dim, self._vector_identity(),
                                   self.settings.vector_index)
        if vectors.repaired and not self.store.read_only:  # publish the repair: other processes need not redo it
            vectors.save()
        return vectors

    def index_info(self) -> dict:
        """The vector index and embedding backend, for `localreason library` (read without loading either)."""
        return _index_info(self)

    def _save_vectors_if_dirty(self) -> None:
        """Publish the index for other processes; a full or read-only disk only costs them a rebuild."""
        if self._vectors is not None and self._vectors.dirty and self._store is not None \
                and not self._store.read_only:  # fmt: skip
            self._vectors.save()

    # ------------------------------------------------------------ lookup

    def collections(self, *, grant: Grant = None) -> list[Collection]:
        """The collections (those of ``grant`` only, when given) with their counts."""
        return [c for c in self.store.collection_rows() if grant is None or c.id in grant]

    def collection(self, id_or_name: str) -> Collection:
        """A collection by id or by name."""
        if not isinstance(id_or_name, str) or not id_or_name.strip():
            raise ValidationError("The collection name is empty.", hint="Give a collection name or id.")
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
            raise NotFoundError(f"No chunk {chunk_id} in this library.", hint=f"{LISTED_BY['chunk']}.")
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
                hint="Ids start with col_, doc_ or chk_ followed by 16 characters; `localreason library --documents` "
                f"lists those of collections and documents, and {LISTED_BY['chunk']}.",
            )
        return {"collection": self.collection, "document": self.document, "chunk": self.chunk}[kind](any_id)

    # ------------------------------------------------------------ retrieval (see search/)

    @property
    def index(self) -> Index:
        """What search reads: this library's store, vectors and embedder, each made when first needed."""
        return self

    # Every read below takes ``grant``: the collections an API key may see (keys.py); None, the default, is all.

    def find_items(self, query: str, *, limit: object = 10, grant: Grant = None) -> list[ItemHit]:
        """Documents and collections about ``query`` (by meaning, or by literal title/path/name)."""
        return search.find_items(self.index, query, limit=limit, grant=grant)

    def deep_search(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                    limit: object = 10, grant: Grant = None) -> list[SearchHit]:  # fmt: skip
        """Passages about ``query``, best first (hybrid dense + BM25), optionally scoped."""
        return search.deep_search(self.index, query, document_id=document_id, collection_id=collection_id, limit=limit,
                                  grant=grant)  # fmt: skip

    def deep_read(self, chunk_id: str, *, grant: Grant = None) -> dict:
        """One chunk in full with its place in the document tree."""
        return search.deep_read(self.index, chunk_id, grant=grant)

    def deep_expand(self, chunk_id: str, direction: str, *, window: object = 2, grant: Grant = None) -> ExpandResult:
        """Move from a chunk: ``up``, ``down``, ``previous``, ``next`` or ``surrounding``."""
        return search.deep_expand(self.index, chunk_id, direction, window=window, grant=grant)

    def progressive_search(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                           limit: object = 50, grant: Grant = None) -> Evidence:  # fmt: skip
        """The bounded, ranked evidence set that ``reason`` uses."""
        return search.progressive_search(self.index, query, document_id=document_id, collection_id=collection_id,
                                         limit=limit, grant=grant)  # fmt: skip

    def evidence_packet(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                        limit: object = 50, max_tokens: object = None, grant: Grant = None) -> EvidencePacket:  # fmt: skip
        """Exactly the evidence packet ``ask`` would send to the model (``max_tokens`` None: the answer_budget
        setting, as ``ask``)."""
        return self.gathered(query, document_id=document_id, collection_id=collection_id, limit=limit,
                             max_tokens=max_tokens, grant=grant)[1]  # fmt: skip

    def gathered(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET, limit: object = 50,
                 max_tokens: object = None, grant: Grant = None):  # fmt: skip
        """(what ``ask`` gathers for ``query``: progressive search and the passages a comparison adds, the packet
        it sends the model); ``max_tokens`` None: the answer_budget setting."""
        from .reason.pipeline import evidence_of

        budget = self.settings.answer_budget if max_tokens is None else max_tokens
        return evidence_of(self, query, scope={"document_id": document_id, "collection_id": collection_id,
                                               "grant": grant}, limit=limit, max_tokens=budget)  # fmt: skip

    # ------------------------------------------------------------ reason

    @property
    def generator(self):
        """The configured GGUF model, shared by every Library of this process and loaded on first use."""
        return self._lazy("_generator", self._make_generator)

    @property
    def reader(self):
        """The packaged reader (readers.py) when the ``reader`` setting is ``auto`` and it can be read; None
        when it is off, missing from the installation, or unusable (answers are then ranked without it; a notice
        says why, once)."""
        if self.settings.reader == "off" or self._reader_problem is not None:
            return None
        if self._reader is None:
            from . import models
            from .readers import packaged_reader

            if not models.reader_shipped():  # the package ships one: its absence is a damaged installation, said once
                self.reader_failed(ModelError(f"The reader's files are missing from {models.READER_DIR} (reinstall "
                                              "localreason, or set reader = \"off\")."))
                return None
            try:
                self._reader = packaged_reader(self.settings.threads, self.settings.cache_path / "openvino")
            except ModelError as exc:
                self.reader_failed(exc)
                return None
        return self._reader

    @property
    def rereader(self):
        """What re-reads search's first candidates (search/rerank.py): the packaged passage reader, when the
        ``search_reread`` and ``reader`` settings are on and it can be read; else None (the hybrid's order)."""
        if self.settings.search_reread == "off" or self._reread_problem is not None:
            return None
        return getattr(self.reader, "passage", None)

    def reread_failed(self, exc: BaseException) -> None:
        """The passage reader could not re-read search's candidates: search keeps the hybrid's order from now on;
        say so once."""
        self._reread_problem = str(exc)
        message = f"Search results are not re-read: {exc} They keep the hybrid ranking's order."
        log.warning(message)
        if self.notice:
            self.notice(message)

    def reader_failed(self, exc: BaseException) -> None:
        """The reader could not load or run: answers use the ranking without it from now on; say so once."""
        self._reader, self._reader_problem = None, str(exc)
        message = f"The reader is not used: {exc} Answers are ranked without it."
        log.warning(message)
        if self.notice:
            self.notice(message)

    def models_loaded(self) -> bool:
        """Whether the embedding and generation models are both in memory (nothing will wait for them)."""
        parts = (self._embedder, self._generator)
        return all(p is not None and getattr(p, "loaded", True) for p in parts)

    def _make_generator(self):
        from .generate import shared_generator
        from .models import resolve_gguf

        return shared_generator(resolve_gguf(self.settings), self.settings.cpu_threads)

    def ask(self, query: str, *, document_id: object = UNSET, collection_id: object = UNSET, limit: object = 50,
            max_tokens: object = None, stage=None, cancel=None, grant: Grant = None):  # fmt: skip
        """Answer ``query`` from the library with verified citations (see reason/pipeline.py). Read-only.

        ``max_tokens`` is the evidence budget (the spec's maxTokens); None uses the ``answer_budget`` setting.
        """
        from .reason import reason

        budget = self.settings.answer_budget if max_tokens is None else max_tokens
        return reason(self, query, generator=self.generator, document_id=document_id, collection_id=collection_id,
                      grant=grant, limit=limit, max_tokens=budget, style=self.settings.answer_style,
                      lead_quotes=self.settings.lead_quotes, rerank=self.settings.answer_rerank, reader=self.reader,
                      stage=stage, cancel=cancel)  # fmt: skip

    # ------------------------------------------------------------ collections

    def ensure_collection(self, name: str) -> Collection:
        name = _check_collection_name(name)
        found = self.store.find_collection(name)
        if found is None:
            with self.turn():
                self.store.insert_collection(random_id("col"), name)
            found = self.store.find_collection(name)
        assert found is not None
        return found

    def _collection_to_write(self, name: str) -> tuple[Collection, bool]:
        """The collection ``name`` and False; or, when there is none, the one an ingest makes with its first
        document (not in the store before that: an ingest that writes nothing leaves none behind) and True."""
        found = self.store.find_collection(name)
        return (found, False) if found is not None else (Collection(random_id("col"), name, now()), True)

    # ------------------------------------------------------------ ingest (see ingest/pipeline.py)

    def _ingestor(self) -> Ingestor:
        from .ingest.pipeline import Ingestor  # the ingest modules load only when something is written

        return Ingestor(self, self.settings, self._save_vectors_if_dirty, self.turn)

    def ingest(self, paths: Iterable[str | Path], collection: str = DEFAULT_COLLECTION, *,
               include: list[str] | None = None, exclude: list[str] | None = None, prune: bool = False,
               progress: ProgressCallback | None = None, prune_emptied: bool = False) -> IngestReport:  # fmt: skip
        """Add files and folders to ``collection``; skip unchanged files, re-index changed ones.

        Every file given (or found in a given folder) appears in the report as added,
        updated, unchanged, skipped or failed with a reason. With ``prune``, documents
        whose files have disappeared from the given folders (or a given file that no
        longer exists) are removed, except in a given folder that is empty now (the mount point of a
        drive not mounted): its documents are kept and ``report.kept`` says so, unless
        ``prune_emptied`` (``sync --prune``). If the disk fills up, the run stops, what was
        committed is kept, and ``report.stopped`` says why. A file whose document was
        cut with other chunking settings is re-chunked. A new collection is made with the first
        document written, and a path given is remembered for sync with the first document under it
        (or when it is a folder with no file in it yet): an ingest that writes nothing leaves the
        library as it was.
        """
        paths = [str(p) for p in paths]
        if not paths:
            raise ValidationError("No paths given.", hint="Name at least one file or folder to ingest.")
        name = _check_collection_name(collection)
        with self.writing(f"ingest into {name!r}"):
            col, new = self._collection_to_write(name)
            return self._ingestor().ingest(paths, col, include, exclude, prune, progress, prune_emptied=prune_emptied,
                                           new=new)  # fmt: skip

    def sync(self, collection: str | None = None, progress: ProgressCallback | None = None, *,
             prune_vanished: bool = False) -> list[IngestReport]:  # fmt: skip
        """Re-ingest every folder and file previously ingested (into ``collection``, or all), with pruning.

        A folder that no longer exists (an unmounted drive, a renamed folder) keeps its documents, unless
        ``prune_vanished``: then they are removed and the folder is forgotten (``vanished_folders`` lists them).
        Documents cut with other chunking settings than the current ones are re-chunked.
        """
        with self.writing("sync"):
            reports = self.forget_vanished(collection) if prune_vanished else []
            cols = [self.collection(collection)] if collection is not None else self.collections()
            for col in cols:
                for source in self.store.sources(col.id):
                    try:
                        reports.append(self.ingest([source["path"]], col.name, include=source["include"],
                                                   exclude=source["exclude"], prune=True, progress=progress,
                                                   prune_emptied=prune_vanished))  # fmt: skip
                    except Interrupted as stop:  # the folders synced before it are reported too
                        raise Interrupted(stop.report, reports) from stop
                    if reports[-1].stopped:
                        return reports
            return reports

    def forget_vanished(self, collection: str | None = None) -> list[IngestReport]:
        """Remove the documents of each folder ingested before that no longer exists (``vanished_folders``), and
        forget the folder: what ``sync(prune_vanished=True)`` and the TUI's confirmation do."""
        with self.writing("remove the documents of vanished folders"):
            return [self._ingestor().forget_folder(self.collection(name), folder)
                    for name, folder, _ in self.vanished_folders(collection)]  # fmt: skip

    def sources(self, collection: str | None = None) -> list[dict]:
        """The folders and files ingested before, which sync re-checks and a watcher follows: each as
        ``{"collection": name, "path", "include", "exclude", "folder"}`` (``folder``: a folder, or a path that is
        gone and still has documents under it; else a file ingested by name). Cheap: a watch asks every 2 s."""
        found = []
        for s in self.store.sources(self.collection(collection).id if collection is not None else None):
            folder = os.path.isdir(s["path"]) or (not os.path.lexists(s["path"]) and any(
                d.source_path != s["path"] for d in self.store.document_rows(s["collection_id"], under=s["path"])))
            found.append({k: s[k] for k in ("collection", "path", "include", "exclude")} | {"folder": folder})
        return found

    def vanished_folders(self, collection: str | None = None) -> list[tuple[str, str, int]]:
        """(collection name, folder, documents) for each folder ingested before that no longer exists and still
        has documents: sync keeps them, ``sync(prune_vanished=True)`` removes them."""
        return [(s["collection"], s["path"], len(self.documents_under(s["collection"], s["path"])))
                for s in self.sources(collection) if s["folder"] and not os.path.lexists(s["path"])]  # fmt: skip

    def documents_under(self, collection: str, path: str) -> list[Document]:
        """The documents of ``collection`` whose file is ``path`` or lies under it (read by an index range); none
        when there is no such collection (a watch's new folder before its first document made it)."""
        found = self.store.find_collection(collection)
        return [] if found is None else self.store.document_rows(found.id, under=path)

    def refresh(self, collection: str, changed: list[str], gone: list[str] = (),
                progress: ProgressCallback | None = None) -> IngestReport:  # fmt: skip
        """Apply what a watcher saw in ``collection`` (watch.py): ingest the ``changed`` files (as files of the
        folders they are in: they do not become sources of their own), then remove the documents of files at or
        under the ``gone`` paths that no longer exist. A file moved or renamed keeps its passages' vectors."""
        name = _check_collection_name(collection)
        with self.writing(f"watch: {len(changed) + len(gone)} change(s) in {name!r}"):
            col, new = self._collection_to_write(name)
            return self._ingestor().ingest([str(p) for p in changed], col, None, None, False, progress,
                                           remember=False, gone=[str(g) for g in gone], new=new)  # fmt: skip

    def stale_chunking(self) -> int:
        """How many documents were read or cut otherwise than the current reader and chunking settings do (sync
        re-chunks them)."""
        from .ingest.chunk import ChunkParams
        from .ingest.pipeline import chunking_keys

        return self.store.documents_chunked_otherwise(chunking_keys(ChunkParams.from_settings(self.settings)))

    # ------------------------------------------------------------ remove and reindex

    def remove(self, target: str) -> dict:
        """Remove a document (by id) or a whole collection (by id or name)."""
        kind = id_kind(target) if isinstance(target, str) else None
        if kind == "chunk":
            raise ValidationError("Chunks cannot be removed on their own.",
                                  hint="Remove the document that holds it (its doc_ id).")  # fmt: skip
        with self.writing("remove"):
            if kind == "document":
                doc = self.document(target)
                kept_out = _keep_out(self.store, doc)  # first: a remove cut short leaves it to the next sync's prune
                self.vectors.apply(self.store.delete_documents([doc.id], [(doc.collection_id, doc.source_path)]))
                self._save_vectors_if_dirty()
                return {"removed": "document", "id": doc.id, "title": doc.title, "chunks": doc.chunk_count,
                        **kept_out}  # fmt: skip
            col = self.collection(target)
            self.vectors.apply(self.store.delete_collection(col.id))
            self._save_vectors_if_dirty()
            return {"removed": "collection", "id": col.id, "name": col.name, "documents": col.document_count,
                    "chunks": col.chunk_count}  # fmt: skip

    def reindex(self, progress: ProgressCallback | None = None, batch: int = 512) -> int:
        """Re-embed every paragraph chunk with the configured model, in one transaction; return the count."""
        with self.writing("reindex"):
            count = self._ingestor().reembed(progress, batch)
            with self._init_lock:
                self._vectors = None  # the next use builds it from the new vectors
            self.vectors
            self._save_vectors_if_dirty()
            return count


# ---------------------------------------------------------------- helpers
def _library_identity(lib) -> str:
    """What the shared store's vectors are now: the model the library records (the first vectors written, or a
    reindex, on any machine) and the vector epoch; ``Library._vector_identity`` while that model is this one's."""
    return f"{lib.store.get_meta('embedding_fingerprint') or lib.embedder.fingerprint}@{lib.store.vector_epoch()}"


def _index_info(lib) -> dict:
    """The vector index and embedding backend, for `localreason library` (read without loading either).

    ``kind`` is the published index's (``flat`` exact, ``ivf`` approximate), or the loaded one's.
    """
    from .store.vectors import IVF_FROM, lists_probed

    if lib._vectors is not None:
        info = lib._vectors.describe()
    elif lib.settings.store != "local":
        info = {"kind": "hnsw", "vectors": lib.store.vector_count()}
    else:
        meta = VectorIndex.published(lib.settings.vectors_path) or {}
        info = {"kind": meta.get("kind", "flat" if meta else "none"), "vectors": meta.get("count", 0),
                **({"lists": meta["lists"], "probe": lists_probed(meta.get("count", 0), meta["lists"])}
                   if "lists" in meta else {})}  # fmt: skip
    info["exact"] = info["kind"] not in ("ivf", "hnsw")
    info["setting"] = lib.settings.vector_index
    info["ivfFrom"] = IVF_FROM
    try:
        info["embeddingBackend"] = getattr(lib.embedder, "backend", "custom")
    except LocalReasonError as exc:  # a missing or broken model: listing the library still works
        info["embeddingBackend"], info["embeddingProblem"] = None, exc.message
    return info


def _keep_out(store, doc) -> dict:
    """Leave the removed document's file out of each folder of its collection that sync reads again (and a watch
    follows), by an exclude glob naming that file alone, so that it does not come back: ``{"keptOut": [{"folder",
    "exclude"}]}``. Nothing for a folder that is here while the file is gone, or for a file named by itself (that
    source is forgotten with it); a folder not here now (a drive not mounted) or another machine's (PostgreSQL),
    whose file cannot be looked at, gets the glob all the same."""
    from .ingest.walk import fs_path, left_out, path_text  # the ingest modules load only when something is written

    mine = {s["path"] for s in store.sources(doc.collection_id)}
    kept = []
    for s in store.sources(doc.collection_id, every=True):
        if not doc.source_path.startswith(s["path"].rstrip(os.sep) + os.sep):
            continue
        here = s["path"] in mine and os.path.isdir(fs_path(s["path"]))
        path = fs_path(doc.source_path, look=here)  # not UTF-8: stored with \xNN escapes; the glob needs the bytes
        if here and not os.path.lexists(path):
            continue
        pattern = left_out(Path(os.path.relpath(path, fs_path(s["path"], look=here))).as_posix())
        if pattern not in s["exclude"]:
            store.set_source_exclude(doc.collection_id, s["path"], [*s["exclude"], pattern])
        kept.append({"folder": s["path"], "exclude": path_text(pattern)})
    return {"keptOut": kept} if kept else {}


def sources_elsewhere(lib, collection: str | None = None) -> list[dict]:
    """The folders and files other machines ingested into a shared (PostgreSQL) library: this machine does not
    sync or watch them (store/postgres/store.py, ``this_host``)."""
    if lib.settings.store == "local":
        return []
    cid = lib.collection(collection).id if collection is not None else None
    mine = {(s["collection_id"], s["path"]) for s in lib.store.sources(cid)}
    return [s for s in lib.store.sources(cid, every=True) if (s["collection_id"], s["path"]) not in mine]


def elsewhere_note(sources: list[dict]) -> str:
    """What to say of ``sources_elsewhere``: whose they are, and how this machine follows one."""
    from .config import HOST_ENV
    from .store.postgres.store import this_host

    hosts = ", ".join(sorted({s["host"] for s in sources if s.get("host")})) or "another machine"
    return (f"{len(sources)} folder(s) or file(s) of this library were ingested on other machines ({hosts}); this "
            f"machine ({this_host()}) syncs and watches only what it ingested itself. Ingest one here to follow it "
            f"from this machine, or set {HOST_ENV} if this machine's name changed.")


def kept_out(kept: list[dict]) -> str:
    """What a person who removed a document whose file is in a followed folder must know (the CLI's and the TUI's
    words, of ``Library.remove``'s ``keptOut``): it is left out of that folder from now on, and how to have it back."""
    globs = " and ".join(f"{k['exclude']} in {k['folder']}" for k in kept)
    return (f"Its file is still there, in a folder that `localreason sync` and a watch read: it is left out from "
            f"now on (exclude glob {globs}). To have it back, ingest the file by name.")



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



def __getattr__(name: str):
    """``Progress`` and ``ProgressCallback`` (the ingest's progress values) are part of this module's API; they are
    read from ingest/pipeline.py when asked for, so that opening a library to search loads no ingest module."""
    if name in ("Progress", "ProgressCallback"):
        from .ingest import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
