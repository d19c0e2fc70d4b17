"""Re-reading search's first candidates (issue #52): a cross-encoder, the packaged passage reader, reads the
question with each of the hybrid ranking's first REREAD_DEPTH candidates, and its reading, with the fused score,
orders them.

The index offers the reader as ``rereader`` (Library.rereader: the passage reader, unless the ``search_reread``
or ``reader`` setting is off); without one the hybrid's order stands. bench.quality.rerank measures what it adds
on every kind of text and what it costs, and chose REREAD_DEPTH and REREAD_WEIGHT on fit data only.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ModelError
from ..text import sentences

REREAD_DEPTH = 10
"""How many of the hybrid's first candidates the reader reads. bench.quality.rerank's grid on the fit parts (SQuAD
dev's fit half, the fit manuals' fit halves; 747 questions, on the final fusion) is nearly flat from 5 to 20
passages (MRR@10 0.874 / 0.880 / 0.879 at each depth's best weight); a depth of 5 cannot bring a passage into the
first 5, and within 0.005 of the best the fewest passages read is 10: about 70 ms on 2 cores (20: about 150 ms).
Held out, docs/history/52-search-beats-bm25.md."""
REREAD_WEIGHT = 1.0
"""The weight of the hybrid's fused score (standardised over those read) beside the reader's logit: the best on
the fit parts at depth 10."""
SIGNALS = ("window", "sentence", "span")
"""What of the passage reader's reading scores a passage: its window logit (the window holds the answer), its best
sentence's logit, or the log-odds of its span head's best phrase (reader.Span.probability)."""
REREAD_SIGNAL = "window"
"""The window logit: on the fit parts it beats the best sentence's logit and the best phrase's log-odds at each
depth's best weight (MRR@10 0.880 against 0.871 and 0.871 at depth 10)."""


def readings(reader, question: str, texts: list[str]) -> dict[str, np.ndarray]:
    """Each SIGNALS' score of every passage of ``texts`` for ``question``, the passage read whole as one window of
    its sentences (cut at the reader's WINDOW_LENGTH tokens)."""
    out = {name: np.zeros(len(texts), dtype=np.float64) for name in SIGNALS}
    if not texts:
        return out
    windows = [[t[s:e] for s, e in sentences(t)] or [t] for t in texts]
    for i, r in enumerate(reader.read_windows(question, windows)):
        best = r.best
        p = min(max(best.probability if best is not None else 0.0, 1e-6), 1 - 1e-6)
        out["window"][i] = r.logit
        out["sentence"][i] = float(np.max(r.sentences)) if len(r.sentences) else -10.0
        out["span"][i] = float(np.log(p / (1 - p)))
    return out


def reread(reader, question: str, texts: list[str], signal: str = "") -> np.ndarray:
    """The passage reader's score (``signal``, REREAD_SIGNAL unless given) that each passage of ``texts`` holds the
    answer to ``question``."""
    return readings(reader, question, texts)[signal or REREAD_SIGNAL]


def combined(logits: np.ndarray, fused: np.ndarray, weight: float = REREAD_WEIGHT) -> np.ndarray:
    """The re-read score: the reader's logit + ``weight`` x the fused score standardised over the same candidates."""
    fused = np.asarray(fused, dtype=np.float64)
    return np.asarray(logits, dtype=np.float64) + weight * (fused - fused.mean()) / (fused.std() or 1.0)


def reread_first(index, query: str, ranked: list, depth: int = REREAD_DEPTH, weight: float = REREAD_WEIGHT) -> list:
    """``ranked`` (search.ranking.Ranked, best first) with its first ``depth`` in the order of ``combined``; each
    keeps the fused score of the place it takes, so that a threshold on fused scores (progressive search) passes as
    many as before. Unchanged without a ``rereader`` on the index, or when a candidate's text is gone; a reader
    that fails is reported to ``index.reread_failed`` (which stops it) and the hybrid's order stands."""
    reader = getattr(index, "rereader", None)
    head = ranked[:depth]
    if reader is None or len(head) < 2:
        return ranked
    hits = index.store.hits([r.rowid for r in head])
    if len(hits) != len(head):  # a passage removed meanwhile
        return ranked
    texts = [h.content for h in hits]
    once = list(dict.fromkeys(texts))  # a copied passage (another rendering, a copied file) is read once
    try:
        read = dict(zip(once, reread(reader, query, once)))
        logits = np.array([read[t] for t in texts])
    except ModelError as exc:
        failed = getattr(index, "reread_failed", None)
        if callable(failed):
            failed(exc)
        return ranked
    order = np.argsort(-combined(logits, np.array([r.fused for r in head]), weight), kind="stable")
    return [replace(head[i], fused=head[place].fused) for place, i in enumerate(order)] + list(ranked[depth:])
