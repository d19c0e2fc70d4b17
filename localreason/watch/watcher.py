"""The watcher: roots, events and pending changes turned into batches of writes through the service."""

from __future__ import annotations

import os
import queue
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from ..errors import LocalReasonError, NotFoundError
from ..ingest import prune
from ..ingest.walk import path_text
from .listener import Listener, WatchState, batch_progress
from .pending import Pending
from .roots import Root, hidden_or_transient, outermost, roots_of, stat_key, with_removals
from .sources import LIMIT_HINT, Group, Poller, inotify_changes, limit_reached, no_watch_left
from .timing import BATCH_FILES, MAX_WAIT_S, POLL_S, RECHECK_S, RESCAN_S, RETRY_S, SETTLE_S, TICK_S



class Watcher:
    """Follows roots and applies what changes in them through a service's writer path (see the module docstring).

    ``roots`` None: every folder and file ingested before (into ``collection``, or any), looked up again every
    ``recheck`` seconds (a folder added by another program is followed too). ``polling``: re-check every ``poll``
    seconds from the start instead of using inotify (None: as the ``watch_mode`` setting says). ``clock`` times
    settling and the root checks (tests pass one they move by hand); ``notify`` is ``sources.inotify_changes``
    unless a test gives another.
    """

    def __init__(self, service, roots: list[Root] | None = None, listener: Listener | None = None, *,
                 settle: float = SETTLE_S, recheck: float = RECHECK_S, poll: float = POLL_S, rescan: float = RESCAN_S,
                 clock: Callable[[], float] = time.monotonic, notify=None, collection: str | None = None,
                 polling: bool | None = None) -> None:  # fmt: skip
        if notify is None:
            notify = inotify_changes
        self.service = service
        self.listener = listener or Listener()
        self.follow_sources = roots is None
        self.collection = collection
        self.roots: list[Root] = list(roots or [])
        self.named = list(self.roots)
        """The roots named (`watch PATHS`) as they were given."""
        self.recheck, self.poll, self.clock, self.notify = recheck, poll, clock, notify
        self.rescan = rescan
        self.pending = Pending(clock, settle, MAX_WAIT_S)
        self.gone: dict[str, float] = {}
        """Paths seen deleted, and since when: applied once nothing else waits (a move's new side goes first)."""
        self.events: queue.Queue = queue.Queue()
        self.groups: list[Group] = []
        self.live: dict[Root, tuple[int, int]] = {}
        """The roots followed now, with the identity of their folder when they were last read."""
        self.vanished: set[Root] = set()
        self.polling = service.settings.watch_mode == "poll" if polling is None else polling
        """Whether changes are found by re-checking (``Poller``) instead of inotify (None: the watch_mode setting)."""
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
        self._unwatched: set[tuple[str, bool]] = set()
        """(folder, recursive) of each watch that could not start (tried again at each look at the roots): what
        changed there meanwhile went unseen, so the roots it follows are read again once it starts."""
        self._read_again: set[tuple[str, bool]] = set()
        """Those whose watch has just started after failing to: the roots they follow are read again now."""

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
        try:
            if self.follow_sources:
                self.roots = roots_of(self.service, self.collection)
            else:  # the paths named: each with the files removed from it since (Library.remove's globs)
                self.roots = with_removals(self.service, self.named)
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
        if self._read_again:  # watched again after a failed start: what changed meanwhile was not seen
            fresh += [r for r in self.live if r not in fresh and self._followed_by(r, self._read_again)]
            self._read_again.clear()
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
                                             exclude=list(root.exclude), progress=batch_progress(self.listener, self.stop_event, 0, None))  # fmt: skip
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
        """Watch the live roots: their folders recursively, the folders of files ingested by name not. A poller
        over the same folders as one before it starts from that one's last look and compares at once."""
        looked = {(tuple(g.paths), g.recursive, g.interval): g for g in self.groups if isinstance(g, Poller)}
        self._stop_groups()
        since = {key: g.last for key, g in looked.items()}
        folders = outermost([r.watched for r in self.live if r.folder])
        parents = sorted({r.watched for r in self.live if not r.folder} - set(folders))
        parents = [p for p in parents if not any(p.startswith(f + os.sep) for f in folders)]
        for paths, recursive in ((folders, True), (parents, False)):
            group = self._start_group(paths, recursive, since) if paths else None
            if group is not None:
                self.groups.append(group)
                if not isinstance(group, Poller):  # the slow look beside inotify (RESCAN_S)
                    net = Poller(paths, recursive, self.events, self.rescan,
                                 since.get((tuple(paths), recursive, self.rescan)))  # fmt: skip
                    net.start()
                    self.groups.append(net)

    def _start_group(self, paths: list[str], recursive: bool, since: dict) -> Group | None:
        group = Poller(paths, recursive, self.events, self.poll, since.get((tuple(paths), recursive, self.poll))) \
            if self.polling else Group(paths, recursive, self.events, self.notify)  # fmt: skip
        failure = group.start()
        if failure is None:
            started = {(p, recursive) for p in paths}
            self._read_again |= self._unwatched & started
            self._unwatched -= started
            return group
        group.stop()
        if not self.polling and limit_reached(failure):
            self._limit_reached(str(failure))
            return self._start_group(paths, recursive, since)
        self._say_once(f"Cannot watch {', '.join(paths)}: {failure}. Changes there are not applied while this "
                       "lasts (it is tried again every few seconds, and the folders are read again once it "
                       "works); `localreason sync` reads them.")  # fmt: skip
        self._unwatched |= {(p, recursive) for p in paths}
        self._restart = True
        self._next_check = self.clock() + self.recheck
        return None

    @staticmethod
    def _followed_by(root: Root, watches: set[tuple[str, bool]]) -> bool:
        """Whether one of ``watches`` ((folder, recursive)) follows ``root``: a recursive one its folder or one above
        it, one of only a folder's own entries the file ingested by name in that folder."""
        for folder, recursive in watches:
            if recursive and (root.watched == folder or root.watched.startswith(folder + os.sep)):
                return True
            if not recursive and not root.folder and root.watched == folder:
                return True
        return False

    def _limit_reached(self, why: str) -> None:
        self.polling = True
        self.listener.notice(f"The system's limit on watched folders (inotify) is reached ({why}), so changes are "
                             f"found by re-checking the folders every {self.poll:g} s instead (less often if a tree "
                             f"is so large that a look takes long). {LIMIT_HINT}")

    def _stop_groups(self) -> None:
        for group in self.groups:
            group.stop()
        self.groups = []

    def _group_failed(self, group: Group, exc: BaseException) -> None:
        """A watch ended on an error: watch again (polling, at the limit), and read its roots again since changes
        may have gone unseen; except for a file name that is not UTF-8, which watchfiles cannot report (its watch
        ends on any event of that file, even a read, dropping the changes that came with it): reading the folders
        again would read that file and end the watch again. The pollers' look at once (``_restart_groups``) finds
        what was dropped, that file included."""
        if group not in self.groups:
            return
        if "Unable to decode path" in str(exc):
            self._say_once(f"A file name that is not valid UTF-8 is in a watched folder ({exc}): each change to it, "
                           "or a program reading it, ends the watch, which starts again and looks at the folders "
                           "for what changed meanwhile.")  # fmt: skip
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
            if not roots or all(hidden_or_transient(r, path) for r in roots):
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
        held: dict[tuple[str, str], str] = {}
        mounts = prune.fstab_mount_points()
        for path in self.gone:
            for root in present:
                if not root.holds(path):
                    continue
                why = prune.held_by_absence(path, root.path if root.folder else None, mounts)  # (a drive unplugged)
                if why is None:
                    due.setdefault(root.collection, set()).add(path)
                else:
                    held[why] = root.collection
        self.gone.clear()
        for (where, why), collection in held.items():
            self.listener.notice(f"{where}: the files under it in {collection!r} are kept: {why}.")
        return due

    def _refresh(self, collection: str, files: list[str], gone: list[str], offset: int, total: int) -> bool:
        """One batch through the service's writer path; its report goes to the listener. False when it could not be
        written (it is put back to wait for a retry by the caller)."""
        self.applying = len(files) + len(gone)
        self._tell_state()
        try:
            report = self.service.refresh(collection, files, gone, progress=batch_progress(self.listener, self.stop_event, offset, total))
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
