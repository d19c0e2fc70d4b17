"""Question likelihood: how likely the language model finds the question after reading a sentence
(Sachan et al. 2022, "Improving Passage Retrieval with Zero-Shot Question Generation").

A sentence that answers a question tends to make the question itself more predictable than a sentence
that is merely on its topic. ``question_logprobs`` returns log P(question | sentence) for each sentence
and log P(question) with no sentence, so that the pointwise mutual information (their difference)
can be compared across questions.
"""

from __future__ import annotations

from dataclasses import dataclass

PASSAGE_TEMPLATE = "Passage: {sentence}\nA question about this passage:"
PRIOR_CONTEXT = "A question:"


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
