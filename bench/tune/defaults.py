#!/usr/bin/env python3
"""The ranking's "default" feature (reason/ranking.py): its weight, fitted on the fit manuals' fit halves alone.

A question that asks what holds when nothing is set ("If I don't set MaxRequestWorkers, how many ...", "Out of the
box, how long ...") seldom shares a word with the sentence that answers it ("Default: | KeepAliveTimeout 5",
"If the keyword is omitted, VIRTUAL is the default"). The feature is 1 where the question asks for a default
(``ranking.asks_default``) and the sentence states one (``ranking.says_default``), else 0.

For every answerable question of our manuals (bench/data/manuals.py): reason's own evidence (progressive search,
the answer budget's packet), its quotable sentences (candidates.candidates with the evidence's headings) and their
features; a sentence answers when it holds a gold answer. The other weights stay as shipped; the new one is the
grid value that gives the answering sentences of the fit manuals' fit halves the most softmax probability (mean
log). Printed for each part (the fit manuals' fit halves: in sample; their evaluation halves and the Apache
manual: held out), with the weight at 0 and at the chosen value: the share of questions whose best sentence
answers (top-1) and whose three best hold one (top-3), over all answerable questions and over those the feature
fires for. Last, how often ``asks_default`` fires on the shared QA sets' questions, where the feature was not fitted.

The rows are cached in DATA_DIR/default-rows-<manual>-<key>.pkl (the key: the ranking, candidate and text
code, the library file's size and time, the questions); the libraries are bench/quality/manuals.py's
(``--data-dir``, built there).

    python -m bench.tune.defaults --data-dir .cache/manuals [--qa-data FOLDER]
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import math
import pickle
from pathlib import Path

import numpy as np

from bench.data import manuals as M

GRID = tuple(np.round(np.arange(0.0, 8.01, 0.5), 2))


def rows_of(manual: str, data_dir: Path) -> list[dict]:
    """One row per answerable question of ``manual``: its features (x), which sentences answer (y), the texts."""
    from localreason.config import load_settings
    from localreason.library import Library
    from localreason import text as T
    from localreason.reason import candidates as C
    from localreason.reason import ranking as R
    from localreason.reason.pipeline import evidence_of
    from localreason.text import collapse

    asked = [q for q in M.questions(manual) if q.kind != "unanswerable"]
    store = (data_dir / "libs" / manual / "library.sqlite3").stat()  # the library as built: re-ingested, recomputed
    code = "".join(inspect.getsource(m) for m in (R, C, T)) + repr((store.st_size, store.st_mtime_ns)) + repr(
        [(q.id, q.question, q.answers) for q in asked])
    path = data_dir / f"default-rows-{manual}-{hashlib.sha256(code.encode()).hexdigest()[:10]}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    lib = Library(settings=load_settings(data_dir / "libs" / manual))
    rows = []
    for n, q in enumerate(asked, 1):
        evidence, packet = evidence_of(lib, q.question, scope={}, limit=None, max_tokens=None)
        headings = frozenset(collapse(h) for hit in evidence.hits for h in (hit.document_title, *hit.section_path))
        cands = C.candidates([(c.chunk_id, c.content) for c in packet.chunks], headings) if not packet.empty else []
        x = R.features(q.question, cands, lib.embedder.embed) if cands else np.zeros((0, len(R.FEATURES)))
        rows.append({"id": q.id, "q": q.question, "half": M.page_half(manual, q.page), "x": x,
                     "y": np.array([q.held_by(c.text) for c in cands], dtype=bool), "texts": [c.text for c in cands]})
        if n % 25 == 0:
            print(f"  {manual}: {n} of {len(asked)} questions", flush=True)
    lib.close()
    path.write_bytes(pickle.dumps(rows))
    return rows


def scores(row: dict, weights: np.ndarray) -> np.ndarray:
    """The ranking's scores as rank_quotes makes them (the echo and synopsis rules too)."""
    from localreason.reason.ranking import sink_echoes, sink_synopses

    s = row["x"] @ weights
    sink_echoes(row["q"], row["texts"], s)
    sink_synopses(row["q"], row["texts"], s)
    return s


