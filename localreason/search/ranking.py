"""The two rankings (dense and lexical), their fusion, and deep_search.

Hybrid search fuses a dense ranking (FAISS inner product over unit vectors, i.e.
cosine) with a lexical one (SQLite FTS5 BM25). Each list's scores are turned into
z-scores over its own top candidates, so the two scales meet on equal terms; a
chunk missing from one list takes that list's lowest observed value; the fused
score is a weighted sum. With the packaged embedder the dense half's weight falls
where its best passage is far from the query (``fusion_weight``: a dense ranking that
found nothing close does not drag a good lexical one down); with another embedder it is
the constant DENSE_WEIGHT. Both were chosen by measurement on fit data
(bench/quality/fusion.py, bench/quality/retrieval.py, which also report each half
alone and plain reciprocal rank fusion).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

import numpy as np

from ..config import DEFAULT_EMBEDDING_MODEL
from ..textquery import TextQuery
from ..text import STOPWORDS, WORD, collapse, query_terms
from ..types import Elsewhere, SearchHit
from .copies import EDGE_WORDS, edge_copy, key as copies_key
from .index import Index
from .rerank import reread_first
from .scope import (DEFAULT_SEARCH_LIMIT, UNSET, Grant, ResolvedScope, clamp_limit, clean_query,
                    resolve_scope)  # fmt: skip

# Fusion: weight of the dense z-score (the lexical one gets 1 - this); see the module docstring.
DENSE_WEIGHT = 0.45
"""The dense weight with an embedder other than the packaged one, and with it where its best match is close
(chosen on SQuAD dev's questions: in-sample there)."""
FUSION_KNEE = 0.5
FUSION_SLOPE = 1.5
"""``fusion_weight``'s rule: the dense weight is DENSE_WEIGHT while the dense ranking's best cosine is FUSION_KNEE or
more, and falls by FUSION_SLOPE per unit of cosine below it (0.36 at 0.44, reddit's mean best cosine; 0.15 at 0.3),
never below FUSION_FLOOR and never above DENSE_WEIGHT: the dense half only ever weighs less than it did, where it is
weak. bench.quality.fusion chose KNEE and SLOPE on the fit parts (SQuAD dev's fit half, the fit manuals' fit halves);
held out, reddit's MRR@10 0.552 -> 0.560 and Amazon's 0.392 -> 0.407 against the constant weight, the other kinds
level (docs/history/52-search-beats-bm25.md). The cosines are all-MiniLM-L6-v2's: the rule is used with that
embedder only."""
FUSION_FLOOR = 0.05
"""The least the dense half weighs: it still orders what the lexical half leaves tied (passages that match no query
word, a query with no word the index knows) instead of their rowids. The rule reaches it at a best cosine of 0.23,
below every fit question's (9 of bench.quality.fusion's 4,635 questions, none of the fit parts', are lower)."""
CANDIDATES = 100
"""How many candidates each ranking contributes before fusion."""

LEXICAL_POSTINGS = 20_000
"""The most passages the lexical ranking scores for one query. FTS5 scores every passage that matches any
query word (about 2 microseconds each here), and in a library of a million passages a common word matches
hundreds of thousands. The query's words are taken rarest first while their passages fit in this budget;
commoner ones (low BM25 weight anyway) are left to the dense ranking. Below 20,000 passages nothing changes.
bench/speed/scale.py reports the effect on speed and on finding the right passage."""

RARE_MATCHES = 1
"""A query word found in at most this many passages names them (a rare name): they are lifted above the
passages that match only the query's other words."""

RARITY_END = 10
"""Past RARE_MATCHES, what a query word lifts falls smoothly with the passages that hold it: by
``1 - ln(n) / ln(RARITY_END)`` of a full lift for a word in ``n`` passages (0.70 at 2, 0.30 at 5), nothing
from RARITY_END on (an IDF-like slope, not a step). Chosen on the first half of SQuAD's questions (best
MRR@10 of 1.5-10: 0.857; the step rule 0.855), reported on the second half (0.883 against 0.880) and on
the exact-term benchmark's Python documentation (bench/quality/retrieval.py, bench/quality/exact.py)."""

NAMING_MATCHES = 20
"""A word no dictionary has (letters with digits: ``zq0023xv``, ``inv20231104``, ``ab12cd``; or a ``_``)
found in at most this many passages names them all: a code copied into two files, repeated in a table
and a changelog, is an identifier wherever it occurs. Such passages are lifted fully."""

_IDENTIFIER = re.compile(r"(?=[^\W\d]*\d)(?=\d*[^\W\d])\w+|\w*_\w*")
"""A query word that is a code rather than a dictionary word: letters mixed with digits, or an underscore."""


# ---------------------------------------------------------------- the lexical ranking


_QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d')
_NUMBER = re.compile(r"\d+")
_APOSTROPHE = re.compile(r"\w['\u2019]\w")
_ACRONYM = re.compile(r"[A-Z]{2,6}")


def query_phrases(query: str, *, exact_only: bool = False) -> list[str]:
    """Runs of words the query names exactly, as full-text phrases (words in order, adjacent).

    Exact names: a quoted part ("exact phrase") and a word that the full-text index splits
    at punctuation (``shutil.copytree``, ``E-1234``, ``QX012-7B2``, ``v2.3.1``; not at an
    apostrophe); an acronym followed by a number (``RFC 7231``, ``PEP 8``). Also, unless
    ``exact_only``, any other name followed by a number (``Super Bowl 50``): likely
    together, but as often written apart. The index keeps
    letters, digits and ``_`` together and splits at everything else, so these are matched
    as sequences of its words.
    """
    phrases = []
    for m in _QUOTED.finditer(query):
        phrases.append(WORD.findall((m.group(1) or m.group(2)).lower()))
    pieces = query.split()
    for i, piece in enumerate(pieces):
        words = WORD.findall(piece.lower())
        if len(words) >= 2 and not piece.startswith(("\"", "\u201c")) and not _APOSTROPHE.search(piece):
            phrases.append(words)
        nxt = WORD.findall(pieces[i + 1].lower()) if i + 1 < len(pieces) else []
        if len(words) == 1 and nxt and _NUMBER.fullmatch(nxt[0]) and not _NUMBER.fullmatch(words[0]) \
                and words[0] not in STOPWORDS and (not exact_only or _ACRONYM.fullmatch(piece)):  # fmt: skip
            phrases.append([words[0], nxt[0]])
    return list(dict.fromkeys(" ".join(p) for p in phrases if len(p) >= 2))


def one(term: str) -> TextQuery:
    """The lexical query for one term (a phrase when it holds several index words)."""
    return TextQuery((term,))


def lexical_ranking(index: Index, query: str, k: int, scope: ResolvedScope, *, all_terms: bool = False,
                    terms: list[str] | None = None, rarity: str = "slope") -> list[tuple[int, float]]:  # fmt: skip
    """(rowid, BM25 score, higher is better) of the best ``k`` paragraph chunks matching the query.

    Given ``terms`` (or ``all_terms``), a plain match of those terms (any, or all). Otherwise
    the query's phrases (``query_phrases``) join its terms, weighed by BM25 like a rare word,
    and the passages holding what the query names are lifted above every passage that
    matches only the rest: first those with a word found in at most RARE_MATCHES passages,
    then, above them, those with a code or identifier written as it is or a quoted phrase.

    ``rarity``: "slope" (the product's: a word's lift falls smoothly with the passages that hold it, and
    an identifier names up to NAMING_MATCHES passages) or "step" (the previous rule, for benchmarks:
    a lift only for a word in at most RARE_MATCHES passages).
    """
    if scope.empty:
        return []
    if terms is not None or all_terms:
        terms = query_terms(query) if terms is None else terms
        return _fts_ranking(index, TextQuery(tuple(terms), every=all_terms), k, scope) if terms else []
    terms, phrases = query_terms(query), query_phrases(query)
    if not terms and not phrases:
        return []
    scored = _affordable(index, terms)
    if not scored and not phrases:
        return []
    ranked = _fts_ranking(index, TextQuery.any_of(scored + phrases), k, scope)
    exact = query_phrases(query, exact_only=True)
    if rarity == "step":
        named = _rare_terms(index, terms, scope.granted)
        if named:
            ranked = _lift(ranked, _fts_ranking(index, TextQuery.any_of(named), k, scope), k)
    else:  # the words of an exact name ("QX012-7B2") are not names of their own: the phrase is lifted below
        pieces = {w for phrase in exact for w in phrase.split()}
        rarities = _rarities(index, [t for t in terms if t not in pieces], scope.granted)
        ranked = _lift_by_rarity(index, ranked, rarities, k, scope)
    if exact:  # the exact name ends on top
        ranked = _lift(ranked, _fts_ranking(index, TextQuery.any_of(exact), k, scope), k)
    return ranked


def _affordable(index: Index, terms: list[str]) -> list[str]:
    """The terms to score, rarest first, while the passages they match fit in LEXICAL_POSTINGS (all, in a library
    smaller than that); the rarest one even up to twice that. Counting stops there, so a common word costs a few
    milliseconds to count. Counts are library-wide, also for a scoped search (what scoring costs)."""
    budget = LEXICAL_POSTINGS
    if index.store.paragraph_count_upto(budget + 1) <= budget:
        return terms
    counts = {t: index.store.match_count(one(t), upto=budget + 1) for t in terms}
    kept, total = [], 0
    for t in sorted(terms, key=lambda t: counts[t]):
        if total + counts[t] > budget:
            break
        kept.append(t)
        total += counts[t]
    if not kept and terms:  # the rarest word is scored even up to twice the budget: a one-word query keeps its ranking
        rarest = min(terms, key=lambda t: counts[t])
        if index.store.match_count(one(rarest), upto=2 * budget + 1) <= 2 * budget:
            kept = [rarest]
    return [t for t in terms if t in kept]


def _rare_terms(index: Index, terms: list[str], within: tuple[str, ...] | None) -> list[str]:
    """The terms found in 1 to RARE_MATCHES paragraph chunks (counting stops there, so common words cost little)."""
    return [t for t in terms
            if 0 < index.store.match_count(one(t), upto=RARE_MATCHES + 1, collection_ids=within) <= RARE_MATCHES]


def _rarities(index: Index, terms: list[str], within: tuple[str, ...] | None = None) -> dict[str, float]:
    """Each query word found in few passages, with the share of a full lift it gives them (see RARITY_END and
    NAMING_MATCHES); the library's counts, or those of the collections ``within`` (a granted key's: what it cannot
    see never lifts or lowers what it can), which stop at the largest count that can matter."""
    out: dict[str, float] = {}
    for t in terms:
        identifier = _IDENTIFIER.fullmatch(t) is not None and not t.isdigit()
        upto = max(NAMING_MATCHES if identifier else math.ceil(RARITY_END), RARE_MATCHES)
        n = index.store.match_count(one(t), upto=upto + 1, collection_ids=within)
        if n == 0 or n > upto:
            continue
        if identifier or n <= RARE_MATCHES:
            out[t] = 1.0
        elif n < RARITY_END:
            out[t] = 1.0 - math.log(n) / math.log(RARITY_END)
    return out


def _lift_by_rarity(index: Index, ranked: list[tuple[int, float]], rarities: dict[str, float], k: int,
                    scope: ResolvedScope) -> list[tuple[int, float]]:  # fmt: skip
    """``ranked`` with each passage holding a rare word raised by that word's share of the list's best score
    (its rarest word's, if several): a full lift puts it above every passage that holds none."""
    if not rarities or not ranked:
        return ranked
    top = max(s for _, s in ranked)
    scores = dict(ranked)
    raised: dict[int, float] = {}
    for term, share in rarities.items():
        for rowid, score in _fts_ranking(index, one(term), k, scope):
            scores.setdefault(rowid, score)
            raised[rowid] = max(raised.get(rowid, 0.0), share * top)
    return sorted(((r, s + raised.get(r, 0.0)) for r, s in scores.items()), key=lambda kv: -kv[1])[:k]


def _fts_ranking(index: Index, query: TextQuery, k: int, scope: ResolvedScope) -> list[tuple[int, float]]:
    """(rowid, BM25 score, higher is better) of the best ``k`` paragraph chunks for a lexical query."""
    return index.store.fts_ranking(query, k, scope.document_id, scope.collections)


def _lift(ranked: list[tuple[int, float]], exact: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """``ranked`` with the passages of ``exact`` moved above all others, BM25 order kept within each group."""
    if not exact:
        return ranked
    scores = dict(ranked)
    lift = max(scores.values(), default=0.0)
    for rowid, score in exact:
        scores[rowid] = scores.get(rowid, score) + lift
    return sorted(scores.items(), key=lambda kv: -kv[1])[:k]


# ---------------------------------------------------------------- the dense ranking and the fusion


def dense_ranking(index: Index, qvec: np.ndarray, k: int, scope: ResolvedScope) -> list[tuple[int, float]]:
    """(rowid, cosine) of the ``k`` nearest paragraph chunks."""
    if scope.empty or index.vectors.size == 0:
        return []
    scores, rowids = index.vectors.search_scope(qvec, k, index.store, scope.document_id, scope.collections)
    return [(int(r), float(s)) for r, s in zip(rowids, scores)]


def _z(scores: list[float]) -> tuple[float, float]:
    arr = np.asarray(scores, dtype=np.float64)
    return float(arr.mean()), float(arr.std()) or 1.0


def fusion_weight(dense: list[tuple[int, float]], *, knee: float = FUSION_KNEE, slope: float = FUSION_SLOPE) -> float:
    """The dense half's weight for one query: DENSE_WEIGHT, less where the dense ranking's best passage is far from
    the query (its cosine below ``knee``). Where the embedder found nothing close (informal text, reviews) its
    ranking is mostly wrong, and a good lexical ranking must not be dragged down by it; where it found something
    close it weighs as it always did (more would let a passage worded like the question outrank the one holding a
    code the question names)."""
    if not dense:
        return DENSE_WEIGHT
    best = max(s for _, s in dense)
    return max(FUSION_FLOOR, DENSE_WEIGHT - slope * max(0.0, knee - best))


def fusion_grid() -> list[dict[str, float]]:
    """The constants bench.quality.fusion tries for ``fusion_weight`` (slope 0 is the constant weight)."""
    return [{"knee": k, "slope": s} for k in (0.4, 0.45, 0.5, 0.55, 0.6, 0.65) for s in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0)]


def fusion_constants() -> dict[str, float]:
    return {"knee": FUSION_KNEE, "slope": FUSION_SLOPE}


def dense_weight_for(index: Index, dense: list[tuple[int, float]]) -> float:
    """``fusion_weight`` with the packaged embedder (its cosines are what the rule was fit on), else DENSE_WEIGHT."""
    packaged = getattr(index.embedder, "name", None) == DEFAULT_EMBEDDING_MODEL
    return fusion_weight(dense) if packaged else DENSE_WEIGHT


def fuse(dense: list[tuple[int, float]], lexical: list[tuple[int, float]], method: str = "zsum",
         dense_weight: float = DENSE_WEIGHT) -> list[tuple[int, float]]:  # fmt: skip
    """Fuse two rankings into one list of (rowid, fused score), best first.

    ``zsum`` (the product's): weighted sum of z-scores. The dense scores are standardised
    over the dense list (a chunk it did not return takes its lowest score). The lexical
    scores are standardised over every candidate of either list, a chunk that matches no
    query term scoring 0, as BM25 gives it: one exact match of a rare code among a hundred
    candidates then stands about ten deviations above the rest, however short the lexical
    list. (Standardised over its own list alone, a single lexical hit would score 0 and the
    dense ranking alone would decide.)
    ``zsum-list``: the lexical scores standardised over the lexical list alone (for comparison).
    ``rrf``: reciprocal rank fusion with k = 60.
    """
    if method == "rrf":
        fused: dict[int, float] = {}
        for ranking in (dense, lexical):
            for rank, (rowid, _) in enumerate(ranking):
                fused[rowid] = fused.get(rowid, 0.0) + 1.0 / (60 + rank + 1)
        return sorted(fused.items(), key=lambda kv: -kv[1])
    ids = list(dict.fromkeys(r for ranking in (dense, lexical) for r, _ in ranking))
    parts = []
    if dense:
        parts.append(_standardised(dense, [s for _, s in dense], min(s for _, s in dense), dense_weight))
    if lexical:
        scores = dict(lexical)
        pool = [scores.get(r, 0.0) for r in ids] if method == "zsum" else list(scores.values())
        floor = 0.0 if method == "zsum" else min(scores.values())
        parts.append(_standardised(lexical, pool, floor, 1.0 - dense_weight))
    fused_list = [(r, sum(w * z.get(r, absent) for z, absent, w in parts)) for r in ids]
    return sorted(fused_list, key=lambda kv: (-kv[1], kv[0]))


def _standardised(ranking: list[tuple[int, float]], pool: list[float], absent: float, weight: float):
    """(z-score by rowid, z-score of a chunk the ranking did not return, weight), standardised over ``pool``."""
    mean, std = _z(pool)
    return {r: (s - mean) / std for r, s in ranking}, (absent - mean) / std, weight


@dataclass
class Ranked:
    """A candidate of the fused ranking, with its scores (internal to search: scores never leave it)."""

    rowid: int
    fused: float
    cosine: float | None


def hybrid(index: Index, query: str, k: int, scope: ResolvedScope, candidates: int = CANDIDATES,
           qvec: np.ndarray | None = None, method: str = "zsum", rarity: str = "slope") -> list[Ranked]:  # fmt: skip
    """The fused ranking (internal: carries scores). ``qvec`` saves re-embedding a known query; ``rarity``
    as in ``lexical_ranking``."""
    if scope.empty:
        return []
    if qvec is None:
        qvec = index.embedder.embed([query])[0]
    dense = dense_ranking(index, qvec, candidates, scope)
    lexical = lexical_ranking(index, query, candidates, scope, rarity=rarity)
    cos = dict(dense)
    fused = fuse(dense, lexical, method, dense_weight_for(index, dense))
    missing = [r for r, _ in fused[:k] if r not in cos]
    if missing:  # cosine of lexical-only hits, for the relevance guard
        for r, v in index.store.vectors_of(missing).items():
            cos[r] = float(np.dot(qvec, v))
    return [Ranked(r, s, cos.get(r)) for r, s in fused[:k]]


def deep_search(index: Index, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                limit: object = DEFAULT_SEARCH_LIMIT, grant: Grant = None) -> list[SearchHit]:  # fmt: skip
    """Passages about ``query``, best first, optionally inside one document or collection (and never outside the
    collections of ``grant``)."""
    q = clean_query(query)
    k = clamp_limit(limit, DEFAULT_SEARCH_LIMIT, 100)
    scope = resolve_scope(index, document_id, collection_id, grant)
    return distinct_search(index, q, k, scope)


def reread_unless_exact(index: Index, query: str, ranked: list[Ranked]) -> list[Ranked]:
    """``ranked`` with its first candidates re-read (rerank.reread_first), unless the query names a code, a dotted
    or hyphenated name or a quoted phrase (``query_phrases(exact_only=True)``): there the exact-term lift has put
    the passages that hold it first, and a reader of sentences does not read codes (bench.quality.rerank: level on
    the fit parts without it for those questions)."""
    return ranked if query_phrases(query, exact_only=True) else reread_first(index, query, ranked)


DUPLICATE_ROOM = 3
"""deep_search reads its ranking this many times deeper than the passages it returns, so that after copies
are folded into one hit (``distinct``) the list still holds as many different passages as asked for; if it
does not (a library with many copies), DUPLICATE_ROOM ** 2 times."""


def distinct_search(index: Index, query: str, k: int, scope: ResolvedScope,
                    qvec: np.ndarray | None = None) -> list[SearchHit]:  # fmt: skip
    """deep_search's ranking: the ``k`` best different passages, copies folded into ``also_in``. One fused
    ranking, read DUPLICATE_ROOM times as deep as asked, and DUPLICATE_ROOM ** 2 times if copies fill that."""
    ranked = hybrid(index, query, k * DUPLICATE_ROOM**2, scope, qvec=qvec)  # the same pool whatever k: one ranking
    ranked = reread_unless_exact(index, query, ranked)
    rowids = [r.rowid for r in ranked]
    hits = distinct(index.store.hits(rowids[:k * DUPLICATE_ROOM]), k)
    if len(hits) < k and len(rowids) > k * DUPLICATE_ROOM:
        hits = distinct(index.store.hits(rowids), k)
    return hits


def distinct(hits: list[SearchHit], k: int) -> list[SearchHit]:
    """The first ``k`` different passages of ``hits``, in order; each with the later hits that are copies of it
    in ``also_in``: the same text (whitespace aside: a copied file, another version of it), or the same words but
    for the markup a source spells out and its rendering drops, and a heading a cut left on one side (copies.py: an
    AsciiDoc or reST source beside its HTML), never a passage that says something else."""
    first: dict = {}
    kept: list[tuple[tuple[str, ...], int]] = []  # (copies.key, index in out) of the passages kept
    out: list[SearchHit] = []
    elsewhere: list[list[Elsewhere]] = []
    for hit in hits:
        text, words_key = collapse(hit.content), copies_key(hit.content)
        at = first.get(text, first.get(words_key) if words_key is not None else None)
        if at is None and words_key is not None:  # few kept passages are within EDGE_WORDS of its length
            at = next((i for other, i in kept if abs(len(other) - len(words_key)) <= EDGE_WORDS
                       and edge_copy(words_key, other)), None)  # fmt: skip
        if at is not None:
            elsewhere[at].append(Elsewhere(hit.chunk_id, hit.document_id, hit.document_title))
        elif len(out) < k:
            first.setdefault(text, len(out))
            if words_key is not None:
                first.setdefault(words_key, len(out))
                kept.append((words_key, len(out)))
            out.append(hit)
            elsewhere.append([])
    return [replace(hit, also_in=tuple(more)) if more else hit for hit, more in zip(out, elsewhere)]
