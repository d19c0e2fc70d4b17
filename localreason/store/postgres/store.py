"""PostgreSQL: the library in a database server that many machines share (``store = postgresql://...``).

``PgStore`` answers the same calls as the SQLite ``Store`` (store/db.py), with the same meaning: the library and
search layers do not know which they hold (tests/test_store_contract.py runs one contract against both). Every
write is one transaction, so a search never sees half of one and a writer killed mid-ingest loses only the
document it was writing. Vectors live in the chunks' rows (pgvector), searched through an HNSW index
(store/postgres/vectors.py): nothing is kept beside the database that could lag behind it. Full text is ours
(store/postgres/lexical.py), so BM25 means what FTS5's does.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ...config import HOST_ENV, redacted_url, scrubbed
from ...errors import LibraryError, StoreUnavailable
from ...types import LEVEL_PARAGRAPH, Chunk, Collection, Document, SearchHit
from ..db import (DIGEST_MODULUS, DIGEST_MULTIPLIER, EXPORT_CHUNK, EXPORT_DOCUMENT, MODEL_META, Store, Write, exported,
                  now)  # fmt: skip
from . import lexical
from .connection import Connection, refusals, refused
from .fulltext import FullText
from .schema import MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION
from .writer import WriterLock


def this_host() -> str:
    """The name this machine records its sources under (a shared store's sources are each one machine's): its host
    name, or LOCALREASON_HOST where that is not stable (a container named anew at each start)."""
    return os.environ.get(HOST_ENV, "").strip() or socket.gethostname()

_P = LEVEL_PARAGRAPH
CONNECTION_TIMES = {"connect_timeout": 10, "keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                    "keepalives_count": 3, "tcp_user_timeout": 30_000}  # fmt: skip
"""How long a connection waits for a server that stopped answering (a network cut, not a refusal): 10 s to connect;
an idle or waiting connection is probed after 10 s and given up after three unanswered probes 5 s apart; data sent
and not acknowledged for 30 s ends it. Over a Unix socket only the first applies. No statement timeout: a long
write (an index over a large library) is not a dead server."""
RERANK_POOL = 100
"""A vector search reads at least this many of the HNSW index's nearest and keeps the best by exact score: the
boundary of a short list is where 16-bit distances and the graph's approximation err."""
PGVECTOR_AT_LEAST = (0, 8)
"""halfvec came with pgvector 0.7, the iterative (filtered) HNSW scan with 0.8."""
EF_SEARCH = 1000
"""HNSW candidates a vector search keeps (pgvector's ``hnsw.ef_search``): at least the most a search asks for (300
when progressive search widens its pool), and enough for recall@10 >= 0.95 against exact search at 200,000
passages (bench/speed/postgres.py: 400 gave 0.91-0.92 on its replicated passages, 1,000 gave 0.957 on the 60
questions it was chosen on, **in-sample**; 0.967 on 200 others, held out)."""


def _array(vector) -> np.ndarray:
    """A vector read from the database (pgvector's Vector, or an array) as float32."""
    return np.asarray(vector.to_numpy() if hasattr(vector, "to_numpy") else vector, dtype=np.float32)


def _blob(vector) -> bytes | None:
    return None if vector is None else _array(vector).tobytes()


def _vec(blob: bytes | None):
    return None if blob is None else np.frombuffer(blob, dtype=np.float32)


