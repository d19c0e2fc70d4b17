"""Waiting for changes to settle: a changed path is applied once its size and modification time have stayed
the same, with no event for it, for SETTLE_S seconds (or after MAX_WAIT_S at most)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from .roots import Root, stat_key



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
