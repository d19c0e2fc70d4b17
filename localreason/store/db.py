"""SQLite: collections, documents, chunks (with FTS5), ingest sources and library metadata.

SQLite is the source of truth, vectors included (a float32 blob per paragraph
chunk); the FAISS index beside it is a cache that can always be rebuilt from
here. Each document is written in one transaction, so an ingest that fails or
is interrupted leaves the library as it was before that document.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ..errors import LibraryError
from ..types import LEVEL_PARAGRAPH, Chunk, Collection, Document


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------- migrations


# Each migration is one SQL script, applied in one transaction with the version bump.
M001_INITIAL = """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE collections (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );
        CREATE TABLE documents (
            id TEXT PRIMARY KEY,
            collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            title TEXT NOT NULL,
            source_path TEXT NOT NULL,
            format TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            size_bytes INTEGER NOT NULL,
            mtime REAL NOT NULL,
            char_count INTEGER NOT NULL,
            token_count INTEGER NOT NULL,
            text TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (collection_id, source_path)
        );
        CREATE TABLE chunks (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            level INTEGER NOT NULL,
            parent_id TEXT NOT NULL,
            idx INTEGER NOT NULL,
            section_path TEXT NOT NULL,
            token_count INTEGER NOT NULL,
            text TEXT NOT NULL,
            start INTEGER NOT NULL,
            "end" INTEGER NOT NULL,
            page_start INTEGER,
            page_end INTEGER,
            embedding BLOB
        );
        CREATE INDEX chunks_by_document ON chunks (document_id, level, idx);
        CREATE INDEX chunks_by_parent ON chunks (parent_id, idx);
        CREATE VIRTUAL TABLE chunks_fts USING fts5 (
            text, content='chunks', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.level = 2 BEGIN
            INSERT INTO chunks_fts (rowid, text) VALUES (new.rowid, new.text);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.level = 2 BEGIN
            INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        END;
        CREATE TABLE sources (
            collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            include TEXT NOT NULL DEFAULT '[]',
            exclude TEXT NOT NULL DEFAULT '[]',
            added_at TEXT NOT NULL,
            PRIMARY KEY (collection_id, path)
        );
"""

# Documents get a vector of their title and opening text, for find_items.
M002_DOCUMENT_VECTORS = """
ALTER TABLE documents ADD COLUMN embedding BLOB;
"""

MIGRATIONS: list[str] = [M001_INITIAL, M002_DOCUMENT_VECTORS]
SCHEMA_VERSION = len(MIGRATIONS)


class Store:
    """The SQLite side of a library. One connection, used from one thread at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            raise LibraryError(
                f"The library database {path} cannot be opened: {exc}.",
                hint="If the file is damaged, move it aside and ingest your files again.",
            ) from exc
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=10000")
        self._migrate()

    def close(self) -> None:
        self.db.close()

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise LibraryError(
                f"The library at {self.path} was written by a newer localreason (schema {version}; "
                f"this version knows up to {SCHEMA_VERSION}).",
                hint="Upgrade localreason, or point LOCALREASON_HOME at another folder.",
            )
        for number in range(version, SCHEMA_VERSION):
            try:
                self.db.executescript(f"BEGIN;\n{MIGRATIONS[number]}\nPRAGMA user_version={number + 1};\nCOMMIT;")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (KeyboardInterrupt included)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                        "excluded.value", (key, value))  # fmt: skip

    def generation(self) -> int:
        """A counter bumped by every write that changes vectors; the FAISS cache records the one it saw."""
        return int(self.get_meta("generation") or 0)

    def bump_generation(self) -> None:
        self.set_meta("generation", str(self.generation() + 1))

    # ------------------------------------------------------------ collections

    def collection_rows(self) -> list[Collection]:
        rows = self.db.execute(
            """SELECT c.id, c.name, c.created_at,
                      (SELECT COUNT(*) FROM documents d WHERE d.collection_id = c.id) AS docs,
                      (SELECT COUNT(*) FROM chunks k JOIN documents d ON k.document_id = d.id
                        WHERE d.collection_id = c.id AND k.level = 2) AS chunks
               FROM collections c ORDER BY c.name"""
        ).fetchall()
        return [Collection(r["id"], r["name"], r["created_at"], r["docs"], r["chunks"]) for r in rows]

    def find_collection(self, id_or_name: str) -> Collection | None:
        return next((c for c in self.collection_rows() if id_or_name in (c.id, c.name)), None)

    def insert_collection(self, cid: str, name: str) -> None:
        with self.transaction():
            self.db.execute("INSERT INTO collections (id, name, created_at) VALUES (?, ?, ?)", (cid, name, now()))

    # ------------------------------------------------------------ documents

    _DOC_COLUMNS = """d.id, d.collection_id, d.title, d.source_path, d.format, d.content_hash, d.size_bytes,
        d.char_count, d.token_count,
        (SELECT COUNT(*) FROM chunks k WHERE k.document_id = d.id AND k.level = 2) AS chunk_count,
        d.created_at, d.updated_at"""

    def document_rows(self, collection_id: str | None = None) -> list[Document]:
        sql = f"SELECT {self._DOC_COLUMNS} FROM documents d"
        args: tuple = ()
        if collection_id is not None:
            sql += " WHERE d.collection_id = ?"
            args = (collection_id,)
        return [Document(*r) for r in self.db.execute(sql + " ORDER BY d.source_path", args)]

    def document_row(self, doc_id: str) -> Document | None:
        r = self.db.execute(f"SELECT {self._DOC_COLUMNS} FROM documents d WHERE d.id = ?", (doc_id,)).fetchone()
        return Document(*r) if r else None

    def document_text(self, doc_id: str) -> str | None:
        r = self.db.execute("SELECT text FROM documents WHERE id = ?", (doc_id,)).fetchone()
        return r[0] if r else None

    def hashes_for(self, collection_id: str) -> dict[str, tuple[str, str]]:
        """source path -> (document id, content hash) for one collection."""
        rows = self.db.execute("SELECT source_path, id, content_hash FROM documents WHERE collection_id = ?",
                               (collection_id,))  # fmt: skip
        return {r[0]: (r[1], r[2]) for r in rows}

    def old_embeddings(self, doc_id: str) -> dict[str, bytes]:
        """text -> embedding blob of a document's current paragraph chunks (to reuse on update)."""
        rows = self.db.execute("SELECT text, embedding FROM chunks WHERE document_id = ? AND level = 2 "
                               "AND embedding IS NOT NULL", (doc_id,))  # fmt: skip
        return {r[0]: r[1] for r in rows}

    def replace_document(self, doc: dict, chunks: list[Chunk], vectors: np.ndarray) -> tuple[list[int], list[int]]:
        """Write one document and its chunks in a single transaction.

        Returns (rowids removed, rowids added) of paragraph chunks, for the vector index.
        """
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                "SELECT rowid FROM chunks WHERE document_id = ? AND level = 2", (doc["id"],))]  # fmt: skip
            existing = self.db.execute("SELECT created_at FROM documents WHERE id = ?", (doc["id"],)).fetchone()
            self.db.execute("DELETE FROM documents WHERE id = ?", (doc["id"],))
            self.db.execute(
                """INSERT INTO documents (id, collection_id, title, source_path, format, content_hash, size_bytes,
                   mtime, char_count, token_count, text, created_at, updated_at, embedding)
                   VALUES (:id, :collection_id, :title, :source_path, :format, :content_hash, :size_bytes, :mtime,
                   :char_count, :token_count, :text, :created_at, :updated_at, :embedding)""",
                {"embedding": None, **doc, "created_at": existing[0] if existing else doc["updated_at"]},
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
                       start, "end", page_start, page_end, embedding) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                    (c.id, c.document_id, c.level, c.parent_id, c.index, json.dumps(list(c.section_path)),
                     c.token_count, c.text, c.start, c.end, c.page_start, c.page_end, blob),
                )  # fmt: skip
                if c.level == LEVEL_PARAGRAPH:
                    added.append(cur.lastrowid)
            self.bump_generation()
        return removed, added

    def delete_documents(self, doc_ids: Iterable[str]) -> list[int]:
        """Delete documents (and their chunks) in one transaction; return the removed paragraph rowids."""
        ids = list(doc_ids)
        removed: list[int] = []
        with self.transaction():
            for doc_id in ids:
                removed += [r[0] for r in self.db.execute(
                    "SELECT rowid FROM chunks WHERE document_id = ? AND level = 2", (doc_id,))]  # fmt: skip
                self.db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
            self.bump_generation()
        return removed

    def delete_collection(self, cid: str) -> list[int]:
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                "SELECT k.rowid FROM chunks k JOIN documents d ON k.document_id = d.id "
                "WHERE d.collection_id = ? AND k.level = 2", (cid,))]  # fmt: skip
            self.db.execute("DELETE FROM collections WHERE id = ?", (cid,))
            self.bump_generation()
        return removed

    # ------------------------------------------------------------ chunks

    _CHUNK_COLUMNS = 'id, document_id, level, parent_id, idx, section_path, token_count, text, start, "end", ' \
                     "page_start, page_end"  # fmt: skip

    @staticmethod
    def _chunk(r) -> Chunk:
        return Chunk(r[0], r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7], r[8], r[9], r[10], r[11])

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

    def iter_embeddings(self, batch: int = 4096) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rowids, blobs) of every paragraph chunk's stored vector, in batches."""
        cur = self.db.execute("SELECT rowid, embedding FROM chunks WHERE level = 2 AND embedding IS NOT NULL")
        while rows := cur.fetchmany(batch):
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            yield ids, np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])

    def paragraph_count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM chunks WHERE level = 2").fetchone()[0]

    # ------------------------------------------------------------ sources

    def add_source(self, cid: str, path: str, include: list[str], exclude: list[str]) -> None:
        with self.transaction():
            self.db.execute(
                """INSERT INTO sources (collection_id, path, include, exclude, added_at) VALUES (?,?,?,?,?)
                   ON CONFLICT(collection_id, path) DO UPDATE SET include = excluded.include,
                   exclude = excluded.exclude""",
                (cid, path, json.dumps(include), json.dumps(exclude), now()),
            )

    def sources(self, cid: str | None = None) -> list[dict]:
        sql = "SELECT collection_id, path, include, exclude FROM sources"
        args: tuple = ()
        if cid is not None:
            sql += " WHERE collection_id = ?"
            args = (cid,)
        return [{"collection_id": r[0], "path": r[1], "include": json.loads(r[2]), "exclude": json.loads(r[3])}
                for r in self.db.execute(sql + " ORDER BY collection_id, path", args)]  # fmt: skip
