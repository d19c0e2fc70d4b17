"""Retrieval over a library: find_items, deep_search, deep_read, deep_expand, progressive search, packets.

All functions take a :class:`~localreason.library.Library` and return small typed
values from :mod:`localreason.types`. Similarity scores never leave this module.

Hybrid search fuses a dense ranking (FAISS inner product over unit vectors, i.e.
cosine) with a lexical one (SQLite FTS5 BM25). Each list's scores are turned into
z-scores over its own top candidates, so the two scales meet on equal terms; a
chunk missing from one list takes that list's lowest observed value; the fused
score is a weighted sum. The weight was chosen by measurement on SQuAD (see
docs/benchmarks.md and scripts/bench_retrieval.py, which also reports plain
reciprocal rank fusion).
"""

from __future__ import annotations

import math
import numbers
import re
import reprlib
from dataclasses import dataclass
from html import escape

import numpy as np

from .errors import ValidationError
from .ids import check_id
from .tokens import encoding
from .types import (LEVEL_DOCUMENT, LEVEL_SECTION, EvidencePacket, Evidence, ExpandResult,
                    ItemHit, PacketChunk, SearchHit)  # fmt: skip

MAX_QUERY_CHARS = 2000
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_EVIDENCE_LIMIT = 50
MAX_EVIDENCE_LIMIT = 50
DEFAULT_MAX_TOKENS = 8000
DIRECTIONS = ("up", "down", "previous", "next", "surrounding")

# Fusion: weight of the dense z-score (the lexical one gets 1 - this); see the module docstring.
DENSE_WEIGHT = 0.45
CANDIDATES = 100
"""How many candidates each ranking contributes before fusion."""

# Progressive search.
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
coverage even when some passage is loosely similar. Calibrated on SQuAD (scripts/tune_reason.py)."""

RARE_MATCHES = 1
"""A query word found in at most this many passages names them (a code, an identifier, a rare name):
they are lifted above the passages that match only the query's other words. 1 keeps SQuAD's MRR@10 at
0.868; 2 and 3 cost it 0.002 and 0.003 (scripts/bench_retrieval.py, docs/benchmarks.md)."""

UNSET: object = object()
"""Default of optional scope arguments: "omitted", as opposed to an explicit None or empty string."""

_STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers him his how i if in into is it its itself just me more most my no nor not now of off on once only "
    "or other our ours out over own same she should so some such than that the their theirs them then there "
    "these they this those through to too under until up very was we were what when where which while who whom "
    "why will with would you your yours".split()
)  # fmt: skip
_WORD = re.compile(r"\w+", re.UNICODE)


# ---------------------------------------------------------------- validation


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
"""Control characters other than tab and line breaks (NUL, escape sequences, C1 codes): they mean nothing
in a question and break the full-text index's query syntax, so clean_query turns each into a space."""


def clean_query(query: object) -> str:
    """The query with control characters turned into spaces and its edges trimmed.

    Text that is not valid Unicode (lone surrogates: what Python makes of non-UTF-8 bytes on a
    command line), blank queries and queries over MAX_QUERY_CHARS are refused with ValidationError.
    """
    if not isinstance(query, str):
        raise ValidationError(f"The query must be text, not {type(query).__name__}.",
                              hint="Pass the question as a string.")  # fmt: skip
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError("The query contains bytes that are not valid UTF-8.",
                              hint="Retype the question, or set the terminal (or the file the questions come "
                              "from) to UTF-8.") from None  # fmt: skip
    q = _CONTROL.sub(" ", query).strip()
    if not q:
        raise ValidationError("The query is blank.", hint="Ask a question with at least one word in it.")
    if len(q) > MAX_QUERY_CHARS:
        raise ValidationError(f"The query is {len(q):,} characters long; the limit is {MAX_QUERY_CHARS:,}.",
                              hint="Ask a shorter question; search for the key words.")  # fmt: skip
    return q


