"""Following folders: changes to the folders and files of the library are applied as they happen.

    watcher = Watcher(service)          # every folder and file ingested before (or Watcher(service, roots))
    watcher.run(stop)                   # until the Event ``stop`` is set, or Ctrl+C

watchfiles (Rust's notify: inotify on Linux) reports what changed; this module turns it into writes:

- **Settling.** A changed path is applied once its size and modification time have stayed the same, with no event
  for it, for ``settle`` seconds: a burst of saves is one re-ingest, a file still being written waits for its end,
  and a save by rename (vim, most IDEs: the old file renamed or replaced by a new one) is one update. Editors'
  temporary, swap, backup and lock files are never looked at (walk.is_transient), nor hidden ones.
- **Writes** go through the service's writer path (``Service.refresh``): the library's writer lock orders them with
  other processes' writes (a second watcher waits, saying who holds it), the service's lock with this process's
  readers, so a search sees the library before or after a batch, never half of it. A batch holds at most
  BATCH_FILES files, so a large copy does not hold searches up for long; the per-file report is ingest's.
- **Moves.** A folder moved or renamed inside a watched tree is its files added under the new name, then removed
  under the old one once nothing else waits: each new document keeps the vectors of the old one with the same
  content, so nothing is embedded again (its id changes: an id derives from the path).
- **Roots that vanish** (an unmounted drive, a renamed or replaced top folder) are never pruned: the watcher says
  so, leaves their documents alone and follows them again when they are back (``localreason sync --prune``
  removes them). The watcher removes a document only when it sees its file deleted under a root that is there;
  files deleted while nothing watched are counted at the start, and ``localreason sync`` removes them.
- **The inotify limit.** When the system's limit on watched folders is reached, at the start or when a new folder
  appears, the watcher says so, with the sysctl that raises it, and finds changes by re-checking every POLL_S
  seconds instead (``_Poller``; the ``watch_mode`` setting ``poll`` asks for it, for network file systems).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import queue
import stat
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import Interrupted, LocalReasonError, NotFoundError, ValidationError
from .ingest.parse import detect_format
from .ingest.pipeline import Progress, ProgressCallback
from .ingest.walk import admitted, is_transient, path_text
from .types import IngestReport

log = logging.getLogger("localreason.watch")

SETTLE_S = 0.5
"""A change is applied once the file's size and modification time have not moved, nor an event come, for this long."""
MAX_WAIT_S = 60.0
"""A file that never settles (a log written to all the time) is applied as it is after this long."""
RETRY_S = (2.0, 60.0)
"""A batch that could not be written (the library locked by another program for long, the disk full) is tried
again after the first of these, then after twice as long each time, up to the second: nothing is dropped."""
POLL_S = 2.0
"""How often the folders are re-checked when inotify cannot follow them (its limit, or ``watch_mode = "poll"``)."""
POLL_SHARE = 0.01
"""At most this share of a core goes to re-checking: a tree whose look takes 40 ms is looked at every 4 s."""
RESCAN_S = 300.0
"""While inotify watches, the folders are also looked at this often, as re-checking does: what a watch could not
report (the kernel's event queue overflowed in a burst, which watchfiles does not pass on) is found then, not lost
until the next `sync`. A look at 5,000 files takes about 40 ms."""
RECHECK_S = 2.0
"""How often the roots are looked at: vanished, back, replaced, or new sources ingested by another program."""
TICK_S = 0.1
"""How often waiting changes are looked at again (their size and modification time)."""
BATCH_FILES = 100
"""Files written in one batch (one hold of the writer lock): searches wait for a batch, never for a whole copy."""
DEBOUNCE_MS, STEP_MS, TIMEOUT_MS = 500, 100, 100
"""watchfiles' grouping: changes are handed over 100 ms after the last one, at most 500 ms after the first, and
every 100 ms when nothing happens (which tells that a watch has started, and lets it see a stop). Its loop wakes
every STEP_MS: 50 ms cost 0.16 % of a core idle, 100 ms half that, 200 ms 0.04 % (watching 5,000 files)."""
LIMIT_HINT = ("To raise the limit: sudo sysctl fs.inotify.max_user_watches=524288 (and the same line, "
              "fs.inotify.max_user_watches=524288, in /etc/sysctl.d/90-inotify.conf to keep it after a restart).")


