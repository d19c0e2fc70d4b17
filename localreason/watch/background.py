"""The watch on a thread of its own, for the servers and the TUI, stopped with them."""

from __future__ import annotations

import logging
import threading

from ..errors import Interrupted
from .listener import Listener
from .watcher import Watcher

log = logging.getLogger("localreason.watch")


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
