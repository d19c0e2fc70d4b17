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
  its generation and the model identity. A loaded file is checked against SQLite
  before it is used, whatever its label says: a digest of the rowids it holds
  (count, largest, sum, hashed sum; ``db.rowid_digest``) against that of the
  paragraph chunks, both cheap, and only if they differ, rowid by rowid.
- An IVF file is memory-mapped rather than read (a million vectors are 1.5 GB: read,
  1.2 s; mapped, a millisecond, and only the lists a query scans are paged in). The
  first change to a mapped index copies its lists into memory.
- In-place changes of stored vectors (reindex) bump the database's vector epoch,
  which is part of the identity: a cache of another epoch or model is not loaded.

Two kinds of index, chosen by size (the ``vector_index`` setting can fix one):
- ``flat``: exact inner product over every vector. Below IVF_FROM paragraph chunks it
  answers in a few milliseconds and needs no training.
- ``ivf``: inverted lists (FAISS IndexIVFFlat): the vectors are clustered around
  ``nlist`` centroids and a query scans the NPROBE nearest lists, so a million passages
  are searched in milliseconds. Approximate: bench/speed/scale.py reports its recall@10
  against exact search. The vectors are kept whole (no compression), so scores are exact
  for what it finds.
The switch happens when the index is saved or opened: a flat index that has grown past
IVF_FROM is clustered, an IVF index that has shrunk below half of it is flattened, and
one that has outgrown its lists (half the lists its size calls for, or four times the
vectors it was trained on) is clustered again.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path

import numpy as np

from .db import Store, Write, rowid_digest

STALE_FILE_SECONDS = 60.0
"""Unpublished or superseded index files older than this are deleted by the next save."""

IVF_FROM = 200_000
"""From this many paragraph chunks ``auto`` uses the IVF index (below half of it, flat again).
Chosen with bench/speed/scale.py: exact search over 200k vectors takes about as long as the rest of
deep_search (docs/benchmarks.md)."""
NPROBE = 128
"""Lists an IVF search scans (of 1,024 at a million vectors): chosen with bench/speed/scale.py's sweep, the
fewest giving recall@10 >= 0.98 against exact search with a margin (96: 0.980, 128: 0.989 at 1M on the sweep's
questions; 0.986 on others it was not chosen on)."""
SCAN_ALL_BELOW = 20_000
"""An IVF index smaller than this is searched in every list (as fast as exact search at that size, and exact)."""
TRAIN_POINTS_PER_LIST = 64
"""Vectors sampled per list to place the centroids (training time grows with it)."""


def ivf_lists(count: int) -> int:
    """Lists for an IVF index of ``count`` vectors: a power of two near sqrt(count), 256 to 8192."""
    target = max(256, min(8192, int(np.sqrt(max(count, 1)))))
    return 1 << int(round(np.log2(target)))


def lists_probed(count: int, nlist: int) -> int:
    """How many of an IVF index's lists a search scans: all of them in a small index, else NPROBE."""
    return nlist if count < SCAN_ALL_BELOW else min(NPROBE, nlist)


def wanted_kind(setting: str, count: int, current: str | None = None) -> str:
    """The index kind for ``count`` vectors: the setting, or by size with hysteresis around IVF_FROM."""
    if setting in ("flat", "ivf"):
        return setting
    if current == "ivf" and count >= IVF_FROM // 2:
        return "ivf"
    return "ivf" if count >= IVF_FROM else "flat"


