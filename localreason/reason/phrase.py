"""The answer phrase: the words of the lead quotation that answer (a name, a date, a number, a place), which the
answer's prose leads with.

The reader's span head (reader.py) points at the phrase inside each sentence it reads (``Quote.phrase``) and says
how much more it believes in that phrase than in none (``Quote.phrase_margin``). After verification, the answer's
first statement gets the best sentence's phrase (``AnswerPhrase``) when:
- the margin is at least the calibration's ``headline_margin`` (a question that asks why or how, or evidence that
  does not say, leaves the head unsure: whole sentences then answer);
- the phrase is shorter than MAX_PHRASE_SHARE of its sentence (a phrase that is most of the sentence adds nothing);
- the statement quotes that sentence, and the phrase is, character for character, the part of the verified
  quotation where the reader found it (its offsets are the document's, like a reference's);
- it agrees with the question (answer_type.agrees: a name for who, a date for when, never the question's own
  words), unless the calibration's ``type_veto`` is off;
- a second reading agrees, when the reader has one (``confirm``: read.second_reading, the packaged passage
  reader reading the window around the sentence once, which must be sure of the same words there or in a
  sentence before it); not asked of a phrase written as code or a figure (candidates.written_as_code: the
  passage reader, trained on prose, seldom agrees on "--hostname" or "json_valid"; bench.tune.headline chose it
  with the margin it needs, on the fit kinds).
  The margin alone is too weak a sign of a right phrase (docs/benchmarks.md, "The passage reader and the
  headline"): of the phrases it would show held out, a third were wrong; with the second reading, a fifth.

A passage reader used as the reader itself (format 3: quotes carry ``phrase_probability``) is judged by that
probability against the calibration's ``phrase_probability`` instead of the margin.

A phrase that only refers ("he", "the company", "She was the first woman") is not an answer: when the statement
before the best sentence's quotes the sentence that names it (offer.py's naming rule), the name in that sentence
is the phrase.

The head also reads the sentence before the best one (the reader's context). When the best sentence says who
through a pronoun and the head's phrase before it is the better one (offer.points_before), that sentence leads
the answer and the head's phrase in it is the answer phrase: "Alexander Fleming" for "Who discovered penicillin?"
over "Alexander Fleming was a Scottish physician ... In 1928 he discovered penicillin ..." with the reader shipped
before 2026-12-07 (the reader of all of SQuAD does not point there; read.read_with_referent still quotes the naming
sentence with it).
"""

from __future__ import annotations

import re

from dataclasses import replace

from .answer import AnswerPhrase, Reference, Statement
from .answer_type import agrees, asks_yes_or_no, opens_with_number
from .calibration import DEFAULT, Calibration
from .candidates import Quote, written_as_code
from .offer import is_reference, name_run, opens_with_reference, points_before

MAX_PHRASE_SHARE = 0.7
"""A phrase of more than this share of its sentence's words is not shown apart from it (a limit, not a fit)."""


def with_phrase(statements: list[Statement], best: Quote | None, best_start: int | None, question: str, *,
                calibration: Calibration = DEFAULT, confirm=None) -> list[Statement]:  # fmt: skip
    """``statements`` with the answer phrase on the first one when the reader found one in ``best`` (the
    best-ranked sentence offered, which starts at ``best_start`` in its document's text); else unchanged.
    ``confirm(best, text)``, when given, is the second reading a phrase needs (read.second_reading)."""
    if not statements or best is None or best_start is None or asks_yes_or_no(question):
        return statements  # a yes/no question is answered by the statements, not a phrase ("open-source projects")
    if points_before(question, best):
        phrase = _before(statements, best, best_start, calibration)
    else:
        span = sure_phrase(best.text, best.phrase, best.phrase_margin, calibration.headline_margin,
                           probability=best.phrase_probability, least=calibration.phrase_probability)  # fmt: skip
        if span is None:
            return statements
        lo, hi = span
        text = best.text[lo:hi]
        if is_reference(text) or opens_with_reference(text):
            phrase = _named(statements, question)
        else:
            phrase = _inside(statements[0].references, best.chunk_id, best_start + lo, best_start + hi, text)
    if phrase is None or (calibration.type_veto and not agrees(question, phrase.text)):
        return statements
    if confirm is not None and not written_as_code(phrase.text) and not confirm(best, phrase.text):
        return statements  # (the passage reader, trained on prose, seldom agrees on "--hostname" or "62")
    return [replace(statements[0], phrase=phrase), *statements[1:]]


