"""The SQLite store's schema: one SQL script per version, applied in order (store/db.py ``Store._migrate``)."""

from ..types import LEVEL_PARAGRAPH

_P = LEVEL_PARAGRAPH
"""The paragraph level, as the SQL below spells it."""

# Each migration is one SQL script, applied in one transaction with the version bump.
M001_INITIAL = f"""
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
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.level = {_P} BEGIN
            INSERT INTO chunks_fts (rowid, text) VALUES (new.rowid, new.text);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.level = {_P} BEGIN
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

# Chunk rowids are never reused (AUTOINCREMENT): a vector index that has not yet caught up with
# another process's writes can then only point at a chunk that still holds that vector, or at
# nothing, never at an unrelated passage. The level index lists the paragraph rowids that the
# vector index is reconciled against without reading the chunks' text.
M003_STABLE_ROWIDS = f"""
CREATE TABLE chunks_v3 (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO chunks_v3 SELECT rowid, id, document_id, level, parent_id, idx, section_path, token_count, text,
    start, "end", page_start, page_end, embedding FROM chunks;
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks;
ALTER TABLE chunks_v3 RENAME TO chunks;
CREATE INDEX chunks_by_document ON chunks (document_id, level, idx);
CREATE INDEX chunks_by_parent ON chunks (parent_id, idx);
CREATE INDEX chunks_by_level ON chunks (level);
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.level = {_P} BEGIN
    INSERT INTO chunks_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.level = {_P} BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
INSERT INTO meta (key, value) VALUES ('generation', '1')
    ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1;
"""

# Identifiers are words: the full-text index keeps "_" inside tokens (``__init__``, ``copy_tree``),
# as Python's \w and the query side (text.query_terms) do; "." and "-" still split, and
# such names are searched as phrases (search.ranking.query_phrases).
M004_IDENTIFIER_TOKENS = f"""
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text, content='chunks', content_rowid='rowid', tokenize="unicode61 remove_diacritics 2 tokenchars '_'"
);
INSERT INTO chunks_fts (rowid, text) SELECT rowid, text FROM chunks WHERE level = {_P};
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.level = {_P} BEGIN
    INSERT INTO chunks_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.level = {_P} BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
"""

# The chunking settings a document was cut with (ingest/pipeline.chunking_key). NULL for documents written
# before: unknown, so the next sync re-chunks them (reusing their vectors wherever a passage is unchanged).
M005_CHUNKING = """
ALTER TABLE documents ADD COLUMN chunking TEXT;
"""

# The paragraph chunks that have a vector, as an index of their own: what the vector index is checked against
# (the rowid digest, the rowid list) is then read without touching the rows, whose text and vectors are most of
# the file (at a million passages the list took 7.4 s without it, 0.58 s with it, the digest 0.20 s;
# bench/speed/scale.py, docs/benchmarks.md).
M006_VECTOR_ROWS = """
CREATE INDEX IF NOT EXISTS chunks_with_vectors ON chunks (level) WHERE embedding IS NOT NULL;
"""

# Text recognition (ingest/ocr.py): which pages of a document were read from images, with the recogniser's
# confidence (a JSON list; NULL for a document read wholly from text), and which chunks hold such text.
M007_RECOGNITION = """
ALTER TABLE documents ADD COLUMN recognition TEXT;
ALTER TABLE chunks ADD COLUMN recognized INTEGER NOT NULL DEFAULT 0;
"""

# The names a passage is also found by (ingest/chunk.chunk_terms: a reST role's full name where the page shows
# less, ``agen.aclose`` for ``aclose()``): a column of their own, indexed beside the text, never shown.
M008_INDEX_TERMS = f"""
ALTER TABLE chunks ADD COLUMN terms TEXT NOT NULL DEFAULT '';
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text, terms, content='chunks', content_rowid='rowid', tokenize="unicode61 remove_diacritics 2 tokenchars '_'"
);
INSERT INTO chunks_fts (rowid, text, terms) SELECT rowid, text, terms FROM chunks WHERE level = {_P};
CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks WHEN new.level = {_P} BEGIN
    INSERT INTO chunks_fts (rowid, text, terms) VALUES (new.rowid, new.text, new.terms);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks WHEN old.level = {_P} BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, terms) VALUES ('delete', old.rowid, old.text, old.terms);
END;
"""

# API keys that see only the collections granted to them (keys.py): a key is kept as its SHA-256 digest only.
M009_KEYS = """
CREATE TABLE IF NOT EXISTS api_keys (
    name TEXT PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    collections TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""

MIGRATIONS: list[str] = [M001_INITIAL, M002_DOCUMENT_VECTORS, M003_STABLE_ROWIDS, M004_IDENTIFIER_TOKENS,
                         M005_CHUNKING, M006_VECTOR_ROWS, M007_RECOGNITION, M008_INDEX_TERMS, M009_KEYS]  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)
