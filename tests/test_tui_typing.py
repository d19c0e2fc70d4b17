"""The TUI while a person types and the library changes (pilot, the real app over a real library, fake models):
text from the keyboard or from documents is shown as written, an answer that lands takes neither the keys nor the
box from them, Ctrl+S saves the answer that was on screen, and the scope and the search results follow the
library. Each test fails on the code before (a helper's reading found them; see docs/history/49)."""

from __future__ import annotations

import asyncio
import threading

from rich.text import Text

from localreason.tui.app import LocalReasonApp
from localreason.tui.screens import ExportScreen

from fakes import FakeGenerator
from test_tui import SIZE, tui_lib  # noqa: F401
from tui_waiting import loaded, settle, until, wait_for_screen
from waiting import PATIENCE


class Held(FakeGenerator):
    """Answers once the test lets it (``go``); ``started`` says the model call has begun."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.go = threading.Event(), threading.Event()

    def complete(self, messages, grammar, max_output, prefix="", cancel=None):
        self.started.set()
        assert self.go.wait(PATIENCE), "the test never let the model answer"
        self.go.clear()
        return super().complete(messages, grammar, max_output, prefix, cancel)


def results_title(app) -> str:
    return Text.from_markup(app.query_one("#results").border_title or "").plain


async def test_square_brackets_typed_or_in_a_title_are_shown_as_written(tui_lib):
    """"x[/]" typed in the search box was read as markup by the status line: the app ended with a traceback."""
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        app.search_debounce = 0.001
        await pilot.press("f3")
        app.query_one("#search").value = "x[/]"
        await until(pilot, lambda: results_title(app).endswith("“x[/]”"), "the results for x[/]",
                    now=lambda: results_title(app))  # fmt: skip
        assert not app.closed
        app.set_status("Removed [Draft] Report.")
        assert str(app.query_one("#status").render()) == "Removed [Draft] Report."
        app.notify("Removed [Draft] Report.")
        await until(pilot, lambda: any("[Draft]" in n.message for n in app._notifications), "the notice")
        assert all(not n.markup for n in app._notifications if "[Draft]" in n.message)


async def test_an_answer_that_lands_takes_neither_the_keys_nor_the_box(tui_lib):
    """The next question typed while one ran was emptied when the answer landed; keys typed in the search box went
    to the hidden question box, where Enter would have asked them."""
    gen = tui_lib._generator = Held()
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        box = app.query_one("#ask")
        for step in ("the next question", "the search box"):
            answered = len(app.session.history)
            box.value = "How long is the router warranty?"
            box.focus()
            await pilot.press("enter")
            await until(pilot, gen.started.is_set, "the model to start")
            gen.started.clear()
            if step == "the next question":
                box.value = "And who repairs it?"
                typing = box
            else:
                await pilot.press("f3")
                typing = app.query_one("#search")
                typing.value = "war"
                typing.focus()
            gen.go.set()
            await until(pilot, lambda: len(app.session.history) > answered and app.busy is None, "the answer")
            await settle(pilot)
            assert app.focused is typing, (step, app.focused)
            assert typing.value == ("And who repairs it?" if typing is box else "war"), step
            await pilot.press("escape")  # back to asking


async def test_ctrl_s_saves_the_answer_that_was_on_screen(tui_lib, tmp_path):
    """A second answer landing while the save dialog was open was saved under the first one's name."""
    gen = tui_lib._generator = Held()
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        box = app.query_one("#ask")
        gen.go.set()
        box.value = "How long is the router warranty?"
        box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.turn is not None and app.busy is None, "the first answer")
        box.value = "Where did the Black Death originate?"
        box.focus()
        await pilot.press("enter")
        await until(pilot, gen.started.is_set, "the second question's model call")
        await pilot.press("ctrl+s")
        await wait_for_screen(pilot, ExportScreen)
        app.screen.query_one("#export-path").value = str(tmp_path / "saved.md")
        gen.go.set()
        await until(pilot, lambda: app.busy is None and "Black Death" in app.turn.question, "the second answer")
        await pilot.press("enter")
        await until(pilot, (tmp_path / "saved.md").exists, "the answer to be saved")
        saved = (tmp_path / "saved.md").read_text()
        assert "router warranty" in saved and "Black Death" not in saved.splitlines()[0], saved[:200]


async def test_a_scope_whose_document_is_removed_is_cleared_and_said(tui_lib):
    """Kept, it sent every question to a document no longer there: "no evidence", as if it did not hold it."""
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        [doc] = tui_lib.documents("notes")
        app.scope_to("document", doc.id)
        await until(pilot, lambda: app.session.scope.kind == "document", "the scope to be the document")
        await asyncio.to_thread(app.session.service.remove, doc.id)
        app.load_tree()
        await until(pilot, lambda: app.session.scope.kind == "all", "the scope to be cleared")
        assert any("no longer in the library" in n.message for n in app._notifications)


async def test_search_results_follow_a_change_of_scope(tui_lib):
    """The results of the scope before stayed under the new scope line."""
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        app.search_debounce = 0.001
        await pilot.press("f3")
        app.query_one("#search").value = "router warranty"
        results = app.query_one("#results")

        def documents_shown() -> set[str]:
            return {item.hit[1] for item in results.children if getattr(item, "hit", ("",))[0] == "passage"}

        await until(pilot, lambda: app.shown_seq == app.search_seq and documents_shown(), "the first results")
        [router] = tui_lib.documents("notes")
        assert router.id in {tui_lib.chunk(c).document_id for c in documents_shown()}
        samples = next(c for c in tui_lib.collections() if c.name == "samples")
        seq = app.search_seq
        app.scope_to("collection", samples.id)
        await until(pilot, lambda: app.search_seq > seq and app.shown_seq == app.search_seq, "the search again")
        await settle(pilot)
        assert router.id not in {tui_lib.chunk(c).document_id for c in documents_shown()}


async def test_an_id_opened_from_the_search_box_is_not_searched_for(tui_lib):
    """Opening a document's id from the search box scopes to it; the scope's change searched the id's text again."""
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        [doc] = tui_lib.documents("notes")
        await pilot.press("f3")
        app.query_one("#search").value = doc.id
        await pilot.press("enter")
        await until(pilot, lambda: app.session.scope.kind == "document", "the id to be opened")
        await settle(pilot)
        assert doc.id not in results_title(app) and app.shown_seq == 0, results_title(app)


async def test_clearing_the_search_box_leaves_no_search_said_to_be_running(tui_lib):
    """The box emptied while a search ran: its result is dropped (stale), and the status line went on saying
    "Searching for ..." for good."""
    app = LocalReasonApp(tui_lib)
    real, started, go_on = app.session.search, threading.Event(), threading.Event()

    def held(query, **kwargs):
        started.set()
        assert go_on.wait(PATIENCE), "the test never let the search go on"
        return real(query, **kwargs)

    app.session.search = held
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        app.search_debounce = 0.001
        await pilot.press("f3")
        app.query_one("#search").value = "router warranty"
        await until(pilot, started.is_set, "the search to start")
        app.query_one("#search").value = ""
        go_on.set()
        await settle(pilot)
        await until(pilot, lambda: "Searching for" not in str(app.query_one("#status").render()),
                    "the status line to stop saying a search runs", patience=5)  # fmt: skip
