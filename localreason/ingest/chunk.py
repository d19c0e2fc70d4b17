"""Hierarchical chunking: a parsed document -> section chunks -> paragraph-level chunks.

Sections are heading-delimited regions (for PDF: pages, named by the outline).
A section longer than ``section_max_tokens`` is cut into parts at block
boundaries, so reading "up" from a passage never returns a whole book.

Paragraph-level chunks are runs of whole blocks packed up to ``chunk_tokens``
cl100k_base tokens. A block longer than that is cut into windows of
``chunk_tokens`` tokens that end at whitespace and overlap by ``overlap`` tokens,
so a sentence cut at one window's end is whole at the next one's start. Blocks
are not overlapped with each other: a paragraph break is already a clean cut.
The only mid-word cut is inside a single "word" longer than a whole chunk (a
base64 blob, a minified line), which no boundary can be found in.

Worked numbers for the defaults (200 tokens, 30 overlap): a 1,000-token
paragraph becomes 6 windows (each ~200 tokens, starting ~170 after the last).

Block sizes and window offsets come from encoding the text in pieces, cut wherever
2,000 characters in a row hold no word start, so one enormous "word" costs linear
time and memory. A paragraph chunk's own ``token_count`` is its text encoded
whole, except for a window inside one giant word, which is counted from the
pieces (it may differ by a token).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..config import Settings
from ..ids import derived_id
from ..tokens import encoding
from ..types import LEVEL_PARAGRAPH, LEVEL_SECTION, Chunk
from .parse import Block, ParsedDocument


@dataclass(frozen=True)
class ChunkParams:
    """How documents are cut; the values (and their defaults) come from the settings."""

    chunk_tokens: int
    overlap: int
    section_max_tokens: int
    ocr: str = "auto"
    """The ``ocr`` setting the documents are read under: part of how a PDF was read (pipeline.chunking_key)."""

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> "ChunkParams":
        s = settings or Settings(home=Path())
        return cls(s.chunk_tokens, s.chunk_overlap, s.section_max_tokens, s.ocr)


def chunk_document(parsed: ParsedDocument, doc_id: str, params: ChunkParams) -> list[Chunk]:
    """All section and paragraph chunks of one document, sections first within their order."""
    enc = encoding()
    text = parsed.text
    tokens, offsets = _block_tokens(text, parsed.blocks)
    out: list[Chunk] = []
    section_index = 0
    for path, blocks in _sections(parsed):
        for part in _split_long(blocks, tokens, params.section_max_tokens):
            start, end = part[0].start, part[-1].end
            sec_text = text[start:end]
            sec_id = derived_id("chk", doc_id, "section", str(section_index), _digest(sec_text))
            pieces = list(_paragraph_spans(text, part, tokens, offsets, params))
            pages = [b.page for b in part if b.page is not None]
            read = [b for b in part if b.recognized]
            out.append(Chunk(
                id=sec_id, document_id=doc_id, level=LEVEL_SECTION, parent_id=doc_id,
                index=section_index, section_path=path,
                token_count=sum(tokens[(b.start, b.end)] for b in part) + len(part) - 1,
                text=sec_text, start=start, end=end,
                page_start=min(pages) if pages else None, page_end=max(pages) if pages else None,
                recognized=bool(read),
            ))  # fmt: skip
            for i, (s, e, pg, count) in enumerate(pieces):
                chunk_text = text[s:e]
                if count is None:
                    count = len(enc.encode_ordinary(chunk_text))
                out.append(Chunk(
                    id=derived_id("chk", doc_id, "para", str(section_index), str(i), _digest(chunk_text)),
                    document_id=doc_id, level=LEVEL_PARAGRAPH, parent_id=sec_id, index=i,
                    section_path=path, token_count=count, text=chunk_text, start=s, end=e,
                    page_start=pg[0] if pg else None, page_end=pg[1] if pg else None,
                    recognized=any(b.start < e and s < b.end for b in read),
                ))  # fmt: skip
            section_index += 1
    return out


def chunk_terms(chunks: list[Chunk], spans: list[tuple[int, int, str]]) -> dict[str, str]:
    """chunk id -> the full names a paragraph chunk is also found by (``ParsedDocument.index_terms``: the names of
    the spans it holds), space-separated; chunks with none are left out."""
    if not spans:
        return {}
    out = {}
    for c in chunks:
        if c.level == LEVEL_PARAGRAPH:
            found = sorted({full for s, e, full in spans if c.start <= s and e <= c.end})
            if found:
                out[c.id] = " ".join(found)
    return out


_OFFSETS_FROM = 20_000
"""Blocks at least this long keep their token offsets from counting for splitting (one encoding, not two)."""


def _block_tokens(text: str, blocks: list[Block]) -> tuple[dict, dict]:
    """Token count of every block, and token offsets of the long ones, both keyed by (start, end)."""
    tokens: dict[tuple[int, int], int] = {}
    offsets: dict[tuple[int, int], np.ndarray] = {}
    for b in blocks:
        key = (b.start, b.end)
        if b.end - b.start >= _OFFSETS_FROM:
            offsets[key] = token_starts(text[b.start:b.end])
            tokens[key] = len(offsets[key])
        else:
            tokens[key] = count_tokens_cut(text[b.start:b.end])
    return tokens, offsets


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _sections(parsed: ParsedDocument) -> list[tuple[tuple[str, ...], list[Block]]]:
    """Group blocks into (section path, blocks); headings with no text of their own join the next section."""
    text = parsed.text
    by_page = parsed.format in ("pdf", "image")
    sections: list[tuple[tuple[str, ...], list[Block]]] = []
    stack: list[tuple[int, str]] = []
    current: list[Block] = []

    def path_for(blocks: list[Block]) -> tuple[str, ...]:
        if by_page:
            page = blocks[0].page or 1
            return parsed.outline.get(page, ()) + (f"Page {page}",)
        return tuple(title for _, title in stack)

    def close() -> None:
        if any(b.kind == "text" for b in current):
            sections.append((path_for(current), list(current)))
            current.clear()

    for block in parsed.blocks:
        if block.kind == "heading":
            close()
            while stack and stack[-1][0] >= block.depth:
                stack.pop()
            stack.append((block.depth, text[block.start:block.end]))
        elif by_page and current and current[-1].page != block.page:
            close()
        current.append(block)
    if current:  # trailing headings with no body still belong to the document
        sections.append((path_for(current), list(current)))
    return sections


def _split_long(blocks: list[Block], tokens: dict, limit: int) -> list[list[Block]]:
    parts: list[list[Block]] = [[]]
    size = 0
    for b in blocks:
        t = tokens[(b.start, b.end)]
        if parts[-1] and size + t > limit:
            parts.append([])
            size = 0
        parts[-1].append(b)
        size += t + 1
    return parts


def _paragraph_spans(text: str, blocks: list[Block], tokens: dict, offsets: dict, params: ChunkParams):
    """Yield (start, end, (first page, last page) or None, token count or None) for each paragraph-level chunk."""
    group: list[Block] = []
    size = 0

    def flush():
        if group:
            yield group[0].start, group[-1].end, _pages(group), None

    for b in blocks:
        t = tokens[(b.start, b.end)]
        if t > params.chunk_tokens:
            yield from flush()
            group, size = [], 0
            offs = offsets.pop((b.start, b.end), None)  # used once: freed as soon as it is
            for s, e, count in _windows(text, b.start, b.end, params.chunk_tokens, params.overlap, offs):
                yield s, e, _pages([b]), count
            continue
        if group and size + t > params.chunk_tokens:
            carried = group.pop() if _carried(text, group) else None
            yield from flush()
            group, size = ([carried], tokens[(carried.start, carried.end)] + 1) if carried else ([], 0)
        group.append(b)
        size += t + 1  # the blank line between blocks is about one token
    yield from flush()


_ENTRY_NAME = re.compile(r"(?:--?[A-Za-z0-9][\w-]*(?:, --?[A-Za-z0-9][\w-]*)?|"
                         r"\$?[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+)"
                         r"(?:[ =]\S+)?(?: \([^()\n]{1,30}\))?")
"""A reference's entry name on a line of its own: an option ("-n requests", "--timeout=SECONDS"), a setting or
variable with an underscore or a dot ("query_mem (integer)", "$XDG_CONFIG_HOME", "apt.conf")."""
PACKING = 3
"""How paragraphs are packed into passages (pipeline.chunking_key): 2 keeps an entry's name with its description, 3 not
a command a sentence announces."""


def names_entry(block: str) -> bool:
    """Whether ``block`` is only the name of a reference's entry (``_ENTRY_NAME``): the packing keeps it with the
    description below it, as a heading is, not at the end of the passage before (a configuration reference's
    "temp_cache (integer)" ended one passage and its "The default is sixteen megabytes (16MB)." began the next)."""
    return bool(_ENTRY_NAME.fullmatch(block.strip()))


def _carried(text: str, group: list[Block]) -> bool:
    """Whether the last block of a full passage opens the next one instead: an entry's name (``names_entry``), not the
    only block, and not a command a sentence above announces ("... and run:" then "aster_thumbs.py --rebuild", which
    a review found carried away from its sentence)."""
    if len(group) < 2 or not names_entry(text[group[-1].start:group[-1].end]):
        return False
    return not text[group[-2].start:group[-2].end].rstrip().endswith(":")


def _pages(blocks: list[Block]) -> tuple[int, int] | None:
    pages = [b.page for b in blocks if b.page is not None]
    return (min(pages), max(pages)) if pages else None


_SENTENCE_END = re.compile(r"[.!?:;][\"')\]]?\s|\n")
_SPACE = re.compile(r"\s")
_NON_SPACE = re.compile(r"\S")


def _best_cut(sub: str, s: int, e: int) -> int:
    """Where to end a window that may reach ``e``: a sentence end or line break in its last
    third if there is one, else the last whitespace, else (one giant word) ``e`` itself."""
    floor = s + (e - s) * 2 // 3
    last = None
    for m in _SENTENCE_END.finditer(sub, floor, e + 1):
        last = m.end() - 1
    if last is not None and last > s:
        return last
    m = _SPACE.search(sub[s + 1:e + 1][::-1])  # the last whitespace in sub[s+1 : e+1]
    return e - m.start() if m else e


def split_block(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into windows of at most ``size`` tokens ending at whitespace."""
    return [(s, e) for s, e, _ in _windows(text, start, end, size, overlap)]


