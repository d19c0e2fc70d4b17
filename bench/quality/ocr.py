#!/usr/bin/env python3
"""Scanned pages: what text recognition reads, against an independent reading of the same pages; its cost.

The pages are real: a seeded sample of body pages of the Debian Reference PDF (debian-reference-en, 261 pages
with a text layer), its most tabular page (the page holding a "Table N.N" caption whose lines, as
``pdftotext -layout`` shows them, most often hold three cells or more), and a two-column page this script
sets from the same document's prose (DejaVu Serif 10 pt, a title across both columns, a text layer of its
own, drawn with pdfium). Together they are the "original", a PDF with a text layer.

Its **scanned copies**: each page rendered by pdfium at 150 and 300 dpi (``--dpi``) and saved by Pillow as a
PDF of images only (JPEG, Pillow's default quality 75): no text layer. Each copy is read through localreason's
own functions, in a process of this benchmark (a fresh one per dpi): ``parse_bytes`` (the first pass must ask
for every page: the usable-text decision on a scan), then per page ``ocr.render_pdf_page`` at the scan's
resolution and ``ocr.recognise`` (timed), then ``parse_bytes`` again with the readings; the stored text of a
page is its blocks' (``Block.page``). The ingest's own path (the recognition worker) is the search part's.

Parts (``--parts``, all by default, in this order):

- ``scans``: per page and dpi, word recall and precision of the stored text against ``pdftotext -f P -l P`` of
  the original page (bench.quality.fidelity's rules: words are runs of letters and digits, lower-cased,
  counted with multiplicity; both sides NFKC-normalised), "in order" (the share of the word 4-grams of the
  page as ``pdftotext -layout`` reads it, rows across, found in the recognised text: lines or table cells out
  of order lower it), seconds per page (rendering and recognition apart; p50 and mean), and peak memory: the
  RSS high-water mark (VmHWM) of the process that recognised them, a fresh one per dpi (multiprocessing's
  spawn) that loads the recogniser and nothing else of this run. The table page adds its rows (lines of
  ``pdftotext -layout`` with 3+ cells) found whole, cell after cell; the two-column page its reading order
  against the text as it was laid out; both beside the text layer read by localreason, by ``pdftotext`` and by
  ``pdftotext -layout`` (which reads across the columns: what interleaving scores).
- ``decision``: ``pdf.needs_recognition`` over every page of the whole Debian Reference PDF (pages flagged and
  what recognition reads on them, the time it adds to text extraction per page), over the scanned copies, and
  over a mixed PDF: text pages, scanned pages, scanned pages under a text layer (as OCR software saves them),
  scanned pages under a junk layer (letters mapped to signs, as a font without a usable character map leaves):
  the confusion counts.
- ``textpdf`` (issue #33, part 5): the text PDF through the real ingest (``Library.ingest``, the packaged
  embedding model), ``ocr = auto`` against ``ocr = off`` in the same run, alternating. The first ingest of a
  PDF embeds everything (its time is shown); the timed ones ingest copies of the same bytes under new names,
  which reuse those vectors, so they time what recognition could change (parse, decision, chunking, store).
  Twice: Debian Reference pages 2-261 (no page needs recognition: no recognition worker may start: the
  worker registry and this process's children are checked, and the parse worker's memory maps for
  OpenCV/OpenVINO libraries) and the whole PDF (its page 1, the cover, is an image without a text layer).
- ``parse``: ``parse_bytes`` of the whole text PDF, timed; run it on the checkout before the change as well
  (``PYTHONPATH=<checkout>:$PWD python -P -m bench.quality.ocr --parts parse``) for "a text PDF costs no more".
- ``scripts``: one printed line in each of five scripts (German, French, Polish and Turkish, Cyrillic, Greek),
  recognised: which the packaged model reads (word recall) and how confident it is when it cannot.
- ``search``: two libraries made by the real ingest (temporary homes, ``ocr_dpi`` = ``--search-dpi``): the
  original and its scanned copy at that dpi (recognised by the recognition worker, ``ingest/worker.py``). Two
  sentences (8+ words, seeded) from each page's pdftotext are searched (``deep_search(limit=3)``) in both; a hit
  is a returned chunk whose pages cover the sentence's page. Also the worker's peak RSS (VmHWM).

Goals (the issue): recall >= 0.95 at 300 dpi, >= 0.90 at 150 dpi; search top-3 on the scans as often as on text.

    python -m bench.quality.ocr                          # 12 body pages, a table, two columns (10-12 min, 2 cores)
    python -m bench.quality.ocr --pages 2 --parts scans  # a quick look (2 min)
"""