def sure_phrase(sentence: str, phrase: tuple[int, int] | None, margin: float | None, threshold: float, *,
                probability: float | None = None, least: float = 0.5) -> tuple[int, int] | None:  # fmt: skip
    """``phrase`` (offsets in ``sentence``) when the span head is sure enough of it and it is a phrase: not blank,
    and not more than MAX_PHRASE_SHARE of the sentence's words; else None. Sure enough: with a passage reader's
    ``probability``, at least ``least``; else its ``margin`` reaches ``threshold``. (Whether the phrase agrees
    with the question is with_phrase's last check: answer_type.agrees.) The benches (bench/tune/reader.py,
    bench/tune/passage.py) simulate with it."""
    if phrase is None:
        return None
    if probability is not None:
        if probability < least:
            return None
    elif margin is None or margin < threshold:
        return None
    lo, hi = tidy(sentence, *phrase)
    text = sentence[lo:hi]
    if not text.strip() or len(text.split()) > MAX_PHRASE_SHARE * len(sentence.split()):
        return None
    if _ASKING.match(text):
        return None  # "How many days" (a description that opens as a question does): no answer
    bound = (_BOUND.search(sentence, 0, lo) or _NUMBER_BOUND.search(sentence, 0, lo)) if opens_with_number(text) \
        else None  # fmt: skip
    if bound is None and re.search(r"\sto\s", text):
        bound = _FROM.search(sentence, 0, lo)  # "from 5 to 3": "5 to 3" is no value, and hides which came first
    return (bound.start() if bound else lo), hi


_FROM = re.compile(r"\b(?i:from)\s+$")


_ASKING = re.compile(r"(?i:how\s+(?:many|much|long|often|far|old|big|large)|what\s+(?:kind|type|sort))\b")
_BOUND = re.compile(r"\b(?i:at\s+least|at\s+most|up\s+to|no\s+(?:more|less|fewer|earlier|later)\s+than|"
                    r"not\s+(?:more|less|earlier|later)\s+than|(?:more|less|fewer|earlier|later)\s+than|"
                    r"a\s+(?:maximum|minimum)\s+of|not\s+(?:before|after)|within)\s+$")
_NUMBER_BOUND = re.compile(r"\b(?i:(?:well\s+)?(?:over|under)|about|around|approximately|roughly|nearly|almost|"
                           r"only)\s+$")  # fmt: skip
"""Words before a number that bound what it says ("at least 12 characters", "up to 3 days", "about 40"): without
them the phrase says something else (an exact length for a minimum), so they go with it ("more than money" is no
bound)."""


_PAIRS = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb", "(": ")", "[": "]", "{": "}",
          "`": "`", "<": ">"}  # fmt: skip
_CLOSERS = {v: k for k, v in _PAIRS.items()}
_QUOTES = frozenset('"\'`\u201c\u2018\u00ab')
"""Marks that only quote: a pair of them around the whole phrase is taken off. Brackets around a whole phrase are
part of it (``<Directory>``, ``[global]``, ``(none)``)."""
_EDGE_PUNCTUATION = ",;:!?"


