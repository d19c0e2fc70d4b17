"""What a front end is told: the watch's state, its notices, each report, and the progress of a batch."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..ingest.pipeline import Progress, ProgressCallback
from ..types import IngestReport
from .timing import POLL_S



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



def change_lines(report: IngestReport, catch_up: bool = False) -> list[str]:
    """A watch's report as lines for a log: one a file that changed (what stayed the same is left out). After
    reading a root again (``catch_up``) a file skipped is left out too: it was skipped when it was ingested or
    changed, and is the same now (it would be logged again on every start)."""
    quiet = ("unchanged", "skipped") if catch_up else ("unchanged",)
    return [f"{f.status:8} {f.detail()}" for f in report.files if f.status not in quiet]


def logged(say: Callable[[str], None]) -> Listener:
    """A listener for a server: notices and each changed file as a line to ``say`` (stderr, a log)."""

    def report(report: IngestReport, catch_up: bool) -> None:
        for line in change_lines(report, catch_up):
            say(line)

    return Listener(notice=say, report=report)


def batch_progress(listener: Listener, stop: threading.Event, offset: int, total: int | None) -> ProgressCallback:
    """Ingest progress for ``listener``, counted over all batches of one set of changes (``offset`` files done
    before this batch, of ``total``); ``stop`` set from another thread ends the write after the current file
    (what was finished is kept)."""

    def progress(p: Progress) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        if listener.progress is not None:
            listener.progress(p if total is None else replace(p, done=p.done + offset, total=total))

    return progress
