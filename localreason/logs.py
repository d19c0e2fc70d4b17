"""Where native libraries' output goes: front ends that own the terminal or stdout send fd 2 to a log."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def stderr_to(log: Path):
    """Send what native libraries (llama.cpp, torch) print on stderr to a log, not over the screen.

    ``sys.__stderr__`` (where Textual draws, and where a server may still say one line to a person)
    gets a private duplicate of the terminal while file descriptor 2 points at the log. If the log
    cannot be opened, nothing is redirected.
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
