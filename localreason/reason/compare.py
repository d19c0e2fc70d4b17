"""Comparison questions: "Compare X and Y", "What do A and B say about ...", "Which is required, REST or
GraphQL?". The answer hears each document that speaks to it, each cited, rather than the one best sentence.

``compared_terms`` reads the question's form (FORMS, one table): the things it compares, when it names them
("REST", "GraphQL"), or an empty list when it asks to compare without naming them ("How do the two policies
differ?"); None when it is not a comparison. ``compared`` then picks, from the best-ranked sentences, for each
named thing the best sentence that mentions it, and fills up with the best sentence of each other document,
up to ``most``: sentences of at least two documents, or none.
"""

from __future__ import annotations

import re

from ..text import STOPWORDS, WORD
from .candidates import Quote

_THING = r"[\w][\w .+#/-]{0,40}?"
FORMS: tuple[re.Pattern, ...] = tuple(re.compile(p, re.I) for p in (
    rf"\bcompare\s+(?:the\s+)?(?P<a>{_THING})\s+(?:and|with|to|against)\s+(?:the\s+)?(?P<b>{_THING})\s*(?:[?.,;:]|$|\bin\b|\bon\b|\bfor\b)",
    rf"\bdifferences?\s+between\s+(?:the\s+)?(?P<a>{_THING})\s+and\s+(?:the\s+)?(?P<b>{_THING})\s*(?:[?.,;:]|$|\bin\b)",
    rf"\bhow\s+(?:does|do|did)\s+(?:the\s+)?(?P<a>{_THING})\s+differ\s+from\s+(?:the\s+)?(?P<b>{_THING})\s*(?:[?.,;:]|$)",
    rf"\bwhat\s+do(?:es)?\s+(?:the\s+)?(?P<a>{_THING})\s+and\s+(?:the\s+)?(?P<b>{_THING})\s+(?:say|state|require|recommend)",
    rf"\bwhich\b[^?]*?,\s*(?:the\s+)?(?P<a>{_THING})\s+or\s+(?:the\s+)?(?P<b>{_THING})\s*\??\s*$",
    rf"(?P<a>\b{_THING})\s+(?:vs\.?|versus)\s+(?P<b>{_THING})\s*(?:[?.,;:]|$)",
    r"^\W*compare\b|\bcomparison\s+of\b|\bhow\s+do\s+(?:the\s+)?(?:two|both|these|those)\b[^?]*\bdiffer\b|"
    r"\bwhat\s+do\s+(?:the\s+)?(?:two|both|these|those|all)\b[^?]*\bsay\b",
))  # fmt: skip
"""Question forms that ask for a comparison, first match wins; groups ``a`` and ``b`` name what is compared (the
last form names nothing)."""


def compared_terms(question: str) -> list[str] | None:
    """What ``question`` compares (``FORMS``): the named things, [] when it names none, None when it is not a
    comparison."""
    q = " ".join(question.split())
    for form in FORMS:
        m = form.search(q)
        if m is None:
            continue
        names = m.groupdict()
        return [t for t in (_trimmed(names.get("a")), _trimmed(names.get("b"))) if t]
    return None


def _trimmed(thing: str | None) -> str:
    """A compared thing without leading articles and stop words at its ends ("the REST API" -> "REST API")."""
    words = WORD.findall(thing or "")
    while words and words[0].lower() in STOPWORDS:
        words.pop(0)
    while words and words[-1].lower() in STOPWORDS:
        words.pop()
    return " ".join(words)


def own_words(terms: list[str]) -> list[set[str]]:
    """Each compared thing's words that the others lack ("2023" of "2023 manual" against "2025 manual")."""
    sets = [{w.lower() for w in WORD.findall(t)} - STOPWORDS for t in terms]
    return [own - set().union(*(o for j, o in enumerate(sets) if j != i)) for i, own in enumerate(sets)]


def compared(question: str, quotes: list[Quote], documents: dict[str, tuple[str, str]], most: int = 3) -> list[Quote]:
    """The sentences a comparison question is answered with (module doc), in the order of the things it names
    and then of the ranking; [] when it is not a comparison or fewer than two documents speak to it.
    ``documents``: chunk id -> (document id, title); ``quotes``: the ranked sentences, best first. A sentence
    speaks of a named thing when it or its document's title has one of the words that set the thing apart."""
    terms = compared_terms(question)
    if terms is None:
        return []
    pool = [q for q in quotes if q.chunk_id in documents]
    doc = {q.chunk_id: documents[q.chunk_id][0] for q in pool}
    picks: list[Quote] = []
    for own in own_words(terms):
        used = {doc[p.chunk_id] for p in picks}
        pick = next((q for q in pool if doc[q.chunk_id] not in used and own & _words(q, documents)), None)
        if pick is not None:
            picks.append(pick)
    for q in pool[:max(most * 2, 6)]:
        if len(picks) >= most or (terms and len(picks) >= len(terms)):
            break
        if doc[q.chunk_id] not in {doc[p.chunk_id] for p in picks}:
            picks.append(q)
    return picks if len({doc[p.chunk_id] for p in picks}) >= 2 else []


def speaks_of(text: str, own: set[str]) -> bool:
    """Whether ``text`` (a passage with its title) has one of a compared thing's own words (``own_words``)."""
    return bool(own & {w.lower() for w in WORD.findall(text)})


def term_query(question: str, terms: list[str], i: int) -> str:
    """``question`` without the words that set the other compared things apart: a search for the ``i``-th one
    ("Which interface is required, REST or" for REST against GraphQL)."""
    others = set().union(*(o for j, o in enumerate(own_words(terms)) if j != i))
    return " ".join(w for w in WORD.findall(question) if w.lower() not in others)


def _words(q: Quote, documents: dict[str, tuple[str, str]]) -> set[str]:
    return {w.lower() for w in WORD.findall(q.text + " " + documents[q.chunk_id][1])}
