#!/usr/bin/env python3
"""Question likelihood (Sachan et al. 2022) as a re-ranker of reason's best quotable sentences and as a
signal for the relevance gate, measured on the fit and held-out domains of bench/data/qa_sets.py.

For each question: reason's own evidence (progressive search, the answer budget's packet) and its
ranking (quotes.rank_quotes); the K best sentences are then read by the packaged GGUF model, which
scores log P(question | "Passage: <sentence>") (``likelihood.question_logprobs``) and log P(question)
with no passage. Printed, beside the shipped ranking:
1. top-1 after re-ranking the K best by score + w x per-token log-likelihood, w fitted on the fit
   half of the fit domains (in sample, leaving one fit domain out, and on the held-out domains);
2. the relevance gate's separation (AUC) of answerable from near-miss and off-topic questions with
   and without the pointwise mutual information of the question and the best sentence.

Rows are cached in DATA_DIR/ql-rows-<domain>-<n>-<K>.pkl with what they were computed from (the questions,
the library, the scoring, ranking and gate code, the GGUF file); a cache computed from anything else is
recomputed.

    python -m bench.tune.likelihood --data-dir /tmp/squad-cache
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import pickle
import time
from pathlib import Path

import numpy as np

from bench.data import qa_sets

K = 4


def rows_for(lib, generator, questions, k: int) -> list[dict]:
    from localreason import search
    from localreason.config import Settings
    from localreason.reason import likelihood
    from localreason.reason.gate import gate_score
    from localreason.reason.ranking import rank_quotes

    rows = []
    for q in questions:
        evidence = search.progressive_search(lib.index, q.text)
        packet = search.build_packet(evidence, Settings.answer_budget) if evidence.hits else None
        quotes = rank_quotes(q.text, [(c.chunk_id, c.content) for c in packet.chunks], lib.embedder.embed,
                             k) if packet and not packet.empty else []  # fmt: skip
        row = {"q": q.text, "kind": q.kind, "relevance": evidence.relevance, "score": np.array([x.score for x in quotes]),
               "y": np.array([q.held_by(x.text) for x in quotes], dtype=bool), "ll": np.zeros(len(quotes)),
               "n_q": 0, "prior": 0.0, "gate": gate_score(evidence.relevance, quotes[0].score) if quotes else 0.0,
               "seconds": 0.0}  # fmt: skip
        if quotes:
            t = time.perf_counter()
            scored = likelihood.question_logprobs(generator, q.text, [x.text for x in quotes])
            row["seconds"] = time.perf_counter() - t
            row["ll"], row["prior"], row["n_q"] = np.array(scored.given), scored.prior, scored.tokens
        rows.append(row)
    return rows


def collect(data_dir: Path, n: int, k: int, refresh: bool) -> dict[str, list[dict]]:
    from localreason import text
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.generate import shared_generator
    from localreason.models import resolve_embedding_model, resolve_gguf
    from localreason.reason import calibration, candidates, gate, likelihood, ranking

    settings = load_settings(data_dir / "libs")
    gguf = resolve_gguf(settings)
    generator = shared_generator(gguf, settings.cpu_threads)
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    # What the rows depend on besides the questions: the scoring and ranking code, the gate's weights and
    # the model file (a cache computed with other code or another GGUF is recomputed).
    code = "\0".join([inspect.getsource(likelihood), inspect.getsource(rows_for), inspect.getsource(ranking),
                      inspect.getsource(candidates), inspect.getsource(text), inspect.getsource(calibration),
                      inspect.getsource(gate), f"{gguf.name}:{gguf.stat().st_size}"])  # fmt: skip
    out = {}
    for name in qa_sets.DOMAINS:
        domain = qa_sets.load(data_dir, name)
        use = "fit" if domain.role == "fit" else "eval"
        asked = (qa_sets.sample(domain, "answerable", n, use) + qa_sets.sample(domain, "near-miss", n // 3, use)
                 + qa_sets.sample(domain, "off-topic", n // 3, use))  # fmt: skip
        key = hashlib.sha256("\0".join([qa_sets.fingerprint(domain), code, str(k)]
                                       + [f"{q.kind}:{q.text}" for q in asked]).encode()).hexdigest()[:16]  # fmt: skip
        cache = data_dir / f"ql-rows-{name}-{n}-{k}.pkl"
        if cache.is_file() and not refresh:
            cached = pickle.loads(cache.read_bytes())
            if cached.get("key") == key:
                out[name] = cached["rows"]
                continue
        t = time.perf_counter()
        lib = qa_sets.build_library(domain, data_dir, embedder)
        out[name] = rows_for(lib, generator, asked, k)
        lib.close()
        cache.write_bytes(pickle.dumps({"key": key, "rows": out[name]}))
        secs = [r["seconds"] for r in out[name] if r["seconds"]]
        print(f"  {name}: {len(asked)} questions in {time.perf_counter() - t:.0f} s "
              f"(likelihood p50 {np.median(secs):.2f} s)", flush=True)  # fmt: skip
    return out


def per_token(r) -> np.ndarray:
    return r["ll"] / max(1, r["n_q"])


def pmi(r) -> np.ndarray:
    return (r["ll"] - r["prior"]) / max(1, r["n_q"])


def top1(rows, w: float, k: int, feature=per_token) -> float:
    a = [r for r in rows if r["kind"] == "answerable"]
    hit = 0
    for r in a:
        if len(r["y"]):
            s = r["score"][:k] + w * feature(r)[:k]
            hit += bool(r["y"][int(np.argmax(s))])
    return hit / max(1, len(a))


def changed(rows_by, names, w: float, k: int) -> tuple[int, int]:
    """Answerable questions whose first quotation the re-ordering turned right, and turned wrong."""
    fixed = broke = 0
    for r in (r for n in names for r in rows_by[n] if r["kind"] == "answerable" and len(r["y"])):
        before, after = r["y"][0], r["y"][int(np.argmax(r["score"][:k] + w * per_token(r)[:k]))]
        fixed += bool(after and not before)
        broke += bool(before and not after)
    return fixed, broke


def sign_test(a: int, b: int) -> float:
    """Two-sided sign test of ``a`` against ``b`` changes (exact binomial, p = 1/2)."""
    from math import comb

    n, low = a + b, min(a, b)
    return min(1.0, 2 * sum(comb(n, i) for i in range(low + 1)) / 2**n) if n else 1.0


def mean_over(rows_by, names, fn) -> float:
    return float(np.mean([fn(rows_by[n]) for n in names]))


def fit_w(rows_by, names, k, feature, grid=np.linspace(0, 6, 61)) -> float:
    return float(max(grid, key=lambda w: (mean_over(rows_by, names, lambda rs: top1(rs, w, k, feature)), -w)))


def auc(pos, neg) -> float:
    pos, neg = np.asarray(pos), np.asarray(neg)
    if not len(pos) or not len(neg):
        return float("nan")
    return float(((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()))


def gate_auc(rows_by, names, other, feature) -> float:
    return float(np.mean([auc([feature(r) for r in rows_by[n] if r["kind"] == "answerable" and len(r["y"])],
                              [feature(r) for r in rows_by[n] if r["kind"] == other and len(r["y"])])
                          for n in names]))  # fmt: skip


def report(rows_by, k_max: int) -> None:
    fit, held = qa_sets.FIT, qa_sets.HELD_OUT
    print("\n1. Top-1 (the first quotation holds the answer), mean over domains; re-ranking the K best")
    print(f"{'ranking':<46} {'fit (in sample)':>16} {'fit (domain out)':>17} {'held out':>9} {'ceiling held':>13}")
    base = (mean_over(rows_by, fit, lambda rs: top1(rs, 0, 1)), mean_over(rows_by, held, lambda rs: top1(rs, 0, 1)))
    print(f"{'ranking_weights (shipped)':<46} {base[0]:>16.3f} {base[0]:>17.3f} {base[1]:>9.3f}")
    # Per-token log-likelihood only: PMI subtracts a constant per question, so it orders the same.
    for k in range(2, k_max + 1):
        w = fit_w(rows_by, fit, k, per_token)
        out = np.mean([top1(rows_by[d], fit_w(rows_by, [f for f in fit if f != d], k, per_token), k, per_token)
                       for d in fit])  # fmt: skip
        ceil = mean_over(rows_by, held, lambda rs: np.mean([r["y"][:k].any() for r in rs
                                                             if r["kind"] == "answerable"]))  # fmt: skip
        print(f"{f'+ {w:.1f} x per_token, K={k}':<46} "
              f"{mean_over(rows_by, fit, lambda rs: top1(rs, w, k, per_token)):>16.3f} {out:>17.3f} "
              f"{mean_over(rows_by, held, lambda rs: top1(rs, w, k, per_token)):>9.3f} {ceil:>13.3f}")
    print(f"  per held-out domain (K={k_max}): " + ", ".join(
        f"{d} {top1(rows_by[d], 0, 1):.2f}->{top1(rows_by[d], w, k_max, per_token):.2f}" for d in held))  # fmt: skip
    for label, names in (("fit", fit), ("held out", held)):
        fixed, broke = changed(rows_by, names, w, k_max)
        print(f"  {label}, question by question (K={k_max}, w={w:.1f}): first statement fixed {fixed}, broken "
              f"{broke}; sign test p = {sign_test(fixed, broke):.2f}")
    print("\n2. Gate: AUC of answerable against near-miss / off-topic (mean over domains)")
    feats = {"gate score (shipped)": lambda r: r["gate"],
             "PMI of the best sentence": lambda r: float(pmi(r)[0]),
             "max PMI over the K": lambda r: float(pmi(r).max()),
             "gate + 1 x max PMI": lambda r: r["gate"] + float(pmi(r).max()),
             "gate + 2 x max PMI": lambda r: r["gate"] + 2 * float(pmi(r).max())}  # fmt: skip
    for other in ("near-miss", "off-topic"):
        for label, f in feats.items():
            print(f"  {other:<10} {label:<26} fit {gate_auc(rows_by, fit, other, f):.3f}  "
                  f"held out {gate_auc(rows_by, held, other, f):.3f}")
    secs = [r["seconds"] for d in rows_by for r in rows_by[d] if r["seconds"]]
    print(f"\nlikelihood cost per question ({k_max} sentences + the prior): p50 {np.median(secs):.2f} s, "
          f"p90 {np.percentile(secs, 90):.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/squad"))
    ap.add_argument("--questions", type=int, default=60, help="answerable questions per domain (a third as many "
                    "near-miss and off-topic)")  # fmt: skip
    ap.add_argument("--k", type=int, default=K, help="sentences read by the model per question")
    ap.add_argument("--refresh", action="store_true")
    args = ap.parse_args()
    rows_by = collect(args.data_dir, args.questions, args.k, args.refresh)
    report(rows_by, args.k)


if __name__ == "__main__":
    main()
