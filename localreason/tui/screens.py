"""The TUI's secondary screens: source viewer, help, errors, add, confirm, reports, history, export."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Label, ListItem, ListView, Static

from ..errors import LocalReasonError
from ..types import LEVEL_NAMES

# ---------------------------------------------------------------- source viewer

DIRECTIONS = {"up": "the enclosing section", "down": "the first passage inside", "previous": "the previous passage",
              "next": "the next passage", "surrounding": "the passages around"}  # fmt: skip


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

    def __init__(self, session, chunk_id: str, *, quote: tuple[int, int] | None = None, title: str = "") -> None:
        super().__init__()
        self.session = session
        self.cited = chunk_id
        self.quote = quote
        """Document character offsets of the verified quotation, highlighted wherever it is in view."""
        self.heading = title

    def compose(self) -> ComposeResult:
        with Vertical(id="viewer"):
            yield Static(id="crumbs")
            yield Static(id="where")
            with VerticalScroll(id="source-scroll"):
                yield Static(id="source-text")
        yield Footer()

    def on_mount(self) -> None:
        self.show([self.cited], self.cited, "cited")

    def action_close(self) -> None:
        self.app.pop_screen()

    def action_move(self, direction: str) -> None:
        if direction == "cited":
            self.show([self.cited], self.cited, "cited")
            return
        self.expand(self.current, direction)

    @work(thread=True, exclusive=True, group="viewer")
    def expand(self, chunk_id: str, direction: str) -> None:
        lib = self.session.library
        try:
            with self.session.lock.read():
                result = lib.deep_expand(chunk_id, direction, window=2)
        except LocalReasonError as exc:
            self.app.ui(self.app.show_error, exc)
            return
        if not result.items:
            where = "the top of the document" if result.document else "nothing there"
            msg = result.reason or f"There is no {DIRECTIONS[direction].removeprefix('the ')}: {where}."
            self.app.ui(self.app.notify, msg, title="Can't move", severity="warning")
            return
        ids = [h.chunk_id for h in result.items]
        focus = ids[len(ids) // 2] if direction == "surrounding" else ids[0]
        if direction == "surrounding":
            ids = list(dict.fromkeys([*ids[:len(ids) // 2], chunk_id, *ids[len(ids) // 2:]]))
            focus = chunk_id
        self.app.ui(self.show, ids, focus, direction)

    @work(thread=True, exclusive=True, group="viewer-load")
    def show(self, ids: list[str], focus: str, how: str) -> None:
        lib = self.session.library
        try:
            with self.session.lock.read():
                chunks = [lib.chunk(i) for i in ids]
                doc = lib.document(chunks[0].document_id)
        except LocalReasonError as exc:
            self.app.ui(self.app.show_error, exc)
            return
        self.app.ui(self._paint, chunks, doc, focus, how)

    def _paint(self, chunks, doc, focus: str, how: str) -> None:
        self.current = focus
        main = next(c for c in chunks if c.id == focus)
        crumbs = Text(doc.title, style="bold")
        path = list(main.section_path)
        for part in path[1:] if path and path[0] == doc.title else path:
            crumbs.append("  ›  ", style="dim")
            crumbs.append(part)
        self.query_one("#crumbs", Static).update(crumbs)
        page = f" · page {main.page_start}" if main.page_start else ""
        label = {"cited": "cited passage", "previous": "previous", "next": "next", "up": "up",
                 "down": "down", "surrounding": "around"}.get(how, how)  # fmt: skip
        self.query_one("#where", Static).update(Text.assemble(
            (f"{LEVEL_NAMES[main.level]} {main.index + 1}", "bold"), f" · {main.id}{page} · ",
            (f"({label})", "italic"),
            ("  ▌ quotation" if self.quote and self._has_quote(main) else "", "reverse")))  # fmt: skip
        body = Text()
        for c in chunks:
            if body:
                body.append("\n\n")
            part = Text(c.text, style="" if c.id == focus or len(chunks) == 1 else "dim")
            if self.quote and self._has_quote(c):
                s, e = self.quote[0] - c.start, self.quote[1] - c.start
                part.stylize("reverse bold", max(0, s), min(len(c.text), e))
            body.append_text(part)
        self.query_one("#source-text", Static).update(body)
        scroll = self.query_one("#source-scroll", VerticalScroll)
        scroll.scroll_home(animate=False)
        if self.quote:
            # bring the quotation into view: scroll by the share of text that precedes it
            focus_chunk = next((c for c in chunks if self._has_quote(c)), None)
            if focus_chunk is not None:
                before = sum(len(c.text) + 2 for c in chunks[:chunks.index(focus_chunk)])
                before += max(0, self.quote[0] - focus_chunk.start)
                total = sum(len(c.text) + 2 for c in chunks) or 1
                self.call_after_refresh(lambda: scroll.scroll_to(
                    y=max(0, int(scroll.virtual_size.height * before / total) - 2), animate=False))

    def _has_quote(self, chunk) -> bool:
        return bool(self.quote) and chunk.start <= self.quote[0] and self.quote[1] <= chunk.end


# ---------------------------------------------------------------- help

HELP = """\
[b]localreason[/b]: ask your documents, read the evidence. [dim]Esc closes[/dim]
[b]Anywhere[/b]  F1 ? help       F2 ask            F3 search as you type
          F4 history    F5 re-sync        F6 add file or folder
          Ctrl+S save answer as Markdown  Ctrl+Q quit
          Ctrl+L library  Ctrl+X clear scope  Esc cancel, close
