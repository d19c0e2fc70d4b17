"""The TUI's secondary screens: source viewer, help, errors, and dialogs (add, confirm, report, history, export)."""

from __future__ import annotations

from .dialogs import AddScreen, ConfirmScreen, ExportScreen, HistoryScreen, ReportScreen, _Dialog
from .error import ErrorReported, ErrorScreen
from .help import HELP, HelpScreen
from .source import SourceScreen

__all__ = ["HELP", "AddScreen", "ConfirmScreen", "ErrorReported", "ErrorScreen", "ExportScreen",
           "HelpScreen", "HistoryScreen", "ReportScreen", "SourceScreen", "_Dialog"]  # fmt: skip
