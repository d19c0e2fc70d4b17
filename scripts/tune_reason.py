#!/usr/bin/env python3
"""The two calibrations behind `reason`'s defaults, on SQuAD samples disjoint from eval_reason.py's.

1. reason's relevance gate: for 400 answerable questions (library: all 48 articles) and 300
   unanswerable ones (library without eval_reason.py's 8 held-out articles), progressive
   search's relevance (best cosine of the top 3 hits + 0.3 x their IDF-weighted coverage of
   the question's terms) and the ranking score of the best quotable sentence of a
   1,000-token packet; for each weight of the sentence score, the share of answerable
   questions refused when the guard stops 75-85% of the unanswerable ones. Passage
   relevance alone is the w = 0 row.
2. The quotable-sentence ranking: for 800 answerable questions that eval_reason.py does not
   ask, the features of every sentence of a 1,000-token packet (quotes.features) and whether
   it holds the gold answer. The weights are fitted so that a softmax over each question's
   sentences gives the gold ones the most probability (quotes.WEIGHTS); the table shows the
   share of questions whose gold answer is in the top 1-5 sentences, cross-validated (5
   folds), against cosine alone and the earlier hand-tuned weights; then the adaptive lead
   (quotes.lead_count): coverage and mean number of quotations for each confidence.

Uses the libraries eval_reason.py builds and caches in --data-dir.

    python scripts/tune_reason.py --data-dir /tmp/squad-cache
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_reason import HELD_OUT_COUNT, build, norm  # noqa: E402
from squad import load_squad, write_corpus  # noqa: E402


def guard_study(lib_all, lib_part, answerable, unanswerable, budget: int = 1000) -> None:
    from localreason import quotes as Q
    from localreason import reason as RS
    from localreason import search

    def features(lib, q):
        """(progressive search's relevance, the best quotable sentence's score) as reason computes them."""
        evidence = search.progressive_search(lib.index, q)
        packet = search.build_packet(evidence, budget)
        best = Q.rank_quotes(q, [(c.chunk_id, c.content) for c in packet.chunks], lib.embedder.embed, 1)
        return evidence.relevance, best[0].score if best else 0.0

    fa = np.array([features(lib_all, q) for q in answerable])
    fu = np.array([features(lib_part, q) for q in unanswerable])
    print(f"\n1. Relevance gate ({len(fa)} answerable, {len(fu)} unanswerable questions): relevance + w x best "
          "sentence score >= guard")  # fmt: skip
    print("   each cell: answerable refused at the lowest guard that stops that share of unanswerable ones")
    shares = (0.75, 0.78, 0.80, 0.82, 0.85)
    print(f"{'w':>6} " + " ".join(f"{'stopped ' + format(x, '.2f'):>22}" for x in shares))
    for w in (0.0, 0.1, 0.2, 0.3):
        sa, su = fa[:, 0] + w * fa[:, 1], fu[:, 0] + w * fu[:, 1]
        cells = []
        for share in shares:
            guard = float(np.sort(su)[int(np.ceil(share * len(su))) - 1]) + 1e-9  # stops at least `share`
            cells.append(f"{(sa < guard).mean():.3f} (guard {guard:.2f})")
        print(f"{w:>6} " + " ".join(f"{c:>22}" for c in cells))
    sa = np.array([RS.gate_score(rel, best) for rel, best in fa])
    su = np.array([RS.gate_score(rel, best) for rel, best in fu])
    print(f"chosen (reason/gate.py): w {RS.SENTENCE_GUARD_WEIGHT}, guard {RS.ANSWER_GUARD}: answerable refused "
          f"{(sa < RS.ANSWER_GUARD).mean():.3f}, unanswerable stopped {(su < RS.ANSWER_GUARD).mean():.3f}; "
          f"passage relevance alone at retrieval's guard {search.RELEVANCE_GUARD}: refused "
          f"{(fa[:, 0] < search.RELEVANCE_GUARD).mean():.3f}, stopped {(fu[:, 0] < search.RELEVANCE_GUARD).mean():.3f}")


def ranking_rows(lib, questions, budget: int) -> list:
    """(features, gold flags) of each question's candidate sentences in a ``budget``-token packet."""
    from localreason import quotes as Q
    from localreason import search

    rows = []
    for q, golds in questions:
        packet = search.build_packet(search.progressive_search(lib.index, q), budget)
        cands = Q.candidates([(c.chunk_id, c.content) for c in packet.chunks])
        if not cands:
            rows.append(None)
            continue
        gold = np.array([any(norm(g) in norm(c.text) for g in golds) for c in cands])
        rows.append((Q.features(q, cands, lib.embedder.embed), gold))
    return rows


def fit_weights(rows, l2: float = 1e-5) -> np.ndarray:
    """Weights maximising the softmax probability given to each question's gold sentences."""
    from scipy.optimize import minimize

    data = [(x, y) for x, y in (r for r in rows if r is not None) if y.any()]

    def loss(w):
        total, grad = 0.0, np.zeros_like(w)
        for x, y in data:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            pg = p[y].sum()
            total -= math.log(pg + 1e-12)
            grad -= (p * y / (pg + 1e-12)) @ x - p @ x
        return total / len(data) + l2 * w @ w, grad / len(data) + 2 * l2 * w

    w0 = np.zeros(data[0][0].shape[1])
    w0[0] = 5.0
    return minimize(loss, w0, jac=True, method="L-BFGS-B").x


