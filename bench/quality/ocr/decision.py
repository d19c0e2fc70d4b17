"""The ``decision`` part: which pages the usable-text check sends to recognition, on text, scanned and mixed PDFs."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

from .common import OTHER_PDFS
from .pages import Font, saved


class _NoImages:
    """A page with no image objects, for timing needs_recognition's text check alone."""

    @staticmethod
    def get_size():
        return 612.0, 792.0

    @staticmethod
    def get_objects(**_):
        return ()


def decision_original(src: Path) -> list[int]:
    """needs_recognition over every page of ``src``, timed against the text extraction it follows; returns the
    pages flagged. Its parts are timed apart too: the text check (visible characters, ``junk``) on every page,
    and ``image_cover``, which it calls for thin or junk pages only (timed here on every page, for comparison)."""
    import pypdfium2 as pdfium

    from localreason.ingest.formats.pdf import MIN_CHARS, image_cover, junk, needs_recognition

    pdf = pdfium.PdfDocument(src)
    clock = Counter()
    flagged, imaged, thin = [], [], []
    for i in range(len(pdf)):
        t0 = time.perf_counter()
        page = pdf[i]
        textpage = page.get_textpage()
        text = textpage.get_text_range()
        textpage.close()
        t1 = time.perf_counter()
        if needs_recognition(page, text):
            flagged.append(i + 1)
        t2 = time.perf_counter()
        visible = sum(not ch.isspace() for ch in text)
        t2 = time.perf_counter()  # the text check alone, as needs_recognition makes it before any image
        junk(text) if visible < MIN_CHARS else needs_recognition(_NoImages, text)
        t3 = time.perf_counter()
        cover = image_cover(page)
        clock.update(extract=t1 - t0, decide=t2 - t1, text_check=t3 - t2, cover=time.perf_counter() - t3)
        imaged += [f"p.{i + 1} {cover:.0%}"] if cover > 0 else []
        thin += [i + 1] if visible < MIN_CHARS else []
        page.close()
    n, ms = len(pdf), {k: 1000 * v / len(pdf) for k, v in clock.items()}
    print(f"{src.name}, {n} pages: flagged {len(flagged)} {flagged}; pages with images (share of the page they "
          f"cover): {len(imaged)} ({', '.join(imaged[:10])}); pages with under {MIN_CHARS} visible characters: "
          f"{len(thin)} {thin[:10]}")
    print(f"time per page: text extraction {ms['extract']:.2f} ms; the decision adds {ms['decide']:.3f} ms "
          f"({100 * ms['decide'] / ms['extract']:.1f} %); of which the text check (needs_recognition on a page without images) "
          f"{ms['text_check']:.3f} ms; image_cover, were it asked on every page, would take {ms['cover']:.3f} ms")
    return flagged


def read_flagged(src: Path, flagged: list[int], dpi: float, max_pixels: int) -> None:
    """What recognition reads on the original's flagged pages (at most 3), to say whether flagging them paid."""
    from localreason.ingest import ocr

    data = src.read_bytes()
    for number in flagged[:3]:
        t = time.perf_counter()
        image, used = ocr.render_pdf_page(data, number - 1, dpi, max_pixels)
        reading = ocr.recognise(image, number)
        text = " ".join(p.text for p in reading.paragraphs)
        print(f"  p.{number} recognised at {used:.0f} dpi in {time.perf_counter() - t:.1f} s (confidence "
              f"{reading.confidence:.2f}): {text[:120]!r}")


_JUNK = str.maketrans({ch: "#$%&*+<=>@^~|"[i % 13] for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz"
                                                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")})
MIXED = ("text", "scanned", "scanned under a text layer", "scanned under a junk layer")


def mixed(orig: bytes, scanned: bytes, refs: list[str]) -> tuple[bytes, list[str]]:
    """Page i of the original or of its scan, in turn of the four kinds of MIXED; (the PDF, each page's kind)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    text_pdf, scan_pdf = pdfium.PdfDocument(orig), pdfium.PdfDocument(scanned)
    pdf = pdfium.PdfDocument.new()
    font = Font(pdf)
    kinds = []
    for i in range(len(text_pdf)):
        kind = MIXED[i % len(MIXED)]
        pdf.import_pages(text_pdf if kind == "text" else scan_pdf, [i], index=i)
        kinds.append(kind)
        if kind.endswith("layer"):
            page = pdf[i]
            lines = [ln for ln in refs[i].split("\n") if ln.strip()]
            for j, line in enumerate(lines[:60]):
                font.line(page, line.translate(_JUNK) if "junk" in kind else line, 54, 800 - 12 * j, 10, invisible=True)
            raw.FPDFPage_GenerateContent(page.raw)
    data = saved(pdf)
    raw.FPDFFont_Close(font.handle)
    return data, kinds


def run_decision(src: Path, orig: bytes, refs: list[str], scans: dict[float, bytes], dpi: float,
                 max_pixels: int) -> None:  # fmt: skip
    from localreason.ingest.parse import parse_bytes
    from localreason.ingest.recognised import NeedsRecognition, Recognition

    def asked(data: bytes) -> tuple[int, ...]:
        try:
            parse_bytes(data, Path("x.pdf"), "pdf", recognition=Recognition(dpi, max_pixels))
        except NeedsRecognition as need:
            return need.pages
        return ()

    print("\n### the usable-text decision (formats/pdf.needs_recognition)")
    flagged = decision_original(src)
    read_flagged(src, flagged, dpi, max_pixels)
    for other in (p for p in OTHER_PDFS if p.exists() and p != src):  # text PDFs the rule was not set on
        decision_original(other)
    n = len(refs)
    for scan_dpi, data in scans.items():
        print(f"scanned copy at {scan_dpi:g} dpi: flagged {len(asked(data))} of {n} pages")
    data, kinds = mixed(orig, scans[min(scans)], refs)
    flags = set(asked(data))
    print(f"mixed PDF ({n} pages: the original's page or its {min(scans):g} dpi scan, the four kinds in turn):")
    for kind in MIXED:
        pages = [i + 1 for i, k in enumerate(kinds) if k == kind]
        print(f"  {kind}: {len(pages)} pages, flagged {sum(p in flags for p in pages)}")
    truth = {i + 1 for i, k in enumerate(kinds) if k in ("scanned", "scanned under a junk layer")}
    tp, fp = len(flags & truth), len(flags - truth)
    fn, tn = len(truth - flags), n - len(flags | truth)
    print(f"  confusion (positive: a scan without a usable text layer): {tp} true positive, {fp} false positive, "
          f"{fn} false negative, {tn} true negative")
