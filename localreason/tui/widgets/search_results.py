"""Search mode's result list: the best matching documents, then passages with where they are."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.message import Message
from textual.widgets import ListItem, ListView, Static

from .answer_view import NoteItem

SNIPPET = 220
"""Characters of a passage shown in its row."""


class HitItem(ListItem):
    """A result row; ``hit`` is ``(kind, id, title)``, kind ``document`` or ``passage``."""

    def __init__(self, body, hit: tuple[str, str, str]) -> None:
        super().__init__(Static(body, markup=False))
        self.hit = hit


def document_item(d) -> HitItem:
    body = Text.assemble(("Document: ", "dim"), (d.title, "bold"), ("  (Enter: ask it)", "dim"))
    return HitItem(body, ("document", d.id, d.title))


def passage_item(h) -> HitItem:
    path = list(h.section_path)
    where = " › ".join(path[1:] if path and path[0] == h.document_title else path)
    snippet = " ".join(h.content.split())
    also = f"\nalso in {', '.join(e.document_title for e in h.also_in)}" if h.also_in else ""
    body = Text.assemble((h.document_title, "bold"), (f"  {where}\n" if where else "\n", "dim"),
                         snippet[:SNIPPET] + ("…" if len(snippet) > SNIPPET else ""), (also, "dim"))  # fmt: skip
    return HitItem(body, ("passage", h.chunk_id, h.document_title))


def result_items(query: str, passages, documents, error) -> list[ListItem]:
    """The rows for one search: its error if any, at most two documents (those with passages shown), passages."""
    items: list[ListItem] = []
    if error is not None:
        items.append(NoteItem(Text(error.message, style="italic")))
    with_passages = {h.document_id for h in passages}
    documents = [d for d in documents if d.id in with_passages][:2] or documents[:1]
    items += [document_item(d) for d in documents]
    items += [passage_item(h) for h in passages]
    if not items:
        items.append(NoteItem(Text(f"Nothing found for “{query}”.", style="italic")))
    return items


class SearchResults(ListView):
    """The results of the last search. Enter on a row posts :class:`SearchResults.Chosen`."""

    BORDER_TITLE = "Search results"

    class Chosen(Message):
        """A result row was chosen: ``kind`` is ``document`` or ``passage``, ``id`` its id."""

        def __init__(self, kind: str, id_: str, title: str) -> None:
            super().__init__()
            self.kind, self.id, self.title = kind, id_, title

    async def show(self, query: str, passages, documents, error) -> None:
        """Replace the rows by the results of ``query`` (or the LocalReasonError ``error`` it met)."""
        await self.clear()
        await self.extend(result_items(query, passages, documents, error))
        self.border_title = Text(f"Search results for “{query}”")  # (as typed: no markup)

    def focus_first(self) -> None:
        """Focus the list on its first row, if it has rows."""
        if self.children:
            self.focus()
            self.index = 0

    @on(ListView.Selected)
    def _selected(self, event: ListView.Selected) -> None:
        hit = getattr(event.item, "hit", None)
        if hit is not None:
            self.post_message(self.Chosen(*hit))
