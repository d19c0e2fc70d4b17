"""The reader's decision: which of the best-ranked sentences answers, and whether any does.

The retrieval ranking (ranking.rank_quotes) puts the ``Calibration.read_candidates`` best sentences first;
the reader (reader.py, a cross-encoder trained for this) reads each with the question and the sentence before
it. They are re-ordered by reader_weight x the reader's logit + feature_weight x the ranking's score; each
one's probability (for offer.lead_count, with ``Calibration.read_lead_ratio``) is the softmax of that combined
score over the sentences read (a field that only repeats the question stays last, by the ranking's echo rule,
ranking.sink_echoes), and each carries the reader's own estimate (``Quote.reader``) for the relevance gate
(gate.judge_read), with the span head's answer phrase inside it and its margin (``Quote.phrase``, for
phrase.py). Sentences after the ones read keep their order behind them, with no probability left.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from .calibration import DEFAULT, Calibration
from .candidates import Quote
from .gate import WEAK, judge
from .ranking import sink_echoes, softmax
from .reader import sigmoid


class Read(NamedTuple):
    quotes: list[Quote]
    seconds: float


def read(reader, question: str, quotes: list[Quote], *, calibration: Calibration = DEFAULT) -> Read:
    """``quotes`` (best first) with the ``calibration.read_candidates`` best re-ordered by the reader and the
    ranking together."""
    n = calibration.read_candidates
    head = quotes[:n]
    if not head:
        return Read(list(quotes), 0.0)
    start = time.perf_counter()
    pairs = [(q.text, q.context) for q in head]
    if hasattr(reader, "read"):  # the span head too (a reader of format 2)
        logits, phrases = reader.read(question, pairs)
    else:
        logits, phrases = reader.logits(question, pairs), [None] * len(head)
    logits = np.asarray(logits, dtype=np.float64)
    combined = calibration.reader_weight * logits + calibration.feature_weight * np.array([q.score for q in head])
    sink_echoes(question, [q.text for q in head], combined)
    probs = softmax(combined)
    chances = sigmoid(logits)
    order = np.argsort(-combined, kind="stable")
    out = [replace(head[i], probability=float(probs[i]), reader=float(chances[i]), **_phrase_fields(phrases[i]))
           for i in order]  # fmt: skip
    out += [replace(q, probability=0.0) for q in quotes[n:]]
    return Read(out, time.perf_counter() - start)


def _phrase_fields(phrase) -> dict:
    """The Quote fields of the span head's ``phrase`` (reader.Phrase, or None): inside the sentence and before it."""
    if phrase is None:
        return {}
    before = phrase.before
    return {"phrase": (phrase.start, phrase.end), "phrase_margin": phrase.margin,
            "before": (before.start, before.end) if before is not None else None,
            "before_margin": before.margin if before is not None else None}  # fmt: skip


def reader_reads(reader, question: str, evidence, ranked: list[Quote], failed=None, *,
                 calibration: Calibration = DEFAULT) -> tuple[list[Quote], float]:  # fmt: skip
    """The ranked sentences as the reader re-orders them (``read``), and its seconds. Not run without a reader,
    or when the retrieval gate already finds the (unscoped) evidence too weak to answer from (it would refuse
    anyway: the reader's time is saved). A reader that fails (ModelError) leaves the ranking as it is, and
    ``failed(exc)`` is called when given (the library then says so and stops using it)."""
    if reader is None or not ranked:
        return ranked, 0.0
    if not evidence.scoped and judge(evidence.relevance, ranked[0].score, calibration=calibration) == WEAK:
        return ranked, 0.0
    try:
        done = read(reader, question, ranked, calibration=calibration)
    except ModelError as exc:
        if callable(failed):
            failed(exc)
        return ranked, 0.0
    return done.quotes, done.seconds
