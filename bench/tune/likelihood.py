#!/usr/bin/env python3
"""Question likelihood (Sachan et al. 2022) as a re-ranker of reason's best quotable sentences and as a
signal for the relevance gate, measured on the fit and held-out domains of bench/data/qa_sets.py (read from the
shared SQuAD-format files: ``--qa-data``, bench/data/qa.py).

For each question: reason's own evidence (progressive search, the answer budget's packet) and its
ranking (quotes.rank_quotes); the K best sentences are then read by the packaged GGUF model, which
scores log P(question | "Passage: <sentence>") (``likelihood.question_logprobs``) and log P(question)
with no passage. Printed, beside the shipped ranking:
1. top-1 after re-ranking the K best by score + w x per-token log-likelihood, w fitted on the fit
   half of the fit domains (squad-dev, new_wiki): in sample, leaving one fit domain out, on the fit domains'
   evaluation half (other articles) and on the held-out domains (reddit posts, Amazon reviews);
2. the relevance gate's separation (AUC) of answerable from near-miss, off-topic and unanswerable questions
   (SQuAD 2.0's, asked about a paragraph that is in the library; squad-dev only) with and without the pointwise
   mutual information of the question and the best sentence.

Rows are cached in DATA_DIR/ql-rows-<domain>-<half>-<n>-<K>.pkl with what they were computed from (the questions,
the library, the scoring, ranking and gate code, the GGUF file); a cache computed from anything else is
recomputed. DATA_DIR also holds the libraries.

    python -m bench.tune.likelihood --data-dir /tmp/squad-cache [--qa-data FOLDER]
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import pickle
import time
from pathlib import Path

import numpy as np

from bench.data import qa, qa_sets

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


EVAL = [f"{n} (eval)" for n in qa_sets.FIT]
"""The rows of the fit domains' evaluation halves are kept under these names (reported, never fitted on)."""
OTHERS = ("near-miss", "off-topic", "unanswerable")


def collect(data_dir: Path, qa_data, n: int, k: int, refresh: bool) -> dict[str, list[dict]]:
    """Rows of every domain: a fit domain's fit half under its name and its evaluation half under ``"<name>
    (eval)"`` (EVAL); a held-out domain's (evaluation) questions under its name."""
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
        domain = qa_sets.load(name, qa_data)
        for half in ("fit", "eval") if domain.role == "fit" else ("eval",):
            key = f"{name} (eval)" if domain.role == "fit" and half == "eval" else name
            out[key] = half_rows(domain, half, (n, k), (data_dir, embedder, generator, code), refresh)
    return out


