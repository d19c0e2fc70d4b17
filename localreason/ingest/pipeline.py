"""Ingestion: files in, documents, chunks and vectors out; also sync's pruning and reindex.

A two-stage pipeline: a background thread reads, hashes, parses (in a child process,
see worker.py) and chunks files while the calling thread embeds them in large batches
and writes each document in its own transaction. Embedding is the slow part, so the
rest hides behind it. Every file given is accounted for in the report, whatever
happens to it.

The caller (Library) holds the writer lock; this module only does the work, over the
library's parts: ``index`` (store, vectors, embedder) and the settings.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from ..config import Settings
from ..errors import Interrupted, IngestFileError, LibraryError, StorageFull
from ..ids import derived_id
from ..store.db import now
from ..text import counted, pages_named
from ..types import LEVEL_PARAGRAPH, LEVEL_SECTION, Chunk, Collection, FileResult, IngestReport
from . import prune
from .chunk import PACKING, ChunkParams
from .walk import Candidate, discover, name_is_text, os_reason, path_text, read_regular, removals_under, with_removed
from .recognised import LINE_MIN_SCORE, PageReading, Recognition
from .worker import Job, Limits, OcrJob, ParseWorker, Survey, OverLimit, existing_worker, shared_worker

READ_AGAIN = "~again"
TEXTLESS = ("empty file", "no text found in the file", "binary file")
"""How a file read this time that holds no text now is skipped (its old document goes: ``_drop_textless``); not a
file left unread for another reason (an image while text recognition is off)."""
"""Stored after the content hash of a file a page of which ran out of its time: the hash then matches no file, so
the next ingest, sync or watch catch-up reads it again (before, the page stayed out until the file changed)."""
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
    """The file's result (``added``, ...), or ``recognizing`` while the pages of ``path`` are being recognised."""
    page: int = 0
    """While ``recognizing``: the pages of ``path`` done so far, of ``pages``."""
    pages: int = 0


ProgressCallback = Callable[[Progress], None]


@dataclass
class DocumentRecord:
    """A document row as the store writes it."""

    id: str
    collection_id: str
    title: str
    source_path: str
    format: str
    content_hash: str
    size_bytes: int
    mtime: float
    char_count: int
    token_count: int
    text: str
    updated_at: str
    chunking: str
    """The chunking settings its chunks were cut with (``chunking_key``)."""
    embedding: bytes | None = None
    """Its own vector (title and opening text), for find_items; set just before it is written."""
    recognition: str | None = None
    """JSON: the pages read by text recognition (types.RecognizedPage), or None when there are none."""

    def row(self) -> dict:
        return asdict(self)


@dataclass
class PreparedDocument:
    """One file read, parsed and chunked, waiting to be embedded and written."""

    path: str
    """The file's path as text (see walk.path_text): its identity in the library."""
    record: DocumentRecord
    chunks: list[Chunk]
    status: str
    """``added`` or ``updated``."""
    notes: list[str] = field(default_factory=list)
    reuse_from: str | None = None
    """The document whose vectors are kept for passages of the same text: this file's own before it changed, or,
    for a new file, one of the collection with the same content (the file moved or renamed, or a copy)."""
    recognized: tuple = ()
    """Its pages read by text recognition (types.RecognizedPage), for the report."""
    terms: dict = field(default_factory=dict)
    """chunk id -> the full names a passage is also found by (chunk.chunk_terms; the store indexes them)."""

    @property
    def paragraphs(self) -> list[Chunk]:
        return [c for c in self.chunks if c.level == LEVEL_PARAGRAPH]


