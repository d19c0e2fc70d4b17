"""Markdown, through markdown-it-py (CommonMark with tables)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from ..document import ParsedDocument, TextBuilder, decode_text, finish
from .plain import parse_plain


def parse_markdown(data: bytes, path: Path) -> ParsedDocument:
    """Markdown through markdown-it-py: headings, paragraphs, list items, code, tables, as plain text.

    markdown-it silently drops everything after a list or quote nested past 20 levels;
    such a file is read as plain text instead, with a note.
    """
    from markdown_it import MarkdownIt
    from mdit_py_plugins.footnote import footnote_plugin

    notes: list[str] = []
    source = decode_text(data, notes)
    md = MarkdownIt("commonmark").enable("table").use(footnote_plugin)  # GFM's tables and footnotes
    md.core.ruler.at("inline", _budgeted_inline(len(source), notes))
    _refuse_to_skip_deep_blocks(md)
    try:
        tokens = md.parse(source)
    except _MarkdownTooDeep:
        parsed = parse_plain(data, path, "text")
        parsed.format = "markdown"
        parsed.notes.append("lists or quotes nested deeper than the Markdown reader goes: read as plain text, "
                            "so the markup is left as written")  # fmt: skip
        return parsed
    builder = TextBuilder()
    cells: list[str] = []
    label = ""  # what the next paragraph starts with, as a reader sees it: a footnote's or a list item's number
    numbers: list[int | None] = []  # the next number of each open list (None: a bullet list)
    for i, tok in enumerate(tokens):
        if tok.type == "footnote_open":
            label = f"[{tok.meta.get('id', 0) + 1}] "
        elif tok.type in ("ordered_list_open", "bullet_list_open"):
            start = tok.attrGet("start") if tok.type == "ordered_list_open" else None
            numbers.append(int(start) if isinstance(start, (int, str)) and str(start).isdigit() else
                           (1 if tok.type == "ordered_list_open" else None))  # fmt: skip
        elif tok.type in ("ordered_list_close", "bullet_list_close") and numbers:
            numbers.pop()
        elif tok.type in ("list_item_close", "footnote_close"):
            label = ""  # a number not used by the item's first paragraph (it began with code) is not carried on
        elif tok.type == "list_item_open" and numbers and numbers[-1] is not None:
            label = f"{numbers[-1]}{tok.markup or '.'} "
            numbers[-1] += 1
        elif tok.type == "inline":
            prev = tokens[i - 1].type if i else ""
            text = _inline_text(tok)
            if label and prev == "paragraph_open":
                text, label = label + text, ""
            if prev == "heading_open":
                builder.add(text, "heading", depth=int(tokens[i - 1].tag[1:]), keep_lines=False)
            elif prev in ("th_open", "td_open"):
                cells.append(" ".join(text.split()))
            else:
                builder.add(text)
        elif tok.type in ("fence", "code_block"):
            builder.add(tok.content)
        elif tok.type == "html_block":
            builder.add(html.unescape(_strip_tags(tok.content)).strip())
        elif tok.type == "tr_close":
            builder.add(" | ".join(cells))
            cells = []
    return finish(builder, path, "markdown", notes)


class _MarkdownTooDeep(Exception):
    """markdown-it reached its nesting limit with lines left, which it would skip."""


def _refuse_to_skip_deep_blocks(md) -> None:
    """Make ``md`` raise _MarkdownTooDeep where its block parser would drop the rest of a container."""
    tokenize = md.block.tokenize
    limit = md.options["maxNesting"]

    def guarded(state, start: int, end: int) -> None:
        line = state.skipEmptyLines(start)
        if state.level >= limit and line < end and state.sCount[line] >= state.blkIndent:
            raise _MarkdownTooDeep
        tokenize(state, start, end)

    md.block.tokenize = guarded


_MD_BUDGET = 100_000
"""Inline-markup cost every Markdown file may spend, plus 1 per 8 characters of it (see ``_markup_cost``)."""


def _markup_cost(text: str) -> int:
    """Rough cost of inline-parsing ``text``, in units of about 5 µs.

    markdown-it-py spends about 30 µs on each ``[`` (a possible link) and 10 µs on each
    emphasis mark, whatever follows them, so a file made of them alone would take hours.
    """
    return 6 * text.count("[") + 2 * (text.count("*") + text.count("_")) + text.count("&") + text.count("<")


def _budgeted_inline(source_len: int, notes: list[str]):
    """markdown-it's core "inline" rule, but paragraphs past the cost budget keep their markup as text."""
    from markdown_it.token import Token

    budget = _MD_BUDGET + source_len // 8
    note = "so much Markdown markup that some paragraphs were read with their markup left as written"

    def inline(state) -> None:
        nonlocal budget
        for token in state.tokens:
            if token.type != "inline":
                continue
            token.children = []
            cost = _markup_cost(token.content)
            if cost <= budget:
                budget -= cost
                state.md.inline.parse(token.content, state.md, state.env, token.children)
                continue
            token.children.append(Token("text", "", 0, content=token.content))
            if note not in notes:
                notes.append(note)

    return inline


def _inline_text(tok) -> str:
    out = []
    for child in tok.children or []:
        if child.type in ("text", "code_inline"):
            out.append(child.content)
        elif child.type == "footnote_ref":
            out.append(f"[{child.meta.get('id', 0) + 1}]")
        elif child.type == "softbreak":
            out.append(" ")  # a line break inside a paragraph: the reader sees a space
        elif child.type == "hardbreak":
            out.append("\n")
        elif child.type == "image":
            out.append(child.content or "")
        elif child.type == "html_inline" and _BR.fullmatch(child.content.strip()):
            out.append("\n")  # a line break written as HTML (a table cell's "-a<br>--all"): not a glued word
    return "".join(out)


_BR = re.compile(r"<br\s*/?>", re.I)


_TAG = re.compile(r"<[^<>]+>")  # a run of "<" costs one scan each, not one to the end


def _strip_tags(html: str) -> str:
    return _TAG.sub(" ", html)
