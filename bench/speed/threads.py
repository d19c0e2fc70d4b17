#!/usr/bin/env python3
"""Threads on a shared machine: the models with 1 thread and with every core, alone and beside a busy program.

The same fixed request to each model, per configuration (median of --runs):
- llama.cpp (the default GGUF): read a ~400-token prompt and write 48 tokens;
- the embedding model (default backend): embed 64 SQuAD-sized paragraphs.
Each runs alone, then while another program keeps one core busy (a Python busy loop, standing in for a
compiler, a browser tab or a second localreason). What the ``threads`` setting is for: with every core
asked for and one of them taken, llama.cpp's threads wait for each other.

    python -m bench.speed.threads
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

PARAGRAPH = ("The Black Death is thought to have originated in the arid plains of Central Asia, where it then "
             "travelled along the Silk Road, reaching Crimea by 1343. From there, it was most likely carried by "
             "Oriental rat fleas living on the black rats that were regular passengers on merchant ships. ")


def timed(fn, runs: int) -> float:
    fn()  # warm
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_embedding_model, resolve_gguf

    settings = load_settings(tempfile.mkdtemp(prefix="lr-threads-"))
    cores = settings.cpu_threads
    prompt = "Summarise the following text.\n\n" + PARAGRAPH * 8
    texts = [PARAGRAPH * 2] * 64
    counts = sorted({1, cores})
    llms = {t: LlamaGenerator(resolve_gguf(settings), threads=t) for t in counts}
    embedders = {t: make_embedder(resolve_embedding_model(settings), settings.embedding_backend, 32,
                                  settings.cache_path, threads=t) for t in counts}  # fmt: skip

    def llama(t):
        return lambda: llms[t].llm(prompt, max_tokens=48, temperature=0.0)

    def embed(t):
        return lambda: embedders[t].embed(texts)

    rows = {}
    for busy in (False, True):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
        try:
            time.sleep(0.5 if busy else 0)
            for t in counts:
                rows[(busy, t)] = (timed(llama(t), args.runs), timed(embed(t), args.runs))
        finally:
            if hog:
                hog.kill()
                hog.wait()
    print(f"\n{cores} cores; median of {args.runs}; llama.cpp: ~400-token prompt + 48 tokens; "
          f"embedding: 64 paragraphs on {embedders[cores].backend}")
    print(f"{'':<28} {'llama.cpp s':>12} {'embedding s':>12}")
    for (busy, t), (lt, et) in rows.items():
        print(f"{('beside a busy program, ' if busy else 'alone, ') + f'{t} thread(s)':<28} {lt:>12.2f} {et:>12.2f}")
    if cores > 1:
        b1, bn = rows[(True, 1)], rows[(True, cores)]
        a1, an = rows[(False, 1)], rows[(False, cores)]
        print(f"alone: {cores} threads vs 1: llama.cpp {a1[0] / an[0]:.2f}x faster, embedding {a1[1] / an[1]:.2f}x")
        print(f"beside a busy program: 1 thread vs {cores}: llama.cpp {bn[0] / b1[0]:.2f}x faster, "
              f"embedding {bn[1] / b1[1]:.2f}x")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