READER_VERSIONS = {"html": 6, "rst": 4, "pdf": 3, "markdown": 1, "text": 1, "docx": 1}
"""Per format, bumped when its reader reads the same file into other text (html 2: tables inside
<thead>/<tbody> are read row by row; they were one run of text with the cells glued together; html 3: an
``<aside>`` inside the main content is kept; html 4: a ``<br>`` is a line break, the items of a table cell stay
apart ("a; b"), a table laying out blocks (a DocBook Tip box, code in a cell) keeps its paragraphs and code
lines with the box's label in front ("Tip: ..."), blocks inside an inline element or an unclosed tag stay
blocks; they were glued into one run of text; html 5: ordered lists show their numbers (start, value, type),
sup and sub read as drawn ("2^31-1", "log_2"; they were "231-1", "log2"), DocBook callouts keep their numbers
("(1)") in the code and in the list that explains them, XHTML 2's ``<h>`` (sqlite's pragma names) is a heading,
Publican's "Prev"/"Next" captions are a line of their own ("PrevChapter 6" was glued); rst 2: docutils with
Sphinx's roles and directives read for the text they show, paragraphs as one line; rst 3: the full names of
roles shown shorter (``~agen.aclose``) are kept for search beside the text; rst 1 was the hand-written line
reader; pdf 2: pages without a usable text layer are recognised, where they were left out; html 6: a header or
footer inside the main content, and a page that is one form, keep their text (they were dropped); pdf 3: a word
hyphenated at a line end is one word again (pdfium's U+FFFE split it); rst 4: a list in a table cell keeps its
items apart; markdown 1: an HTML ``<br>`` is a line break and an HTML block's entities are decoded; text 1: a man
page rendered to text has its sections, and a form feed parts pages; docx 1: text boxes and tables nested in a cell
are read; every format: a soft hyphen is no part of a word). Part of
``chunking_key``, so that ``sync`` reads the documents of that format again once (their unchanged passages keep
their vectors); documents of other formats are left alone."""


def chunking_key(params: ChunkParams, fmt: str = "") -> str:
    """How a document of format ``fmt`` was read and cut, as stored with it: a document read or cut otherwise
    is read again on sync. The chunking settings, the format's READER_VERSIONS entry if it has one, and for PDF
    ``ocr=off`` when its scanned pages were not recognised (turning recognition on reads them on the next sync)."""
    key = f"tokens={params.chunk_tokens} overlap={params.overlap} section={params.section_max_tokens}"
    key += f" packing={PACKING}"
    if fmt in READER_VERSIONS:
        key += f" reader={READER_VERSIONS[fmt]}"
    return key + " ocr=off" if fmt == "pdf" and params.ocr == "off" else key


def chunking_keys(params: ChunkParams) -> dict[str, str]:
    """``chunking_key`` of every format with a reader version, and of all the others under ""."""
    return {"": chunking_key(params), **{fmt: chunking_key(params, fmt) for fmt in READER_VERSIONS}}


SUMMARY_CHARS = 400
"""How much of a document's opening text its own vector is made from (with its title)."""


def document_summary(title: str, text: str, chars: int = SUMMARY_CHARS) -> str:
    """What a document's own vector is made from (find_items): its title and opening text."""
    return f"{title}\n{' '.join(text[:chars].split())}"


def _vector(made: dict[str, np.ndarray], reuse: dict[str, bytes], text: str) -> np.ndarray:
    """The vector of ``text``: embedded just now, or kept from the document the file was before."""
    return made[text] if text in made else np.frombuffer(reuse[text], np.float32)


def model_meta(embedder, dim: int) -> dict[str, str]:
    """What the library records about the model that made its vectors."""
    return {"embedding_model": embedder.name, "embedding_fingerprint": embedder.fingerprint,
            "embedding_dim": str(dim)}  # fmt: skip


