"""The evidence packet: progressive search's hits wrapped in <chunk> elements within a token budget."""

from __future__ import annotations

import re
from html import escape

from ..tokens import encoding
from ..types import Evidence, EvidencePacket, PacketChunk, SearchHit
from .index import Index
from .progressive import progressive_search
from .scope import DEFAULT_EVIDENCE_LIMIT, DEFAULT_MAX_TOKENS, UNSET, Grant, clean_max_tokens


def wrap_chunk(chunk_id: str, title: str, content: str, truncated: bool = False) -> str:
    """One <chunk> element of a packet; title and content XML-escaped, so no document can close or forge it."""
    cut = ' truncated="true"' if truncated else ""
    return (f'<chunk id="{chunk_id}" document="{escape(title, quote=True)}"{cut}>\n'
            f"{escape(content, quote=False)}\n</chunk>\n")  # fmt: skip


def build_packet(evidence: Evidence, max_tokens: object = DEFAULT_MAX_TOKENS) -> EvidencePacket:
    """Wrap the evidence, in order, in <chunk> elements within ``max_tokens`` tokens counted over the whole packet.

    Titles and content are XML-escaped, so no document can close or forge a wrapper.
    The last admitted chunk may be cut at a word boundary to fit.
    """
    budget = clean_max_tokens(max_tokens)
    enc = encoding()

    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    def wrap(hit: SearchHit, content: str, truncated: bool) -> str:
        return wrap_chunk(hit.chunk_id, hit.document_title, content, truncated)

    parts: list[str] = []
    admitted: list[PacketChunk] = []
    used = 0
    truncated = False
    for hit in evidence.hits:
        piece = wrap(hit, hit.content, False)
        cost = count(piece)
        if used + cost <= budget:
            parts.append(piece)
            admitted.append(PacketChunk(hit.chunk_id, hit.document_id, hit.document_title, hit.content))
            used += cost
            continue
        truncated = True
        prefix = _fit_prefix(hit, budget - used, lambda c: count(wrap(hit, c, True)))
        if prefix:
            piece = wrap(hit, prefix, True)
            parts.append(piece)
            admitted.append(PacketChunk(hit.chunk_id, hit.document_id, hit.document_title, prefix, True))
            used += count(piece)
        break
    text = "".join(parts)
    # Token counts of pieces add up to the whole's only approximately at their seams; make it exact.
    while admitted and count(text) > budget:
        admitted.pop()
        parts.pop()
        truncated = True
        text = "".join(parts)
    return EvidencePacket(evidence.query, text, tuple(admitted), count(text) if text else 0, budget,
                          evidence.chunks_gathered, evidence.strong, evidence.scoped, truncated)  # fmt: skip


def _fit_prefix(hit: SearchHit, room: int, cost) -> str:
    """The longest whole-word prefix of the hit's content whose wrapped cost fits in ``room`` tokens."""
    if room <= 0 or cost("") > room:
        return ""
    words = [m.end() for m in re.finditer(r"\S+", hit.content)]
    lo, hi = 0, len(words)
    while lo < hi:  # binary search on the number of words
        mid = (lo + hi + 1) // 2
        if cost(hit.content[:words[mid - 1]]) <= room:
            lo = mid
        else:
            hi = mid - 1
    return hit.content[:words[lo - 1]] if lo else ""


def evidence_packet(index: Index, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                    limit: object = DEFAULT_EVIDENCE_LIMIT, max_tokens: object = DEFAULT_MAX_TOKENS,
                    grant: Grant = None) -> EvidencePacket:  # fmt: skip
    """Progressive search, then the packet: exactly what ``reason`` sends to the model."""
    budget = clean_max_tokens(max_tokens)
    evidence = progressive_search(index, query, document_id=document_id, collection_id=collection_id, limit=limit,
                                  grant=grant)  # fmt: skip
    return build_packet(evidence, budget)
