#!/usr/bin/env python3
"""Searches while a watch catches up: `serve --watch` started over a folder that gained --files notes while
nothing watched it.

Each round: a library (the packaged embedding model) of a folder of --base notes; the service closed; --files new
notes written into the folder; a new Service, its index loaded by one search; then the watch
(watch.BackgroundWatch) starts, reads the folder again for what changed meanwhile, and this thread searches
through the same service every --every seconds until the watch says it is watching. Reported per way: how long
the catch-up took, how many searches ran during it, and their latency (p50, p95, the longest).

Baseline in the same run: the same catch-up as the service did it before (its write lock held for the whole
ingest: ``Service._writing`` around ``Library.ingest``), rounds alternating the two ways.

    python -m bench.speed.catch_up                       # 2,000 new notes, 2 rounds each way
    python -m bench.speed.catch_up --files 100 --rounds 1
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.speed.watch import make_tree, percentile

QUERY = "pump valve twelve volts"


def whole_lock_ingest(service, paths, collection="default", **kwargs):
    """How ``Service.ingest`` ran before: this process's write lock held from the first file to the last."""
    with service._writing(f"ingest into {collection!r}"):
        return service.library.ingest(paths, collection, **kwargs)


def one_round(base: Path, args, embedder, way: str) -> dict:
    from localreason.config import load_settings
    from localreason.library import Library
    from localreason.service import Service
    from localreason.watch import BackgroundWatch, Listener

    shutil.rmtree(base, ignore_errors=True)
    settings = load_settings(base / "home", reader="off")
    folder = base / "notes"
    make_tree(folder, args.base)
    with Library(settings=settings, embedder=embedder) as lib:
        lib.ingest([folder], "notes")
    for path in make_tree(base / "new", args.files):  # written while nothing watched the folder
        target = folder / "new" / path.relative_to(base / "new")
        target.parent.mkdir(parents=True, exist_ok=True)
        path.rename(target)
    service = Service(Library(settings=settings, embedder=embedder))
    if way == "whole lock":
        service.ingest = lambda paths, collection="default", **kw: whole_lock_ingest(service, paths, collection, **kw)
    service.deep_search(QUERY, limit=5)
    ready = threading.Event()
    t0 = time.perf_counter()
    watch = BackgroundWatch(service, Listener(notice=lambda m: ready.set() if m.startswith("Watching") else None))
    watch.start()
    latencies = []
    while not ready.is_set():
        t = time.perf_counter()
        service.deep_search(QUERY, limit=5)
        latencies.append(time.perf_counter() - t)
        ready.wait(args.every)
    catch_up = time.perf_counter() - t0
    documents = len(service.documents("notes"))
    watch.stop()
    service.close()
    assert documents == args.base + args.files, (documents, args.base + args.files)
    return {"catch_up": catch_up, "latencies": latencies}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000, help="notes added while nothing watched")
    ap.add_argument("--base", type=int, default=50, help="notes in the library before")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of each way, alternating")
    ap.add_argument("--every", type=float, default=0.05, help="seconds between two searches")
    args = ap.parse_args()

    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    work = Path(tempfile.mkdtemp(prefix="lr-catch-up-"))
    settings = load_settings(work / "models-home", reader="off")
    embedder = make_embedder(resolve_embedding_model(settings), settings.embedding_backend, settings.embed_batch_size,
                             settings.cache_path, threads=settings.threads)  # fmt: skip
    embedder.embed(["warm up"])
    ways = ["whole lock", "in turns"]
    runs: dict[str, list[dict]] = {w: [] for w in ways}
    try:
        for r in range(args.rounds):
            for way in ways if r % 2 == 0 else ways[::-1]:
                runs[way].append(one_round(work / "round", args, embedder, way))
                print(f"  round {r + 1}, {way}: caught up in {runs[way][-1]['catch_up']:.1f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nA watch catching up on {args.files} new notes (library of {args.base} before), searched every "
          f"{args.every * 1000:.0f} ms; {args.rounds} round(s) each way\n")
    print(f"  {'way':12} {'catch-up':>9} {'searches':>9} {'p50':>8} {'p95':>8} {'longest':>8}")
    for way in ways:
        lat = [x for run in runs[way] for x in run["latencies"]]
        catch_up = statistics.median(run["catch_up"] for run in runs[way])
        print(f"  {way:12} {catch_up:8.1f}s {len(lat):9d} {1000 * statistics.median(lat):6.0f}ms "
              f"{1000 * percentile(lat, 0.95):6.0f}ms {1000 * max(lat):6.0f}ms")
    base, now = (statistics.median(run["catch_up"] for run in runs[w]) for w in ways)
    print(f"\n  catch-up time, in turns / whole lock: {now / base:.2f}x")


if __name__ == "__main__":
    main()
