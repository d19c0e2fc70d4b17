"""Copies of a passage: the same words in another file, so that the evidence is not spent on them twice.

A folder of documentation often holds a page twice: its source and its rendering (a reST or AsciiDoc file beside
the HTML made from it), or a copy. Their passages say the same thing word for word but for what one rendering
adds or drops: a role or macro name (``:meth:``, ``linkgit:``), an anchor, a footnote mark. Such a passage is
folded into the first one found (``SearchHit.also_in``), as an identical one always was.

Two passages that differ where one says one thing and the other another (a value changed, a name swapped: the
near-twins reason/disagree.py hears as sources that disagree), or where one has a word that changes what it says
(``not``, ``never``, a number), are never copies.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from ..text import WORD

MIN_WORDS = 8
"""Passages shorter than this are copies only when identical (whitespace aside): a short line has too few words
to tell markup from meaning."""
EXTRA_SHARE = 0.1
"""At most this share of the shorter passage's words (and at least MIN_EXTRA) may be words only one of the two
has: what a rendering adds or drops, not a different passage."""
MIN_EXTRA = 3
OVERLAP = 0.8
"""A quick first test: the two passages' sets of words must overlap this much (Jaccard) to be compared at all."""
MEANING_WORDS = frozenset("not no never nor none neither cannot without except unless t".split())
"""Words whose presence in one passage only changes what it says ("t" is what remains of "don't")."""


def words(text: str) -> list[str]:
    """A passage's words, lower-cased: what two renderings of it share."""
    return WORD.findall(text.lower())


def same_words(a: list[str], b: list[str]) -> bool:
    """Whether passages of words ``a`` and ``b`` are copies: the same words in the same order, but for at most
    EXTRA_SHARE of them that only one of the two has, none of them a word of MEANING_WORDS or a number of two
    digits or more, and no word of one standing where the other has another."""
    if a == b:
        return True
    shorter = min(len(a), len(b))
    if shorter < MIN_WORDS:
        return False
    sa, sb = set(a), set(b)
    if len(sa & sb) < OVERLAP * len(sa | sb):
        return False
    extra: list[str] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "replace":
            return False
        if op != "equal":
            extra += a[i1:i2] + b[j1:j2]
    if len(extra) > max(MIN_EXTRA, EXTRA_SHARE * shorter):
        return False
    return not any(w in MEANING_WORDS or (w.isdigit() and len(w) >= 2) for w in extra)
