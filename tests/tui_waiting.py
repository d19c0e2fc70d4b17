"""Waiting in the TUI's pilot tests: for what the app shows, never for a time to pass (tests/waiting.py's rule).

Between looks the app runs: its messages, workers and timers. A wait gives up after PATIENCE (a working build
answers in milliseconds, seconds on a loaded machine) and fails saying what never came, and what was on screen.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from localreason.tui.screens import ErrorScreen, SourceScreen

from waiting import PATIENCE


async def settle(pilot, rounds: int = 3) -> None:
    """Let workers finish and their results reach the screen (a worker still running after PATIENCE fails)."""
    for _ in range(rounds):
        waiting = asyncio.ensure_future(pilot.app.workers.wait_for_complete())
        if not (await asyncio.wait({waiting}, timeout=PATIENCE))[0]:
            pytest.fail(f"waited {PATIENCE:g} s for the app's workers to finish: {list(pilot.app.workers)}")
        waiting.result()
        await pilot.pause()


async def until(pilot, condition, what: str, patience: float = PATIENCE, now=None) -> None:
    """Let the app run (its messages, workers and timers) until ``condition()`` holds; after ``patience`` seconds
    fail saying ``what`` never happened, and what ``now()`` says was there instead (tests/waiting.py's rule)."""
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() >= deadline:
            instead = f"; instead: {now()}" if now is not None else ""
            pytest.fail(f"waited {patience:g} s for {what}; it never happened{instead}")
        await pilot.pause(0.01)


async def wait_for_screen(pilot, kind, ready: str = "") -> None:
    """Until a screen of ``kind`` is on top and, when ``ready`` names a selector, has composed a widget matching it
    (without waiting on workers, one of which failed). A pushed screen is the app's screen before its children
    are mounted: under load a query straight after the push found nothing."""

    def shown() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, kind) and (not ready or bool(screen.query(ready)))

    await until(pilot, shown, f"the {kind.__name__}" + (f" with {ready}" if ready else ""),
                now=lambda: on_screen(pilot.app))  # fmt: skip


async def closed(pilot, kind) -> None:
    """Until no screen of ``kind`` is on top any more."""
    await until(pilot, lambda: not isinstance(pilot.app.screen, kind), f"the {kind.__name__} to close")


def on_screen(app) -> str:
    """What is on top, for a failure's message: the screen, and the viewer's place or the error dialog's message."""
    screen, name = app.screen, type(app.screen).__name__
    for selector in ("#where", "#error-message"):
        if screen.query(selector):
            return f"{name}: {screen.query_one(selector).render()}"
    return name


async def loaded(pilot) -> None:
    """Until the library tree has loaded (the status line then counts the library), and what it started settles."""
    await until(pilot, lambda: pilot.app.library_size is not None, "the library tree to load")
    await settle(pilot)


async def ask(pilot, question: str, patience: float = PATIENCE) -> None:
    """Ask ``question`` in the question box and wait until it has ended: answered, failed or cancelled (the session
    records every question in its history, and the app is no longer busy), and its answer is drawn."""
    app = pilot.app
    asked = len(app.session.history)
    app.query_one("#ask").value = question
    app.query_one("#ask").focus()
    await pilot.press("enter")
    await until(pilot, lambda: len(app.session.history) > asked and app.busy is None,
                f"the question {question!r} to end", patience)  # fmt: skip
    await settle(pilot)


async def first_turn_shown(pilot) -> None:
    """Until the answer the app was started with is drawn (it is shown after the first paint) and the library tree
    has loaded: the whole first screen."""
    app = pilot.app
    await until(pilot, lambda: app.turn is not None and app.library_size is not None, "the first answer to be shown")
    await settle(pilot)  # its rows are drawn in the same step


async def scoped(pilot, kind: str) -> None:
    """Until questions go to a scope of ``kind`` ("collection", "document", "all") and the scope line says so."""
    app = pilot.app
    await until(pilot, lambda: app.session.scope.kind == kind, f"the scope to become a {kind}",
                now=lambda: app.session.scope.kind)  # fmt: skip
    await settle(pilot)


async def searched(pilot, query: str) -> None:
    """Until the search box holds ``query`` and the results for it, the last search, are on screen (the search
    runs once the box has waited SEARCH_DEBOUNCE for another key, however long the machine takes to get there)."""
    app = pilot.app
    box, results = app.query_one("#search"), app.query_one("#results")
    await until(pilot, lambda: box.value == query and app.shown_seq == app.search_seq
                and (results.border_title or "").endswith(f"“{query}”"), f"the results for {query!r}",
                now=lambda: f"the box holds {box.value!r}, the results are {results.border_title!r}")  # fmt: skip
    await settle(pilot)


def where(app) -> str:
    """The source viewer's line saying which passage is in focus and how it got there ("(next)")."""
    return str(app.screen.query_one("#where").render())


async def viewer_shows(pilot, how: str) -> None:
    """Until the source viewer is on top and has painted a passage reached by ``how`` ("(cited passage)",
    "(next)"); an error dialog instead fails at once."""

    def painted() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, ErrorScreen) or (isinstance(screen, SourceScreen) and bool(screen.query("#where"))
                                                   and how in where(pilot.app))  # fmt: skip

    await until(pilot, painted, f"the source viewer to show the {how}", now=lambda: on_screen(pilot.app))
    assert not isinstance(pilot.app.screen, ErrorScreen), on_screen(pilot.app)


def under_click(app, widget) -> bool:
    """Whether a click on ``widget`` (pilot clicks its top left corner) lands on it: it is in view."""
    try:
        at, _ = app.get_widget_at(*widget.region.offset)
    except Exception:  # noqa: BLE001 - nothing there (yet)
        return False
    return at is widget or widget in at.ancestors