def _number(value: object, name: str, kind: str) -> int | float:
    """``value`` as a finite number (whole numbers stay exact however large), or ValidationError.

    Booleans, None, NaN, infinities and text that is not a number are refused.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ValidationError(f"{name} must be {kind}, not {reprlib.repr(value)}.")
    try:
        if isinstance(value, numbers.Integral) or (isinstance(value, str) and value.strip().lstrip("+-").isdigit()):
            return int(value)
        number = float(value)
    except (ValueError, OverflowError, UnicodeError):
        raise ValidationError(f"{name} must be {kind}, not {reprlib.repr(value)}.") from None
    if not math.isfinite(number):
        raise ValidationError(f"{name} must be a finite number, not {reprlib.repr(value)}.")
    return number


def clamp_limit(limit: object, default: int, maximum: int, name: str = "limit") -> int:
    """An integer in 1..maximum. Zero and values above ``maximum`` are clamped; negatives and non-numbers refused."""
    if limit is None:
        return default
    value = _number(limit, name, "a whole number")
    if value < 0:
        raise ValidationError(f"{name} cannot be negative (got {reprlib.repr(limit)}).", hint=f"Use 1 to {maximum}.")
    return max(1, min(int(value), maximum))


def clean_max_tokens(max_tokens: object) -> int:
    """The packet budget: finite values truncated toward zero, negatives become 0, non-numbers refused."""
    if max_tokens is None:
        return DEFAULT_MAX_TOKENS
    return max(0, int(_number(max_tokens, "maxTokens", "a number")))


@dataclass(frozen=True)
class Scope:
    """Where a search may look: everywhere, one document, one collection, or (a valid but empty selection) nowhere."""

    document_id: str | None = None
    collection_id: str | None = None
    empty: bool = False

    @property
    def scoped(self) -> bool:
        return self.document_id is not None or self.collection_id is not None


def resolve_scope(lib, document_id: object = UNSET, collection_id: object = UNSET) -> Scope:
    """Validate scope fields as the spec says: omitted = unscoped, empty/null = error, unknown = empty scope."""
    values = {}
    for field, value, kind in (("documentId", document_id, "document"), ("collectionId", collection_id, "collection")):
        if value is UNSET:
            continue
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValidationError(f"{field} is {'null' if value is None else 'empty'}.",
                                  hint="Omit unused scope fields instead of sending empty or null values.")  # fmt: skip
        values[field] = check_id(value, kind, field)
    doc_id, col_id = values.get("documentId"), values.get("collectionId")
    if doc_id is None and col_id is None:
        return Scope()
    empty = False
    if doc_id is not None:
        doc = lib.store.document_row(doc_id)
        empty = doc is None or (col_id is not None and doc.collection_id != col_id)
    if col_id is not None and not empty:
        empty = not lib.store.collection_exists(col_id)
    return Scope(doc_id, col_id, empty)


def _scope_rowids(lib, scope: Scope) -> np.ndarray | None:
    if not scope.scoped:
        return None
    return lib.store.scope_rowids(scope.document_id, scope.collection_id)


# ---------------------------------------------------------------- the two rankings


def query_terms(query: str) -> list[str]:
    """Lower-case word tokens without stop words (all words if nothing else is left), in order, once each."""
    words = [w.lower() for w in _WORD.findall(query)]
    content = [w for w in words if w not in _STOPWORDS]
    return list(dict.fromkeys(content or words))


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
        phrases.append(_WORD.findall((m.group(1) or m.group(2)).lower()))
    pieces = query.split()
    for i, piece in enumerate(pieces):
        words = _WORD.findall(piece.lower())
        if len(words) >= 2 and not piece.startswith(("\"", "\u201c")) and not _APOSTROPHE.search(piece):
            phrases.append(words)
        nxt = _WORD.findall(pieces[i + 1].lower()) if i + 1 < len(pieces) else []
        if len(words) == 1 and nxt and _NUMBER.fullmatch(nxt[0]) and not _NUMBER.fullmatch(words[0]) \
                and words[0] not in _STOPWORDS and (not exact_only or _ACRONYM.fullmatch(piece)):  # fmt: skip
            phrases.append([words[0], nxt[0]])
    return list(dict.fromkeys(" ".join(p) for p in phrases if len(p) >= 2))


def _fts_quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def lexical_ranking(lib, query: str, k: int, scope: Scope, *, all_terms: bool = False,
                    terms: list[str] | None = None) -> list[tuple[int, float]]:  # fmt: skip
    """(rowid, BM25 score, higher is better) of the best ``k`` paragraph chunks matching the query.

    Given ``terms`` (or ``all_terms``), a plain match of those terms (any, or all). Otherwise
    the query's phrases (``query_phrases``) join its terms, weighed by BM25 like a rare word,
    and the passages holding what the query names are lifted above every passage that
    matches only the rest: first those with a word found in at most RARE_MATCHES passages,
    then, above them, those with a code or identifier written as it is or a quoted phrase.
    """
    if scope.empty:
        return []
    if terms is not None or all_terms:
        terms = query_terms(query) if terms is None else terms
        return _fts_ranking(lib, (" AND " if all_terms else " OR ").join(map(_fts_quote, terms)), k, scope) \
            if terms else []  # fmt: skip
    terms, phrases = query_terms(query), query_phrases(query)
    if not terms and not phrases:
        return []
    ranked = _fts_ranking(lib, " OR ".join(map(_fts_quote, terms + phrases)), k, scope)
    for named in (_rare_terms(lib, terms), query_phrases(query, exact_only=True)):  # the exact name ends on top
        if named:
            ranked = _lift(ranked, _fts_ranking(lib, " OR ".join(map(_fts_quote, named)), k, scope), k)
    return ranked


def _rare_terms(lib, terms: list[str]) -> list[str]:
    """The terms found in 1 to RARE_MATCHES paragraph chunks (counting stops there, so common words cost little)."""
    return [t for t in terms if 0 < lib.store.match_count(_fts_quote(t), upto=RARE_MATCHES + 1) <= RARE_MATCHES]


def _fts_ranking(lib, match: str, k: int, scope: Scope) -> list[tuple[int, float]]:
    """(rowid, BM25 score, higher is better) of the best ``k`` paragraph chunks for an FTS5 MATCH expression."""
    return lib.store.fts_ranking(match, k, scope.document_id, scope.collection_id)


def _lift(ranked: list[tuple[int, float]], exact: list[tuple[int, float]], k: int) -> list[tuple[int, float]]:
    """``ranked`` with the passages of ``exact`` moved above all others, BM25 order kept within each group."""
    if not exact:
        return ranked
    scores = dict(ranked)
    lift = max(scores.values(), default=0.0)
    for rowid, score in exact:
        scores[rowid] = scores.get(rowid, score) + lift
    return sorted(scores.items(), key=lambda kv: -kv[1])[:k]


def dense_ranking(lib, qvec: np.ndarray, k: int, scope: Scope) -> list[tuple[int, float]]:
    """(rowid, cosine) of the ``k`` nearest paragraph chunks."""
    if scope.empty or lib.vectors.size == 0:
        return []
    ids = _scope_rowids(lib, scope)
    if ids is not None and ids.size == 0:
        return []
    scores, rowids = lib.vectors.search(qvec, k, ids=ids)
    return [(int(r), float(s)) for r, s in zip(rowids, scores)]


def _z(scores: list[float]) -> tuple[float, float]:
    arr = np.asarray(scores, dtype=np.float64)
    return float(arr.mean()), float(arr.std()) or 1.0


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


def _hits(lib, rowids: list[int]) -> list[SearchHit]:
    """SearchHits for chunk rowids, in the given order."""
    return lib.store.hits(rowids)


@dataclass
class _Ranked:
    rowid: int
    fused: float
    cosine: float | None


def hybrid(lib, query: str, k: int, scope: Scope, candidates: int = CANDIDATES,
           qvec: np.ndarray | None = None, method: str = "zsum") -> list[_Ranked]:  # fmt: skip
    """The fused ranking (internal: carries scores). ``qvec`` saves re-embedding a known query."""
    if scope.empty:
        return []
    if qvec is None:
        qvec = lib.embedder.embed([query])[0]
    dense = dense_ranking(lib, qvec, candidates, scope)
    lexical = lexical_ranking(lib, query, candidates, scope)
    cos = dict(dense)
    fused = fuse(dense, lexical, method)
    missing = [r for r, _ in fused[:k] if r not in cos]
    if missing:  # cosine of lexical-only hits, for the relevance guard
        for r, v in lib.store.vectors_of(missing).items():
            cos[r] = float(np.dot(qvec, v))
    return [_Ranked(r, s, cos.get(r)) for r, s in fused[:k]]


# ---------------------------------------------------------------- public operations


def deep_search(lib, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                limit: object = DEFAULT_SEARCH_LIMIT) -> list[SearchHit]:  # fmt: skip
    """Passages about ``query``, best first, optionally inside one document or collection."""
    q = clean_query(query)
    k = clamp_limit(limit, DEFAULT_SEARCH_LIMIT, 100)
    scope = resolve_scope(lib, document_id, collection_id)
    return _hits(lib, [r.rowid for r in hybrid(lib, q, k, scope)])


def find_items(lib, query: str, *, limit: object = DEFAULT_SEARCH_LIMIT) -> list[ItemHit]:
    """Documents and collections about ``query``: literal title/path/name matches first, then by meaning."""
    q = clean_query(query)
    k = clamp_limit(limit, DEFAULT_SEARCH_LIMIT, 100)
    needle = q.lower()
    docs = lib.store.document_previews()
    cols = lib.store.collection_rows()
    if not docs and not cols:
        return []
    qvec = lib.embedder.embed([q])[0]
    doc_vecs = {}
    for d in docs:
        doc_vecs[d[0]] = np.frombuffer(d[5], dtype=np.float32) if d[5] is not None else _mean_chunk_vector(lib, d[0])
    scored: list[tuple[float, ItemHit]] = []
    for d in docs:
        title, path = d[2], d[3]
        literal = 2.0 if title.lower() == needle else 1.0 if needle in title.lower() or needle in path.lower() else 0.0
        vec = doc_vecs[d[0]]
        cos = float(np.dot(qvec, vec)) if vec is not None else 0.0
        scored.append((literal + cos, ItemHit(d[0], "document", title, _preview(d[4]), d[1])))
    for c in cols:
        literal = 2.0 if c.name.lower() == needle else 1.0 if needle in c.name.lower() else 0.0
        members = [doc_vecs[d[0]] for d in docs if d[1] == c.id and doc_vecs[d[0]] is not None]
        cos = 0.0
        if members:
            centre = np.mean(members, axis=0)
            cos = float(np.dot(qvec, centre / (np.linalg.norm(centre) or 1.0)))
        titles = [d[2] for d in docs if d[1] == c.id]
        preview = f"{len(titles)} document(s): " + "; ".join(titles[:5]) + (" ..." if len(titles) > 5 else "")
        scored.append((literal + cos, ItemHit(c.id, "collection", c.name, preview)))
    scored.sort(key=lambda s: -s[0])
    return [hit for score, hit in scored[:k] if score >= 0.15]


def _mean_chunk_vector(lib, doc_id: str) -> np.ndarray | None:
    vectors = lib.store.paragraph_vectors(doc_id)
    if not vectors:
        return None
    centre = np.mean(vectors, axis=0)
    return centre / (np.linalg.norm(centre) or 1.0)


def _preview(text: str, n: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[:n].rsplit(" ", 1)[0] + " …"


def deep_read(lib, chunk_id: str) -> dict:
    """One chunk in full, with its place in the tree (parent, position, siblings, children, document)."""
    chunk = lib.chunk(_clean_id(chunk_id))
    doc = lib.store.document_row(chunk.document_id)
    siblings, children = lib.store.child_count(chunk.parent_id), lib.store.child_count(chunk.id)
    hit = SearchHit.of(chunk, doc.title)
    return {**hit.to_dict(), "tokenCount": chunk.token_count, "siblingCount": siblings, "childCount": children,
            "collectionId": doc.collection_id, "sourcePath": doc.source_path}  # fmt: skip


def _clean_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("The chunk id is empty.", hint="Give a chunk id (chk_...).")
    return value.strip()


def deep_expand(lib, chunk_id: str, direction: str, *, window: object = 2) -> ExpandResult:
    """Move from a chunk through its document's tree: up, down, previous, next or surrounding."""
    if not isinstance(direction, str) or direction.strip().lower() not in DIRECTIONS:
        raise ValidationError(f"Unknown direction {direction!r}.", hint=f"Use one of: {', '.join(DIRECTIONS)}.")
    direction = direction.strip().lower()
    n = clamp_limit(window, 2, 20, "window")
    chunk = lib.chunk(_clean_id(chunk_id))
    doc = lib.store.document_row(chunk.document_id)
    title = doc.title

    def result(chunks, reason="", document=None) -> ExpandResult:
        items = tuple(SearchHit.of(c, title) for c in chunks)
        return ExpandResult(chunk.id, direction, items, "" if items or document else reason, document)

    if direction == "up":
        if chunk.level == LEVEL_SECTION:
            return result([], document={"id": doc.id, "title": doc.title, "level": LEVEL_DOCUMENT,
                                        "collectionId": doc.collection_id})  # fmt: skip
        return result([lib.store.chunk_row(chunk.parent_id)])
    if direction == "down":
        kids = [c for c in lib.store.chunk_rows(chunk.document_id) if c.parent_id == chunk.id]
        return result(sorted(kids, key=lambda c: c.index), "a paragraph-level chunk has no children")
    # Siblings in reading order across the whole document: previous/next cross section boundaries.
    same_level = lib.store.chunk_rows(chunk.document_id, chunk.level)
    same_level.sort(key=lambda c: (c.start, c.index))
    pos = next(i for i, c in enumerate(same_level) if c.id == chunk.id)
    if direction == "previous":
        return result(same_level[pos - 1:pos] if pos else [], "this is the first chunk of the document")
    if direction == "next":
        return result(same_level[pos + 1:pos + 2], "this is the last chunk of the document")
    around = same_level[max(0, pos - n):pos] + same_level[pos + 1:pos + 1 + n]
    return result(around, "the document has no other chunk at this level")


