"""SQLite: collections, documents, chunks (with FTS5), ingest sources and library metadata.

SQLite is the source of truth, vectors included (a float32 blob per paragraph
chunk); the FAISS index beside it is a cache that can always be rebuilt from
here. Each document is written in one transaction, so an ingest that fails or
is interrupted leaves the library as it was before that document.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import LibraryError, StorageFull
from ..textquery import TextQuery
from ..types import LEVEL_PARAGRAPH, Chunk, Collection, Document, RecognizedPage, SearchHit
from . import lock as write_lock
from .sqlite_schema import MIGRATIONS, SCHEMA_VERSION  # noqa: F401 - SCHEMA_VERSION is read through here


def _statements(script: str) -> list[str]:
    """The SQL statements of a migration script, split where SQLite says a statement is complete."""
    out, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    return [s for s in out if s]


def _patiently(db: sqlite3.Connection, sql: str):
    """Run ``sql`` and fetch its first row, retrying while another connection holds a lock.

    Switching a new database to WAL and reading the WAL index while another connection
    sets it up can meet a lock without SQLite's busy wait; these happen when several
    programs open a new library at once.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return db.execute(sql).fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _read_only_error(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def _storage_error(exc: sqlite3.Error, path: Path) -> LibraryError:
    """A SQLite error as a message that names its cause and what to do."""
    text = str(exc)
    low = text.lower()
    if "full" in low:
        return StorageFull(f"The disk holding the library is full ({path.parent}): {text}.",
                           hint="Free some space and run the same command again; what was committed before is kept.")
    if _read_only_error(exc):
        return LibraryError(f"The library at {path.parent} is read-only: {text}.",
                            hint="Searching and asking work; adding or removing documents needs write access.")
    if "locked" in low or "busy" in low:
        return LibraryError(f"The library is busy: another program is writing to it ({text}).",
                            hint="Try again when the other program has finished.")
    if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in low or "not a database" in low):
        return LibraryError(f"The library database {path} is damaged or not a database: {text}.",
                            hint="If the file is damaged, move it aside and ingest your files again.")
    return LibraryError(f"The library database {path} failed: {text}.",
                        hint="Check the disk; what was committed before is kept.")


_P = LEVEL_PARAGRAPH
"""The paragraph level, as the SQL below spells it."""


def _marks(values: list) -> str:
    return ",".join("?" * len(values))


DIGEST_MULTIPLIER = 2654435761
DIGEST_MODULUS = 4294967291
"""A set of rowids is digested as (count, max, sum, sum of rowid * M mod P): two different sets that a process
could come to hold (its own writes applied, another's not yet) agree on all four only by a freak coincidence."""


def rowid_digest(rowids: np.ndarray) -> tuple[int, ...]:
    """The digest of a set of rowids, as ``Store.paragraph_digest`` computes it in SQL."""
    r = np.asarray(rowids, dtype=np.int64)
    if r.size == 0:
        return (0, 0, 0, 0)
    return (int(r.size), int(r.max()), int(r.sum()), int(((r * DIGEST_MULTIPLIER) % DIGEST_MODULUS).sum()))


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


BUSY_TIMEOUT_S = 10.0
"""How long a statement waits for another process's write lock before giving up (SQLite's busy timeout)."""


@dataclass(frozen=True)
class Write:
    """One committed write, as the vector index must apply it."""

    removed: list[int]
    """Paragraph rowids deleted."""
    added: list[int]
    """Paragraph rowids inserted, in the order of the vectors written."""
    before: int
    """The database generation the write started from ..."""
    after: int
    """... and the one it committed."""


def _on_disk(path: Path) -> tuple:
    """The size and time of a library file and its write-ahead log: they change when anyone writes."""
    out = []
    for p in (path, path.with_name(path.name + "-wal")):
        try:
            st = p.stat()
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


_SET_EXCLUDE = "UPDATE sources SET exclude = ? WHERE collection_id = ? AND path = ?"