def _clean(text: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL: each becomes U+FFFD (one character for one, so offsets stay)."""
    return text.replace("\x00", "\ufffd") if text else text


class PgStore(WriterLock, FullText):
    """The PostgreSQL side of a library: the same methods as the SQLite ``Store``. One connection, used from one
    thread at a time (as the SQLite store's)."""

    read_only = False

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = redacted_url(url)
        """What messages name the store by (never its password)."""
        self._writer = None
        """The connection holding the writer lock while this process writes (acquire_writer)."""
        conn = self._connect()
        self._conn = Connection(conn, self._reopen, self.path, self._still_the_writer)
        try:
            self._migrate()
        except LibraryError:
            conn.close()
            raise
        except refusals() as exc:  # a read-only role or standby, and a schema to bring up to date
            conn.close()
            raise refused(self.path, exc) from exc
        except Exception as exc:  # noqa: BLE001 - tables of another program, or a half-made schema
            conn.close()
            raise LibraryError(f"The PostgreSQL database {self.path} cannot hold a localreason library: "
                               f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}.",
                               hint="It probably holds tables of another program: use an empty database (CREATE "
                               "DATABASE ...), or one localreason made.") from exc  # fmt: skip
        self._prepare(conn)

    def _reopen(self):
        conn = self._connect()
        self._prepare(conn)
        return conn

    @staticmethod
    def _prepare(conn) -> None:
        """What every connection of the store sets up: pgvector's types, the HNSW search settings."""
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")

    def clear(self) -> None:
        """Empty the library, keeping its schema (an unfinished copy that `store copy` starts over)."""
        with self.transaction():
            for index in self._other_hnsw(None):  # (the copy's vectors may be of another size)
                self.db.execute(f"DROP INDEX IF EXISTS {index}")
            self.db.execute("TRUNCATE postings, lexemes, chunks, documents, sources, api_keys, collections")
            self.db.execute("UPDATE meta SET value = '0' WHERE key IN ('text_rows', 'text_words')")
            self.db.execute("DELETE FROM meta WHERE key = ANY(%s)", (list(MODEL_META),))
            self.bump_generation()

    def follow_disk(self) -> None:
        """Nothing to follow: every statement reads the server's current rows (see the SQLite store's)."""

    @property
    def db(self) -> Connection:
        """The connection (connection.py): opened again after the server dropped it (a restart, a network cut); a read
        that met the cut runs again on the new one, a write fails saying so."""
        return self._conn

    def _connect(self):
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise LibraryError("The PostgreSQL driver (psycopg) is not installed.",
                               hint='Install it: pip install "psycopg[binary]" pgvector') from exc
        try:
            return psycopg.connect(self.url, autocommit=True, **CONNECTION_TIMES)
        except psycopg.Error as exc:
            reason = scrubbed(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, self.url)
            raise StoreUnavailable(f"The PostgreSQL store {self.path} cannot be reached: {reason}",
                                   hint="Check the server is running and LOCALREASON_STORE (host, port, database, "
                                   "user, password). A command this stopped kept what it had written: run it again "
                                   "once the server answers.") from exc  # fmt: skip

    def close(self) -> None:
        self._conn.close()

    def _version(self) -> int:
        exists = self.db.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        """Bring the schema up to date, one version per transaction, under an advisory lock (servers starting
        together migrate once). A server without pgvector gets a message saying how to add it."""
        if self._version() == SCHEMA_VERSION:
            return
        self._require_pgvector()
        with self.db.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            version = self._version()
            if version > SCHEMA_VERSION:
                raise LibraryError(f"The library at {self.path} was written by a newer localreason (schema {version}; "
                                   f"this version knows up to {SCHEMA_VERSION}).", hint="Upgrade localreason.")
            for number in range(version, SCHEMA_VERSION):
                self.db.execute(MIGRATIONS[number])
                self.db.execute("INSERT INTO meta (key, value) VALUES ('schema_version', %s) ON CONFLICT (key) "
                                "DO UPDATE SET value = excluded.value", (str(number + 1),))  # fmt: skip

    def _require_pgvector(self) -> None:
        row = self.db.execute("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if row is not None and tuple(int(p) for p in re.findall(r"\d+", row[0])[:2]) < PGVECTOR_AT_LEAST:
            raise LibraryError(f"The PostgreSQL server of {self.path} has pgvector {row[0]}; localreason needs "
                               f"{'.'.join(map(str, PGVECTOR_AT_LEAST))} or later (halfvec, filtered HNSW search).",
                               hint="Upgrade the pgvector package on the server, then try again.")  # fmt: skip
        if row is None:
            raise LibraryError(f"The PostgreSQL server of {self.path} has no pgvector extension, which holds the "
                               "library's vectors.",
                               hint="Install pgvector on the server (https://github.com/pgvector/pgvector: the "
                               "postgresql-NN-pgvector package, or a managed service's vector extension), then try "
                               "again.")  # fmt: skip

    @contextmanager
    def transaction(self) -> Iterator:
        with self.db.transaction():  # which checks first that a writer lock held is still held (writer.py)
            yield self.db

    # ------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = "
                        "excluded.value", (key, value))  # fmt: skip

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    def bump_generation(self) -> tuple[int, int]:
        """Count one more write (inside its transaction; the row lock orders concurrent writers)."""
        after = int(self.db.execute("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation' "
                                    "RETURNING value").fetchone()[0])  # fmt: skip
        return after - 1, after

    def vector_epoch(self) -> int:
        return int(self.get_meta("vector_epoch") or 0)

    # ------------------------------------------------------------ collections

    def collection_rows(self, id_or_name: str | None = None) -> list[Collection]:
        where, args = ("WHERE c.id = %s OR c.name = %s", (id_or_name, id_or_name)) if id_or_name is not None \
            else ("", ())  # fmt: skip
        rows = self.db.execute(
            f"""SELECT c.id, c.name, c.created_at,
                      (SELECT COUNT(*) FROM documents d WHERE d.collection_id = c.id),
                      (SELECT COUNT(*) FROM chunks k JOIN documents d ON k.document_id = d.id
                        WHERE d.collection_id = c.id AND k.level = {_P})
               FROM collections c {where} ORDER BY c.name COLLATE "C"
            """, args).fetchall()  # fmt: skip
        return [Collection(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def find_collection(self, id_or_name: str) -> Collection | None:
        return next(iter(self.collection_rows(id_or_name)), None)

    def insert_collection(self, cid: str, name: str) -> None:
        self.db.execute("INSERT INTO collections (id, name, created_at) VALUES (%s, %s, %s) "
                        "ON CONFLICT (name) DO NOTHING", (cid, name, now()))  # fmt: skip

    def collection_exists(self, cid: str) -> bool:
        return self.db.execute("SELECT 1 FROM collections WHERE id = %s", (cid,)).fetchone() is not None

    # ------------------------------------------------------------ documents

    _DOC_COLUMNS = f"""d.id, d.collection_id, d.title, d.source_path, d.format, d.content_hash, d.size_bytes,
        d.char_count, d.token_count,
        (SELECT COUNT(*) FROM chunks k WHERE k.document_id = d.id AND k.level = {_P}) AS chunk_count,
        d.created_at, d.updated_at, d.recognition"""

    def document_rows(self, collection_id: str | None = None, under: str | None = None) -> list[Document]:
        sql, args = f"SELECT {self._DOC_COLUMNS} FROM documents d", []
        clauses = []
        if collection_id is not None:
            clauses.append("d.collection_id = %s")
            args.append(collection_id)
        if under is not None:
            folder = under.rstrip("/")
            clauses.append("(d.source_path = %s OR (d.source_path >= %s AND d.source_path < %s))")
            args += [under, folder + "/", folder + "0"]
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        return [Store._document(r) for r in self.db.execute(sql + ' ORDER BY d.source_path COLLATE "C"', args)]

    def document_row(self, doc_id: str) -> Document | None:
        r = self.db.execute(f"SELECT {self._DOC_COLUMNS} FROM documents d WHERE d.id = %s", (doc_id,)).fetchone()
        return Store._document(r) if r else None

    def document_text(self, doc_id: str) -> str | None:
        r = self.db.execute("SELECT text FROM documents WHERE id = %s", (doc_id,)).fetchone()
        return r[0] if r else None

    def hashes_for(self, collection_id: str, chunking: dict[str, str]) -> dict[str, tuple[str, str | None]]:
        expected, args = _key_of_format(chunking)
        rows = self.db.execute(f"SELECT source_path, id, CASE WHEN chunking IS NOT DISTINCT FROM {expected} "
                               "THEN content_hash END FROM documents WHERE collection_id = %s",
                               (*args, collection_id))  # fmt: skip
        return {r[0]: (r[1], r[2]) for r in rows}

    def documents_chunked_otherwise(self, chunking: dict[str, str]) -> int:
        expected, args = _key_of_format(chunking)
        return self.db.execute(f"SELECT count(*) FROM documents WHERE chunking IS DISTINCT FROM {expected}",
                               args).fetchone()[0]  # fmt: skip

    def old_embeddings(self, doc_id: str) -> dict[str, bytes]:
        rows = self.db.execute(f"SELECT text, embedding FROM chunks WHERE document_id = %s AND level = {_P} "
                               "AND embedding IS NOT NULL", (doc_id,))  # fmt: skip
        return {r[0]: _blob(r[1]) for r in rows}

    def document_opening(self, doc_id: str, chars: int) -> tuple[str, str, bytes | None]:
        r = self.db.execute("SELECT title, substr(text, 1, %s), embedding FROM documents WHERE id = %s",
                            (chars, doc_id)).fetchone()  # fmt: skip
        return (r[0], r[1], _blob(r[2])) if r else ("", "", None)

    def document_previews(self) -> list[tuple]:
        rows = self.db.execute("SELECT id, collection_id, title, source_path, substr(text, 1, 400), embedding "
                               "FROM documents").fetchall()  # fmt: skip
        return [(*r[:5], _blob(r[5])) for r in rows]

    def document_texts(self) -> list[tuple[str, str, str]]:
        return [(r[0], r[1], r[2]) for r in self.db.execute("SELECT id, title, text FROM documents")]

    # ------------------------------------------------------------ writes

    def replace_document(self, doc: dict, chunks: list[Chunk], vectors: np.ndarray,
                         terms: dict[str, str] | None = None) -> Write:  # fmt: skip
        """Write one document and its chunks in a single transaction; returns what a vector index must apply."""
        row = {"embedding": None, "chunking": None, "recognition": None, **doc}
        row["embedding"] = _vec(row["embedding"])
        row["text"], row["title"] = _clean(row["text"]), _clean(row["title"])
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                f"SELECT rowid FROM chunks WHERE document_id = %s AND level = {_P}", (doc["id"],))]  # fmt: skip
            existing = self.db.execute("SELECT created_at FROM documents WHERE id = %s", (doc["id"],)).fetchone()
            self._count_words("c.document_id = %s", [doc["id"]], -1)
            self.db.execute("DELETE FROM documents WHERE id = %s", (doc["id"],))
            row["created_at"] = existing[0] if existing else doc.get("created_at") or doc["updated_at"]
            self.db.execute(
                """INSERT INTO documents (id, collection_id, title, source_path, format, content_hash, size_bytes,
                   mtime, char_count, token_count, text, created_at, updated_at, embedding, chunking, recognition)
                   VALUES (%(id)s, %(collection_id)s, %(title)s, %(source_path)s, %(format)s, %(content_hash)s,
                   %(size_bytes)s, %(mtime)s, %(char_count)s, %(token_count)s, %(text)s, %(created_at)s,
                   %(updated_at)s, %(embedding)s, %(chunking)s, %(recognition)s)""", row)  # fmt: skip
            added = self._insert_chunks(chunks, vectors, terms or {})
            self._count_words("c.document_id = %s", [doc["id"]], 1)
            self._post_words(doc["id"])
            generations = self.bump_generation()
        return Write(removed, added, *generations)

    def _insert_chunks(self, chunks: list[Chunk], vectors: np.ndarray, terms: dict[str, str]) -> list[int]:
        """Insert the chunks (one pipelined batch); the paragraph rowids, in the order of ``vectors``."""
        rows, vi = [], 0
        for c in chunks:
            vec, tsv, words = None, None, 0
            if c.level == _P:
                vec = np.asarray(vectors[vi], dtype=np.float32)
                vi += 1
                tsv, words = lexical.tsvector_literal(c.text, terms.get(c.id, ""))
            rows.append((c.id, c.document_id, c.level, c.parent_id, c.index, json.dumps(list(c.section_path)),
                         c.token_count, _clean(c.text), c.start, c.end, c.page_start, c.page_end, vec,
                         int(c.recognized), _clean(terms.get(c.id, "")), tsv, words))  # fmt: skip
        if not rows:
            return []
        with self.db.cursor() as cur:
            cur.executemany(
                """INSERT INTO chunks (id, document_id, level, parent_id, idx, section_path, token_count, text, start,
                   "end", page_start, page_end, embedding, recognized, terms, tsv, words)
                   VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s) RETURNING rowid, level""",
                rows, returning=True)  # fmt: skip
            out = []
            while True:
                rowid, level = cur.fetchone()
                if level == _P:
                    out.append(rowid)
                if not cur.nextset():
                    break
        return out

    def delete_documents(self, doc_ids: Iterable[str], sources: Iterable[tuple[str, str]] = ()) -> Write:
        ids = list(doc_ids)
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                f"SELECT rowid FROM chunks WHERE document_id = ANY(%s) AND level = {_P}", (ids,))]  # fmt: skip
            self._count_words("c.document_id = ANY(%s)", [ids], -1)
            self.db.execute("DELETE FROM documents WHERE id = ANY(%s)", (ids,))
            with self.db.cursor() as cur:
                cur.executemany("DELETE FROM sources WHERE collection_id = %s AND path = %s", list(sources))
            generations = self.bump_generation()
        return Write(removed, [], *generations)

    def delete_collection(self, cid: str) -> Write:
        with self.transaction():
            removed = [r[0] for r in self.db.execute(
                "SELECT k.rowid FROM chunks k JOIN documents d ON k.document_id = d.id "
                f"WHERE d.collection_id = %s AND k.level = {_P}", (cid,))]  # fmt: skip
            self._count_words("c.document_id IN (SELECT id FROM documents WHERE collection_id = %s)", [cid], -1)
            self.db.execute("DELETE FROM collections WHERE id = %s", (cid,))
            generations = self.bump_generation()
        return Write(removed, [], *generations)

    def reembed(self, chunk_vectors: list[tuple[bytes, int]], document_vectors: list[tuple[bytes, str]],
                model: dict[str, str]) -> None:  # fmt: skip
        old_dim, new_dim = self.get_meta("embedding_dim"), model.get("embedding_dim")
        with self.transaction(), self.db.cursor() as cur:
            if new_dim:  # another model's size: its index (any of another size) is dropped, and rebuilt on use
                for other in self._other_hnsw(int(new_dim)):
                    cur.execute(f"DROP INDEX IF EXISTS {other}")
            cur.executemany("UPDATE chunks SET embedding = %s WHERE rowid = %s",
                            [(_vec(b), r) for b, r in chunk_vectors])  # fmt: skip
            cur.executemany("UPDATE documents SET embedding = %s WHERE id = %s",
                            [(_vec(b), d) for b, d in document_vectors])  # fmt: skip
            for key, value in model.items():
                self.set_meta(key, value)
            self.set_meta("vector_epoch", str(self.vector_epoch() + 1))
            self.bump_generation()

    # ------------------------------------------------------------ chunks

    _CHUNK_COLUMNS = 'id, document_id, level, parent_id, idx, section_path, token_count, text, start, "end", ' \
                     "page_start, page_end, recognized"  # fmt: skip

    def chunk_row(self, chunk_id: str) -> Chunk | None:
        r = self.db.execute(f"SELECT {self._CHUNK_COLUMNS} FROM chunks WHERE id = %s", (chunk_id,)).fetchone()
        return Store._chunk(r) if r else None

    def chunk_rows(self, document_id: str, level: int | None = None) -> list[Chunk]:
        sql, args = f"SELECT {self._CHUNK_COLUMNS} FROM chunks WHERE document_id = %s", [document_id]
        if level is not None:
            sql += " AND level = %s"
            args.append(level)
        return [Store._chunk(r) for r in self.db.execute(sql + " ORDER BY level, start, idx", args)]

    def child_count(self, parent_id: str) -> int:
        return self.db.execute("SELECT COUNT(*) FROM chunks WHERE parent_id = %s", (parent_id,)).fetchone()[0]

    def neighbours(self, rowid: int) -> list[int]:
        row = self.db.execute("SELECT document_id, start FROM chunks WHERE rowid = %s", (rowid,)).fetchone()
        if row is None:
            return []
        near = self.db.execute(
            f"""(SELECT rowid FROM chunks WHERE document_id = %s AND level = {_P} AND start < %s
                 ORDER BY start DESC LIMIT 1)
                UNION ALL
                (SELECT rowid FROM chunks WHERE document_id = %s AND level = {_P} AND start > %s
                 ORDER BY start LIMIT 1)""", (row[0], row[1], row[0], row[1])).fetchall()  # fmt: skip
        return [r[0] for r in near]

    def paragraph_count(self, collection_ids: Sequence[str] | None = None) -> int:
        where, args = self._scope_sql(None, collection_ids)
        return self.db.execute(f"SELECT COUNT(*) FROM chunks c WHERE c.level = {_P}{where}", args).fetchone()[0]

    def paragraph_count_upto(self, upto: int) -> int:
        return self.db.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM chunks WHERE level = {_P} LIMIT %s) s",
                               (upto,)).fetchone()[0]  # fmt: skip

    def paragraph_digest(self) -> tuple[int, ...]:
        row = self.db.execute(f"SELECT COUNT(*), COALESCE(MAX(rowid), 0), COALESCE(SUM(rowid), 0), "
                              f"COALESCE(SUM((rowid * {DIGEST_MULTIPLIER}) % {DIGEST_MODULUS}), 0) "
                              f"FROM chunks WHERE level = {_P} AND embedding IS NOT NULL").fetchone()  # fmt: skip
        return tuple(int(v) for v in row)

    def paragraph_rowids(self) -> np.ndarray:
        rows = self.db.execute(f"SELECT rowid FROM chunks WHERE level = {_P} AND embedding IS NOT NULL ORDER BY rowid")
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    def embeddings_for(self, rowids: Iterable[int], batch: int = 2000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        wanted = [int(r) for r in rowids]
        for i in range(0, len(wanted), batch):
            rows = self.db.execute("SELECT rowid, embedding FROM chunks WHERE rowid = ANY(%s) AND embedding IS NOT "
                                   "NULL ORDER BY rowid", (wanted[i:i + batch],)).fetchall()  # fmt: skip
            if rows:
                yield (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                       np.vstack([_array(r[1]) for r in rows]))

    def vectors_of(self, rowids: list[int]) -> dict[int, np.ndarray]:
        return {int(r): v for ids, vecs in self.embeddings_for(rowids) for r, v in zip(ids, vecs)}

    def paragraph_vectors(self, document_id: str) -> list[np.ndarray]:
        rows = self.db.execute(f"SELECT embedding FROM chunks WHERE document_id = %s AND level = {_P} "
                               "AND embedding IS NOT NULL", (document_id,))  # fmt: skip
        return [_array(r[0]) for r in rows]

    def paragraph_texts(self) -> list[tuple[int, str]]:
        return [(r[0], r[1]) for r in self.db.execute(f"SELECT rowid, text FROM chunks WHERE level = {_P} "
                                                       "ORDER BY rowid")]  # fmt: skip

    def hits(self, rowids: list[int]) -> list[SearchHit]:
        if not rowids:
            return []
        rows = self.db.execute(
            """SELECT k.rowid, k.id, k.document_id, d.title, k.level, k.idx, k.parent_id, k.section_path, k.text,
                      k.start, k."end", k.page_start, k.page_end, k.recognized
               FROM chunks k JOIN documents d ON d.id = k.document_id WHERE k.rowid = ANY(%s)""",
            ([int(r) for r in rowids],)).fetchall()  # fmt: skip
        by_rowid = {r[0]: SearchHit(r[1], r[2], r[3], r[4], r[5], r[6], tuple(json.loads(r[7])), r[8], r[9], r[10],
                                    r[11], r[12], recognized=bool(r[13])) for r in rows}  # fmt: skip
        return [by_rowid[r] for r in rowids if r in by_rowid]

    # ------------------------------------------------------------ retrieval

    def _scope_sql(self, document_id: str | None, collection_ids: Sequence[str] | None) -> tuple[str, list]:
        if document_id is not None:
            return " AND c.document_id = %s", [document_id]
        if collection_ids is not None:
            return (" AND c.document_id IN (SELECT id FROM documents WHERE collection_id = ANY(%s))",
                    [list(collection_ids)])  # fmt: skip
        return "", []

    def scope_rowids(self, document_id: str | None = None,
                     collection_ids: Sequence[str] | None = None) -> np.ndarray:  # fmt: skip
        where, args = self._scope_sql(document_id, collection_ids)
        rows = self.db.execute(f"SELECT c.rowid FROM chunks c WHERE c.level = {_P}{where}", args)
        return np.fromiter((r[0] for r in rows), dtype=np.int64)

    # ------------------------------------------------------------ vectors (store/postgres/vectors.py)

    def ensure_vector_index(self, dim: int) -> None:
        """The HNSW index over the paragraphs' vectors as ``halfvec(dim)``, made once the library's vectors are of
        that size (``embedding_dim``, set with the first vectors written); none before. An index of another size
        would refuse every insert ("expected 384 dimensions"): one made by a process whose model the library does
        not use, or left by a reindex, is dropped."""
        stored = self.get_meta("embedding_dim")
        if stored is None or int(stored) != int(dim):
            return  # (an empty library, or this process's model is not the library's: check_embedding_model says)
        name = f"chunks_hnsw_{int(dim)}"
        if self.db.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0] and not self._other_hnsw(dim):
            return
        with self.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            for other in self._other_hnsw(dim):
                self.db.execute(f"DROP INDEX IF EXISTS {other}")
            self.db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON chunks USING hnsw ((embedding::halfvec({int(dim)})) "
                            f"halfvec_ip_ops) WHERE level = {_P} AND embedding IS NOT NULL")  # fmt: skip

    def _other_hnsw(self, dim: int | None) -> list[str]:
        """The HNSW indexes over the vectors for a size other than ``dim`` (None: every one)."""
        names = [r[0] for r in self.db.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                                               "AND tablename = 'chunks' AND indexname LIKE %s", ("chunks_hnsw_%",))]
        return [n for n in names if dim is None or n != f"chunks_hnsw_{int(dim)}"]

    def vector_count(self) -> int:
        return self.db.execute(f"SELECT COUNT(*) FROM chunks WHERE level = {_P} AND embedding IS NOT NULL").fetchone()[0]

    def nearest(self, query: np.ndarray, k: int, dim: int, document_id: str | None = None,
                collection_ids: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """(exact inner products, rowids) of the ``k`` nearest paragraphs: the HNSW index's best RERANK_POOL (or
        ``k``, if more) by 16-bit distance, ordered by their exact scores (within a scope)."""
        where, args = self._scope_sql(document_id, collection_ids)
        rows = self.db.execute(
            f"""SELECT c.rowid, -(c.embedding <#> %(q)s) FROM chunks c
                WHERE c.level = {_P} AND c.embedding IS NOT NULL{where.replace('%s', '%(scope)s')}
                ORDER BY c.embedding::halfvec({int(dim)}) <#> %(q)s::halfvec({int(dim)}) LIMIT %(k)s""",
            {"q": query, "k": max(int(k), RERANK_POOL), **({"scope": args[0]} if args else {})}).fetchall()  # fmt: skip
        if args and len(rows) < k:  # a small scope in a large library: the filtered walk may end short; read it all
            rows = self.db.execute(
                f"""SELECT c.rowid, -(c.embedding <#> %(q)s) FROM chunks c
                    WHERE c.level = {_P} AND c.embedding IS NOT NULL{where.replace('%s', '%(scope)s')}
                    ORDER BY c.embedding <#> %(q)s LIMIT %(k)s""", {"q": query, "k": int(k), "scope": args[0]}).fetchall()
        return self._ranked(rows, k)

    def nearest_among(self, query: np.ndarray, k: int, rowids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(inner products, rowids) of the ``k`` nearest of the given paragraphs, exactly."""
        rows = self.db.execute("SELECT rowid, -(embedding <#> %s) FROM chunks WHERE rowid = ANY(%s) AND "
                               "embedding IS NOT NULL ORDER BY embedding <#> %s LIMIT %s",
                               (query, rowids, query, int(k))).fetchall()  # fmt: skip
        return self._ranked(rows, k)

    @staticmethod
    def _ranked(rows, k: int) -> tuple[np.ndarray, np.ndarray]:
        rows = sorted(rows, key=lambda r: -r[1])[:k]  # the index's order is by 16-bit distances; the scores are exact
        return (np.asarray([r[1] for r in rows], dtype=np.float32), np.asarray([r[0] for r in rows], dtype=np.int64))

    # ------------------------------------------------------------ sources

    def add_source(self, cid: str, path: str, include: list[str], exclude: list[str], host: str | None = None) -> None:
        """Remember a folder or file ingested, on this machine (``host``: another's, a copy's). One recorded before
        machines were (no host: every machine's) stays every machine's when it is ingested again."""
        self.db.execute(
            """INSERT INTO sources (collection_id, path, include, exclude, added_at, host) VALUES (%s,%s,%s,%s,%s,%s)
               ON CONFLICT (collection_id, path) DO UPDATE SET include = excluded.include, exclude = excluded.exclude,
               host = CASE WHEN sources.host IS NULL THEN NULL ELSE excluded.host END""",
            (cid, path, json.dumps(include), json.dumps(exclude), now(), host or this_host()))  # fmt: skip

    def set_source_exclude(self, cid: str, path: str, exclude: list[str]) -> None:
        """Change the exclude globs of a folder ingested before, nothing else of it: not whose it is (a source
        recorded before machines were stays every machine's)."""
        self.db.execute("UPDATE sources SET exclude = %s WHERE collection_id = %s AND path = %s",
                        (json.dumps(exclude), cid, path))  # fmt: skip

    def sources(self, cid: str | None = None, *, every: bool = False) -> list[dict]:
        """The folders and files this machine ingested (and those recorded before machines were, P004), or
        ``every`` machine's (a copy of the store): another machine's paths are not this one's to sync or prune."""
        sql, args = ("SELECT s.collection_id, s.path, s.include, s.exclude, c.name, s.host FROM sources s "
                     "JOIN collections c ON c.id = s.collection_id WHERE TRUE"), []  # fmt: skip
        if cid is not None:
            sql += " AND s.collection_id = %s"
            args.append(cid)
        if not every:
            sql += " AND (s.host IS NULL OR s.host = %s)"
            args.append(this_host())
        return [{"collection_id": r[0], "path": r[1], "include": json.loads(r[2]), "exclude": json.loads(r[3]),
                 "collection": r[4], "host": r[5]}
                for r in self.db.execute(sql + ' ORDER BY s.collection_id COLLATE "C", s.path COLLATE "C"', args)]  # fmt: skip


    def document_ids(self) -> list[str]:
        """Every document's id, in the order they were written."""
        return [r[0] for r in self.db.execute("SELECT id FROM documents ORDER BY created_at, id")]

    def export_document(self, doc_id: str) -> tuple[dict, list[Chunk], np.ndarray, dict[str, str]]:
        """Everything written of one document, as ``replace_document`` takes it back (store/db.py ``exported``)."""
        row = list(self.db.execute(f"SELECT {EXPORT_DOCUMENT} FROM documents WHERE id = %s", (doc_id,)).fetchone())
        row[13] = _blob(row[13])
        rows = [(*r[:13], _blob(r[13]), r[14]) for r in self.db.execute(
            f"SELECT {EXPORT_CHUNK} FROM chunks WHERE document_id = %s ORDER BY rowid", (doc_id,))]  # fmt: skip
        return exported(row, rows, int(self.get_meta("embedding_dim") or 0))

    def key_export(self) -> list[tuple[str, str, list[str]]]:
        """(name, digest, collection ids) of every key."""
        return [(r[0], r[1], json.loads(r[2])) for r in self.db.execute("SELECT name, digest, collections FROM api_keys")]

    # ------------------------------------------------------------ API keys (keys.py)

    def insert_key(self, name: str, digest: str, collection_ids: list[str]) -> bool:
        cur = self.db.execute("INSERT INTO api_keys (name, digest, collections, created_at) VALUES (%s,%s,%s,%s) "
                              "ON CONFLICT (name) DO NOTHING", (name, digest, json.dumps(collection_ids), now()))
        return cur.rowcount == 1

    def key_rows(self) -> list[tuple[str, list[str], str]]:
        rows = self.db.execute('SELECT name, collections, created_at FROM api_keys ORDER BY name COLLATE "C"')
        return [(r[0], json.loads(r[1]), r[2]) for r in rows]

    def delete_key(self, name: str) -> bool:
        return self.db.execute("DELETE FROM api_keys WHERE name = %s", (name,)).rowcount == 1

    def key_grant(self, digest: str) -> list[str] | None:
        row = self.db.execute("SELECT collections FROM api_keys WHERE digest = %s", (digest,)).fetchone()
        return json.loads(row[0]) if row else None

    def has_keys(self) -> bool:
        return self.db.execute("SELECT 1 FROM api_keys LIMIT 1").fetchone() is not None


def _key_of_format(chunking: dict[str, str]) -> tuple[str, list[str]]:
    """The SQL expression (and arguments) for the chunking key a document of its ``format`` should have."""
    cases = [(fmt, key) for fmt, key in chunking.items() if fmt]
    if not cases:
        return "%s::text", [chunking[""]]
    return ("(CASE format " + " ".join("WHEN %s THEN %s" for _ in cases) + " ELSE %s END)",
            [x for case in cases for x in case] + [chunking[""]])  # fmt: skip
