"""The library pane: collections and their documents, with passage counts, and the files not read."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Tree


class LibraryTree(Tree):
    """Collections and their documents, with passage counts. Enter scopes; Delete removes.

    Each node's data is ``(kind, id, label)``, kind ``collection`` or ``document``; or ``unread`` for the
    folded list of a collection's files not read (skipped or failed), ``unread-file`` for one of them (id: its
    path, label: what happened and why), which Enter opens or explains. What the user asks for reaches the App
    as this class's messages.
    """

    SHOWN_UNREAD = 100
    """Files not read listed under a collection at most (the rest counted)."""

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

    def fill(self, cols, docs, unread=None) -> None:
        """Show the collections ``cols`` and ``docs``, {collection id: its documents}, and ``unread``,
        {collection id: its files not read}, as far as the app knows them (what was reported since it started)."""
        expanded = {child.data[1] for node in self.root.children for child in node.children
                    if child.data and child.data[0] == "unread" and child.is_expanded}  # fmt: skip
        self.clear()
        for col in cols:
            node = self.root.add(Text.assemble((col.name, "bold"), (f"  {col.document_count} docs", "dim")),
                                 data=("collection", col.id, col.name), expand=True)  # fmt: skip
            for doc in docs[col.id]:
                node.add_leaf(Text.assemble(doc.title, (f"  {doc.chunk_count}", "dim")),
                              data=("document", doc.id, doc.title))  # fmt: skip
            self._add_unread(node, col.id, (unread or {}).get(col.id, []), col.id in expanded)
        if not cols:
            self.root.add_leaf(Text("(empty: F6 adds files)", style="dim italic"))

    def _add_unread(self, node, col_id: str, files, expand: bool) -> None:
        """A folded node under a collection listing its files not read, each with why; none when there are none."""
        if not files:
            return
        failed = any(f.status == "failed" for f in files)  # in the colour of a warning (the pane is narrow)
        label = Text(f"{len(files)} file{'s' * (len(files) != 1)} not read",
                     style="italic yellow" if failed else "italic")  # fmt: skip
        group = node.add(label, data=("unread", col_id, ""), expand=expand)
        for f in files[:self.SHOWN_UNREAD]:
            failed = f.status == "failed"
            why = f"could not be read: {f.reason}" if failed else f.reason
            group.add_leaf(Text.assemble((Path(f.path).name, "yellow" if failed else ""), (f"  {why}", "dim")),
                           data=("unread-file", f.path, f"{'Could not be read' if failed else 'Skipped'}: {f.reason}"))
        if len(files) > self.SHOWN_UNREAD:
            group.add_leaf(Text(f"and {len(files) - self.SHOWN_UNREAD} more (F5 lists them all)", style="dim"))

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
        if not event.node.data:
            return
        kind, id_, label = event.node.data
        if kind == "unread":
            event.node.toggle()
        elif kind == "unread-file":
            self.notify(f"{id_}\n{label}", title="Not in the library", timeout=10)
        else:
            self.post_message(self.ScopeRequested(kind, id_))

    def action_remove(self) -> None:
        node = self.cursor_node
        if node is not None and node.data and node.data[0] in ("collection", "document"):
            self.post_message(self.RemoveRequested(*node.data))

    def action_clear_scope(self) -> None:
        self.post_message(self.ClearScopeRequested())
