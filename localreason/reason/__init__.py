"""reason: one cited answer from the library, with every quotation verified (see pipeline.py).

    answer.py       the values: Answer, Statement, Reference, Citation, AnswerPhrase, Timings
    pipeline.py     reason() as named stages: check, gather evidence, choose quotations, fit the context,
                    generate, verify; it wires the stages and decides nothing itself
    calibration.py  every fitted number of the stages below, in one frozen value (Calibration; DEFAULT ships),
                    passed in: reason(..., calibration=...)
    candidates.py   the quotable sentences of the evidence (Candidate, Quote), and the text that reads like
                    instructions to an AI, which is never one
    ranking.py      the retrieval ranking of those sentences: features, weights, softmax, the echo rule
    ../readers.py   the trained cross-encoders' runtime on OpenVINO (its files: models.py); outside this package,
                    as search re-reads its first candidates with the passage reader too
    read.py         the reader's decision: its re-ordering of the best sentences and its estimate for the gate
    likelihood.py   question likelihood, and the model's re-ordering of the best sentences by it (answer_rerank)
    gate.py         the relevance gate (answers / does not clearly answer / too weak), and the gaps about
                    evidence not read or not used
    offer.py        what the model may quote: how many quotations lead, the naming rule
    phrase.py       the answer phrase the prose leads with (the reader's span head, inside the lead quotation)
    prompt.py       the model's instructions and what it reads (the offered sentences); the packet fitted
                    to its context
    grammar.py      the GBNF grammar of one request, its longest output, the strict parse of the output
    verify.py       mechanical verification and the composed answer prose (pure functions)

Rendering an answer for a person is render.py's.
"""

from __future__ import annotations

from .answer import NO_EVIDENCE_ANSWER, Answer, AnswerPhrase, Citation, Reference, Statement, Timings
from .calibration import DEFAULT as DEFAULT_CALIBRATION
from .calibration import Calibration
from .gate import NOT_ANSWERED_GAP, WEAK_SCOPE_GAP, gate_score, instruction_gaps, judge, judge_read, unread_gap
from .grammar import (EXTRA_STATEMENTS, LIMITATION_CHOICES, MAX_LIMITATION_CHARS, MAX_LIMITATIONS, MAX_TEXT_CHARS,
                      build_grammar, max_output_tokens, parse_output)  # fmt: skip
from .offer import EXTRA_CANDIDATES
from .pipeline import reason
from .prompt import SYSTEM_PROMPT, messages_for
from .verify import Verified, compose, content_words, find_quotation, locate, says_no_more, verify

__all__ = [
    "DEFAULT_CALIBRATION", "Calibration", "judge_read", "NOT_ANSWERED_GAP", "WEAK_SCOPE_GAP", "EXTRA_CANDIDATES",
    "EXTRA_STATEMENTS", "LIMITATION_CHOICES", "MAX_LIMITATIONS", "MAX_LIMITATION_CHARS", "MAX_TEXT_CHARS",
    "NO_EVIDENCE_ANSWER", "SYSTEM_PROMPT", "Answer", "AnswerPhrase", "Citation", "Reference", "Statement", "Timings", "Verified",
    "build_grammar", "compose", "content_words", "find_quotation", "gate_score", "instruction_gaps", "judge", "locate",
    "max_output_tokens", "messages_for", "parse_output", "reason", "says_no_more", "unread_gap", "verify",
]  # fmt: skip
