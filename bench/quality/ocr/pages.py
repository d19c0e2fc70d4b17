"""Making the pages and their scanned copies (pdfium, Pillow), and reading a scan through localreason's own
functions."""

from __future__ import annotations

import ctypes
import io
import time
from dataclasses import dataclass, field
from pathlib import Path

from .common import FONT, vm_hwm, vm_rss


class Font:
    """A TrueType font embedded into a pdfium document, with its metrics (Pillow) for line breaking."""

    def __init__(self, pdf, path: Path = FONT) -> None:
        import pypdfium2.raw as raw
        from PIL import ImageFont

        data = path.read_bytes()
        self._buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)  # pdfium reads it until the save
        self.handle = raw.FPDFText_LoadFont(pdf.raw, self._buf, len(data), raw.FPDF_FONT_TRUETYPE, True)
        self.pdf = pdf
        self._metrics = ImageFont.truetype(str(path), 1000)

    def width(self, text: str, size: float) -> float:
        return self._metrics.getlength(text) * size / 1000

    def line(self, page, text: str, x: float, y: float, size: float, invisible: bool = False) -> None:
        """One line of text with its baseline's left end at (x, y) points from the page's lower left corner."""
        import pypdfium2.raw as raw

        obj = raw.FPDFPageObj_CreateTextObj(self.pdf.raw, self.handle, size)
        units = (text + "\0").encode("utf-16-le")
        raw.FPDFText_SetText(obj, ctypes.cast(ctypes.create_string_buffer(units, len(units)),
                                              ctypes.POINTER(raw.FPDF_WCHAR)))  # fmt: skip
        if invisible:
            raw.FPDFTextObj_SetTextRenderMode(obj, raw.FPDF_TEXTRENDERMODE_INVISIBLE)
        raw.FPDFPageObj_Transform(obj, 1, 0, 0, 1, x, y)
        raw.FPDFPage_InsertObject(page.raw, obj)

    def wrap(self, text: str, size: float, width: float) -> list[str]:
        lines, line = [], ""
        for word in text.split():
            if line and self.width(f"{line} {word}", size) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        return lines + ([line] if line else [])


def saved(pdf) -> bytes:
    buf = io.BytesIO()
    pdf.save(buf)
    return buf.getvalue()


def two_column(paragraphs: list[str], title: str) -> tuple[bytes, str]:
    """An A4 page: ``title`` across the top, then ``paragraphs`` in two columns, left column first (10 pt, ragged
    right). Returns (the PDF, the text as laid out, in reading order)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    width, height, margin, gutter, size, lead = 595.28, 841.89, 54.0, 22.0, 10.0, 12.5
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(width, height)
    font = Font(pdf)
    font.line(page, title, margin, height - margin - 16, 16.0)
    column, top = (width - 2 * margin - gutter) / 2, height - margin - 44
    laid, col, y = [title], 0, top
    for para in paragraphs:
        for text in font.wrap(para, size, column):
            if y < margin:
                col, y = col + 1, top
            if col == 2:
                break
            font.line(page, text, margin + col * (column + gutter), y, size)
            laid.append(text)
            y -= lead
        y -= lead / 2
    raw.FPDFPage_GenerateContent(page.raw)
    data = saved(pdf)
    raw.FPDFFont_Close(font.handle)
    return data, "\n".join(laid)


def original(src: Path, numbers: list[int], extra: bytes) -> bytes:
    """Pages ``numbers`` (1-based) of ``src``, then the pages of the PDF ``extra``, as one PDF."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument.new()
    pdf.import_pages(pdfium.PdfDocument(src), [n - 1 for n in numbers])
    pdf.import_pages(pdfium.PdfDocument(extra))
    return saved(pdf)


def scan(data: bytes, dpi: float) -> bytes:
    """An image-only copy of the PDF ``data``: each page rendered at ``dpi`` and saved as a JPEG image page."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    images = [pdf[i].render(scale=dpi / 72).to_pil().convert("RGB") for i in range(len(pdf))]
    buf = io.BytesIO()
    images[0].save(buf, "PDF", save_all=True, append_images=images[1:], resolution=dpi)
    return buf.getvalue()


# ---------------------------------------------------------------- reading a scan in this process


@dataclass
class Reading:
    dpi: float
    asked: tuple[int, ...]
    page_count: int
    texts: dict[int, str]
    render_s: list[float]
    recognise_s: list[float]
    confidence: list[float]
    load_s: float
    rss_loaded_mb: float
    peak_mb: float
    read_dpi: list[float] = field(default_factory=list)
    """The resolution the recogniser saw: rapidocr scales an image down to ``max_side_len`` px on its longer side."""


def page_texts(doc) -> dict[int, str]:
    out: dict[int, list[str]] = {}
    for b in doc.blocks:
        out.setdefault(b.page or 0, []).append(doc.text[b.start:b.end])
    return {p: "\n".join(parts) for p, parts in out.items()}


def read_scan(data: bytes, dpi: float, max_pixels: int, max_side: int | None = None) -> Reading:
    """localreason's two passes over a scanned PDF, with the pages recognised here between them (run in a fresh
    process per resolution, ``in_child``, so that its peak memory is this reading's alone). ``max_side``: the
    longer side the recogniser scales a page to (``ocr.MAX_SIDE``), when not the shipped one."""
    from localreason.ingest import ocr
    from localreason.ingest.parse import parse_bytes
    from localreason.ingest.recognised import NeedsRecognition, Recognition

    if max_side:
        ocr.MAX_SIDE = max_side

    recognition, path = Recognition(dpi, max_pixels), Path(f"scan-{dpi:g}dpi.pdf")
    try:
        parse_bytes(data, path, "pdf", recognition=recognition)
        asked, count = (), 0
    except NeedsRecognition as need:
        asked, count = need.pages, need.page_count
    t = time.perf_counter()
    ocr.engine()
    longest = ocr.MAX_SIDE
    load_s, loaded = time.perf_counter() - t, vm_rss()
    readings, render_s, recognise_s, read_dpi = [], [], [], []
    for number in asked:
        t0 = time.perf_counter()
        image, used = ocr.render_pdf_page(data, number - 1, dpi, max_pixels)
        t1 = time.perf_counter()
        readings.append(ocr.recognise(image, number))
        render_s.append(t1 - t0)
        recognise_s.append(time.perf_counter() - t1)
        read_dpi.append(used * min(1.0, longest / max(image.shape[:2])))
        del image
    doc = parse_bytes(data, path, "pdf", recognition=recognition, readings=tuple(readings))
    return Reading(dpi, asked, count, page_texts(doc), render_s, recognise_s, [r.confidence for r in readings],
                   load_s, loaded, vm_hwm(), read_dpi)  # fmt: skip


def in_child(function, *args):
    """``function(*args)`` in a new interpreter (multiprocessing's spawn: nothing of this process inherited)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()
