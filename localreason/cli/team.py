"""A library a team shares: ``keys`` (API keys that see only some collections) and ``store copy`` (moving a library
between this folder and PostgreSQL)."""

from __future__ import annotations

import sys

import click

from .app import cli
from .common import Ctx, emit_json


@cli.group()
def keys() -> None:
    """API keys for `localreason serve` and `mcp --http` that see only the collections granted to them.

    \b
    The library keeps a digest of each key, never the key: it is printed once, when added.
    LOCALREASON_API_KEY stays the key that sees everything.
    """


@keys.command(name="add")
@click.argument("name")
@click.option("-c", "--collection", "collections", multiple=True, required=True, metavar="NAME",
              help="A collection (name or id) the key may see; repeat for more.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help='Print {"data": {"name", "key", "collections"}}.')
@click.pass_obj
def keys_add(obj: Ctx, name, collections, as_json) -> int:
    """Make a key named NAME that sees only the given collections, and print it (only now)."""
    from .. import keys as keybook

    key, info = keybook.add(obj.service().library, name, list(collections))
    if as_json:
        emit_json({"name": info.name, "key": key, "collections": list(info.collections)})
        return 0
    click.echo(key)
    click.echo(f"Key {info.name!r} sees {', '.join(info.collections)}. It is shown only now: the library keeps "
               "a digest of it. Clients send it as Authorization: Bearer <key> (or API-Key <key>).", err=True)
    return 0


@keys.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def keys_list(obj: Ctx, as_json) -> int:
    """The keys (never the keys themselves): names, collections, when made."""
    from .. import keys as keybook

    infos = keybook.listing(obj.service().library)
    if as_json:
        emit_json([i.to_dict() for i in infos])
        return 0
    if not infos:
        click.echo("No keys. `localreason keys add NAME --collection C` makes one.")
    for i in infos:
        click.echo(f"{i.name}  sees {', '.join(i.collections)}  (made {i.created_at})")
    return 0


@keys.command(name="remove")
@click.argument("name")
@click.pass_obj
def keys_remove(obj: Ctx, name) -> int:
    """Remove the key named NAME: requests bringing it are refused from now on, on every server."""
    from .. import keys as keybook

    keybook.remove(obj.service().library, name)
    click.echo(f"Removed the key {name!r}.")
    return 0


@cli.group(name="store")
def store_group() -> None:
    """The store a library lives in: this folder (local) or a PostgreSQL server (LOCALREASON_STORE)."""


@store_group.command(name="copy")
@click.option("--to", "to_url", metavar="URL", help="Copy the local library (in --home) into this PostgreSQL store.")
@click.option("--from", "from_url", metavar="URL", help="Copy the library in this PostgreSQL store into --home.")
@click.option("--json", "as_json", is_flag=True, help="Print the copy's counts and digest as JSON.")
@click.pass_obj
def store_copy(obj: Ctx, to_url, from_url, as_json) -> int:
    """Copy a library between this folder and PostgreSQL, vectors included (nothing is embedded again).

    \b
    The target must be empty. Counts and a content digest are compared at the end.
    Then point every machine at it: LOCALREASON_STORE=postgresql://...
    """
    from ..config import load_settings, redacted_url
    from ..errors import LibraryError, ValidationError
    from ..store.db import Store
    from ..store.postgres.store import PgStore
    from ..store.transfer import copy_library

    if bool(to_url) == bool(from_url):
        raise ValidationError("Give exactly one of --to URL or --from URL.",
                              hint="localreason store copy --to postgresql://user@host/db")  # fmt: skip
    url = to_url or from_url
    if not url.startswith(("postgresql://", "postgres://")):
        raise ValidationError(f"{redacted_url(url)!r} is not a postgresql:// URL.",
                              hint="Give the store as postgresql://user:password@host:port/database.")  # fmt: skip
    settings = load_settings(obj.home)
    if to_url and not settings.db_path.is_file():
        raise LibraryError(f"There is no library in {settings.home} to copy.",
                           hint="`store copy --to` copies the local library of --home (LOCALREASON_HOME); to move a "
                           "library between two PostgreSQL stores, copy it --from one into an empty folder, then "
                           "--to the other.")  # fmt: skip
    remote = PgStore(url)  # first: a store that cannot be reached leaves no empty library in the folder
    try:
        local = Store(settings.db_path)
    except BaseException:
        remote.close()
        raise
    source, target = (local, remote) if to_url else (remote, local)
    say = lambda line: click.echo(line, err=True)  # noqa: E731
    try:
        with click.progressbar(length=max(1, len(source.document_ids())), label="Copying documents",
                               file=sys.stderr) as bar:  # fmt: skip
            done = copy_library(source, target, lambda i, n: bar.update(1), say)
    finally:
        local.close()
        remote.close()
    if as_json:
        emit_json({"from": redacted_url(from_url) if from_url else "local", "to": redacted_url(to_url) if to_url
                   else "local", **done.to_dict()})  # fmt: skip
        return 0
    click.echo(f"Copied {done.documents} documents ({done.chunks} chunks, {done.collections} collections, "
               f"{done.keys} keys) into {redacted_url(to_url) if to_url else 'this folder'}; the counts and the "
               f"content digest agree.")  # fmt: skip
    if to_url:
        click.echo(f"Use it with LOCALREASON_STORE={redacted_url(to_url)} (with its password) on every machine.")
    return 0
