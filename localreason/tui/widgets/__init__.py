"""The TUI's own widgets. They report to the App with Textual messages (see each class)."""

from __future__ import annotations

from .answer_view import WELCOME, AnswerView, NoteItem, RefItem, answer_items
from .library_tree import LibraryTree
from .search_results import HitItem, SearchResults, result_items

__all__ = ["WELCOME", "AnswerView", "HitItem", "LibraryTree", "NoteItem", "RefItem", "SearchResults",
           "answer_items", "result_items"]  # fmt: skip