class Ingestor:
    """Ingest, prune and reindex over one library's parts. The caller holds the writer lock."""

    def __init__(self, index, settings: Settings, publish: Callable[[], None],
                 turn: Callable[[], AbstractContextManager] = nullcontext) -> None:  # fmt: skip
        self.index = index
        """Has ``store``, ``vectors`` (caught up with the database on each use) and ``embedder``."""
        self.settings = settings
        self.publish = publish
        """Saves the vector index for other processes when it changed."""
        self.turn = turn
        """Held around every change of the rows and the vector index (``Library.in_turns``): reading files,
        parsing and embedding happen outside it, so a service's searches are not held up by them."""
        self.founding: _Founding | None = None
        """What the ingest in progress writes only together with a document (set by ``ingest``)."""

    @property
    def store(self):
        return self.index.store

    # ------------------------------------------------------------ ingest

    def ingest(self, paths: list[str], col: Collection, include, exclude, prune: bool,
               progress: ProgressCallback | None, *, remember: bool = True, gone: Iterable[str] = (),
               prune_emptied: bool = False, new: bool = False) -> IngestReport:  # fmt: skip
        """Ingest ``paths`` into ``col``; with ``prune``, remove the documents whose files left the given folders;
        the documents of files at or under the ``gone`` paths that no longer exist are removed too (a watcher's
        deletions). ``remember``: the paths become sources that sync re-checks (``_Founding`` says when). ``new``:
        ``col`` is not in the store yet; it is made with the first document written, never by a run that writes
        none. Removals come after the files are written, so a file moved within the collection reuses the vectors
        of its old document (``_Preparer``). A given folder that is empty now keeps its documents
        (``report.kept``) unless ``prune_emptied``."""
        start = time.perf_counter()
        report = IngestReport(col.id, col.name)
        known = self.store.hashes_for(col.id, chunking_keys(ChunkParams.from_settings(self.settings)))
        removed = kept_removed(self.store, col, paths) if not new else {}
        candidates, problems, roots = discover(paths, include, exclude, frozenset(known), removed)
        for p in problems:
            report.files.append(FileResult(path_text(p.path), p.status, p.reason))
        self.founding = _Founding(self.store, col, new,
                                  _given(candidates, roots, include, exclude, removed) if remember else {})  # fmt: skip
        try:
            self._run(col, candidates, known, report, progress)
            if not report.stopped:
                with self.turn():
                    self.founding.settle(report)
            if not report.stopped:
                with self.turn():
                    self._drop_textless(known, problems, report)
            if prune and not report.stopped:
                with self.turn():
                    self._prune(col, candidates, roots, problems, known, report, prune_emptied,
                                globs=bool(include or exclude))  # fmt: skip
            gone = list(gone)
            if gone and not report.stopped:
                with self.turn():
                    self._forget(col, gone, known, report)
        except StorageFull as exc:
            report.stopped = f"{exc.message} {exc.hint or ''}".strip()
        except KeyboardInterrupt as exc:
            report.seconds, report.made = time.perf_counter() - start, not self.founding.new
            with self.turn():
                self.publish()
            raise Interrupted(report) from exc
        with self.turn():
            self.publish()
        report.seconds, report.made = time.perf_counter() - start, not self.founding.new
        return report

    def _limits(self) -> Limits:
        s = self.settings
        return Limits(s.max_parse_seconds, s.max_parse_memory_mb, int(s.max_unpacked_mb * 2**20))

    def _recognizer(self, progress: ProgressCallback | None, tally: "_Tally") -> "_Recognizer | None":
        s = self.settings
        if s.ocr == "off":
            return None
        limits = Limits(s.ocr_page_seconds, s.ocr_memory_mb, 0, s.threads)
        on_page = None
        if progress is not None:
            def on_page(path: str, page: int, pages: int) -> None:
                progress(Progress(len(tally.done), tally.total, tally.chunks, path, "recognizing", page, pages))
        return _Recognizer(Recognition(s.ocr_dpi, int(s.max_image_megapixels * 1e6)), limits, s.ocr_min_confidence,
                           on_page)  # fmt: skip

    def _run(self, col: Collection, candidates: list[Candidate], known: dict, report: IngestReport,
             progress: ProgressCallback | None) -> None:  # fmt: skip
        """Prepare files on a background thread (parsing in a child process) while this one embeds and writes."""
        tally = _Tally(report, progress, len(candidates))
        preparer = _Preparer(col.id, known, ChunkParams.from_settings(self.settings), int(self.settings.max_file_mb * 2**20),
                             shared_worker(self._limits()), self._recognizer(progress, tally))  # fmt: skip
        feed = _Feed(candidates, preparer)
        if preparer.recognizer is not None:
            preparer.recognizer.halt = feed.halt
        feed.start()
        finished = False
        try:
            self._consume(feed, tally)
            finished = True
        except StorageFull as exc:
            tally.fail_rest(candidates, f"not ingested: {exc.message}")
            raise
        finally:
            feed.stop(kill_parser=not finished)
            if preparer.recognizer is not None:
                preparer.recognizer.close()  # its models hold a gigabyte: a long-running process keeps none idle
        why = f"{feed.crash.__class__.__name__}: {feed.crash}" if feed.crash else "an internal error"
        tally.fail_rest(candidates, f"not processed ({why}); run the same command again")

    def _consume(self, feed: "_Feed", tally: "_Tally") -> None:
        """Take prepared files off the feed; embed and write them in groups of about EMBED_GROUP paragraphs."""
        pending: list[PreparedDocument] = []
        pending_chunks = 0
        for item in feed:
            if isinstance(item, FileResult):
                tally.record(item)
                continue
            pending.append(item)
            pending_chunks += len(item.paragraphs)
            if pending_chunks >= EMBED_GROUP:
                self._commit(pending, tally)
                pending, pending_chunks = [], 0
        self._commit(pending, tally)

    def _commit(self, prepared: list[PreparedDocument], tally: "_Tally") -> None:
        """Embed the new paragraph texts of ``prepared`` in one call, then write each document on its own."""
        if not prepared:
            return
        with self.turn():
            vectors = self.index.vectors  # checks the model and loads/catches up the index first
        reuse: dict[str, bytes] = {}
        for p in prepared:
            if p.reuse_from is not None:
                reuse.update(self.store.old_embeddings(p.reuse_from))
                title, opening, blob = self.store.document_opening(p.reuse_from, SUMMARY_CHARS)
                if blob is not None:
                    reuse[document_summary(title, opening)] = blob
        by_text = self._embed_new(prepared, reuse)
        results: list[FileResult] = []
        try:
            with self.turn():
                self._write(prepared, by_text, reuse, vectors, results)
        finally:  # every written file in the report; progress told after the turn (a callback may search)
            for result in results:
                tally.record(result, tell=False)
            if results:
                tally.tell(results[-1])

    def _write(self, prepared: list[PreparedDocument], by_text: dict[str, np.ndarray], reuse: dict[str, bytes],
               vectors, results: list[FileResult]) -> None:  # fmt: skip
        """Write each document of ``prepared`` on its own (rows and vectors), with the vectors made for them; each
        file's result goes into ``results`` (on a full disk, the rest as not written)."""
        for i, p in enumerate(prepared):
            p.record.embedding = _vector(by_text, reuse, document_summary(p.record.title, p.record.text)).tobytes()
            paras = p.paragraphs
            doc_vecs = np.vstack([_vector(by_text, reuse, c.text) for c in paras]) if paras \
                else np.zeros((0, vectors.dim), np.float32)  # fmt: skip
            try:
                with self.founding.writing(p.path):  # a new collection and its sources come with its first document
                    write = self.store.replace_document(p.record.row(), p.chunks, doc_vecs, p.terms)
                vectors.apply(write, doc_vecs)
            except StorageFull as exc:
                results += [FileResult(q.path, "failed", f"not written: {exc.message}") for q in prepared[i:]]
                raise
            results.append(FileResult(p.path, p.status, "; ".join(p.notes), p.record.id, len(paras), p.recognized))

    def _embed_new(self, prepared: list[PreparedDocument], reuse: dict[str, bytes]) -> dict[str, np.ndarray]:
        """Vectors for every paragraph text and document summary not in ``reuse``, in one call."""
        summaries = [document_summary(p.record.title, p.record.text) for p in prepared]
        texts = [t for t in dict.fromkeys([c.text for p in prepared for c in p.paragraphs] + summaries)
                 if t not in reuse]  # fmt: skip
        if not texts:
            return {}
        vecs = self.index.embedder.embed(texts)
        if self.store.get_meta("embedding_fingerprint") is None:
            with self.turn(), self.store.transaction():
                for key, value in model_meta(self.index.embedder, int(vecs.shape[1])).items():
                    self.store.set_meta(key, value)
            if hasattr(self.store, "ensure_vector_index"):  # PostgreSQL: its HNSW index, now that the size is known
                with self.turn():
                    self.store.ensure_vector_index(int(vecs.shape[1]))
        return {t: vecs[i] for i, t in enumerate(texts)}

    def _prune(self, col: Collection, candidates: list[Candidate], roots: list[Path], problems, known: dict,
               report: IngestReport, prune_emptied: bool = False, globs: bool = False) -> None:  # fmt: skip
        """Remove the documents whose files have left the given folders (or a given file that is gone), but those
        whose files only seem gone (prune.judge: a folder empty now, unreadable, or a link to nowhere, as an
        unmounted drive leaves it: no reason to forget a library); ``report.kept`` says which and why."""
        seen = {path_text(c.path) for c in candidates}
        seen |= {s["path"] for s in self.store.sources(col.id) if os.path.isfile(s["path"])}  # a file named: kept
        verdict = prune.judge(known, seen, [path_text(r) for r in roots], problems, prune_emptied)
        report.kept += sorted((where, n, why) for (where, why), n in verdict.kept.items())
        if not verdict.doomed:
            return
        write = self.store.delete_documents((d for _, d in verdict.doomed), [(col.id, p) for p in verdict.forget])
        self.index.vectors.apply(write)
        why = {path_text(p.path): p.reason for p in problems}
        for path, doc_id in verdict.doomed:
            report.files.append(FileResult(path, "removed", prune.removal_reason(path, why.get(path), globs), doc_id))

    def _drop_textless(self, known: dict, problems, report: IngestReport) -> None:
        """A file read this time that holds no text now (emptied, binary, no text found) loses the document its old
        text made: left, that text went on answering for a file that no longer says it."""
        walked = {path_text(p.path) for p in problems}  # (skipped before reading: prune's to judge)
        stale = [(i, f) for i, f in enumerate(report.files) if f.status == "skipped" and f.path in known
                 and f.path not in walked and f.reason.startswith(TEXTLESS)]  # fmt: skip
        if not stale:
            return
        self.index.vectors.apply(self.store.delete_documents(known[f.path][0] for _, f in stale))
        for i, f in stale:
            report.files[i] = FileResult(f.path, "removed", f"{f.reason} now: its old text is removed", known[f.path][0])

    def _forget(self, col: Collection, gone: list[str], known: dict, report: IngestReport,
                reason: str = "the file no longer exists", sources: list[tuple[str, str]] = ()) -> None:  # fmt: skip
        """Remove the documents of files at or under the ``gone`` paths, each only if its file is indeed not there
        (a file deleted and written again since it was seen gone keeps its document), and forget ``sources``."""
        exact, prefixes = set(gone), tuple(g.rstrip(os.sep) + os.sep for g in gone)
        doomed = [(path, doc_id) for path, (doc_id, _) in known.items()
                  if (path in exact or path.startswith(prefixes)) and not os.path.lexists(path)]  # fmt: skip
        if doomed or sources:
            self.index.vectors.apply(self.store.delete_documents((doc_id for _, doc_id in doomed), sources))
        report.files += [FileResult(path, "removed", reason, doc_id) for path, doc_id in doomed]

    def forget_folder(self, col: Collection, folder: str) -> IngestReport:
        """Remove a vanished folder's documents and forget it as a source (``sync --prune``), in one transaction."""
        start = time.perf_counter()
        report = IngestReport(col.id, col.name)
        known = self.store.hashes_for(col.id, chunking_keys(ChunkParams.from_settings(self.settings)))
        with self.turn():
            self._forget(col, [folder], known, report, "its folder no longer exists", [(col.id, folder)])
            self.publish()
        report.seconds = time.perf_counter() - start
        return report

    # ------------------------------------------------------------ reindex

    def reembed(self, progress: ProgressCallback | None = None, batch: int = 512) -> int:
        """Re-embed every paragraph chunk and document with the configured model, in one transaction."""
        store, embedder = self.store, self.index.embedder
        rows = store.paragraph_texts()
        updates = []
        for i in range(0, len(rows), batch):
            part = rows[i:i + batch]
            vecs = embedder.embed([text for _, text in part])
            updates += [(v.tobytes(), rowid) for (rowid, _), v in zip(part, vecs)]
            if progress:
                progress(Progress(min(i + batch, len(rows)), len(rows), min(i + batch, len(rows))))
        docs = store.document_texts()
        doc_vecs = embedder.embed([document_summary(title, text) for _, title, text in docs]) if docs else []
        dim = int(embedder.embed(["dimension probe"]).shape[1])
        store.reembed(updates, [(v.tobytes(), d[0]) for d, v in zip(docs, doc_vecs)], model_meta(embedder, dim))
        return len(rows)


