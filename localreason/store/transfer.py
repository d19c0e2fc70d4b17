"""Moving a library between stores: ``localreason store copy --to postgresql://...`` (and ``--from``).

Everything is copied as it is, vectors included, so nothing is embedded again: the embedding model's identity,
the collections (same ids), every document with its chunks (same ids, in the order written), the folders it
follows, and the API keys (their digests). Documents keep their times; collections, folders and keys are dated
by the copy. Each document is one transaction of the target, as an ingest writes
it, under the target's writer lock. The target must hold no library yet, or an unfinished copy (marked
``copy_incomplete``, which nothing else opens: library.open_store), which is emptied and copied again. The keys are
copied before the documents, so a copy stopped half way never holds documents without the keys that guard them.
At the end both sides are counted and digested (every document's row and every chunk's text, terms and vector
bytes): a copy that differs is an error.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import LibraryError
from .db import MODEL_META


@dataclass(frozen=True)
class Tally:
    """What a store holds, and a digest of it."""

    collections: int
    documents: int
    chunks: int
    keys: int
    sources: int
    digest: str

    def to_dict(self) -> dict:
        return {"collections": self.collections, "documents": self.documents, "chunks": self.chunks,
                "keys": self.keys, "sources": self.sources, "digest": self.digest}  # fmt: skip


def _text(value):
    """Text as both stores can hold it: PostgreSQL keeps each NUL as U+FFFD (one character for one)."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def tally(store) -> Tally:
    """Counts and a SHA-256 digest of a store's content (documents in id order, each with its chunks)."""
    h = hashlib.sha256()
    chunks = 0
    for doc_id in sorted(store.document_ids()):
        doc, rows, vectors, terms = store.export_document(doc_id)
        h.update(repr([_text(doc[k]) for k in ("id", "collection_id", "title", "source_path", "format",
                                                "content_hash", "char_count", "token_count", "text", "chunking",
                                                "recognition")]).encode())  # fmt: skip
        h.update(doc["embedding"] or b"")
        for c in sorted(rows, key=lambda c: c.id):
            h.update(repr((c.id, c.level, c.parent_id, c.index, _text(c.text), c.start, c.end,
                           _text(terms.get(c.id, "")))).encode())  # fmt: skip
        h.update(vectors.astype("<f4").tobytes())
        chunks += len(rows)
    keys = sorted(store.key_export())
    h.update(repr(keys).encode())
    sources = len(store.sources(every=True))
    return Tally(len(store.collection_rows()), len(store.document_ids()), chunks, len(keys), sources, h.hexdigest())


def copy_library(source, target, progress: Callable[[int, int], None] | None = None,
                 notice: Callable[[str], None] | None = None) -> Tally:  # fmt: skip
    """Copy the library in ``source`` into the empty ``target``, both writer locks held (no ingest or watch
    changes either meanwhile); returns the target's tally, checked against the source's (LibraryError when they
    differ, or when the target holds a library already). Until the check passes the target is marked
    ``copy_incomplete`` in its metadata."""
    source_lock = source.acquire_writer("store copy (reading)", notice)
    try:
        target_lock = target.acquire_writer("store copy", notice)
        try:
            _ready(source, target, notice)
            before = tally(source)
            _mark(target, f"from {source.path}")
            _copy_rows(source, target, progress)
            after = tally(target)
        finally:
            target.release_writer(target_lock)
    finally:
        source.release_writer(source_lock)
    if after != before:
        raise LibraryError(f"The copy in {target.path} differs from the library it was copied from "
                           f"({before.to_dict()} against {after.to_dict()}).",
                           hint="Nothing was removed from the source. The target is marked copy_incomplete: empty it "
                           "(a new database, or remove the library folder) and copy again.")  # fmt: skip
    _mark(target, None)
    return after


def _ready(source, target, notice) -> None:
    """Refuse a source that is itself an unfinished copy, and a target that holds a library; empty a target that
    holds an unfinished copy."""
    if source.get_meta("copy_incomplete"):
        raise LibraryError(f"The library in {source.path} is an unfinished copy "
                           f"({source.get_meta('copy_incomplete')}).",
                           hint="Finish that copy first: run the `localreason store copy` that made it again.")
    unfinished = target.get_meta("copy_incomplete")
    if unfinished:
        if notice is not None:
            notice(f"{target.path} holds an unfinished copy ({unfinished}): emptying it to copy again.")
        target.clear()
        return
    held = target.document_ids()
    if held or target.collection_rows() or target.key_export():
        raise LibraryError(f"The target {target.path} already holds a library ({len(held)} documents).",
                           hint="Copy into an empty database (or an empty library folder): a copy never "
                           "merges.")  # fmt: skip


def _mark(target, value: str | None) -> None:
    """Mark the target as holding an unfinished copy (``value``), or clear the mark."""
    with target.transaction():
        target.set_meta("copy_incomplete", value or "")


def _copy_rows(source, target, progress) -> None:
    with target.transaction():
        for key in MODEL_META + ("vector_epoch",):
            value = source.get_meta(key)
            if value is not None:
                target.set_meta(key, value)
    dim = source.get_meta("embedding_dim")
    if dim and hasattr(target, "ensure_vector_index"):
        target.ensure_vector_index(int(dim))
    for col in source.collection_rows():
        target.insert_collection(col.id, col.name)
    for name, digest, collections in source.key_export():  # first: no document of a copy is ever unguarded
        target.insert_key(name, digest, collections)
    ids = source.document_ids()
    for i, doc_id in enumerate(ids, 1):
        doc, chunks, vectors, terms = source.export_document(doc_id)
        target.replace_document(doc, chunks, vectors, terms)
        if progress is not None:
            progress(i, len(ids))
    for s in source.sources(every=True):  # (each with the machine that ingested it, where the store records one)
        target.add_source(s["collection_id"], s["path"], s["include"], s["exclude"], s.get("host"))