# ---------------------------------------------------------------- what is watched


@dataclass(frozen=True)
class Root:
    """A folder or file the library ingested (a source), as the watcher follows it."""

    collection: str
    path: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    folder: bool = True
    """False for a file ingested by name (its folder is watched, not recursively)."""

    def holds(self, path: str) -> bool:
        return path == self.path or (self.folder and path.startswith(self.path + os.sep))

    def admits(self, path: str) -> bool:
        """Whether an ingest of this root reads the file ``path`` (by name: hidden, temporary, globs, format)."""
        if not self.folder:
            return path == self.path
        return admitted(Path(path), Path(self.path), self.include, self.exclude) and \
            detect_format(Path(path)) is not None  # fmt: skip

    @property
    def watched(self) -> str:
        """What watchfiles watches for it: the folder itself, or the folder holding the file."""
        return self.path if self.folder else os.path.dirname(self.path)

    def identity(self) -> tuple[int, int] | None:
        """(device, inode) of the watched folder, None when it is not there: a folder renamed away and another made
        in its place, or a drive mounted or unmounted on it, is another folder."""
        try:
            st = os.stat(self.watched)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def roots_of(service, collection: str | None = None) -> list[Root]:
    """Every folder and file ingested before (into ``collection``, or into any)."""
    with service.reading() as lib:
        return [Root(s["collection"], s["path"], tuple(s["include"]), tuple(s["exclude"]), s["folder"])
                for s in lib.sources(collection)]  # fmt: skip


def roots_for(service, paths: list[str], collection: str | None = None, include: tuple[str, ...] = (),
              exclude: tuple[str, ...] = ()) -> list[Root]:  # fmt: skip
    """The roots `localreason watch PATHS` follows: a path ingested before keeps its collection and globs unless
    others are given; any other is ingested into ``collection`` (default: "default") when the watch starts."""
    from .library import DEFAULT_COLLECTION

    known = roots_of(service)
    roots: list[Root] = []
    for raw in paths:
        path = path_text(os.path.abspath(os.path.expanduser(str(raw))))
        same = [r for r in known if r.path == path]
        if same and collection is None and not include and not exclude:
            roots += same
        elif os.path.isdir(path) or os.path.isfile(path):
            roots.append(Root(collection or DEFAULT_COLLECTION, path, tuple(include), tuple(exclude),
                              os.path.isdir(path)))  # fmt: skip
        else:
            raise ValidationError(f"{raw} is not a folder or file, and was not ingested before.",
                                  hint="Name a folder or file that exists, or one `localreason library` lists.")
    return list(dict.fromkeys(roots))


def stat_key(path: str) -> tuple[int, int, int, int] | None:
    """What tells that a path changed: size, modification time (ns), inode and kind; None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, stat.S_IFMT(st.st_mode))


def _hidden_or_transient(root: Root, path: str) -> bool:
    """Whether a change at ``path`` is not worth looking at: under a hidden folder, hidden, or an editor's file."""
    rel = path[len(root.path) + 1:] if root.folder else os.path.basename(path)
    parts = rel.split(os.sep) if rel else []
    return any(p.startswith(".") for p in parts) or (bool(parts) and is_transient(parts[-1]))


# ---------------------------------------------------------------- waiting for changes to settle


@dataclass
class _Seen:
    key: tuple | None
    changed: float
    """When its key last moved or an event came for it (the watcher's clock)."""
    first: float