from __future__ import annotations

import argparse
import ctypes
import io
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.quality.fidelity import _TOC_LINE, words as _words

PDF = Path("/usr/share/debian-reference/debian-reference.en.pdf")
INSTALL = "apt-get install -y poppler-utils debian-reference-en"
FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf")
OTHER_PDFS = (Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
              Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"))
"""Other text PDFs found on these machines (where installed): the decision's rule was not set on them."""
PARTS = ("scans", "decision", "textpdf", "search", "parse", "scripts")
_CAPTION = re.compile(r"(?m)^Table \d+\.\d+:")
_CELL_GAP = re.compile(r"\S {3,}(?=\S)")


def words(text: str) -> list[str]:
    return _words(unicodedata.normalize("NFKC", text))


# ---------------------------------------------------------------- the machine, the tools


def cpu() -> str:
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
                 "unknown CPU")  # fmt: skip
    return f"{model}, {len(os.sched_getaffinity(0))} cores usable ({os.cpu_count()} online)"


def require(pdf: Path) -> None:
    missing = [name for name in ("pdftotext",) if shutil.which(name) is None]
    if not pdf.is_file():
        missing.append(str(pdf))
    if not FONT.is_file():
        missing.append(f"{FONT} (apt-get install -y fonts-dejavu-core)")
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)}. Install them: {INSTALL} (or name a PDF with --pdf)")


def pdftotext(path: Path, layout: bool = False) -> list[str]:
    """The text of each page (``pages[0]`` is page 1), as poppler's pdftotext reads it."""
    cmd = ["pdftotext", "-enc", "UTF-8", *(["-layout"] if layout else []), str(path), "-"]
    out = subprocess.run(cmd, capture_output=True, check=True, timeout=300).stdout.decode("utf-8", "replace")
    pages = out.split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def vm_hwm(pid: int | str = "self") -> float:
    """A process's peak resident memory (VmHWM) in MB."""
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def vm_rss() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def workers() -> dict[int, str]:
    """This process's localreason worker children: pid -> kind (``parse`` or ``ocr``)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            args = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and "localreason.ingest.worker" in args:
            at = args.index("localreason.ingest.worker")  # then: two descriptors, the memory limit, the kind
            found[int(entry)] = args[at + 4] if len(args) > at + 4 else "parse"
    return found


def loaded_libraries(pid: int, names=("cv2", "openvino", "onnxruntime", "rapidocr")) -> list[str]:
    """Which of ``names`` occur in the shared objects mapped into process ``pid``."""
    maps = open(f"/proc/{pid}/maps").read()
    return [n for n in names if n in maps]


# ---------------------------------------------------------------- comparing texts


def recall_precision(stored: str, ref: str) -> tuple[float, float]:
    s, r = Counter(words(stored)), Counter(words(ref))
    common = sum((s & r).values())
    return common / max(sum(r.values()), 1), common / max(sum(s.values()), 1)


def grams(ws: list[str], n: int = 4) -> list[tuple[str, ...]]:
    return [tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)]


def in_order(stored: str, reference: str, n: int = 4) -> float:
    """The share of ``reference``'s word n-grams that occur, as consecutive words, in ``stored``."""
    want = grams(words(reference), n)
    have = set(grams(words(stored), n))
    return sum(g in have for g in want) / max(len(want), 1)


def rows_found(stored: str, rows: list[str]) -> float:
    """The share of ``rows`` whose words occur whole and in order in ``stored``."""
    flat = " " + " ".join(words(stored)) + " "
    return sum((" " + " ".join(words(r)) + " ") in flat for r in rows) / max(len(rows), 1)


