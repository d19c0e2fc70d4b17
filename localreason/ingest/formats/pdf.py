"""PDF, through pypdfium2: text per page, blank-line blocks, the outline's titles; scanned pages recognised.

Which pages are scanned (``needs_recognition``): a page keeps its text layer unless images cover at least
``IMAGE_COVER`` of it and its text layer is either nearly empty (fewer than ``MIN_CHARS`` letters, digits or
signs) or junk (``junk``: mostly runs that are not words, as a bad OCR layer or a font without a usable
character map leaves). A page with little text and no large image is a blank or a drawing: nothing to read.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import IngestFileError
from ...text import pages_named
from ..document import BLANK_SPLIT, ParsedDocument, TextBuilder, finish, normalize
from ..recognised import NeedsRecognition, PageReading, Recognition

MIN_CHARS = 20
"""A text layer with fewer visible characters than this on an image-covered page is no reading of it."""
IMAGE_COVER = 0.5
"""A page is a scan (or a photo) when its images cover at least this share of its area. A scanner or a phone's
scanning app covers the whole page; a logo or a figure does not (the Debian Reference's cover, a logo over 42% of
an otherwise empty page, is not recognised: bench/quality/ocr/, "decision")."""
WORDLIKE = 0.5
"""A text layer is junk when fewer than this share of its runs look like words (mostly letters or digits)."""
PLAIN_ALNUM = 0.7
"""A text layer at least this share ASCII letters and digits (English prose is about 0.8) is words: ``junk`` need
not look."""
OCR_OFF_HINT = "text recognition is off (ocr = off); set ocr = auto to read scanned pages"
_NOT_ASCII_ALNUM = bytes(b for b in range(256) if b > 127 or not chr(b).isalnum())


def parse_pdf(data: bytes, path: Path, recognition: Recognition | None = None,
              readings: tuple[PageReading, ...] | None = None) -> ParsedDocument:  # fmt: skip
    """PDF through pypdfium2: text per page (page numbers kept), blank-line blocks, outline titles. Pages without a
    usable text layer raise NeedsRecognition on the first pass (unless ``recognition`` is None: ocr = off) and
    are read from ``readings`` on the second."""
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise IngestFileError(f"corrupt or unreadable PDF ({exc})") from exc
    read = {r.page: r for r in readings or ()}
    try:
        builder = TextBuilder()
        notes: list[str] = []
        scanned: list[int] = []
        for index in range(len(pdf)):
            page = pdf[index]
            try:
                textpage = page.get_textpage()
                raw = _page_text(textpage)
                textpage.close()
                if needs_recognition(page, raw):
                    scanned.append(index + 1)
                    reading = read.get(index + 1)
                    if reading is not None and reading.paragraphs:
                        builder.add_reading(reading)
                        continue  # else its text layer, thin as it is (ocr = off, or nothing recognised)
            finally:
                page.close()
            for block in BLANK_SPLIT.split(normalize(raw)):
                builder.add(_unwrap_lines(block), page=index + 1)
        if scanned and recognition is not None and readings is None:
            raise NeedsRecognition(tuple(scanned), len(pdf))
        outline = _pdf_outline(pdf)
        meta_title = (pdf.get_metadata_value("Title") or "").strip() if hasattr(pdf, "get_metadata_value") else ""
    except pdfium.PdfiumError as exc:
        raise IngestFileError(f"corrupt PDF: reading its pages failed ({exc})") from exc
    finally:
        pdf.close()
    if scanned and recognition is None:
        if not builder.blocks:
            raise IngestFileError(f"the PDF's pages are scanned images with no text layer: {OCR_OFF_HINT}")
        verb = "is" if len(scanned) == 1 else "are"
        notes.append(f"{pages_named(scanned)} {verb} scanned without a text layer and not read: {OCR_OFF_HINT}")
    if not builder.blocks:
        failed = [r.failed for r in read.values() if r.failed]
        if failed:  # every scanned page failed (its time or memory limit): a failure, with the first reason
            raise IngestFileError(f"no page could be read by text recognition: {failed[0]}")
        if scanned:
            raise IngestFileError("the PDF's pages are scanned images, and recognition found no text on them",
                                  status="skipped")  # fmt: skip
        raise IngestFileError("the PDF has no text: its pages hold neither a text layer nor a scanned image",
                              status="skipped")  # fmt: skip
    parsed = finish(builder, path, "pdf", notes)
    parsed.recognized = sorted(read.values(), key=lambda r: r.page)
    parsed.outline = outline
    if meta_title:
        parsed.title = normalize(meta_title, keep_lines=False)
    return parsed


def needs_recognition(page, text: str) -> bool:
    """True when ``page`` (a pypdfium2 page whose text layer reads ``text``) is a scan to be recognised: see the
    module's docstring. The images are only looked at for a page whose text layer is thin or junk."""
    visible = len("".join(text.split()))
    if visible >= MIN_CHARS and (_ascii_alnum(text) >= PLAIN_ALNUM * visible or not junk(text)):
        return False  # enough text, mostly letters and digits (the common case, decided in C), or words anyway
    return image_cover(page) >= IMAGE_COVER


