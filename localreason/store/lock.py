"""One writer at a time across processes: an advisory lock file in the library folder.

Ingest, sync, remove and reindex hold it for their whole run, so two of them never
interleave their documents; readers (search, ask, the TUI, the servers) never take
it. The operating system releases it when its process ends, ``kill -9`` included,
so a crashed writer never leaves the library locked.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import LibraryError


def acquire(path: Path, what: str, notice: Callable[[str], None] | None = None) -> int:
    """Take the writer lock (waiting for another process's to end) and return its descriptor."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise LibraryError(f"The library at {path.parent} is read-only ({exc.strerror}).",
                               hint="Searching and asking work; adding or removing documents needs write access.") from exc
        raise LibraryError(f"The library folder {path.parent} cannot be written: {exc.strerror or exc}.") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if notice is not None:
            notice(f"Another program is changing this library ({_holder(fd)}); waiting for it to finish "
                   "(Ctrl-C to stop waiting).")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
    _describe(fd, what)
    return fd


def release(fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _describe(fd: int, what: str) -> None:
    """Write who holds the lock, for the message another writer shows while it waits."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{what} (process {os.getpid()}, since {time.strftime('%H:%M:%S')})".encode(), 0)
    except OSError:  # a full disk: the description is a courtesy
        pass


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "another localreason process"
