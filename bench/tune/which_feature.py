#!/usr/bin/env python3
"""A ranking feature for "which command / option / directive ..." questions, measured and not shipped.

The feature is 1 where the question asks which command, option, directive, file, variable ... (``ASKS``) and the
sentence has a name written as code (candidates.written_as_code) that the question does not hold, else 0. Its
weight is chosen as the ``default`` feature's was (bench/tune/defaults.py: its rows, the other weights as shipped,
the grid value with the best mean log probability of the answering sentences) on the fit manuals' fit halves alone;
printed: top-1 / top-3 of the ranking's own order (no reader) at weight 0 and at the chosen one, for the fit
halves (in sample), the evaluation halves and the Apache manual (held out), over all answerable questions and over
those that ask which. docs/history/51-answers-from-manuals.md, "Tried, not kept: a ranking feature ...".

    python -m bench.tune.which_feature --data-dir .cache/manuals
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np

from bench import ROOT
from bench.data import manuals as M
from bench.tune import defaults as D

ASKS = re.compile(r"\b(?:which|what)\s+(?:[\w-]+\s+){0,3}?(?:command|option|flag|switch|pragma|directive|function|"
                  r"file|variable|setting|parameter|macro|tool|program|utility|module|package|keyword|signal|"
                  r"method|api|interface|key|argument)s?\b", re.I)  # fmt: skip
GRID = tuple(np.round(np.arange(0.0, 6.01, 0.5), 2))


def names_code(question: str, sentence: str) -> bool:
    """``sentence`` has a name written as code that ``question`` does not hold."""
    from localreason.reason.candidates import written_as_code

    asked = {w.lower() for w in question.split()}
    return any(written_as_code(t) and t.lower().strip(".,:;") not in asked
               for t in re.findall(r"[\w./$%{}<>=:+-]+", sentence))  # fmt: skip


def with_feature(rows: list[dict]) -> list[dict]:
    """``rows`` (defaults.rows_of) with the feature as one more column, and whether the question asks which."""
    out = []
    for r in rows:
        asks = bool(ASKS.search(r["q"]))
        f = np.array([float(asks and names_code(r["q"], t)) for t in r["texts"]])
        x = np.column_stack([r["x"], f]) if len(r["texts"]) else np.zeros((0, r["x"].shape[1] + 1))
        out.append({**r, "x": x, "asks": asks})
    return out


def weights(w: float) -> np.ndarray:
    from localreason.reason.calibration import DEFAULT

    return np.array((*DEFAULT.ranking_weights, w), dtype=np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "manuals")
    args = ap.parse_args()
    parts = M.by_part(lambda manual: with_feature(D.rows_of(manual, args.data_dir)))
    fit = parts["fit manuals, fit halves"]
    likelihood = {w: D.log_likelihood(fit, weights(w)) for w in GRID}
    chosen = max(GRID, key=lambda w: likelihood[w])
    print("fit halves' mean log probability by weight:", ", ".join(f"{w}: {v:.3f}" for w, v in likelihood.items()))
    print(f"\n{'part':<26} {'n':>4} {'top-1 / top-3, w=0':>20} {'w=' + str(chosen):>14} {'asks which: n':>14} "
          f"{'w=0':>14} {'w=' + str(chosen):>14}")  # fmt: skip
    for name, rows in parts.items():
        asks = [r for r in rows if r["asks"]]
        cells = [D.tops(rs, weights(w)) for rs in (rows, asks) for w in (0.0, chosen)]
        a, b, c, d = (f"{one:.3f} / {three:.3f}" for one, three in cells)
        print(f"{name:<26} {len(rows):>4} {a:>20} {b:>14} {len(asks):>14} {c:>14} {d:>14}")


if __name__ == "__main__":
    main()
