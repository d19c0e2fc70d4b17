"""API keys that see only the collections granted to them.

    localreason keys add team-a --collection handbook --collection policies   # prints the key, once
    localreason keys list
    localreason keys remove team-a

A key is 32 random bytes (``lrk_`` and 43 URL-safe characters). The library keeps only its SHA-256 digest, with
its name and the ids of its collections: a key that leaks from a backup of the library cannot be read back out of
it. (A slow hash buys nothing for a random 256-bit secret; it would only slow every request.) The servers (REST,
MCP over HTTP) look the digest up on every request, so a key added or removed on any machine that shares the
library counts at once. ``LOCALREASON_API_KEY`` stays the key that sees everything.

What a granted key sees is enforced below the front ends: every search, read and answer takes the grant
(``search.Grant``), and an id outside it is answered as a missing one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import dataclass

from .errors import NotFoundError, ValidationError

KEY_PREFIX = "lrk_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class KeyInfo:
    """A key as listed: never the key itself."""

    name: str
    collections: tuple[str, ...]
    """The granted collections' names (an id whose collection was removed since is shown as the id)."""
    collection_ids: tuple[str, ...]
    created_at: str

    def to_dict(self) -> dict:
        return {"name": self.name, "collections": list(self.collections), "collectionIds": list(self.collection_ids),
                "createdAt": self.created_at}  # fmt: skip


def digest(key: str) -> str:
    """What the library keeps of a key."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip()):
        raise ValidationError(f"{name!r} is not a usable key name.",
                              hint="Use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit.")
    return name.strip()


def add(lib, name: str, collections: list[str]) -> tuple[str, KeyInfo]:
    """A new key granted ``collections`` (names or ids, each must exist): (the key, shown only now, its listing)."""
    name = check_name(name)
    if not collections:
        raise ValidationError("A key needs at least one collection.",
                              hint="Name each collection it may see: --collection NAME (repeatable). The key "
                              "in LOCALREASON_API_KEY is the one that sees everything.")  # fmt: skip
    found = {c.id: c.name for c in (lib.collection(c) for c in collections)}
    key = new_key()
    with lib.writing(f"keys add {name}"):  # a write like any other: never in the middle of a store copy
        made = lib.store.insert_key(name, digest(key), sorted(found))
    if not made:
        raise ValidationError(f"A key named {name!r} exists already.",
                              hint=f"Remove it first (`localreason keys remove {name}`) or choose another name.")
    return key, KeyInfo(name, tuple(found[i] for i in sorted(found)), tuple(sorted(found)), "")


def listing(lib) -> list[KeyInfo]:
    names = {c.id: c.name for c in lib.store.collection_rows()}
    return [KeyInfo(name, tuple(names.get(i, i) for i in ids), tuple(ids), created)
            for name, ids, created in lib.store.key_rows()]  # fmt: skip


def remove(lib, name: str) -> None:
    name = check_name(name)
    with lib.writing(f"keys remove {name}"):
        removed = lib.store.delete_key(name)
    if not removed:
        raise NotFoundError(f"No key named {name!r} in this library.", hint="`localreason keys list` lists them.")


def library_has_keys(home) -> bool:
    """Whether the library at ``home`` (a folder, None for the configured one) holds any key."""
    from .config import load_settings
    from .library import open_store

    store = open_store(load_settings(home))
    try:
        return store.has_keys()
    finally:
        store.close()


class KeyRefused(Exception):
    """A presented key is not one this library knows."""


class KeyCheck:
    """What a server asks of every request's key: the main key sees everything; a key of the library sees its
    collections; any other key sees nothing. Reads the library's keys through a store connection of its own."""

    def __init__(self, main_key: str | None, open_store=None) -> None:
        self.main = main_key.encode("utf-8") if main_key else None
        self._open = open_store
        self._store = None
        self._lock = threading.Lock()

    def _keys(self):
        if self._open is None:
            return None
        if self._store is None:
            self._store = self._open()
        return self._store

    def required(self) -> bool:
        """Whether requests need a key: the main key is set, or the library holds keys."""
        if self.main is not None:
            return True
        with self._lock:
            store = self._keys()
            return store is not None and store.has_keys()

    def grant(self, token: bytes) -> frozenset | None:
        """What a presented key sees: None (everything) or a frozenset of collection ids; KeyRefused when the key
        is neither the main key nor one of the library's."""
        if self.main is not None and token and hmac.compare_digest(token, self.main):
            return None
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise KeyRefused() from None
        with self._lock:
            store = self._keys()
            ids = store.key_grant(digest(text)) if store is not None and text.startswith(KEY_PREFIX) else None
        if ids is None:
            raise KeyRefused()
        return frozenset(ids)

    def close(self) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None
