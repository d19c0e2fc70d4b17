"""Errors: the ErrorScreen dialog, and the message that asks the App to show one."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ErrorReported(Message):
    """Show ``error`` in an ErrorScreen. Posted by screens (it bubbles to the App, which handles it).

    ``unexpected`` marks an exception that escaped a worker: the App logs its traceback too.
    """

    def __init__(self, error: BaseException, *, unexpected: bool = False) -> None:
        super().__init__()
        self.error = error
        self.unexpected = unexpected


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
