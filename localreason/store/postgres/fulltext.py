"""The full-text side of the PostgreSQL store: counting and ranking passages by their index words, with FTS5's
BM25 (store/postgres/lexical.py says what is computed; this module says how PostgreSQL computes it fast).

- **How many passages hold a word** is read from ``lexemes`` (word -> passages holding it), kept exact by every
  write in the same transaction, with the paragraphs' count and total length in ``meta``: FTS5 keeps the same
  statistics in its index. Counting a common word's passages through the GIN index would visit each of them
  (17 ms a word at 200,000 passages, in a one-off profile: docs/history/42-team-library.md, run 1). A phrase, or a query of several terms, is counted through the index.
- **BM25** of the single words is computed in SQL from their postings (``postings``: word, passage, frequency,
  length), and only the best are fetched; a passage that holds one of the query's phrases is scored whole here
  (its words and its phrases, from its positions). The result is FTS5's ranking, to rounding, except for a
  phrase held by more than PHRASE_ROWS passages (see there).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...textquery import TextQuery
from ...types import LEVEL_PARAGRAPH
from . import lexical

_P = LEVEL_PARAGRAPH
PHRASE_ROWS = 2000
"""A phrase held by more passages than this is scored only on the passages its words' ranking chose (FTS5 scores
it on all of them; in a library this large, reading every such passage's positions cost seconds:
bench/speed/postgres.py). Below it, the ranking is FTS5's exactly. A round number, not swept: its effect (p95 701 ->
254 ms, found@10 0.93 -> 0.94 at 200,000 passages) was measured on the benchmark's own questions only."""