def tidy(sentence: str, lo: int, hi: int) -> tuple[int, int]:
    """The span [lo, hi) of ``sentence`` without what a token boundary leaves at its edges: spaces; a quotation
    mark or bracket whose partner is outside the span (``manual"`` -> ``manual``, ``(default`` -> ``default``); a
    pair of quotation marks around the whole span (``"manual"`` -> ``manual``: the answer is the word quoted; a
    bracketed whole such as ``<Directory>`` or ``[global]`` stays); punctuation
    that ends a clause (``,;:!?``); a full stop that ends the sentence after a word (``ABORT.`` -> ``ABORT``; not
    the dots of ``e.g.`` or ``2.4``). A span that starts or ends inside a word is widened to the word
    (``cfg`` -> ``/boot/grub/grub.cfg``), and one that leaves a bracket open takes the closer that follows it
    (``systemd-cat(1`` -> ``systemd-cat(1)``)."""
    lo, hi = _whole_words(sentence, lo, hi)
    while True:
        before = (lo, hi)
        while lo < hi and (sentence[lo].isspace() or sentence[lo] in _EDGE_PUNCTUATION):
            lo += 1
        while lo < hi and (sentence[hi - 1].isspace() or sentence[hi - 1] in _EDGE_PUNCTUATION):
            hi -= 1
        text = sentence[lo:hi]
        if len(text) >= 2 and text[0] in _QUOTES and _PAIRS[text[0]] == text[-1] and _balanced(text[1:-1], text[0]):
            lo, hi = lo + 1, hi - 1
        elif text and text[0] in _PAIRS and not _closes(text, text[0]):
            lo += 1
        elif text and text[-1] in _CLOSERS and not _opens(text, _CLOSERS[text[-1]], text[-1]):
            hi -= 1
        elif text.endswith(".") and _word_then_stop(text):
            hi -= 1
        elif hi < len(sentence) and sentence[hi] == _left_open(text):
            hi += 1
        if (lo, hi) == before:
            return lo, hi


_NOT_IN_WORD = frozenset("\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb([{<)]}>,;!?\u2014\u2013")
"""Marks that end a run of characters that reads as one word (a path, an option, a file name)."""


def _in_word(ch: str) -> bool:
    return not ch.isspace() and ch not in _NOT_IN_WORD


_CODE_MARK = re.compile(r"[_./:~@()$]|^-")
"""A run of characters is a name written as software writes it (a path, an option, a file) when it holds one of
these or opens with a dash: then a cut inside it is widened to the whole run."""


def _whole_words(sentence: str, lo: int, hi: int) -> tuple[int, int]:
    """[lo, hi) widened to whole words where a token boundary cut one (the span head's tokens are pieces of
    words): back to the start of the run ``lo`` is inside, on to the end of the run ``hi`` is inside (a full stop
    or colon that ends a word ends it), when the cut is between two letters or digits ("gr|ub") or the run is a
    name written as code ("grub|.cfg", "-|-graph", "/boot/grub/|grub.cfg"); a hyphen between words of prose is a
    word's end ("New York|-based", "1939|-1945")."""
    n = len(sentence)
    if 0 < lo < n and _in_word(sentence[lo - 1]) and _in_word(sentence[lo]):
        start = lo
        while start > 0 and _in_word(sentence[start - 1]):
            start -= 1
        if (sentence[lo - 1].isalnum() and sentence[lo].isalnum()) or _CODE_MARK.search(sentence[start:hi]):
            lo = start
    if 0 < hi < n and _in_word(sentence[hi - 1]) and _in_word(sentence[hi]):
        end = hi
        while end < n and _in_word(sentence[end]) and not (
                sentence[end] in ".:" and (end + 1 == n or not _in_word(sentence[end + 1]))):
            end += 1
        if (sentence[hi - 1].isalnum() and sentence[hi].isalnum()) or sentence[hi - 1] == "-" \
                or _CODE_MARK.search(sentence[lo:end]):
            hi = end  # (a phrase never ends on a hyphen: "systemd-" is "systemd-cat")
    section = _SECTION.match(sentence, hi) if 0 < hi and sentence[hi - 1].isalnum() else None
    return lo, (section.end() if section else hi)