def kept_removed(store, col: Collection, paths: list[str]) -> dict[str, list[str]]:
    """Per folder given (as path_text gives it), the files removed from it that stay out (walk.removals_under: the
    globs Library.remove added to the sources of the collection around it, inside it or at it, "/sub/file.md"): a
    folder ingested again, with globs or without, alone or with others, or a folder above or below one a file was
    removed from, does not bring back what was removed."""
    sources = store.sources(col.id, every=True)
    out = {}
    for raw in paths:
        path = path_text(os.path.abspath(os.path.expanduser(str(raw))))
        if globs := removals_under(path, sources):
            out[path] = globs
    return out


def _given(candidates: list[Candidate], roots: list[Path], include, exclude,
           removed: dict[str, list[str]]) -> dict[str, tuple[list, list, bool]]:  # fmt: skip
    """The paths an ingest may remember as sources (what sync ingests again): each folder given, with the globs and
    the files kept out of it (``removed``), and each file given by name (one whose name is not valid UTF-8 is not);
    as ``_Founding.sources``."""
    given = {path_text(root): (list(include or []), with_removed(exclude, removed.get(path_text(root), [])), True)
             for root in roots}  # fmt: skip
    for c in candidates:
        if c.root is None and name_is_text(c.path):
            given.setdefault(path_text(c.path), ([], [], False))
    return given


