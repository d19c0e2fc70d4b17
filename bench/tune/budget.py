#!/usr/bin/env python3
"""Does a larger evidence budget help reason find the answering sentence? For each domain of
bench/data/qa_sets.py (read from the shared SQuAD-format files: ``--qa-data``, bench/data/qa.py; fit domains:
their fit half, where a budget would be chosen, and their evaluation half beside it; held-out domains: their
questions) and each budget: the share of answerable questions whose packet holds an answering sentence at all
(the ceiling of any sentence ranking), the shipped ranking's top-1 (quotes.rank_quotes), and the time of
progressive search, packing and ranking per question. The model reads only the offered sentences, so the budget
costs no model time.

    python -m bench.tune.budget --data-dir /tmp/squad-cache [--qa-data FOLDER]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.data import qa, qa_sets


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
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="cache folder: the libraries")
    qa.add_argument(ap)
    ap.add_argument("--questions", type=int, default=60, help="answerable questions per domain and half")
    ap.add_argument("--budgets", type=int, nargs="+", default=[1000, 2000, 4000])
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(args.data_dir / "libs")  # the product's embedder (OpenVINO where it runs)
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    results: dict[tuple[str, str], dict[int, tuple]] = {}
    for name in qa_sets.DOMAINS:
        domain = qa_sets.load(name, args.qa_data)
        lib = qa_sets.build_library(domain, args.data_dir, embedder)
        for half in ("fit", "eval") if domain.role == "fit" else ("eval",):
            asked = qa_sets.sample(domain, "answerable", args.questions, half)
            got = results[(name, half)] = {b: measure(lib, embedder.embed, asked, b) for b in args.budgets}
            print(f"{name:<10} {domain.role:<9} {half:<5} " + "  ".join(
                f"{b}: in packet {v[0]:.2f} top-1 {v[1]:.2f} {v[2] * 1000:.0f} ms" for b, v in got.items()),
                flush=True)  # fmt: skip
        lib.close()
    print("\nmean over domains")
    for label, role, half in (("fit, fit half", "fit", "fit"), ("fit, eval half", "fit", "eval"),
                              ("held out", "held out", "eval")):  # fmt: skip
        keys = [k for k in results if qa_sets.DOMAINS[k[0]][2] == role and k[1] == half]
        print(f"{label:<15} " + "  ".join(f"{b}: in packet {np.mean([results[k][b][0] for k in keys]):.3f} top-1 "
                                          f"{np.mean([results[k][b][1] for k in keys]):.3f}" for b in args.budgets))


if __name__ == "__main__":
    main()
