"""The help dialog: every key, on one screen at 80x24."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """\
[b]localreason[/b]: ask your documents, read the evidence. [dim]Esc closes[/dim]
[b]Anywhere[/b]  F1 ? help       F2 ask            F3 search as you type
          F4 history    F5 re-sync        F6 add file or folder
          Ctrl+S save answer as Markdown  Ctrl+Q quit
          Ctrl+L library  Ctrl+X clear scope  Esc cancel, close
[b]Library[/b]   ↑ ↓ move  Space fold  Enter scope to it  Del remove it
          "N files not read": Enter lists them, then says why
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
