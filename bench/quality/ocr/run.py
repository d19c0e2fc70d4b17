"""The command: the pages prepared once, then the parts asked for (``--parts``), in order."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from .common import PARTS, PDF, Page, cell_lines, choose, cpu, pdftotext, prose, require, words
from .decision import run_decision
from .pages import original, scan, two_column
from .scans import run_scans
from .scripts import run_parse, run_scripts
from .search import run_search
from .textpdf import run_textpdf


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
    from bench.quality import ocr as package

    ap = argparse.ArgumentParser(prog="python -m bench.quality.ocr", description=package.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
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