[b]Library[/b]   ↑ ↓ move  Space fold  Enter scope to it  Del remove it
[b]Answer[/b]    ↑ ↓ statements, sources   Enter/click open the source
          1-9 open citation \\[n]   typing starts a new question
[b]Viewer[/b]    p ← previous  n → next  u up  d down  s around
          c the cited passage again      Esc or q back
[b]Search[/b]    Enter on a passage opens it; on a document, scopes
          to it. A pasted chk_/doc_/col_ id opens that item.
"""


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,q,f1,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="dialog"):
            yield Static(HELP)


# ---------------------------------------------------------------- errors


class ErrorScreen(ModalScreen):
    """What went wrong and what to do; the app carries on."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close")]

    def __init__(self, title: str, message: str, hint: str = "") -> None:
        super().__init__()
        self.title_text, self.message, self.hint = title, message, hint

    def compose(self) -> ComposeResult:
        with Vertical(id="error", classes="dialog"):
            yield Label(self.title_text, id="error-title")
            yield Static(self.message, id="error-message", markup=False)
            if self.hint:
                yield Static(self.hint, id="error-hint", markup=False)
            yield Button("OK", id="ok", variant="error")

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss()


# ---------------------------------------------------------------- confirm


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("escape,n", "no", "No"), Binding("y", "yes", "Yes")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm", classes="dialog"):
            yield Static(self.question, markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Remove (y)", id="yes", variant="error")
                yield Button("Keep (n)", id="no")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


# ---------------------------------------------------------------- add files


class _Dialog(ModalScreen):
    """A dialog that Escape, or its Cancel / Close button, dismisses with None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#cancel, #close")
    def _cancel(self) -> None:
        self.dismiss(None)


class AddScreen(_Dialog):
    """Ask for a path and a collection; returns (path, collection)."""

    def __init__(self, collection: str) -> None:
        super().__init__()
        self.collection = collection

    def compose(self) -> ComposeResult:
        with Vertical(id="add", classes="dialog"):
            yield Label("Add a file or folder to the library")
            yield Input(placeholder="~/notes or ~/manuals/router.pdf", id="add-path")
            yield Label("Collection")
            yield Input(self.collection, id="add-collection")
            yield Static("", id="add-problem", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Add", id="go", variant="primary")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#go")
    def _go(self) -> None:
        raw = self.query_one("#add-path", Input).value.strip()
        collection = self.query_one("#add-collection", Input).value.strip() or "default"
        problem = self.query_one("#add-problem", Static)
        if not raw:
            problem.update("Type the path of a file or folder.")
            return
        path = Path(raw).expanduser()
        if not path.exists():
            problem.update(f"{path} does not exist. Check the spelling, or give the full path.")
            return
        self.dismiss((str(path), collection))


class ReportScreen(ModalScreen):
    """The per-file summary of an ingest or re-sync, failures first."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close")]

    def __init__(self, title: str, reports, note: str = "") -> None:
        super().__init__()
        self.heading, self.reports, self.note = title, reports, note

    def compose(self) -> ComposeResult:
        body = Text()
        order = {"failed": 0, "skipped": 1, "added": 2, "updated": 3, "removed": 4, "unchanged": 5}
        style = {"failed": "bold red", "skipped": "yellow", "added": "green", "updated": "cyan", "removed": "magenta"}
        for report in self.reports:
            counts = ", ".join(f"{n} {k}" for k, n in report.counts.items() if n)
            body.append(f"{report.collection}: ", style="bold")
            body.append((counts or "nothing to do") + f" in {report.seconds:.1f} s\n")
            for f in sorted(report.files, key=lambda f: order.get(f.status, 9)):
                if f.status == "unchanged":
                    continue
                body.append(f"  {f.status:<9}", style=style.get(f.status, ""))
                body.append(f" {f.path}")
                if f.chunks:
                    body.append(f"  ({f.chunks} passages)", style="dim")
                if f.reason:
                    body.append(f"\n             {f.reason}", style="dim")
                body.append("\n")
            unchanged = report.counts.get("unchanged", 0)
            if unchanged:
                body.append(f"  {unchanged} unchanged file(s) skipped\n", style="dim")
        if self.note:
            body.append("\n" + self.note, style="italic")
        with Vertical(id="report", classes="dialog"):
            yield Label(self.heading, id="report-title")
            with VerticalScroll():
                yield Static(body)
            yield Button("OK", id="ok", variant="primary")

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss()


