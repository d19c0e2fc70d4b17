"""The TUI as it closes (pilot, the real app over a real library, fake models): a timer or a worker's result that
comes after the screens are gone does nothing. A search timer firing while the app closed once raised
ScreenStackError out of it (a test failed now and then under load)."""

from __future__ import annotations

import asyncio
import threading

from localreason.tui.app import LocalReasonApp
from localreason.tui.screens import ErrorScreen, SourceScreen

from test_tui import SIZE, tui_lib  # noqa: F401
from tui_waiting import ask, closed, until
from waiting import PATIENCE


async def test_a_search_or_an_answers_tick_due_as_the_app_closes_does_nothing(tui_lib):
    """The search box's wait for the next key and a running answer's tick are timers: one that comes while the app
    closes (its screens gone) once raised ScreenStackError out of the app, and a test that typed an id and quit
    failed now and then on a busy machine. Each is stopped on quitting and does nothing once the screens are gone;
    a worker's late result (``ui``) likewise; an id opened with Enter leaves no search of its text due."""
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        app.search_debounce = PATIENCE  # the search is due long after the app has closed
        await pilot.press("f3")
        app.query_one("#search").value = "plague"
        due = app.search_seq
        await pilot.pause()
        assert app._search_timer is not None and not app.closed
        app.query_one("#search").value = "chk_00000000000000000000"
        await pilot.pause()
        typed = app.search_seq
        assert typed > due
        await pilot.press("enter")
        assert app.search_seq == typed + 1, "Enter on an id: no search of its text is due"
        shown = []
        await pilot.press("ctrl+q")
    assert app.closed
    app._start_search("plague", app.search_seq)  # the timer, had it come after the screens went
    app.busy, app.started = "ask", 0.0
    app._refresh_stage()
    assert await asyncio.to_thread(app.ui, shown.append, "late") is None and not shown, "a worker's late result"


async def test_a_passage_that_loads_after_the_viewer_closed_is_dropped(tui_lib, monkeypatch):
    """The viewer loads its passage on a worker; closed (q, Escape) before the passage came, the late result has
    no screen to paint on and is dropped: no error, the main screen stays as it is."""
    app = LocalReasonApp(tui_lib)
    held, reached, handed, painted = threading.Event(), threading.Event(), threading.Event(), []
    document, hand = tui_lib.document, SourceScreen._ui

    def handing(self, fn, *args, **kwargs):  # the worker's hand-over to the UI thread, returned
        try:
            return hand(self, fn, *args, **kwargs)
        finally:
            handed.set()

    def slow_document(doc_id):
        if not held.is_set():
            reached.set()
            assert held.wait(PATIENCE), "the test never let the viewer's load go on"
        return document(doc_id)

    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        monkeypatch.setattr(tui_lib, "document", slow_document)
        monkeypatch.setattr(SourceScreen, "_paint", lambda self, *args: painted.append(args))
        monkeypatch.setattr(SourceScreen, "_ui", handing)
        await pilot.press("enter")
        await until(pilot, reached.is_set, "the viewer to start loading its passage")
        await pilot.press("q")
        await closed(pilot, SourceScreen)
        held.set()
        await until(pilot, handed.is_set, "the viewer's load to hand its passage over")
        await pilot.pause()
        assert not painted and not isinstance(app.screen, (ErrorScreen, SourceScreen)), app.screen


async def test_a_library_tree_load_that_ends_after_a_newer_one_does_not_paint_over_it(tui_lib, tmp_path, monkeypatch):
    """Two tree loads overlap (an ingest's end and a removal's, say): a newer one asked for cancels the older, but
    a thread cannot be stopped, and the older one, reaching the screen last, painted the library as it was before
    the change."""
    app = LocalReasonApp(tui_lib)
    held, reached, handed, holder = threading.Event(), threading.Event(), threading.Event(), []
    snapshot, hand = app.unread.snapshot, LocalReasonApp.ui

    def slow_snapshot():  # after the older load has read the library, before it hands the tree over
        if not holder:
            holder.append(threading.current_thread())
            reached.set()
            assert held.wait(PATIENCE), "the test never let the older load go on"
        return snapshot()

    def handing(self, fn, *args, **kwargs):
        try:
            return hand(self, fn, *args, **kwargs)
        finally:
            if holder and threading.current_thread() is holder[0]:
                handed.set()

    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.library_size is not None, "the first tree")
        before = app.library_size
        monkeypatch.setattr(app.unread, "snapshot", slow_snapshot)
        monkeypatch.setattr(LocalReasonApp, "ui", handing)
        app.load_tree()
        await until(pilot, reached.is_set, "the older load to read the library")
        more = tmp_path / "more"
        more.mkdir()
        (more / "pump.md").write_text("# Pump\n\nThe pump hums quietly at night.\n")
        await asyncio.to_thread(app.session.service.ingest, [more], "notes")
        app.load_tree()
        await until(pilot, lambda: app.library_size != before, "the newer load to show the new document")
        after = app.library_size
        assert after[0] == before[0] + 1
        held.set()
        await until(pilot, handed.is_set, "the older load to hand its tree over")
        await pilot.pause()
        assert app.library_size == after, "the older tree painted over the newer one"


def test_a_workers_hand_over_that_lands_after_the_loops_last_turn_returns(tui_lib):
    """A worker's call to the UI thread that comes once the app's loop has stopped is never run: Textual's
    call_from_thread waited for it for ever, and a quitting app that waits for its watch (30 s) hung so long."""
    app = LocalReasonApp(tui_lib)
    app._loop, app._thread_id = asyncio.new_event_loop(), threading.get_ident()  # the app's loop, stopped
    returned, ran = [], []
    worker = threading.Thread(target=lambda: returned.append(app.ui(ran.append, "late")), daemon=True)
    worker.start()
    worker.join(PATIENCE)
    assert not worker.is_alive(), "the hand-over waited for a loop that had stopped"
    app._loop.run_until_complete(asyncio.sleep(0.05))  # the loop turning once more (asyncio.run's last turns)
    app._loop.close()
    assert returned == [None] and not ran, "a call given up on must not run later"
