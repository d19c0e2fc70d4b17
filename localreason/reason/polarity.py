"""Which side of a yes/no question a sentence takes, read from its negations: the stance signal that needs no model.

Two passages that argue opposite answers to "Does the Rhine flow into the North Sea?" in their own words share no
stretch a near-twin rule can find ("eventually empties into the North Sea" / "The Rhine itself does not flow into
the North Sea"). No stance reader trained here told them apart from ordinary sentence pairs
(docs/history/53-disagreement-beyond-near-copies.md), so this reads the plainest sign there is:

- a sentence **speaks to** a yes/no question (answer_type.asks_yes_or_no) when it holds at least MIN_WORDS of the
  question's content words (stemmed, the words of its document's title not counted: they say what the document
  is about, not what is asked of it), and at least MIN_COVER of them if it says no, AFFIRM_COVER if it says yes
  (a sentence on the subject that answers nothing has no negation either);
- it **says no** when a negation governs one of those words: a negating word ("not", "no", "never", "n't",
  "none", "cannot", "without", ...) at most SCOPE words before it, with no clause mark between ("Silicon, not
  oxygen, is ..."; "None succeeded"), or the word itself negated by its prefix ("inefficient" for "efficient");
  a question that is itself negative ("Isn't ...") turns that round;
- two sentences of different documents that both speak to the question and say opposite things are two sides
  (``contradiction_for``: their chance of contradicting each other is 1, else 0, as disagree.opposite reads a
  stance reader's).

What it cannot hear: opposite answers said without a negation ("a disaster" / "a success"; "in 1885" / "well
before 1880"), and a negation further than SCOPE words from what the question asks. Measured on the opposing
set's fit and held-out parts and on ordinary questions (bench/tune/stance.py, ``--rule``, which chose MIN_COVER and
AFFIRM_COVER on the fit parts: named 0.188 fit, 0.095 held out). Off by default (``calibration.stance_rule``): a
probe's agreeing sources were called disagreeing for 4 of 29 yes/no questions.
"""

from __future__ import annotations

import itertools
import re

from ..text import STOPWORDS, suffix_stem
from .answer_type import asks_yes_or_no

MIN_COVER = 0.5
"""A sentence that says no speaks to the question when it holds at least this share of the question's content
words."""
AFFIRM_COVER = 0.67
"""A sentence without a negation says yes only when it holds at least this share of them: a sentence on the
subject that says nothing of what is asked has no negation either ("Normally, full-text queries are
case-insensitive." is no "yes" to "Are FTS5 searches case-sensitive?")."""
MIN_WORDS = 2
"""... and at least this many of them (one shared word is a subject, not a claim)."""
SCOPE = 6
"""A negating word governs the question's words within this many words after it."""

_TOKEN = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*|[,;:.!?()\u2014\u2013]", re.UNICODE)
"""Words, a hyphenated one as one ("--no-color" is the word "no-color", not a "no"), and clause marks."""
_NEGATIONS = frozenset("not no never none cannot nor neither nothing nobody nowhere without hardly".split())
_NOT_NEGATING = {"not": ("only", "just", "merely", "simply", "least", "until"), "no": ("doubt", "question"),
                 "without": ("doubt",)}  # fmt: skip
"""Negating words that do not negate before these ("not only", "no doubt", "not rebuilt until 1810": it was)."""
_UNDOING = frozenset("stop stops stopped prevent prevents prevented fail fails failed lack lacks".split())
"""A second negation in a negation's scope undoes it ("never stops flowing", "nothing prevents")."""
_PREFIXES = ("non-", "non", "un", "in", "im", "ir", "il", "dis")
_ADJECTIVE = re.compile(r"(?:ent|ant|ible|able|ive|ect|ate|ure|ar|al|id|ete|ic|ous|ed|ful)$")
"""A prefix negates only a word shaped like an adjective or a participle ("inefficient", "impossible", "invalid",
"unsupported", "non-free"): not "improve" (prove), "display" (play), "instance" (stance), "unpacks" (packs)."""
_BREAK = frozenset(",;:.!?()\u2014\u2013")


