"""Search over a library: find_items, deep_search, deep_read, deep_expand, progressive search, packets.

Every operation takes an :class:`~localreason.search.index.Index` (the store, the vector
index and the embedder; ``Library.index``) first and returns small typed values from
:mod:`localreason.types`. Similarity scores never leave this package.

    from localreason import search
    hits = search.deep_search(lib.index, "reset the router", limit=5)

Modules: ``scope`` (where a search may look, input validation), ``ranking`` (the dense
and lexical rankings, their fusion, deep_search), ``progressive`` (progressive search and
relevance), ``navigate`` (find_items, deep_read, deep_expand) and ``packet`` (the
evidence packet). The constants re-exported here are for reading; each module reads its own
(RARE_MATCHES in ``ranking``, MIN_Z in ``progressive``, ...), so patch a constant in its module.
"""

from __future__ import annotations

from ..text import query_terms
from .index import Index
from .navigate import DIRECTIONS, deep_expand, deep_read, find_items
from .packet import build_packet, evidence_packet, wrap_chunk
from .progressive import ENOUGH_EVIDENCE, RELEVANCE_GUARD, progressive_search, relevance
from .ranking import (CANDIDATES, DENSE_WEIGHT, Ranked, dense_ranking, deep_search, fuse, hybrid, lexical_ranking,
                      query_phrases)  # fmt: skip
from .scope import (DEFAULT_EVIDENCE_LIMIT, DEFAULT_MAX_TOKENS, DEFAULT_SEARCH_LIMIT, MAX_EVIDENCE_LIMIT,
                    MAX_QUERY_CHARS, UNSET, Grant, ResolvedScope, clamp_limit, clean_max_tokens, clean_query,
                    resolve_scope)  # fmt: skip

__all__ = [
    "CANDIDATES", "DEFAULT_EVIDENCE_LIMIT", "DEFAULT_MAX_TOKENS", "DEFAULT_SEARCH_LIMIT", "DENSE_WEIGHT",
    "DIRECTIONS", "ENOUGH_EVIDENCE", "MAX_EVIDENCE_LIMIT", "MAX_QUERY_CHARS", "RELEVANCE_GUARD", "UNSET", "Grant", "Index",
    "Ranked", "ResolvedScope", "build_packet", "clamp_limit", "clean_max_tokens", "clean_query", "deep_expand", "deep_read",
    "deep_search", "dense_ranking", "evidence_packet", "find_items", "fuse", "hybrid", "lexical_ranking",
    "progressive_search", "query_phrases", "query_terms", "relevance", "resolve_scope", "wrap_chunk",
]  # fmt: skip
