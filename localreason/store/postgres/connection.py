"""The PostgreSQL store's one connection, which outlives a cut.

A server restarted or failed over, a network cut, an administrator ending the session: the connection is gone, and
psycopg only learns it when the next statement fails. What then:

- **a read outside a transaction** (a search, a lookup, a key check) runs once more on a new connection, so the
  first request after a restart is answered, not failed;
- **any other statement** (a write, or anything inside a transaction) is not repeated: a transaction cut before
  its COMMIT is rolled back by the server, but whether a lone write or a COMMIT the cut met took effect is
  unknown. It fails as a LibraryError that says so, and the next statement connects again.

A statement's own failure on a live connection (a lock not available, a bad value) is not a cut: it is raised as
it came, except a refusal for want of privilege (a read-only role, a user who may not create the extension), which
is a LibraryError naming what the user may not do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ...errors import LibraryError, StoreUnavailable

RETRY_AFTER_S = 2.0
"""A connection that could not be opened is not tried again for this long: the threads that waited for that try
get its answer at once, instead of each waiting out a connect timeout of its own, one after another."""

READS = ("select", "with", "show")
"""How the statements that only read begin (the store's own SQL: a WITH here never writes)."""


def _reads(query) -> bool:
    text = query if isinstance(query, str) else str(query)
    return text.lstrip().lower().startswith(READS)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def refusals() -> tuple:
    """What the server says of a statement it will not take from this connection: a role without the privilege, a
    read-only role (default_transaction_read_only), or a read-only standby (psycopg is imported on first use)."""
    import psycopg

    return psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction


def refused(where: str, exc: BaseException) -> LibraryError:
    """A statement refused for want of privilege, as a message saying what to do."""
    return LibraryError(f"The PostgreSQL store {where} refused this: {_first_line(exc)}.",
                        hint="Its user may not do it, or the server takes no writes (a read-only role or standby): "
                        "connect as a role that may read and write the library's tables, to the primary server (a "
                        "read-only role can search through a server, not change the library). The vector "
                        "extension is made once by a role allowed to: CREATE EXTENSION vector; in that database.")


class Connection:
    """``execute``, ``cursor`` and ``transaction`` of a psycopg connection (autocommit), opened again after a cut."""

    def __init__(self, conn, reopen: Callable[[], object], where: str, before_write: Callable[[], None]) -> None:
        self._conn = conn
        self._before_write = before_write
        """Called before each statement that may write, outside a transaction, and before each transaction: the
        store checks that its writer lock is still held (PgStore._still_the_writer)."""
        self._reopen = reopen
        """A new connection, set up as the store sets up every one (a LibraryError when the server is not there)."""
        self.where = where
        """The store as messages name it (its URL without the password)."""
        self._writing = 0
        """Transactions open (``transaction``): a statement inside one is never run again on another connection."""
        self._reopening = threading.Lock()
        self._failed: tuple[float, LibraryError] | None = None
        """When the last try to connect again failed, and why (see RETRY_AFTER_S)."""

    @property
    def live(self):
        """The connection, opened again (once, whichever thread finds it cut first) if it was cut."""
        if self._conn.broken or self._conn.closed:
            with self._reopening:
                if self._conn.broken or self._conn.closed:
                    if self._failed is not None and time.monotonic() - self._failed[0] < RETRY_AFTER_S:
                        raise StoreUnavailable(self._failed[1].message, hint=self._failed[1].hint)
                    try:
                        self._conn = self._reopen()
                    except LibraryError as exc:
                        self._failed = (time.monotonic(), exc)
                        raise
                    self._failed = None
        return self._conn

    def _cut(self, conn) -> bool:
        return conn.broken or conn.closed

    def execute(self, query, params=None, **kwargs):
        import psycopg

        conn = self.live
        read = self._writing == 0 and _reads(query)
        if self._writing == 0 and not read:
            self._before_write()
        try:
            return conn.execute(query, params, **kwargs)
        except refusals() as exc:
            raise refused(self.where, exc) from exc
        except psycopg.OperationalError as exc:
            if not self._cut(conn):
                raise
            if read:
                return self.live.execute(query, params, **kwargs)
            raise self._lost(exc) from exc

    def cursor(self, *args, **kwargs):
        return self.live.cursor(*args, **kwargs)

    @contextmanager
    def transaction(self) -> Iterator:
        """The connection's transaction; a cut inside it is a LibraryError saying what may have been kept."""
        import psycopg

        self._before_write()
        conn = self.live
        self._writing += 1
        try:
            with conn.transaction():
                yield self
                if self._writing == 1:  # before the outermost COMMIT: the lock may have been lost meanwhile (an idle
                    self._before_write()  # lock connection ended inside a long reindex): then roll back, and say so
        except refusals() as exc:
            raise refused(self.where, exc) from exc
        except psycopg.OperationalError as exc:
            if not self._cut(conn):
                raise
            raise self._lost(exc) from exc
        finally:
            self._writing -= 1

    def _lost(self, exc: BaseException) -> LibraryError:
        return StoreUnavailable(f"The connection to the PostgreSQL store {self.where} was cut ({_first_line(exc)}) during "
                            "a change: a transaction cut before it was committed leaves nothing, but whether one "
                            "being committed was kept cannot be known here.",
                            hint="Run the same command again once the server is back (the next one connects "
                            "again).")  # fmt: skip

    @property
    def info(self):
        return self.live.info

    def close(self) -> None:
        self._conn.close()
