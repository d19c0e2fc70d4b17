"""The Textual app: library tree, ask, answer with selectable citations, search, library management.

Every slow call (model load, search, generation, ingestion) runs in a thread worker
through :class:`~localreason.session.Session`; the UI thread only draws. Models load
on first use, so the first screen appears before torch or llama.cpp are imported.

The widgets (``widgets/``) and screens (``screens/``) report to the App with Textual messages
and ``dismiss`` results; the App holds the layout, the keys, the workers and what happens when
they finish. A worker that fails with an exception it did not handle shows the error dialog
(:meth:`LocalReasonApp.on_worker_state_changed`); the app carries on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import itertools
import os
import threading
import time
import traceback
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Input, ProgressBar, Static
from textual.worker import Worker, WorkerState

from ..config import TUI_TRACE_ENV
from ..errors import Cancelled, LocalReasonError
from ..session import Session, Turn, default_export_name, elapsed_text
from ..stages import Stage
from ..text import counted
from .library_work import LibraryWork
from .screens import ErrorReported, ErrorScreen, ExportScreen, HelpScreen, HistoryScreen, SourceScreen
from .unread import Unread
from .widgets import AnswerView, LibraryTree, SearchResults

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SEARCH_DEBOUNCE = 0.25
UI_WAIT_STEP = 0.25
"""Seconds a worker's hand-over to the UI thread waits before it looks whether the app's loop still turns."""


def handed_over(app: App, call):
    """``call()`` run on ``app``'s loop from another thread, and what it returns (awaited if it is awaitable); None
    from the app's own thread or once the loop has stopped.

    What ``call_from_thread`` does, but its wait is not endless: a call that lands after the loop's last turn is
    never run, and the worker (a watch the quitting app then waits for) would wait for it for ever."""
    loop = app._loop  # (Textual's own loop and thread, which call_from_thread reads too)
    if loop is None or app._thread_id == threading.get_ident():
        return None

    async def run():
        with app._context():
            result = call()
            return await result if inspect.isawaitable(result) else result

    try:
        future = asyncio.run_coroutine_threadsafe(run(), loop)
    except RuntimeError:  # the loop is closed
        return None
    while True:
        try:
            return future.result(UI_WAIT_STEP)
        except concurrent.futures.CancelledError:  # the app cancelled its tasks as it ended
            return None
        except concurrent.futures.TimeoutError:
            if not loop.is_running():  # ended: the call will not be run (cancelled, it never is)
                future.cancel()
                return None


class LocalReasonApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "localreason"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("f1", "help", "Help"),
        Binding("question_mark", "help", "Help", show=False),
        Binding("f2", "mode('ask')", "Ask"),
        Binding("f3", "mode('search')", "Search"),
        Binding("f4", "history", "History"),
        Binding("f5", "sync", "Sync"),
        Binding("f6", "add", "Add"),
        Binding("ctrl+s", "export", "Save"),
        Binding("ctrl+l", "focus_library", "Library", show=False),
        Binding("ctrl+x", "clear_scope", "Clear scope", show=False),
        Binding("escape", "cancel", "Cancel", show=False),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, service, *, first_turn: Turn | None = None, trace: str | None = None,
                 max_tokens: int | None = None, watch: bool = False,
                 watch_options: dict | None = None) -> None:  # fmt: skip
        super().__init__()
        self.watch = watch
        """Whether the library's folders are followed while the app runs (the tui_watch setting)."""
        self.watch_options = watch_options or {}
        """The Watcher's keyword arguments (tests pass a clock they move)."""
        self.watcher = None
        self.session = Session(service, max_tokens=max_tokens)
        library = self.session.library
        self.unread = Unread(library.home)
        """The files not read (skipped, failed) that reports told of, shown in the tree; failures said once."""
        library.notice = lambda message: self.ui(self.set_status, message)  # a write waiting for another program
        self.first_turn = first_turn
        self.turn: Turn | None = None
        self.mode = "ask"
        self.busy: str | None = None
        """``ask`` while a question runs (one at a time)."""
        self.cancel_event = threading.Event()
        """Set by Escape to stop the running question."""
        self.library_work = LibraryWork(self)
        """Adding, re-syncing and removing (one at a time, in a worker; Escape stops it after the current file)."""
        self.started = 0.0
        self.stage_text = ""
        self.stages_seen: list[str] = []
        self.library_size: tuple[int, int] | None = None
        """(documents, passages), once the tree has loaded."""
        self._tree_reads = itertools.count(1)
        self._tree_shown = 0
        """The newest tree load on screen, by the order the loads read the library in: an older load that ends
        later (a thread cannot be cancelled) is dropped instead of painting the library as it was."""
        self.search_seq = 0
        self.shown_seq = 0
        """The search whose results are on screen (equal to search_seq once the last one is shown)."""
        self.search_debounce = SEARCH_DEBOUNCE
        """Seconds the search box waits after a key for the next one before it searches: a burst of keys runs one
        search (a test makes it long, so that a burst lands inside it however slow the machine)."""
        self._search_timer = None
        self._tick = None
        self._trace_path = trace or os.environ.get(TUI_TRACE_ENV)
        self.sub_title = str(library.home)

    # ------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="library-pane"):
                yield LibraryTree("Library", id="library")
            with Vertical(id="main"):
                yield Static(id="scope")
                ask = Input(placeholder="Ask a question and press Enter", id="ask", select_on_focus=False)
                yield ask
                yield Input(placeholder="Search passages as you type", id="search", classes="hidden")
                yield AnswerView(id="answer", type_into=ask)
                yield SearchResults(id="results", classes="hidden")
                with Horizontal(id="statusbar"):
                    yield Static(id="status")
                    yield Static(id="watch-state", classes="hidden")
                    yield ProgressBar(id="progress", show_eta=False, classes="hidden")
        yield Footer()

    def on_mount(self) -> None:
        self.main("#library-pane").border_title = "Library"
        self.show_scope()
        self.show_ready()
        self.main("#ask", Input).focus()
        self.call_after_refresh(self.trace, "first-paint")
        self.load_tree()
        if self.first_turn is not None:
            self.session.history.append(self.first_turn)
            self.call_after_refresh(self.show_turn, self.first_turn)
        if self.watch:
            self.start_watching()

    MAIN_SCREEN_ACTIONS = {"mode", "history", "sync", "add", "export", "focus_library", "clear_scope", "help"}

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Main-screen keys are off (and out of the footer) while the viewer or a dialog is on top."""
        if action in self.MAIN_SCREEN_ACTIONS and len(self.screen_stack) > 1:
            return False
        return True

    def ui(self, fn, *args, **kwargs):
        """Run ``fn`` on the UI thread from a worker and return what it returns; a no-op once the app has closed (or
        is closing: its screens gone, a worker's late result has nowhere to go). See ``handed_over``."""
        return handed_over(self, lambda: None if self.closed else fn(*args, **kwargs))

    @property
    def closed(self) -> bool:
        """Whether the app's screens are gone (it is closing, or has closed): a timer or a worker's result that
        comes now has nothing to show (the main screen's widgets cannot be found)."""
        return not self.screen_stack

    async def action_quit(self) -> None:
        for timer in (self._search_timer, self._tick):
            if timer is not None:
                timer.stop()
        self.cancel_event.set()  # a running question or ingest stops instead of finishing unseen
        self.library_work.cancel.set()
        self.stop_watching(wait=False)  # its thread may be waiting for this one: joined once the app has ended
        self.exit()

    def main(self, selector, expect=None):
        """A widget of the main screen, whichever screen is on top (dialogs, the source viewer)."""
        screen = self.screen_stack[0] if self.screen_stack else self.screen
        return screen.query_one(selector, expect) if expect else screen.query_one(selector)

    def trace(self, event: str) -> None:
        """For bench/speed/tui.py: when things reached the screen (wall clock)."""
        if self._trace_path:
            with open(self._trace_path, "a", encoding="utf-8") as fh:
                fh.write(f"{event} {time.time():.6f}\n")

    # ------------------------------------------------------------ library tree and scope

    @work(thread=True, exclusive=True, group="tree", exit_on_error=False)
    def load_tree(self) -> None:
        try:
            with self.session.service.reading() as lib:
                read = next(self._tree_reads)  # (under the read lock: no write lands between two loads' numbers)
                cols = lib.collections()
                docs = {c.id: lib.documents(c.id) for c in cols}
        except LocalReasonError as exc:
            self.ui(self.show_error, exc)
            return
        self.ui(self._tree_loaded, read, cols, docs, self.unread.snapshot())

    def _tree_loaded(self, read: int, cols, docs, unread) -> None:
        if read < self._tree_shown:
            return
        self._tree_shown = read
        self._scope_still_there(cols, docs)
        self.main(LibraryTree).fill(cols, docs, unread)
        self.library_size = (sum(c.document_count for c in cols), sum(c.chunk_count for c in cols))
        if not self.busy:
            self.show_ready()

    def _scope_still_there(self, cols, docs) -> None:
        """A scope whose collection or document is gone (removed, its file deleted under a watch) is cleared, and
        said: kept, every question found no evidence in it, as if the document did not hold the answer."""
        scope = self.session.scope
        there = {c.id for c in cols} | {d.id for ds in docs.values() for d in ds}
        if scope.kind != "all" and scope.id not in there:
            self.action_clear_scope()
            self.notify(f"{scope.label} is no longer in the library: questions go to the whole library again.",
                        title="Scope cleared", severity="warning")  # fmt: skip

    @on(LibraryTree.ScopeRequested)
    def _scope_requested(self, event: LibraryTree.ScopeRequested) -> None:
        self.scope_to(event.kind, event.id)

    @on(LibraryTree.ClearScopeRequested)
    def _clear_scope_requested(self) -> None:
        self.action_clear_scope()

    @work(thread=True, group="scope", exit_on_error=False)
    def scope_to(self, kind: str, id_: str) -> None:
        try:
            self.session.scope_to(kind, id_)
        except LocalReasonError as exc:
            self.ui(self.show_error, exc)
            return
        self.ui(self.show_scope)

    def action_clear_scope(self) -> None:
        self.session.clear_scope()
        self.show_scope()

    def show_scope(self) -> None:
        self._search_again()
        scope = self.session.scope
        text = Text("Scope: ", style="bold")
        if scope.kind == "all":
            text.append("the whole library")
            text.append(" · Enter on the tree narrows it", style="dim")
        else:
            text.append(f"{scope.kind} ", style="dim")
            text.append(scope.label, style="bold reverse")
            text.append(" · Ctrl+X clears", style="dim")
        self.main("#scope", Static).update(text)
        self.main("#ask", Input).placeholder = (
            "Ask a question and press Enter" if scope.kind == "all" else f"Ask about {scope.label} and press Enter")

    def action_focus_library(self) -> None:
        self.main(LibraryTree).focus()

    def select_in_tree(self, id_: str) -> None:
        self.main(LibraryTree).select_id(id_)

    # ------------------------------------------------------------ modes

    def action_mode(self, mode: str) -> None:
        self.mode = mode
        ask = mode == "ask"
        self.main("#ask").set_class(not ask, "hidden")
        self.main("#answer").set_class(not ask, "hidden")
        self.main("#search").set_class(ask, "hidden")
        self.main("#results").set_class(ask, "hidden")
        self.main("#ask" if ask else "#search", Input).focus()

    # ------------------------------------------------------------ ask

    @on(Input.Submitted, "#ask")
    def _submitted(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question:
            self.notify("Type a question first.", severity="warning")
            return
        if self.busy == "ask":
            self.notify("A question is already running; Escape cancels it.", severity="warning")
            return
        self.trace("enter")
        self.busy = "ask"
        self.cancel_event = threading.Event()
        self.started = time.perf_counter()
        self.stages_seen = []
        self.set_stage(Stage.WAITING if self.session.service.lock.writing else Stage.SEARCHING)
        self.call_after_refresh(self.trace, "progress")
        self._tick = self.set_interval(0.1, self._refresh_stage)
        self.run_ask(question, self.cancel_event)

    @work(thread=True, group="ask", exit_on_error=False)
    def run_ask(self, question: str, cancel: threading.Event) -> None:
        def stage(name: str, **info) -> None:
            self.ui(self.set_stage, name, **info)

        try:
            turn = self.session.ask(question, stage=stage, cancel=cancel)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a message, and the question ends
            self.ui(self.ask_done, None, exc)
        else:
            self.ui(self.ask_done, turn, None)

    def set_stage(self, stage: Stage, **info) -> None:
        self.stages_seen.append(stage)
        self.stage_text = Stage(stage).describe(**info)
        self._refresh_stage()

    def _refresh_stage(self) -> None:
        if self.busy != "ask" or self.closed:  # the app closing: its tick may come once more
            return
        spent = time.perf_counter() - self.started
        spin = SPINNER[int(spent * 10) % len(SPINNER)]
        cancelling = self.cancel_event.is_set()
        self.set_status(Text.assemble((f"{spin} ", "bold"), "Cancelling" if cancelling else self.stage_text,
                                      f"… {elapsed_text(spent)}", ("" if cancelling else "   Esc cancels", "dim")))

    def ask_done(self, turn: Turn | None, error: Exception | None) -> None:
        spent = time.perf_counter() - self.started
        self.trace("done")
        self.busy = None
        if self._tick is not None:
            self._tick.stop()
        if isinstance(error, Cancelled):
            self.set_status(f"Cancelled after {elapsed_text(spent)}.")
            self.notify("The question was cancelled.")
            return
        if error is not None:
            self.set_status(f"The question failed after {elapsed_text(spent)}.")
            self.show_error(error)
            return
        assert turn is not None
        self.set_status(f"Answered in {elapsed_text(spent)}.")
        box = self.main("#ask", Input)
        if box.value.strip() == turn.question.strip():  # (not the next question, typed while this one ran)
            box.value = ""
        self.call_later(self.show_turn, turn)

    def action_cancel(self) -> None:
        if self.busy == "ask" and not self.cancel_event.is_set():
            self.cancel_event.set()
            self._refresh_stage()
        elif self.library_work.busy and not self.library_work.cancel.is_set():
            self.library_work.cancel.set()
            self.set_status("Cancelling after the current file…")
        elif self.mode == "search":
            self.action_mode("ask")

    # ------------------------------------------------------------ the answer

    async def show_turn(self, turn: Turn) -> None:
        self.turn = turn
        await self.main(AnswerView).show_turn(turn)

    @on(AnswerView.OpenReference)
    def _open_reference(self, event: AnswerView.OpenReference) -> None:
        ref = event.reference
        self.push_screen(SourceScreen(self.session, ref.chunk_id, quote=(ref.start, ref.end), phrase=event.phrase,
                                      title=event.title))  # fmt: skip

    # ------------------------------------------------------------ search mode

    @on(Input.Changed, "#search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.search_seq += 1
        seq, query = self.search_seq, event.value.strip()
        if self._search_timer is not None:
            self._search_timer.stop()
        if not query:
            self.main(SearchResults).clear()
            if not self.busy:  # (a search that was running is dropped: its "Searching for ..." would stay)
                self.show_ready()
            return
        self._search_timer = self.set_timer(self.search_debounce, lambda: self._start_search(query, seq))

    def _search_again(self) -> None:
        """The scope changed: the results on screen (or a search running) are of the scope before; the box's text
        is searched again in the new one."""
        box = self.main("#search", Input)
        query = box.value.strip()
        if query and self.mode == "search" and not (query[:4] in ("col_", "doc_", "chk_") and " " not in query):
            self.search_seq += 1  # (not an id opened from the box, not while the box is hidden)
            self._start_search(query, self.search_seq)

    def _start_search(self, query: str, seq: int) -> None:
        if seq != self.search_seq or self.closed:  # typed on, an id opened, or the app closing
            return
        if not self.busy:
            self.set_status(f"Searching for “{query}”…")
        self.run_search(query, seq)

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if value[:4] in ("col_", "doc_", "chk_") and " " not in value:
            self.search_seq += 1  # no search for the id's text is due any more
            self.open_id(value)  # an id typed or pasted: go straight to it
            return
        self.main(SearchResults).focus_first()

    @work(thread=True, group="search", exit_on_error=False)
    def open_id(self, value: str) -> None:
        try:
            with self.session.service.reading() as lib:
                item = lib.get(value)
        except Exception as exc:  # noqa: BLE001 - a bad or unknown id is a message
            self.ui(self.show_error, exc)
            return
        if value.startswith("chk_"):
            title = self.session.service.get(item.document_id).title
            self.ui(self.push_screen, SourceScreen(self.session, item.id, title=title))
        else:
            kind = "collection" if value.startswith("col_") else "document"
            self.scope_to(kind, item.id)
            self.ui(self.select_in_tree, item.id)

    @work(thread=True, group="search", exit_on_error=False)
    def run_search(self, query: str, seq: int) -> None:
        """Search in a thread; anything but a LocalReasonError reaches the catch-all (the error dialog)."""
        if seq != self.search_seq:
            return  # typed on; a newer search is due
        try:
            passages, documents = self.session.search(query)
        except LocalReasonError as exc:
            self.ui(self.show_results, seq, query, [], [], exc)
            return
        self.ui(self.show_results, seq, query, passages, documents, None)

    async def show_results(self, seq: int, query: str, passages, documents, error) -> None:
        if seq != self.search_seq:
            return  # a stale query: its results are dropped
        self.shown_seq = seq
        await self.main(SearchResults).show(query, passages, documents, error)
        if not self.busy:
            self.set_status(f"{counted(len(passages), 'passage')}. Tab: to the list, Enter: open.")

    @on(SearchResults.Chosen)
    def _result_chosen(self, event: SearchResults.Chosen) -> None:
        if event.kind == "passage":
            self.push_screen(SourceScreen(self.session, event.id, title=event.title))
        else:
            self.scope_to("document", event.id)
            self.select_in_tree(event.id)
            self.notify(f"Questions now go to {event.title}.", title="Scoped")

    # ------------------------------------------------------------ library management (library_work.py)

    def action_add(self) -> None:
        self.library_work.add()

    def action_sync(self) -> None:
        self.library_work.sync()

    @on(LibraryTree.RemoveRequested)
    def _remove_requested(self, event: LibraryTree.RemoveRequested) -> None:
        self.library_work.confirm_remove(event.kind, event.id, event.label)

    # ------------------------------------------------------------ following the folders

    def start_watching(self) -> None:
        """Follow the library's folders while the app runs: the state in the status line, each document added,
        updated or removed as a notification, a failure as a warning once per change of its file, the files
        not read in the tree (the tree reloaded when either changed)."""
        from ..watch import BackgroundWatch, Listener

        def report(report, catch_up: bool) -> None:  # on the watch's thread: the memory of failures said is a file
            self.ui(self._watch_applied, report, *self.unread.take(report))

        listener = Listener(notice=lambda message: self.ui(self.notify, message, title="Watching", timeout=10),
                            report=report, state=lambda state: self.ui(self._show_watch_state, state))  # fmt: skip
        self.watcher = BackgroundWatch(self.session.service, listener, **self.watch_options).start()

    def stop_watching(self, wait: bool = True) -> None:
        if self.watcher is not None:
            self.watcher.stop(timeout=30.0 if wait else 0.0)

    def _show_watch_state(self, state) -> None:
        widget = self.main("#watch-state", Static)
        widget.update(Text(state.describe(), style="dim"))
        widget.remove_class("hidden")

    def _watch_applied(self, report, failures, unread_changed: bool) -> None:
        """What a watch's write did: documents added, updated or removed are said; ``failures`` (those not said
        before) are warned of; a file skipped is no change, and shows in the tree only."""
        written = [f for f in report.files if f.status in ("added", "updated", "removed")]
        if written or unread_changed:
            self.load_tree()
        if written:
            shown = _listed(written, lambda f: f"{f.status} {Path(f.path).name}")
            self.notify(shown[0].upper() + shown[1:], title="Changes applied")
        if failures:
            self.notify("Could not read " + _listed(failures, lambda f: f"{Path(f.path).name}: {f.reason}")
                        + "\nThe library tree lists the files not read under their collection.",
                        title="Not read", severity="warning", timeout=10)  # fmt: skip

    # ------------------------------------------------------------ history, export, help

    def action_history(self) -> None:
        self.push_screen(HistoryScreen(self.session.history), self._history_chosen)

    def _history_chosen(self, index) -> None:
        if index is None:
            return
        turn = self.session.history[index]
        if turn.answer is None:
            self.notify(f"That question failed: {turn.error}", severity="warning")
            return
        self.action_mode("ask")
        self.call_later(self.show_turn, turn)

    def action_export(self) -> None:
        if self.turn is None or self.turn.answer is None:
            self.notify("Ask a question first; then Ctrl+S saves its answer.", severity="warning")
            return
        turn = self.turn  # (the answer on screen now: another may land while the dialog is open)
        self.push_screen(ExportScreen(str(Path.cwd() / default_export_name(turn))),
                         lambda path: self._export_to(path, turn))  # fmt: skip

    def _export_to(self, path, turn: Turn) -> None:
        if not path:
            return
        try:
            target = self.session.export(turn, path)
        except LocalReasonError as exc:
            self.show_error(exc)
        except OSError as exc:
            self.show_error(LocalReasonError(f"Could not write {path}: {exc.strerror or exc}.",
                                             hint="Choose a folder you can write to."))  # fmt: skip
        else:
            self.notify(f"Saved to {target}", title="Exported")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    # ------------------------------------------------------------ status and errors

    def set_status(self, text) -> None:
        """The status line; plain text is shown as written (a question or a title may hold "[/]", which as markup
        ended the app)."""
        self.main("#status", Static).update(Text(text) if isinstance(text, str) else text)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:  # fmt: skip
        """Textual's notify, never reading its text as markup (every call, a screen's and a widget's too, comes
        here): titles, file names and questions hold square brackets ("Removed [Draft] Report." lost a word)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def show_ready(self) -> None:
        docs, passages = self.library_size or (0, 0)
        size = f" {counted(docs, 'document')}, {counted(passages, 'passage')}." if self.library_size else ""
        self.set_status("Ready." + size)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The catch-all: a worker that ended in an exception it did not handle shows it (traceback logged).

        Every worker has ``exit_on_error=False``, so such a failure no longer closes the app.
        Screens' own workers report to their screen, which forwards the failure as ErrorReported.
        """
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.show_error(event.worker.error, log_traceback=True)

    @on(ErrorReported)
    def _error_reported(self, event: ErrorReported) -> None:
        self.show_error(event.error, log_traceback=event.unexpected)

    def show_error(self, exc: BaseException, *, log_traceback: bool = False) -> None:
        """The error dialog for ``exc``: a LocalReasonError's title, message and hint; anything else as
        an unexpected error. The traceback of the latter (and with ``log_traceback``, of any) goes to logs/tui.log."""
        expected = isinstance(exc, LocalReasonError)
        log = self.log_exception(exc) if log_traceback or not expected else None
        if expected:
            self.push_screen(ErrorScreen(exc.title, exc.message, exc.hint or ""))
            return
        self.push_screen(ErrorScreen("Unexpected error", f"{exc.__class__.__name__}: {exc}",
                                     f"The details are in {log}. Please report it; your library is unchanged."))  # fmt: skip

    def log_exception(self, exc: BaseException) -> Path:
        """Append ``exc``'s traceback to logs/tui.log in the library's home (best effort); returns that path."""
        log = self.session.library.home / "logs" / "tui.log"
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            with log.open("a", encoding="utf-8") as fh:
                fh.write("".join(traceback.format_exception(exc)))
        except OSError:
            pass
        return log


def _listed(files, line) -> str:
    """The first three files as ``line`` says each, and how many more."""
    return "; ".join(line(f) for f in files[:3]) + (f"; and {len(files) - 3} more" if len(files) > 3 else "")
