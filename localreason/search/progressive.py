"""Progressive search: a bounded, ranked evidence set with an adaptive threshold, and its relevance."""

from __future__ import annotations

import math

import numpy as np

from ..text import WORD, counted, query_terms
from ..types import Evidence
from .index import Index
from .ranking import CANDIDATES, Ranked, distinct, hybrid, lexical_ranking, one, reread_unless_exact
from .scope import (DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT, UNSET, Grant, ResolvedScope, clamp_limit, clean_query,
                    resolve_scope)  # fmt: skip

RELATIVE_CUTOFF = 0.5
"""A candidate passes when its fused z-score is at least this fraction of the best one's ..."""
MIN_Z = 1.0
"""... or when it stands this many standard deviations above the candidate pool's mean."""
ENOUGH_EVIDENCE = 3
"""Fewer passing chunks than this triggers the widening steps."""
RELEVANCE_GUARD = 0.58
"""The fixed guard on the relevance of the best evidence: unscoped evidence below it is weak."""
COVERAGE_WEIGHT = 0.3
"""Relevance = best cosine among the top 3 hits + this x the share (IDF-weighted) of the question's
terms that the top 3 hits contain. A question naming things the library never mentions has low
coverage even when some passage is loosely similar. Calibrated on SQuAD (bench/tune/reason.py)."""


def progressive_search(index: Index, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                       limit: object = DEFAULT_EVIDENCE_LIMIT, grant: Grant = None) -> Evidence:  # fmt: skip
    """Gather a bounded, ranked evidence set with an adaptive relevance threshold.

    1. Rank by the hybrid fusion; the passage reader re-reads the first candidates (search/rerank.py).
    2. Keep candidates whose fused z-score is at least RELATIVE_CUTOFF of the best one's, or
       MIN_Z above the pool's mean: a cutoff from this query's own score distribution.
    3. If fewer than ENOUGH_EVIDENCE pass, widen: a larger candidate pool; then the neighbours
       (previous/next paragraph) of the passing hits; then chunks containing all the query's
       rare terms (lexical-only matches), until enough evidence is found or nothing is left.
    4. The evidence is strong when its relevance (see ``relevance``) reaches RELEVANCE_GUARD.
    """
    q = clean_query(query)
    k = clamp_limit(limit, DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT)
    scope = resolve_scope(index, document_id, collection_id, grant)
    steps: list[str] = []
    if scope.empty:
        return Evidence(q, (), False, True, ("the scope selects nothing: no document or collection matches",))
    ranked = hybrid(index, q, max(k * 2, 20), scope)
    steps.append(f"hybrid ranking: {len(ranked)} candidates")
    chosen = _passing(ranked, k)
    steps.append(f"adaptive threshold kept {len(chosen)}")
    if len(chosen) < ENOUGH_EVIDENCE and len(ranked) >= max(k * 2, 20):
        ranked = hybrid(index, q, CANDIDATES * 3, scope, candidates=CANDIDATES * 3)
        chosen = _passing(ranked, k)
        steps.append(f"widened the pool to {len(ranked)} candidates: {len(chosen)} pass")
    # Re-read once, the final pool: each candidate keeps the fused score of its place, so as many pass, a prefix.
    chosen = reread_unless_exact(index, q, ranked)[:len(chosen)]
    order = [r.rowid for r in chosen]
    if len(order) < ENOUGH_EVIDENCE and order:
        added = _neighbours(index, order[:ENOUGH_EVIDENCE], scope)
        order = _interleave_after(order, added)[:k]
        steps.append(f"added {counted(len(added), 'neighbouring passage')} of the best hits")
    if len(order) < ENOUGH_EVIDENCE:
        rare = _rare_term_matches(index, q, scope, exclude=set(order))
        order = (order + rare)[:k]
        steps.append(f"added {counted(len(rare), 'chunk')} containing the query's rarest terms")
    score = relevance(index, q, ranked[:3], scope.granted)  # the hybrid's first three, as RELEVANCE_GUARD was set
    strong = bool(order) and score >= RELEVANCE_GUARD
    steps.append("evidence is strong" if strong else "evidence is weak (below the relevance guard)")
    hits = distinct(index.store.hits(order), len(order))  # a copied passage once: the packet's budget holds more
    return Evidence(q, tuple(hits), strong, scope.scoped, tuple(steps), score)


def relevance(index: Index, query: str, top: list[Ranked], within: tuple[str, ...] | None = None) -> float:
    """Best cosine + COVERAGE_WEIGHT x IDF-weighted share of the query's terms found in ``top`` (internal). The
    word counts are the library's, or those of the collections ``within`` (a granted key's): what the asker cannot
    see never changes the verdict, so it cannot be learnt from it."""
    if not top:
        return 0.0
    best_cos = max((r.cosine for r in top if r.cosine is not None), default=0.0)
    words = set(WORD.findall(" ".join(h.content for h in index.store.hits([r.rowid for r in top])).lower()))
    total = index.store.paragraph_count(within)
    found = weight = 0.0
    for term, df in _document_frequencies(index, query_terms(query), within):
        idf = math.log((total + 1) / (df + 0.5))
        weight += idf
        found += idf if term in words else 0.0
    return best_cos + COVERAGE_WEIGHT * (found / weight if weight else 0.0)


def _document_frequencies(index: Index, terms: list[str], within: tuple[str, ...] | None) -> list[tuple[str, int]]:
    """(term, number of paragraph chunks containing it, in the collections ``within`` when given) for each term."""
    return [(t, index.store.match_count(one(t), collection_ids=within)) for t in terms]


def _passing(ranked: list[Ranked], k: int) -> list[Ranked]:
    if not ranked:
        return []
    scores = np.array([r.fused for r in ranked])
    mean, std = float(scores.mean()), float(scores.std()) or 1.0
    best = (scores[0] - mean) / std
    keep = [r for r in ranked if (r.fused - mean) / std >= min(best * RELATIVE_CUTOFF, MIN_Z)]
    return (keep or ranked[:1])[:k]


def _neighbours(index: Index, rowids: list[int], scope: ResolvedScope) -> dict[int, list[int]]:
    """Previous and next paragraph (same document) of each anchor rowid."""
    out: dict[int, list[int]] = {}
    taken = set(rowids)
    for rowid in rowids:
        out[rowid] = [r for r in index.store.neighbours(rowid) if r not in taken]
        taken.update(out[rowid])
    return out


def _interleave_after(order: list[int], added: dict[int, list[int]]) -> list[int]:
    result = []
    for rowid in order:
        result.append(rowid)
        result += added.get(rowid, [])
    return result


def _rare_term_matches(index: Index, query: str, scope: ResolvedScope, exclude: set[int], limit: int = 5) -> list[int]:
    """Chunks containing all of the query's rare terms (in at most 1% of chunks; else its rarest term)."""
    total = max(1, index.store.paragraph_count(scope.granted))
    dfs = sorted((n, t) for t, n in _document_frequencies(index, query_terms(query), scope.granted) if n)
    if not dfs:
        return []
    rare = [t for n, t in dfs if n <= max(1, total // 100)] or [dfs[0][1]]
    ranked = lexical_ranking(index, query, limit + len(exclude), scope, all_terms=True, terms=rare)
    return [r for r, _ in ranked if r not in exclude][:limit]
