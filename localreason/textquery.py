"""The lexical query as a value: what search asks the full-text index for; each store renders it in its own syntax.

Search builds a :class:`TextQuery` (terms, any or all of them); the SQLite store renders it as an FTS5 MATCH
expression (store/db.py ``fts5``), the PostgreSQL store as a tsquery over its own index words
(store/postgres/lexical.py). A term of several index words is a phrase: the words in order, adjacent.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_INDEX_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class TextQuery:
    """Passages holding any of ``terms`` (all of them when ``every``)."""

    terms: tuple[str, ...]
    every: bool = False

    @classmethod
    def any_of(cls, terms) -> "TextQuery":
        return cls(tuple(terms))

    @classmethod
    def all_of(cls, terms) -> "TextQuery":
        return cls(tuple(terms), every=True)

    @property
    def blank(self) -> bool:
        return not any(index_words(t) for t in self.terms)


def index_words(text: str) -> list[str]:
    """The words the full-text index holds for ``text``, as SQLite's tokenizer makes them (unicode61,
    remove_diacritics 2, "_" kept inside words): runs of letters, digits and "_", lower-cased, accents removed."""
    return _INDEX_WORD.findall(without_accents(text.lower()))


def without_accents(text: str) -> str:
    """``text`` with its accents removed ("Beyoncé" / "Beyonce"), as the full-text index holds words."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