# ---------------------------------------------------------------- history and export


class HistoryScreen(_Dialog):
    """The session's questions, newest first; Enter shows that answer again."""

    def __init__(self, history) -> None:
        super().__init__()
        self.history = history

    def compose(self) -> ComposeResult:
        items = []
        for i in range(len(self.history) - 1, -1, -1):
            turn = self.history[i]
            status = "error" if turn.error else ("no evidence" if turn.answer.no_evidence else
                                                 f"{len(turn.answer.citations)} source(s)")  # fmt: skip
            line = Text.assemble((f"{turn.asked_at:%H:%M} ", "dim"), turn.question, (f"  · {status}", "dim"))
            items.append(ListItem(Label(line), name=str(i)))
        with Vertical(id="history", classes="dialog"):
            yield Label("This session's questions (Enter to show)")
            if items:
                yield ListView(*items, id="history-list")
            else:
                yield Static("No questions yet.")
            yield Button("Close", id="close")

    @on(ListView.Selected)
    def _selected(self, event: ListView.Selected) -> None:
        self.dismiss(int(event.item.name))


class ExportScreen(_Dialog):
    """Ask where to save the answer; returns the path typed."""

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="export", classes="dialog"):
            yield Label("Export the answer as Markdown to")
            yield Input(self.default, id="export-path")
            with Horizontal(classes="buttons"):
                yield Button("Export", id="go", variant="primary")
                yield Button("Cancel", id="cancel")

    @on(Input.Submitted)
    @on(Button.Pressed, "#go")
    def _go(self) -> None:
        value = self.query_one("#export-path", Input).value.strip()
        self.dismiss(value or None)
