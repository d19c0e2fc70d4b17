"""Full text on PostgreSQL with the meaning SQLite's FTS5 gives it: the same index words, phrases, and BM25.

The hybrid fusion (search/ranking.py) standardises BM25 scores and lifts rare words by how many passages hold them,
so the lexical ranking must mean the same on both stores. PostgreSQL's own parser splits words otherwise
(``copy_tree`` into two, ``shutil.copytree`` kept as a host name) and its ts_rank is not BM25. So:

- **Index words are ours.** Each paragraph's ``tsv`` is written from ``textquery.index_words`` (FTS5's
  unicode61 rule: runs of letters, digits and "_", lower-cased, accents removed), with positions, the text's words
  then its index terms (``chunks.terms``) after a gap, as FTS5 keeps them in two columns. The GIN index on ``tsv``
  finds the passages; the query is a tsquery literal of the same words (``'shutil' <-> 'copytree'`` for a phrase),
  never passed through a dictionary.
- **BM25 is FTS5's**: for each term, idf = ln((N - n + 0.5) / (n + 0.5)) (1e-6 when not positive), with N the
  paragraphs and n those holding the term (library-wide, as FTS5 counts it, also for a scoped search), k1 = 1.2,
  b = 0.75, the passage's length in index words against the mean. The term frequencies are read from the matching
  passages' positions and scored here.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from ...textquery import TextQuery, index_words

K1 = 1.2
B = 0.75
TERMS_GAP = 100
"""Positions skipped between a passage's text and its index terms (a phrase never spans the two)."""
MAX_WORD_BYTES = 2046
"""PostgreSQL's longest lexeme: a longer "word" (a long hex string) is left out of the index (never of the length)."""
MAX_POSITION = 16383
"""PostgreSQL's largest tsvector position (later words share it: only phrase matching that far in is affected)."""


def tsvector_literal(text: str, terms: str = "") -> tuple[str, int]:
    """(the tsvector of a passage as a literal, its length in index words)."""
    words = index_words(text)
    extra = index_words(terms)
    positions: dict[str, list[int]] = defaultdict(list)
    for i, w in enumerate(words):
        positions[w].append(min(i + 1, MAX_POSITION))
    for i, w in enumerate(extra):
        positions[w].append(min(len(words) + TERMS_GAP + i + 1, MAX_POSITION))
    parts = [f"{_quoted(w)}:{','.join(map(str, sorted(set(p))[:256]))}" for w, p in positions.items()
             if len(w.encode("utf-8")) <= MAX_WORD_BYTES]  # fmt: skip
    return " ".join(parts), len(words) + len(extra)


def _quoted(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def phrases(query: TextQuery) -> list[list[str]]:
    """Each term of the query as its index words (a term with none is left out)."""
    return [w for w in (index_words(t) for t in query.terms) if w]


def tsquery_literal(query: TextQuery) -> str:
    """The query as a tsquery literal: each phrase its words joined by <->, the phrases by | (or & for all)."""
    parts = []
    for words in phrases(query):
        inner = " <-> ".join(_quoted(w) for w in words)
        parts.append(f"({inner})" if len(words) > 1 else inner)
    return (" & " if query.every else " | ").join(parts)


def phrase_frequency(words: list[str], positions: dict[str, list[int]]) -> int:
    """How many times the words occur in order, adjacent (a single word: its count)."""
    first = positions.get(words[0], ())
    if len(words) == 1:
        return len(first)
    rest = [set(positions.get(w, ())) for w in words[1:]]
    return sum(1 for p in first if all(p + i + 1 in s for i, s in enumerate(rest)))


def idf(total: int, holding: int) -> float:
    value = math.log((total - holding + 0.5) / (holding + 0.5))
    return value if value > 0 else 1e-6


def bm25(rows: Iterable[tuple[int, int, str, list[int]]], query: TextQuery, holding: list[int], total: int,
         mean_length: float, k: int) -> list[tuple[int, float]]:  # fmt: skip
    """(rowid, score) of the best ``k`` passages, higher is better. ``rows``: (rowid, length, word, positions) of
    the matching passages' query words; ``holding``: passages holding each phrase (library-wide)."""
    by_row: dict[int, dict[str, list[int]]] = defaultdict(dict)
    lengths: dict[int, int] = {}
    for rowid, length, word, pos in rows:
        by_row[rowid][word] = pos
        lengths[rowid] = length
    wanted = phrases(query)
    weights = [idf(total, n) for n in holding]
    mean = mean_length or 1.0
    scored = []
    for rowid, positions in by_row.items():
        norm = K1 * (1 - B + B * lengths[rowid] / mean)
        freqs = [phrase_frequency(words, positions) for words in wanted]
        if query.every and not all(freqs):
            continue
        score = sum(w * f * (K1 + 1) / (f + norm) for w, f in zip(weights, freqs) if f)
        if score > 0:
            scored.append((rowid, score))
    scored.sort(key=lambda rs: (-rs[1], rs[0]))
    return scored[:k]
