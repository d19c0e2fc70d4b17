#!/usr/bin/env python3
"""Following folders: from a saved change to the first search that finds it, the watcher's idle CPU, its memory.

What `localreason serve --watch` runs: a Service over a library made with the packaged embedding model, the
watcher on a thread of its own (watch.BackgroundWatch), searches through the same service. Each run appends a
sentence holding a fresh code word (``zqwatch007x``) to one file and searches for the code word every 20 ms; the
latency is from the write's close to the first search whose hits hold it. Two libraries: a small folder
(--small files) and a tree of --files files in folders of 50, one file among them changed each run.

Baselines in the same run: the write alone (`ingest` of the changed file by name, through the same service: what
any way of applying the change costs), and `sync` of the whole tree (what a user ran before there was a watch).
Idle CPU is the process's CPU time (user + system) over --idle seconds of wall time with nothing changing, beside
the same process over the same time before the watch started; then with ``watch_mode = poll`` (the fallback at the
inotify limit: re-checking every 2 s, or less often when a look would cost more than 1 % of a core). Memory is the
RSS added by starting the watch over the tree (inotify's own watches are kernel memory, not counted).
A folder of 50 files renamed inside the tree: the time until the library has them under the new name only, and
the texts embedded meanwhile, beside an ingest of the same files into a new collection (everything embedded).
Goals (the issue): p50 under 2 s for a small file, idle CPU under 1 %.

    python -m bench.speed.watch                      # 5,000 files, 20 runs each (about 6 minutes on 2 cores)
    python -m bench.speed.watch --files 500 --runs 5 # a quick look
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

SENTENCES = ("The pump in room {n} runs on twelve volts and is checked every spring.",
             "Its valve {n} closes at noon, and the filter is cleaned when the light turns red.")  # fmt: skip


def make_tree(root: Path, files: int, per_folder: int = 50) -> list[Path]:
    """``files`` short notes in folders of ``per_folder``."""
    paths = []
    for i in range(files):
        folder = root / f"part{i // per_folder:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"note{i:05d}.md"
        path.write_text(f"# Note {i}\n\n" + " ".join(s.format(n=i) for s in SENTENCES) + "\n")
        paths.append(path)
    return paths


class Counting:
    """An embedder that counts the texts it embeds."""

    def __init__(self, inner) -> None:
        self.inner, self.texts = inner, 0

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


def moved(service, embedder: Counting, tree: Path) -> dict:
    """A folder of the tree renamed: seconds until its documents are all under the new name, texts embedded; then
    the same files ingested into a new collection, as the baseline."""
    old, new = tree / "part000", tree / "part000-renamed"
    files = len(list(old.iterdir()))
    texts, t0 = embedder.texts, time.perf_counter()
    os.rename(old, new)

    def counts() -> tuple[int, int]:
        with service.reading() as lib:
            return len(lib.documents_under("tree", str(new))), len(lib.documents_under("tree", str(old)))

    while counts() != (files, 0):
        assert time.perf_counter() - t0 < 120, "the move was never applied"
        time.sleep(0.05)
    out = {"files": files, "move_s": time.perf_counter() - t0, "move_texts": embedder.texts - texts}
    texts, t0 = embedder.texts, time.perf_counter()
    service.ingest([str(new)], "fresh")
    out.update(fresh_s=time.perf_counter() - t0, fresh_texts=embedder.texts - texts)
    return out


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latencies(service, paths: list[Path], runs: int, tag: str) -> list[float]:
    """Seconds from each saved change to the first search that finds it (one file of ``paths`` per run)."""
    out = []
    for run in range(runs):
        code = f"zq{tag}{run:03d}x"
        path = paths[(run * 7919) % len(paths)]
        with open(path, "a") as f:
            f.write(f"\nThe service code of this note is {code}.\n")
        t0 = time.perf_counter()
        deadline = t0 + 60
        while not any(code in h.content for h in service.deep_search(code, limit=3)):
            assert time.perf_counter() < deadline, f"the change to {path} was never found"
            time.sleep(0.02)
        out.append(time.perf_counter() - t0)
    return out


def write_alone(service, collection: str, paths: list[Path], runs: int) -> list[float]:
    """The baseline: the same kind of change applied by an ingest of the file by name (no watch, no settling)."""
    out = []
    for run in range(runs):
        path = paths[(run * 104729) % len(paths)]
        with open(path, "a") as f:
            f.write(f"\nThe direct code of this note is zqdirect{run:03d}x.\n")
        t0 = time.perf_counter()
        service.ingest([str(path)], collection)
        out.append(time.perf_counter() - t0)
    return out


def idle_cpu(seconds: float) -> float:
    """The share of one core this process used over ``seconds`` of wall time (it only sleeps meanwhile)."""
    c0, t0 = cpu_seconds(), time.perf_counter()
    time.sleep(seconds)
    return (cpu_seconds() - c0) / (time.perf_counter() - t0)


def look_cpu(tree: Path, rounds: int = 3) -> list[float]:
    """CPU ms of each of ``rounds`` looks at the whole tree, as re-checking and the slow look beside inotify
    (watch.RESCAN_S) make them."""
    import queue

    from localreason.watch.sources import Poller

    poller, out = Poller([str(tree)], True, queue.Queue(), 300.0), []
    for _ in range(rounds):
        spent = time.thread_time()
        poller._look()
        out.append(1000 * (time.thread_time() - spent))
    return out


def started(settings, embedder, **kwargs):
    """A Service over the library (its index loaded by a search), a BackgroundWatch of all its folders once it has
    caught up, and the RSS in MB before and after the watch started."""
    from localreason.library import Library
    from localreason.service import Service
    from localreason.watch import BackgroundWatch, Listener

    ready = threading.Event()
    service = Service(Library(settings=settings, embedder=embedder))
    service.deep_search("pump valve", limit=3)
    before = rss_mb()
    watch = BackgroundWatch(service, Listener(notice=lambda m: ready.set() if m.startswith("Watching") else None),
                            **kwargs).start()  # fmt: skip
    assert ready.wait(600), "the watch did not start"
    return service, watch, (before, rss_mb())


def measure(base: Path, args) -> dict:
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model
    from localreason.service import Service
    from localreason.library import Library

    settings = load_settings(base / "home", reader="off")
    embedder = make_embedder(resolve_embedding_model(settings), settings.embedding_backend, settings.embed_batch_size,
                             settings.cache_path, threads=settings.threads)  # fmt: skip
    embedder.embed(["warm up"])
    small, tree = make_tree(base / "small", args.small), make_tree(base / "tree", args.files)
    m_look = look_cpu(base / "tree")
    t = time.perf_counter()
    with Library(settings=settings, embedder=embedder) as lib:
        lib.ingest([base / "small"], "small")
        lib.ingest([base / "tree"], "tree")
    m: dict = {"ingest_s": time.perf_counter() - t, "look_ms": m_look}
    service = Service(Library(settings=settings, embedder=embedder))
    m["direct"] = write_alone(service, "tree", tree, args.runs)
    t = time.perf_counter()
    service.sync("tree")
    m["sync_s"] = time.perf_counter() - t
    m["idle_before"] = idle_cpu(args.idle)
    service.close()
    counting = Counting(embedder)
    service, watch, (before, after) = started(settings, counting)
    m["rss_mb"], m["rss_added_mb"] = after, after - before
    m["idle_inotify"] = idle_cpu(args.idle)
    m["small"] = latencies(service, small, args.runs, "small")
    m["tree"] = latencies(service, [p for p in tree if p.parent.name != "part000"], args.runs, "tree")
    m["moved"] = moved(service, counting, base / "tree")
    watch.stop()
    service.close()
    service, watch, _ = started(settings, embedder, polling=True)
    m["idle_poll"] = idle_cpu(args.idle)
    m["tree_poll"] = latencies(service, [p for p in tree if p.parent.name != "part000"], max(3, args.runs // 4),
                               "poll")  # fmt: skip
    watch.stop()
    service.close()
    return m


def report(m: dict, args) -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               "unknown CPU")  # fmt: skip
    print(f"\nCPU: {cpu}, {os.cpu_count()} cores (shared: other jobs may run). Ingest of both libraries: "
          f"{m['ingest_s']:.0f} s.")
    print(f"{'from a saved change to the first search that finds it':58} {'p50':>7} {'p95':>7}  runs")
    rows = [(f"small file, a folder of {args.small}", m["small"]), (f"one file among {args.files}", m["tree"]),
            (f"one file among {args.files}, watch_mode = poll", m["tree_poll"]),
            ("baseline: ingest of that file by name (no watch)", m["direct"])]  # fmt: skip
    for label, values in rows:
        print(f"  {label:56} {statistics.median(values):6.2f}s {percentile(values, 0.95):6.2f}s  {len(values)}")
    print(f"  {'baseline: sync of the whole tree':56} {m['sync_s']:6.2f}s")
    print(f"idle CPU over {args.idle:g} s (share of one core): before the watch {100 * m['idle_before']:.2f} %, "
          f"watching {args.files} files with inotify {100 * m['idle_inotify']:.2f} %, "
          f"re-checking them (watch_mode = poll) {100 * m['idle_poll']:.2f} %  (goal < 1 %)")
    print(f"memory: RSS {m['rss_mb']:.0f} MB with the watch on the tree, {m['rss_added_mb']:+.1f} MB from starting it")
    from localreason.watch import RESCAN_S

    look = statistics.median(m["look_ms"])
    print(f"a look at the {args.files} files (re-checking; beside inotify every {RESCAN_S:g} s): "
          f"{', '.join(f'{v:.1f}' for v in m['look_ms'])} ms of CPU; at that pace {100 * look / 1000 / RESCAN_S:.3f} % "
          "of a core")
    mv = m["moved"]
    print(f"a folder of {mv['files']} files renamed in the tree: applied in {mv['move_s']:.2f} s, {mv['move_texts']} "
          f"texts embedded; baseline, the same files ingested afresh: {mv['fresh_s']:.2f} s, {mv['fresh_texts']} texts")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=5000, help="files in the large tree")
    ap.add_argument("--small", type=int, default=10, help="files in the small folder")
    ap.add_argument("--runs", type=int, default=20, help="changes timed per library")
    ap.add_argument("--idle", type=float, default=30.0, help="seconds of idle time measured")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="lr-bench-watch-"))
    try:
        report(measure(base, args), args)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
