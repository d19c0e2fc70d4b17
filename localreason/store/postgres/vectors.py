"""The vector search of a PostgreSQL library: pgvector's HNSW index inside the database, nothing beside it.

The FAISS index of a local library is a cache that must be kept in step with SQLite (store/vectors.py). Here the
vectors are columns of the chunks' rows and the index is PostgreSQL's own, updated in the same transaction as the
rows: every server sees every committed write at once, and there is nothing to rebuild, save or catch up.

The HNSW index is built over the vectors cast to ``halfvec`` (16-bit floats: half the memory; ranking by it loses
next to nothing), and the scores returned are exact 32-bit inner products (= cosine: the vectors are unit length),
as FAISS gives them, so the hybrid fusion weighs them as it does locally. ``EF_SEARCH`` candidates are kept per
query; a scoped search filters inside the index walk (pgvector's iterative scan) or, for one document, reads its
few rows exactly.
"""

from __future__ import annotations

import numpy as np

from ...types import LEVEL_PARAGRAPH
from ..db import Write

_P = LEVEL_PARAGRAPH


class PgVectors:
    """The vector-index calls the library and search make (see store/vectors.py's VectorIndex), on PostgreSQL."""

    follows_store = True
    """Always in step with the store: the library never catches it up, saves or rebuilds it."""
    dirty = False
    repaired = False

    def __init__(self, store, dim: int, identity: str) -> None:
        self.store = store
        self.dim = dim
        self.identity = identity
        self.generation = None
        store.ensure_vector_index(dim)

    @property
    def size(self) -> int:
        return self.store.paragraph_count_upto(1)  # only whether there is any: counting all would cost a scan

    @property
    def kind(self) -> str:
        return "hnsw"

    def describe(self) -> dict:
        return {"kind": "hnsw", "exact": False, "vectors": self.store.vector_count()}

    def sync(self, store, force: bool = False) -> bool:
        return False

    def apply(self, write: Write, vectors: np.ndarray | None = None) -> None:
        """Nothing to do: the vectors were written with their rows."""

    def save(self) -> bool:
        return True

    def search(self, query: np.ndarray, k: int, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rowids) among all paragraphs, or among ``ids``."""
        if ids is not None:
            return self.store.nearest_among(np.asarray(query, dtype=np.float32), k, [int(i) for i in ids])
        return self.store.nearest(np.asarray(query, dtype=np.float32), k, self.dim)

    def search_scope(self, query: np.ndarray, k: int, store, document_id: str | None,
                     collection_ids: tuple[str, ...] | None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Top ``k`` (scores, rowids) in all, one document or some collections, filtered inside the database."""
        return self.store.nearest(np.asarray(query, dtype=np.float32), k, self.dim, document_id, collection_ids)
