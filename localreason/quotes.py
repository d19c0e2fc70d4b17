"""Quotable spans: the sentences of the admitted chunks, ranked by how well they answer the question.

The grammar lets the model quote only these spans, best first. The ranking combines
the question-to-sentence cosine of the embedding model with lexical overlap (the
share of the question's content words, weighted by rarity, that the sentence
contains), the same two read together with the previous sentence, the rank of the
chunk it came from, and for quantity or date questions the presence of a number;
the weights were chosen by measurement (see below).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .retrieval import query_terms

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:[A-Z]|ca|c|cf|approx|e\.g|i\.e|etc|vs|viz|al|Mr|Mrs|Ms|Dr|Prof|St|Mt|Jr|Sr|Co|Corp|Inc|Ltd|No|Nos|"
    r"Vol|Fig|Gen|Col|Lt|Capt|Sgt|Rev|Gov|Sen|Rep|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|U\.S|U\.K)\.)$")
"""A period after these ends an abbreviation or an initial, not a sentence ("ca. 2 million", "J. S. Bach")."""
MIN_CHARS = 15
MAX_CHARS = 600

# Tuned on 300 SQuAD questions, not the evaluation's (scripts/tune_reason.py): share of questions whose
# gold answer is in the top 1 / 2 / 3 sentences of a 1,000-token packet: cosine alone 0.64 / 0.74 / 0.79,
# these weights 0.73 / 0.81 / 0.86.
LEXICAL_WEIGHT = 0.7
CHUNK_RANK_WEIGHT = 0.1
NUMBER_WEIGHT = 0.1
CONTEXT_COSINE_WEIGHT = 0.5
CONTEXT_LEXICAL_WEIGHT = 0.4
"""How much a sentence gains when it reads better together with the sentence before it (the question's
subject is often named there: "Von Lettow ... . He surrendered in Northern Rhodesia."); measured in
scripts/tune_reason.py: top 1 / 2 / 3 from 0.74 / 0.82 / 0.86 to 0.77 / 0.85 / 0.88."""
"""Bonus for sentences with a digit when the question asks how many / much / long / old / far, or when."""
_NUMBER_QUESTION = re.compile(r"^\W*(how (many|much|long|old|far|large|big|tall)|what year|in what year|when)\b", re.I)


@dataclass(frozen=True)
class Quote:
    chunk_id: str
    text: str
    start: int
    """Character offset of the quote in its chunk's text."""
    score: float


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of ``text``; long ones cut at a word boundary."""
    spans = []
    pos = 0
    for m in list(_SENTENCE_END.finditer(text)) + [None]:
        if m is not None and m.group(0).strip() == "" and _ABBREVIATION.search(text, max(0, m.start() - 8), m.start()):
            continue
        end = m.start() if m else len(text)
        seg = text[pos:end]
        lead = len(seg) - len(seg.lstrip())
        s, e = pos + lead, pos + len(seg.rstrip())
        if e - s > MAX_CHARS:
            cut = text.rfind(" ", s, s + MAX_CHARS)
            e = cut if cut > s + MIN_CHARS else s + MAX_CHARS
        if e - s >= MIN_CHARS:
            spans.append((s, e))
        pos = m.end() if m else len(text)
    if not spans and text.strip():  # no sentence-like span (short lines, code): the passage itself, capped
        s = len(text) - len(text.lstrip())
        e = len(text.rstrip())
        if e - s > MAX_CHARS:
            cut = text.rfind(" ", s, s + MAX_CHARS)
            e = cut if cut > s else s + MAX_CHARS
        spans.append((s, e))
    return spans


def is_sentence_like(text: str) -> bool:
    """Ends like a sentence, or is long enough to be one (unlike a heading)."""
    return text.rstrip().endswith((".", "!", ":", ";", '"', "\u201d")) or len(text.split()) > 8


def rank_quotes(question: str, chunks: list[tuple[str, str]], embed, limit: int) -> list[Quote]:
    """The ``limit`` best sentences of ``chunks`` ((chunk id, text), in evidence order) for ``question``."""
    cands: list[tuple[int, str, int, str, str]] = []  # (chunk rank, chunk id, start, sentence, previous sentence)
    for rank, (chunk_id, text) in enumerate(chunks):
        spans = sentences(text)
        for i, (s, e) in enumerate(spans):
            if not text[s:e].rstrip().endswith("?"):  # a question (a FAQ heading, say) answers nothing
                prev = text[spans[i - 1][0]:spans[i - 1][1]] if i else ""
                cands.append((rank, chunk_id, s, text[s:e], prev))
    # A heading ("Router manual (vendor)") states nothing: quote sentences when there are any.
    cands = [c for c in cands if is_sentence_like(c[3])] or cands
    if not cands:
        return []
    n = len(cands)
    vecs = embed([question] + [c[3] for c in cands] + [f"{c[4]} {c[3]}".strip() for c in cands])
    cos = vecs[1:n + 1] @ vecs[0]
    cos_ctx = vecs[n + 1:] @ vecs[0]
    terms = query_terms(question)
    lowered = [c[3].lower() for c in cands]
    # Rarity of each term among the candidate sentences: rare terms say more.
    weights = {t: math.log(1 + n / (1 + sum(t in s for s in lowered))) for t in terms}
    total = sum(weights.values()) or 1.0

    def lexical(text: str) -> float:
        words = set(re.findall(r"\w+", text.lower()))
        return sum(w for t, w in weights.items() if t in words) / total

    numeric = bool(_NUMBER_QUESTION.match(question))
    scored = []
    for (rank, chunk_id, start, text, prev), c, cc in zip(cands, cos, cos_ctx):
        lex = lexical(text)
        score = float(c) + LEXICAL_WEIGHT * lex + CHUNK_RANK_WEIGHT / (1 + rank)
        score += CONTEXT_COSINE_WEIGHT * float(cc - c) + CONTEXT_LEXICAL_WEIGHT * (lexical(f"{prev} {text}") - lex)
        if numeric and any(ch.isdigit() for ch in text):
            score += NUMBER_WEIGHT
        scored.append(Quote(chunk_id, text, start, score))
    scored.sort(key=lambda q: -q.score)
    seen: set[str] = set()
    out = []
    for q in scored:
        key = " ".join(q.text.split())
        if key not in seen:
            seen.add(key)
            out.append(q)
        if len(out) == limit:
            break
    return out


def collapse(text: str) -> str:
    """Whitespace runs to one space, trimmed: the form quotations are compared in."""
    return " ".join(text.split())