class Pending:
    """Paths with changes not applied yet, each until it has settled: its stat key unchanged and no event for it
    for ``settle`` seconds (or waiting for ``max_wait``)."""

    def __init__(self, clock: Callable[[], float], settle: float, max_wait: float) -> None:
        self.clock, self.settle, self.max_wait = clock, settle, max_wait
        self._paths: dict[str, _Seen] = {}
        self._lock = threading.Lock()
        """``snapshot`` may be called from another thread (tests, a front end)."""

    def __len__(self) -> int:
        return len(self._paths)

    def touch(self, path: str) -> None:
        """An event came for ``path``: it settles ``settle`` seconds from now, if nothing else moves."""
        now, key = self.clock(), stat_key(path)
        with self._lock:
            seen = self._paths.get(path)
            if seen is None:
                self._paths[path] = _Seen(key, now, now)
            else:
                seen.key, seen.changed = key, now

    def add(self, path: str) -> None:
        """Wait for ``path`` too, unless it already waits (found in a folder, not reported by an event)."""
        if path not in self._paths:
            self.touch(path)

    def settled(self) -> list[str]:
        """The paths that have settled, taken off the list; the others are looked at again (a key that moved
        starts their wait again)."""
        now, out = self.clock(), []
        with self._lock:
            for path, seen in list(self._paths.items()):
                key = stat_key(path)
                if key != seen.key:
                    seen.key, seen.changed = key, now
                elif now - seen.changed >= self.settle or now - seen.first >= self.max_wait:
                    out.append(path)
                    del self._paths[path]
        return out

    def drop(self, root: Root) -> None:
        """Forget what waits under ``root`` (it vanished)."""
        with self._lock:
            for path in [p for p in self._paths if root.holds(p)]:
                del self._paths[path]

    def snapshot(self) -> dict[str, tuple | None]:
        """path -> the stat key last seen, for each path waiting."""
        with self._lock:
            return {path: seen.key for path, seen in self._paths.items()}


# ---------------------------------------------------------------- what a front end is told


@dataclass(frozen=True)
class WatchState:
    """Where the watcher stands, for a status line."""

    folders: int = 0
    files: int = 0
    gone: tuple[str, ...] = ()
    polling: bool = False
    applying: int = 0
    """Changes being written now (0: none)."""
    every: float = POLL_S
    """How often the folders are re-checked when ``polling``, in seconds."""

    def describe(self) -> str:
        parts = [f"{self.folders} folder{'s' * (self.folders != 1)}"] if self.folders or not self.files else []
        parts += [f"{self.files} file{'s' * (self.files != 1)}"] if self.files else []
        text = "Watching " + " and ".join(parts)
        if self.polling:
            text += f" (re-checked every {self.every:g} s)"
        if self.gone:
            text += f"; {len(self.gone)} gone ({', '.join(self.gone)})"
        if self.applying:
            text += f"; applying {self.applying} change{'s' * (self.applying != 1)}"
        return text


def _ignore(*args) -> None:
    return None


@dataclass
class Listener:
    """What the watcher tells a front end: a line for a person, each write's report (``catch_up``: a whole root
    read again, at the start or when it is back; else changes as they happened), its state, ingest progress."""

    notice: Callable[[str], None] = _ignore
    report: Callable[[IngestReport, bool], None] = _ignore
    state: Callable[[WatchState], None] = _ignore
    progress: ProgressCallback | None = None


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


class _Group:
    """One watchfiles watch (inotify) over some folders, recursively or only their own entries, on a thread of its
    own, handing change sets (or the exception that ended it) to the watcher's queue."""

    def __init__(self, paths: list[str], recursive: bool, out: queue.Queue, notify) -> None:
        self.paths, self.recursive, self.out, self.notify = paths, recursive, out, notify
        self.stop_event = threading.Event()
        self.ready = threading.Event()
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._follow, name="localreason-watchfiles", daemon=True)

    def start(self, timeout: float = 60.0) -> BaseException | None:
        """Start watching; returns once the watch is in place (None) or has failed (the exception)."""
        self.thread.start()
        self.ready.wait(timeout)
        return self.failure

    def _follow(self) -> None:
        try:
            for changes in self.notify(*self.paths, watch_filter=None, debounce=DEBOUNCE_MS, step=STEP_MS,
                                       stop_event=self.stop_event, rust_timeout=TIMEOUT_MS, yield_on_timeout=True,
                                       force_polling=False, recursive=self.recursive, raise_interrupt=False,
                                       ignore_permission_denied=False):  # fmt: skip
                self.ready.set()
                if changes:
                    self.out.put((self, changes))
        except Exception as exc:  # noqa: BLE001 - the watcher decides: the limit, or a restart
            self.failure = exc
            if self.ready.is_set():
                self.out.put((self, exc))
        finally:
            self.ready.set()

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(10)


