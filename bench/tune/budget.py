#!/usr/bin/env python3
"""Does a larger evidence budget help reason find the answering sentence? For each domain of
bench/data/qa_sets.py (fit domains: their fit half; held-out domains: their evaluation questions) and each
budget: the share of answerable questions whose packet holds an answering sentence at all (the ceiling
of any sentence ranking), the shipped ranking's top-1 (quotes.rank_quotes), and the time of progressive
search, packing and ranking per question. The model reads only the offered sentences, so the budget
costs no model time.

    python -m bench.tune.budget --data-dir /tmp/squad-cache
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.data import qa_sets


def measure(lib, embed, questions, budget: int) -> tuple[float, float, float]:
    """(in packet, top-1, seconds per question) over ``questions``."""
    from localreason import search
    from localreason.reason.candidates import candidates
    from localreason.reason.ranking import rank_quotes

    inside = top1 = 0
    start = time.perf_counter()
    for q in questions:
        evidence = search.progressive_search(lib.index, q.text)
        packet = search.build_packet(evidence, budget) if evidence.hits else None
        if packet is None or packet.empty:
            continue
        chunks = [(c.chunk_id, c.content) for c in packet.chunks]
        inside += any(q.held_by(c.text) for c in candidates(chunks))
        best = rank_quotes(q.text, chunks, embed, 1)
        top1 += bool(best) and q.held_by(best[0].text)
    n = max(1, len(questions))
    return inside / n, top1 / n, (time.perf_counter() - start) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/squad"))
    ap.add_argument("--questions", type=int, default=60, help="answerable questions per domain")
    ap.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000, 4000])
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(args.data_dir / "libs")  # the product's embedder (OpenVINO where it runs)
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    results: dict[str, dict[int, tuple]] = {}
    for name in qa_sets.DOMAINS:
        domain = qa_sets.load(args.data_dir, name)
        asked = qa_sets.sample(domain, "answerable", args.questions, "fit" if domain.role == "fit" else "eval")
        lib = qa_sets.build_library(domain, args.data_dir, embedder)
        results[name] = {b: measure(lib, embedder.embed, asked, b) for b in args.budgets}
        lib.close()
        print(f"{name:<16} {domain.role:<9} " + "  ".join(
            f"{b}: in packet {v[0]:.2f} top-1 {v[1]:.2f} {v[2] * 1000:.0f} ms" for b, v in results[name].items()),
            flush=True)  # fmt: skip
    print("\nmean over domains")
    for role in ("fit", "held out"):
        names = [n for n in results if qa_sets.DOMAINS[n][3] == role]
        print(f"{role:<9} " + "  ".join(f"{b}: in packet {np.mean([results[n][b][0] for n in names]):.3f} top-1 "
                                        f"{np.mean([results[n][b][1] for n in names]):.3f}" for b in args.budgets))


if __name__ == "__main__":
    main()
