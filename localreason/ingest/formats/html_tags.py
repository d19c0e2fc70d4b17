"""What both HTML readers share (html.py through lxml, html_stream.py for huge pages): the tag sets, how text
becomes lines, cells and labelled boxes, and the blocks they add."""

from __future__ import annotations

import re

from ..document import TextBuilder, normalize

OUTSIDE_MAIN = ("aside", "header", "footer")
"""Dropped outside the main content (a site's sidebar, banner and footer), kept inside it (a sidebar of the text,
as Sphinx writes one; an article's header with its title and lead, a section's header with its heading)."""
DROP = ("script", "style", "noscript", "template", "nav", "button", "select", "svg", "iframe")
"""Dropped wherever they are (a ``form`` is not: a page may be all one form, its text inside it)."""
NESTED = 7
"""The depth given to XHTML 2's ``<h>``, a heading one below the last numbered one (Blocks.add works it out):
sqlite3-doc's pragma page names each pragma with one."""
HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6, "h": NESTED}
BLOCKS = frozenset("p li dt dd pre blockquote td th caption figcaption address div section article "
                   "main body tr table thead tbody tfoot ul ol dl summary details aside figure center hr "
                   "fieldset legend hgroup menu dir".split())  # fmt: skip
CELLS = ("td", "th")
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t\r]*\n)+")
ADMONITIONS = frozenset("note tip warning caution important".split())
"""The classes of DocBook's admonition boxes: drawn as a table (an icon, the label in a ``th``, the text below)."""


def prose(text: str) -> str:
    """Running text as a reader sees it: every whitespace run one space, except the line breaks a ``<br>`` made.

    The readers give the source's own line breaks as spaces (outside ``pre``) and a ``<br>`` as a newline,
    so that each line is normalised on its own and the breaks are kept; at most one empty line in a row.
    """
    if "\n" not in text:
        return normalize(text, keep_lines=False)
    return normalize("\n".join(normalize(line, keep_lines=False) for line in text.split("\n")))


def cell(text: str) -> str:
    """A table cell on one line: its items (lines, list items, paragraphs, given as lines of ``text``) joined
    by "; ", or by a space after an item that ends in punctuation, so that no two words are glued."""
    parts: list[str] = []
    for line in text.split("\n"):
        item = normalize(line, keep_lines=False)
        if item:
            if parts:
                parts.append(" " if parts[-1][-1] in ".,;:!?" else "; ")
            parts.append(item)
    return "".join(parts)


def labelled(label: str, text: str, code: bool) -> str:
    """An admonition's first block with its label in front: "Tip: text", or the label on its own line above code."""
    label = normalize(label, keep_lines=False)
    label += ":" if label[-1:].isalnum() else ""
    return f"{label}\n{_LEADING_BLANK_LINES.sub('', text)}" if code else f"{label} {text}"


class Blocks:
    """The page's blocks as they are found, with a DocBook admonition's label kept for the block it names."""

    def __init__(self) -> None:
        self.builder = TextBuilder()
        self.label = ""
        self.label_of = None
        self.heading = 0
        """The depth of a heading that holds blocks (a heading left open): its first text is the heading."""
        self.outer = 0
        """The depth of the last numbered heading (h1 to h6): an ``<h>`` is one below it."""

    def add(self, text: str, kind: str = "text", *, depth: int = 0, code: bool = False) -> None:
        """Add a block: code keeps its lines, prose the line breaks of its ``<br>`` elements, a heading is one line."""
        if not text or text.isspace():
            return
        if self.heading and kind == "text" and not code:
            kind, depth, self.heading = "heading", self.heading, 0
        if kind == "heading" and depth == NESTED:
            depth = min(self.outer + 1, 6)
        elif kind == "heading":
            self.outer = depth
        if not code:
            text = prose(text) if kind == "text" else normalize(text, keep_lines=False)
        if self.label and text.strip():
            if kind == "text":
                text = labelled(self.label, text, code)
            else:
                self.builder.add(self.label, keep_lines=False)
            self.label, self.label_of = "", None
        self.builder.add(text, kind, depth=depth)

    def open_label(self, label: str, owner) -> None:
        """``label`` goes in front of the next block; ``owner`` is the box it labels."""
        self.close_label(self.label_of)
        self.label, self.label_of = label, owner

    def close_label(self, owner) -> None:
        """At the end of ``owner``: a label still waiting for its text (an empty box) is a block of its own."""
        if owner is not None and owner == self.label_of:
            self.builder.add(self.label, keep_lines=False)
            self.label, self.label_of = "", None
