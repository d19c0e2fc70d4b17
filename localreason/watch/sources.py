"""Where changes come from: one watchfiles (inotify) watch on its own thread, or re-checking the folders when
inotify cannot follow them (its limit reached, or watch_mode = "poll"), and the slow look beside inotify."""

from __future__ import annotations

import ctypes
import errno
import os
import queue
import stat
import sys
import threading
import time

from .timing import DEBOUNCE_MS, POLL_SHARE, STEP_MS


LIMIT_HINT = ("To raise the limit: sudo sysctl fs.inotify.max_user_watches=524288 (and the same line, "
              "fs.inotify.max_user_watches=524288, in /etc/sysctl.d/90-inotify.conf to keep it after a restart).")



# ---------------------------------------------------------------- the inotify limit


def limit_reached(exc: BaseException) -> bool:
    """Whether watchfiles failed because the system's inotify limit is reached: too many watches (notify's
    MaxFilesWatch, ENOSPC) or too many inotify instances (EMFILE while it makes its watcher)."""
    text = str(exc)
    return (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "MaxFilesWatch" in text \
        or "watch limit" in text or ("Too many open files" in text and "watcher" in text)  # fmt: skip


def no_watch_left(folder: str) -> bool:
    """Whether the system would refuse one more inotify watch now (Linux: try one on ``folder``, then let it go).

    notify adds a watch for each folder made inside a watched tree; when that fails at the limit it says nothing,
    and changes in the folder would go unseen. Asking once per batch of new folders costs microseconds.
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        return False
    try:
        return libc.inotify_add_watch(fd, os.fsencode(folder), 0x100) < 0 and ctypes.get_errno() == errno.ENOSPC
    finally:
        os.close(fd)


# ---------------------------------------------------------------- one watchfiles watch on its own thread


def inotify_changes(*paths: str, debounce: int, step: int, stop_event: threading.Event, recursive: bool,
                    ignore_permission_denied: bool = False):  # fmt: skip
    """watchfiles' inotify watch (its documented Rust backend, RustNotify), driven as ``watchfiles.watch`` drives it
    but with no timeout: an empty set once the watches are in place, then each set of changes, until ``stop_event``.

    ``watchfiles.watch`` with a timeout (how a watch used to tell it had started and see a stop) reads the number of
    changes waiting and, the time being up, empties them under a second lock: an event that lands between the two
    is lost, and on two busy cores a thread preempted there widens that gap to milliseconds, every 100 ms. With no
    timeout the changes are only ever taken whole (or dropped at a stop); a stop is still seen every ``step`` ms."""
    from watchfiles import Change
    from watchfiles._rust_notify import RustNotify

    with RustNotify([str(p) for p in paths], False, False, 300, recursive, ignore_permission_denied) as notify:
        yield set()  # the watches are in place: a change from now on is reported
        while True:
            raw = notify.watch(debounce, step, 0, stop_event)
            if isinstance(raw, str):  # "stop" (or "signal", on the main thread only); "timeout" is never asked for
                if raw != "timeout":
                    return
                continue
            yield {(Change(change), path) for change, path in raw}


class Group:
    """One watchfiles watch (inotify) over some folders, recursively or only their own entries, on a thread of its
    own, handing change sets (or the exception that ended it) to the watcher's queue."""

    def __init__(self, paths: list[str], recursive: bool, out: queue.Queue, notify) -> None:
        self.paths, self.recursive, self.out, self.notify = paths, recursive, out, notify
        self.stop_event = threading.Event()
        self.ready = threading.Event()
        self.failure: BaseException | None = None
        self._answered = False
        """Whether ``start`` has returned: a failure after that goes to the queue (``start`` did not say it)."""
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._follow, name="localreason-watchfiles", daemon=True)

    def start(self, timeout: float = 60.0) -> BaseException | None:
        """Start watching; returns once the watch is in place (None) or has failed (the exception), or after
        ``timeout`` seconds still setting up (None: a failure then comes through the queue, as a later one does)."""
        self.thread.start()
        self.ready.wait(timeout)
        with self._lock:
            self._answered = True
            return self.failure

    def _follow(self) -> None:
        try:
            for changes in self.notify(*self.paths, debounce=DEBOUNCE_MS, step=STEP_MS, stop_event=self.stop_event,
                                       recursive=self.recursive, ignore_permission_denied=False):  # fmt: skip
                self.ready.set()
                if changes:
                    self.out.put((self, changes))
        except Exception as exc:  # noqa: BLE001 - the watcher decides: the limit, or a restart
            with self._lock:
                self.failure, told = exc, self._answered
            if told:
                self.out.put((self, exc))
        finally:
            self.ready.set()

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(10)


class Poller(Group):
    """Changes found by looking, where inotify cannot follow: the folders are walked every ``interval`` seconds, or
    less often when a look takes long (it may cost POLL_SHARE of a core), and each entry's stat key compared with
    the last look's; changes go to the queue as a watch's do.

    watchfiles has polling of its own, but the notify it ships compares modification times in whole seconds: a
    second save within the second of the first went unseen (measured with watchfiles 1.3). Hidden folders are not
    walked (their changes are not applied anyway); a folder counts as made or gone, its own time is not compared.
    """

    def __init__(self, paths: list[str], recursive: bool, out: queue.Queue, interval: float,
                 since: dict[str, tuple] | None = None) -> None:  # fmt: skip
        super().__init__(paths, recursive, out, None)
        self.interval = interval
        self.since = since
        """The last look of the poller this one replaces: compared with at once, so that what changed while the
        watches were replaced (or went down with a watch that failed) is reported, not taken as already known."""
        self.last: dict[str, tuple] = {}

    def start(self, timeout: float = 60.0) -> BaseException | None:
        self.last = self._look() if self.since is None else self.since
        self.thread.start()
        self.ready.set()
        return None

    def _follow(self) -> None:
        from watchfiles import Change

        wait = 0.0 if self.since is not None else self.interval
        while not self.stop_event.wait(wait):
            spent = time.thread_time()
            now = self._look()
            wait = max(self.interval, (time.thread_time() - spent) / POLL_SHARE)
            changes = {(Change.added, p) for p in now.keys() - self.last.keys()}
            changes |= {(Change.deleted, p) for p in self.last.keys() - now.keys()}
            changes |= {(Change.modified, p) for p in now.keys() & self.last.keys() if now[p] != self.last[p]}
            self.last = now
            if changes:
                self.out.put((self, changes))

    def _look(self) -> dict[str, tuple]:
        """path -> stat key of every entry under the folders (a folder's key is only that it is one; links to
        folders are not followed, so a link loop cannot trap it)."""
        found: dict[str, tuple] = {}
        folders = list(self.paths)
        while folders:
            try:
                with os.scandir(folders.pop()) as entries:
                    listed = list(entries)
            except OSError:  # gone while it was looked at: the next look sees it gone
                continue
            for entry in listed:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if self.recursive and not entry.name.startswith("."):
                            found[entry.path] = ("folder",)
                            folders.append(entry.path)
                    elif entry.is_file():
                        st = entry.stat()
                        found[entry.path] = (st.st_size, st.st_mtime_ns, st.st_ino, stat.S_IFREG)
                except OSError:
                    continue
        return found
