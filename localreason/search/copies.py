"""Copies of a passage: the same words in another file, so that the evidence is not spent on them twice.

A folder of documentation often holds a page twice: its source and its rendering (an AsciiDoc or reST file beside
the HTML made from it), or a copy. Their passages say the same thing word for word but for the markup the source
spells out and the rendering drops: a macro or role name (``linkgit:``, ``:meth:``, ``xref:``). Such a passage is
folded into the first one found (``SearchHit.also_in``), as an identical one always was.

Only those words may differ (MARKUP_WORDS), and only by being there or not: any other word that one passage has
and the other does not ("large files", "--prune", "1 or 2"), and any word of one standing where the other has
another (a changed value: the near-twins reason/disagree.py hears as sources that disagree), make two passages two
passages. So two passages are copies when their words, markup words left out, are the same (``key``: one dictionary lookup),
or when one is the other with up to EDGE_WORDS words more at its start or end (``edge_copy``): the two renderings
were cut into passages at slightly different places, a title or a heading falling on one side of a cut in one and
on the other side in the other.
"""

from __future__ import annotations

import re

from ..text import WORD

MIN_WORDS = 8
"""Passages shorter than this are copies only when identical (whitespace aside): a short line has too few words
to tell a rendering from another passage."""
MARKUP_WORDS = frozenset(
    "linkgit xref footnoteref ifdef ifndef endif "  # AsciiDoc macros and conditionals
    "meth func attr mod exc obj envvar samp menuselection guilabel manpage seealso versionadded versionchanged "
    "dfn kbd".split()  # reST and Sphinx roles and directives that are not also everyday words
)
"""Words a source spells out and its rendering never shows: the names of markup, not what the page says. Markup
named by an everyday word (``:class:``, ``:file:``, ``link:``, ``.. note::``) is not here: leaving "file" or "note"
out of a comparison would make "the default file is" and "the default option is" one passage."""


_SIGNS = re.compile(r"(?<![<>=!])(?:[<>]=?|!=|==)(?=\s*\d)|(?<![\w-])-(?=\d)|(?<=\d)[.,](?=\d)")
"""What a number's meaning hangs on beside its digits: a comparison before it (">= 3.8", "< 3.8"), its minus sign
("-5"), its decimal or thousands mark ("1,000", "1.000"). Kept in the key, so that passages that differ only there
are two passages (they were copies, and the one asked about was folded away). Markup never writes these."""


def words(text: str) -> list[str]:
    """A passage's words, lower-cased, with the signs a number's meaning hangs on (``_SIGNS``) in their places."""
    low = text.lower()
    marks = list(_SIGNS.finditer(low))
    if not marks:
        return WORD.findall(low)
    found = sorted([(m.start(), m.group()) for m in WORD.finditer(low)] + [(m.start(), m.group()) for m in marks])
    return [w for _, w in found]


def key(text: str) -> tuple[str, ...] | None:
    """What two copies of a passage share: its words without MARKUP_WORDS, or None for a passage too short to
    compare that way (fewer than MIN_WORDS such words: only an identical passage is its copy)."""
    kept = tuple(w for w in words(text) if w not in MARKUP_WORDS)
    return kept if len(kept) >= MIN_WORDS else None


EDGE_WORDS = 4
"""The most words (markup left out) one copy may have beyond the other, at its start or end: a heading or a title
line that a cut left on one side (``git-log(1)`` / ``OPTIONS``)."""
EDGE_MEANING = frozenset("not no never nor none neither cannot without except unless deprecated obsolete removed "
                         "warning caution danger important experimental unsafe only if until before after but however "
                         "excluding provided within outside least most maximum minimum limited".split())  # fmt: skip
"""Words that change what a passage says even at its edge ("Not recommended.", "Deprecated since 3.4:",
"Warning: fire risk.", "... are refunded only to EU customers."): they keep two passages apart. A heading that holds
one ("Before you begin") keeps two renderings apart too: the evidence spent twice, never a condition lost."""


def edge_copy(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether the shorter of two keys is the longer one less at most EDGE_WORDS words at its start and end, none
    of them a word of EDGE_MEANING."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    extra = len(long_) - len(short)
    if not 0 < extra <= EDGE_WORDS:
        return False
    for lead in range(extra + 1):
        if long_[lead:lead + len(short)] == short:
            edges = long_[:lead] + long_[lead + len(short):]
            return not EDGE_MEANING & set(edges)
    return False


def same_words(a: str, b: str) -> bool:
    """Whether passages ``a`` and ``b`` are copies (``key``, ``edge_copy``)."""
    ka, kb = key(a), key(b)
    return ka is not None and kb is not None and (ka == kb or edge_copy(ka, kb))
