"""Text utilities for search, quotations and answer checking: words, stop words, stems, sentences, whitespace."""

from __future__ import annotations

import re

WORD = re.compile(r"\w+", re.UNICODE)
"""A word as search and quotation scoring see it (Python's \\w: letters, digits and "_")."""

STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only "
    "or other our ours out over own same she should so some such than that the their theirs them then there "
    "these they this those through to too under until up very was we were what when where which while who whom "
    "why will with would you your yours".split()
)  # fmt: skip

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_ABBREVIATION = re.compile(
    r"(?:\b(?:[A-Z]|ca|c|cf|approx|e\.g|i\.e|etc|vs|viz|al|Mr|Mrs|Ms|Dr|Prof|St|Mt|Jr|Sr|Co|Corp|Inc|Ltd|No|Nos|"
    r"Vol|Fig|Gen|Col|Lt|Capt|Sgt|Rev|Gov|Sen|Rep|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|U\.S|U\.K)\.)$")
"""A period after these ends an abbreviation or an initial, not a sentence ("ca. 2 million", "J. S. Bach")."""
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
"""A blank line: a paragraph ends there, whatever the word before it."""
_SOFT_WRAP_LINE = 40
"""A single line break after a line not ending like a sentence or a code line, before a line that does not
open a list item, heading, table row or quotation, is a hard wrap inside a paragraph (text files are
often wrapped at 70-80 columns): the sentence goes on, if the line is at least this long or the next line
goes on in lower case ("You can / check if an object / is an instance of ..."). A short line before a
capitalised one stands alone (a heading, an address line)."""

_NOT_CONTINUED = re.compile(r"[ \t]*(?:[-*+•|#>]|\d+[.)]\s|$)")
MIN_CHARS = 15
MAX_CHARS = 600
"""``sentences``: spans shorter than MIN_CHARS are dropped (unless they are fields, see MIN_FIELD_CHARS),
longer than MAX_CHARS cut at a word boundary."""
_FIELD = re.compile(r"[^\W\d_][^:|\n]{0,48}:[ \t]+\S|(?:\|[ \t]*)?[^|\n]*\w[ \t]*\|[ \t]*\w")
MIN_FIELD_CHARS = 6
"""A field is a line of a list of facts, as manuals, data sheets and notes are written: ``Label: value``
("Weight: 11 kg", "Warranty: 10 years") or a table row ("SM5000 | 22 A"), of at least two words. It
states something although it does not end like a sentence, and is often shorter than MIN_CHARS: a
field of MIN_FIELD_CHARS or more is kept."""


def is_field(text: str) -> bool:
    """Whether ``text`` reads as a ``Label: value`` line or a table row (see MIN_FIELD_CHARS)."""
    return bool(_FIELD.match(text.strip())) and len(WORD.findall(text)) >= 2


def query_terms(query: str) -> list[str]:
    """Lower-case word tokens without stop words (all words if nothing else is left), in order, once each."""
    words = [w.lower() for w in WORD.findall(query)]
    content = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(content or words))


SUFFIXES = ("ing", "ed", "es", "s", "ly")
"""The endings ``suffix_stem`` strips (the first that fits)."""


def suffix_stem(word: str) -> str:
    """``word`` without the first of SUFFIXES it ends with, when at least four letters are left ("founded" and
    "founding" -> "found"): how the sentence ranking and the gate match inflected forms."""
    for suffix in SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def word_stem(word: str) -> str:
    """A stem that inflected forms share ("lasts"/"lasted", "warranty"/"warranties", "purchase"/"purchased")."""
    stem = suffix_stem(word)
    if stem.endswith("i"):
        stem = stem[:-1] + "y"
    return stem[:-1] if stem.endswith("e") and len(stem) > 3 else stem


def collapse(text: str) -> str:
    """Whitespace runs to one space, trimmed: the form quotations are compared in."""
    return " ".join(text.split())


def prose_line(line: str) -> bool:
    """A sentence of running text (it opens with a capital, has more than three words and ends as a sentence
    does, or announces what follows), not a command or a line of configuration."""
    return line[:1].isupper() and len(line.split()) > 3 and line.endswith((".", "!", "?", ":"))


_ANNOUNCES = re.compile(r"(?:\bthe following(?:\s+[\w-]+){0,2}|\bas follows|\b(?:shown|listed|given|run|used) below)"
                        r"\s*\.$", re.I)  # fmt: skip


