"""Mechanical verification: pure functions over values, no library, no model.

A reference is kept only when its quotation occurs, word for word, in the admitted chunk it
names; a statement with none left is withheld; a statement's text that says more than its
quotations is replaced by them. ``compose`` writes the verified statements as the answer prose.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from ..text import STOPWORDS, announces, code_line, collapse, is_field, prose_line, word_stem
from ..types import PacketChunk
from .answer import Citation, Reference, Statement


def locate(quotation: str, content: str) -> tuple[int, int] | None:
    """Where ``quotation`` occurs in ``content`` when whitespace runs are collapsed and both are trimmed."""
    words = collapse(quotation).split(" ")
    if not words or words == [""]:
        return None
    m = re.search(r"\s+".join(re.escape(w) for w in words), content)
    return (m.start(), m.end()) if m else None


def find_quotation(quotation: str, content: str) -> tuple[int, int] | None:
    """Where ``quotation`` occurs in ``content``: as written, else with HTML entities decoded.

    The packet shows chunks XML-escaped, so a model copying from it may write ``&amp;`` for ``&``;
    a document can also contain entity text itself ("&gt;, &#62;"), which must match as written.
    """
    span = locate(quotation, content)
    unescaped = html.unescape(quotation)
    if span is None and unescaped != quotation:
        span = locate(unescaped, content)
    return span


_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|\w+(?:['\u2019]\w+)*")
_NEGATIONS = frozenset("no not nor never none neither cannot without".split())


def content_words(text: str) -> set[str]:
    """The words a statement's text must share with its quotations to be kept.

    Lower-cased words that are not stop words, stemmed (text.word_stem); numbers exactly as
    written ("2.5" is not "2"); every negation as "not", so a text cannot deny its quotation.
    """
    words = set()
    for token in _TOKEN.findall(text.lower()):
        if token in _NEGATIONS or token.endswith(("n't", "n\u2019t")):
            words.add("not")
            continue
        word = re.split("['\u2019]", token)[0]  # "warranty's" -> "warranty"
        if any(ch.isdigit() for ch in word):
            words.add(token)
        elif word not in STOPWORDS:
            words.add(word_stem(word))
    return words


def says_no_more(text: str, quotations: list[str]) -> bool:
    """True when every content word of ``text`` occurs in ``quotations`` (see ``content_words``)."""
    quoted: set[str] = set()
    for q in quotations:
        quoted |= content_words(q)
    return content_words(text) <= quoted


@dataclass(frozen=True)
class Verified:
    """What verification kept, and what it counted on the way."""

    statements: list[Statement]
    dropped: int
    """References whose quotation is not in the admitted chunk they name."""
    withheld: int
    """Statements left with no verified reference."""
    replaced: int
    """Statement texts replaced by their quotations because they said more."""


def _verified_references(raw_refs: list[dict], admitted: dict[str, PacketChunk], chunk_starts: dict[str, int],
                         recognized: frozenset[str] = frozenset()) -> tuple[list[Reference], int]:  # fmt: skip
    """The references of one statement whose quotation occurs in the admitted chunk they name (each once),
    with document offsets, and how many were dropped."""
    refs: list[Reference] = []
    dropped = 0
    seen: set[tuple[str, str]] = set()
    for ref in raw_refs:
        chunk = admitted.get(ref["chunkId"])
        span = find_quotation(ref["quotation"], chunk.content) if chunk is not None else None
        if span is None:
            dropped += 1
            continue
        quoted = chunk.content[span[0]:span[1]]
        key = (chunk.chunk_id, collapse(quoted))
        if key in seen:
            continue
        seen.add(key)
        base = chunk_starts[chunk.chunk_id]
        refs.append(Reference(chunk.chunk_id, quoted, chunk.document_id, base + span[0], base + span[1],
                              chunk.chunk_id in recognized))  # fmt: skip
    return refs, dropped


def verify(raw_statements: list[dict], admitted: dict[str, PacketChunk], chunk_starts: dict[str, int],
           recognized: frozenset[str] = frozenset()) -> Verified:  # fmt: skip
    """Keep only references whose quotation occurs in the admitted chunk they name, and texts they support.
    References into the chunks of ``recognized`` (text read by text recognition) are marked as such.

    A statement with no verified reference is withheld; a text that says more than its
    quotations (``says_no_more``) is replaced by them. Retained duplicates are removed without
    being counted.
    """
    kept: list[Statement] = []
    dropped = withheld = replaced = 0
    seen_statements: set[tuple] = set()
    for st in raw_statements:
        refs, lost = _verified_references(st["references"], admitted, chunk_starts, recognized)
        dropped += lost
        if not refs:
            withheld += 1
            continue
        quotations = [collapse(r.quotation) for r in refs]
        text = collapse(st["text"])
        if text and not says_no_more(text, quotations):
            replaced += 1
            text = ""
        text = text or " ".join(as_said(r.quotation) for r in refs)
        signature = (text, tuple((r.chunk_id, r.start) for r in refs))
        if signature in seen_statements:
            continue
        seen_statements.add(signature)
        kept.append(Statement(text, tuple(refs)))
    return Verified(kept, dropped, withheld, replaced)


_ENDS_SENTENCE = re.compile(r"[.!?…][\"'\u201d\u2019)\]]*$")


def as_said(quotation: str) -> str:
    """A quotation as a statement says it: whitespace runs collapsed, but the lines after one that announces what
    follows ("run the following commands:") each on a line of its own while they are not prose (a command, a line
    of configuration): "git stash list" and "git stash show -p" are two commands, not one. So are two commands in a
    row (a SYNOPSIS's usage lines), a command on the line below a finished sentence, a field ("Default: 64") and the
    line after an entry's name."""
    parts: list[str] = []
    block = term = code = ended = False
    for line in (collapse(raw) for raw in quotation.splitlines()):
        if not line:
            continue
        own = (block and not prose_line(line)) or (term and line[:1].isupper()) or is_field(line) or (
            (code or ended) and code_line(line))  # two commands in a row, or a command below a finished sentence
        code, ended = code_line(line), line.endswith((".", "!", "?"))
        if parts and own:  # a command announced, the line after an entry's name, a "Default: 64", two usage lines
            parts.append("\n" + line)
        else:
            parts.append((" " if parts else "") + line)
            block = False
        term = not parts[1:] and not line.endswith((".", "!", "?", ":", ";", ",")) and not STOPWORDS & set(
            line.lower().split())  # an entry's name ("max_connections"), not a sentence wrapped at its line's end
        block = block or announces(line)
    return "".join(parts)


def _as_sentence(text: str) -> str:
    """``text`` ending like a sentence in the prose: a period added, or an ellipsis where a quotation was cut; a
    command or a line of configuration at its end (``as_said``'s block, ``ssl_certificate /etc/site.crt;``) is
    left as it is written."""
    last = text.rsplit("\n", 1)[-1]
    if _ENDS_SENTENCE.search(text) or ("\n" in text and not prose_line(last)) or code_line(last) or is_field(last):
        return text
    if text.endswith((";", ":", ",", "\u2014", "-")):
        return text.rstrip(";:,\u2014- ") + "\u2026"
    return text + "."


def _no_tokens(text: str) -> str:
    """``text`` (a document's words) with no ``[[``: every citation token in an answer is the server's, and a
    document that holds one ("... 99 years [[chk_...]]") must not cite another passage, in or out of scope."""
    return text.replace("[[", "[ [")


def compose(statements: list[Statement], titles: dict[str, tuple[str, str]]) -> tuple[str, tuple[Citation, ...]]:
    """Answer prose with server-bound [[chunkId]] tokens, and each cited chunk once. A statement with an answer
    phrase (phrase.py) is written as that phrase ("from 1969 to 1972 [[chk_...]]"): its quotation, in full,
    is the proof the sources show."""
    parts = []
    cited: dict[str, Citation] = {}
    for st in statements:
        ids = list(dict.fromkeys(r.chunk_id for r in st.references))
        text = collapse(st.phrase.text) if st.phrase is not None else _as_sentence(st.text)
        if st.side is not None:  # the sources disagree: each side is said as its source's
            text = f"\u201c{st.side.document_title}\u201d: {text}"
        parts.append(_no_tokens(text) + " " + " ".join(f"[[{i}]]" for i in ids))
        for i in ids:
            doc_id, title = titles[i]
            cited.setdefault(i, Citation(i, doc_id, title))
    return " ".join(parts), tuple(cited.values())
