"""The model's decision: which of the best-ranked sentences answers the question.

The retrieval ranking (quotes.rank_quotes) cannot always tell a sentence that answers from one on the
same topic. The language model reads each of the RERANK_CANDIDATES best sentences with the question
and scores how likely it finds the question after it (question likelihood, Sachan et al. 2022;
likelihood.py); the sentences are re-ordered by ranking score + LIKELIHOOD_WEIGHT x the question's
log-likelihood per token, and the lead count is decided again on the re-ordered estimate. Sentences
after the RERANK_CANDIDATES best keep their order behind them. Fitted in scripts/tune_likelihood.py on
the fit domains; the held-out figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import NamedTuple

from .. import likelihood
from ..quotes import Quote

RERANK_CANDIDATES = 4
LIKELIHOOD_WEIGHT = 2.0
MAX_QUESTION_TOKENS = 200
"""A longer question (a pasted paragraph) is not scored: the ranking's order stands."""


class Reranked(NamedTuple):
    quotes: list[Quote]
    """All the quotes, the re-ordered ones first; probabilities re-estimated."""
    tokens: int
    """Tokens the model read to score them."""
    seconds: float


def can_rerank(generator) -> bool:
    """Whether the generator can score a question's likelihood (a llama.cpp model can; test fakes may not)."""
    return callable(getattr(generator, "continuation_logprobs", None))


def rerank(generator, question: str, quotes: list[Quote], cancel=None) -> Reranked:
    """``quotes`` (best first) with the RERANK_CANDIDATES best re-ordered by the model's question likelihood.

    Each quote's probability is re-estimated as proportional to probability x exp(LIKELIHOOD_WEIGHT x
    per-token log-likelihood); a quote the model did not read counts as no likelier than the least
    likely one it read. Fewer than two quotes, a generator that cannot score, or a question longer than
    MAX_QUESTION_TOKENS are returned as they are.
    """
    k = min(RERANK_CANDIDATES, len(quotes))
    if k < 2 or not can_rerank(generator) or generator.count_tokens(question) > MAX_QUESTION_TOKENS:
        return Reranked(list(quotes), 0, 0.0)
    start = time.perf_counter()
    scored = likelihood.question_logprobs(generator, question, [q.text for q in quotes[:k]], cancel=cancel)
    per_token = scored.per_token()
    floor = min(per_token)
    gains = [LIKELIHOOD_WEIGHT * (x - floor) for x in per_token] + [0.0] * (len(quotes) - k)
    weights = [max(q.probability, 1e-300) * math.exp(g) for q, g in zip(quotes, gains)]
    total = sum(weights) or 1.0
    combined = [q.score + g for q, g in zip(quotes, gains)]
    head = sorted(range(k), key=lambda i: -combined[i])
    out = [replace(quotes[i], probability=weights[i] / total) for i in head + list(range(k, len(quotes)))]
    return Reranked(out, scored.read, time.perf_counter() - start)
