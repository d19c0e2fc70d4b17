"""The PostgreSQL store's one connection, which outlives a cut.

A server restarted or failed over, a network cut, an administrator ending the session: the connection is gone, and
psycopg only learns it when the next statement fails. What then:

- **a read outside a transaction** (a search, a lookup, a key check) runs once more on a new connection, so the
  first request after a restart is answered, not failed;
- **any other statement** (a write, or anything inside a transaction) is not repeated: whether it took effect is
  unknown for a lone write, and a transaction cut in the middle is rolled back by the server. It fails as a
  LibraryError that says so, and the next statement connects again.

A statement's own failure on a live connection (a lock not available, a bad value) is not a cut: it is raised as
it came.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ...errors import LibraryError

READS = ("select", "with", "show")
"""How the statements that only read begin (the store's own SQL: a WITH here never writes)."""


def _reads(query) -> bool:
    text = query if isinstance(query, str) else str(query)
    return text.lstrip().lower().startswith(READS)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class Connection:
    """``execute``, ``cursor`` and ``transaction`` of a psycopg connection (autocommit), opened again after a cut."""

    def __init__(self, conn, reopen: Callable[[], object], where: str) -> None:
        self._conn = conn
        self._reopen = reopen
        """A new connection, set up as the store sets up every one (a LibraryError when the server is not there)."""
        self.where = where
        """The store as messages name it (its URL without the password)."""

    @property
    def live(self):
        """The connection, opened again if the last statement found it cut."""
        if self._conn.broken or self._conn.closed:
            self._conn = self._reopen()
        return self._conn

    def _cut(self, conn) -> bool:
        return conn.broken or conn.closed

    def execute(self, query, params=None, **kwargs):
        import psycopg

        conn = self.live
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        try:
            return conn.execute(query, params, **kwargs)
        except psycopg.OperationalError as exc:
            if not self._cut(conn):
                raise
            if idle and _reads(query):
                return self.live.execute(query, params, **kwargs)
            raise self._lost(exc) from exc

    def cursor(self, *args, **kwargs):
        return self.live.cursor(*args, **kwargs)

    @contextmanager
    def transaction(self) -> Iterator:
        """The connection's transaction; a cut inside it is a LibraryError saying that nothing of it was kept."""
        import psycopg

        conn = self.live
        try:
            with conn.transaction():
                yield self
        except psycopg.OperationalError as exc:
            if not self._cut(conn):
                raise
            raise self._lost(exc) from exc

    def _lost(self, exc: BaseException) -> LibraryError:
        return LibraryError(f"The connection to the PostgreSQL store {self.where} was cut ({_first_line(exc)}); the "
                            "change was not made, or not wholly: the server keeps none of a write it did not finish.",
                            hint="Run the same command again once the server is back (the next one connects "
                            "again).")  # fmt: skip

    @property
    def info(self):
        return self.live.info

    def close(self) -> None:
        self._conn.close()