def half_rows(domain, half: str, sizes: tuple[int, int], tools: tuple, refresh: bool) -> list[dict]:
    """One half's rows (``sizes``: answerable questions, K), from DATA_DIR/ql-rows-<domain>-<half>-<n>-<K>.pkl when
    they were computed from the same. ``tools``: (DATA_DIR, embedder, generator, the code's text)."""
    (n, k), (data_dir, embedder, generator, code) = sizes, tools
    asked = (qa_sets.sample(domain, "answerable", n, half) + qa_sets.sample(domain, "near-miss", n // 3, half)
             + qa_sets.sample(domain, "off-topic", n // 3, half) + qa_sets.sample(domain, "unanswerable", n // 3, half))
    key = hashlib.sha256("\0".join([qa_sets.fingerprint(domain), code, str(k)]
                                   + [f"{q.kind}:{q.text}" for q in asked]).encode()).hexdigest()[:16]  # fmt: skip
    cache = data_dir / f"ql-rows-{domain.name}-{half}-{n}-{k}.pkl"
    if cache.is_file() and not refresh:
        cached = pickle.loads(cache.read_bytes())
        if cached.get("key") == key:
            return cached["rows"]
    t = time.perf_counter()
    lib = qa_sets.build_library(domain, data_dir, embedder)
    rows = rows_for(lib, generator, asked, k)
    lib.close()
    cache.write_bytes(pickle.dumps({"key": key, "rows": rows}))
    secs = [r["seconds"] for r in rows if r["seconds"]]
    print(f"  {domain.name} ({half} half): {len(asked)} questions in {time.perf_counter() - t:.0f} s "
          f"(likelihood p50 {np.median(secs) if secs else float('nan'):.2f} s)", flush=True)  # fmt: skip
    return rows


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
    """The mean over ``names`` of the AUC of answerable against ``other`` questions (domains without ``other``
    questions left out of the mean; nan when none has them)."""
    aucs = [auc([feature(r) for r in rows_by[n] if r["kind"] == "answerable" and len(r["y"])],
                [feature(r) for r in rows_by[n] if r["kind"] == other and len(r["y"])]) for n in names]  # fmt: skip
    aucs = [a for a in aucs if a == a]
    return float(np.mean(aucs)) if aucs else float("nan")


def report(rows_by, k_max: int) -> None:
    """Part 1, re-ranking: w fitted on the fit halves, reported in sample, a fit domain left out, on the evaluation
    halves and held out."""
    fit, held = qa_sets.FIT, qa_sets.HELD_OUT
    print("\n1. Top-1 (the first quotation holds the answer), mean over domains; re-ranking the K best")
    print(f"{'ranking':<40} {'fit (in sample)':>16} {'fit (domain out)':>17} {'fit, eval half':>15} {'held out':>9} "
          f"{'ceiling held':>13}")  # fmt: skip
    base = [mean_over(rows_by, names, lambda rs: top1(rs, 0, 1)) for names in (fit, fit, EVAL, held)]
    print(f"{'ranking_weights (shipped)':<40} {base[0]:>16.3f} {base[1]:>17.3f} {base[2]:>15.3f} {base[3]:>9.3f}")
    # Per-token log-likelihood only: PMI subtracts a constant per question, so it orders the same.
    for k in range(2, k_max + 1):
        w = fit_w(rows_by, fit, k, per_token)
        out = np.mean([top1(rows_by[d], fit_w(rows_by, [f for f in fit if f != d], k, per_token), k, per_token)
                       for d in fit])  # fmt: skip
        ceil = mean_over(rows_by, held, lambda rs: np.mean([r["y"][:k].any() for r in rs
                                                             if r["kind"] == "answerable"]))  # fmt: skip
        ins, ev, ho = (mean_over(rows_by, names, lambda rs: top1(rs, w, k, per_token)) for names in (fit, EVAL, held))
        print(f"{f'+ {w:.1f} x per_token, K={k}':<40} {ins:>16.3f} {out:>17.3f} {ev:>15.3f} {ho:>9.3f} {ceil:>13.3f}")
    print(f"  per held-out domain (K={k_max}): " + ", ".join(
        f"{d} {top1(rows_by[d], 0, 1):.2f}->{top1(rows_by[d], w, k_max, per_token):.2f}" for d in held))  # fmt: skip
    for label, names in (("fit", fit), ("fit, eval half", EVAL), ("held out", held)):
        fixed, broke = changed(rows_by, names, w, k_max)
        print(f"  {label}, question by question (K={k_max}, w={w:.1f}): first statement fixed {fixed}, broken "
              f"{broke}; sign test p = {sign_test(fixed, broke):.2f}")
    gate_report(rows_by)
    secs = [r["seconds"] for d in rows_by for r in rows_by[d] if r["seconds"]]
    print(f"\nlikelihood cost per question ({k_max} sentences + the prior): p50 {np.median(secs):.2f} s, "
          f"p90 {np.percentile(secs, 90):.2f} s")


def gate_report(rows_by) -> None:
    """Part 2: the gate's AUC with and without the likelihood, on the fit halves, the evaluation halves and held
    out (nothing is fitted here)."""
    print("\n2. Gate: AUC of answerable against near-miss / off-topic / unanswerable (mean over domains; nan: no such "
          "question in the group)")  # fmt: skip
    feats = {"gate score (shipped)": lambda r: r["gate"],
             "PMI of the best sentence": lambda r: float(pmi(r)[0]),
             "max PMI over the K": lambda r: float(pmi(r).max()),
             "gate + 1 x max PMI": lambda r: r["gate"] + float(pmi(r).max()),
             "gate + 2 x max PMI": lambda r: r["gate"] + 2 * float(pmi(r).max())}  # fmt: skip
    for other in OTHERS:
        for label, f in feats.items():
            print(f"  {other:<12} {label:<26} fit {gate_auc(rows_by, qa_sets.FIT, other, f):.3f}  "
                  f"eval half {gate_auc(rows_by, EVAL, other, f):.3f}  "
                  f"held out {gate_auc(rows_by, qa_sets.HELD_OUT, other, f):.3f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"),
                    help="cache folder: the rows (ql-rows-*.pkl) and the libraries")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--questions", type=int, default=60, help="answerable questions per domain and half (a third as "
                    "many near-miss, off-topic and unanswerable)")  # fmt: skip
    ap.add_argument("--k", type=int, default=K, help="sentences read by the model per question")
    ap.add_argument("--refresh", action="store_true")
    args = ap.parse_args()
    rows_by = collect(args.data_dir, args.qa_data, args.questions, args.k, args.refresh)
    report(rows_by, args.k)


if __name__ == "__main__":
    main()
