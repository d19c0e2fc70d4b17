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
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from dataclasses import dataclass

from ..ids import derived_id
from ..tokens import encoding
from ..types import LEVEL_PARAGRAPH, LEVEL_SECTION, Chunk
from .parse import Block, ParsedDocument


@dataclass(frozen=True)
class ChunkParams:
    chunk_tokens: int = 200
    overlap: int = 30
    section_max_tokens: int = 2000


def chunk_document(parsed: ParsedDocument, doc_id: str, params: ChunkParams) -> list[Chunk]:
    """All section and paragraph chunks of one document, sections first within their order."""
    enc = encoding()
    text = parsed.text
    ntok = [len(t) for t in enc.encode_ordinary_batch([text[b.start:b.end] for b in parsed.blocks],
                                                         num_threads=1)]  # fmt: skip
    tokens = dict(zip(((b.start, b.end) for b in parsed.blocks), ntok))
    out: list[Chunk] = []
    section_index = 0
    for path, blocks in _sections(parsed):
        for part in _split_long(blocks, tokens, params.section_max_tokens):
            start, end = part[0].start, part[-1].end
            sec_text = text[start:end]
            sec_id = derived_id("chk", doc_id, "section", str(section_index), _digest(sec_text))
            pieces = list(_paragraph_spans(text, part, tokens, params))
            pages = [b.page for b in part if b.page is not None]
            out.append(Chunk(
                id=sec_id, document_id=doc_id, level=LEVEL_SECTION, parent_id=doc_id,
                index=section_index, section_path=path,
                token_count=sum(tokens[(b.start, b.end)] for b in part) + len(part) - 1,
                text=sec_text, start=start, end=end,
                page_start=min(pages) if pages else None, page_end=max(pages) if pages else None,
            ))  # fmt: skip
            texts = [text[s:e] for s, e, _ in pieces]
            counts = [len(t) for t in enc.encode_ordinary_batch(texts, num_threads=1)]
            for i, ((s, e, pg), chunk_text, count) in enumerate(zip(pieces, texts, counts)):
                out.append(Chunk(
                    id=derived_id("chk", doc_id, "para", str(section_index), str(i), _digest(chunk_text)),
                    document_id=doc_id, level=LEVEL_PARAGRAPH, parent_id=sec_id, index=i,
                    section_path=path, token_count=count, text=chunk_text, start=s, end=e,
                    page_start=pg[0] if pg else None, page_end=pg[1] if pg else None,
                ))  # fmt: skip
            section_index += 1
    return out


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


def _sections(parsed: ParsedDocument) -> list[tuple[tuple[str, ...], list[Block]]]:
    """Group blocks into (section path, blocks); headings with no text of their own join the next section."""
    text = parsed.text
    by_page = parsed.format == "pdf"
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


def _paragraph_spans(text: str, blocks: list[Block], tokens: dict, params: ChunkParams):
    """Yield (start, end, (first page, last page) or None) for each paragraph-level chunk."""
    group: list[Block] = []
    size = 0

    def flush():
        if group:
            yield group[0].start, group[-1].end, _pages(group)

    for b in blocks:
        t = tokens[(b.start, b.end)]
        if t > params.chunk_tokens:
            yield from flush()
            group, size = [], 0
            for s, e in split_block(text, b.start, b.end, params.chunk_tokens, params.overlap):
                yield s, e, _pages([b])
            continue
        if group and size + t > params.chunk_tokens:
            yield from flush()
            group, size = [], 0
        group.append(b)
        size += t + 1  # the blank line between blocks is about one token
    yield from flush()


def _pages(blocks: list[Block]) -> tuple[int, int] | None:
    pages = [b.page for b in blocks if b.page is not None]
    return (min(pages), max(pages)) if pages else None


_SENTENCE_END = re.compile(r"[.!?:;][\"')\]]?\s|\n")


def _best_cut(sub: str, s: int, e: int) -> int:
    """Where to end a window that may reach ``e``: a sentence end or line break in its last
    third if there is one, else the last whitespace, else (one giant word) ``e`` itself."""
    floor = s + (e - s) * 2 // 3
    last = None
    for m in _SENTENCE_END.finditer(sub, floor, e + 1):
        last = m.end() - 1
    if last is not None and last > s:
        return last
    p = e
    while p > s and not sub[p].isspace():
        p -= 1
    return p if p > s else e


def split_block(text: str, start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into windows of about ``size`` tokens ending at whitespace."""
    enc = encoding()
    sub = text[start:end]
    toks = enc.encode_ordinary(sub)
    _, offs = enc.decode_with_offsets(toks)
    n = len(toks)
    spans: list[tuple[int, int]] = []
    s, i = 0, 0
    while s < len(sub):
        j = i + size
        if j >= n:
            spans.append((s, len(sub)))
            break
        e = _best_cut(sub, s, offs[j])
        spans.append((s, e))
        # Next window: ``overlap`` tokens back from the cut, moved forward to a word start.
        k = max(bisect_right(offs, e) - 1 - overlap, i + 1)
        ns = min(offs[k], e)
        if ns > 0 and not sub[ns - 1].isspace():
            q = ns
            while q < e and not sub[q].isspace():
                q += 1
            ns = q if q < e else e
        while ns < len(sub) and sub[ns].isspace():
            ns += 1
        s, i = ns, bisect_right(offs, ns) - 1
    out = []
    for s, e in spans:
        seg = sub[s:e]
        lead = len(seg) - len(seg.lstrip())
        trail = len(seg.rstrip())
        if trail > lead:
            out.append((start + s + lead, start + s + trail))
    return out