class Store:
    """The SQLite side of a library. One connection, used from one thread at a time.

    Several processes may open the same library: WAL lets readers go on while one writer
    commits, every write is one short ``BEGIN IMMEDIATE`` transaction, and a statement that
    meets another process's write lock waits up to BUSY_TIMEOUT_S instead of failing.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read_only = False
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = "it is a file, not a folder" if path.parent.exists() else exc.strerror or str(exc)
            raise LibraryError(f"The library folder {path.parent} cannot be used: {why}.",
                               hint="Point LOCALREASON_HOME (or --home) at a folder you can write to.") from exc
        self._seen_on_disk: tuple | None = None
        """Opened immutable (see _connect): the files' size and time then, to see another user's writes by."""
        self.db = self._open()
        self._migrate()

    def _open(self) -> sqlite3.Connection:
        db = self._connect()
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def follow_disk(self) -> None:
        """A library opened immutable (a folder this process cannot write: see _connect) shows nobody's writes by
        itself, though the folder's owner can still write: when its files changed, open it again, so a document
        or a key removed there is gone here too. Costs two stats; nothing for a library opened otherwise."""
        if self._seen_on_disk is not None and _on_disk(self.path) != self._seen_on_disk:
            self.db = self._open()  # a thread still reading the old connection finishes on it

    def _connect(self) -> sqlite3.Connection:
        """Open read-write in WAL mode; a library on a read-only disk is opened read-only instead."""
        try:
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            _patiently(db, "PRAGMA journal_mode=WAL")
            return db
        except sqlite3.OperationalError as exc:
            if not self.path.is_file() or not _read_only_error(exc):
                raise _storage_error(exc, self.path) from exc
        except sqlite3.DatabaseError as exc:
            raise _storage_error(exc, self.path) from exc
        self.read_only = True
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        self._seen_on_disk = None
        try:
            db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            # WAL needs its -shm file, which this process cannot make: read the file as it is, and open it again
            # when it changes (follow_disk), for the folder's owner may still write it.
            self._seen_on_disk = _on_disk(self.path)
            db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None, check_same_thread=False)
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db

    def close(self) -> None:
        self.db.close()

    def _version(self) -> int:
        return _patiently(self.db, "PRAGMA user_version")[0]

    def _migrate(self) -> None:
        """Bring the schema up to date; safe when several processes open a new library at once."""
        version = self._version()
        if version > SCHEMA_VERSION:
            raise LibraryError(
                f"The library at {self.path} was written by a newer localreason (schema {version}; "
                f"this version knows up to {SCHEMA_VERSION}).",
                hint="Upgrade localreason, or point LOCALREASON_HOME at another folder.",
            )
        if version == SCHEMA_VERSION:
            return
        if self.read_only:
            raise LibraryError(f"The library at {self.path} needs an upgrade, but it is on a read-only disk.",
                               hint="Open it once with write access, or copy the folder somewhere writable.")
        with self.transaction():
            # Another process may have migrated while this one waited for the write lock.
            for number in range(self._version(), SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[number]):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={number + 1}")

    def acquire_writer(self, what: str, notice=None) -> int:
        """Take the library's writer lock (store/lock.py: a lock file beside the database)."""
        return write_lock.acquire(self.path.parent / "write.lock", what, notice)

    @staticmethod
    def release_writer(handle: int) -> None:
        write_lock.release(handle)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (KeyboardInterrupt included).

        Inside another transaction of this store it is a savepoint: its writes are committed or rolled back with
        the outer one's, as PostgreSQL's nested transactions are (an ingest writes a new collection in the same
        transaction as its first document). SQLite errors come out as :class:`LibraryError` naming the cause (a
        full disk, a read-only library, a lock held too long by another process).
        """
        nested = self.db.in_transaction
        try:
            self.db.execute("SAVEPOINT nested" if nested else "BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _storage_error(exc, self.path) from exc
        try:
            yield self.db
            self.db.execute("RELEASE nested" if nested else "COMMIT")
        except BaseException as exc:
            if self.db.in_transaction:  # SQLite has already rolled back after some errors (a full disk)
                for statement in ("ROLLBACK TO nested", "RELEASE nested") if nested else ("ROLLBACK",):
                    self.db.execute(statement)
            if isinstance(exc, sqlite3.OperationalError):
                raise _storage_error(exc, self.path) from exc
            raise

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                        "excluded.value", (key, value))  # fmt: skip

    def generation(self) -> int:
        """A counter bumped by every write that changes vectors; the FAISS cache records the one it saw."""
        self.follow_disk()
        return int(self.get_meta("generation") or 0)

    def bump_generation(self) -> tuple[int, int]:
        """Count one more write (inside its transaction); returns (generation before, after)."""
        before = self.generation()
        self.set_meta("generation", str(before + 1))
        return before, before + 1

    # ------------------------------------------------------------ collections

    def collection_rows(self, id_or_name: str | None = None) -> list[Collection]:
        """Every collection with its counts, by name; or only the one with that id or name."""
        where, args = ("WHERE c.id = ? OR c.name = ?", (id_or_name, id_or_name)) if id_or_name is not None else ("", ())
        rows = self.db.execute(
            f"""SELECT c.id, c.name, c.created_at,
                      (SELECT COUNT(*) FROM documents d WHERE d.collection_id = c.id) AS docs,
                      (SELECT COUNT(*) FROM chunks k JOIN documents d ON k.document_id = d.id
                        WHERE d.collection_id = c.id AND k.level = {_P}) AS chunks
               FROM collections c {where} ORDER BY c.name""", args
        ).fetchall()
        return [Collection(r["id"], r["name"], r["created_at"], r["docs"], r["chunks"]) for r in rows]

    def find_collection(self, id_or_name: str) -> Collection | None:
        """The collection with that id or name (its counts computed for it alone, not for every collection)."""
        return next(iter(self.collection_rows(id_or_name)), None)

    def insert_collection(self, cid: str, name: str) -> None:
        """Create a collection unless one of that name exists (another process may create it at the same time)."""
        with self.transaction():
            self.db.execute("INSERT INTO collections (id, name, created_at) VALUES (?, ?, ?) "
                            "ON CONFLICT(name) DO NOTHING", (cid, name, now()))  # fmt: skip

    # ------------------------------------------------------------ documents

    _DOC_COLUMNS = f"""d.id, d.collection_id, d.title, d.source_path, d.format, d.content_hash, d.size_bytes,
        d.char_count, d.token_count,
        (SELECT COUNT(*) FROM chunks k WHERE k.document_id = d.id AND k.level = {_P}) AS chunk_count,
        d.created_at, d.updated_at, d.recognition"""

    @staticmethod
    def _document(r) -> Document:
        pages = tuple(RecognizedPage(**p) for p in json.loads(r[12])) if r[12] else ()
        return Document(*r[:12], recognized=pages)

    def document_rows(self, collection_id: str | None = None, under: str | None = None) -> list[Document]:
        """The documents (of one collection), or those whose file is ``under`` or lies inside it (a folder)."""
        sql = f"SELECT {self._DOC_COLUMNS} FROM documents d"
        args: tuple = ()
        if collection_id is not None:
            sql += " WHERE d.collection_id = ?"
            args = (collection_id,)
        if under is not None:  # a range of the (collection_id, source_path) index: "dir/" <= path < "dir0"
            folder = under.rstrip("/")
            sql += (" AND" if args else " WHERE") + " (d.source_path = ? OR (d.source_path >= ? AND d.source_path < ?))"
            args += (under, folder + "/", folder + "0")
        return [self._document(r) for r in self.db.execute(sql + " ORDER BY d.source_path", args)]

    def document_row(self, doc_id: str) -> Document | None:
        r = self.db.execute(f"SELECT {self._DOC_COLUMNS} FROM documents d WHERE d.id = ?", (doc_id,)).fetchone()
        return self._document(r) if r else None

    def document_text(self, doc_id: str) -> str | None:
        r = self.db.execute("SELECT text FROM documents WHERE id = ?", (doc_id,)).fetchone()
        return r[0] if r else None

    def hashes_for(self, collection_id: str, chunking: dict[str, str]) -> dict[str, tuple[str, str | None]]:
        """source path -> (document id, content hash) for one collection; the hash is None for a document
        read or cut otherwise than ``chunking`` says for its format (so it is prepared again).
        ``chunking``: format -> chunking key, "" -> the key of every other format."""
        expected, args = _key_of_format(chunking)
        rows = self.db.execute(f"SELECT source_path, id, CASE WHEN chunking IS {expected} THEN content_hash END "
                               "FROM documents WHERE collection_id = ?", (*args, collection_id))  # fmt: skip
        return {r[0]: (r[1], r[2]) for r in rows}

    def documents_chunked_otherwise(self, chunking: dict[str, str]) -> int:
        """How many documents were read or cut otherwise than ``chunking`` says for their format (see
        ``hashes_for``), or in unknown ways."""
        expected, args = _key_of_format(chunking)
        return self.db.execute(f"SELECT count(*) FROM documents WHERE chunking IS NOT {expected}", args).fetchone()[0]

    def old_embeddings(self, doc_id: str) -> dict[str, bytes]:
        """text -> embedding blob of a document's current paragraph chunks (to reuse on update)."""
        rows = self.db.execute(f"SELECT text, embedding FROM chunks WHERE document_id = ? AND level = {_P} "
                               "AND embedding IS NOT NULL", (doc_id,))  # fmt: skip
        return {r[0]: r[1] for r in rows}

    def document_opening(self, doc_id: str, chars: int) -> tuple[str, str, bytes | None]:
        """A document's title, the first ``chars`` characters of its text, and its own vector (to reuse)."""
        r = self.db.execute("SELECT title, substr(text, 1, ?), embedding FROM documents WHERE id = ?",
                            (chars, doc_id)).fetchone()  # fmt: skip
        return (r[0], r[1], r[2]) if r else ("", "", None)

    def replace_document(self, doc: dict, chunks: list[Chunk], vectors: np.ndarray,
                         terms: dict[str, str] | None = None) -> "Write":  # fmt: skip
        """Write one document and its chunks in a single transaction; returns what the vector index must apply."""
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                f"SELECT rowid FROM chunks WHERE document_id = ? AND level = {_P}", (doc["id"],))]  # fmt: skip
            existing = self.db.execute("SELECT created_at FROM documents WHERE id = ?", (doc["id"],)).fetchone()
            self.db.execute("DELETE FROM documents WHERE id = ?", (doc["id"],))
            self.db.execute(
                """INSERT INTO documents (id, collection_id, title, source_path, format, content_hash, size_bytes,
                   mtime, char_count, token_count, text, created_at, updated_at, embedding, chunking, recognition)
                   VALUES (:id, :collection_id, :title, :source_path, :format, :content_hash, :size_bytes, :mtime,
                   :char_count, :token_count, :text, :created_at, :updated_at, :embedding, :chunking, :recognition)""",
                {"embedding": None, "chunking": None, "recognition": None, **doc,
                 "created_at": existing[0] if existing else doc.get("created_at") or doc["updated_at"]},
            )
            added = []
            vi = 0
            for c in chunks:
                blob = None
                if c.level == LEVEL_PARAGRAPH:
                    blob = vectors[vi].tobytes()
                    vi += 1
                cur = self.db.execute(
                    """INSERT INTO chunks (id, document_id, level, parent_id, idx, section_path, token_count, text,
                       start, "end", page_start, page_end, embedding, recognized, terms)
                       VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                    (c.id, c.document_id, c.level, c.parent_id, c.index, json.dumps(list(c.section_path)),
                     c.token_count, c.text, c.start, c.end, c.page_start, c.page_end, blob, int(c.recognized),
                     (terms or {}).get(c.id, "")),
                )  # fmt: skip
                if c.level == LEVEL_PARAGRAPH:
                    added.append(cur.lastrowid)
            generations = self.bump_generation()
        return Write(removed, added, *generations)

    def delete_documents(self, doc_ids: Iterable[str], sources: Iterable[tuple[str, str]] = ()) -> "Write":
        """Delete documents (and their chunks), and the given (collection id, path) sources, in one transaction."""
        ids = list(doc_ids)
        removed: list[int] = []
        with self.transaction():
            for doc_id in ids:
                removed += [r[0] for r in self.db.execute(
                    f"SELECT rowid FROM chunks WHERE document_id = ? AND level = {_P}", (doc_id,))]  # fmt: skip
                self.db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
            self.db.executemany("DELETE FROM sources WHERE collection_id = ? AND path = ?", list(sources))
            generations = self.bump_generation()
        return Write(removed, [], *generations)

    def delete_collection(self, cid: str) -> "Write":
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                "SELECT k.rowid FROM chunks k JOIN documents d ON k.document_id = d.id "
                f"WHERE d.collection_id = ? AND k.level = {_P}", (cid,))]  # fmt: skip
            self.db.execute("DELETE FROM collections WHERE id = ?", (cid,))
            generations = self.bump_generation()
        return Write(removed, [], *generations)

    def reembed(self, chunk_vectors: list[tuple[bytes, int]], document_vectors: list[tuple[bytes, str]],
                model: dict[str, str]) -> None:  # fmt: skip
        """Replace every stored vector and the model's identity in one transaction (reindex)."""
        with self.transaction():
            self.db.executemany("UPDATE chunks SET embedding = ? WHERE rowid = ?", chunk_vectors)
            self.db.executemany("UPDATE documents SET embedding = ? WHERE id = ?", document_vectors)
            for key, value in model.items():
                self.set_meta(key, value)
            self.set_meta("vector_epoch", str(int(self.get_meta("vector_epoch") or 0) + 1))
            self.bump_generation()

    # ------------------------------------------------------------ chunks

    _CHUNK_COLUMNS = 'id, document_id, level, parent_id, idx, section_path, token_count, text, start, "end", ' \
                     "page_start, page_end, recognized"  # fmt: skip

    @staticmethod
    def _chunk(r) -> Chunk:
        return Chunk(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7], r[8], r[9], r[10], r[11],
                     bool(r[12]))  # fmt: skip

    def chunk_row(self, chunk_id: str) -> Chunk | None:
        r = self.db.execute(f"SELECT {self._CHUNK_COLUMNS} FROM chunks WHERE id = ?", (chunk_id,)).fetchone()
        return self._chunk(r) if r else None

    def chunk_rows(self, document_id: str, level: int | None = None) -> list[Chunk]:
        sql = f"SELECT {self._CHUNK_COLUMNS} FROM chunks WHERE document_id = ?"
        args: tuple = (document_id,)
        if level is not None:
            sql += " AND level = ?"
            args += (level,)
        return [self._chunk(r) for r in self.db.execute(sql + " ORDER BY level, start, idx", args)]

    def paragraph_count(self, collection_ids: Sequence[str] | None = None) -> int:
        """How many paragraph chunks there are (in those collections, when given)."""
        if collection_ids is None:
            return self.db.execute(f"SELECT COUNT(*) FROM chunks WHERE level = {_P}").fetchone()[0]
        ids = list(collection_ids)
        return self.db.execute(f"SELECT COUNT(*) FROM chunks k JOIN documents d ON d.id = k.document_id "
                               f"WHERE k.level = {_P} AND d.collection_id IN ({_marks(ids)})", ids).fetchone()[0]

    def paragraph_digest(self) -> tuple[int, ...]:
        """A digest of which paragraph chunks have a vector (what the vector index must hold): see ``rowid_digest``."""
        row = self.db.execute(f"SELECT COUNT(*), COALESCE(MAX(rowid), 0), COALESCE(SUM(rowid), 0), "
                              f"COALESCE(SUM((rowid * {DIGEST_MULTIPLIER}) % {DIGEST_MODULUS}), 0) "
                              f"FROM chunks WHERE level = {_P} AND embedding IS NOT NULL").fetchone()  # fmt: skip
        return tuple(int(v) for v in row)

    def paragraph_count_upto(self, upto: int) -> int:
        """How many paragraph chunks there are, counting stops at ``upto`` (cheap on a large library)."""
        sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM chunks WHERE level = {_P} LIMIT ?)"
        return self.db.execute(sql, (upto,)).fetchone()[0]

    def paragraph_rowids(self) -> np.ndarray:
        """Rowids of every paragraph chunk that has a vector, ascending (what the vector index must hold)."""
        rows = self.db.execute(f"SELECT rowid FROM chunks WHERE level = {_P} AND embedding IS NOT NULL ORDER BY rowid")
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def embeddings_for(self, rowids: Iterable[int], batch: int = 500) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rowids, vectors) of the given paragraph chunks that still exist, in batches."""
        wanted = [int(r) for r in rowids]
        for i in range(0, len(wanted), batch):
            part = wanted[i:i + batch]
            rows = self.db.execute(f"SELECT rowid, embedding FROM chunks WHERE rowid IN ({','.join('?' * len(part))})"
                                   " AND embedding IS NOT NULL", part).fetchall()  # fmt: skip
            if rows:
                yield (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                       np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows]))

    def paragraph_texts(self) -> list[tuple[int, str]]:
        """(rowid, text) of every paragraph chunk, for re-embedding."""
        rows = self.db.execute(f"SELECT rowid, text FROM chunks WHERE level = {_P} ORDER BY rowid")
        return [(r[0], r[1]) for r in rows]

    def document_texts(self) -> list[tuple[str, str, str]]:
        """(id, title, text) of every document, for re-embedding."""
        return [(r[0], r[1], r[2]) for r in self.db.execute("SELECT id, title, text FROM documents")]

    def vector_epoch(self) -> int:
        """Bumped when stored vectors change in place (reindex): a vector cache of another epoch is rebuilt."""
        return int(self.get_meta("vector_epoch") or 0)

    # ------------------------------------------------------------ retrieval (see search/)

    def collection_exists(self, cid: str) -> bool:
        return self.db.execute("SELECT 1 FROM collections WHERE id = ?", (cid,)).fetchone() is not None

    def scope_rowids(self, document_id: str | None = None,
                     collection_ids: Sequence[str] | None = None) -> np.ndarray:  # fmt: skip
        """Rowids of the paragraph chunks of one document, or of some collections."""
        if document_id is not None:
            rows = self.db.execute(f"SELECT rowid FROM chunks WHERE document_id = ? AND level = {_P}", (document_id,))
        else:
            ids = list(collection_ids or ())
            rows = self.db.execute(f"SELECT k.rowid FROM chunks k JOIN documents d ON d.id = k.document_id "
                                   f"WHERE d.collection_id IN ({_marks(ids)}) AND k.level = {_P}", ids)  # fmt: skip
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def fts_ranking(self, query: TextQuery, k: int, document_id: str | None = None,
                    collection_ids: Sequence[str] | None = None) -> list[tuple[int, float]]:  # fmt: skip
        """(rowid, BM25 score, higher is better) of the best ``k`` paragraph chunks for a lexical query, within one
        document or some collections when given."""
        if query.blank:
            return []
        sql = "SELECT f.rowid, f.rank FROM chunks_fts f"
        args: list = [fts5(query)]
        if document_id is not None:
            sql += " JOIN chunks c ON c.rowid = f.rowid WHERE chunks_fts MATCH ? AND c.document_id = ?"
            args.append(document_id)
        elif collection_ids is not None:
            ids = list(collection_ids)
            sql += (" JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON d.id = c.document_id"
                    f" WHERE chunks_fts MATCH ? AND d.collection_id IN ({_marks(ids)})")  # fmt: skip
            args += ids
        else:
            sql += " WHERE chunks_fts MATCH ?"
        sql += " ORDER BY f.rank LIMIT ?"
        args.append(k)
        return [(r[0], -r[1]) for r in self.db.execute(sql, args)]

    def match_count(self, query: TextQuery, upto: int | None = None,
                    collection_ids: Sequence[str] | None = None) -> int:  # fmt: skip
        """How many paragraph chunks match a lexical query (in those collections, when given; counting stops at
        ``upto``, if given)."""
        if query.blank:
            return 0
        inner, args = "SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ?", [fts5(query)]
        if collection_ids is not None:
            ids = list(collection_ids)
            inner = ("SELECT 1 FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid JOIN documents d ON "
                     f"d.id = c.document_id WHERE chunks_fts MATCH ? AND d.collection_id IN ({_marks(ids)})")
            args += ids
        if upto is not None:
            inner += " LIMIT ?"
            args.append(upto)
        return self.db.execute(f"SELECT COUNT(*) FROM ({inner})", args).fetchone()[0]

    def hits(self, rowids: list[int]) -> list[SearchHit]:
        """SearchHits for chunk rowids, in the given order (rowids that no longer exist are left out)."""
        if not rowids:
            return []
        rows = self.db.execute(
            f"""SELECT k.rowid, k.id, k.document_id, d.title, k.level, k.idx, k.parent_id, k.section_path, k.text,
                       k.start, k."end", k.page_start, k.page_end, k.recognized
                FROM chunks k JOIN documents d ON d.id = k.document_id WHERE k.rowid IN ({_marks(rowids)})""",
            rowids,
        ).fetchall()
        by_rowid = {r[0]: SearchHit(r[1], r[2], r[3], r[4], r[5], r[6], tuple(json.loads(r[7])), r[8], r[9], r[10],
                                    r[11], r[12], recognized=bool(r[13])) for r in rows}  # fmt: skip
        return [by_rowid[r] for r in rowids if r in by_rowid]

    def vectors_of(self, rowids: list[int]) -> dict[int, np.ndarray]:
        """Stored vectors of the given chunks, by rowid."""
        return {int(r): v for ids, vecs in self.embeddings_for(rowids) for r, v in zip(ids, vecs)}

    def document_previews(self) -> list[tuple]:
        """(id, collection id, title, source path, first 400 characters, vector blob) of every document."""
        return self.db.execute("SELECT id, collection_id, title, source_path, substr(text, 1, 400), embedding "
                               "FROM documents").fetchall()  # fmt: skip

    def paragraph_vectors(self, document_id: str) -> list[np.ndarray]:
        rows = self.db.execute(f"SELECT embedding FROM chunks WHERE document_id = ? AND level = {_P} "
                               "AND embedding IS NOT NULL", (document_id,))  # fmt: skip
        return [np.frombuffer(r[0], dtype=np.float32) for r in rows]

    def child_count(self, parent_id: str) -> int:
        """How many chunks have ``parent_id`` as their parent (a document's sections, a section's paragraphs)."""
        return self.db.execute("SELECT COUNT(*) FROM chunks WHERE parent_id = ?", (parent_id,)).fetchone()[0]

    def neighbours(self, rowid: int) -> list[int]:
        """The rowids of the paragraph before and after this one in its document (those that exist)."""
        row = self.db.execute("SELECT document_id, start FROM chunks WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            return []
        near = self.db.execute(
            f"""SELECT rowid FROM (SELECT rowid, start FROM chunks WHERE document_id = ? AND level = {_P} AND start < ?
                                   ORDER BY start DESC LIMIT 1)
                UNION ALL
                SELECT rowid FROM (SELECT rowid, start FROM chunks WHERE document_id = ? AND level = {_P} AND start > ?
                                   ORDER BY start LIMIT 1)""",
            (row[0], row[1], row[0], row[1]),
        ).fetchall()
        return [r[0] for r in near]

    # ------------------------------------------------------------ sources

    def add_source(self, cid: str, path: str, include: list[str], exclude: list[str], host: str | None = None) -> None:
        """Remember a folder or file ingested (``host``: the PostgreSQL store's; a local library is one machine's)."""
        with self.transaction():
            self.db.execute(
                """INSERT INTO sources (collection_id, path, include, exclude, added_at) VALUES (?,?,?,?,?)
                   ON CONFLICT(collection_id, path) DO UPDATE SET include = excluded.include,
                   exclude = excluded.exclude""",
                (cid, path, json.dumps(include), json.dumps(exclude), now()),
            )

    def set_source_exclude(self, cid: str, path: str, exclude: list[str]) -> None:
        """Change the exclude globs of a folder ingested before, nothing else of it (Library.remove)."""
        with self.transaction():
            self.db.execute(_SET_EXCLUDE, (json.dumps(exclude), cid, path))

    def sources(self, cid: str | None = None, *, every: bool = False) -> list[dict]:
        """The folders and files ingested before (into collection ``cid``, or any), with their collection's name
        (``every``: the PostgreSQL store's; a local library's are all this machine's)."""
        sql = ("SELECT s.collection_id, s.path, s.include, s.exclude, c.name FROM sources s "
               "JOIN collections c ON c.id = s.collection_id")  # fmt: skip
        args: tuple = ()
        if cid is not None:
            sql += " WHERE s.collection_id = ?"
            args = (cid,)
        return [{"collection_id": r[0], "path": r[1], "include": json.loads(r[2]), "exclude": json.loads(r[3]),
                 "collection": r[4]} for r in self.db.execute(sql + " ORDER BY s.collection_id, s.path", args)]



    def document_ids(self) -> list[str]:
        """Every document's id, in the order they were written."""
        return [r[0] for r in self.db.execute("SELECT id FROM documents ORDER BY created_at, id")]

    def export_document(self, doc_id: str) -> tuple[dict, list[Chunk], np.ndarray, dict[str, str]]:
        """Everything written of one document, as ``replace_document`` takes it back (see ``exported``)."""
        row = self.db.execute(f"SELECT {EXPORT_DOCUMENT} FROM documents WHERE id = ?", (doc_id,)).fetchone()
        rows = self.db.execute(f"SELECT {EXPORT_CHUNK} FROM chunks WHERE document_id = ? ORDER BY rowid",
                               (doc_id,)).fetchall()  # fmt: skip
        return exported(row, rows, int(self.get_meta("embedding_dim") or 0))

    def key_export(self) -> list[tuple[str, str, list[str]]]:
        """(name, digest, collection ids) of every key."""
        return [(r[0], r[1], json.loads(r[2])) for r in self.db.execute("SELECT name, digest, collections FROM api_keys")]

    # ------------------------------------------------------------ API keys (keys.py)

    def insert_key(self, name: str, digest: str, collection_ids: list[str]) -> bool:
        """Record a key; False when a key of that name exists already."""
        with self.transaction():
            cur = self.db.execute("INSERT INTO api_keys (name, digest, collections, created_at) VALUES (?,?,?,?) "
                                  "ON CONFLICT(name) DO NOTHING", (name, digest, json.dumps(collection_ids), now()))
        return cur.rowcount == 1

    def key_rows(self) -> list[tuple[str, list[str], str]]:
        """(name, collection ids, created at) of every key, by name."""
        rows = self.db.execute("SELECT name, collections, created_at FROM api_keys ORDER BY name")
        return [(r[0], json.loads(r[1]), r[2]) for r in rows]

    def clear(self) -> None:
        """Empty the library, keeping its schema (an unfinished copy that `store copy` starts over)."""
        with self.transaction():
            for table in ("chunks", "documents", "sources", "api_keys", "collections"):
                self.db.execute(f"DELETE FROM {table}")
            self.db.execute(f"DELETE FROM meta WHERE key IN ({_marks(MODEL_META)})", MODEL_META)
            self.bump_generation()

    def delete_key(self, name: str) -> bool:
        with self.transaction():
            return self.db.execute("DELETE FROM api_keys WHERE name = ?", (name,)).rowcount == 1

    def key_grant(self, digest: str) -> list[str] | None:
        """The collection ids of the key with this digest; None when no key has it."""
        self.follow_disk()
        row = self.db.execute("SELECT collections FROM api_keys WHERE digest = ?", (digest,)).fetchone()
        return json.loads(row[0]) if row else None

    def has_keys(self) -> bool:
        self.follow_disk()
        return self.db.execute("SELECT 1 FROM api_keys LIMIT 1").fetchone() is not None


MODEL_META = ("embedding_model", "embedding_fingerprint", "embedding_dim")
"""What a library records of the model that made its vectors (ingest/pipeline.model_meta): copied with it
(store/transfer.py), forgotten when it is emptied (``clear``)."""

EXPORT_DOCUMENT = ("id, collection_id, title, source_path, format, content_hash, size_bytes, mtime, char_count, "
                   "token_count, text, created_at, updated_at, embedding, chunking, recognition")  # fmt: skip
EXPORT_CHUNK = ('id, document_id, level, parent_id, idx, section_path, token_count, text, start, "end", page_start, '
                "page_end, recognized, embedding, terms")  # fmt: skip
"""The columns ``export_document`` reads, in both stores (embeddings as float32 bytes)."""


def exported(row, rows, dim: int) -> tuple[dict, list[Chunk], np.ndarray, dict[str, str]]:
    """A document's row and its chunk rows (EXPORT_DOCUMENT, EXPORT_CHUNK, in the order written) as
    ``replace_document`` takes them: (the row as a dict, the chunks, the paragraphs' vectors in that order, the
    index terms by chunk id)."""
    doc = dict(zip((c.strip() for c in EXPORT_DOCUMENT.split(",")), row))
    chunks = [Store._chunk(r[:13]) for r in rows]
    vectors = [np.frombuffer(r[13], dtype=np.float32) for r in rows if r[2] == LEVEL_PARAGRAPH]
    matrix = np.vstack(vectors) if vectors else np.zeros((0, dim), np.float32)
    return doc, chunks, matrix, {r[0]: r[14] for r in rows if r[14]}


def fts5(query: TextQuery) -> str:
    """``query`` as an FTS5 MATCH expression: each term one quoted string (a phrase when it holds several words)."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in query.terms]
    return (" AND " if query.every else " OR ").join(quoted)


def _key_of_format(chunking: dict[str, str]) -> tuple[str, list[str]]:
    """An SQL expression (and its arguments) for the chunking key a document of its ``format`` should have."""
    cases = [(fmt, key) for fmt, key in chunking.items() if fmt]
    if not cases:
        return "?", [chunking[""]]
    return ("CASE format " + " ".join("WHEN ? THEN ?" for _ in cases) + " ELSE ? END",
            [x for case in cases for x in case] + [chunking[""]])  # fmt: skip