def top_k(rows, weights) -> np.ndarray:
    """Share of questions with the gold answer in the 1, 2, ... 5 best sentences."""
    tops = np.zeros(5)
    for x, y in (r for r in rows if r is not None):
        order = np.argsort(-(x @ weights), kind="stable")
        tops += [bool(y[order[:k + 1]].any()) for k in range(5)]
    return tops / len(rows)


def adaptive_lead(rows, weights, confidence: float, least: int) -> np.ndarray:
    """(coverage, mean number of lead quotations) when quotes.lead_count decides how many lead."""
    from localreason import quotes as Q

    hits = leads = 0
    for x, y in (r for r in rows if r is not None):
        s = x @ weights
        order = np.argsort(-s, kind="stable")
        k = Q.lead_count(Q.softmax(s)[order], confidence, least)
        hits += bool(y[order[:k]].any())
        leads += k
    return np.array([hits, leads]) / len(rows)


def ranking_study(rows, budget: int) -> None:
    from localreason import quotes as Q

    avail = sum(r is not None and r[1].any() for r in rows) / len(rows)
    print(f"\n2. Sentence ranking, {budget}-token packet ({len(rows)} questions; gold in some sentence: {avail:.3f})")
    print("   top-k: share of questions whose gold answer is in the k best sentences; 5-fold cross-validated "
          "where weights are fitted")
    folds = [list(range(f, len(rows), 5)) for f in range(5)]

    def cross_validated(cols, measure=top_k, **kwargs):
        out = 0.0
        for test in folds:
            held = set(test)
            train = [r for i, r in enumerate(rows) if i not in held]
            w = np.zeros(len(Q.FEATURES))
            w[cols] = fit_weights([None if r is None else (r[0][:, cols], r[1]) for r in train])
            out = out + measure([rows[i] for i in test], w, **kwargs) * len(test)
        return out / len(rows)

    hand = np.array([1.0, 0.5, 0.7, 0.4, 0.1, 0.1, 0.0, 0.0])  # the previous, hand-tuned weights
    print(f"{'ranking':<52} {'top1':>6} {'top2':>6} {'top3':>6} {'top4':>6} {'top5':>6}")
    base = len(Q.FEATURES) - 2
    for label, result in (
        ("cosine alone", top_k(rows, np.eye(len(Q.FEATURES))[0])),
        ("hand-tuned weights (before the fit)", top_k(rows, hand)),
        ("fitted, first six features", cross_validated(list(range(base)))),
        ("fitted, all features", cross_validated(list(range(len(Q.FEATURES))))),
        ("quotes.WEIGHTS (in sample)", top_k(rows, Q.WEIGHTS)),
    ):
        print(f"{label:<52} " + " ".join(f"{t:>6.3f}" for t in result))
    print("\n   adaptive lead (quotes.lead_count): the fewest best sentences whose softmax probability reaches "
          "the confidence")
    print(f"{'least':>6} {'confidence':>11} {'coverage':>9} {'mean leads':>11}")
    for least in (1, 2):
        for confidence in (0.85, 0.9, 0.95, 0.97):
            hit, leads = cross_validated(list(range(len(Q.FEATURES))), adaptive_lead, confidence=confidence,
                                         least=least)  # fmt: skip
            mark = "  <- quotes.py" if (least, confidence) == (Q.MIN_LEAD, Q.LEAD_CONFIDENCE) else ""
            print(f"{least:>6} {confidence:>11} {hit:>9.3f} {leads:>11.2f}{mark}")
    w = fit_weights(rows)
    print("\n   weights fitted on all these questions: " + ", ".join(f"{n} {v:.2f}" for n, v in zip(Q.FEATURES, w)))
    if not np.allclose(np.round(w, 2), Q.WEIGHTS, atol=0.011):
        print("   (quotes.WEIGHTS differs: copy these there)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/squad"))
    ap.add_argument("--ranking-questions", type=int, default=800)
    ap.add_argument("--ranking-only", action="store_true", help="skip the relevance-guard study")
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.models import resolve_embedding_model

    articles = load_squad(args.data_dir)
    corpus = args.data_dir / "corpus"
    write_corpus(articles, corpus)
    titles = [a["title"] for a in articles]
    held_out = sorted(random.Random(2026).sample(titles, HELD_OUT_COUNT))  # the same as eval_reason.py
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(load_settings(args.data_dir / "lib-all")))
    lib_all = build(args.data_dir / "lib-all", corpus, titles, embedder)
    lib_part = build(args.data_dir / f"lib-without-{HELD_OUT_COUNT}", corpus,
                     [t for t in titles if t not in held_out], embedder)  # fmt: skip
    answerable = [(qa["question"], [a["text"] for a in qa["answers"]]) for a in articles if a["title"] not in held_out
                  for p in a["paragraphs"] for qa in p["qas"]]  # fmt: skip
    unanswerable = [qa["question"] for a in articles if a["title"] in held_out for p in a["paragraphs"]
                    for qa in p["qas"]]  # fmt: skip
    # Seeds differ from eval_reason.py's (1 and 2), so these samples are not the evaluation's.
    if not args.ranking_only:
        guard_study(lib_all, lib_part, [q for q, _ in random.Random(11).sample(answerable, 400)],
                    random.Random(12).sample(unanswerable, 300))  # fmt: skip
    # The ranking sample leaves out eval_reason.py's answerable questions (seed 1, 200 of them).
    evaluated = {q for q, _ in random.Random(1).sample(answerable, 200)}  # same indices as eval_reason.py's
    pool = [(q, g) for q, g in answerable if q not in evaluated]
    sample = random.Random(99).sample(pool, args.ranking_questions)
    ranking_study(ranking_rows(lib_all, sample, 1000), 1000)


if __name__ == "__main__":
    main()
