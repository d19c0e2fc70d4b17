"""The ``scripts`` part (one line in each of five scripts) and the ``parse`` part (a text PDF's parse, timed)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from .common import FONT, recall_precision


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
