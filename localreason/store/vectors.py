"""The FAISS index of paragraph-chunk vectors: a cache of the vectors SQLite holds.

Vectors are unit length, so inner product is cosine similarity. FAISS ids are the
chunks' SQLite rowids, which are never reused, so an index that lags behind the
database can miss new chunks or name deleted ones (their hits are dropped when the
rows are read), but never points at an unrelated passage.

Keeping it in step, across threads and processes:
- The index records the database ``generation`` whose chunk set it holds. Before
  each use (:meth:`sync`) it compares that with the database's; if another
  process wrote in between, it reconciles by rowid: vectors of deleted chunks
  out, vectors of new chunks read from SQLite and added. Which chunks, not how
  many, decides.
- A write of this process is applied in memory and moves the recorded generation
  only when the write started from it; otherwise the next sync reconciles.
- Saved to disk as ``vectors-<token>.faiss`` under a name no other writer uses,
  then published by atomically replacing ``vectors.json``, which names the file,
  its generation and the model identity. A loaded file is reconciled with SQLite
  before it is used, whatever its label says.
- In-place changes of stored vectors (reindex) bump the database's vector epoch,
  which is part of the identity: a cache of another epoch or model is not loaded.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path

import numpy as np

from .db import Store, Write

STALE_FILE_SECONDS = 60.0
"""Unpublished or superseded index files older than this are deleted by the next save."""


class VectorIndex:
    def __init__(self, path: Path, dim: int, identity: str = "") -> None:
        import faiss

        self._faiss = faiss
        self.path = path
        """``<home>/vectors.faiss``: the name the index files and ``vectors.json`` are derived from."""
        self.meta_path = path.with_suffix(".json")
        self.dim = dim
        self.identity = identity
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.generation: int | None = None
        """The database generation whose paragraph chunks this index holds exactly (None: unknown)."""
        self.dirty = False
        self.repaired = False
        """Set by :meth:`open` when the saved index was missing, damaged or out of step (worth saving again)."""
        self.lock = threading.RLock()
        """Held while the index is searched or changed: FAISS does not allow both at once."""

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    # ------------------------------------------------------------ opening and keeping in step

    @classmethod
    def open(cls, path: Path, store: Store, dim: int, identity: str) -> "VectorIndex":
        """The saved index if it is usable, reconciled with SQLite; else one built from SQLite."""
        vi = cls(path, dim, identity)
        loaded = vi._load()
        if loaded is not None:
            vi.index = loaded
        changed = vi.sync(store, force=True)
        vi.repaired = loaded is None or changed
        return vi

    def _load(self):
        """The published index file, or None if there is none usable (missing, damaged, other model)."""
        for _ in range(2):  # a writer may replace the file between reading the pointer and opening it
            try:
                meta = json.loads(self.meta_path.read_text())
                if meta.get("identity") != self.identity or not isinstance(meta.get("file"), str):
                    return None
                loaded = self._faiss.read_index(str(self.path.parent / Path(meta["file"]).name))
                return loaded if loaded.d == self.dim else None
            except FileNotFoundError:
                continue
            except (OSError, ValueError, RuntimeError):
                return None
        return None

    def sync(self, store: Store, force: bool = False) -> bool:
        """Bring the index in step with the database if another writer moved it; True if anything changed."""
        with self.lock:
            generation = store.generation()  # read first: a write racing with the reads below is caught next time
            if generation == self.generation and not force:
                return False
            wanted = store.paragraph_rowids()
            held = self.ids()
            gone = np.setdiff1d(held, wanted, assume_unique=True)
            new = np.setdiff1d(wanted, held, assume_unique=True)
            self.remove(gone.tolist())
            for ids, vecs in store.embeddings_for(new.tolist()):
                self._check_dim(vecs)
                self.index.add_with_ids(np.ascontiguousarray(vecs, dtype=np.float32), ids)
                self.dirty = True
            self.generation = generation
            return bool(gone.size or new.size)

    def ids(self) -> np.ndarray:
        """The rowids this index holds, ascending."""
        with self.lock:
            if self.size == 0:
                return np.zeros(0, dtype=np.int64)
            return np.sort(self._faiss.vector_to_array(self.index.id_map).astype(np.int64))

    def _check_dim(self, vecs: np.ndarray) -> None:
        if vecs.shape[1] != self.dim:
            from ..errors import LibraryError

            raise LibraryError(
                f"The library holds {vecs.shape[1]}-dimensional vectors but the embedding model makes "
                f"{self.dim}-dimensional ones.",
                hint="Run `localreason reindex` to re-embed the library with the configured model.",
            )

    def apply(self, write: Write, vectors: np.ndarray | None = None) -> None:
        """Apply a committed write of this process; ``vectors`` are the added chunks' vectors, in order."""
        with self.lock:
            self.remove(write.removed)
            if write.added:
                self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                        np.asarray(write.added, dtype=np.int64))  # fmt: skip
                self.dirty = True
            if self.generation == write.before:
                self.generation = write.after

    def remove(self, ids: list[int]) -> None:
        if ids:
            with self.lock:
                self.index.remove_ids(np.asarray(ids, dtype=np.int64))
                self.dirty = True

    # ------------------------------------------------------------ searching

    def search(self, query: np.ndarray, k: int, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rowids) for one query vector, optionally only among ``ids``."""
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        params = None
        if ids is not None:
            params = self._faiss.SearchParameters(sel=self._faiss.IDSelectorBatch(np.asarray(ids, dtype=np.int64)))
        with self.lock:
            k = max(1, min(k, self.size))
            scores, found = self.index.search(q, k, params=params) if params else self.index.search(q, k)
        keep = found[0] >= 0
        return scores[0][keep], found[0][keep]

    # ------------------------------------------------------------ saving

    def save(self) -> bool:
        """Publish the index for other processes; False (and nothing changed) if the disk refused it.

        Only an index whose generation is known is published: it holds exactly that
        generation's chunks. A full or read-only disk costs the next process a
        rebuild from SQLite, never data.
        """
        with self.lock:
            if self.generation is None:
                return False
            name = f"vectors-{self.generation}-{os.getpid()}-{secrets.token_hex(4)}.faiss"
            target = self.path.parent / name
            meta = {"file": name, "generation": self.generation, "identity": self.identity, "count": self.size}
            try:
                self._faiss.write_index(self.index, str(target))
                meta_tmp = self.meta_path.with_name(f".{name}.json.tmp")
                meta_tmp.write_text(json.dumps(meta))
                os.replace(meta_tmp, self.meta_path)
            except (OSError, RuntimeError):
                for leftover in (target, self.meta_path.with_name(f".{name}.json.tmp")):
                    leftover.unlink(missing_ok=True)
                return False
            self.dirty = False
        self._clean(keep=name)
        return True

    def _clean(self, keep: str) -> None:
        """Delete index files nobody publishes any more (another process may still be reading one: a grace period)."""
        cutoff = time.time() - STALE_FILE_SECONDS
        legacy = self.path  # the single-file cache of older versions
        for f in [legacy, *self.path.parent.glob("vectors-*.faiss"), *self.path.parent.glob(".vectors-*.json.tmp")]:
            try:
                if f.name != keep and (f == legacy or f.stat().st_mtime < cutoff):
                    f.unlink()
            except OSError:
                pass