class VectorIndex:
    follows_store = False
    """A cache of the vectors SQLite holds, brought in step by :meth:`sync` (a PostgreSQL store's index is not)."""

    def __init__(self, path: Path, dim: int, identity: str = "", kind_setting: str = "auto") -> None:
        import faiss

        self._faiss = faiss
        self.kind_setting = kind_setting
        """``auto``, ``flat`` or ``ivf`` (the ``vector_index`` setting)."""
        self.path = path
        """``<home>/vectors.faiss``: the name the index files and ``vectors.json`` are derived from."""
        self.meta_path = path.with_suffix(".json")
        self.dim = dim
        self.identity = identity
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.generation: int | None = None
        """The database generation whose paragraph chunks this index holds exactly (None: unknown)."""
        self.dirty = False
        self.mapped = False
        """The lists are memory-mapped from the published file (read-only until :meth:`_writable` copies them)."""
        self.trained = 0
        """How many vectors an IVF index's centroids were placed with (it is clustered again at 4x as many)."""
        self.repaired = False
        """Set by :meth:`open` when the saved index was missing, damaged or out of step (worth saving again)."""
        self.lock = threading.RLock()
        """Held while the index is searched or changed: FAISS does not allow both at once."""

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    @property
    def kind(self) -> str:
        return "ivf" if self._ivf() is not None else "flat"

    def _ivf(self):
        """The IndexIVF inside, or None for a flat index."""
        return self._faiss.try_extract_index_ivf(self.index)

    def describe(self) -> dict:
        """What the index is, for people: kind, vectors, and for IVF its lists and how many a search scans."""
        ivf = self._ivf()
        if ivf is None:
            return {"kind": "flat", "exact": True, "vectors": self.size}
        return {"kind": "ivf", "exact": False, "vectors": self.size, "lists": int(ivf.nlist),
                "probe": lists_probed(self.size, int(ivf.nlist))}

    # ------------------------------------------------------------ opening and keeping in step

    @classmethod
    def open(cls, path: Path, store: Store, dim: int, identity: str, kind_setting: str = "auto") -> "VectorIndex":
        """The saved index if it is usable, reconciled with SQLite; else one built from SQLite.

        An index of the wrong kind for its size (or for the setting) is converted, and then worth saving.
        """
        vi = cls(path, dim, identity, kind_setting)
        loaded = vi._load()
        if loaded is not None:
            vi.index = loaded
        changed = vi.sync(store, force=True)
        converted = vi.fit_kind()
        vi.repaired = loaded is None or changed or converted
        return vi

    # ------------------------------------------------------------ the kind of index

    def fit_kind(self) -> bool:
        """Convert to the kind this size calls for (cluster, re-cluster or flatten); True if it changed."""
        with self.lock:
            kind, ivf = self.kind, self._ivf()
            want = wanted_kind(self.kind_setting, self.size, kind)
            overgrown = ivf is not None and want == "ivf" and (
                ivf.nlist * 2 <= ivf_lists(self.size)
                or (self.size >= SCAN_ALL_BELOW and self.size >= 4 * max(self.trained, 1)))
            if want == kind and not overgrown:
                return False
            ids, vecs = self.contents()
            self.index = None  # the old index goes before the new one is built: twice its size at most, not three
            try:
                self.index = self._build(want, vecs)
            except Exception:
                self.index = self._build("flat", vecs)  # never left without an index (it is only a cache)
                self.index.add_with_ids(vecs, ids)
                raise
            self.trained = len(vecs)
            if len(ids):
                self.index.add_with_ids(vecs, ids)
            self.mapped = False
            self.dirty = True
            return True

    def _writable(self) -> None:
        """Copy a memory-mapped index's lists into memory, so that it can change (about 1 s per million)."""
        if not self.mapped:
            return
        faiss = self._faiss
        ivf = self._ivf()
        old = ivf.invlists
        lists = faiss.ArrayInvertedLists(ivf.nlist, old.code_size)
        for lst in range(ivf.nlist):
            size = old.list_size(lst)
            if size:
                lists.add_entries(lst, size, old.get_ids(lst), old.get_codes(lst))
        ivf.replace_invlists(lists, True)
        lists.this.disown()  # the index owns the new lists now
        self.mapped = False

    def _build(self, kind: str, sample: np.ndarray):
        """An empty index of ``kind``; an IVF one is trained on (a sample of) ``sample``."""
        faiss = self._faiss
        if kind == "flat":
            return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        nlist = ivf_lists(len(sample))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(self.dim), self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.max_points_per_centroid = TRAIN_POINTS_PER_LIST
        index.cp.niter = 10
        index.cp.seed = 1234
        index.cp.min_points_per_centroid = 1  # a small library (tests, a forced setting) trains without complaint
        if len(sample) < nlist:  # too few to cluster (a forced ivf on a tiny library): pad with random directions
            rng = np.random.default_rng(1234)
            extra = rng.standard_normal((nlist - len(sample), self.dim)).astype(np.float32)
            sample = np.vstack([sample, extra / np.linalg.norm(extra, axis=1, keepdims=True)])
        index.train(np.ascontiguousarray(sample, dtype=np.float32))
        return index

    def contents(self) -> tuple[np.ndarray, np.ndarray]:
        """(rowids, vectors) of everything the index holds, in no particular order."""
        faiss = self._faiss
        with self.lock:
            ivf = self._ivf()
            if ivf is None:
                n = self.size
                if n == 0:
                    return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim), dtype=np.float32)
                flat = faiss.downcast_index(self.index.index)
                vecs = faiss.rev_swig_ptr(flat.get_xb(), n * self.dim).reshape(n, self.dim).copy()
                return faiss.vector_to_array(self.index.id_map).astype(np.int64), vecs
            ids, vecs = [], []
            lists = ivf.invlists
            for lst in range(ivf.nlist):
                size = lists.list_size(lst)
                if size:
                    ids.append(faiss.rev_swig_ptr(lists.get_ids(lst), size).copy())
                    codes = faiss.rev_swig_ptr(lists.get_codes(lst), size * lists.code_size).copy()
                    vecs.append(codes.view(np.float32).reshape(size, self.dim))
            if not ids:
                return np.zeros(0, dtype=np.int64), np.zeros((0, self.dim), dtype=np.float32)
            return np.concatenate(ids).astype(np.int64), np.ascontiguousarray(np.vstack(vecs))

    @staticmethod
    def published(path: Path) -> dict | None:
        """What the published index says about itself (kind, count, lists), without loading it."""
        try:
            meta = json.loads(path.with_suffix(".json").read_text())
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) else None

    def _load(self):
        """The published index file, or None if there is none usable (missing, damaged, other model)."""
        for _ in range(2):  # a writer may replace the file between reading the pointer and opening it
            try:
                meta = json.loads(self.meta_path.read_text())
                if meta.get("identity") != self.identity or not isinstance(meta.get("file"), str):
                    return None
                file = self.path.parent / Path(meta["file"]).name
                loaded, mapped = self._read(file, meta.get("kind") == "ivf")
                if loaded.d != self.dim:
                    return None
                self.mapped = mapped
                self.trained = int(meta.get("trained", meta.get("count", 0)))
                return loaded
            except FileNotFoundError:
                continue  # superseded between reading the pointer and opening the file: read the pointer again
            except (OSError, ValueError, RuntimeError):
                return None
        return None

    def _read(self, file: Path, mapped: bool):
        """(index, whether memory-mapped) from ``file``; FileNotFoundError if it is gone (FAISS says RuntimeError)."""
        faiss = self._faiss
        try:
            loaded = faiss.read_index(str(file), faiss.IO_FLAG_MMAP if mapped else 0)
        except RuntimeError:
            if not file.exists():
                raise FileNotFoundError(file) from None
            if not mapped:
                raise
            loaded, mapped = faiss.read_index(str(file)), False  # a file system that cannot map: read it
        if mapped and faiss.try_extract_index_ivf(loaded) is None:
            loaded, mapped = faiss.read_index(str(file)), False  # labelled ivf but is not: read it whole
        return loaded, mapped

    def sync(self, store: Store, force: bool = False) -> bool:
        """Bring the index in step with the database if another writer moved it; True if anything changed."""
        with self.lock:
            generation = store.generation()  # read first: a write racing with the reads below is caught next time
            if generation == self.generation and not force:
                return False
            held = self.ids()
            if store.paragraph_digest() == rowid_digest(held):  # the same chunks (the usual case)
                self.generation = generation
                return False
            wanted = store.paragraph_rowids()
            gone = np.setdiff1d(held, wanted, assume_unique=True)
            new = np.setdiff1d(wanted, held, assume_unique=True)
            self.remove(gone.tolist())
            if gone.size or new.size:
                self._writable()
            for ids, vecs in store.embeddings_for(new.tolist()):
                self._check_dim(vecs)
                self.index.add_with_ids(np.ascontiguousarray(vecs, dtype=np.float32), ids)
                self.dirty = True
            self.generation = generation
            return bool(gone.size or new.size)

    def ids(self) -> np.ndarray:
        """The rowids this index holds, ascending."""
        faiss = self._faiss
        with self.lock:
            if self.size == 0:
                return np.zeros(0, dtype=np.int64)
            ivf = self._ivf()
            if ivf is None:
                return np.sort(faiss.vector_to_array(self.index.id_map).astype(np.int64))
            lists = ivf.invlists
            parts = [faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i)).copy()
                     for i in range(ivf.nlist) if lists.list_size(i)]  # fmt: skip
            return np.sort(np.concatenate(parts).astype(np.int64))

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
                self._writable()
                self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                        np.asarray(write.added, dtype=np.int64))  # fmt: skip
                self.dirty = True
            if self.generation == write.before:
                self.generation = write.after

    def remove(self, ids: list[int]) -> None:
        if ids:
            with self.lock:
                self._writable()
                self.index.remove_ids(np.asarray(ids, dtype=np.int64))
                self.dirty = True

    # ------------------------------------------------------------ searching

    def search(self, query: np.ndarray, k: int, ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top ``k`` (scores, rowids) for one query vector, optionally only among ``ids``."""
        faiss = self._faiss
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        sel = faiss.IDSelectorBatch(np.asarray(ids, dtype=np.int64)) if ids is not None else None
        with self.lock:
            k = max(1, min(k, self.size))
            if self._ivf() is not None:
                params = faiss.SearchParametersIVF()
                if sel is not None:
                    params.sel = sel
                nlist = self._ivf().nlist
                params.nprobe = lists_probed(self.size, nlist)
                if ids is not None and len(ids) <= k * 20:
                    params.nprobe = nlist  # a small scope: every list, so nothing in it is missed
                scores, found = self.index.search(q, k, params=params)
                if ids is not None and params.nprobe < nlist and int((found[0] >= 0).sum()) < min(k, len(ids)):
                    params.nprobe = nlist  # the scope's passages lie away from the query: look in every list
                    scores, found = self.index.search(q, k, params=params)
            elif sel is not None:
                scores, found = self.index.search(q, k, params=faiss.SearchParameters(sel=sel))
            else:
                scores, found = self.index.search(q, k)
        keep = found[0] >= 0
        return scores[0][keep], found[0][keep]

    def search_scope(self, query: np.ndarray, k: int, store: Store, document_id: str | None,
                     collection_ids: tuple[str, ...] | None) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
        """Top ``k`` (scores, rowids) in all, one document or some collections (None, None: all)."""
        ids = None
        if document_id is not None or collection_ids is not None:
            ids = store.scope_rowids(document_id, collection_ids)
            if ids.size == 0:
                return np.zeros(0, np.float32), np.zeros(0, np.int64)
        return self.search(query, k, ids=ids)

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
            self.fit_kind()
            self._writable()  # a mapped index would be written as a pointer to its file, not as its vectors
            name = f"vectors-{self.generation}-{os.getpid()}-{secrets.token_hex(4)}.faiss"
            target = self.path.parent / name
            meta = {"file": name, "generation": self.generation, "identity": self.identity, "count": self.size,
                    **{k: v for k, v in self.describe().items() if k in ("kind", "lists")},
                    **({"trained": self.trained} if self.kind == "ivf" else {})}
            try:
                self._faiss.write_index(self.index, str(target))
                meta_tmp = self.meta_path.with_name(f".{name}.json.tmp")
                meta_tmp.write_text(json.dumps(meta))
                previous = self.published(self.path)
                os.replace(meta_tmp, self.meta_path)
                if previous and isinstance(previous.get("file"), str):  # its grace period starts now
                    try:
                        os.utime(self.path.parent / Path(previous["file"]).name)
                    except OSError:
                        pass
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
