#!/usr/bin/env python3
"""Retrieval benchmark: SQuAD v1.1 dev as paragraph retrieval, plus deep_search latency.

Each of the 2,067 paragraphs is ingested as a document (one collection per article);
each of the 10,565 questions is a query whose relevant document is the paragraph it
was written on. Rankings are mapped from chunks to documents (first occurrence).

Reported, all in one run and on the same library: R@1, R@5, R@10, MRR@10 for
lexical only (FTS5 BM25), dense only (MiniLM + FAISS), plain reciprocal rank fusion
(k = 60) and localreason's hybrid (the product's default), plus a sweep of the
hybrid's dense weight on the first half of the questions with its score on the
second half; then deep_search latency p50/p95 (model loaded) on this library and on
a 20,000-chunk library.

    python -m bench.quality.retrieval                       # all questions
    python -m bench.quality.retrieval --questions 2000      # a fixed sample, quicker
    python -m bench.speed.retrieval                         # the latency part alone
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench.data.squad import squad_library, squad_questions


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "R@1": sum(1 for r in ranks if r is not None and r < 1) / n,
        "R@5": sum(1 for r in ranks if r is not None and r < 5) / n,
        "R@10": sum(1 for r in ranks if r is not None and r < 10) / n,
        "MRR@10": sum(1 / (r + 1) for r in ranks if r is not None and r < 10) / n,
    }


def doc_rank(rowids: list[int], chunk_doc: dict[int, str], gold: str) -> int | None:
    seen: list[str] = []
    for r in rowids:
        d = chunk_doc[r]
        if d not in seen:
            seen.append(d)
            if d == gold:
                return len(seen) - 1
        if len(seen) >= 10:
            return None
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/squad"))
    ap.add_argument("--questions", type=int, default=0, help="use a fixed random sample of this many (0 = all)")
    ap.add_argument("--latency-queries", type=int, default=300)
    args = ap.parse_args()

    from localreason import search

    lib, embedder, settings, articles, corpus = squad_library(args.data_dir)
    qs, path_doc, chunk_doc = squad_questions(lib, articles, corpus, args.questions)
    t = time.perf_counter()
    qvecs = embedder.embed([q for q, _ in qs])
    print(f"{len(qs)} questions embedded in {time.perf_counter() - t:.0f} s", flush=True)

    scope = search.ResolvedScope()
    dense_l, lex_l = [], []
    for (q, _), v in zip(qs, qvecs):
        dense_l.append(search.dense_ranking(lib.index, v, search.CANDIDATES, scope))
        lex_l.append(search.lexical_ranking(lib.index, q, search.CANDIDATES, scope))

    def evaluate(rank_fn, idx) -> dict[str, float]:
        return metrics([doc_rank(rank_fn(i), chunk_doc, qs[i][1]) for i in idx])

    rows = method_rows(lib, qs, qvecs, dense_l, lex_l, evaluate)
    half = len(qs) // 2
    dev, test = range(half), range(half, len(qs))
    weight_sweep(dense_l, lex_l, evaluate, dev, test)

    print(f"\nSQuAD v1.1 dev paragraph retrieval, {len(qs)} questions, {len(path_doc)} paragraphs")
    print(f"{'method':<52} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7}")
    for name, m in rows.items():
        print(f"{name:<52} {m['R@1']:>6.3f} {m['R@5']:>6.3f} {m['R@10']:>6.3f} {m['MRR@10']:>7.3f}")
    rarity_sweep(lib, qs, dense_l, evaluate, dev, test)

    from bench.speed.retrieval import latency_part

    latency_part(lib, settings, embedder, [q for q, _ in qs], args.latency_queries)


def method_rows(lib, qs, qvecs, dense_l, lex_l, evaluate) -> dict[str, dict[str, float]]:
    """{method: metrics} on every question: lexical, dense, RRF, the product's hybrid (today's and the previous
    rarity rule)."""
    from localreason import search

    scope = search.ResolvedScope()
    everything = range(len(qs))
    rows = {
        "lexical (FTS5 BM25)": evaluate(lambda i: [r for r, _ in lex_l[i]], everything),
        "dense (MiniLM, FAISS)": evaluate(lambda i: [r for r, _ in dense_l[i]], everything),
        "reciprocal rank fusion k=60": evaluate(lambda i: [r for r, _ in search.fuse(dense_l[i], lex_l[i], "rrf")],
                                                everything),  # fmt: skip
    }
    # The product's own path (hybrid() with the query vector given, so questions are embedded once).
    rows[f"localreason hybrid (z-score sum, dense weight {search.DENSE_WEIGHT})"] = evaluate(
        lambda i: [h.rowid for h in search.hybrid(lib.index, qs[i][0], 10 * 3, scope, qvec=qvecs[i])], everything)
    rows["  ... with the previous rarity rule (a lift only at 1 passage)"] = evaluate(
        lambda i: [h.rowid for h in search.hybrid(lib.index, qs[i][0], 10 * 3, scope, qvec=qvecs[i], rarity="step")],
        everything)  # fmt: skip
    return rows


def weight_sweep(dense_l, lex_l, evaluate, dev, test) -> None:
    from localreason import search

    print("\nDense-weight sweep (z-score sum): tuned on the first half, checked on the second")
    print(f"{'weight':>8} {'dev R@5':>8} {'dev MRR':>8} {'test R@5':>9} {'test MRR':>9}")
    for w in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
        fn = lambda i, w=w: [r for r, _ in search.fuse(dense_l[i], lex_l[i], "zsum", w)]  # noqa: E731
        d, te = evaluate(fn, dev), evaluate(fn, test)
        print(f"{w:>8} {d['R@5']:>8.3f} {d['MRR@10']:>8.3f} {te['R@5']:>9.3f} {te['MRR@10']:>9.3f}")


def rarity_sweep(lib, qs, dense_l, evaluate, dev, test) -> None:
    from localreason import search
    from localreason.search import ranking

    scope = search.ResolvedScope()
    print("\nRarity slope sweep (RARITY_END; the product's is marked): tuned on the first half, checked on the second")
    print(f"{'end':>8} {'dev R@5':>8} {'dev MRR':>8} {'test R@5':>9} {'test MRR':>9}")
    chosen = ranking.RARITY_END
    for end in (1.5, 2, 3, 4, 6, 10):
        ranking.RARITY_END = end
        lex_v = [search.lexical_ranking(lib.index, q, search.CANDIDATES, scope) for q, _ in qs]
        fn = lambda i, lex_v=lex_v: [r for r, _ in search.fuse(dense_l[i], lex_v[i])]  # noqa: E731
        d, te = evaluate(fn, dev), evaluate(fn, test)
        mark = "  <- RARITY_END" if end == chosen else ""
        print(f"{end:>8} {d['R@5']:>8.3f} {d['MRR@10']:>8.3f} {te['R@5']:>9.3f} {te['MRR@10']:>9.3f}{mark}", flush=True)
    ranking.RARITY_END = chosen


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