def wordy(text: str, share: float) -> bool:
    """At least ``share`` of the text's runs are words of letters (punctuation aside): prose, not commands."""
    runs = text.split()
    return sum(r.strip(".,;:()”“\"'").isalpha() for r in runs) >= share * len(runs)


def sentences(page_text: str, least: int = 8, most: int = 40) -> list[str]:
    """The page's sentences of ``least`` to ``most`` words, mostly of words (not commands or tables)."""
    out = []
    for para in re.split(r"\n\s*\n", page_text):
        flat = " ".join(para.split())
        out += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", flat)
                if least <= len(words(s)) <= most and wordy(s, 0.7)]  # fmt: skip
    return out


# ---------------------------------------------------------------- the pages


@dataclass
class Page:
    label: str
    kind: str
    """``body``, ``table`` or ``two-column``."""
    ref: str = ""
    """pdftotext of the page in the original."""
    order: str = ""
    """The text its reading order is checked against: ``pdftotext -layout`` (rows read across, as one reads a
    one-column page and a table), or for the two-column page the text as it was laid out."""
    rows: list[str] = field(default_factory=list)


def cell_lines(layout_page: str) -> list[str]:
    return [ln.strip() for ln in layout_page.split("\n") if len(_CELL_GAP.findall(ln.strip())) >= 2]


def body_pages(ref: list[str], least: int = 150) -> list[int]:
    """Pages (1-based) of at least ``least`` words that are not mostly table-of-contents lines (as fidelity)."""
    out = []
    for number, text in enumerate(ref, start=1):
        lines = [ln for ln in text.split("\n") if ln.strip()]
        toc = sum(bool(_TOC_LINE.search(ln)) for ln in lines) > len(lines) / 2
        if len(words(text)) >= least and not toc:
            out.append(number)
    return out


