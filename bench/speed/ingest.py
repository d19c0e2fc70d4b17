#!/usr/bin/env python3
"""Ingestion benchmark on a real corpus, against the embedding model alone in the same run.

Corpus: the reST sources and HTML pages of Debian's python3.11-doc and the PDF of
debian-reference-en, fetched with `apt-get download` and unpacked with `dpkg-deb -x`
into --data-dir (cached between runs).

Reports files/s, chunks/s, tokens/s, peak memory (RSS), on-disk size, the time the
embedding model alone takes to embed the same chunk texts, and the ratio of the two
(target <= 1.15), then the time of a re-ingest of the unchanged corpus (target < 5%
of the first ingest). Last, whether the ingest started the text recognition worker and which files had pages
recognised (with ``ocr = auto``, the default, the Debian Reference's cover page, an image with no text layer, is
one; ``LOCALREASON_OCR=off`` runs without recognition; bench.quality.ocr compares the two on that PDF).

    python -m bench.speed.ingest                   # full corpus (about 25 minutes on 2 cores)
    python -m bench.speed.ingest --fraction 0.1    # every 10th file, for a quick look
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.data.debian_docs import fetch_corpus
from bench.quality.ocr.textpdf import ocr_worker


def disk_size(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/bench-ingest"))
    ap.add_argument("--fraction", type=float, default=1.0, help="ingest every (1/fraction)-th file")
    args = ap.parse_args()

    files, _ = fetch_corpus(args.data_dir)
    step = max(1, round(1 / args.fraction))
    files = files[::step] if step > 1 else files
    from localreason.config import load_settings
    from localreason.models import resolve_embedding_model
    from localreason.embed import SentenceTransformerEmbedder

    home = Path(tempfile.mkdtemp(prefix="lr-bench-"))
    settings = load_settings(home)
    t = time.perf_counter()
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(settings), settings.embed_batch_size)
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t
    stage = stage_links(home, files)
    m = measure(settings, embedder, stage, home)
    report(files, m, load_s)
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)
    sys.exit(0 if m["counts"]["failed"] == 0 else 1)


def stage_links(home: Path, files: list[Path]) -> Path:
    """Stage the files in one folder of links so a single ingest call walks them all."""
    stage = home.parent / (home.name + "-corpus")
    stage.mkdir()
    for i, f in enumerate(files):
        (stage / f"{i:05d}-{f.name}").symlink_to(f)
    print(f"corpus: {len(files)} files, {sum(f.stat().st_size for f in files) / 1e6:.1f} MB", flush=True)
    return stage


def measure(settings, embedder, stage: Path, home: Path) -> dict:
    """The ingest, the same chunk texts through the model alone, and a re-ingest of the unchanged files."""
    from localreason.library import Library

    lib = Library(settings=settings, embedder=embedder)
    t = time.perf_counter()
    report = lib.ingest([stage], "bench")
    ingest_s = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = report.counts
    recognised = [f"{Path(f.path).name}: {f.reason}" for f in report.files if "text recognition" in f.reason]
    ocr_started = ocr_worker(settings) is not None
    rows = lib.store.db.execute("SELECT text, token_count FROM chunks WHERE level = 2").fetchall()
    texts = [r[0] for r in rows]
    tokens = sum(r[1] for r in rows)
    lib.close()
    size_mb = disk_size(home) / 1e6

    # The same texts through the model alone, in one call (the model sorts them by length: its best case).
    t = time.perf_counter()
    embedder.embed(texts)
    embed_s = time.perf_counter() - t

    lib = Library(settings=settings, embedder=embedder)
    t = time.perf_counter()
    again = lib.ingest([stage], "bench")
    reingest_s = time.perf_counter() - t
    lib.close()
    return {"counts": counts, "chunks": len(texts), "tokens": tokens, "ingest_s": ingest_s, "embed_s": embed_s,
            "reingest_s": reingest_s, "unchanged": again.counts["unchanged"], "peak_mb": peak_mb,
            "size_mb": size_mb, "ocr": settings.ocr, "recognised": recognised, "ocr_started": ocr_started}  # fmt: skip


def report(files: list[Path], m: dict, load_s: float) -> None:
    counts, chunks, tokens, ingest_s, embed_s = m["counts"], m["chunks"], m["tokens"], m["ingest_s"], m["embed_s"]
    reingest_s = m["reingest_s"]
    print()
    print(f"files: {len(files)} ({counts['added']} added, {counts['skipped']} skipped, {counts['failed']} failed)")
    print(f"chunks: {chunks}  tokens: {tokens}")
    print(f"model load (not counted below): {load_s:.1f} s")
    print(f"ingest: {ingest_s:.1f} s  = {len(files) / ingest_s:.2f} files/s, {chunks / ingest_s:.1f} chunks/s, "
          f"{tokens / ingest_s:.0f} tokens/s")
    print(f"embedding only (same texts, same run): {embed_s:.1f} s = {tokens / embed_s:.0f} tokens/s")
    print(f"ratio ingest / embedding-only: {ingest_s / embed_s:.3f}  (target <= 1.15)")
    print(f"re-ingest unchanged: {reingest_s:.2f} s = {100 * reingest_s / ingest_s:.2f}% of first ingest "
          f"(target < 5%); {m['unchanged']} unchanged")
    print(f"peak memory (RSS): {m['peak_mb']:.0f} MB   on disk: {m['size_mb']:.1f} MB")
    print(f"text recognition (ocr = {m['ocr']}): recognition worker started: {'yes' if m['ocr_started'] else 'no'}; "
          f"files with recognised pages: {len(m['recognised'])}" + "".join(f"\n  {r}" for r in m["recognised"]))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
