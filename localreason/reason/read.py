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

import re
import time
from collections import Counter
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..errors import ModelError
from ..text import WORD, sentences
from .answer_type import asks_default
from .calibration import DEFAULT, Calibration
from .candidates import Quote, is_sentence_like, opens_with_term, refers_back
from .gate import WEAK, judge
from .passage import around, place, windows_for
from .ranking import sink_echoes, softmax
from ..readers import heading_text, sigmoid


class Read(NamedTuple):
    quotes: list[Quote]
    seconds: float


def read(reader, question: str, quotes: list[Quote], *, calibration: Calibration = DEFAULT,
         chunks: dict[str, str] | None = None, headings: dict[str, str] | None = None) -> Read:  # fmt: skip
    """``quotes`` (best first) with the ``calibration.read_candidates`` best re-ordered by the reader and the
    ranking together. A passage reader (format 3) reads them in windows of ``chunks`` (chunk id: text). A
    sentence reader trained with headings reads each sentence with its chunk's (``headings``, chunk id:
    reader.heading_text; ``headings_of`` makes them from the evidence)."""
    n = calibration.read_candidates
    head = quotes[:n]
    if not head:
        return Read(list(quotes), 0.0)
    start = time.perf_counter()
    if getattr(reader, "reads_headings", False):
        pairs = [(q.text, q.context, (headings or {}).get(q.chunk_id, "")) for q in head]
    else:
        pairs = [(q.text, item_context(q, headings or {})) for q in head]
    if getattr(reader, "format", 2) == 3:
        logits, fields = passage_reading(reader, question, head, chunks or {})
    elif hasattr(reader, "read"):  # the span head too (a reader of format 2)
        logits, phrases = reader.read(question, pairs)
        fields = [_phrase_fields(p) for p in phrases]
        logits, joined = read_with_referent(reader, question, head, pairs, logits, calibration.read_answers)
        fields = [{**f, "referent": True} if i in joined else f for i, f in enumerate(fields)]
    else:
        logits, fields = reader.logits(question, pairs), [{} for _ in head]
    logits = np.asarray(logits, dtype=np.float64)
    combined = calibration.reader_weight * logits + calibration.feature_weight * np.array([q.score for q in head])
    sink_echoes(question, [q.text for q in head], combined)
    probs = softmax(combined)
    chances = sigmoid(logits)
    order = np.argsort(-combined, kind="stable")
    out = [replace(head[i], probability=float(probs[i]), reader=float(chances[i]), **fields[i]) for i in order]
    out += [replace(q, probability=0.0) for q in quotes[n:]]
    return Read(out, time.perf_counter() - start)


JOINED_OVER_BEFORE = 1.0
"""How much better (in logits) a sentence joined to the one before it must read than that one alone for the joined
reading to count (read_with_referent): a set margin, not fitted; "The rules fit on one page." after "Its founder,
Mary Brown, wrote the rules" must not take the credit for naming her."""


def read_with_referent(reader, question: str, head: list[Quote], pairs: list[tuple], logits,
                       answers: float = DEFAULT.read_answers) -> tuple[np.ndarray, set[int]]:  # fmt: skip
    """The sentence reader's logits, each sentence that speaks of someone or something named before it (a pronoun
    or a bare description among its first words, candidates.refers_back: "In 1928 he discovered penicillin") read
    once more joined to the sentence before it, and given the better of its two logits; with the places (of
    ``head``) where the joined reading was the better. Only when no sentence read alone answers (the reader's chance
    under ``answers``, the gate's read_answers): a second reading rescues a refusal, it does not reorder sure
    answers. The reader learnt that the sentence holding the answer's words is the one that answers: read alone,
    "he discovered penicillin" does not hold "Alexander Fleming", and the sentence naming him does not speak of
    penicillin."""
    logits = np.asarray(logits, dtype=np.float64)
    lean = [i for i, q in enumerate(head) if q.context.strip() and refers_back(q.text)]
    if not lean or float(sigmoid(logits.max())) >= answers:
        return logits, set()
    joined = [(f"{head[i].context.strip()} {head[i].text}", "", *pairs[i][2:]) for i in lean]  # (its heading kept)
    alone = [(head[i].context.strip(), "", *pairs[i][2:]) for i in lean]
    read = np.asarray(reader.logits(question, joined + alone) if hasattr(reader, "logits") else
                      reader.read(question, joined + alone)[0], dtype=np.float64)  # fmt: skip
    again, before = read[:len(lean)], read[len(lean):]
    # the pair must answer better than the sentence before it does alone: else the credit is that sentence's
    again = np.where(again >= before + JOINED_OVER_BEFORE, again, -np.inf)
    out = logits.copy()
    out[lean] = np.maximum(logits[lean], again)
    return out, {i for i, x in zip(lean, again) if x > logits[i]}


