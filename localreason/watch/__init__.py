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
  seconds instead (``sources.Poller``; the ``watch_mode`` setting ``poll`` asks for it, for network file
  systems).

The parts, one module each: ``timing`` (how long and how often), ``roots`` (what is watched), ``pending`` (waiting
for changes to settle), ``sources`` (inotify, re-checking, the slow look), ``listener`` (what a front end is told),
``watcher`` (the watcher) and ``background`` (the watch on a thread of its own, for the servers and the TUI).
"""

from __future__ import annotations

from .background import BackgroundWatch
from .listener import Listener, WatchState, change_lines, logged
from .roots import Root, roots_for, roots_of, stat_key
from .sources import limit_reached
from .timing import RESCAN_S
from .watcher import Watcher

__all__ = ["RESCAN_S", "BackgroundWatch", "Listener", "Root", "WatchState", "Watcher", "change_lines", "limit_reached",
           "logged", "roots_for", "roots_of", "stat_key"]
