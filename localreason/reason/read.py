"""The reader's decision: which of the best-ranked sentences answers, and whether any does.

The retrieval ranking (quotes.rank_quotes) puts the READ_CANDIDATES (8) best sentences first; the reader
(reader.py, a cross-encoder trained for this) reads each with the question and the sentence
before it. They are re-ordered by READER_WEIGHT x the reader's logit + FEATURE_WEIGHT x the ranking's score;
each one's probability (for quotes.lead_count) is the softmax of that combined score over the sentences read
(a field that only repeats the question stays last, as quotes.rank_quotes's echo rule puts it),
and each carries the reader's own estimate (``Quote.reader``) for the relevance gate (gate.judge_read).
Sentences after the READ_CANDIDATES best keep their order behind them, with no probability left.
The weights and the gate's guards were chosen in scripts/tune_reader.py on the fit domains' fit halves.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..quotes import ECHO_MARGIN, Quote, _echo_test, softmax
from .reader import sigmoid

READ_CANDIDATES = 8
READER_WEIGHT = 1.0
FEATURE_WEIGHT = 0.5
READ_LEAD_RATIO = 0.2
"""quotes.lead_count's ratio on the combined probabilities. The four constants (and the gate's READ_WEAK,
READ_ANSWERS and READ_GATE_BLEND) were chosen together in scripts/tune_reader.py, for the weights that
``scripts/train_reader.py --questions 13000 --lr 8e-5 --minutes 70`` makes, on the fit halves of two fit domains
the reader was not trained on (school exams, science texts): reading 12, 16 or 20 sentences scored no better
than 8 and costs more (docs/benchmarks.md)."""


class Read(NamedTuple):
    quotes: list[Quote]
    seconds: float


def read(reader, question: str, quotes: list[Quote], candidates: int = READ_CANDIDATES) -> Read:
    """``quotes`` (best first) with the ``candidates`` best re-ordered by the reader and the ranking together."""
    head = quotes[:candidates]
    if not head:
        return Read(list(quotes), 0.0)
    start = time.perf_counter()
    logits = np.asarray(reader.logits(question, [(q.text, q.context) for q in head]), dtype=np.float64)
    combined = READER_WEIGHT * logits + FEATURE_WEIGHT * np.array([q.score for q in head])
    echo = _echo_test(question)
    echoes = [i for i, q in enumerate(head) if echo(q.text)]
    if len(echoes) < len(head):  # a field that only repeats the question stays last, as in quotes.rank_quotes
        combined[echoes] = combined.min() - ECHO_MARGIN
    probs = softmax(combined)
    chances = sigmoid(logits)
    order = np.argsort(-combined, kind="stable")
    out = [replace(head[i], probability=float(probs[i]), reader=float(chances[i])) for i in order]
    out += [replace(q, probability=0.0) for q in quotes[candidates:]]
    return Read(out, time.perf_counter() - start)