def _windows(text: str, start: int, end: int, size: int, overlap: int,
             offs: np.ndarray | None = None) -> list[tuple[int, int, int]]:  # fmt: skip
    """(start, end, token count) of each window of ``text[start:end]``; ``offs`` are its token starts if known."""
    sub = text[start:end]
    if offs is None:
        offs = token_starts(sub)
    n = len(offs)
    out: list[tuple[int, int, int]] = []
    s, i = 0, 0
    while s < len(sub):
        j = i + size
        e = len(sub) if j >= n else _best_cut(sub, s, int(offs[j]))
        window = _trimmed_window(sub, s, e, offs)
        # Offsets come from pieces; encoded whole, a window can come out a token longer.
        while window and window[2] > size and min(j, n) > i + 1:
            j = min(j, n) - 1
            e = _best_cut(sub, s, int(offs[j]))
            window = _trimmed_window(sub, s, e, offs)
        if window:
            out.append((start + window[0], start + window[1], window[2]))
        if e >= len(sub):
            break
        # Next window: ``overlap`` tokens back from the cut, moved forward to a word start.
        k = max(int(np.searchsorted(offs, e, "right")) - 1 - overlap, i + 1)
        ns = min(int(offs[k]), e)
        if ns > 0 and not sub[ns - 1].isspace():
            m = _SPACE.search(sub, ns, e)
            ns = m.start() if m else e
        m = _NON_SPACE.search(sub, ns)
        ns = max(m.start() if m else len(sub), s + 1)  # always forward, whatever the tokens
        s, i = ns, int(np.searchsorted(offs, ns, "right")) - 1
    return out


