"""Shared by the parts: the PDF and tools needed, words and their scores, memory and worker probes, the pages chosen."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
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
