"""HTML, through lxml: the main content's headings and blocks, in document order."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import IngestFileError
from ..document import ParsedDocument, TextBuilder, finish, normalize
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
    for el in root.xpath('//*[@role="navigation" or @role="search" or @aria-hidden="true"]'
                         f' | //aside[not({in_main})]'
                         ' | //a[contains(concat(" ", @class, " "), " headerlink ")]'
                         ' | //div[contains(@class, "sphinxsidebar") or contains(@class, "related")]'):  # fmt: skip
        el.tag = _HTML_DROPPED
    # One pass in C; lxml's drop_tree() per element is quadratic in the text its tails pile up.
    etree.strip_elements(root, _HTML_DROPPED, *tags.DROP, with_tail=False)
    main = root.xpath('//main | //*[@role="main"] | //article')
    builder = TextBuilder()
    _html_walk(main[0] if main else (root.find("body") if root.find("body") is not None else root), builder)
    parsed = finish(builder, path, "html", [])
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


def _html_is_block(el) -> bool:
    return isinstance(el.tag, str) and (el.tag in tags.BLOCKS or el.tag in tags.HEADINGS)


def _html_walk(top, builder: TextBuilder) -> None:
    """Add the headings and text blocks under ``top`` in document order; a loop, so any depth is fine."""
    stack: list[tuple] = []  # (children left, loose text) of each open element with block children
    _html_enter(top, builder, stack)
    while stack:
        children, loose = stack[-1]
        child = next(children, None)
        if child is None:
            builder.add("".join(loose), keep_lines=False)
            stack.pop()
            continue
        if _html_is_block(child):
            # Loose text between block children forms blocks of its own.
            builder.add("".join(loose), keep_lines=False)
            loose.clear()
            _html_enter(child, builder, stack)
        elif isinstance(child.tag, str):
            loose.append(child.text_content())
        loose.append(child.tail or "")


def _html_enter(el, builder: TextBuilder, stack: list) -> None:
    """Add ``el`` whole if it is a heading, row, ``pre`` or has no block children; else open it on ``stack``."""
    tag = el.tag if isinstance(el.tag, str) else ""
    if tag in tags.HEADINGS:
        builder.add(el.text_content(), "heading", depth=tags.HEADINGS[tag], keep_lines=False)
    elif tag == "pre":
        builder.add(el.text_content())
    elif tag == "tr":
        cells = [" ".join(c.text_content().split()) for c in el if c.tag in ("td", "th")]
        builder.add(" | ".join(c for c in cells if c), keep_lines=False)
    elif not any(_html_is_block(c) for c in el):
        builder.add(el.text_content(), keep_lines=False)
    else:
        stack.append((iter(el), [el.text or ""]))
