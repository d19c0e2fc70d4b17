"""The relevance gate: whether the evidence answers, is on the topic without clearly answering, or is too
weak to answer from; and the gaps that say why evidence was not read or not used.

Without the reader, the gate reads the retrieval gate score (``gate_score``: progressive search's relevance
plus a share of the best quotable sentence's ranking score) against two guards; with it, the reader's estimate
for the best sentence (``judge_read``). The numbers are the calibration's (calibration.py).
"""

from __future__ import annotations

import math
import re

from ..text import STOPWORDS, WORD, counted, is_field, query_terms, suffix_stem
from ..textquery import without_accents
from ..types import EvidencePacket
from .answer_type import asks_default
from .calibration import DEFAULT, Calibration
from .candidates import Quote, instruction_sentences

NOT_ANSWERED_GAP = ("The evidence is on the topic but does not clearly answer the question; only the closest "
                    "statement is quoted.")  # fmt: skip
NOT_ANSWERED_SIDES_GAP = ("The evidence is on the topic but does not clearly answer the question; the closest "
                          "statement of each source is quoted.")  # fmt: skip
"""NOT_ANSWERED_GAP's words when the sources disagree or a comparison hears each document (offer.with_sides)."""
WEAK_SCOPE_GAP = "The evidence in the requested scope matches the question only weakly."
"""The gap of an answer from weak evidence inside an explicit scope (which is answered, per the spec)."""
WEAK, UNSURE, ANSWERS = "weak", "unsure", "answers"


class NoEvidence(Exception):
    """The request ends with the no-evidence answer; ``notes`` are its gaps."""

    def __init__(self, notes: list[str]) -> None:
        super().__init__()
        self.notes = notes


def gate_score(relevance: float, best_sentence_score: float, *, calibration: Calibration = DEFAULT) -> float:
    """What the relevance gate compares with the calibration's answer_guard and answered_guard: relevance plus
    sentence_guard_weight x the best quotable sentence's ranking score."""
    return relevance + calibration.sentence_guard_weight * best_sentence_score


def judge(relevance: float, best_sentence_score: float, *, calibration: Calibration = DEFAULT) -> str:
    """WEAK below the calibration's answer_guard, UNSURE below its answered_guard, else ANSWERS."""
    score = gate_score(relevance, best_sentence_score, calibration=calibration)
    return WEAK if score < calibration.answer_guard else UNSURE if score < calibration.answered_guard else ANSWERS


def blended_log_odds(logit: float, relevance: float, best_sentence_score: float, blend: float,
                     phrase_margin: float | None = None, span_blend: float = 0.0, *,
                     calibration: Calibration = DEFAULT) -> float:  # fmt: skip
    """The reader's log-odds for the best sentence moved by ``blend`` x the retrieval gate's margin (gate_score
    less answer_guard) and by ``span_blend`` x the span head's phrase margin (its phrase against no phrase);
    bench/tune/reader.py simulates the gate with it."""
    margin = gate_score(relevance, best_sentence_score, calibration=calibration) - calibration.answer_guard
    return logit + blend * margin + (span_blend * phrase_margin if phrase_margin is not None else 0.0)


def read_estimate(best_reader: float, relevance: float, best_sentence_score: float,
                  phrase_margin: float | None = None, *, calibration: Calibration = DEFAULT) -> float:  # fmt: skip
    """What the reader's gate compares with read_weak and read_answers: the reader's estimate for the best
    sentence, its log-odds moved by the calibration's read_gate_blend x the retrieval gate's margin and its
    read_span_blend x the span head's phrase margin for that sentence."""
    blend, span = calibration.read_gate_blend, calibration.read_span_blend
    if not blend and (not span or phrase_margin is None):
        return best_reader
    p = min(max(best_reader, 1e-9), 1 - 1e-9)
    z = blended_log_odds(math.log(p / (1 - p)), relevance, best_sentence_score, blend, phrase_margin, span,
                         calibration=calibration)  # fmt: skip
    return 1 / (1 + math.exp(-z))


