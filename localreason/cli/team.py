"""A library a team shares: ``keys`` (API keys that see only some collections)."""

from __future__ import annotations

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
    elif not infos:
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
