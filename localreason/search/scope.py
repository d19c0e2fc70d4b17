"""Where a search may look (ResolvedScope, resolve_scope) and the validation of every search input."""

from __future__ import annotations

import math
import numbers
import re
import reprlib
import unicodedata
from dataclasses import dataclass


from ..errors import ValidationError
from ..ids import check_id
from .index import Index

MAX_QUERY_CHARS = 2000
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_EVIDENCE_LIMIT = 50
MAX_EVIDENCE_LIMIT = 50
DEFAULT_MAX_TOKENS = 8000

UNSET: object = object()
"""Default of optional scope arguments: "omitted", as opposed to an explicit None or empty string."""


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
    if all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in q):  # nothing but spaces and invisible marks
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


def clean_id(value: object) -> str:
    """A chunk id with its edges trimmed; an empty or non-text one is refused (check_id judges the rest)."""
    if not isinstance(value, str):
        raise ValidationError(f"The chunk id must be text (chk_...), not {type(value).__name__}.",
                              hint="Send the chunk id as a string.")  # fmt: skip
    if not value.strip():
        raise ValidationError("The chunk id is empty.", hint="Give a chunk id (chk_...).")
    return value.strip()


# ---------------------------------------------------------------- scope


Grant = frozenset | None
"""The collection ids an API key may see (keys.py); None: every collection (the library's owner, the main key)."""


@dataclass(frozen=True)
class ResolvedScope:
    """Where a search may look: everywhere, one document, one collection, or (a valid but empty selection) nowhere;
    and, for a key granted some collections only, never outside them."""

    document_id: str | None = None
    collection_id: str | None = None
    empty: bool = False
    granted: tuple[str, ...] | None = None
    """The collections the asker may see (sorted); None: all."""

    @property
    def scoped(self) -> bool:
        """Whether the asker chose a document or collection (a key's grant alone does not make a search scoped)."""
        return self.document_id is not None or self.collection_id is not None

    @property
    def collections(self) -> tuple[str, ...] | None:
        """The collections searched: the chosen one, else the granted ones; None: every collection."""
        return (self.collection_id,) if self.collection_id is not None else self.granted


def resolve_scope(index: Index, document_id: object = UNSET, collection_id: object = UNSET,
                  grant: Grant = None) -> ResolvedScope:  # fmt: skip
    """Validate scope fields as the spec says: omitted = unscoped, empty/null = error, unknown = empty scope. A
    document or collection outside ``grant`` is as unknown: an empty scope, never a search elsewhere."""
    values = {}
    for field, value, kind in (("documentId", document_id, "document"), ("collectionId", collection_id, "collection")):
        if value is UNSET:
            continue
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValidationError(f"{field} is {'null' if value is None else 'empty'}.",
                                  hint="Omit unused scope fields instead of sending empty or null values.")  # fmt: skip
        values[field] = check_id(value, kind, field)
    doc_id, col_id = values.get("documentId"), values.get("collectionId")
    granted = tuple(sorted(grant)) if grant is not None else None
    if doc_id is None and col_id is None:
        return ResolvedScope(granted=granted, empty=granted == ())
    empty = False
    if doc_id is not None:
        doc = index.store.document_row(doc_id)
        empty = doc is None or (col_id is not None and doc.collection_id != col_id) \
            or (grant is not None and doc.collection_id not in grant)  # fmt: skip
    if col_id is not None and not empty:
        empty = (grant is not None and col_id not in grant) or not index.store.collection_exists(col_id)
    return ResolvedScope(doc_id, col_id, empty, granted)
