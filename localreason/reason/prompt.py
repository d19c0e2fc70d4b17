"""The model's instructions, and what it reads: the sentences it may quote, in their chunk wrappers."""

from __future__ import annotations

from ..search import wrap_chunk
from ..types import EvidencePacket
from .candidates import Quote

SYSTEM_PROMPT = (
    "You answer a question using only the evidence given. Reply with JSON. Each statement first quotes the "
    "evidence sentence that answers the question, then gives the answer in a few words. If sources "
    "disagree, make one statement per source. If the evidence does not fully answer the question, say so "
    "in limitations."
)


def messages_for(query: str, packet_text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Evidence:\n{packet_text}\nQuestion: {query}"}]  # fmt: skip


def offered_text(packet: EvidencePacket, quotes: list[Quote]) -> str:
    """What the model reads: the sentences it may quote, in the packet's <chunk> wrappers.

    The chunks keep their evidence order and each chunk's offered sentences their order in its text;
    the rest of the packet is left out, because the grammar lets the model write nothing else. The
    answer's quotations are still verified against the admitted chunks' whole text.
    """
    by_chunk: dict[str, list[Quote]] = {}
    for q in quotes:
        by_chunk.setdefault(q.chunk_id, []).append(q)
    parts = []
    for c in packet.chunks:
        if c.chunk_id in by_chunk:
            body = " ".join(q.text.strip() for q in sorted(by_chunk[c.chunk_id], key=lambda q: q.start))
            parts.append(wrap_chunk(c.chunk_id, c.document_title, body, c.truncated))
    return "".join(parts)
