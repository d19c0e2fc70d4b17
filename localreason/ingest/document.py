"""What every reader produces: normalised text with its block structure.

Every reader returns a :class:`ParsedDocument`: the document's text, normalised
once (and stored as is), and a list of :class:`Block` spans into that text,
each a heading (with its depth) or a run of body text (with its page, for PDF).
The chunker only ever sees this shape, so every format gets the same hierarchy.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import IngestFileError

# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Block:
    kind: str
    """``heading`` or ``text``."""
    start: int
    end: int
    depth: int = 0
    """Heading depth, 1 for the outermost."""
    page: int | None = None
    """1-based page number (PDF and images)."""
    recognized: bool = False
    """Read by text recognition from a page image (ocr.py), not from a text layer: a letter may be misread."""


@dataclass
class ParsedDocument:
    title: str
    text: str
    blocks: list[Block]
    format: str
    notes: list[str] = field(default_factory=list)
    """Things worth telling the user (e.g. the encoding that was guessed)."""
    outline: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """For PDF: the outline (bookmark) path in force at the start of each page."""
    recognized: list = field(default_factory=list)
    """The pages read by text recognition (recognised.PageReading, without their paragraphs), in page order;
    failed ones too (their ``failed`` says why)."""
    index_terms: list[tuple[int, int, str]] = field(default_factory=list)
    """(start, end, full name) in ``text``: reST roles that show less than the name they link to (``aclose()`` for
    ``agen.aclose``). The text keeps what the page shows; search finds the passage that holds the span by the full
    name too (chunk.chunk_terms, the chunks' ``terms``)."""


# ---------------------------------------------------------------- normalisation

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u00ad\u200b-\u200d\u2060\ufeff]")  # (\u00ad: a soft hyphen)
_ODD_SPACES = re.compile(r"[\u00a0\u2000-\u200a\u202f\u205f\u3000]")
_MANY_NEWLINES = re.compile(r"\n{3,}")
BLANK_SPLIT = re.compile(r"\n[ \t]*\n")


def normalize(text: str, *, keep_lines: bool = True) -> str:
    """NFC, one kind of newline, no control or zero-width characters, no trailing spaces.

    With ``keep_lines=False`` every whitespace run (newlines included) becomes one
    space: right for HTML, DOCX and PDF prose, where line breaks carry no meaning.
    """
    if keep_lines and text.isascii() and text.isprintable():
        return text  # already normal: the common case of a short line, made cheap
    text = _nfc(text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    if not keep_lines:
        return " ".join(text.split())
    text = _ODD_SPACES.sub(" ", text)  # indentation is kept: it carries meaning in code
    text = _strip_line_ends(text)
    return _MANY_NEWLINES.sub("\n\n", text).strip("\n")


def _strip_line_ends(text: str) -> str:
    """Spaces and tabs before each newline removed (line by line: a regex is quadratic on long space runs)."""
    lines = text.split("\n")
    return "\n".join([line.rstrip(" \t") for line in lines[:-1]] + lines[-1:])


_MAX_MARKS = 30
"""Combining marks kept in a row: no script needs more, and NFC sorts a run in quadratic time."""


def _nfc(text: str) -> str:
    """``text`` in NFC, after cutting any run of combining marks to 30 (a "Zalgo" run would take hours)."""
    if unicodedata.is_normalized("NFC", text):
        return text
    return unicodedata.normalize("NFC", _mark_runs().sub(_cut_marks, text))


@lru_cache(maxsize=1)
def _mark_runs() -> re.Pattern:
    """Matches more than 30 characters in a row that may be combining marks (any astral one may be)."""
    ranges: list[list[int]] = []
    for code in range(0x10000):
        if unicodedata.combining(chr(code)):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    members = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return re.compile(f"[{members}\U00010000-\U0010ffff]{{{_MAX_MARKS + 1},}}")


def _cut_marks(match: re.Match) -> str:
    """The run with no more than 30 combining marks in a row."""
    run = match.group()
    if max(run) < "\U00010000":  # only marks: the pattern admits no other BMP character
        return run[:_MAX_MARKS]
    kept, streak = [], 0
    for ch in run:
        streak = streak + 1 if unicodedata.combining(ch) else 0
        if streak <= _MAX_MARKS:
            kept.append(ch)
    return "".join(kept)


class TextBuilder:
    """Appends blocks to one text, separated by blank lines, recording their spans."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._len = 0
        self.blocks: list[Block] = []

    def add(self, text: str, kind: str = "text", *, depth: int = 0, page: int | None = None,
            keep_lines: bool = True, recognized: bool = False) -> None:  # fmt: skip
        text = normalize(text, keep_lines=keep_lines)
        if not text.strip():
            return
        if self._parts:
            self._parts.append("\n\n")
            self._len += 2
        self.blocks.append(Block(kind, self._len, self._len + len(text), depth, page, recognized))
        self._parts.append(text)
        self._len += len(text)

    @property
    def text(self) -> str:
        return "".join(self._parts)


    def add_reading(self, reading) -> None:
        """The paragraphs text recognition read on one page (a recognised.PageReading), as recognised blocks."""
        for para in reading.paragraphs:
            kind = "heading" if para.heading else "text"
            self.add(para.text, kind, depth=para.heading, page=reading.page, recognized=True)


# ---------------------------------------------------------------- decoding


def decode_text(data: bytes, notes: list[str]) -> str:
    """Bytes of a text file -> str: UTF-8 (with or without BOM), UTF-16 by BOM, else a detected encoding."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            notes.append("damaged UTF-16: characters that could not be read were replaced by \ufffd")
            return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        raise IngestFileError("binary file (it contains NUL bytes), not text", status="skipped")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data[:1_000_000]))
    best = matches[0] if matches else None
    if best is not None:
        # Ties are common between Western code pages; the most widespread one wins them.
        tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
        best = next((m for m in tied if m.encoding in ("cp1252", "latin_1")), best)
    if best is None:
        raise IngestFileError("not UTF-8, and no other text encoding fits its bytes")
    try:
        text = data.decode(best.encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise IngestFileError(f"not UTF-8, and decoding it as {best.encoding} failed") from exc
    notes.append(f"not UTF-8: decoded as {best.encoding}")
    return text


# ---------------------------------------------------------------- the result


def finish(builder: TextBuilder, path: Path, fmt: str, notes: list[str]) -> ParsedDocument:
    text = builder.text
    first_heading = next((b for b in builder.blocks if b.kind == "heading"), None)
    if fmt in ("markdown", "rst", "docx") and first_heading is not None:
        title = text[first_heading.start:first_heading.end]
    else:
        title = path.name
    return ParsedDocument(title=title[:300], text=text, blocks=builder.blocks, format=fmt, notes=notes)


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"), (10, "x"),
          (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))  # fmt: skip


def list_number(n: int, style: str) -> str:
    """The ``n``-th (1-based) number of a list, as a reader sees it: ``style`` is "arabic", "alpha" (a, b, ...,
    z, aa) or "roman" (i, ii, ...); the caller upper-cases it for the upper-case styles."""
    if style == "alpha":
        return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)
    if style == "roman":
        out = ""
        for value, numeral in _ROMAN:
            count, n = divmod(n, value)
            out += numeral * count
        return out
    return str(n)