def _ascii_alnum(text: str) -> int:
    """How many of the text's characters are ASCII letters or digits (bytes deleted in C: 0.01 ms a page). Other
    scripts count for nothing here, and are judged by ``junk`` instead."""
    return len(text.encode("utf-8", "ignore").translate(None, _NOT_ASCII_ALNUM))


def junk(text: str) -> bool:
    """True when under half of the text's runs look like words: at least 70% letters or digits, or one sign."""
    runs = text.split()
    if not runs:
        return False
    if len(runs) > 400:  # a sample spread over the page is as good a judge, at a fixed cost per page
        runs = runs[:: len(runs) // 400 + 1]
    wordlike = sum(1 for r in runs if len(r) == 1 or sum(ch.isalnum() for ch in r) >= 0.7 * len(r))
    return wordlike < WORDLIKE * len(runs)


def image_cover(page) -> float:
    """The share of the page's area its image objects cover (their bounding boxes, capped at the whole page)."""
    import pypdfium2.raw as pdfium_c

    width, height = page.get_size()
    if width <= 0 or height <= 0:
        return 0.0
    boxes = []
    for obj in page.get_objects(filter=(pdfium_c.FPDF_PAGEOBJ_IMAGE,), max_depth=3):
        left, bottom, right, top = obj.get_bounds() if hasattr(obj, "get_bounds") else obj.get_pos()  # 5.x / 4.x
        left, right = max(0.0, min(left, right)), min(width, max(left, right))
        bottom, top = max(0.0, min(bottom, top)), min(height, max(bottom, top))
        if right > left and top > bottom:
            boxes.append((left, bottom, right, top))
    if not boxes:
        return 0.0
    if len(boxes) == 1:
        (l, b, r, t), = boxes
        return (r - l) * (t - b) / (width * height)
    return _union_area(boxes) / (width * height)


def _union_area(boxes: list[tuple[float, float, float, float]]) -> float:
    """Area covered by axis-aligned boxes (a sweep over their x edges; pages hold few images)."""
    xs = sorted({x for b in boxes for x in (b[0], b[2])})
    area = 0.0
    for x0, x1 in zip(xs, xs[1:]):
        spans = sorted((b[1], b[3]) for b in boxes if b[0] <= x0 and b[2] >= x1)
        covered, reach = 0.0, None
        for lo, hi in spans:
            if reach is None or lo > reach:
                covered += hi - lo
                reach = hi
            elif hi > reach:
                covered += hi - reach
                reach = hi
        area += covered * (x1 - x0)
    return area


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


_BROKEN_WORD = re.compile(r"(?<![-\w])(\w+)\ufffe(?=[a-z])")
"""pdfium's mark (U+FFFE) of a hyphen at a line end that it joined to the next line: a word broken there
("docu-" / "ment") is one word again; after a word that is part of an option ("--no-" / "color") it stays a hyphen."""


def _unwrap_lines(block: str) -> str:
    # A hyphen at a line end joined with a lower-case continuation is a broken word;
    # dot leaders of a table of contents are noise to search and to the token budget.
    block = _BROKEN_WORD.sub(r"\1", block).replace("\ufffe", "-")
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
