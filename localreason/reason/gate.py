"""reason's relevance gate, and the gaps that say why evidence was not read or not used."""

from __future__ import annotations

import math

from ..quotes import instruction_sentences
from ..types import EvidencePacket

ANSWER_GUARD = 2.0
SENTENCE_GUARD_WEIGHT = 0.3
"""reason's fixed relevance guard: evidence is strong enough to answer from when progressive search's
relevance (best cosine + coverage of the question's terms, search.relevance) plus
SENTENCE_GUARD_WEIGHT x the best quotable sentence's ranking score (quotes.WEIGHTS' scale) reaches
ANSWER_GUARD. Passage-level relevance alone cannot tell a passage on the topic from one that answers;
the best sentence can. Calibrated in scripts/tune_reason.py on several kinds of text."""
ANSWERED_GUARD = 2.9
"""Evidence that passes ANSWER_GUARD but falls short of ANSWERED_GUARD is on the topic without clearly
answering: the answer quotes only the closest sentence and says, in a gap (NOT_ANSWERED_GAP), that
the question is not answered. Calibrated with ANSWER_GUARD on near-miss questions (the library keeps
the article but not the passage that answers)."""
NOT_ANSWERED_GAP = ("The evidence is on the topic but does not clearly answer the question; only the closest "
                    "statement is quoted.")  # fmt: skip
WEAK_SCOPE_GAP = "The evidence in the requested scope matches the question only weakly."
"""The gap of an answer from weak evidence inside an explicit scope (which is answered, per the spec)."""
WEAK, UNSURE, ANSWERS = "weak", "unsure", "answers"


def gate_score(relevance: float, best_sentence_score: float) -> float:
    """What the relevance gate compares with ANSWER_GUARD and ANSWERED_GUARD."""
    return relevance + SENTENCE_GUARD_WEIGHT * best_sentence_score


def judge(relevance: float, best_sentence_score: float) -> str:
    """WEAK below ANSWER_GUARD, UNSURE below ANSWERED_GUARD, else ANSWERS (guards read at call time,
    so they can be tuned)."""
    score = gate_score(relevance, best_sentence_score)
    return WEAK if score < ANSWER_GUARD else UNSURE if score < ANSWERED_GUARD else ANSWERS


READ_WEAK = 0.02
READ_ANSWERS = 0.5
"""With the reader (read.py): evidence whose best sentence the reader gives less than READ_WEAK chance of
holding the answer is weak (the no-evidence answer, unless scoped); below READ_ANSWERS it is on the topic
without clearly answering (the closest sentence and NOT_ANSWERED_GAP). The retrieval gate's WEAK verdict
stands before the reader reads (pipeline.reader_reads: it costs no reader time). Chosen in
scripts/tune_reader.py on the fit halves of fit domains the reader was not trained on."""


READ_GATE_BLEND = 0.0
"""How much the retrieval gate's own score (gate_score less ANSWER_GUARD) adds to the reader's log-odds
before READ_WEAK and READ_ANSWERS are applied (0: the reader's estimate alone decides). Chosen with them from
0, 0.5, 1 and 2: 0 for the current training run (0.5 for the first, which it marked more answers for)."""


def blended_log_odds(logit: float, relevance: float, best_sentence_score: float, blend: float) -> float:
    """The reader's log-odds for the best sentence moved by ``blend`` x the retrieval gate's margin (gate_score
    less ANSWER_GUARD); scripts/tune_reader.py simulates the gate with it."""
    return logit + blend * (gate_score(relevance, best_sentence_score) - ANSWER_GUARD)


def read_estimate(best_reader: float, relevance: float, best_sentence_score: float) -> float:
    """What the reader's gate compares with READ_WEAK and READ_ANSWERS: the reader's estimate for the best
    sentence, its log-odds moved by READ_GATE_BLEND x the retrieval gate's margin."""
    if not READ_GATE_BLEND:
        return best_reader
    p = min(max(best_reader, 1e-9), 1 - 1e-9)
    z = blended_log_odds(math.log(p / (1 - p)), relevance, best_sentence_score, READ_GATE_BLEND)
    return 1 / (1 + math.exp(-z))


def judge_read(best_reader: float, relevance: float, best_sentence_score: float) -> str:
    """The gate on the reader's estimate for the best sentence (read_estimate): WEAK under READ_WEAK, UNSURE
    under READ_ANSWERS, else ANSWERS (guards read at call time, so they can be tuned)."""
    p = read_estimate(best_reader, relevance, best_sentence_score)
    return WEAK if p < READ_WEAK else UNSURE if p < READ_ANSWERS else ANSWERS


def unread_gap(budget: int) -> str:
    """Why no evidence was read although passages were gathered: the budget admitted none of them."""
    if budget == 0:
        return ("The evidence budget (maxTokens) was 0 tokens (negative values count as 0), so no evidence was "
                "read.")  # fmt: skip
    return f"The evidence budget (maxTokens) of {budget} tokens is too small for any passage, so no evidence was read."


def instruction_gaps(packet: EvidencePacket) -> list[str]:
    """One gap per document whose admitted text has a sentence that reads like instructions to an AI."""
    flagged = {c.chunk_id for c in instruction_sentences([(c.chunk_id, c.content) for c in packet.chunks])}
    titles = dict.fromkeys(c.document_title for c in packet.chunks if c.chunk_id in flagged)
    return [f"A passage of \u201c{t}\u201d reads like instructions to an AI, so it was not used as evidence."
            for t in titles]  # fmt: skip
