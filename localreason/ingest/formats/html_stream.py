"""HTML read tag by tag, with no tree: for files lxml cannot hold (too deep, too large)."""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

from ..document import ParsedDocument, TextBuilder, decode_text, finish, normalize
from . import html_tags as tags

_HTML_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
_HTML_RAW = frozenset("script style xmp iframe noembed noframes textarea title plaintext".split())
_HTML_MARKUP = re.compile(r"<(?:(/?)([a-zA-Z][^\s/>\x00]*)|(!--)|[!?]|/(?![a-zA-Z]))")
_HTML_TAG_END = re.compile(r"""=\s*(["'])|>""")
_HTML_ATTR = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]*)))?""")
_HTML_RAW_CLOSE = {name: re.compile(rf"</{name}[\s/>]", re.IGNORECASE) for name in _HTML_RAW}
_HTML_HUGE_CHARREF = re.compile(r"&#(?:[xX]0*[0-9a-fA-F]{7,}|0*[0-9]{8,});?")


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
    builder = TextBuilder()
    in_main = any(b[4] for b in reader.blocks)
    for kind, text, depth, keep_lines, main in reader.blocks:
        if main or not in_main:
            builder.add(text, kind, depth=depth, keep_lines=keep_lines)
    notes.append(f"too deeply nested or too large for a full HTML parse ({reason}): read by a simpler "
                 "streaming reader, which keeps all the text but may group paragraphs differently")  # fmt: skip
    parsed = finish(builder, path, "html", notes)
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
    if tag in tags.DROP or (tag == tags.ASIDE and not in_main) or attrs.get("role") in ("navigation", "search") or attrs.get("aria-hidden") == "true":
        return True
    cls = attrs.get("class", "")
    if tag == "a":
        return "headerlink" in cls.split()
    return tag == "div" and ("sphinxsidebar" in cls or "related" in cls)


class _HtmlStream:
    """Collects headings, text blocks and table rows from start, end and text events."""

    def __init__(self) -> None:
        self.blocks: list[tuple[str, str, int, bool, bool]] = []  # kind, text, depth, keep lines, in main
        self.title: list[str] = []
        self._open: list[tuple[str, bool, bool, int]] = []  # tag, dropped, main, heading depth
        self._counts: Counter = Counter()
        self._dropped = self._main = self._pre = self._in_title = 0
        self._headings: list[int] = []
        self._parts: list[str] = []
        self._row: list[list[str]] | None = None
        self._row_at = -1

    def start(self, tag: str, attr_text: str) -> None:
        if tag in _HTML_VOID:
            return
        attrs = _html_attrs(attr_text) if attr_text.strip() else {}
        main = tag in ("main", "article") or attrs.get("role") == "main"
        dropped = _html_drops(tag, attrs, self._main > 0 or main)
        depth = tags.HEADINGS.get(tag, 0)
        if self._row is None and (tag in tags.BLOCKS or depth or main or tag in ("pre", "title")):
            self._flush()
        self._open.append((tag, dropped, main, depth))
        self._counts[tag] += 1
        self._dropped += dropped
        self._main += main
        self._pre += tag == "pre"
        self._in_title += tag == "title"
        if depth:
            self._headings.append(depth)
        if self._dropped:
            return
        if tag == "tr" and self._row is None:
            self._row, self._row_at = [], len(self._open) - 1
        elif tag in ("td", "th") and self._row is not None and len(self._open) - 2 == self._row_at:
            self._row.append([])

    def end(self, tag: str) -> None:
        if not self._counts[tag]:
            return  # a stray end tag
        while True:
            closed = self._close()
            if closed == tag:
                return

    def text(self, text: str) -> None:
        if self._dropped:
            return
        if self._in_title:
            self.title.append(text)
        elif self._row is not None:
            if self._row:
                self._row[-1].append(text)
        else:
            self._parts.append(text)

    def finish(self) -> None:
        while self._open:
            self._close()
        self._flush()

    def _close(self) -> str:
        """Close the innermost open element and return its tag."""
        tag, dropped, main, depth = self._open.pop()
        self._counts[tag] -= 1
        if self._row is not None and len(self._open) == self._row_at:
            cells = (" ".join("".join(cell).split()) for cell in self._row)
            self.blocks.append(("text", " | ".join(c for c in cells if c), 0, False, self._main > 0))
            self._row = None
        elif self._row is None and (tag in tags.BLOCKS or depth or main or tag in ("pre", "title")):
            self._flush()
        self._dropped -= dropped
        self._main -= main
        self._pre -= tag == "pre"
        self._in_title -= tag == "title"
        if depth:
            self._headings.pop()
        return tag

    def _flush(self) -> None:
        text = "".join(self._parts)
        self._parts.clear()
        if not text.strip():
            return
        if self._headings:
            self.blocks.append(("heading", text, self._headings[-1], False, self._main > 0))
        else:
            self.blocks.append(("text", text, 0, self._pre > 0, self._main > 0))
