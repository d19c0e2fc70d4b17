"""Waiting in tests: for the thing itself (an Event, a state, a line), never for a time to pass.

A test that sleeps and then looks, or asserts that something took less than a second, passes on an idle
machine and fails on a busy one. These helpers wait for a condition and give up only after PATIENCE, a safety
deadline a working build never gets near (it answers in milliseconds, seconds on a loaded machine): it keeps
a broken build from hanging the run, and says what never happened.
"""

from __future__ import annotations

import os
import threading
import time

PATIENCE = float(os.environ.get("TESTS_PATIENCE_S", "120"))
"""Seconds a test waits for something a working build does at once, before it fails saying what never came
(TESTS_PATIENCE_S: less, to see a deliberately broken build fail sooner)."""


def wait_until(condition, what: str, patience: float = PATIENCE, step: float = 0.01) -> None:
    """Poll ``condition()`` until it holds; after ``patience`` seconds fail saying what never happened (``what``:
    "the watch to start")."""
    deadline = time.monotonic() + patience
    while not condition():
        assert time.monotonic() < deadline, f"waited {patience:g} s for {what}; it never happened"
        time.sleep(step)


def finished(thread: threading.Thread, what: str, patience: float = PATIENCE) -> None:
    """Join ``thread``; fail saying ``what`` (what it does: "the search") if it still runs after ``patience`` s."""
    thread.join(patience)
    assert not thread.is_alive(), f"{what} was still running after {patience:g} s"


def threads_now() -> str:
    """Where every thread of this process is now (for a failure message: a thread stuck waiting shows where)."""
    import sys
    import traceback

    names = {t.ident: t.name for t in threading.enumerate()}
    return "\n".join(f"--- {names.get(ident, ident)}\n" + "".join(traceback.format_stack(frame, limit=12))
                     for ident, frame in sys._current_frames().items())  # fmt: skip