@dataclass
class _Founding:
    """What an ingest writes only together with a document: its collection when that is new, and each path given as
    a source (sync and a watch re-check it) with the first document written under it. So a run that writes nothing
    (a missing path, a corrupt file, a folder of bad files, an interrupt before the first write) leaves the library
    as it was: no empty collection, no remembered path that yielded nothing (tests/test_nothing_half_made.py)."""

    store: object
    col: Collection
    new: bool
    """``col`` is not in the store yet."""
    sources: dict[str, tuple[list, list, bool]]
    """The paths given and not remembered yet -> (include, exclude, whether a folder)."""

    def _holds(self, source: str, path: str) -> bool:
        return path == source or (self.sources[source][2] and path.startswith(source + os.sep))

    @contextmanager
    def writing(self, path: str):
        """Around the write of the document of ``path``: what is due with it is written in the same transaction."""
        due = [s for s in self.sources if self._holds(s, path)]
        if not self.new and not due:
            yield
            return
        with self.store.transaction():
            self._found(due)
            yield
        self._done(due)

    def settle(self, report: IngestReport) -> None:
        """At the end of a run: remember the paths given that hold a document now (files unchanged), and the folders
        with no file in them at all (a new notes folder: sync and a watch ingest what is put in it later, so it makes
        its collection too). A path that is missing, or whose files all failed or were skipped, is not remembered."""
        due = []
        for source, (_, _, folder) in self.sources.items():
            found = [f.status for f in report.files if self._holds(source, f.path)]
            if any(status in ("added", "updated", "unchanged") for status in found) or (folder and not found):
                due.append(source)
        if due:
            with self.store.transaction():
                self._found(due)
            self._done(due)

    def _done(self, due: list[str]) -> None:
        self.new = False
        for source in due:
            del self.sources[source]

    def _found(self, due: list[str]) -> None:
        """Inside the caller's transaction: make the collection if it is new, and remember the sources ``due``."""
        if self.new:
            self.store.insert_collection(self.col.id, self.col.name)
            if not self.store.collection_exists(self.col.id):  # the writer lock keeps other writers out: not expected
                raise LibraryError(f"Another program made a collection named {self.col.name!r} during this ingest.",
                                   hint="Run the same command again: it adds to that collection.")
        for source in due:
            include, exclude, _ = self.sources[source]
            self.store.add_source(self.col.id, source, include, exclude)


