"""HTML, through lxml: the main content's headings and blocks, in document order."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import IngestFileError
from ..document import ParsedDocument, finish, normalize
from . import html_marks as marks
from . import html_tags as tags

_HTML_DROPPED = "localreason-dropped"
"""Tag given to elements marked for removal, so that one C-level pass removes them all."""


def parse_html(data: bytes, path: Path) -> ParsedDocument:
    """HTML through lxml: the main content's headings and block elements, in document order.

    lxml stops building its tree at a resource limit (nesting deeper than 2048 levels, or
    a buffer that will not fit) without raising; such a file is read again, whole, by
    a streaming reader that builds no tree.
    """
    import lxml.html
    from lxml import etree

    if b"\x00" in data[:8192]:
        raise IngestFileError("binary file (it contains NUL bytes), not HTML", status="skipped")
    parser = lxml.html.HTMLParser(huge_tree=True)
    try:
        root = lxml.html.document_fromstring(data, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        raise IngestFileError(f"not readable as HTML: {exc}") from exc
    limit = _html_resource_limit(parser.error_log)
    if limit:
        from .html_stream import parse_html_stream

        return parse_html_stream(data, path, limit)
    title_el = root.find(".//title")
    page_title = normalize(title_el.text_content(), keep_lines=False) if title_el is not None else ""
    in_main = 'ancestor-or-self::main or ancestor-or-self::article or ancestor-or-self::*[@role="main"]'
    outside = "".join(f" | //{tag}[not({in_main})]" for tag in tags.OUTSIDE_MAIN)
    for el in root.xpath('//*[@role="navigation" or @role="search" or @aria-hidden="true"]' + outside +
                         ' | //a[contains(concat(" ", @class, " "), " headerlink ")]'
                         ' | //div[contains(@class, "sphinxsidebar") or contains(@class, "related")]'):  # fmt: skip
        el.tag = _HTML_DROPPED
    # One pass in C; lxml's drop_tree() per element is quadratic in the text its tails pile up.
    etree.strip_elements(root, _HTML_DROPPED, *tags.DROP, with_tail=False)
    marks.mark_tree(root, _ITEM_EDGES)
    main = root.xpath('//main | //*[@role="main"] | //article')
    out = tags.Blocks()
    _html_walk(main[0] if main else (root.find("body") if root.find("body") is not None else root), out)
    parsed = finish(out.builder, path, "html", [])
    if page_title:
        parsed.title = page_title
    return parsed


def _html_resource_limit(error_log) -> str:
    """lxml's message if its parser stopped early at a resource limit, else ""."""
    from lxml import etree

    for entry in error_log:
        if entry.type == etree.ErrorTypes.ERR_RESOURCE_LIMIT or "XML_PARSE_HUGE" in entry.message:
            return re.sub(r",?\s*(use|try) XML_PARSE_HUGE.*", "", entry.message.strip(), flags=re.S)
    return ""


def _html_walk(top, out: tags.Blocks) -> None:
    """Add the headings and text blocks under ``top`` in document order; a loop, so any depth is fine."""
    holders = _html_holders(top)
    stack: list[tuple] = []  # (element, children left, loose text) of each open element that holds blocks
    _html_enter(top, out, stack, holders)
    while stack:
        el, children, loose = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if el.tag in _BREAKS or not stack:  # a block ends: so does its text, and the box its label names
                out.add("".join(loose))
                out.close_label(el)
                out.heading = 0 if el.tag in tags.HEADINGS else out.heading
            if stack:
                stack[-1][2].append(_one_line(el.tail))
        elif not _holds_blocks(child, holders):
            if isinstance(child.tag, str):
                loose.append(_html_flow(child))
            loose.append(_one_line(child.tail))
        elif child.tag in _BREAKS:
            out.add("".join(loose))  # loose text between block children forms blocks of its own
            loose.clear()
            if not _html_enter(child, out, stack, holders):
                loose.append(_one_line(child.tail))
        else:  # an inline element around blocks (a link, <font>, a tag left open): its text runs on
            loose.append(_one_line(child.text))
            stack.append((child, iter(child), loose))


def _html_holders(top) -> set:
    """The inline elements under ``top`` that hold a block, however deep (a link or ``<font>`` around paragraphs,
    an unknown ``<file>`` tag left open): their blocks are read as blocks, not glued into one run."""
    holders: set = set()
    for el in top.iter(*_BREAKS):
        el = el.getparent()
        while el is not None and el.tag not in _BREAKS and el not in holders:
            holders.add(el)
            el = el.getparent()
    return holders


