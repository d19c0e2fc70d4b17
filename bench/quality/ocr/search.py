"""The ``search`` part: sentences of the pages searched in a library of the original and one of its scan."""

from __future__ import annotations

import random
import time
from pathlib import Path

from .common import Page, sentences, vm_hwm, workers
from .pages import scan


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
