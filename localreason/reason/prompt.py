"""The model's instructions, and the evidence packet fitted to the model's context."""

from __future__ import annotations

from .. import search
from ..generate import Generator
from ..types import EvidencePacket

SYSTEM_PROMPT = (
    "You answer a question using only the evidence given. Reply with JSON. Each statement first quotes the "
    "evidence sentence that answers the question, then gives the answer in a few words. If sources "
    "disagree, make one statement per source. If the evidence does not fully answer the question, say so "
    "in limitations."
)


def messages_for(query: str, packet_text: str) -> list[dict]:
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"Evidence:\n{packet_text}\nQuestion: {query}"}]  # fmt: skip


def shrink_to_context(evidence, packet: EvidencePacket, query: str, generator: Generator, room: int) -> EvidencePacket:
    """Rebuild the packet with smaller budgets until the prompt fits in ``room`` model tokens."""
    budget = packet.max_tokens
    while budget > 0:
        budget = int(budget * 0.8)
        smaller = search.build_packet(evidence, budget)
        if smaller.empty or generator.prompt_tokens(messages_for(query, smaller.text)) <= room:
            return smaller
    return search.build_packet(evidence, 0)
