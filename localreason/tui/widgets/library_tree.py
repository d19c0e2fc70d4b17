"""The library pane: collections and their documents, with passage counts."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree


class LibraryTree(Tree):
    """Collections and their documents, with passage counts. Enter scopes; Delete removes.

    Each node's data is ``(kind, id, label)``, kind ``collection`` or ``document``. What the user
    asks for reaches the App as this class's messages.
    """

    BINDINGS = [
        Binding("delete", "remove", "Remove"),
        Binding("x", "clear_scope", "Clear scope"),
    ]

    class ScopeRequested(Message):
        """Enter on a collection or document: questions should go to it."""

        def __init__(self, kind: str, id_: str) -> None:
            super().__init__()
            self.kind, self.id = kind, id_

    class ClearScopeRequested(Message):
        """``x``: questions should go to the whole library again."""

    class RemoveRequested(Message):
        """Delete on a collection or document: remove it from the library (once confirmed)."""

        def __init__(self, kind: str, id_: str, label: str) -> None:
            super().__init__()
            self.kind, self.id, self.label = kind, id_, label

    def __init__(self, label: str = "Library", **kwargs) -> None:
        super().__init__(label, **kwargs)
        self.auto_expand = False
        self.show_root = False

    def fill(self, cols, docs) -> None:
        """Show the collections ``cols`` and ``docs``, {collection id: its documents}."""
        self.clear()
        for col in cols:
            node = self.root.add(Text.assemble((col.name, "bold"), (f"  {col.document_count} docs", "dim")),
                                 data=("collection", col.id, col.name), expand=True)  # fmt: skip
            for doc in docs[col.id]:
                node.add_leaf(Text.assemble(doc.title, (f"  {doc.chunk_count}", "dim")),
                              data=("document", doc.id, doc.title))  # fmt: skip
        if not cols:
            self.root.add_leaf(Text("(empty: F6 adds files)", style="dim italic"))

    def select_id(self, id_: str) -> None:
        """Put the cursor on the collection or document ``id_``, unfolding its collection."""
        for node in self.root.children:
            for child in [node, *node.children]:
                if child.data and child.data[1] == id_:
                    node.expand()
                    self.move_cursor(child)
                    return

    @on(Tree.NodeSelected)
    def _node_selected(self, event: Tree.NodeSelected) -> None:
        if event.node.data:
            kind, id_, _ = event.node.data
            self.post_message(self.ScopeRequested(kind, id_))

    def action_remove(self) -> None:
        node = self.cursor_node
        if node is not None and node.data:
            self.post_message(self.RemoveRequested(*node.data))

    def action_clear_scope(self) -> None:
        self.post_message(self.ClearScopeRequested())
