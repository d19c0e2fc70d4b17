#!/usr/bin/env python3
"""The calibrations behind `reason`'s defaults, fitted on several kinds of text and checked on others.

Questions: the fit half of each fit domain of bench/data/qa_sets.py (Wikipedia from SQuAD and CoQA,
school exams, science, children's stories, literature). The evaluation (bench/quality/reason.py) asks the
other half, and the held-out domains (news, reddit, product reviews) are used by no fit here; this
script prints their figures beside the in-sample ones so that a fit that does not travel shows.

1. The quotable-sentence ranking (quotes.WEIGHTS): for each answerable question, the features of
   every sentence of its packet and whether it holds the answer; weights fitted so that a softmax
   over each question's sentences gives the answering ones the most probability. Shown: top-1/2/3
   in sample, leaving one fit domain out at a time, and on the held-out domains.
2. How many quotations lead an answer (quotes.lead_count): support, first-statement and statement
   precision for each rule.
3. The relevance gate (reason/gate.py): the question-level features of answerable, near-miss and
   off-topic questions, and for each guard the share refused / stopped / marked.

The rows are cached in DATA_DIR/tune-rows-<domain>-<half>-<n>.pkl with what they were computed from
(library, questions, budget, feature code); a cache computed from anything else is recomputed.

    python -m bench.tune.reason --data-dir /tmp/squad-cache

The sentence-guard weight is the gate's; the table shows, for each guard, the share of each kind of
question that falls below it. The ranking's features are computed with the shipped code, so the gate
table is on the shipped WEIGHTS' scale only when those equal the fitted ones printed in part 1.
"""

from __future__ import annotations

import argparse
import math
import pickle
from pathlib import Path

import numpy as np

from bench.data import qa_sets

BUDGET = 1000


def question_rows(lib, questions, budget: int = BUDGET) -> list[dict]:
    """Per question: the candidates' features and answer flags, and the evidence's relevance."""
    from localreason import search
    from localreason.reason import ranking as Q
    from localreason.reason.candidates import candidates

    rows = []
    for q in questions:
        evidence = search.progressive_search(lib.index, q.text)
        packet = search.build_packet(evidence, budget) if evidence.hits else None
        cands = candidates([(c.chunk_id, c.content) for c in packet.chunks]) if packet and not packet.empty else []
        x = Q.features(q.text, cands, lib.embedder.embed) if cands else np.zeros((0, len(Q.FEATURES)))
        y = np.array([q.held_by(c.text) for c in cands], dtype=bool)
        rows.append({"q": q.text, "kind": q.kind, "x": x, "y": y, "relevance": evidence.relevance,
                     "words": np.array([len(c.text.split()) for c in cands])})  # fmt: skip
    return rows