_SECTION = re.compile(r"\(\d[a-z]?\)")
"""A manual page's section right after a name: "systemd-cat(1)" is the name."""


def _left_open(text: str) -> str | None:
    """The closer of the last bracket ``text`` leaves open inside it (not at its start), or None."""
    depth: dict[str, int] = {}
    last = None
    for i, ch in enumerate(text):
        if ch in "([{<":
            depth[ch] = depth.get(ch, 0) + 1
            last = ch if i > 0 else last
        elif ch in ")]}>" and depth.get(_CLOSERS[ch], 0):
            depth[_CLOSERS[ch]] -= 1
    return _PAIRS[last] if last is not None and depth.get(last, 0) > 0 else None


def _word_then_stop(text: str) -> bool:
    """Whether ``text`` ends with a word and the full stop after it (not the last dot of ``e.g.`` or ``2.4.``)."""
    words = text[:-1].split()
    return bool(words) and "." not in words[-1] and words[-1][-1].isalnum()


def _balanced(inner: str, opener: str) -> bool:
    """Whether ``inner`` leaves no ``opener`` (or its partner) unmatched: the outer pair is then its own."""
    closer = _PAIRS[opener]
    if opener == closer:  # a straight quote pairs with the next one: around the whole span only if none is inside
        return opener not in inner
    depth = 0
    for ch in inner:
        depth += (ch == opener) - (ch == closer)
        if depth < 0:
            return False
    return depth == 0


def _closes(text: str, opener: str) -> bool:
    """Whether the ``opener`` at the start of ``text`` has its partner inside ``text``."""
    closer = _PAIRS[opener]
    return closer in text[1:] if opener != closer else text.count(opener) % 2 == 0


def _opens(text: str, opener: str, closer: str) -> bool:
    """Whether the ``closer`` at the end of ``text`` has its partner inside ``text``."""
    return opener in text[:-1] if opener != closer else text.count(closer) % 2 == 0


def _inside(refs: tuple[Reference, ...], chunk_id: str, start: int, end: int, text: str) -> AnswerPhrase | None:
    """The phrase at document offsets [start, end) when one of ``refs`` (verified quotations) covers them and
    holds exactly ``text`` there."""
    for ref in refs:
        if ref.chunk_id == chunk_id and ref.start <= start and end <= ref.end:
            if ref.quotation[start - ref.start:end - ref.start] == text:
                return AnswerPhrase(text, chunk_id, start, end)
    return None


def _before(statements: list[Statement], best: Quote, best_start: int,
            calibration: Calibration = DEFAULT) -> AnswerPhrase | None:  # fmt: skip
    """The span head's phrase in the sentence before ``best`` (which starts at document offset ``best_start``),
    when the first statement quotes that sentence (offer.with_naming_sentence leads with it)."""
    if best.before is None:
        return None
    if best.before_probability is not None and best.before_probability < calibration.phrase_probability:
        return None
    text = best.context[best.before[0]:best.before[1]]
    for ref in statements[0].references:
        at = ref.quotation.find(text)
        if ref.chunk_id == best.chunk_id and at >= 0 and ref.start + at + len(text) <= best_start:
            return AnswerPhrase(text, ref.chunk_id, ref.start + at, ref.start + at + len(text))
    return None


def _named(statements: list[Statement], question: str) -> AnswerPhrase | None:
    """For a phrase that only refers: the name in the first statement's quotation, when that quotation is the
    naming sentence (offer.with_naming_sentence leads with it, joined to the sentence that refers, in one statement).
    Not otherwise, however many statements follow: the first name in the sentence that refers is often someone else
    ("She discovered radium ... beside her husband Pierre Curie")."""
    if len(statements[0].references) < 2:
        return None
    for ref in statements[0].references:
        run = name_run(ref.quotation, question)
        if run is not None:
            a, b = run
            return AnswerPhrase(ref.quotation[a:b], ref.chunk_id, ref.start + a, ref.start + b)
    return None
