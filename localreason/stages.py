"""The stages of answering a question, named once for every front end's progress display.

``reason`` (and the service around it) reports each stage through a callback
``stage(Stage, **info)``; the CLI shows it in a status line, the TUI beside a spinner,
the MCP server as progress notifications (``Stage.step`` of ``Stage.STEPS``).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from .errors import Cancelled
from .text import counted


class Stage(str, Enum):
    WAITING = "waiting"
    LOADING_EMBEDDER = "loading-embedder"
    LOADING_GENERATOR = "loading-generator"
    SEARCHING = "searching"
    READING = "reading"
    WRITING = "writing"
    VERIFYING = "verifying"

    def describe(self, **info) -> str:
        """One line for a person, e.g. "Reading 12 passages (980 tokens)"."""
        try:
            if self is Stage.READING:
                return f"Reading {counted(info['chunks'], 'passage')} ({counted(info['tokens'], 'token')})"
            return _WORDS[self].format(**info)
        except (KeyError, IndexError):
            return _WORDS[self].split(" {")[0]

    @property
    def step(self) -> int:
        """This stage's place in the order of a request, from 1 (for progress bars)."""
        return list(Stage).index(self) + 1


STEPS = len(Stage)

_WORDS = {
    Stage.WAITING: "Waiting for the library (a change is being written)",
    Stage.LOADING_EMBEDDER: "Loading the embedding model (first question only)",
    Stage.LOADING_GENERATOR: "Loading the language model (first question only)",
    Stage.SEARCHING: "Searching the library",
    Stage.READING: "Reading {chunks} passages ({tokens} tokens)",
    Stage.WRITING: "Writing the answer",
    Stage.VERIFYING: "Verifying the quotations",
}

StageCallback = Callable[..., None]
"""``stage(Stage, **info)``."""


def reporter(stage: StageCallback | None, cancel) -> Callable[..., None]:
    """``say(Stage, **info)``: raises :class:`Cancelled` once ``cancel`` (an Event) is set, else tells ``stage``.

    Every stage boundary is therefore also a cancellation point.
    """

    def say(name: Stage, **info) -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        if stage is not None:
            stage(name, **info)

    return say
