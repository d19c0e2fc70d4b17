"""The ``textpdf`` part: a text PDF through the real ingest, ``ocr = auto`` against ``ocr = off``."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from .common import loaded_libraries, vm_hwm, workers
from .pages import saved


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