class _Poller(_Group):
    """Changes found by looking, where inotify cannot follow: the folders are walked every ``interval`` seconds, or
    less often when a look takes long (it may cost POLL_SHARE of a core), and each entry's stat key compared with
    the last look's; changes go to the queue as a watch's do.

    watchfiles has polling of its own, but the notify it ships compares modification times in whole seconds: a
    second save within the second of the first went unseen (measured with watchfiles 1.3). Hidden folders are not
    walked (their changes are not applied anyway); a folder counts as made or gone, its own time is not compared.
    """

    def __init__(self, paths: list[str], recursive: bool, out: queue.Queue, interval: float) -> None:
        super().__init__(paths, recursive, out, None)
        self.interval = interval
        self.last: dict[str, tuple] = {}

    def start(self, timeout: float = 60.0) -> BaseException | None:
        self.last = self._look()
        self.thread.start()
        self.ready.set()
        return None

    def _follow(self) -> None:
        from watchfiles import Change

        wait = self.interval
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


# ---------------------------------------------------------------- the watcher


class Watcher:
    """Follows roots and applies what changes in them through a service's writer path (see the module docstring).

    ``roots`` None: every folder and file ingested before (into ``collection``, or any), looked up again every
    ``recheck`` seconds (a folder added by another program is followed too). ``polling``: re-check every ``poll``
    seconds from the start instead of using inotify (None: as the ``watch_mode`` setting says). ``clock`` times
    settling and the root checks (tests pass one they move by hand); ``notify`` is watchfiles.watch unless a test
    gives another.
    """

    def __init__(self, service, roots: list[Root] | None = None, listener: Listener | None = None, *,
                 settle: float = SETTLE_S, recheck: float = RECHECK_S, poll: float = POLL_S, rescan: float = RESCAN_S,
                 clock: Callable[[], float] = time.monotonic, notify=None, collection: str | None = None,
                 polling: bool | None = None) -> None:  # fmt: skip
        if notify is None:
            from watchfiles import watch as notify
        self.service = service
        self.listener = listener or Listener()
        self.follow_sources = roots is None
        self.collection = collection
        self.roots: list[Root] = list(roots or [])
        self.recheck, self.poll, self.clock, self.notify = recheck, poll, clock, notify
        self.rescan = rescan
        self.pending = Pending(clock, settle, MAX_WAIT_S)
        self.gone: dict[str, float] = {}
        """Paths seen deleted, and since when: applied once nothing else waits (a move's new side goes first)."""
        self.events: queue.Queue = queue.Queue()
        self.groups: list[_Group] = []
        self.live: dict[Root, tuple[int, int]] = {}
        """The roots followed now, with the identity of their folder when they were last read."""
        self.vanished: set[Root] = set()
        self.polling = service.settings.watch_mode == "poll" if polling is None else polling
        """Whether changes are found by re-checking (``_Poller``) instead of inotify (None: the watch_mode setting)."""
        self.applying = 0
        self.ticks = 0
        """Turns of the loop so far (a test waits for one to pass)."""
        self.stop_event = threading.Event()
        self._home = path_text(os.path.abspath(service.library.home))
        self._next_check = 0.0
        self._restart = False
        self._said: set[str] = set()
        self._retry_at = 0.0
        """Before this time (the watcher's clock) nothing is written: a write failed, and is tried again then."""
        self._retry_wait = 0.0
        self._failed = ""
        """The reason the last write failed, until one succeeds (said once while it stays the same)."""

    # ------------------------------------------------------------ running

    def run(self, stop: threading.Event | None = None) -> None:
        """Follow the roots until ``stop`` is set: read each again (what changed while nothing watched), then
        apply changes as they settle. Ctrl+C (KeyboardInterrupt, or Interrupted inside a write) ends it too."""
        self.stop_event = stop or self.stop_event
        try:
            self._check_roots(first=True)
            while not self.stop_event.is_set():
                self.step()
        finally:
            self._stop_groups()

    def wake(self) -> None:
        """End the current wait for changes at once (after ``stop`` is set)."""
        self.events.put(None)

    def step(self) -> None:
        """One turn: take the changes reported, look at the roots when due, apply what has settled."""
        waiting = len(self.pending) or self.gone
        self._take(TICK_S if waiting else min(self.recheck, RECHECK_S))
        if self.clock() >= self._next_check or self._restart:
            self._check_roots()
        self._apply_settled()
        self.ticks += 1

    def state(self) -> WatchState:
        live = list(self.live)
        return WatchState(sum(r.folder for r in live), sum(not r.folder for r in live),
                          tuple(sorted(r.path for r in self.vanished)), self.polling, self.applying,
                          self.poll)  # fmt: skip

    def _tell_state(self) -> None:
        self.listener.state(self.state())

    def _say_once(self, message: str) -> None:
        """A problem is said once per watch, however often it comes back."""
        if message not in self._said:
            self._said.add(message)
            self.listener.notice(message)

    # ------------------------------------------------------------ the roots

    def _check_roots(self, first: bool = False) -> None:
        """Follow the roots as they are now: sources added or removed, roots vanished, back or replaced. The
        watches start again when that changed, and each root new, back or replaced is read again."""
        self._next_check = self.clock() + self.recheck
        if self.follow_sources:
            try:
                self.roots = roots_of(self.service, self.collection)
            except NotFoundError:  # the collection watched was removed: nothing is left to follow
                self.roots = []
            except LocalReasonError as exc:  # the library busy, say: the same roots until the next look
                self._say_once(f"The folders to watch could not be read now: {exc.message}")
        restart, fresh = self._restart or first, []
        self._restart = False
        for root in self.roots:
            identity, was = root.identity(), self.live.get(root)
            if identity is None:
                if root not in self.vanished:
                    self._vanish(root)
                    restart = True
            elif identity != was:
                if root in self.vanished:
                    self.listener.notice(f"{root.path} is back: reading it again.")
                elif was is not None:
                    self.listener.notice(f"{root.path} is another folder now (replaced, or a drive mounted on it): "
                                         "reading it again.")  # fmt: skip
                self.vanished.discard(root)
                self.live[root] = identity
                fresh.append(root)
                restart = True
        for root in [r for r in self.live if r not in self.roots]:  # no longer a source (its collection removed)
            del self.live[root]
            restart = True
        self.vanished &= set(self.roots)
        if restart:
            self._restart_groups()
        self._catch_up(fresh)
        if first:  # watched before read again: a change from now on is seen
            where = ", ".join(f"{r.path} ({r.collection})" for r in self.live)
            self.listener.notice(f"{self.state().describe()}: {where or 'nothing yet'}.")
        if restart:
            self._tell_state()

    def _vanish(self, root: Root) -> None:
        """A root is gone: say so and leave its documents alone until it is back (never a bulk removal)."""
        self.live.pop(root, None)
        self.vanished.add(root)
        self.pending.drop(root)
        for path in [p for p in self.gone if root.holds(p)]:
            del self.gone[path]
        with self.service.reading() as lib:
            count = len(lib.documents_under(root.collection, root.path))
        self.listener.notice(
            f"{root.path} is gone (an unmounted drive, or a folder renamed, moved or deleted): its {count} "
            f"document{'s' * (count != 1)} in {root.collection!r} are kept, and it is followed again when it is "
            "back. To remove them: `localreason sync --prune` (or F5 in the TUI, which asks).")  # fmt: skip

    def _catch_up(self, roots: list[Root]) -> None:
        """Read ``roots`` again as an ingest does (what changed while nothing watched them). Nothing is removed: a
        document whose file went missing meanwhile is counted, and `localreason sync` removes it."""
        for root in roots:
            if self.stop_event.is_set():
                return
            try:
                report = self.service.ingest([root.path], root.collection, include=list(root.include),
                                             exclude=list(root.exclude), progress=self._progress(0, None))  # fmt: skip
                found = {f.path for f in report.files}
                with self.service.reading() as lib:
                    missing = [d for d in lib.documents_under(root.collection, root.path) if d.source_path not in found]
            except LocalReasonError as exc:
                self.listener.notice(f"{root.path} could not be read: {exc.message} {exc.hint or ''}".strip())
                continue
            self.listener.report(report, True)
            if missing:
                many = len(missing) != 1
                self.listener.notice(
                    f"{len(missing)} document{'s' * many} under {root.path} {'have' if many else 'has'} no file any "
                    "more (deleted while nothing watched): kept; `localreason sync` removes them.")  # fmt: skip

    # ------------------------------------------------------------ the watches

    def _restart_groups(self) -> None:
        """Watch the live roots: their folders recursively, the folders of files ingested by name not."""
        self._stop_groups()
        folders = _outermost([r.watched for r in self.live if r.folder])
        parents = sorted({r.watched for r in self.live if not r.folder} - set(folders))
        parents = [p for p in parents if not any(p.startswith(f + os.sep) for f in folders)]
        for paths, recursive in ((folders, True), (parents, False)):
            group = self._start_group(paths, recursive) if paths else None
            if group is not None:
                self.groups.append(group)
                if not isinstance(group, _Poller):  # the slow look beside inotify (RESCAN_S)
                    net = _Poller(paths, recursive, self.events, self.rescan)
                    net.start()
                    self.groups.append(net)

    def _start_group(self, paths: list[str], recursive: bool) -> _Group | None:
        group = _Poller(paths, recursive, self.events, self.poll) if self.polling else \
            _Group(paths, recursive, self.events, self.notify)  # fmt: skip
        failure = group.start()
        if failure is None:
            return group
        group.stop()
        if not self.polling and limit_reached(failure):
            self._limit_reached(str(failure))
            return self._start_group(paths, recursive)
        self._say_once(f"Cannot watch {', '.join(paths)}: {failure}. Changes there are not applied while this "
                       "lasts (it is tried again every few seconds); `localreason sync` reads them.")  # fmt: skip
        self._restart = True
        self._next_check = self.clock() + self.recheck
        return None

    def _limit_reached(self, why: str) -> None:
        self.polling = True
        self.listener.notice(f"The system's limit on watched folders (inotify) is reached ({why}), so changes are "
                             f"found by re-checking the folders every {self.poll:g} s instead (less often if a tree "
                             f"is so large that a look takes long). {LIMIT_HINT}")

    def _stop_groups(self) -> None:
        for group in self.groups:
            group.stop()
        self.groups = []

    def _group_failed(self, group: _Group, exc: BaseException) -> None:
        """A watch ended on an error: watch again (polling, at the limit), and read its roots again since changes
        may have gone unseen; except for a file name that is not UTF-8, which watchfiles cannot report (it drops
        the changes that came with it): reading the folders again would read that file, and that fails again."""
        if group not in self.groups:
            return
        if "Unable to decode path" in str(exc):
            self._say_once(f"A file name that is not valid UTF-8 is in a watched folder ({exc}): changes to it, and "
                           "any made in the same moment, are not seen while watching; `localreason sync` reads "
                           "them.")  # fmt: skip
        elif not self.polling and limit_reached(exc):
            self._limit_reached(str(exc))
            self.live.clear()  # each root is new again: watched afresh and read again
        else:
            self._say_once(f"Watching met an error ({exc.__class__.__name__}: {exc}); it starts again and reads "
                           "the folders again, so nothing is missed.")  # fmt: skip
            self.live.clear()
        self._restart = True

    # ------------------------------------------------------------ changes

    def _take(self, timeout: float) -> None:
        """Take what the watches reported (waiting up to ``timeout`` for the first): each path starts to settle."""
        try:
            item = self.events.get(timeout=timeout)
        except queue.Empty:
            return
        made: list[str] = []
        while True:
            if item is not None:  # None only wakes the loop
                group, what = item
                if isinstance(what, BaseException):
                    self._group_failed(group, what)
                else:
                    made += self._saw(what)
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                break
        if made and not self.polling and no_watch_left(made[0]):
            self._limit_reached(f"no watch is left for the new folder {made[0]}")
            self._restart = True

    def _saw(self, changes) -> list[str]:
        """Put each change worth looking at on the pending list; returns the folders that were made."""
        from watchfiles import Change

        made = []
        for change, path in changes:
            if path == self._home or path.startswith(self._home + os.sep):
                continue  # the library's own files
            roots = [r for r in self.live if r.holds(path)]
            if any(path == (r.path if r.folder else r.watched) for r in roots):
                self._next_check = 0.0  # a root itself moved or went: look at the roots now
                continue
            if not roots or all(_hidden_or_transient(r, path) for r in roots):
                continue
            self.pending.touch(path)
            if change == Change.added and os.path.isdir(path):
                made.append(path)
        return made

    def _apply_settled(self) -> None:
        """Write what has settled: files changed or made, files and folders deleted; a folder made or moved in is
        looked into (its files settle in turn, unless they settled with it). After a failed write, nothing is
        taken until its retry is due (the changes wait on the pending list)."""
        if self.clock() < self._retry_at:
            return
        changed: dict[str, set[str]] = {}
        ready = self.pending.settled()
        folders = []
        for path in ready:
            key = stat_key(path)
            if key is None:
                self.gone.setdefault(path, self.clock())
            elif stat.S_ISDIR(key[3]):
                folders.append(path)
            else:
                for root in self.live:
                    if root.holds(path) and root.admits(path):
                        changed.setdefault(root.collection, set()).add(path)
        for folder in folders:
            self._look_into(folder, set(ready))
        gone = self._gone_due()
        failed = False
        for collection in sorted(set(changed) | set(gone)):
            files = sorted(changed.get(collection, ()))
            batches = [files[i:i + BATCH_FILES] for i in range(0, len(files), BATCH_FILES)] or [[]]
            for i, batch in enumerate(batches):
                deleted = sorted(gone.get(collection, ())) if i == len(batches) - 1 else []
                if failed or not self._refresh(collection, batch, deleted, i * BATCH_FILES, len(files)):
                    failed = True
                    self._again(batch, deleted)  # the rest waits for the retry too, in order

    def _look_into(self, folder: str, ready: set[str]) -> None:
        """The files of a folder made or moved into a root wait to settle (no event came for those moved in)."""
        for here, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for name in files:
                path = os.path.join(here, name)
                if path not in ready and any(r.holds(path) and r.admits(path) for r in self.live):
                    self.pending.add(path)

    def _gone_due(self) -> dict[str, set[str]]:
        """The deletions to apply now, by collection: once nothing else waits (a moved file's new side is written
        first and keeps its vectors), and only under roots that are there and the same folder as before."""
        now = self.clock()
        if not self.gone or (len(self.pending) and all(now - t < MAX_WAIT_S for t in self.gone.values())):
            return {}
        present = [r for r in self.live if r.identity() == self.live[r]]
        due: dict[str, set[str]] = {}
        for path in self.gone:
            for root in present:
                if root.holds(path):
                    due.setdefault(root.collection, set()).add(path)
        self.gone.clear()
        return due

    def _refresh(self, collection: str, files: list[str], gone: list[str], offset: int, total: int) -> bool:
        """One batch through the service's writer path; its report goes to the listener. False when it could not be
        written (it is put back to wait for a retry by the caller)."""
        self.applying = len(files) + len(gone)
        self._tell_state()
        try:
            report = self.service.refresh(collection, files, gone, progress=self._progress(offset, total))
        except LocalReasonError as exc:
            self._write_failed(collection, f"{exc.message} {exc.hint or ''}".strip())
            return False
        finally:
            self.applying = 0
            self._tell_state()
        if report.stopped:  # the files not written are tried again; those written are reported now
            self.listener.report(replace(report, files=[f for f in report.files if f.status != "failed"]), False)
            self._again([f.path for f in report.files if f.status == "failed"], [])
            self._write_failed(collection, f"writing stopped: {report.stopped}")
            return False
        if self._failed:
            self.listener.notice(f"The changes in {collection!r} that waited are applied now.")
        self._failed, self._retry_wait = "", 0.0
        self.listener.report(report, False)
        return True

    def _write_failed(self, collection: str, why: str) -> None:
        """A write failed: say why (once while the reason stays the same) and when it is tried again."""
        low, high = RETRY_S
        self._retry_wait = min(high, self._retry_wait * 2) if self._retry_wait else low
        self._retry_at = self.clock() + self._retry_wait
        if why != self._failed:
            self.listener.notice(f"Changes in {collection!r} were not applied: {why}. They wait, and are tried again "
                                 f"in {self._retry_wait:g} s (then less often, up to every {high:g} s).")  # fmt: skip
        self._failed = why

    def _again(self, files: list[str], gone: list[str]) -> None:
        """Put changes that were not written back to wait (files settle again; deletions wait as before)."""
        for path in files:
            self.pending.add(path)
        for path in gone:
            self.gone.setdefault(path, self.clock())

    def _progress(self, offset: int, total: int | None) -> ProgressCallback:
        """Ingest progress for the listener, counted over all batches of one set of changes; a stop asked from
        another thread ends the write after the current file (what was finished is kept)."""

        def progress(p: Progress) -> None:
            if self.stop_event.is_set():
                raise KeyboardInterrupt
            if self.listener.progress is not None:
                self.listener.progress(p if total is None else replace(p, done=p.done + offset, total=total))

        return progress


