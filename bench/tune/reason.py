#!/usr/bin/env python3
"""The calibrations behind `reason`'s defaults, fitted on several kinds of text and checked on others.

Questions: bench/data/qa_sets.py's sets, read from the shared SQuAD-format files (``--qa-data``, bench/data/qa.py).
Every constant is fitted on the fit half of the fit domains (squad-dev: SQuAD 1.1 + 2.0 dev; new_wiki); the
evaluation half of the same domains (other articles) and the held-out domains (reddit posts, Amazon reviews) are
used by no fit here: this script prints their figures beside the in-sample ones so that a fit that does not
travel shows.

1. The quotable-sentence ranking (quotes.WEIGHTS): for each answerable question, the features of
   every sentence of its packet and whether it holds the answer; weights fitted so that a softmax
   over each question's sentences gives the answering ones the most probability. Shown: top-1/2/3
   in sample, leaving one fit domain out at a time, and on the held-out domains.
2. How many quotations lead an answer (quotes.lead_count): support, first-statement and statement
   precision for each rule.
3. The relevance gate (reason/gate.py): the question-level features of answerable, near-miss, off-topic and
   unanswerable questions (SQuAD 2.0's, asked about a paragraph that is in the library; squad-dev only), and
   for each guard the share refused / stopped / marked.

The rows are cached in DATA_DIR/tune-rows-<domain>-<half>-<n>.pkl with what they were computed from
(library, questions, budget, feature code); a cache computed from anything else is recomputed. DATA_DIR also
holds the libraries (qa_sets.build_library).

    python -m bench.tune.reason --data-dir /tmp/squad-cache [--qa-data FOLDER]

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

from bench.data import qa, qa_sets

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


EVAL = [f"{n} (eval)" for n in qa_sets.FIT]
"""The rows of the fit domains' evaluation halves are kept under these names (reported, never fitted on)."""
OTHERS = ("off-topic", "near-miss", "unanswerable")
"""The kinds of question the gate should stop or mark, each against the answerable ones."""