def choose(ref: list[str], layout: list[str], n: int, seed: int) -> tuple[list[int], int, int]:
    """(``n`` body pages, one drawn from each of ``n`` equal stretches of them; the table page; the page
    whose prose the two-column page starts from)."""
    rng = random.Random(seed)
    captioned = [p for p in range(1, len(ref) + 1) if _CAPTION.search(ref[p - 1])]
    share = {p: len(cell_lines(layout[p - 1])) / max(len([ln for ln in layout[p - 1].split("\n") if ln.strip()]), 1)
             for p in captioned}  # fmt: skip
    table = max(captioned, key=lambda p: (share[p], -p))
    body = [p for p in body_pages(ref) if p != table]
    step = len(body) / max(n, 1)
    sample = [body[int(i * step) + rng.randrange(max(int(step), 1))] for i in range(n)]
    rest = [p for p in body if p not in sample and p + 1 not in sample]
    return sample, table, rng.choice(rest[: len(rest) * 3 // 4])


def prose(ref: list[str], start: int, enough: int = 1200) -> list[str]:
    """Paragraphs of running text from page ``start`` on, until ``enough`` words."""
    out, total = [], 0
    for text in ref[start - 1:]:
        for para in re.split(r"\n\s*\n", text):
            flat = " ".join(para.split())
            runs = flat.split()
            if len(runs) < 25 or not flat.endswith(".") or "$ " in flat or flat.startswith("Debian Reference"):
                continue
            if not wordy(flat, 0.8):
                continue
            out.append(flat)
            total += len(runs)
            if total >= enough:
                return out
    return out


# ---------------------------------------------------------------- making PDFs with pdfium


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


# ---------------------------------------------------------------- part: scans


def summary(values: list[float]) -> str:
    return f"mean {statistics.fmean(values):.3f}  median {statistics.median(values):.3f}"


def worst(pages: list[Page], values: list[float]) -> str:
    value, label = min(zip(values, (p.label for p in pages)))
    return f"worst {value:.3f} ({label})"


def report_scan(pages: list[Page], r: Reading, size: int) -> dict:
    print(f"\n### scanned at {r.dpi:g} dpi: {len(pages)} pages, {size / 1e6:.1f} MB of images (no text layer); "
          f"the first pass asked for {len(r.asked)} of {r.page_count} pages; rendered for recognition at {r.dpi:g} dpi")
    print("| page | words | recall | precision | in order | table rows | render s | recognise s | confidence |")
    print("|---|---|---|---|---|---|---|---|---|")
    scores = []
    for number, page in enumerate(pages, start=1):
        text = r.texts.get(number, "")
        recall, precision = recall_precision(text, page.ref)
        order = in_order(text, page.order)
        rows = f"{rows_found(text, page.rows):.3f} of {len(page.rows)}" if page.rows else ""
        i = r.asked.index(number) if number in r.asked else None
        timing = f"{r.render_s[i]:.2f} | {r.recognise_s[i]:.2f} | {r.confidence[i]:.3f}" if i is not None else "| |"
        print(f"| {page.label} | {len(words(page.ref))} | {recall:.3f} | {precision:.3f} | {order:.3f} | {rows} | "
              f"{timing} |")
        scores.append((page, recall, precision, order))
    body = [s for s in scores if s[0].kind == "body"]
    out = {"recall": [s[1] for s in body], "precision": [s[2] for s in body], "order": [s[3] for s in body]}
    named = [s[0] for s in body]
    print(f"body pages ({len(body)}): recall {summary(out['recall'])}  {worst(named, out['recall'])}")
    print(f"                precision {summary(out['precision'])}  {worst(named, out['precision'])}")
    print(f"                in order {summary(out['order'])}  {worst(named, out['order'])}")
    total = [a + b for a, b in zip(r.render_s, r.recognise_s)]
    if total:
        print(f"seconds per page ({len(total)} pages): render p50 {statistics.median(r.render_s):.2f} mean "
              f"{statistics.fmean(r.render_s):.2f}; recognise p50 {statistics.median(r.recognise_s):.2f} mean "
              f"{statistics.fmean(r.recognise_s):.2f}; both p50 {statistics.median(total):.2f} mean "
              f"{statistics.fmean(total):.2f}, worst {max(total):.2f}")
    if r.read_dpi and min(r.read_dpi) < r.dpi - 0.5:
        low, high = round(min(r.read_dpi)), round(max(r.read_dpi))
        print("the recogniser scaled the page images down (ocr.MAX_SIDE, rapidocr's Global.max_side_len): it read "
              "them at "
              f"{low if low == high else f'{low}-{high}'} dpi")
    print(f"recogniser loaded in {r.load_s:.1f} s (with a first run on a blank image: the models compile then); peak "
          f"memory {r.peak_mb:.0f} MB: the RSS high-water mark (VmHWM) of the process that recognised these pages (a "
          f"fresh one per dpi; {r.rss_loaded_mb:.0f} MB once it had loaded the recogniser)")
    goal = {300: 0.95, 150: 0.90}.get(int(r.dpi))
    if goal is not None and out["recall"]:
        met = statistics.fmean(out["recall"]) >= goal
        under = [f"{p.label} {v:.3f}" for p, v in zip(named, out["recall"]) if v < goal]
        print(f"goal: recall >= {goal} at {r.dpi:g} dpi: mean {'met' if met else 'NOT met'}; pages under it: "
              f"{', '.join(under) or 'none'}")
    page, _, _, _ = min(body, key=lambda s: s[1], default=(None,) * 4)
    if page is not None:
        text = r.texts.get(pages.index(page) + 1, "")
        missed = Counter(words(page.ref)) - Counter(words(text))
        extra = Counter(words(text)) - Counter(words(page.ref))
        print(f"{page.label}, the lowest recall: not read {sum(missed.values())} words, most often "
              f"{', '.join(f'{w} {c}' for w, c in missed.most_common(8))}; read and not in the reference "
              f"{sum(extra.values())}, most often {', '.join(f'{w} {c}' for w, c in extra.most_common(8))}")
    out["texts"] = r.texts
    return out


def report_layout(pages: list[Page], orig: bytes, layout: list[str], results: dict) -> None:
    """The table and two-column pages against what the text layer gives, read three ways."""
    from localreason.ingest.parse import parse_bytes

    ours = page_texts(parse_bytes(orig, Path("original.pdf"), "pdf"))
    print("\n### the table and the two-column page: recognised against their text layer")
    for number, page in enumerate(pages, start=1):
        if page.kind == "body":
            continue
        readers = {"text layer read by localreason": ours.get(number, ""), "pdftotext": page.ref,
                   "pdftotext -layout": layout[number - 1]}  # fmt: skip
        readers.update({f"recognised at {dpi:g} dpi": r["texts"].get(number, "") for dpi, r in results.items()})
        if page.kind == "table":
            what = f"{page.label}: table rows ({len(page.rows)} lines of pdftotext -layout with 3+ cells) found whole"
            values = {name: rows_found(text, page.rows) for name, text in readers.items()}
        else:
            what = f"{page.label}: reading order (the share of the laid-out text's word 4-grams found in order)"
            values = {name: in_order(text, page.order) for name, text in readers.items()}
        print(what + ": " + ", ".join(f"{name} {v:.3f}" for name, v in values.items()))


def run_scans(pages: list[Page], orig: bytes, layout: list[str], scans: dict[float, bytes], max_pixels: int,
              max_side: int | None = None) -> dict:  # fmt: skip
    results = {dpi: report_scan(pages, in_child(read_scan, data, dpi, max_pixels, max_side), len(data))
               for dpi, data in scans.items()}  # fmt: skip
    report_layout(pages, orig, layout, results)
    return results


# ---------------------------------------------------------------- part: scripts


SCRIPTS = {
    "German": "Die Größe der Straße ändert sich nicht, sagt der Bürgermeister.",
    "French": "L'été à Noël, où êtes-vous allés avec la clé du garçon ?",
    "Polish, Turkish": "Zażółć gęślą jaźń. Çok güzel bir gün, değil mi?",
    "Russian (Cyrillic)": "Привет, как дела? Это русский текст о насосе.",
    "Greek": "Ελληνικά γράμματα εδώ, για την αντλία νερού.",
}
"""One printed line per script, for what the packaged model reads (README, "Scanned pages and photos": limits)."""


def run_scripts() -> None:
    """Each line of SCRIPTS drawn in DejaVu Sans 30 px on white and recognised: word recall and confidence."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    from localreason.ingest import ocr

    font = ImageFont.truetype(str(FONT.with_name("DejaVuSans.ttf")), 30)
    print("\n### one printed line per script (DejaVu Sans, 30 px)")
    print("| script | word recall | confidence | read as |")
    print("|---|---|---|---|")
    for name, line in SCRIPTS.items():
        image = Image.new("RGB", (1400, 120), "white")
        ImageDraw.Draw(image).text((30, 40), line, fill="black", font=font)
        reading = ocr.recognise(np.ascontiguousarray(np.asarray(image)[:, :, ::-1]), 1)
        text = " ".join(p.text for p in reading.paragraphs).replace("\n", " ")
        recall, _ = recall_precision(text, line)
        print(f"| {name} | {recall:.2f} | {reading.confidence:.2f} | {text!r} |")


# ---------------------------------------------------------------- part: parse (against another checkout)


def run_parse(src: Path, rounds: int = 5) -> None:
    """``parse_bytes`` of the whole text PDF, timed (median of ``rounds`` after one warm-up), in whichever
    localreason this runs: run it on the checkout before the change too (bench/README.md, "To compare two
    checkouts") for the cost of the change to a text PDF's parse; says whether a recognition library was imported."""
    import sys

    import localreason
    from localreason.ingest.parse import parse_bytes

    data = src.read_bytes()
    parse_bytes(data, Path(src.name), "pdf")
    seconds = []
    for _ in range(rounds):
        t = time.perf_counter()
        doc = parse_bytes(data, Path(src.name), "pdf")
        seconds.append(time.perf_counter() - t)
    loaded = [m for m in ("PIL", "cv2", "rapidocr", "openvino") if m in sys.modules]
    print(f"\n### parse_bytes of {src.name} ({len(doc.text):,} characters) in {Path(localreason.__file__).parent}: "
          f"median {statistics.median(seconds):.3f} s of {rounds} ({' '.join(f'{s:.3f}' for s in seconds)}); "
          f"recognition libraries imported: {', '.join(loaded) or 'none'}")


# ---------------------------------------------------------------- part: the usable-text decision


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


# ---------------------------------------------------------------- part: a text PDF costs no more (issue #33, part 5)


def ocr_worker(settings):
    """The process's recognition worker for these settings, if one was made (the limits pipeline.py gives it)."""
    from localreason.ingest.worker import Limits, existing_worker

    return existing_worker(Limits(settings.ocr_page_seconds, settings.ocr_memory_mb, 0), "ocr")


def timed_ingest(settings, embedder, path: Path) -> tuple[float, str]:
    from localreason.library import Library

    with Library(settings=settings, embedder=embedder) as lib:
        t = time.perf_counter()
        report = lib.ingest([path], "bench")
        seconds = time.perf_counter() - t
    result = report.files[0]
    if result.status != "added":
        raise SystemExit(f"{path.name} was not ingested: {result.status} {result.reason}")
    return seconds, result.reason


def textpdf_case(name: str, data: bytes, embedder, reps: int, base: Path) -> None:
    from localreason.config import load_settings

    base.mkdir(parents=True)
    modes = {m: load_settings(base / "home", reader="off", ocr=m) for m in ("auto", "off")}
    firsts = {}
    for mode in ("off", "auto"):  # each setting reads a PDF under its own key: a first ingest under each
        (base / f"first-{mode}.pdf").write_bytes(data)
        firsts[mode], _ = timed_ingest(modes[mode], embedder, base / f"first-{mode}.pdf")
    first_s = firsts["off"]
    had_worker = ocr_worker(modes["auto"]) is not None or "ocr" in workers().values()
    times: dict[str, list[float]] = {"auto": [], "off": []}
    notes = {}
    for i in range(reps):
        for mode in ("auto", "off") if i % 2 == 0 else ("off", "auto"):
            path = base / f"copy-{i}-{mode}.pdf"
            path.write_bytes(data)
            seconds, notes[mode] = timed_ingest(modes[mode], embedder, path)
            times[mode].append(seconds)
    kids = workers()
    print(f"\n{name}: first ingests (embedding every chunk) {first_s:.1f} s with ocr = off, {firsts['auto']:.1f} s with "
          "ocr = auto (a PDF's reading key holds the setting, so each has its own); then copies of the same bytes "
          "(their vectors reused: parse, decision, chunking, store), in turn:")
    for mode in ("auto", "off"):
        print(f"  ocr = {mode}: " + " ".join(f"{s:.2f}" for s in times[mode]) + f" s (median "
              f"{statistics.median(times[mode]):.2f} s); the report says: {notes[mode] or '(nothing)'}")
    print(f"  ratio auto / off (medians): {statistics.median(times['auto']) / statistics.median(times['off']):.3f}"
          + ("; the first ocr = auto ingest started the recognition worker (a process, its model loaded)"
             if ocr_worker(modes["auto"]) is not None and not had_worker else ""))
    worker = ocr_worker(modes["auto"])
    ocr_pids = [pid for pid, kind in kids.items() if kind == "ocr"]
    started = "already running before" if had_worker else ("yes" if worker is not None or ocr_pids else "no")
    print(f"  recognition worker started: {started} (registry: {'a worker' if worker else 'none'}; child processes "
          f"of kind ocr: {ocr_pids or 'none'})" + "".join(f"; its peak RSS {vm_hwm(p):.0f} MB" for p in ocr_pids))
    for pid in (p for p, kind in kids.items() if kind == "parse"):
        print(f"  parse worker (pid {pid}): libraries of recognition loaded: {loaded_libraries(pid) or 'none'}")
    if worker is not None:
        worker.close()  # the search part starts its own


def run_textpdf(src: Path, embedder, reps: int, base: Path) -> None:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(src)
    count = len(pdf)
    rest = pdfium.PdfDocument.new()
    rest.import_pages(pdf, list(range(1, count)))
    print(f"\n### a text PDF through the real ingest, ocr = auto against ocr = off ({reps} rounds, alternating)")
    textpdf_case(f"{src.name} pages 2-{count} (no page needs recognition)", saved(rest), embedder, reps,
                 base / "textpdf-rest")  # fmt: skip
    textpdf_case(f"{src.name}, all {count} pages", src.read_bytes(), embedder, reps, base / "textpdf-all")


# ---------------------------------------------------------------- part: search parity


def build(name: str, data: bytes, dpi: float, embedder, base: Path):
    from localreason.config import load_settings
    from localreason.library import Library

    path = base / f"{name}.pdf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    lib = Library(settings=load_settings(base / f"home-{name}", reader="off", ocr="auto", ocr_dpi=dpi),
                  embedder=embedder)  # fmt: skip
    t = time.perf_counter()
    report = lib.ingest([path], "bench")
    print(f"{name}: ingested in {time.perf_counter() - t:.1f} s ({report.files[0].status}; "
          f"{report.files[0].reason or 'no notes'})")
    return lib


def rank(hits, page: int) -> int | None:
    for i, hit in enumerate(hits):
        if hit.page_start is not None and hit.page_start <= page <= (hit.page_end or hit.page_start):
            return i + 1
    return None


def run_search(pages: list[Page], orig: bytes, dpi: float, embedder, base: Path, seed: int) -> None:
    print(f"\n### search parity: the original and its scanned copy at {dpi:g} dpi, each ingested (ocr_dpi {dpi:g})")
    libs, seconds = {}, {}
    for name, data in (("text", orig), ("scanned", scan(orig, dpi))):
        t = time.perf_counter()
        libs[name] = build(name, data, dpi, embedder, base)
        seconds[name] = time.perf_counter() - t
    print(f"the scanned copy's ingest took {(seconds['scanned'] - seconds['text']) / len(pages):.1f} s a page more "
          "than the text one's (the recognition worker's start included)")
    for pid, kind in workers().items():
        if kind == "ocr":
            print(f"the recognition worker (pid {pid}): peak RSS (VmHWM) {vm_hwm(pid):.0f} MB")
    rng = random.Random(seed)
    queries = []
    for number, page in enumerate(pages, start=1):
        found = sentences(page.ref)
        queries += [(number, page.label, s) for s in rng.sample(found, min(2, len(found)))]
    ranks = {name: [rank(lib.deep_search(q, limit=3), n) for n, _, q in queries] for name, lib in libs.items()}
    for lib in libs.values():
        lib.close()
    print(f"{len(queries)} sentences (up to 2 from each of {len(pages)} pages, 8-40 words, from pdftotext):")
    for name, found in ranks.items():
        top1 = sum(r == 1 for r in found)
        top3 = sum(r is not None for r in found)
        print(f"  {name}: top-1 {top1}/{len(found)} ({top1 / len(found):.2f}), top-3 {top3}/{len(found)} "
              f"({top3 / len(found):.2f})")
    for (n, label, q), a, b in zip(queries, ranks["text"], ranks["scanned"]):
        if (a is None) != (b is None):
            print(f"  found in the {'text' if b is None else 'scanned'} version only [{label}]: {q[:110]!r}")


# ---------------------------------------------------------------- the run


def prepare(pdf: Path, n: int, seed: int, out: Path) -> tuple[list[Page], bytes, list[str]]:
    """The original (sampled pages, the table page, the two-column page), written to ``out``; its pages and
    their ``pdftotext -layout``."""
    ref, layout = pdftotext(pdf), pdftotext(pdf, layout=True)
    sample, table, start = choose(ref, layout, n, seed)
    made, laid = two_column(prose(ref, start), f"Debian Reference, from its page {start}")
    (out / "two-column.pdf").write_bytes(made)
    orig = original(pdf, sorted(sample) + [table], made)
    (out / "original.pdf").write_bytes(orig)
    oref, olayout = pdftotext(out / "original.pdf"), pdftotext(out / "original.pdf", layout=True)
    pages = [Page(f"p.{p}", "body") for p in sorted(sample)] + [Page(f"p.{table} (table)", "table"),
                                                                Page("two-column", "two-column")]  # fmt: skip
    for i, page in enumerate(pages):
        page.ref, page.order = oref[i], laid if page.kind == "two-column" else olayout[i]
        if page.kind == "table":
            page.rows = cell_lines(olayout[i])
    print(f"{pdf}: {len(ref)} pages; sample (seed {seed}): {', '.join(p.label for p in pages[:-2])}; table page "
          f"{table}; the two-column page set from the prose of pages {start}ff. ({len(words(laid))} words)")
    return pages, orig, olayout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pdf", type=Path, default=PDF, help="a PDF with a text layer (default: the Debian Reference)")
    ap.add_argument("--pages", type=int, default=12, help="body pages sampled (besides the table and two-column page)")
    ap.add_argument("--dpi", default="150,300", help="resolutions of the scanned copies (comma-separated)")
    ap.add_argument("--search-dpi", type=float, default=200.0, help="the scanned copy and ocr_dpi of the search part")
    ap.add_argument("--ingest-rounds", type=int, default=3, help="rounds of ocr = auto and off in the textpdf part")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"any of {', '.join(PARTS)}")
    ap.add_argument("--seed", type=int, default=33)
    ap.add_argument("--max-side", type=int, default=None, help="scans part: the longer side (px) the recogniser "
                    "scales a page to, instead of the shipped ocr.MAX_SIDE (2000)")  # fmt: skip
    ap.add_argument("--out-dir", type=Path, default=Path(".cache/bench-ocr"), help="the PDFs made, kept")
    args = ap.parse_args()
    parts = args.parts.split(",")
    if set(parts) - set(PARTS):
        ap.error(f"--parts: unknown {', '.join(sorted(set(parts) - set(PARTS)))}")
    require(args.pdf)
    if parts == ["parse"]:  # alone, and before anything a checkout without text recognition lacks
        run_parse(args.pdf)
        return
    import localreason
    from localreason.config import load_settings

    start = time.perf_counter()
    print(f"CPU: {cpu()}; localreason from {Path(localreason.__file__).parent}")
    base = Path(tempfile.mkdtemp(prefix="lr-bench-ocr-"))
    settings = load_settings(base / "home")
    max_pixels = int(settings.max_image_megapixels * 1e6)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    try:
        pages, orig, layout = prepare(args.pdf, args.pages, args.seed, args.out_dir)
        scans = {float(d): scan(orig, float(d)) for d in args.dpi.split(",")}
        for dpi, data in scans.items():
            (args.out_dir / f"scanned-{dpi:g}dpi.pdf").write_bytes(data)
        run_parts(parts, args, pages, orig, layout, scans, settings, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"\n(the whole run: {time.perf_counter() - start:.0f} s; the PDFs made are in {args.out_dir})")


def run_parts(parts: list[str], args, pages: list[Page], orig: bytes, layout: list[str], scans: dict, settings,
              base: Path) -> None:  # fmt: skip
    max_pixels = int(settings.max_image_megapixels * 1e6)
    clock = time.perf_counter()

    def done(part: str) -> None:
        nonlocal clock
        print(f"({part}: {time.perf_counter() - clock:.0f} s)", flush=True)
        clock = time.perf_counter()

    if "scans" in parts:
        run_scans(pages, orig, layout, scans, max_pixels, args.max_side)
        done("scans")
    if "decision" in parts:
        run_decision(args.pdf, orig, [p.ref for p in pages], scans, settings.ocr_dpi, max_pixels)
        done("decision")
    if "parse" in parts:
        run_parse(args.pdf)  # alone (--parts parse: nothing else ran in this process), what it imports is its own
        done("parse")
    if "scripts" in parts:
        run_scripts()
        done("scripts")
    if "textpdf" not in parts and "search" not in parts:
        return
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    embedder = make_embedder(resolve_embedding_model(settings), settings.embedding_backend, settings.embed_batch_size,
                             settings.cache_path, threads=settings.threads)  # fmt: skip
    embedder.embed(["warm up"])
    if "textpdf" in parts:
        run_textpdf(args.pdf, embedder, args.ingest_rounds, base)
        done("textpdf")
    if "search" in parts:
        run_search(pages, orig, args.search_dpi, embedder, base / "search", args.seed)
        done("search")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
