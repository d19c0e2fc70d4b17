"""Question likelihood, and the model's re-ordering of the best-ranked sentences by it.

How likely the language model finds the question after reading a sentence (Sachan et al. 2022, "Improving
Passage Retrieval with Zero-Shot Question Generation"): a sentence that answers a question tends to make the
question itself more predictable than a sentence that is merely on its topic. ``question_logprobs`` returns
log P(question | sentence) for each sentence and log P(question) with no sentence, so that the pointwise
mutual information (their difference) can be compared across questions.

``rerank`` is the model's decision (the ``answer_rerank = likelihood`` setting): the retrieval ranking
(ranking.rank_quotes) cannot always tell a sentence that answers from one on the same topic, so the model
reads each of the ``Calibration.rerank_candidates`` best sentences with the question, and they are re-ordered
by ranking score + ``Calibration.likelihood_weight`` x the question's log-likelihood per token. The lead count
(offer.py) then reads the re-estimated probabilities. Sentences after those keep their order behind them.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import NamedTuple

from .calibration import DEFAULT, Calibration
from .candidates import Quote

PASSAGE_TEMPLATE = "Passage: {sentence}\nA question about this passage:"
PRIOR_CONTEXT = "A question:"
MAX_QUESTION_TOKENS = 200
"""A longer question (a pasted paragraph) is not scored: the ranking's order stands. A limit, not a fit."""


@dataclass(frozen=True)
class Scored:
    given: list[float]
    """log P(question | sentence), one per sentence, in their order."""
    prior: float
    """log P(question) with no sentence."""
    tokens: int
    """The question's length in the model's tokens."""
    read: int
    """Tokens the model read to score them all (each context with the question)."""

    def per_token(self) -> list[float]:
        return [g / max(1, self.tokens) for g in self.given]

    def pmi(self) -> list[float]:
        """(log P(question | sentence) - log P(question)) per question token, one per sentence."""
        return [(g - self.prior) / max(1, self.tokens) for g in self.given]


def question_logprobs(generator, question: str, sentences: list[str], cancel=None) -> Scored:
    """The question's log-likelihood after each of ``sentences``, and with none (the generator's
    ``continuation_logprobs``)."""
    contexts = [PASSAGE_TEMPLATE.format(sentence=" ".join(s.split())) for s in sentences] + [PRIOR_CONTEXT]
    scores, n, read = generator.continuation_logprobs(contexts, question, cancel=cancel)
    return Scored(scores[:-1], scores[-1], n, read)


class Reranked(NamedTuple):
    quotes: list[Quote]
    """All the quotes, the re-ordered ones first; probabilities re-estimated."""
    tokens: int
    """Tokens the model read to score them."""
    seconds: float


def can_rerank(generator) -> bool:
    """Whether the generator can score a question's likelihood (a llama.cpp model can; test fakes may not)."""
    return callable(getattr(generator, "continuation_logprobs", None))


def rerank(generator, question: str, quotes: list[Quote], cancel=None, *,
           calibration: Calibration = DEFAULT) -> Reranked:  # fmt: skip
    """``quotes`` (best first) with the ``calibration.rerank_candidates`` best re-ordered by the model's question
    likelihood.

    Each quote's probability is re-estimated as proportional to probability x exp(likelihood_weight x
    per-token log-likelihood); a quote the model did not read counts as no likelier than the least
    likely one it read. Fewer than two quotes, a generator that cannot score, or a question longer than
    MAX_QUESTION_TOKENS are returned as they are.
    """
    k = min(calibration.rerank_candidates, len(quotes))
    if k < 2 or not can_rerank(generator) or generator.count_tokens(question) > MAX_QUESTION_TOKENS:
        return Reranked(list(quotes), 0, 0.0)
    start = time.perf_counter()
    scored = question_logprobs(generator, question, [q.text for q in quotes[:k]], cancel=cancel)
    per_token = scored.per_token()
    floor = min(per_token)
    gains = [calibration.likelihood_weight * (x - floor) for x in per_token] + [0.0] * (len(quotes) - k)
    weights = [max(q.probability, 1e-300) * math.exp(g) for q, g in zip(quotes, gains)]
    total = sum(weights) or 1.0
    combined = [q.score + g for q, g in zip(quotes, gains)]
    head = sorted(range(k), key=lambda i: -combined[i])
    out = [replace(quotes[i], probability=weights[i] / total) for i in head + list(range(k, len(quotes)))]
    return Reranked(out, scored.read, time.perf_counter() - start)
