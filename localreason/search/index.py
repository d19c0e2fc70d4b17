"""What search reads: the chunk store, the vector index and the embedder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..embed import Embedder
    from ..store.protocol import LibraryStore
    from ..store.vectors import VectorIndex


class Index(Protocol):
    """The three parts every search operation takes as its first argument, and nothing else.

    Each is read when an operation needs it, not before: ``Library.index`` is the library
    itself, whose vector index and embedder are made on first use, so an operation that only
    reads the store (deep_read, deep_expand) loads no model.
    """

    @property
    def store(self) -> LibraryStore:
        """The SQLite or the PostgreSQL store (store/protocol.py)."""
        ...

    @property
    def vectors(self) -> VectorIndex:
        """Kept in step with the store: read it again for each operation rather than holding on to it."""
        ...

    @property
    def embedder(self) -> Embedder: ...