def judge_read(best_reader: float, relevance: float, best_sentence_score: float, phrase_margin: float | None = None,
               *, calibration: Calibration = DEFAULT) -> str:  # fmt: skip
    """The gate on the reader's estimate for the best sentence (read_estimate): WEAK under the calibration's
    read_weak, UNSURE under its read_answers, else ANSWERS. The retrieval gate's WEAK verdict stands before the
    reader reads (read.reader_reads: it costs no reader time)."""
    p = read_estimate(best_reader, relevance, best_sentence_score, phrase_margin, calibration=calibration)
    return WEAK if p < calibration.read_weak else UNSURE if p < calibration.read_answers else ANSWERS


def check_relevance(evidence, packet: EvidencePacket, ranked: list[Quote], question: str, *,
                    calibration: Calibration = DEFAULT, known=None) -> tuple[bool, list[str]]:  # fmt: skip
    """The relevance gate, on the evidence and its best quotable sentence (the retrieval ranking's; when the
    reader read the sentences, its estimate for the best one decides instead, judge_read):
    - weak unscoped evidence skips synthesis (NoEvidence); weak scoped evidence is answered with its
      closest sentence and a gap;
    - evidence on the topic that does not clearly answer is answered with its closest sentence alone
      and a gap that says the question is not answered (NOT_ANSWERED_GAP); so is a best sentence that
      is a field naming none of the question's words (field_off_question), or when the question names what
      neither the evidence nor the library holds (names_the_absent; ``known(word)``: whether the library does);
    - otherwise the offer stands. Returns whether only the closest sentence may be quoted, and the gaps."""
    if not ranked:
        raise NoEvidence(instruction_gaps(packet))
    best = ranked[0]
    if best.reader is not None:
        verdict = judge_read(best.reader, evidence.relevance, best.score, best.phrase_margin, calibration=calibration)
    else:
        verdict = judge(evidence.relevance, best.score, calibration=calibration)
    if verdict == ANSWERS and (field_off_question(question, ranked[0]) or names_a_sibling(question, best, packet)
                               or names_the_absent(question, evidence, packet, known)):  # fmt: skip
        verdict = UNSURE
    if verdict == WEAK:
        if not evidence.scoped:
            raise NoEvidence(instruction_gaps(packet))
        return True, [WEAK_SCOPE_GAP]
    if verdict == UNSURE:
        return True, [NOT_ANSWERED_GAP]
    return False, []


def field_off_question(question: str, quote: Quote) -> bool:
    """A field ranked high only through its context: it shares no word (or stem) with the question while
    its context (its record's or table's first line) does ("Source: gtk+2.0", after "Package:
    libgtk2.0-common", for "What is the website of libgtk2.0-common?", the package's file having no
    Homepage line). The gate does not take it for an answer. A field with a long value ("A: Hold the
    button for ten seconds, then ...") is prose and left to the gate; so is a field whose context does not
    name the question's subject either ("Weight: 11 kg" for "How heavy is it?": a paraphrase)."""
    text = quote.text
    if not question or not is_field(text) or len(text.split(":", 1)[-1].split()) > 8:
        return False
    asked = _content_stems(query_terms(question))
    return not _shares(asked, _content_stems(WORD.findall(text))) and _shares(asked, _content_stems(
        WORD.findall(quote.context)))  # fmt: skip


_MODEL = re.compile(r"\b([A-Za-z]+)-?(\d+[A-Za-z\d]*)\b")
"""A model's or a version's name: letters, then digits ("X1", "R7", "K-300", "iPhone12")."""


def names_a_sibling(question: str, best: Quote, packet: EvidencePacket) -> bool:
    """The question names a model ("How much did the Nimbus X1 cost?") that no passage of the evidence names, and
    the best sentence names another of its series ("The Nimbus X2 costs $249"): it answers for the other one."""
    asked = {(m.group(1).lower(), m.group(2).lower()) for m in _MODEL.finditer(question)}
    if not asked:
        return False
    evidence = " ".join(c.content for c in packet.chunks).lower()
    missing = {a for a in asked if not re.search(rf"\b{re.escape(a[0])}-?{re.escape(a[1])}\b", evidence)}
    said = {(m.group(1).lower(), m.group(2).lower()) for m in _MODEL.finditer(best.text)}
    return any(s[0] == m[0] and s[1] != m[1] for m in missing for s in said)