def announces(line: str) -> bool:
    """Whether a sentence announces what follows it: it ends with a colon ("Run the following:"), or says so in words
    at its end ("You can change it by the following.", "... with the following command.", "... as shown below.");
    not "at 30 degrees or below.", nor "Each option is described below." (what follows is prose, not a command)."""
    line = line.rstrip()
    return line.endswith(":") or bool(_ANNOUNCES.search(line))


def says_it_in_words(line: str) -> bool:
    """An announcing sentence that ends with a period, not a colon: what it announces is taken only while it looks
    like a command (``command_like``), so that it cannot swallow an entry's name or a heading."""
    line = line.rstrip()
    return announces(line) and not line.endswith(":")


_CODE_SIGNS = re.compile(r"[/;={}$@<>|]|(?:^|[\s[|])--?\w")
_PROMPT = re.compile(r"^[$#%]\s+\S")


def command_like(line: str) -> bool:
    """A line with a sign of code in it: a shell prompt, a path, an option, "=" or another sign code uses, or a manual
    section ("tune2fs(1) with ..."), stop words or not ("MSS = MTU - 40 for IPv4"); not a bare name ("cache_size")."""
    line = line.strip()
    return bool(_PROMPT.match(line) or _CODE_SIGNS.search(line) or _SECTION.search(line))


_SECTION = re.compile(r"\w\(\d\w*\)")


def code_line(line: str) -> bool:
    """A command or a line of configuration, not prose: a shell prompt before it ("$ mc", "# chvt 3"), or no stopword
    and a path, an option, a sign code uses."""
    line = line.strip()
    return bool(_PROMPT.match(line)) or (not prose_line(line) and not STOPWORDS & set(line.lower().split())
                                         and bool(_CODE_SIGNS.search(line)))  # fmt: skip


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans of the sentences of ``text``; long ones cut at a word boundary."""
    spans = []
    pos = 0
    for m in list(_SENTENCE_END.finditer(text)) + [None]:
        if (m is not None and m.group(0).strip() == "" and not _BLANK_LINE.search(m.group(0))
                and _ABBREVIATION.search(text, max(0, m.start() - 8), m.start())):
            continue  # "J. S. Bach"; but a blank line ends a paragraph ("... K, M or G.\n\nDefault: 2G")
        if m is not None and m.group(0) == "\n" and _soft_wrap(text, m.start()):
            continue
        end = m.start() if m else len(text)
        if m is not None:  # a closing quote or bracket after the full stop is the sentence's: '... procedure.)'
            end += len(m.group(0)) - len(m.group(0).lstrip("\"')]"))
        seg = text[pos:end]
        lead = len(seg) - len(seg.lstrip())
        s, e = pos + lead, pos + len(seg.rstrip())
        if e - s > MAX_CHARS:
            cut = text.rfind(" ", s, s + MAX_CHARS)
            e = cut if cut > s + MIN_CHARS else s + MAX_CHARS
        if e - s >= MIN_CHARS or (e - s >= MIN_FIELD_CHARS and is_field(text[s:e])):
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


def _soft_wrap(text: str, at: int) -> bool:
    """Whether the single line break at ``at`` wraps a sentence rather than ending a line of its own."""
    line = text[text.rfind("\n", 0, at) + 1:at].rstrip()
    if not line.strip() or line.endswith((".", "!", "?", ":", ";", "{", "}")):
        return False
    if len(line.strip()) < _SOFT_WRAP_LINE and not text[at + 1:at + 40].lstrip(" \t(\"'[")[:1].islower():
        return False
    if _NOT_CONTINUED.match(text, at + 1):
        return False
    end = text.find("\n", at + 1)
    return not (is_field(line) and is_field(text[at + 1:end if end >= 0 else len(text)]))  # a list of fields


def counted(n: int, noun: str) -> str:
    """``1 page`` / ``3 pages``: a count and its noun, plural when it is not one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def pages_named(numbers, most: int = 20) -> str:
    """``page 3`` / ``pages 1-4, 7``: page numbers as a reader says them (runs of consecutive pages joined), the
    first ``most`` runs, then how many pages more."""
    nums = sorted(set(numbers))
    runs: list[list[int]] = []
    for n in nums:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    shown = ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs[:most])
    rest = sum(len(r) for r in runs[most:])
    return f"page{'s' * (len(nums) != 1)} {shown}" + (f" and {rest} more" if rest else "")