def log_likelihood(rows: list[dict], weights: np.ndarray) -> float:
    """Mean log of the softmax probability given to each question's answering sentences."""
    total, n = 0.0, 0
    for r in rows:
        if r["y"].any():
            s = scores(r, weights)
            p = np.exp(s - s.max())
            total += math.log(p[r["y"]].sum() / p.sum() + 1e-12)
            n += 1
    return total / max(1, n)


def tops(rows: list[dict], weights: np.ndarray) -> tuple[float, float]:
    """(top-1, top-3): the share of ``rows`` whose best sentence answers, whose three best hold an answer."""
    one = three = 0
    for r in rows:
        if len(r["y"]):
            order = np.argsort(-scores(r, weights), kind="stable")
            one += bool(r["y"][order[0]])
            three += bool(r["y"][order[:3]].any())
    return one / max(1, len(rows)), three / max(1, len(rows))


def with_weight(w: float) -> np.ndarray:
    from localreason.reason.calibration import DEFAULT

    weights = np.array(DEFAULT.ranking_weights, dtype=np.float64)
    weights[-1] = w
    return weights


def report(parts: dict[str, list[dict]], chosen: float) -> None:
    from localreason.reason.ranking import asks_default

    print(f"\n{'part':<34} {'n':>4} {'top-1 / top-3, w=0':>19} {'w=' + str(chosen):>13} "
          f"{'asks a default: n':>18} {'w=0':>13} {'w=' + str(chosen):>13}")  # fmt: skip
    for name, rows in parts.items():
        fires = [r for r in rows if asks_default(r["q"])]
        cells = [tops(rows, with_weight(0.0)), tops(rows, with_weight(chosen)),
                 tops(fires, with_weight(0.0)), tops(fires, with_weight(chosen))]  # fmt: skip
        c = [f"{a:.3f} / {b:.3f}" for a, b in cells]
        print(f"{name:<34} {len(rows):>4} {c[0]:>19} {c[1]:>13} {len(fires):>18} {c[2]:>13} {c[3]:>13}")


def qa_firing(qa_data) -> None:
    """How often asks_default fires on the shared QA sets' questions (none of them was fitted on here)."""
    from bench.data import qa_sets
    from localreason.reason.ranking import asks_default

    print("\nasks_default on the shared QA sets' answerable questions (not fitted on):")
    for name in qa_sets.DOMAINS:
        try:
            qs = [q for q in qa_sets.load(name, qa_data).questions if q.kind == "answerable"]
        except (OSError, SystemExit) as exc:
            print(f"  {name}: not read ({exc})")
            continue
        fired = [q.text for q in qs if asks_default(q.text)]
        print(f"  {name}: {len(fired)} of {len(qs)} ({len(fired) / max(1, len(qs)):.3f})"
              + (f", e.g. {fired[0]!r}" if fired else ""))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/manuals"))
    ap.add_argument("--qa-data", default=None, help="the folder of SQuAD-format files (bench/data/qa.py)")
    args = ap.parse_args()
    rows = {m: rows_of(m, args.data_dir) for m in M.MANUALS}
    fit_manuals = [m for m in M.MANUALS if m not in M.HELD_OUT]
    fit = [r for m in fit_manuals for r in rows[m] if r["half"] == "fit"]
    print(f"{'w':>5} {'mean log p (fit halves)':>24}")
    best = max(GRID, key=lambda w: log_likelihood(fit, with_weight(w)))
    for w in GRID:
        print(f"{w:>5} {log_likelihood(fit, with_weight(w)):>24.4f}" + ("  chosen" if w == best else ""))
    parts = {"fit manuals, fit halves (in sample)": fit,
             "fit manuals, eval halves (held out)": [r for m in fit_manuals for r in rows[m] if r["half"] == "eval"]}
    parts.update({f"{m} (held out)": rows[m] for m in M.HELD_OUT})
    report(parts, float(best))
    qa_firing(args.qa_data)


if __name__ == "__main__":
    main()
