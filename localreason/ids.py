"""Stable, opaque, URL-safe ids with a type prefix.

An id is ``<prefix>_<16 chars of lowercase base32>`` (80 bits), e.g.
``doc_k3v7q2m4xa9b5c2d``. The prefix says what it names, so a malformed id or
one of the wrong type is recognisable without a lookup.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

from .errors import ValidationError

PREFIXES = {"col": "collection", "doc": "document", "chk": "chunk"}
LISTED_BY = {"collection": "`localreason library` lists them",
             "document": "`localreason library --documents` lists them",
             "chunk": '`localreason search "..."` shows the chunk id of each passage it finds'}  # fmt: skip
"""Per kind, the command that shows its ids (tests/test_hints.py runs each)."""
_BODY_LEN = 16
_ID_RE = re.compile(r"^(col|doc|chk)_([a-z2-7]{16})$")


def _encode(raw: bytes) -> str:
    return base64.b32encode(raw).decode("ascii").lower()[:_BODY_LEN]


def derived_id(prefix: str, *parts: str) -> str:
    """An id derived from ``parts``: the same inputs always give the same id."""
    h = hashlib.blake2b("\x1f".join(parts).encode("utf-8"), digest_size=10)
    return f"{prefix}_{_encode(h.digest())}"


def random_id(prefix: str) -> str:
    """A fresh random id."""
    return f"{prefix}_{_encode(os.urandom(10))}"


def id_kind(value: str) -> str | None:
    """``'collection'``, ``'document'`` or ``'chunk'`` for a well-formed id, else None."""
    m = _ID_RE.match(value) if isinstance(value, str) else None
    return PREFIXES[m.group(1)] if m else None


def check_id(value: object, kind: str, field: str = "id") -> str:
    """Return ``value`` if it is a well-formed id of ``kind``; raise ValidationError if not."""
    prefix = next(p for p, k in PREFIXES.items() if k == kind)
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be text, an id such as '{prefix}_...', not {type(value).__name__}.",
                              hint=f"Send {field} as a string, or omit it.")  # fmt: skip
    if not value.strip():
        raise ValidationError(
            f"{field} is empty.", hint=f"Omit {field} instead of sending an empty value."
        )
    found = id_kind(value)
    if found == kind:
        return value
    if found:
        raise ValidationError(
            f"{field} {value!r} is a {found} id, not a {kind} id.",
            hint=f"{kind.capitalize()} ids start with '{prefix}_'.",
        )
    raise ValidationError(
        f"{field} {value!r} is not a valid {kind} id.",
        hint=f"{kind.capitalize()} ids look like '{prefix}_' followed by 16 letters a-z and digits 2-7; "
        f"{LISTED_BY[kind]}.",
    )