def _trimmed_window(sub: str, s: int, e: int, offs: np.ndarray) -> tuple[int, int, int] | None:
    """``sub[s:e]`` without surrounding whitespace, as (start, end, tokens); None if nothing is left.

    A window inside one giant "word" is counted from ``offs``: encoding it again would
    double the work on a base64 blob. Any other window is encoded whole.
    """
    seg = sub[s:e]
    lead = len(seg) - len(seg.lstrip())
    trail = len(seg.rstrip())
    if trail <= lead:
        return None
    start, end = s + lead, s + trail
    if _SPACE.search(sub, start, end) is None:
        return start, end, int(np.searchsorted(offs, end) - np.searchsorted(offs, start))
    return start, end, len(encoding().encode_ordinary(seg[lead:trail]))


# ---------------------------------------------------------------- tokens of long text

_RUN_LIMIT = 2000
"""Text is cut wherever this many characters in a row hold no word start, so the BPE
tokenizer never sees one run of more than twice this: its time and memory grow faster
than a run's length, and one enormous "word" would otherwise dominate a whole file."""
_WORD_START = re.compile(r"\s(?=\S)")
_SURROGATE = re.compile("[\ud800-\udfff]")


def count_tokens_cut(text: str) -> int:
    """cl100k tokens in ``text`` encoded in pieces: exact unless it has a run longer than 2,000 characters."""
    return sum(len(_encode(piece)) for _, piece in _pieces(text))