def names_the_absent(question: str, evidence, packet: EvidencePacket, known=None) -> bool:
    """The question names something (a word it writes with a capital or a digit, or with an underscore when it asks a
    default, not its first, not a number, at least NAME_CHARS long: "Amazon", "Tomcat", "DVDs", the default of
    "work_mem"; not a user's own "project_notes" folder, a review's finding) that nothing gathered holds, neither a
    passage nor a title or heading (as a word, a word it begins, one that shares all but its last three letters with
    it, "Relativism" / "relativist", or inside one with spaces, hyphens and underscores dropped: "ChromeOS"), and
    that the library does not hold either (``known(word)``, when given, says whether it does: "SQL" or "Linux" in a
    database manual are named elsewhere, and their absence from one answer's evidence says little): the question is
    about something the library does not speak of, however sure the reader is that the best sentence answers ("Can
    driftsync sync to Amazon S3?" over a manual that never names Amazon)."""
    words = WORD.findall(without_accents(question))
    setting = asks_default(question)  # a setting's name is a name when its default is asked, not "my_notes folder"
    names = {w for w in words[1:]
             if (w[:1].isupper() or any(c.isdigit() for c in w) or (setting and "_" in w.strip("_")))
             and not _NUMBER_LIKE.fullmatch(w) and len(w) >= NAME_CHARS and w.lower() not in STOPWORDS}  # fmt: skip
    if not names or not packet.chunks:  # nothing gathered: the other rules speak
        return False
    hits = getattr(evidence, "hits", ())
    gathered = without_accents(" ".join([c.content for c in packet.chunks] + [c.document_title for c in packet.chunks]
                               + [" ".join((h.content, h.document_title, *h.section_path)) for h in hits]))  # fmt: skip
    held, squeezed = _content_stems(WORD.findall(gathered)), re.sub(r"[\W_]+", "", gathered.lower())
    absent = [n for n in sorted(names) if not _shares(_content_stems([n]), held)
              and re.sub(r"[\W_]+", "", n.lower()) not in squeezed]  # fmt: skip
    if absent:  # a word of another form: all but its last three letters in common ("Relativism" / "relativist")
        prefixes = {w.lower()[:k] for w in WORD.findall(gathered) for k in range(NAME_CHARS + 2, len(w) + 1)}
        absent = [n for n in absent if n.lower()[:max(NAME_CHARS + 2, len(n) - 3)] not in prefixes]
    return any(known is None or not known(n) for n in absent)


_NUMBER_LIKE = re.compile(r"\d+(?:s|st|nd|rd|th)?", re.I)
"""A number, a decade or an ordinal ("1400s", "19th"): no name."""


NAME_CHARS = 4
"""The shortest name ``names_the_absent`` looks for: shorter ones are abbreviations a text often writes another way
("UI" / "user interface", "2FA" / "two-factor", "OS" in "Chrome OS" / "ChromeOS") or units ("GB")."""


def _content_stems(words) -> set[str]:
    """Stems of ``words``; numbers and single letters name nothing."""
    return {suffix_stem(w.lower()) for w in words if len(w) > 1 and not w.isdigit()}


def _shares(a: set[str], b: set[str]) -> bool:
    """A stem in both, or one that begins the other ("maintains" / "Maintainer", "installed" / "Installed-Size")."""
    return any(x == y or (min(len(x), len(y)) >= 4 and (x.startswith(y) or y.startswith(x))) for x in a for y in b)


def unread_gap(budget: int) -> str:
    """Why no evidence was read although passages were gathered: the budget admitted none of them."""
    if budget == 0:
        return ("The evidence budget (maxTokens) was 0 tokens (negative values count as 0), so no evidence was "
                "read.")  # fmt: skip
    return f"The evidence budget (maxTokens) of {counted(budget, 'token')} is too small for any passage, so no evidence was read."


def instruction_gaps(packet: EvidencePacket) -> list[str]:
    """One gap per document whose admitted text has a sentence that reads like instructions to an AI."""
    flagged = {c.chunk_id for c in instruction_sentences([(c.chunk_id, c.content) for c in packet.chunks])}
    titles = dict.fromkeys(c.document_title for c in packet.chunks if c.chunk_id in flagged)
    return [f"A passage of \u201c{t}\u201d reads like instructions to an AI, so it was not used as evidence."
            for t in titles]  # fmt: skip