def _tokens(text: str) -> list[str]:
    return [t.lower().replace("\u2019", "'") for t in _TOKEN.findall(text)]


def _stem(word: str) -> str:
    return suffix_stem(word.split("'")[0])


def content_stems(text: str) -> set[str]:
    """The content words of ``text``, stemmed (no stopwords, no numbers alone)."""
    return {_stem(t) for t in _tokens(text) if t[0].isalnum() and t not in STOPWORDS and not t.isdigit()}


def _negates(token: str, after: str | None) -> bool:
    if token.endswith("n't"):
        return True
    return token in _NEGATIONS and after not in _NOT_NEGATING.get(token, ())


def _prefixed(token: str, asked: set[str]) -> bool:
    """"inefficient" when the question asks "efficient": a word the question asks, negated by its prefix."""
    for p in _PREFIXES:
        base = token[len(p):]
        if token.startswith(p) and len(base) >= 3 and _stem(base) in asked and (
                p == "non-" or _ADJECTIVE.search(base)):
            return True
    return False


def says_no(sentence: str, asked: set[str]) -> bool:
    """Whether a negation in ``sentence`` governs one of the ``asked`` words (stemmed): see the module's doc."""
    tokens = _tokens(sentence)
    for i, token in enumerate(tokens):
        before = list(itertools.takewhile(lambda t: t not in _BREAK, reversed(tokens[max(0, i - SCOPE):i])))
        if _prefixed(token, asked) and not any(_negates(t, None) for t in before):
            return True  # "inefficient"; "not impossible" is a yes
        if not _negates(token, tokens[i + 1] if i + 1 < len(tokens) else None):
            continue
        scope = list(itertools.takewhile(lambda t: t not in _BREAK, tokens[i + 1:i + 1 + SCOPE]))
        if any(_negates(t, None) or t in _UNDOING or _prefixed(t, asked) for t in scope):
            continue  # a double negation says yes ("never stops flowing", "not impossible")
        if any(_stem(t) in asked for t in scope):
            return True
    return False


def denies(sentence: str) -> bool:
    """Whether ``sentence`` says no to anything: a negating word that negates ("does not have", "never", "cannot";
    not "not only", "no doubt")."""
    tokens = _tokens(sentence)
    return any(_negates(t, tokens[i + 1] if i + 1 < len(tokens) else None) for i, t in enumerate(tokens))


def side(question: str, sentence: str, title: str = "") -> bool | None:
    """True (yes), False (no), or None when ``sentence`` does not speak to the yes/no ``question``."""
    asked = content_stems(question) - content_stems(title)
    held = {w for w in asked if w in content_stems(sentence) or any(_prefixed(t, {w}) for t in _tokens(sentence))}
    if not asked or len(held) < MIN_WORDS:
        return None
    no = says_no(sentence, asked)
    if len(held) < (MIN_COVER if no else AFFIRM_COVER) * len(asked):
        return None
    return no == any(_negates(t, None) for t in _tokens(question))  # a question that is itself negative


def contradiction_for(question: str, titles: dict[str, str] | None = None):
    """For a yes/no ``question``: pairs of sentences -> 1.0 where both speak to it and take opposite sides, else
    0.0 (disagree.opposite's ``contradiction``); ``titles``: sentence -> its document's title, when known. None for
    a question that is not answered yes or no."""
    if not asks_yes_or_no(question):
        return None
    titles = titles or {}

    def contradiction(pairs: list[tuple[str, str]]) -> list[float]:
        out = []
        for a, b in pairs:
            x, y = side(question, a, titles.get(a, "")), side(question, b, titles.get(b, ""))
            out.append(1.0 if x is not None and y is not None and x != y else 0.0)
        return out

    return contradiction


RULE_LEAST = 0.5
"""The rule says 0 or 1: any threshold between reads it (disagree.opposite's ``least``)."""


def for_quotes(question: str, quotes, documents: dict[str, tuple[str, str]]):
    """``contradiction_for`` with each quote's document title known (``documents``: chunk id -> (document id,
    title)), as disagree.find is given them."""
    titles = {q.text: documents[q.chunk_id][1] for q in quotes if q.chunk_id in documents}
    return contradiction_for(question, titles)