# ---------------------------------------------------------------- progressive search and the packet


def progressive_search(lib, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                       limit: object = DEFAULT_EVIDENCE_LIMIT) -> Evidence:  # fmt: skip
    """Gather a bounded, ranked evidence set with an adaptive relevance threshold.

    1. Rank by the hybrid fusion.
    2. Keep candidates whose fused z-score is at least RELATIVE_CUTOFF of the best one's, or
       MIN_Z above the pool's mean: a cutoff from this query's own score distribution.
    3. If fewer than ENOUGH_EVIDENCE pass, widen: a larger candidate pool; then the neighbours
       (previous/next paragraph) of the passing hits; then chunks containing all the query's
       rare terms (lexical-only matches), until enough evidence is found or nothing is left.
    4. The evidence is strong when its relevance (see ``relevance``) reaches RELEVANCE_GUARD.
    """
    q = clean_query(query)
    k = clamp_limit(limit, DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT)
    scope = resolve_scope(lib, document_id, collection_id)
    steps: list[str] = []
    if scope.empty:
        return Evidence(q, (), False, True, ("the scope selects nothing: no document or collection matches",))
    ranked = hybrid(lib, q, max(k * 2, 20), scope)
    steps.append(f"hybrid ranking: {len(ranked)} candidates")
    chosen = _passing(ranked, k)
    steps.append(f"adaptive threshold kept {len(chosen)}")
    if len(chosen) < ENOUGH_EVIDENCE and len(ranked) >= max(k * 2, 20):
        ranked = hybrid(lib, q, CANDIDATES * 3, scope, candidates=CANDIDATES * 3)
        chosen = _passing(ranked, k)
        steps.append(f"widened the pool to {len(ranked)} candidates: {len(chosen)} pass")
    order = [r.rowid for r in chosen]
    if len(order) < ENOUGH_EVIDENCE and order:
        added = _neighbours(lib, order[:ENOUGH_EVIDENCE], scope)
        order = _interleave_after(order, added)[:k]
        steps.append(f"added {len(added)} neighbouring passages of the best hits")
    if len(order) < ENOUGH_EVIDENCE:
        rare = _rare_term_matches(lib, q, scope, exclude=set(order))
        order = (order + rare)[:k]
        steps.append(f"added {len(rare)} chunks containing the query's rarest terms")
    score = relevance(lib, q, ranked[:3])
    strong = bool(order) and score >= RELEVANCE_GUARD
    steps.append("evidence is strong" if strong else "evidence is weak (below the relevance guard)")
    return Evidence(q, tuple(_hits(lib, order)), strong, scope.scoped, tuple(steps), score)