def _holds_blocks(el, holders: set) -> bool:
    """Whether ``el`` is a block or holds one (``holders``: see _html_holders)."""
    return isinstance(el.tag, str) and (el.tag in _BREAKS or el in holders)


def _html_enter(el, out: tags.Blocks, stack: list, holders: set) -> bool:
    """Add ``el`` whole if it is a heading, a row of a data table, ``pre`` or holds no block; else open it
    on ``stack`` (and say so)."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in tags.HEADINGS and not any(_holds_blocks(c, holders) for c in el):
        out.add(_html_flow(el), "heading", depth=tags.HEADINGS[tag])
    elif tag == "pre":
        out.add(_html_flow(el), code=True)
    elif tag == "tr" and not _html_layout_row(el):
        cells = [tags.cell(_html_flow(c, items=True)) for c in el if c.tag in tags.CELLS]
        out.add(" | ".join(c for c in cells if c))
    elif not any(_holds_blocks(c, holders) for c in el):
        out.add(_html_flow(el))
    else:
        label = _html_admonition_label(el)
        if label:
            out.open_label(label, el)
        out.heading = tags.HEADINGS.get(tag, out.heading)  # a heading left open around blocks: its first text
        stack.append((el, iter(el), [_one_line(el.text)]))
        return True
    return False


_LAYOUT = ("pre", "table", *tags.HEADINGS)


def _html_layout_row(tr) -> bool:
    """Whether a table row lays out blocks rather than holding data: one cell with text (a box, a one-column
    table), or a cell with code, a heading or a table of its own. Its cells are read as blocks, not one line."""
    cells = [c for c in tr if c.tag in tags.CELLS]
    if sum(1 for c in cells if c.text_content().strip()) <= 1:
        return True
    return any(next(c.iterdescendants(*_LAYOUT), None) is not None for c in cells)


def _html_admonition_label(el) -> str:
    """The label of a DocBook admonition drawn as a table (an icon and "Tip" in its first row), taken out of
    the table; "" for any other element."""
    if el.tag != "div" or not tags.ADMONITIONS.intersection(el.get("class", "").split()):
        return ""
    table = next((c for c in el if isinstance(c.tag, str)), None)
    first = table.xpath("(tr | tbody/tr)[1]") if table is not None and table.tag == "table" else []
    th = first[0].xpath("th") if first and first[0].xpath("boolean(td//img)") else []
    if not th:
        return ""
    label = " ".join(th[0].text_content().split())
    th[0].drop_tree()
    return label


_BREAKS = tags.BLOCKS.union(tags.HEADINGS)
"""Where a table cell's items part."""
_ITEM_EDGES = ("br", *_BREAKS)


def _one_line(text: str | None) -> str:
    """Text outside ``pre``: its line breaks are the source's, which a browser shows as spaces."""
    return text.replace("\n", " ") if text else ""


def _html_flow(top, *, items: bool = False) -> str:
    """The text under ``top`` with a newline for each ``<br>`` (and with ``items``, around each block: the items
    of a table cell), the source's line breaks as spaces except inside ``pre``; comments left out."""
    if top.tag == "br":
        return "\n"
    if not len(top) or next(top.iterdescendants(*_ITEM_EDGES if items else ("br", "pre")), None) is None:
        return top.text_content() if top.tag == "pre" else _one_line(top.text_content())
    parts: list[str] = []
    pre = top.tag == "pre"
    parts.append(top.text or "" if pre else _one_line(top.text))
    stack = [(top, iter(top))]
    while stack:
        el, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            pre -= el.tag == "pre"
            if stack:
                parts.append("\n" if items and el.tag in _BREAKS else "")
                parts.append(el.tail or "" if pre else _one_line(el.tail))
            continue
        if not isinstance(child.tag, str):  # a comment: only its tail is shown
            parts.append(child.tail or "" if pre else _one_line(child.tail))
            continue
        pre += child.tag == "pre"
        parts.append("\n" if child.tag == "br" or (items and child.tag in _BREAKS) else "")
        parts.append(child.text or "" if pre else _one_line(child.text))
        stack.append((child, iter(child)))
    return "".join(parts)
