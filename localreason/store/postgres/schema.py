"""The PostgreSQL store's schema: one SQL script per version, applied in order under an advisory lock, each in one
transaction with its version number (``meta.schema_version``), as the SQLite store's are (store/sqlite_schema.py).

The tables mirror SQLite's. The differences: vectors are pgvector ``vector`` columns (their dimension is the
embedding model's, fixed when the first vectors are written: ``PgStore.ensure_vector_index`` then builds the HNSW
index over them, as ``halfvec`` to halve its memory); full text is a ``tsvector`` of our own index words with its
length (store/postgres/lexical.py) under a GIN index, in place of FTS5; chunk row ids come from an identity column,
never reused, as SQLite's AUTOINCREMENT.
"""

from ...types import LEVEL_PARAGRAPH

_P = LEVEL_PARAGRAPH

P001_INITIAL = f"""
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
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
    size_bytes BIGINT NOT NULL,
    mtime DOUBLE PRECISION NOT NULL,
    char_count INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    embedding vector,
    chunking TEXT,
    recognition TEXT,
    UNIQUE (collection_id, source_path)
);
CREATE TABLE chunks (
    rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    embedding vector,
    recognized INTEGER NOT NULL DEFAULT 0,
    terms TEXT NOT NULL DEFAULT '',
    tsv tsvector,
    words INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX chunks_by_document ON chunks (document_id, level, idx);
CREATE INDEX chunks_by_parent ON chunks (parent_id, idx);
CREATE INDEX chunks_with_vectors ON chunks (rowid) WHERE level = {_P} AND embedding IS NOT NULL;
CREATE INDEX chunks_paragraphs ON chunks (rowid) WHERE level = {_P};
CREATE INDEX chunks_text ON chunks USING gin (tsv) WHERE level = {_P};
CREATE TABLE sources (
    collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    include TEXT NOT NULL DEFAULT '[]',
    exclude TEXT NOT NULL DEFAULT '[]',
    added_at TEXT NOT NULL,
    PRIMARY KEY (collection_id, path)
);
CREATE TABLE api_keys (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    collections TEXT NOT NULL,
    created_at TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('generation', '0') ON CONFLICT (key) DO NOTHING;
"""

# How many passages hold each index word, and the paragraphs' count and total length (store/postgres/fulltext.py):
# kept by every write, read by every lexical query, as FTS5 keeps them in its index.
P002_WORD_COUNTS = f"""
CREATE TABLE lexemes (word TEXT PRIMARY KEY, n BIGINT NOT NULL);
INSERT INTO lexemes (word, n)
    SELECT u.lexeme, count(*) FROM chunks c, unnest(c.tsv) u WHERE c.level = {_P} GROUP BY u.lexeme;
INSERT INTO meta (key, value) SELECT 'text_rows', count(*)::text FROM chunks WHERE level = {_P}
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
INSERT INTO meta (key, value) SELECT 'text_words', COALESCE(sum(words), 0)::text FROM chunks WHERE level = {_P}
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
"""

# The postings of each index word (its passages, how often it occurs in each, their lengths): BM25 of the words
# then reads only the entries of the query's words (store/postgres/fulltext.py), as an FTS5 index is read,
# instead of every matching passage's whole tsvector (4x faster at 200,000 passages, bench.speed.postgres).
P003_POSTINGS = f"""
CREATE TABLE postings (
    word TEXT NOT NULL,
    rowid BIGINT NOT NULL REFERENCES chunks(rowid) ON DELETE CASCADE,
    tf INTEGER NOT NULL,
    words INTEGER NOT NULL,
    PRIMARY KEY (word, rowid)
);
CREATE INDEX postings_by_row ON postings (rowid);
INSERT INTO postings (word, rowid, tf, words)
    SELECT u.lexeme, c.rowid, array_length(u.positions, 1), c.words FROM chunks c, unnest(c.tsv) u
    WHERE c.level = {_P};
"""

# The machine that ingested each folder or file (``store.this_host``): a shared library's sources are followed,
# synced and pruned by the machine whose disk they are on, not by every machine that opens the library (another
# machine's path, absent or other files there, read as "gone" and removed its documents). A source recorded before
# this version has none and is followed by every machine, as it was.
P004_SOURCE_HOST = """
ALTER TABLE sources ADD COLUMN host TEXT;
"""

MIGRATIONS: list[str] = [P001_INITIAL, P002_WORD_COUNTS, P003_POSTINGS, P004_SOURCE_HOST]
SCHEMA_VERSION = len(MIGRATIONS)
MIGRATION_LOCK = 0x6C72_0001
"""The advisory lock taken while the schema is brought up to date (several servers may start at once)."""
WRITER_LOCK = 0x6C72_0002
"""The advisory lock a writer (ingest, sync, remove, reindex) holds: the home's write.lock, for a shared store."""