def rows_key(domain, asked) -> str:
    """What a domain's cached rows were computed from: its library, the questions, the packet budget
    and the code of the features and candidates. Rows cached under another key are recomputed."""
    import hashlib
    import inspect

    from localreason.reason import ranking as Q
    from localreason.reason.candidates import candidates

    code = inspect.getsource(Q.features) + inspect.getsource(candidates) + repr(Q.FEATURES)
    text = "\0".join([qa_sets.fingerprint(domain), str(BUDGET), code] + [f"{q.kind}:{q.text}" for q in asked])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def collect(data_dir: Path, embedder, half: str, n: int, refresh: bool) -> dict[str, list[dict]]:
    """Rows of every domain (fit domains: the given half; held-out domains: their evaluation questions)."""
    out = {}
    for name in qa_sets.DOMAINS:
        domain = qa_sets.load(data_dir, name)
        use = half if domain.role == "fit" else "eval"
        asked = (qa_sets.sample(domain, "answerable", n, use) + qa_sets.sample(domain, "near-miss", n, use)
                 + qa_sets.sample(domain, "off-topic", n // 2, use))  # fmt: skip
        key = rows_key(domain, asked)
        cache = data_dir / f"tune-rows-{name}-{half}-{n}.pkl"
        if cache.is_file() and not refresh:
            cached = pickle.loads(cache.read_bytes())
            if isinstance(cached, dict) and cached.get("key") == key:
                out[name] = cached["rows"]
                continue
        lib = qa_sets.build_library(domain, data_dir, embedder)
        out[name] = question_rows(lib, asked)
        cache.write_bytes(pickle.dumps({"key": key, "rows": out[name]}))
        print(f"  {name}: {len(asked)} questions", flush=True)
    return out


def fit_weights(rows, l2: float = 1e-4) -> np.ndarray:
    """Weights maximising the softmax probability given to each question's answering sentences."""
    from scipy.optimize import minimize

    data = [(r["x"], r["y"]) for r in rows if r["kind"] == "answerable" and r["y"].any()]

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


def top_k(rows, w) -> np.ndarray:
    """Share of answerable questions with an answering sentence among the 1, 2, 3 best."""
    a = [r for r in rows if r["kind"] == "answerable"]
    tops = np.zeros(3)
    for r in a:
        if len(r["y"]):
            order = np.argsort(-(r["x"] @ w), kind="stable")
            tops += [bool(r["y"][order[:k + 1]].any()) for k in range(3)]
    return tops / max(1, len(a))


def pooled(rows_by_domain, names):
    return [r for n in names for r in rows_by_domain[n]]


def ranking_study(rows_by_domain) -> np.ndarray:
    from localreason.reason import ranking as Q
    from localreason.reason.calibration import DEFAULT

    fit, held = qa_sets.FIT, qa_sets.HELD_OUT
    w = fit_weights(pooled(rows_by_domain, fit))
    print("\n1. Sentence ranking: share of answerable questions with an answering sentence in the top 1 / 2 / 3")
    print(f"{'weights':<44} {'fit (in sample)':>20} {'fit (domain left out)':>24} {'held out':>20}")

    def cells(weights, loo=None):
        ins = np.mean([top_k(rows_by_domain[n], weights) for n in fit], axis=0)
        out = np.mean([top_k(rows_by_domain[n], weights) for n in held], axis=0)
        return ins, (loo if loo is not None else ins), out

    loo = np.mean([top_k(rows_by_domain[n], fit_weights(pooled(rows_by_domain, [m for m in fit if m != n])))
                   for n in fit], axis=0)  # fmt: skip
    for label, (a, b, c) in (("cosine alone", cells(np.eye(len(Q.FEATURES))[0])),
                             ("ranking_weights (as shipped)", cells(np.array(DEFAULT.ranking_weights))),
                             ("fitted on the fit domains", cells(w, loo))):  # fmt: skip
        print(f"{label:<44} {' '.join(f'{v:.3f}' for v in a):>20} {' '.join(f'{v:.3f}' for v in b):>24} "
              f"{' '.join(f'{v:.3f}' for v in c):>20}")  # fmt: skip
    print("   fitted weights: " + ", ".join(f"{n} {v:.2f}" for n, v in zip(Q.FEATURES, w)))
    return w


def lead_rules():
    """Candidate rules for how many of the best sentences lead: (label, function of the sorted probabilities)."""
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.offer import lead_count

    def mass(p, c):  # the earlier rule: the fewest whose probabilities add up to c, 1-5
        return max(1, min(5, int(np.searchsorted(np.cumsum(p), c)) + 1))

    rules = [(f"mass >= {c}, 1-5 (earlier)", lambda p, c=c: mass(p, c)) for c in (0.8, 0.95)]
    for most in (2, 3):
        for ratio in (0.1, 0.2, 0.35, 0.5):
            rules.append((f"p_k >= {ratio} p_1, at most {most}",
                          lambda p, r=ratio, m=most: max(1, min(m, int(np.sum(p >= r * p[0]))))))  # fmt: skip
    rules.append(("always 1", lambda p: 1))
    rules.append((f"offer.lead_count (ratio {DEFAULT.lead_ratio}, at most {DEFAULT.most_lead})", lead_count))
    return rules


def lead_outcomes(rows, w, rule) -> np.ndarray:
    """(support, first, precision, statements) over answerable questions with candidates."""
    from localreason.reason import ranking as Q

    out = []
    for r in rows:
        if r["kind"] != "answerable" or not len(r["y"]):
            continue
        s = r["x"] @ w
        order = np.argsort(-s, kind="stable")
        k = rule(Q.softmax(s)[order])
        held = r["y"][order[:k]]
        out.append((held.any(), held[0], held.mean(), k))
    return np.mean(out, axis=0)


def lead_study(rows_by_domain, w) -> None:
    print("\n2. How many quotations lead: support / first / precision / statements (mean over domains)")
    print(f"{'rule':<34} {'fit (in sample)':>30} {'held out':>30}")
    for label, rule in lead_rules():
        cells = [np.mean([lead_outcomes(rows_by_domain[n], w, rule) for n in names], axis=0)
                 for names in (qa_sets.FIT, qa_sets.HELD_OUT)]  # fmt: skip
        print(f"{label:<34} " + " ".join(f"{' '.join(f'{v:.3f}' for v in c[:3])} {c[3]:.2f}".rjust(30) for c in cells))


GATE_FEATURES = ("relevance", "best score", "best probability", "best cosine", "best lexical", "best word pairs",
                 "highest lexical")  # fmt: skip


def gate_features(r, w) -> np.ndarray:
    """One question's evidence as the gate sees it (GATE_FEATURES)."""
    if not len(r["y"]):
        return np.array([r["relevance"], 0, 0, 0, 0, 0, 0])
    s = r["x"] @ w
    top = int(np.argmax(s))
    from localreason.reason import ranking as Q

    return np.array([r["relevance"], s[top], float(Q.softmax(s).max()), r["x"][top, 0], r["x"][top, 2],
                     r["x"][top, 6], r["x"][:, 2].max()])  # fmt: skip


def gate_study(rows_by_domain, w) -> None:
    """For each decision (stop off-topic questions, mark near-miss ones) and feature set: AUC in sample,
    leaving a fit domain out, and on the held-out domains; then the chosen rule's rates."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    def xy(names, other):
        rows = [r for n in names for r in rows_by_domain[n] if r["kind"] in ("answerable", other)]
        return np.array([gate_features(r, w) for r in rows]), np.array([r["kind"] == "answerable" for r in rows])

    print("\n3. Relevance gate: AUC of answerable vs off-topic / near-miss (logistic regression on the features)")
    sets = {"relevance + 0.2 x best score (the earlier gate)": None, "relevance, best score": [0, 1],
            "all gate features": list(range(len(GATE_FEATURES)))}
    for other in ("off-topic", "near-miss"):
        for label, cols in sets.items():
            cells = []
            for train, test in ((qa_sets.FIT, qa_sets.FIT), ("loo", None), (qa_sets.FIT, qa_sets.HELD_OUT)):
                if cols is None:
                    if train == "loo":
                        cells.append(float("nan"))
                        continue
                    x, y = xy(test, other)
                    cells.append(roc_auc_score(y, x[:, 0] + 0.2 * x[:, 1]))
                    continue
                if train == "loo":
                    aucs = []
                    for n in qa_sets.FIT:
                        xa, ya = xy([m for m in qa_sets.FIT if m != n], other)
                        xb, yb = xy([n], other)
                        if len(set(yb)) > 1:
                            m = LogisticRegression(max_iter=2000).fit(xa[:, cols], ya)
                            aucs.append(roc_auc_score(yb, m.decision_function(xb[:, cols])))
                    cells.append(float(np.mean(aucs)))
                    continue
                xa, ya = xy(train, other)
                xb, yb = xy(test, other)
                m = LogisticRegression(max_iter=2000).fit(xa[:, cols], ya)
                cells.append(roc_auc_score(yb, m.decision_function(xb[:, cols])))
            print(f"   {other:<10} {label:<42} in sample {cells[0]:.3f}  domain left out {cells[1]:.3f}  "
                  f"held out {cells[2]:.3f}")


def guard_table(rows_by_domain, w, weight: float, guards) -> None:
    """For each guard on relevance + weight x best score: answerable below it, near-miss and off-topic
    below it (mean over domains), fit and held out."""
    def below(names, kind, guard):
        shares = []
        for n in names:
            xs = [gate_features(r, w) for r in rows_by_domain[n] if r["kind"] == kind]
            if xs:
                shares.append(np.mean([x[0] + weight * x[1] < guard for x in xs]))
        return float(np.mean(shares))

    print(f"\n   guard on relevance + {weight} x best score: share below it (mean over domains)")
    print(f"{'guard':>7} {'answerable fit':>15} {'near-miss fit':>14} {'off-topic fit':>14}  {'answerable held':>16} "
          f"{'near-miss held':>15} {'off-topic held':>15}")  # fmt: skip
    for g in guards:
        print(f"{g:>7.2f} " + " ".join(f"{below(names, k, g):>{wd}.3f}" for names, k, wd in (
            (qa_sets.FIT, "answerable", 15), (qa_sets.FIT, "near-miss", 14), (qa_sets.FIT, "off-topic", 14),
            (qa_sets.HELD_OUT, "answerable", 17), (qa_sets.HELD_OUT, "near-miss", 15),
            (qa_sets.HELD_OUT, "off-topic", 15))))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/squad"))
    ap.add_argument("--questions", type=int, default=70,
                    help="answerable (and at most near-miss; half as many off-topic) questions per domain")
    ap.add_argument("--refresh", action="store_true", help="recompute the cached feature rows")
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.models import resolve_embedding_model

    embedder = SentenceTransformerEmbedder(resolve_embedding_model(load_settings(args.data_dir / "libs")))
    rows = collect(args.data_dir, embedder, "fit", args.questions, args.refresh)
    w = ranking_study(rows)
    lead_study(rows, w)
    gate_study(rows, w)
    from localreason.reason.calibration import DEFAULT as G

    guard_table(rows, w, G.sentence_guard_weight, np.round(np.arange(1.8, 3.55, 0.1), 2))
    print(f"   chosen (reason/calibration.py): weight {G.sentence_guard_weight}, no evidence below {G.answer_guard}, "
          f"'does not clearly answer' below {G.answered_guard}")


if __name__ == "__main__":
    main()
