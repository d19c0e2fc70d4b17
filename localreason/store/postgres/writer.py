"""The writer lock of a library in PostgreSQL (mixed into PgStore): an advisory lock held by a connection of its
own, as the file lock (store/lock.py) is for a local library. The server releases it when that connection ends, so
a writer killed with ``kill -9`` never leaves the library locked; and a writer whose lock connection was cut is
stopped before its next write (``_still_the_writer``), for another writer may be in by then."""

from __future__ import annotations

import os
import socket
import time

from ...errors import StoreUnavailable
from .connection import refusals, refused
from .schema import WRITER_LOCK


class WriterLock:
    """``self._connect()`` opens a connection, ``self.path`` names the store; ``self._writer`` is the lock's connection
    while this process writes."""

    def acquire_writer(self, what: str, notice=None):
        """Take the library's writer lock (store/lock.py's file lock, for a shared store): a PostgreSQL advisory
        lock held by a connection of its own, waiting for another machine's writer to finish. The server releases
        it when that connection ends, so a writer killed with ``kill -9`` never leaves the library locked."""
        import psycopg

        conn = self._connect()
        try:
            if not conn.execute("SELECT pg_try_advisory_lock(%s)", (WRITER_LOCK,)).fetchone()[0]:
                row = conn.execute("SELECT value FROM meta WHERE key = 'writer'").fetchone()
                holder = row[0] if row else "another localreason process"
                if notice is not None:
                    notice(f"Another program is changing this library ({holder}); waiting for it to finish "
                           "(Ctrl-C to stop waiting).")  # fmt: skip
                conn.execute("SELECT pg_advisory_lock(%s)", (WRITER_LOCK,))
            try:
                self._name_the_writer(conn, what)
            except refusals() as exc:
                raise refused(self.path, exc) from exc
        except psycopg.OperationalError as exc:  # cut while waiting (a restart): nothing was written yet
            conn.close()
            raise StoreUnavailable(f"The connection to the PostgreSQL store {self.path} was cut while waiting for its "
                                   f"writer lock ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}); "
                                   "nothing was written.", hint="Run it again once the server is back.") from exc
        except BaseException:
            conn.close()
            raise
        self._writer = conn
        return conn

    @staticmethod
    def _name_the_writer(conn, what: str) -> None:
        """Say in the meta table who holds the lock (a second writer names it while it waits)."""
        conn.execute("INSERT INTO meta (key, value) VALUES ('writer', %s) ON CONFLICT (key) DO UPDATE SET value = "
                     "excluded.value", (f"{what} (process {os.getpid()} on {socket.gethostname()}, since "
                                        f"{time.strftime('%H:%M:%S')})",))  # fmt: skip

    def release_writer(self, handle) -> None:
        """Give the writer lock back (``handle``: the connection ``acquire_writer`` returned). A lock whose connection
        was cut is gone already: the server released it then."""
        import psycopg

        if self._writer is handle:
            self._writer = None
        try:
            handle.execute("SELECT pg_advisory_unlock(%s)", (WRITER_LOCK,))
        except psycopg.Error:
            pass
        finally:
            handle.close()

    def _still_the_writer(self) -> None:
        """Before a write under the writer lock: the lock's own connection is alive, so the lock is still ours. If it
        was cut, the server released the lock and another writer may be in: nothing more is written."""
        import psycopg

        if self._writer is None:
            return
        try:
            self._writer.execute("SELECT 1")
        except psycopg.Error as exc:
            raise StoreUnavailable(f"The writer lock of the PostgreSQL store {self.path} was lost: its connection to the "
                               "server was cut, and another program may be writing now. Nothing more was written.",
                               hint="Run the same command again: it takes the lock again and goes on from what was "
                               "written.") from exc  # fmt: skip