def change_lines(report: IngestReport) -> list[str]:
    """A watch's report as lines for a log: one a file that changed (what stayed the same is left out)."""
    return [f"{f.status:8} {f.detail()}" for f in report.files if f.status != "unchanged"]


def logged(say: Callable[[str], None]) -> Listener:
    """A listener for a server: notices and each changed file as a line to ``say`` (stderr, a log)."""

    def report(report: IngestReport, catch_up: bool) -> None:
        for line in change_lines(report):
            say(line)

    return Listener(notice=say, report=report)


def _outermost(folders: list[str]) -> list[str]:
    """The folders not inside another of them (watching one watches what it holds)."""
    unique = sorted(set(folders))
    return [f for f in unique if not any(f != g and f.startswith(g.rstrip(os.sep) + os.sep) for g in unique)]


class BackgroundWatch:
    """A Watcher on a thread of its own, beside a server or the TUI: ``start()``, then ``stop()``."""

    def __init__(self, service, listener: Listener | None = None, **kwargs) -> None:
        self.listener = listener or Listener()
        self.watcher = Watcher(service, None, self.listener, **kwargs)
        self.thread = threading.Thread(target=self._run, name="localreason-watch", daemon=True)

    def start(self) -> "BackgroundWatch":
        self.thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching; a write in progress ends after its current file."""
        self.watcher.stop_event.set()
        self.watcher.wake()
        if self.thread.is_alive():
            self.thread.join(timeout)

    def _run(self) -> None:
        try:
            self.watcher.run()
        except Interrupted as stopped:  # asked to stop inside a write: what was finished is kept
            if stopped.report is not None:
                self.listener.report(stopped.report, False)
        except Exception as exc:  # noqa: BLE001 - said to the front end, which goes on without watching
            log.exception("The watcher stopped")
            self.listener.notice(f"Watching stopped: {exc.__class__.__name__}: {exc}. Changes are no longer "
                                 "applied; start again to watch.")  # fmt: skip
