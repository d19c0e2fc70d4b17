"""The Textual front end. ``run()`` opens it over a library; see app.py."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def _stderr_to(log: Path):
    """Send what native libraries (llama.cpp, torch) print on stderr to a log, not over the screen.

    Textual draws on ``sys.__stderr__``; it gets a private duplicate of the terminal while
    file descriptor 2 points at the log.
    """
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:
        yield
        return
    original = sys.__stderr__
    original.flush()
    saved = os.dup(2)
    terminal = os.fdopen(saved, "w", encoding=original.encoding or "utf-8", errors="backslashreplace",
                         buffering=1)  # fmt: skip
    sys.__stderr__ = terminal
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        terminal.flush()
        os.dup2(saved, 2)
        sys.__stderr__ = original
        terminal.close()


def run(library, *, first_turn=None, max_tokens: int | None = None) -> None:
    """Open the TUI over ``library`` (optionally showing an answered question first)."""
    from .app import LocalReasonApp

    app = LocalReasonApp(library, first_turn=first_turn, max_tokens=max_tokens)
    with _stderr_to(library.home / "logs" / "native-stderr.log"):
        app.run()
