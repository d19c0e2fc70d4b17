"""The source viewer: one chunk in its document, the verified quotation highlighted (the answer phrase in it
marked more strongly), with deep_expand navigation.

It reads through the :class:`~localreason.session.Session` passed to it. Failures go to the App as
:class:`~localreason.tui.screens.error.ErrorReported` messages; Escape or q dismisses it.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState

from ...errors import LocalReasonError
from ...types import LEVEL_NAMES
from .error import ErrorReported

DIRECTION_LABELS = {"up": "the enclosing section", "down": "the first passage inside",
                    "previous": "the previous passage", "next": "the next passage",
                    "surrounding": "the passages around"}  # fmt: skip
"""What each of types.DIRECTIONS moves to, in the viewer's messages (tests/test_tui.py checks it names them all)."""
QUOTE_STYLE = "reverse bold"
"""The verified quotation."""
PHRASE_STYLE = "bold underline yellow"
"""The answer phrase, on top of QUOTE_STYLE: reversed, a yellow background, underlined."""
RECOGNIZED_WHERE = "⚠ recognised text (a scanned page): a letter may be misread"
"""Beside a passage read by text recognition."""
HOW = {"cited": "cited passage", "previous": "previous", "next": "next", "up": "up", "down": "down",
       "surrounding": "around"}  # fmt: skip