def relevance(lib, query: str, top: list[_Ranked]) -> float:
    """Best cosine + COVERAGE_WEIGHT x IDF-weighted share of the query's terms found in ``top`` (internal)."""
    if not top:
        return 0.0
    best_cos = max((r.cosine for r in top if r.cosine is not None), default=0.0)
    words = set(_WORD.findall(" ".join(h.content for h in _hits(lib, [r.rowid for r in top])).lower()))
    total = lib.store.paragraph_count()
    found = weight = 0.0
    for term, df in _document_frequencies(lib, query_terms(query)):
        idf = math.log((total + 1) / (df + 0.5))
        weight += idf
        found += idf if term in words else 0.0
    return best_cos + COVERAGE_WEIGHT * (found / weight if weight else 0.0)


def _document_frequencies(lib, terms: list[str]) -> list[tuple[str, int]]:
    """(term, number of paragraph chunks containing it) for each term."""
    return [(t, lib.store.match_count(_fts_quote(t))) for t in terms]


def _passing(ranked: list[_Ranked], k: int) -> list[_Ranked]:
    if not ranked:
        return []
    scores = np.array([r.fused for r in ranked])
    mean, std = float(scores.mean()), float(scores.std()) or 1.0
    best = (scores[0] - mean) / std
    keep = [r for r in ranked if (r.fused - mean) / std >= min(best * RELATIVE_CUTOFF, MIN_Z)]
    return (keep or ranked[:1])[:k]


