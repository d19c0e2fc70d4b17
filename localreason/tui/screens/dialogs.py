"""The dialogs: confirm, add files, the ingest/re-sync report, history and export.

Each returns its answer through ``dismiss(...)``, to the callback the App passed to ``push_screen``.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, ListItem, ListView, Static

from ...text import counted

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


# ---------------------------------------------------------------- ingest / re-sync report

REPORT_ORDER = {"failed": 0, "skipped": 1, "added": 2, "updated": 3, "removed": 4, "unchanged": 5}
REPORT_STYLE = {"failed": "bold red", "skipped": "yellow", "added": "green", "updated": "cyan", "removed": "magenta"}


def report_text(reports, note: str = "") -> Text:
    """Per collection: the counts, then every file that did not stay unchanged, failures first."""
    body = Text()
    for report in reports:
        counts = ", ".join(f"{n} {k}" for k, n in report.counts.items() if n)
        body.append(f"{report.collection}: ", style="bold")
        body.append((counts or "nothing to do") + f" in {report.seconds:.1f} s\n")
        for f in sorted(report.files, key=lambda f: REPORT_ORDER.get(f.status, 9)):
            if f.status == "unchanged":
                continue
            body.append(f"  {f.status:<9}", style=REPORT_STYLE.get(f.status, ""))
            body.append(f" {f.path}")
            if f.chunks:
                body.append(f"  ({counted(f.chunks, 'passage')})", style="dim")
            if f.reason:
                body.append(f"\n             {f.reason}", style="dim")
            body.append("\n")
        for folder, n, why in report.kept:
            body.append("  kept     ", style="yellow")
            body.append(f" {folder}\n             {counted(n, 'document')} kept: {why}\n", style="dim")
        unchanged = report.counts.get("unchanged", 0)
        if unchanged:
            body.append(f"  {unchanged} unchanged file(s) skipped\n", style="dim")
    if note:
        body.append("\n" + note, style="italic")
    return body


class ReportScreen(ModalScreen):
    """The per-file summary of an ingest or re-sync, failures first."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close")]

    def __init__(self, title: str, reports, note: str = "") -> None:
        super().__init__()
        self.heading, self.reports, self.note = title, reports, note

    def compose(self) -> ComposeResult:
        with Vertical(id="report", classes="dialog"):
            yield Label(self.heading, id="report-title")
            with VerticalScroll():
                yield Static(report_text(self.reports, self.note))
            yield Button("OK", id="ok", variant="primary")

    @on(Button.Pressed, "#ok")
    def _ok(self) -> None:
        self.dismiss()


# ---------------------------------------------------------------- history and export


class HistoryScreen(_Dialog):
    """The session's questions, newest first; Enter shows that answer again (returns its index)."""

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