class SourceScreen(Screen):
    """One chunk in its document, the verified quotation highlighted, with deep_expand navigation."""

    BINDINGS = [
        Binding("escape,q", "close", "Back"),
        Binding("p,left", "move('previous')", "Previous"),
        Binding("n,right", "move('next')", "Next"),
        Binding("u", "move('up')", "Up"),
        Binding("d", "move('down')", "Down"),
        Binding("s", "move('surrounding')", "Around"),
        Binding("c", "move('cited')", "Cited", show=False),
    ]

    def __init__(self, session, chunk_id: str, *, quote: tuple[int, int] | None = None,
                 phrase: tuple[int, int] | None = None, title: str = "") -> None:  # fmt: skip
        super().__init__()
        self.session = session
        self.cited = chunk_id
        self.quote = quote
        """Document character offsets of the verified quotation, highlighted wherever it is in view."""
        self.phrase = phrase if quote and phrase and quote[0] <= phrase[0] < phrase[1] <= quote[1] else None
        """Document character offsets of the answer phrase inside the quotation, marked with it (or None)."""
        self.heading = title
        self.current = chunk_id
        """The chunk in focus: the cited one until a move has been painted."""
        self._moves = 0
        """Counts moves (keys pressed, and the first load)."""
        self._painted = 0
        """The move last painted: a move that ends after a newer one was painted is not painted (it would
        show the older place last); one that ends while a newer one is still on its way is, since the
        newer one may find nothing to move to."""

    def compose(self) -> ComposeResult:
        with Vertical(id="viewer"):
            yield Static(id="crumbs")
            yield Static(id="where")
            with VerticalScroll(id="source-scroll"):
                yield Static(id="source-text")
        yield Footer()

    def on_mount(self) -> None:
        self.action_move("cited")

    def action_close(self) -> None:
        self.dismiss()

    def action_move(self, direction: str) -> None:
        self._moves += 1
        if direction == "cited":
            self.show([self.cited], self.cited, "cited", self._moves)
            return
        self.expand(self.current, direction, self._moves)

    def _ui(self, fn, *args, **kwargs):
        """Run ``fn`` on the UI thread from a worker; a no-op once this viewer is closed (a passage that loads after
        Escape has nowhere to go: off the screen stack at once, before Textual detaches it) or the app is."""
        return self.app.ui(lambda: fn(*args, **kwargs) if self in self.app.screen_stack else None)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """This screen's workers report to it; an exception one did not handle goes on to the App."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.post_message(ErrorReported(event.worker.error, unexpected=True))

    # ------------------------------------------------------------ workers

    @work(thread=True, exclusive=True, group="viewer", exit_on_error=False)
    def expand(self, chunk_id: str, direction: str, request: int) -> None:
        try:
            result = self.session.service.deep_expand(chunk_id, direction, window=2)
        except LocalReasonError as exc:
            self.post_message(ErrorReported(exc))
            return
        if not result.items:
            where = "the top of the document" if result.document else "nothing there"
            msg = result.reason or f"There is no {DIRECTION_LABELS[direction].removeprefix('the ')}: {where}."
            self._ui(self.notify, msg, title="Can't move", severity="warning")
            return
        ids = [h.chunk_id for h in result.items]
        focus = ids[len(ids) // 2] if direction == "surrounding" else ids[0]
        if direction == "surrounding":
            ids = list(dict.fromkeys([*ids[:len(ids) // 2], chunk_id, *ids[len(ids) // 2:]]))
            focus = chunk_id
        self._ui(self.show, ids, focus, direction, request)

    @work(thread=True, exclusive=True, group="viewer-load", exit_on_error=False)
    def show(self, ids: list[str], focus: str, how: str, request: int) -> None:
        try:
            with self.session.service.reading() as lib:
                chunks = [lib.chunk(i) for i in ids]
                doc = lib.document(chunks[0].document_id)
        except LocalReasonError as exc:
            self.post_message(ErrorReported(exc))
            return
        self._ui(self._paint, chunks, doc, focus, how, request)

    # ------------------------------------------------------------ drawing

    def _paint(self, chunks, doc, focus: str, how: str, request: int) -> None:
        if request < self._painted:
            return
        self._painted = request
        self.current = focus
        main = next(c for c in chunks if c.id == focus)
        self.query_one("#crumbs", Static).update(self._crumbs(doc, main))
        self.query_one("#where", Static).update(self._where(main, how))
        self.query_one("#source-text", Static).update(self._body(chunks, focus))
        scroll = self.query_one("#source-scroll", VerticalScroll)
        scroll.scroll_home(animate=False)
        if self.quote:
            self._scroll_to_quote(scroll, chunks)

    @staticmethod
    def _crumbs(doc, main) -> Text:
        crumbs = Text(doc.title, style="bold")
        path = list(main.section_path)
        for part in path[1:] if path and path[0] == doc.title else path:
            crumbs.append("  ›  ", style="dim")
            crumbs.append(part)
        return crumbs

    def _where(self, main, how: str) -> Text:
        page = f" · page {main.page_start}" if main.page_start else ""
        label = HOW.get(how, how)
        return Text.assemble(
            (f"{LEVEL_NAMES[main.level]} {main.index + 1}", "bold"), f" · {main.id}{page} · ",
            (f"({label})", "italic"),
            ("  ▌ quotation" if self.quote and self._has_quote(main) else "", "reverse"),
            (f"  {RECOGNIZED_WHERE}" if getattr(main, "recognized", False) else "", "bold yellow"))  # fmt: skip

    def _body(self, chunks, focus: str) -> Text:
        """The chunks' text, the focused one bright, the quotation and phrase marked."""
        body = Text()
        for c in chunks:
            if body:
                body.append("\n\n")
            part = Text(c.text, style="" if c.id == focus or len(chunks) == 1 else "dim")
            if self.quote and self._has_quote(c):
                for span, style in ((self.quote, QUOTE_STYLE), (self.phrase, PHRASE_STYLE)):
                    if span:
                        part.stylize(style, max(0, span[0] - c.start), min(len(c.text), span[1] - c.start))
            body.append_text(part)
        return body

    def _scroll_to_quote(self, scroll: VerticalScroll, chunks) -> None:
        """Bring the quotation into view: scroll by the share of text that precedes it."""
        focus_chunk = next((c for c in chunks if self._has_quote(c)), None)
        if focus_chunk is None:
            return
        before = sum(len(c.text) + 2 for c in chunks[:chunks.index(focus_chunk)])
        before += max(0, self.quote[0] - focus_chunk.start)
        total = sum(len(c.text) + 2 for c in chunks) or 1
        self.call_after_refresh(lambda: scroll.scroll_to(
            y=max(0, int(scroll.virtual_size.height * before / total) - 2), animate=False))

    def _has_quote(self, chunk) -> bool:
        return bool(self.quote) and chunk.start <= self.quote[0] and self.quote[1] <= chunk.end