def _phrase_fields(phrase) -> dict:
    """The Quote fields of the span head's ``phrase`` (reader.Phrase, or None): inside the sentence and before it."""
    if phrase is None:
        return {}
    before = phrase.before
    return {"phrase": (phrase.start, phrase.end), "phrase_margin": phrase.margin,
            "before": (before.start, before.end) if before is not None else None,
            "before_margin": before.margin if before is not None else None}  # fmt: skip


def passage_reading(reader, question: str, head: list[Quote], chunks: dict[str, str],
                    signal: str = "mass") -> tuple[np.ndarray, list[dict]]:  # fmt: skip
    """A passage reader's (format 3) logit for each of ``head`` and its Quote fields: the windows of ``chunks``
    around them (passage.windows_for: the sentences of one passage are read together once), each sentence's
    logit there, the span head's best phrase in it and in the sentence before it (its context), with their
    probabilities (``signal``: passage.Span's ``mass`` or ``probability``), and the window's no-answer
    probability. A sentence whose chunk is not given gets UNREAD."""
    windows, placed = windows_for(head, chunks)
    reads = reader.read_windows(question, [[t for _, t in w.sentences] for w in windows])
    logits = np.full(len(head), UNREAD)
    fields: list[dict] = []
    for i, (q, at) in enumerate(zip(head, placed)):
        if at is None:
            fields.append({})
            continue
        r = reads[at.window]
        logits[i] = r.sentences[at.sentence]
        own = r.spans[at.sentence]
        f = {"no_answer": r.null}
        if own is not None:
            f.update(phrase=(own.start, own.end), phrase_margin=own.margin, phrase_probability=getattr(own, signal))
        sentences = windows[at.window].sentences
        prior = r.spans[at.sentence - 1] if at.sentence else None
        if prior is not None and " ".join(q.context.split()) == " ".join(sentences[at.sentence - 1][1].split()):
            f.update(before=(prior.start, prior.end), before_margin=prior.margin,
                     before_probability=getattr(prior, signal))  # fmt: skip
        fields.append(f)
    return logits, fields


def second_reading(passage_reader, question: str, chunks: dict[str, str], *, calibration: Calibration = DEFAULT):
    """The check phrase.with_phrase asks before it shows a phrase (``confirm(best, text)``): the passage reader
    (format 3) reads the window of ``chunks`` around ``best`` once (window_phrases), and agrees when its phrase
    in that sentence or in one before it in the window (where the name a "he" leans on is) has at least the
    calibration's ``phrase_agreement`` mass and shares most words with ``text`` (same_phrase). Only asked when a
    phrase would be shown; a reader that fails (ModelError) does not agree."""

    def confirm(best: Quote, text: str) -> bool:
        try:
            found = window_phrases(passage_reader, question, best, chunks.get(best.chunk_id, ""))
        except ModelError:
            return False
        return any(mass >= calibration.phrase_agreement and same_phrase(phrase, text) for phrase, mass in found)

    return confirm


def window_phrases(passage_reader, question: str, quote: Quote, chunk_text: str) -> list[tuple[str, float]]:
    """(phrase, mass) of the passage reader's best phrase in each sentence of the window around ``quote``
    (passage.around) up to and including ``quote``'s own, nearest first; none when ``quote`` is not a sentence
    of ``chunk_text``."""
    spans = [(s, chunk_text[s:e]) for s, e in sentences(chunk_text)]
    at = place(spans, chunk_text, quote)
    if at is None:
        return []
    run = around(spans, at)
    own = next(i for i, (s, _) in enumerate(run) if s == quote.start)
    r = passage_reader.read_windows(question, [[t for _, t in run]])[0]
    return [(run[i][1][sp.start:sp.end], sp.mass) for i in range(own, -1, -1) if (sp := r.spans[i]) is not None]


def same_phrase(a: str, b: str) -> bool:
    """Two phrases name the same thing: the F1 of their words (lower-cased) is at least 0.5."""
    x, y = WORD.findall(a.lower()), WORD.findall(b.lower())
    common = sum((Counter(x) & Counter(y)).values())
    return bool(common) and 2 * common / (len(x) + len(y)) >= 0.5