class FullText:
    """Mixed into PgStore: ``self.db`` is its connection, ``self._scope_sql`` its scope filter."""

    # ------------------------------------------------------------ keeping the statistics (inside a write)

    def _count_words(self, where: str, args: Sequence, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) the paragraphs selected by ``where`` from ``lexemes`` and the
        totals; called in the write's transaction, before a delete or after an insert."""
        self.db.execute(
            f"""INSERT INTO lexemes (word, n)
                SELECT u.lexeme, {sign} * count(*) FROM chunks c, unnest(c.tsv) u
                WHERE c.level = {_P} AND {where} GROUP BY u.lexeme
                ON CONFLICT (word) DO UPDATE SET n = lexemes.n + excluded.n""", args)  # fmt: skip
        rows, words = self.db.execute(f"SELECT count(*), COALESCE(sum(c.words), 0) FROM chunks c "
                                      f"WHERE c.level = {_P} AND {where}", args).fetchone()  # fmt: skip
        for key, delta in (("text_rows", rows), ("text_words", words)):
            self.db.execute("UPDATE meta SET value = (value::bigint + %s)::text WHERE key = %s",
                            (sign * int(delta), key))  # fmt: skip

    def _post_words(self, document_id: str) -> None:
        """Write the postings of a document's paragraphs (in its write's transaction, after its chunks)."""
        self.db.execute(f"""INSERT INTO postings (word, rowid, tf, words)
                            SELECT u.lexeme, c.rowid, array_length(u.positions, 1), c.words FROM chunks c,
                            unnest(c.tsv) u WHERE c.document_id = %s AND c.level = {_P}""", (document_id,))

    # ------------------------------------------------------------ reading

    def _text_stats(self) -> tuple[int, float]:
        """(paragraphs, their mean length in index words)."""
        rows = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN ('text_rows', 'text_words')").fetchall())
        n, total = int(rows.get("text_rows", 0)), int(rows.get("text_words", 0))
        return n, (total / n if n else 0.0)

    def _holding(self, words: list[str]) -> dict[str, int]:
        """Passages holding each word (library-wide)."""
        rows = self.db.execute("SELECT word, n FROM lexemes WHERE word = ANY(%s)", (words,)).fetchall()
        found = dict(rows)
        return {w: int(found.get(w, 0)) for w in words}

    def match_count(self, query: TextQuery, upto: int | None = None,
                    collection_ids: Sequence[str] | None = None) -> int:  # fmt: skip
        """How many paragraph chunks match a lexical query (in those collections, when given; counting stops at
        ``upto``, if given)."""
        if query.blank:
            return 0
        phrases = lexical.phrases(query)
        if collection_ids is None and len(phrases) == 1 and len(phrases[0]) == 1:
            n = self._holding(phrases[0])[phrases[0][0]]
            return n if upto is None else min(n, upto)
        where, args = self._scope_sql(None, collection_ids)
        limit = "" if upto is None else f" LIMIT {int(upto)}"
        return self.db.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM chunks c WHERE c.level = {_P} AND c.tsv @@ "
                               f"%s::tsquery{where}{limit}) s", [lexical.tsquery_literal(query), *args]).fetchone()[0]

    def fts_ranking(self, query: TextQuery, k: int, document_id: str | None = None,
                    collection_ids: Sequence[str] | None = None) -> list[tuple[int, float]]:  # fmt: skip
        """(rowid, BM25 score, higher is better) of the best ``k`` paragraph chunks for a lexical query."""
        if query.blank:
            return []
        phrases = lexical.phrases(query)
        singles = sorted({p[0] for p in phrases if len(p) == 1})
        holding = self._holding(sorted({w for p in phrases for w in p}))
        multi = [p for p in phrases if len(p) > 1]
        counted = {tuple(p): self._phrase_count(p, holding) for p in multi}
        total, mean = self._text_stats()
        where, args = self._scope_sql(document_id, collection_ids)
        scores: dict[int, float] = {}
        if singles and not (query.every and multi):  # an all-of query with phrases: the phrases' passages decide
            scores = dict(self._word_scores(singles, holding, total, mean, k, where, args, query.every))
        if multi:  # the passages holding a phrase, scored whole (words and phrases)
            rare = [p for p in multi if not counted[tuple(p)][1]]
            found = lexical.tsquery_literal(query) if query.every else \
                lexical.tsquery_literal(TextQuery(tuple(" ".join(p) for p in rare))) if rare else None  # fmt: skip
            rows = self.db.execute(
                f"""SELECT c.rowid, c.words, u.lexeme, u.positions FROM chunks c, unnest(c.tsv) u
                    WHERE c.level = {_P}{where} AND ({'c.tsv @@ %s::tsquery OR ' if found else ''}c.rowid = ANY(%s))
                    AND u.lexeme = ANY(%s)""",
                [*args, *([found] if found else []), list(scores), sorted(holding)]).fetchall()  # fmt: skip
            counts = [holding[p[0]] if len(p) == 1 else counted[tuple(p)][0] for p in phrases]
            full = lexical.bm25(((r[0], r[1], r[2], list(r[3])) for r in rows), query, counts, total, mean,
                                len(rows) or 1)  # fmt: skip
            scores.update(full)
        return sorted(scores.items(), key=lambda rs: (-rs[1], rs[0]))[:k]

    def _phrase_count(self, words: list[str], holding: dict[str, int]) -> tuple[int, bool]:
        """(passages holding the phrase, whether it is common). A phrase in more than PHRASE_ROWS passages is
        common: its count is taken as its rarest word's (an upper bound; its weight is small either way), and only
        the passages the words' ranking chose, or a rare phrase holds, are scored for it."""
        n = self.match_count(TextQuery((" ".join(words),)), upto=PHRASE_ROWS + 1)
        if n <= PHRASE_ROWS:
            return n, False
        return min(holding[w] for w in words), True

    def _word_scores(self, words: list[str], holding: dict[str, int], total: int, mean: float, k: int, where: str,
                     args: list, every: bool) -> list[tuple[int, float]]:  # fmt: skip
        """The best ``k`` passages by the BM25 of the query's single words, computed in the database from their
        postings (with ``every``, only passages holding them all)."""
        weights = [lexical.idf(total, holding[w]) for w in words]
        scoped = f" AND p.rowid IN (SELECT c.rowid FROM chunks c WHERE c.level = {_P}{where})" if where else ""
        having = f" HAVING count(*) = {len(words)}" if every else ""
        rows = self.db.execute(
            f"""SELECT p.rowid, sum(q.weight * p.tf * {lexical.K1 + 1} / (p.tf + {lexical.K1} * (1 - {lexical.B}
                       + {lexical.B} * p.words / %s::float8))) AS score
                FROM unnest(%s::text[], %s::float8[]) q(word, weight) JOIN postings p ON p.word = q.word{scoped}
                GROUP BY p.rowid{having} ORDER BY score DESC, p.rowid LIMIT %s""",
            [mean or 1.0, words, weights, *args, int(k)]).fetchall()  # fmt: skip
        return [(r[0], float(r[1])) for r in rows]