def asked_questions(domain, half: str, n: int) -> list:
    """``n`` answerable and near-miss questions of one half, half as many off-topic and unanswerable ones (only
    squad-dev has unanswerable questions)."""
    return (qa_sets.sample(domain, "answerable", n, half) + qa_sets.sample(domain, "near-miss", n, half)
            + qa_sets.sample(domain, "off-topic", n // 2, half) + qa_sets.sample(domain, "unanswerable", n // 2, half))


def collect(data_dir: Path, qa_data, embedder, n: int, refresh: bool) -> dict[str, list[dict]]:
    """Rows of every domain: a fit domain's fit half under its name and its evaluation half under ``"<name>
    (eval)"`` (EVAL); a held-out domain's (evaluation) questions under its name."""
    out = {}
    for name in qa_sets.DOMAINS:
        domain = qa_sets.load(name, qa_data)
        halves = ("fit", "eval") if domain.role == "fit" else ("eval",)
        for half in halves:
            key = name if half == "fit" or domain.role != "fit" else f"{name} (eval)"
            out[key] = domain_rows(domain, half, n, data_dir, embedder, refresh)
    return out


def domain_rows(domain, half: str, n: int, data_dir: Path, embedder, refresh: bool) -> list[dict]:
    """One half's rows, from DATA_DIR/tune-rows-<domain>-<half>-<n>.pkl when it was computed from the same."""
    asked = asked_questions(domain, half, n)
    key = rows_key(domain, asked)
    cache = data_dir / f"tune-rows-{domain.name}-{half}-{n}.pkl"
    if cache.is_file() and not refresh:
        cached = pickle.loads(cache.read_bytes())
        if isinstance(cached, dict) and cached.get("key") == key:
            return cached["rows"]
    lib = qa_sets.build_library(domain, data_dir, embedder)
    rows = question_rows(lib, asked)
    lib.close()
    data_dir.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps({"key": key, "rows": rows}))
    print(f"  {domain.name} ({half} half): {len(asked)} questions", flush=True)
    return rows


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


def triple(v) -> str:
    return " ".join(f"{x:.3f}" for x in v)


def ranking_study(rows_by_domain) -> np.ndarray:
    """Top-1/2/3 of the cosine alone, the shipped weights and weights fitted on the fit halves: in sample, each fit
    domain left out of the fit, on the fit domains' evaluation halves and on the held-out domains."""
    from localreason.reason import ranking as Q
    from localreason.reason.calibration import DEFAULT

    fit, held = qa_sets.FIT, qa_sets.HELD_OUT
    w = fit_weights(pooled(rows_by_domain, fit))
    print("\n1. Sentence ranking: share of answerable questions with an answering sentence in the top 1 / 2 / 3")
    print(f"{'weights':<30} {'fit (in sample)':>18} {'fit (domain out)':>18} {'fit, eval half':>18} {'held out':>18}")

    def cells(weights, loo=None):
        ins, ev, out = (np.mean([top_k(rows_by_domain[n], weights) for n in names], axis=0)
                        for names in (fit, EVAL, held))  # fmt: skip
        return ins, (loo if loo is not None else ins), ev, out

    loo = np.mean([top_k(rows_by_domain[n], fit_weights(pooled(rows_by_domain, [m for m in fit if m != n])))
                   for n in fit], axis=0)  # fmt: skip
    for label, cs in (("cosine alone", cells(np.eye(len(Q.FEATURES))[0])),
                      ("ranking_weights (as shipped)", cells(np.array(DEFAULT.ranking_weights))),
                      ("fitted on the fit halves", cells(w, loo))):  # fmt: skip
        print(f"{label:<30} " + " ".join(f"{triple(c):>18}" for c in cs))
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
    print(f"{'rule':<34} {'fit (in sample)':>24} {'fit, eval half':>24} {'held out':>24}")
    for label, rule in lead_rules():
        cells = [np.mean([lead_outcomes(rows_by_domain[n], w, rule) for n in names], axis=0)
                 for names in (qa_sets.FIT, EVAL, qa_sets.HELD_OUT)]  # fmt: skip
        print(f"{label:<34} " + " ".join(f"{triple(c[:3])} {c[3]:.2f}".rjust(24) for c in cells))


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


GATE_SETS = {"relevance + 0.2 x best score (the earlier gate)": None, "relevance, best score": [0, 1],
             "all gate features": list(range(len(GATE_FEATURES)))}  # fmt: skip
"""The gate's feature sets compared (None: the earlier fixed rule, nothing fitted)."""


def gate_xy(rows_by_domain, w, names, other: str) -> tuple[np.ndarray, np.ndarray]:
    """(gate features, is answerable) of the answerable and ``other`` questions of ``names``."""
    rows = [r for n in names for r in rows_by_domain[n] if r["kind"] in ("answerable", other)]
    x = np.array([gate_features(r, w) for r in rows]).reshape(len(rows), len(GATE_FEATURES))
    return x, np.array([r["kind"] == "answerable" for r in rows], dtype=bool)


def gate_auc(rows_by_domain, w, train, test, other: str, cols) -> float:
    """AUC on ``test`` of the gate fitted on ``train`` (``cols`` None: the earlier rule); nan when either side
    lacks one of the two kinds (unanswerable questions are squad-dev's only)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    xb, yb = gate_xy(rows_by_domain, w, test, other)
    if len(set(yb)) < 2:
        return float("nan")
    if cols is None:
        return float(roc_auc_score(yb, xb[:, 0] + 0.2 * xb[:, 1]))
    xa, ya = gate_xy(rows_by_domain, w, train, other)
    if len(set(ya)) < 2:
        return float("nan")
    m = LogisticRegression(max_iter=2000).fit(xa[:, cols], ya)
    return float(roc_auc_score(yb, m.decision_function(xb[:, cols])))


def gate_study(rows_by_domain, w) -> None:
    """For each decision (stop off-topic and unanswerable questions, mark near-miss ones) and feature set: AUC
    in sample (fit halves), leaving a fit domain out, on the fit domains' evaluation halves and on the held-out
    domains (nan where a group has no question of that kind)."""
    fit = qa_sets.FIT
    print("\n3. Relevance gate: AUC of answerable vs off-topic / near-miss / unanswerable (logistic regression on "
          "the features, fitted on the fit halves)")  # fmt: skip
    for other in OTHERS:
        for label, cols in GATE_SETS.items():
            loo = [gate_auc(rows_by_domain, w, [m for m in fit if m != n], [n], other, cols) for n in fit]
            loo = [v for v in loo if v == v]
            cells = [gate_auc(rows_by_domain, w, fit, fit, other, cols),
                     float(np.mean(loo)) if loo and cols is not None else float("nan"),
                     gate_auc(rows_by_domain, w, fit, EVAL, other, cols),
                     gate_auc(rows_by_domain, w, fit, qa_sets.HELD_OUT, other, cols)]  # fmt: skip
            print(f"   {other:<12} {label:<42} in sample {cells[0]:.3f}  domain left out {cells[1]:.3f}  "
                  f"eval half {cells[2]:.3f}  held out {cells[3]:.3f}")


def guard_table(rows_by_domain, w, weight: float, guards) -> None:
    """For each guard on relevance + weight x best score: the share of each kind of question below it (mean
    over domains), on the fit halves, the evaluation halves and the held-out domains ("-": no such question)."""
    def below(names, kind, guard):
        shares = []
        for n in names:
            xs = [gate_features(r, w) for r in rows_by_domain[n] if r["kind"] == kind]
            if xs:
                shares.append(np.mean([x[0] + weight * x[1] < guard for x in xs]))
        return f"{np.mean(shares):.3f}" if shares else "-"

    kinds = ("answerable",) + OTHERS
    groups = (("fit", qa_sets.FIT), ("eval", EVAL), ("held", qa_sets.HELD_OUT))
    print(f"\n   guard on relevance + {weight} x best score: share below it (mean over domains); columns: "
          f"{', '.join(kinds)} on the fit halves | eval halves | held out")  # fmt: skip
    print(f"{'guard':>7} " + " | ".join(" ".join(f"{k[:6] + ' ' + g:>11}" for k in kinds) for g, _ in groups))
    for g in guards:
        print(f"{g:>7.2f} " + " | ".join(" ".join(f"{below(names, k, g):>11}" for k in kinds) for _, names in groups))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"),
                    help="cache folder: the feature rows and the libraries")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--questions", type=int, default=70, help="answerable (and at most near-miss; half as many "
                    "off-topic and unanswerable) questions per domain and half")  # fmt: skip
    ap.add_argument("--refresh", action="store_true", help="recompute the cached feature rows")
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.models import resolve_embedding_model

    embedder = SentenceTransformerEmbedder(resolve_embedding_model(load_settings(args.data_dir / "libs")))
    rows = collect(args.data_dir, args.qa_data, embedder, args.questions, args.refresh)
    w = ranking_study(rows)
    lead_study(rows, w)
    gate_study(rows, w)
    from localreason.reason.calibration import DEFAULT as G

    guard_table(rows, w, G.sentence_guard_weight, np.round(np.arange(1.8, 3.55, 0.1), 2))
    print(f"   chosen (reason/calibration.py): weight {G.sentence_guard_weight}, no evidence below {G.answer_guard}, "
          f"'does not clearly answer' below {G.answered_guard}")


if __name__ == "__main__":
    main()