def headings_of(evidence) -> dict[str, str]:
    """Chunk id: the heading a reader that reads headings is shown for its sentences (reader.heading_text of
    the hit's document title and section path), for every hit of ``evidence``."""
    return {h.chunk_id: heading_text(h.document_title, h.section_path) for h in getattr(evidence, "hits", ())}


def item_context(quote: Quote, headings: dict[str, str]) -> str:
    """What the reader reads before ``quote``: the sentence before it, but for an item of a list ("512 MB of RAM",
    no sentence, after another item or the list's heading) the heading it sits under with its document's title
    ("Quillmark > Requirements", ``headings``): what the list is of, and whose."""
    if is_sentence_like(quote.text) or is_sentence_like(quote.context) or quote.chunk_id not in headings:
        return quote.context
    return headings[quote.chunk_id] or quote.context


UNREAD = -10.0
"""The logit of a sentence the passage reader could not place in a window (its chunk's text was not given)."""


def reader_reads(reader, question: str, evidence, ranked: list[Quote], failed=None, *,
                 calibration: Calibration = DEFAULT, chunks: dict[str, str] | None = None) -> tuple[list[Quote], float]:  # fmt: skip
    """The ranked sentences as the reader re-orders them (``read``), and its seconds. Not run without a reader,
    or when the retrieval gate already finds the (unscoped) evidence too weak to answer from (it would refuse
    anyway: the reader's time is saved). A reader that fails (ModelError) leaves the ranking as it is, and
    ``failed(exc)`` is called when given (the library then says so and stops using it)."""
    if reader is None or not ranked:
        return ranked, 0.0
    if not evidence.scoped and judge(evidence.relevance, ranked[0].score, calibration=calibration) == WEAK:
        return ranked, 0.0
    try:
        headings = headings_of(evidence)
        done = read(reader, question, ranked, calibration=calibration, chunks=chunks, headings=headings)
    except ModelError as exc:
        if callable(failed):
            failed(exc)
        return ranked, 0.0
    return entry_named_first(question, done.quotes), done.seconds


_SETTING_NAMED = re.compile(r"(?<![\w-])(?:--?[A-Za-z0-9][\w-]*|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)(?![\w-])")
"""A setting's or an option's name as a question writes it ("query_mem", "--checksum")."""


def entry_named_first(question: str, ranked: list[Quote]) -> list[Quote]:
    """``ranked`` with the entry the question names by its exact name first, when the question asks that entry's
    default and the reader put another entry before it: "What is the default value of query_mem?" is not answered by
    autoreclaim_query_mem's entry, however sure the reader is (it reads names as words, and "query_mem" is in both).
    Only a default question naming one setting or option: a name in another role ("Which setting caps the bandwidth
    of all fetch_workers?") is no entry asked about (a review). An entry is a quotation opening with its names on a
    line of their own ("-n, --dry-run"), or with a definition list's term ("flush_every (integer) : ..."). The moved
    entry takes the reader's estimate of the one it displaces when that is higher: the reader found that an entry
    answers, the name says which (left with its own, "If I run ab without -n, how many requests ...?" was refused
    with the -n entry, which answers, read at 0.1)."""
    names = {n.lower() for n in _SETTING_NAMED.findall(question)}
    if len(names) != 1 or not ranked or not asks_default(question):
        return ranked
    best = _entry_names(ranked[0].text)
    if not best or best & names:
        return ranked
    named = next((i for i, q in enumerate(ranked) if _entry_names(q.text) & names), None)
    if named is None:
        return ranked
    first, moved = ranked[0], ranked[named]
    if first.reader is not None and moved.reader is not None:  # the reader's estimate that an entry answers stays
        moved = replace(moved, reader=max(first.reader, moved.reader))
    return [moved, *ranked[:named], *ranked[named + 1:]]


def _entry_names(text: str) -> set[str]:
    """The names a quotation opens with as an entry's (lower case: "-n, --dry-run" gives both), or none."""
    line = text.split("\n", 1)[0]
    head = line.split(" : ", 1)[0].strip()
    if not head or not (opens_with_term(text) or " : " in line):
        return set()
    words = [w.rstrip(",") for w in head.split()]
    names = {w.lower() for w in words if _SETTING_NAMED.fullmatch(w)}
    return names if words and _SETTING_NAMED.fullmatch(words[0]) else set()