class _Feed:
    """The background thread that prepares files, and the queue it hands them over by."""

    def __init__(self, candidates: list[Candidate], preparer: "_Preparer") -> None:
        self.candidates = candidates
        self.preparer = preparer
        self.items: queue.Queue = queue.Queue(maxsize=64)
        self.halt = threading.Event()
        self.crash: BaseException | None = None
        self._done = object()
        self.thread = threading.Thread(target=self._produce, name="localreason-parse", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _produce(self) -> None:
        try:
            for cand in self.candidates:
                if self.halt.is_set():
                    return
                self.items.put(self.preparer.prepare(cand))
        except BaseException as exc:  # noqa: BLE001 - reported as the reason for the files not done
            self.crash = exc
        finally:
            self.items.put(self._done)

    def __iter__(self):
        while (item := self.items.get()) is not self._done:
            yield item

    def stop(self, kill_parser: bool) -> None:
        self.halt.set()
        if kill_parser:
            self.preparer.parser.kill()  # a parse in progress ends now (Ctrl-C, a full disk); the next run starts another
            if self.preparer.recognizer is not None:
                self.preparer.recognizer.kill()
        while self.thread.is_alive():  # unblock a producer waiting on a full queue
            try:
                self.items.get(timeout=0.05)
            except queue.Empty:
                pass


@dataclass
class _Preparer:
    """Read, hash, parse and chunk one file at a time (on the feed's thread)."""

    collection_id: str
    known: dict
    """source path -> (document id, content hash or None when its chunking differs from ``params``)."""
    params: ChunkParams
    max_bytes: int
    parser: ParseWorker
    recognizer: "_Recognizer | None" = None
    """Reads the pages that need text recognition; None when ``ocr = off``."""
    _by_content: dict[str, str] | None = None

    def by_content(self) -> dict[str, str]:
        """content hash -> a document id with that content (made on first use, from ``known``)."""
        if self._by_content is None:
            self._by_content = {h: doc_id for doc_id, h in self.known.values() if h is not None}
        return self._by_content

    def prepare(self, cand: Candidate) -> PreparedDocument | FileResult:
        """One file prepared, or its result; any fault fails this file only."""
        path = path_text(cand.path)
        try:
            return prepare_file(self, cand, path)
        except IngestFileError as exc:
            return FileResult(path, exc.status, exc.message)
        except FileNotFoundError:
            return FileResult(path, "failed", "the file was moved or deleted before it could be read")
        except OSError as exc:
            return FileResult(path, "failed", os_reason(exc, cand.path))
        except Exception as exc:  # a bug: report it against this file and go on with the others
            return FileResult(path, "failed", f"could not be ingested ({exc.__class__.__name__}: {exc})")


def prepare_file(prep: _Preparer, cand: Candidate, path: str) -> PreparedDocument | FileResult:
    if cand.format is None:
        kind = cand.path.suffix or "no extension"
        return FileResult(path, "skipped", f"unsupported file type ({path_text(kind)})")
    data, st = read_regular(cand.path, prep.max_bytes)
    if not data:
        return FileResult(path, "skipped", "empty file")
    content_hash = hashlib.blake2b(data, digest_size=16).hexdigest()
    previous = prep.known.get(path)
    if previous and previous[1] == content_hash:
        return FileResult(path, "unchanged", "", previous[0])
    doc_id = derived_id("doc", prep.collection_id, path)
    reuse_from = previous[0] if previous else prep.by_content().get(content_hash)
    rec = prep.recognizer
    job = Job(path, data, cand.format, doc_id, prep.params, prep.parser.limits.unpacked_bytes,
              rec.recognition if rec is not None else None)  # fmt: skip
    parsed = prep.parser.parse(job)
    readings: list[PageReading] = []
    if isinstance(parsed, Survey):  # pages without a usable text layer: recognised one by one, then parsed again
        readings = rec.read(path, content_hash, data, cand.format, parsed.pages)
        parsed = prep.parser.parse(replace(job, readings=tuple(readings)))
        if isinstance(parsed, Survey):
            raise IngestFileError("the file's pages changed between two readings of the same bytes")
    notes = list(parsed.notes) + (rec.notes(readings) if readings else [])
    if any(r.again for r in readings):  # stored so that it does not match: the file is read again next time
        content_hash += READ_AGAIN
        notes.append("a page that ran past its time or memory limit is read again at the next sync")
    if previous and previous[1] is None:
        notes.append("re-chunked: the chunking settings or the way files are read changed")
    if not name_is_text(cand.path):
        notes.append("the file name is not valid UTF-8; it is shown with \\x escapes")
    record = DocumentRecord(
        id=doc_id, collection_id=prep.collection_id, title=parsed.title or cand.path.name, source_path=path,
        format=parsed.format, content_hash=content_hash, size_bytes=len(data), mtime=st.st_mtime,
        char_count=len(parsed.text), token_count=sum(c.token_count for c in parsed.chunks if c.level == LEVEL_SECTION),
        text=parsed.text, updated_at=now(), chunking=chunking_key(prep.params, parsed.format),
        recognition=json.dumps([asdict(p) for p in parsed.recognized]) if parsed.recognized else None)  # fmt: skip
    return PreparedDocument(path, record, parsed.chunks, "updated" if previous else "added", notes, reuse_from,
                            tuple(parsed.recognized), parsed.terms)  # fmt: skip


class _Recognizer:
    """Reads the pages a file's first parse named (``Survey``) in the recognition worker, one page per job, with a
    time and memory limit per page; a page that fails is reported and the others are read."""

    def __init__(self, recognition: Recognition, limits: Limits, min_confidence: float,
                 on_page: Callable[[str, int, int], None] | None) -> None:  # fmt: skip
        self.recognition = recognition
        self.limits = limits
        self.min_confidence = min_confidence
        self.on_page = on_page
        self.halt = threading.Event()
        """Set when the ingest stops (the feed's own event): no page is started after it."""

    @property
    def worker(self) -> ParseWorker:
        """The process's recognition worker (started on the first page that needs it, never for a text file)."""
        return shared_worker(self.limits, "ocr")

    def read(self, path: str, key: str, data: bytes, fmt: str, pages: tuple[int, ...]) -> list[PageReading]:
        """Every page of ``pages`` recognised (or failed, with why), in order. Raises IngestFileError when the ingest
        is stopped between pages (Ctrl-C, a cancel in the TUI: ``halt``, or a progress callback that raises)."""
        out = []
        for i, page in enumerate(pages):
            self._tell(path, i, len(pages))
            job = OcrJob(key, data, fmt, page, self.recognition.dpi, self.recognition.max_pixels)
            try:
                out.append(self.worker.recognise(job))
            except IngestFileError as exc:
                out.append(PageReading(page, failed=exc.message, again=isinstance(exc, OverLimit)))
        self._tell(path, len(pages), len(pages))
        return out

    def _tell(self, path: str, page: int, pages: int) -> None:
        """Progress, on the feed's thread; a stop asked for (there, or by ``halt``) ends this file's recognition."""
        if not self.halt.is_set() and self.on_page is not None:
            try:
                self.on_page(path, page, pages)
            except BaseException:  # noqa: BLE001 - a cancel (the TUI raises KeyboardInterrupt in its callback)
                self.halt.set()
        if self.halt.is_set():
            raise IngestFileError(f"stopped after {page} of {counted(pages, 'page')} had been recognised; run the same command "
                                  "again to read it")  # fmt: skip

    def notes(self, readings: list[PageReading]) -> list[str]:
        """What the report says of a file's recognised pages: how many and how confidently, the pages under
        ``min_confidence`` with theirs, the pages not read and why, and the lines too uncertain to keep."""
        read = [r for r in readings if not r.failed and r.lines]
        notes = []
        if read:
            mean = sum(r.confidence * r.lines for r in read) / sum(r.lines for r in read)
            notes.append(f"{counted(len(read), 'page')} read by text recognition (mean confidence {mean:.2f})")
        low = [r for r in read if r.confidence < self.min_confidence]
        if low:
            shown = ", ".join(f"page {r.page} ({r.confidence:.2f})" for r in low[:20])
            more = f" and {len(low) - 20} more" if len(low) > 20 else ""
            notes.append(f"low recognition confidence, under {self.min_confidence:g} (the text may hold misread "
                         f"words): {shown}{more}")  # fmt: skip
        empty = [r.page for r in readings if not r.failed and not r.lines]
        if empty:
            notes.append(f"recognition found no text on {pages_named(empty)}")
        by_reason: dict[str, list[int]] = {}
        for r in readings:
            if r.failed:
                by_reason.setdefault(r.failed, []).append(r.page)
        for reason, pages in by_reason.items():
            notes.append(f"{pages_named(pages)} {'was' if len(pages) == 1 else 'were'} not read: {reason}")
        uncertain = [r for r in readings if r.low_lines]
        if uncertain:
            n = sum(r.low_lines for r in uncertain)
            notes.append(f"{counted(n, 'line')} recognised with confidence under {LINE_MIN_SCORE} left out "
                         f"({pages_named([r.page for r in uncertain])})")  # fmt: skip
        return notes

    def close(self) -> None:
        """Let the recognition worker exit (the next file that needs it starts another); none started: nothing."""
        worker = existing_worker(self.limits, "ocr")
        if worker is not None:
            worker.close()

    def kill(self) -> None:
        """Stop a recognition in progress (a cancelled ingest); nothing to do when none was started."""
        worker = existing_worker(self.limits, "ocr")
        if worker is not None:
            worker.kill()


class _Tally:
    """The report of one run as files finish, with progress, so that every file given is accounted for."""

    def __init__(self, report: IngestReport, progress: ProgressCallback | None, total: int) -> None:
        self.report = report
        self.progress = progress
        self.total = total
        self.done: set[str] = set()
        self.chunks = 0

    def record(self, result: FileResult, tell: bool = True) -> None:
        self.report.files.append(result)
        self.done.add(result.path)
        self.chunks += result.chunks
        if tell:
            self.tell(result)

    def tell(self, result: FileResult) -> None:
        """The progress callback, with ``result`` the last file done (it may raise KeyboardInterrupt: stop)."""
        if self.progress:
            self.progress(Progress(len(self.done), self.total, self.chunks, result.path, result.status))

    def fail_rest(self, candidates: Iterable[Candidate], reason: str) -> None:
        """Report every candidate that has no result yet as failed with ``reason``."""
        for cand in candidates:
            if path_text(cand.path) not in self.done:
                self.record(FileResult(path_text(cand.path), "failed", reason))
