"""The FAISS index of paragraph-chunk vectors, persisted beside the database.

Vectors are unit length, so inner product is cosine similarity. FAISS ids are
the chunks' SQLite rowids. The file is a cache: ``vectors.json`` beside it
records the database generation and the embedding model it was built from, and
any mismatch (an interrupted ingest, another model) rebuilds it from the
vectors stored in SQLite instead of serving stale or mixed results.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .db import Store


class VectorIndex:
    def __init__(self, path: Path, dim: int) -> None:
        import faiss

        self._faiss = faiss
        self.path = path
        self.meta_path = path.with_suffix(".json")
        self.dim = dim
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.dirty = False

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @classmethod
    def open(cls, path: Path, store: Store, dim: int, identity: str) -> "VectorIndex":
        """Load the cached index if it matches the database; otherwise rebuild it from SQLite."""
        vi = cls(path, dim)
        generation = store.generation()
        try:
            meta = json.loads(vi.meta_path.read_text())
            if meta.get("generation") == generation and meta.get("identity") == identity and path.is_file():
                loaded = vi._faiss.read_index(str(path))
                if loaded.d == dim and loaded.ntotal == store.paragraph_count():
                    vi.index = loaded
                    return vi
        except (OSError, ValueError, RuntimeError):
            pass
        vi.rebuild(store)
        vi.save(generation, identity)
        return vi

    def rebuild(self, store: Store) -> None:
        self.index.reset()
        for ids, vecs in store.iter_embeddings():
            if vecs.shape[1] != self.dim:
                from ..errors import LibraryError

                raise LibraryError(
                    f"The library holds {vecs.shape[1]}-dimensional vectors but the embedding model makes "
                    f"{self.dim}-dimensional ones.",
                    hint="Run `localreason reindex` to re-embed the library with the configured model.",
                )
            self.index.add_with_ids(vecs, ids)
        self.dirty = True

    def add(self, ids: list[int], vectors: np.ndarray) -> None:
        if ids:
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))
            self.dirty = True

    def remove(self, ids: list[int]) -> None:
        if ids:
            self.index.remove_ids(np.asarray(ids, dtype=np.int64))
            self.dirty = True

    def search(self, query: np.ndarray, k: int, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rowids) for one query vector, optionally only among ``ids``."""
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        params = None
        if ids is not None:
            params = self._faiss.SearchParameters(sel=self._faiss.IDSelectorBatch(np.asarray(ids, dtype=np.int64)))
        k = max(1, min(k, self.size))
        scores, found = self.index.search(q, k, params=params) if params else self.index.search(q, k)
        keep = found[0] >= 0
        return scores[0][keep], found[0][keep]

    def save(self, generation: int, identity: str) -> None:
        """Write the index atomically (temp file + rename), then its metadata."""
        tmp = self.path.with_suffix(".faiss.tmp")
        self._faiss.write_index(self.index, str(tmp))
        os.replace(tmp, self.path)
        meta_tmp = self.meta_path.with_suffix(".json.tmp")
        meta_tmp.write_text(json.dumps({"generation": generation, "identity": identity, "count": self.size}))
        os.replace(meta_tmp, self.meta_path)
        self.dirty = False