def _neighbours(lib, rowids: list[int], scope: Scope) -> dict[int, list[int]]:
    """Previous and next paragraph (same document) of each anchor rowid."""
    out: dict[int, list[int]] = {}
    taken = set(rowids)
    for rowid in rowids:
        out[rowid] = [r for r in lib.store.neighbours(rowid) if r not in taken]
        taken.update(out[rowid])
    return out


def _interleave_after(order: list[int], added: dict[int, list[int]]) -> list[int]:
    result = []
    for rowid in order:
        result.append(rowid)
        result += added.get(rowid, [])
    return result


def _rare_term_matches(lib, query: str, scope: Scope, exclude: set[int], limit: int = 5) -> list[int]:
    """Chunks containing all of the query's rare terms (in at most 1% of chunks; else its rarest term)."""
    total = max(1, lib.store.paragraph_count())
    dfs = sorted((n, t) for t, n in _document_frequencies(lib, query_terms(query)) if n)
    if not dfs:
        return []
    rare = [t for n, t in dfs if n <= max(1, total // 100)] or [dfs[0][1]]
    ranked = lexical_ranking(lib, query, limit + len(exclude), scope, all_terms=True, terms=rare)
    return [r for r, _ in ranked if r not in exclude][:limit]


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
        cut = ' truncated="true"' if truncated else ""
        return (f'<chunk id="{hit.chunk_id}" document="{escape(hit.document_title, quote=True)}"{cut}>\n'
                f"{escape(content, quote=False)}\n</chunk>\n")  # fmt: skip

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


def evidence_packet(lib, query: str, *, document_id: object = UNSET, collection_id: object = UNSET,
                    limit: object = DEFAULT_EVIDENCE_LIMIT, max_tokens: object = DEFAULT_MAX_TOKENS) -> EvidencePacket:
    """Progressive search, then the packet: exactly what ``reason`` sends to the model."""
    budget = clean_max_tokens(max_tokens)
    evidence = progressive_search(lib, query, document_id=document_id, collection_id=collection_id, limit=limit)
    return build_packet(evidence, budget)