def token_starts(text: str) -> np.ndarray:
    """The character offset at which each token of ``text`` (encoded in pieces) starts, ascending."""
    starts = [_piece_starts(piece) + offset for offset, piece in _pieces(text)]
    return np.concatenate(starts) if starts else np.zeros(0, np.int64)


def _pieces(text: str):
    """Yield (offset, piece): ``text`` in order, cut inside every run of 2,000 characters with no word start."""
    cuts = [p + _RUN_LIMIT for p in range(0, len(text) - _RUN_LIMIT, _RUN_LIMIT)
            if not _WORD_START.search(text, p, p + _RUN_LIMIT)]  # fmt: skip
    if not cuts:
        yield 0, text
        return
    for begin, end in zip([0] + cuts, cuts + [len(text)]):
        yield begin, text[begin:end]


def _encode(piece: str) -> np.ndarray:
    """The tokens of ``piece``; a lone surrogate (from a damaged source) counts as U+FFFD."""
    enc = encoding()
    try:
        return enc.encode_to_numpy(piece, disallowed_special=())
    except UnicodeEncodeError:
        return enc.encode_to_numpy(_SURROGATE.sub("\ufffd", piece), disallowed_special=())


def _piece_starts(piece: str) -> np.ndarray:
    """Character offsets of the tokens of ``piece``: where each token's first byte falls, vectorised."""
    lengths = _token_byte_lengths()[_encode(piece)]
    byte_starts = np.cumsum(lengths) - lengths
    if piece.isascii():
        return byte_starts
    data = np.frombuffer(_SURROGATE.sub("\ufffd", piece).encode("utf-8"), np.uint8)
    char_of_byte = np.cumsum((data & 0xC0) != 0x80) - 1  # continuation bytes belong to the char before
    return char_of_byte[byte_starts]


@lru_cache(maxsize=1)
def _token_byte_lengths() -> np.ndarray:
    """Byte length of every token id (0 for ids that are no token)."""
    enc = encoding()
    lengths = []
    for token in range(enc.n_vocab):
        try:
            lengths.append(len(enc.decode_single_token_bytes(token)))
        except KeyError:
            lengths.append(0)
    return np.array(lengths, np.int64)
