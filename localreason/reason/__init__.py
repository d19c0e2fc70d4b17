"""reason: one cited answer from the library, with every quotation verified (see pipeline.py).

    answer.py    the values: Answer, Statement, Reference, Citation, Timings
    pipeline.py  reason() as named stages: check, gather evidence, choose quotations, fit the context,
                 generate, verify
    gate.py      the relevance gate and the gaps about evidence not read or not used
    read.py      the trained reader's re-ordering of the best sentences (reader.py runs it)
    prompt.py    the model's instructions and what it reads (the offered sentences); the packet fitted
                 to its context
    grammar.py   the GBNF grammar of one request, its longest output, the strict parse of the output
    verify.py    mechanical verification and the composed answer prose (pure functions)

Rendering an answer for a person is render.py's.
"""

from __future__ import annotations

from .answer import NO_EVIDENCE_ANSWER, Answer, Citation, Reference, Statement, Timings
from .gate import (ANSWER_GUARD, ANSWERED_GUARD, NOT_ANSWERED_GAP, READ_ANSWERS, READ_WEAK, SENTENCE_GUARD_WEIGHT,
                   WEAK_SCOPE_GAP, gate_score, instruction_gaps, judge, judge_read, unread_gap)  # fmt: skip
from .grammar import (EXTRA_STATEMENTS, LIMITATION_CHOICES, MAX_LIMITATION_CHARS, MAX_LIMITATIONS, MAX_TEXT_CHARS,
                      build_grammar, max_output_tokens, parse_output)  # fmt: skip
from .pipeline import EXTRA_CANDIDATES, reason
from .prompt import SYSTEM_PROMPT, messages_for
from .verify import Verified, compose, content_words, find_quotation, locate, says_no_more, verify

__all__ = [
    "ANSWER_GUARD", "ANSWERED_GUARD", "READ_ANSWERS", "READ_WEAK", "judge_read", "NOT_ANSWERED_GAP", "WEAK_SCOPE_GAP", "EXTRA_CANDIDATES", "EXTRA_STATEMENTS", "LIMITATION_CHOICES", "MAX_LIMITATIONS",
    "MAX_LIMITATION_CHARS", "MAX_TEXT_CHARS", "NO_EVIDENCE_ANSWER", "SENTENCE_GUARD_WEIGHT", "SYSTEM_PROMPT",
    "Answer", "Citation", "Reference", "Statement", "Timings", "Verified", "build_grammar", "compose",
    "content_words", "find_quotation", "gate_score", "instruction_gaps", "judge", "locate", "max_output_tokens",
    "messages_for", "parse_output", "reason", "says_no_more", "unread_gap", "verify",
]  # fmt: skip
