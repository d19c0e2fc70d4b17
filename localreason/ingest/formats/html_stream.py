"""HTML read tag by tag, with no tree: for files lxml cannot hold (too deep, too large)."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

from ..document import ParsedDocument, decode_text, finish, normalize
from . import html_marks as marks
from . import html_tags as tags

_HTML_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_HTML_RAW = frozenset("script style xmp iframe noembed noframes textarea title plaintext".split())
_HTML_MARKUP = re.compile(r"<(?:(/?)([a-zA-Z][^\s/>\x00]*)|(!--)|[!?]|/(?![a-zA-Z]))")
_HTML_TAG_END = re.compile(r"""=\s*(["'])|>""")
_HTML_ATTR = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?""")
_HTML_RAW_CLOSE = {name: re.compile(rf"</{name}[\s/>]", re.IGNORECASE) for name in _HTML_RAW}
_HTML_HUGE_CHARREF = re.compile(r"&#(?:[xX]0*[0-9a-fA-F]{7,}|0*[0-9]{8,});?")
_CLOSES_P = frozenset(("p",))
_IMPLIED_ENDS = {tag: _CLOSES_P for tag in "address blockquote center dir div dl fieldset form h1 h2 h3 h4 h5 h6 "
                 "hr menu ol p pre table ul dd dt tr td th caption tbody".split()}  # fmt: skip
_IMPLIED_ENDS["li"] = frozenset(("li", "p", "pre", "dl", "address", *(f"h{n}" for n in range(1, 7))))
"""What a start tag closes while it is the innermost open element, as libxml2 (the tree reader) reads HTML: a
paragraph left open ends at a block, an item whose end tag is left out at the next item. So both readers see
a list's items as its children, and number them alike."""


def parse_html_stream(data: bytes, path: Path, reason: str) -> ParsedDocument:
    """HTML read tag by tag with no tree, for files lxml cannot hold (``reason`` is lxml's message).

    Keeps what the tree reader keeps (headings, blocks, table rows, the main content,
    no scripts or navigation), in linear time whatever the nesting or the markup errors.
    """
    notes: list[str] = []
    source = decode_text(data, notes)
    reader = _HtmlStream()
    for kind, value, attrs in _html_events(source):
        if kind == "text":
            reader.text(value)
        elif kind == "start":
            reader.start(value, attrs)
        else:
            reader.end(value)
    reader.finish()
    out = tags.Blocks()
    in_main = any(b[4] for b in reader.blocks)
    for kind, text, depth, code, main in reader.blocks:
        if not main and in_main:
            continue
        if kind == "label":
            out.open_label(text, depth)
        elif kind == "box end":
            out.close_label(depth)
        else:
            out.add(text, kind, depth=depth, code=code)
    notes.append(f"too deeply nested or too large for a full HTML parse ({reason}): read by a simpler "
                 "streaming reader, which keeps all the text but may group paragraphs differently")  # fmt: skip
    parsed = finish(out.builder, path, "html", notes)
    title = normalize("".join(reader.title), keep_lines=False)
    if title:
        parsed.title = title
    return parsed


def _html_events(source: str):
    """Yield ("text", text, None), ("start", tag, attribute text) and ("end", tag, None) in order.

    Every branch moves forward by a search that is never repeated over the same text,
    so hostile markup (unclosed comments, tags or quotes) costs linear time.
    """
    pos, n = 0, len(source)
    while pos < n:
        m = _HTML_MARKUP.search(source, pos)
        if m is None:
            yield "text", _html_unescape(source[pos:]), None
            return
        if m.start() > pos:
            yield "text", _html_unescape(source[pos:m.start()]), None
        if m.group(2):
            end = _html_tag_end(source, m.end())
            if end < 0:
                return  # the file ends inside a tag: browsers drop the rest too
            name = m.group(2).lower()
            if m.group(1):
                yield "end", name, None
                pos = end
                continue
            yield "start", name, source[m.end():end - 1]
            pos = end
            if name in _HTML_RAW:
                close = _HTML_RAW_CLOSE[name].search(source, pos)
                stop = close.start() if close else n
                yield "text", _html_unescape(source[pos:stop]), None
                pos = stop
        else:  # a comment, a doctype, a processing instruction or another bogus comment
            closer = "-->" if m.group(3) else ">"
            close = source.find(closer, m.end())
            pos = n if close < 0 else close + len(closer)


def _html_tag_end(source: str, pos: int) -> int:
    """Index just past the ``>`` closing the tag whose attributes start at ``pos``, or -1."""
    while True:
        m = _HTML_TAG_END.search(source, pos)
        if m is None:
            return -1
        if not m.group(1):
            return m.end()
        close = source.find(m.group(1), m.end())
        if close < 0:
            return -1
        pos = close + 1


def _html_unescape(text: str) -> str:
    """Character references decoded; absurdly long numeric ones (which ``int`` refuses) become U+FFFD."""
    if "&" not in text:
        return text
    return html.unescape(_HTML_HUGE_CHARREF.sub("\ufffd", text))


def _html_attrs(text: str) -> dict[str, str]:
    """The attributes in the text of a start tag (names lower-cased)."""
    return {m.group(1).lower(): next((v for v in m.group(2, 3, 4) if v is not None), "")
            for m in _HTML_ATTR.finditer(text)}  # fmt: skip


def _html_drops(tag: str, attrs: dict[str, str], in_main: bool) -> bool:
    """Whether the element is one the tree reader removes (navigation, hidden text, Sphinx chrome)."""
    if tag in tags.DROP or (tag in tags.OUTSIDE_MAIN and not in_main) or attrs.get("role") in ("navigation", "search") or attrs.get("aria-hidden") == "true":
        return True
    cls = attrs.get("class", "")
    if tag == "a":
        return "headerlink" in cls.split()
    return tag == "div" and ("sphinxsidebar" in cls or "related" in cls)


_BOX_OPEN, _BOX_LABELLED, _BOX_PLAIN = range(3)
"""A DocBook admonition before its first row is read, after a first row with its label, after another one."""


class _Row:
    """A table row being read: its cells' text (items apart), and what makes it a layout row rather than data."""

    __slots__ = ("at", "mark", "tables", "cells", "layout", "icon", "label_cell")

    def __init__(self, at: int, mark: int, tables: int) -> None:
        self.at, self.mark = at, mark  # its place among the open elements; the first block read inside it
        self.tables = tables  # tables open around it
        self.cells: list[list[str]] = []
        self.layout = self.icon = False  # a cell holds code, a heading or a table; a cell holds an image
        self.label_cell = -1  # the first th


class _HtmlStream:
    """Collects headings, text blocks and table rows from start, end and text events.

    Inside a table row the blocks are read as anywhere else and the cells' text is kept beside; when the row
    ends it is one line of cells (a data row), or its blocks stay (a layout row: see html._html_layout_row)."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, str, int, bool, bool]] = []  # kind, text, depth (box id), code, in main
        self.title: list[str] = []
        self._open: list[tuple[str, bool, bool, int]] = []  # tag, dropped, main, heading depth
        self._counts: Counter = Counter()
        self._dropped = self._main = self._pre = self._in_title = 0
        self._headings: list[list] = []  # [depth, before its first text] of each open heading
        self._parts: list[str] = []
        self._rows: list[_Row] = []
        self._boxes: list[tuple[int, int, int]] = []  # DocBook admonitions open: place, id, _BOX_ state
        self._box_ids = 0
        self._pending: list[tuple[str, int]] = []  # numbers for the next text shown (html_marks), their item's place
        self._lists: list[tuple[int, marks.Numbering]] = []  # open ordered lists: place, numbering
        self._raised: list[tuple] = []  # open sup and sub: place, first part, cell and its first part, edges after
        self._navs: list[int] = []  # Publican's navigation lists open: place
        self._callout_lists: list[int] = []  # DocBook's callout lists open: place
        self._edges = 0  # line breaks and block edges so far

    def start(self, tag: str, attr_text: str) -> None:
        closes = _IMPLIED_ENDS.get(tag)
        while closes and self._open and self._open[-1][0] in closes and (self._close() != "li" or tag != "li"):
            pass
        if tag in _HTML_VOID:
            if tag == "br":
                self._line_break()
            elif tag in tags.BLOCKS:
                self._block_edge()
            elif tag == "img" and not self._dropped:
                self._image(_html_attrs(attr_text))
            return
        if self._rows and (tag == "tr" or tag in tags.CELLS):
            self._implied_end(tag, self._rows[-1])
        attrs = _html_attrs(attr_text) if attr_text.strip() else {}
        main = tag in ("main", "article") or attrs.get("role") == "main"
        dropped = _html_drops(tag, attrs, self._main > 0 or main)
        depth = tags.HEADINGS.get(tag, 0)
        if tag in tags.BLOCKS or depth or main or tag in ("pre", "title"):
            self._block_edge()
        self._open.append((tag, dropped, main, depth))
        self._counts[tag] += 1
        self._dropped += dropped
        self._main += main
        self._pre += tag == "pre"
        self._in_title += tag == "title"
        if depth:
            self._headings.append([depth, True])
        if not self._dropped:
            self._table_start(tag, attrs, depth)
            self._marks_start(tag, attrs)

    def _implied_end(self, tag: str, row: _Row) -> None:
        """A row starting in a row of the same table ends it, as a cell starting in a cell ends it (HTML's
        optional end tags)."""
        if self._counts["table"] != row.tables:
            return  # a table of its own, inside a cell
        stop = row.at if tag == "tr" else row.at + 1
        if tag == "tr" or (len(self._open) > stop and self._open[stop][0] in tags.CELLS):
            while len(self._open) > stop:
                self._close()

    def _table_start(self, tag: str, attrs: dict[str, str], depth: int) -> None:
        """Keep track of rows, cells, what lays a row out, and admonition boxes."""
        at = len(self._open) - 1
        row = self._rows[-1] if self._rows else None
        if row is not None and row.cells and (depth or tag in ("pre", "table")):
            row.layout = True
        if tag == "tr":
            self._rows.append(_Row(at, len(self.blocks), self._counts["table"]))
        elif tag in tags.CELLS and row is not None and at - 1 == row.at:
            if tag == "th" and row.label_cell < 0:
                row.label_cell = len(row.cells)
            row.cells.append([])
        elif tag == "div" and tags.ADMONITIONS.intersection(attrs.get("class", "").split()):
            self._box_ids += 1
            self._boxes.append((at, self._box_ids, _BOX_OPEN))

    def end(self, tag: str) -> None:
        if not self._counts[tag]:
            return  # a stray end tag
        while True:
            closed = self._close()
            if closed == tag:
                return

    def text(self, text: str, *, source: bool = True) -> None:
        if self._dropped:
            return
        if source and not self._pre:
            text = text.replace("\n", " ")  # the source's line breaks: a browser shows spaces
        if self._in_title:
            self.title.append(text)
            return
        if self._pending and text.strip():
            text = marks.prefixed(text, " ".join(marker for marker, _ in self._pending))
            self._pending.clear()
        self._parts.append(text)
        if self._rows and self._rows[-1].cells:
            self._rows[-1].cells[-1].append(text)

    def finish(self) -> None:
        while self._open:
            self._close()
        self._flush()

    def _close(self) -> str:
        """Close the innermost open element and return its tag."""
        tag, dropped, main, depth = self._open.pop()
        self._counts[tag] -= 1
        self._marks_end(tag)
        if tag in tags.BLOCKS or depth or main or tag in ("pre", "title"):
            self._block_edge()
        if self._rows and len(self._open) == self._rows[-1].at:
            self._row_end(self._rows.pop())
        if self._boxes and len(self._open) == self._boxes[-1][0]:
            _, box, state = self._boxes.pop()
            if state == _BOX_LABELLED:
                self.blocks.append(("box end", "", box, False, self._main > 0))
        self._dropped -= dropped
        self._main -= main
        self._pre -= tag == "pre"
        self._in_title -= tag == "title"
        if depth:
            self._headings.pop()
        return tag

    def _image(self, attrs: dict[str, str]) -> None:
        """An image: a table row's icon; a DocBook callout's number, in a callout list in front of its explanation."""
        if self._rows:
            self._rows[-1].icon = True
        mark = marks.callout(attrs)
        if mark and self._rows and self._callout_lists and self._rows[-1].at > self._callout_lists[-1]:
            self._pending.append((mark, self._rows[-1].at))
        elif mark:
            self.text(mark, source=False)

    def _marks_start(self, tag: str, attrs: dict[str, str]) -> None:
        """Keep track of what html_marks writes: list numbers, sup and sub, navigation captions, callout lists."""
        at = len(self._open) - 1
        if tag == "li" and self._lists and self._lists[-1][0] == at - 1:
            marker = self._lists[-1][1].item(attrs)
            if marker:
                self._pending.append((marker, at))
        elif tag == "ol":
            self._lists.append((at, marks.Numbering(attrs)))
        elif tag in marks.RAISED:
            cell = self._rows[-1].cells[-1] if self._rows and self._rows[-1].cells else []
            self._raised.append((at, len(self._parts), cell, len(cell), self._edges))
            self._edges += 1  # the sup or sub around this one is left as it is
        if tag == "ul" and marks.has_class(attrs, "docnav"):
            self._navs.append(at)
        elif tag == "div" and marks.has_class(attrs, "calloutlist"):
            self._callout_lists.append(at)

    def _marks_end(self, tag: str) -> None:
        """An element closes (``self._open`` without it): its marks are written, its places forgotten."""
        at = len(self._open)
        while self._pending and self._pending[-1][1] >= at:
            self._pending.pop()  # an item with no text: no number
        if self._raised and self._raised[-1][0] == at:
            _, part, cell, cell_part, edges = self._raised.pop()
            if edges + 1 == self._edges:  # one around a line break, a block or a sup or sub is left as it is
                self._parts[part:] = [marks.raised("".join(self._parts[part:]), tag)]
                cell[cell_part:] = [marks.raised("".join(cell[cell_part:]), tag)] if cell else []
        if tag == "strong" and self._navs:
            self._line_break()
        if self._lists and self._lists[-1][0] == at:
            self._lists.pop()
        for places in (self._navs, self._callout_lists):
            if places and places[-1] == at:
                places.pop()

    def _line_break(self) -> None:
        self._edges += 1
        self.text("\n", source=False)  # a line break the reader sees

    def _row_end(self, row: _Row) -> None:
        """A data row becomes one line of cells in place of its blocks; a layout row keeps its blocks."""
        cells = [tags.cell("".join(cell)) for cell in row.cells]
        full = [i for i, c in enumerate(cells) if c]
        if self._rows and self._rows[-1].cells:
            self._rows[-1].layout = True  # a table in a cell lays its row out
        if self._boxes and self._boxes[-1][2] == _BOX_OPEN and row.at - self._boxes[-1][0] in (2, 3):
            at, box, _ = self._boxes[-1]  # the first row of a DocBook admonition: an icon and the label?
            labelled = row.icon and full == [row.label_cell]
            self._boxes[-1] = (at, box, _BOX_LABELLED if labelled else _BOX_PLAIN)
            if labelled:
                del self.blocks[row.mark:]
                self.blocks.append(("label", cells[row.label_cell], box, False, self._main > 0))
                return
        if len(full) > 1 and not row.layout:
            del self.blocks[row.mark:]
            self.blocks.append(("text", " | ".join(cells[i] for i in full), 0, False, self._main > 0))

    def _block_edge(self) -> None:
        """A block starts or ends: the text so far is a block of its own (and in a table row, an item of its cell)."""
        self._edges += 1
        self._flush()
        if self._rows and self._rows[-1].cells and not self._dropped:
            self._rows[-1].cells[-1].append("\n")

    def _flush(self) -> None:
        text = "".join(self._parts)
        self._parts.clear()
        if not text.strip():
            return
        heading = self._headings[-1] if self._headings and self._headings[-1][1] and not self._pre else None
        if heading:
            heading[1] = False  # a heading that holds blocks (left open): its first text is the heading
            self.blocks.append(("heading", text, heading[0], False, self._main > 0))
        else:
            self.blocks.append(("text", text, 0, self._pre > 0, self._main > 0))
