"""PDF, through pypdfium2: text per page, blank-line blocks, the outline's titles."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import IngestFileError
from ..document import BLANK_SPLIT, ParsedDocument, TextBuilder, finish, normalize


def parse_pdf(data: bytes, path: Path) -> ParsedDocument:
    """PDF through pypdfium2: text per page (page numbers kept), blank-line blocks, outline titles."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise IngestFileError(f"corrupt or unreadable PDF ({exc})") from exc
    try:
        builder = TextBuilder()
        notes: list[str] = []
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                raw = _page_text(textpage)
                textpage.close()
            finally:
                page.close()
            for block in BLANK_SPLIT.split(normalize(raw)):
                builder.add(_unwrap_lines(block), page=index + 1)
        outline = _pdf_outline(pdf)
        meta_title = (pdf.get_metadata_value("Title") or "").strip() if hasattr(pdf, "get_metadata_value") else ""
    except pdfium.PdfiumError as exc:
        raise IngestFileError(f"corrupt PDF: reading its pages failed ({exc})") from exc
    finally:
        pdf.close()
    if not builder.blocks:
        raise IngestFileError("the PDF has no extractable text (scanned images need OCR first)")
    parsed = finish(builder, path, "pdf", notes)
    parsed.outline = outline
    if meta_title:
        parsed.title = normalize(meta_title, keep_lines=False)
    return parsed


def _page_text(textpage) -> str:
    """The page's text; by its bounding box if pypdfium2 cannot give it by character range.

    pypdfium2 recurses once per excluded character at either end of a page, so a page
    with a thousand of them raises RecursionError (wrapped in a ctypes ArgumentError).
    """
    import ctypes

    try:
        return textpage.get_text_range()
    except (RecursionError, ctypes.ArgumentError):
        return textpage.get_text_bounded()


_DOT_LEADER = re.compile(r"(?:\. ?){4,}")


def _unwrap_lines(block: str) -> str:
    # A hyphen at a line end joined with a lower-case continuation is a broken word;
    # dot leaders of a table of contents are noise to search and to the token budget.
    return _DOT_LEADER.sub(" … ", re.sub(r"(\w)-\n(?=[a-z])", r"\1", block))


def _pdf_outline(pdf) -> dict[int, tuple[str, ...]]:
    """Page number -> the bookmark path in force at that page's start."""
    try:
        items = list(pdf.get_toc(max_depth=6))
    except Exception:  # a damaged outline is no reason to lose the text
        return {}
    starts: list[tuple[int, int, str]] = []
    for item in items:
        dest = item.get_dest()
        page_index = dest.get_index() if dest is not None else None
        title = normalize(item.get_title() or "", keep_lines=False)
        if page_index is not None and title:
            starts.append((page_index + 1, item.level, title))
    starts.sort(key=lambda s: s[0])
    outline: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[int, str]] = []
    j = 0
    for page in range(1, len(pdf) + 1):
        while j < len(starts) and starts[j][0] <= page:
            _, level, title = starts[j]
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            j += 1
        if stack:
            outline[page] = tuple(t for _, t in stack)
    return outline
