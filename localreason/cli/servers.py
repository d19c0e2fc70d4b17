"""The commands that keep running: watch, serve and mcp."""

from __future__ import annotations

import sys
from contextlib import nullcontext

import click

from ..config import API_KEY_ENV
from .app import cli
from .common import Ctx, console, file_line, print_report, progress_callback


EXAMPLES_WATCH = """
\b
Examples:
  localreason watch                          # every folder and file ingested before
  localreason watch ~/notes -c notes         # ingest ~/notes into 'notes', then follow it
  localreason serve --watch                  # serve the library and follow its folders
"""


@cli.command(epilog=EXAMPLES_WATCH)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("-c", "--collection", default=None,
              help="Only this collection's folders; with PATHS, the collection for paths not ingested before "
              "(default: 'default').")  # fmt: skip
@click.option("--include", multiple=True, metavar="GLOB", help="With PATHS: only files matching this (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="With PATHS: leave out files matching this.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_obj
def watch(obj: Ctx, paths, collection, include, exclude, quiet) -> int:
    """Follow folders: re-ingest a file when it changes, remove a document when its file is deleted.

    With no PATHS: every folder and file ingested before (those `localreason sync` re-checks), and those
    ingested later.
    First each is read again, as `ingest` does; then one line per change is printed, as `ingest` reports a
    file. A folder that disappears (an unmounted drive) keeps its documents. Ctrl+C stops (exit 0).
    """
    from ..signals import stop_signals
    from ..watch import Listener, Watcher, roots_for

    svc = obj.service()
    roots = roots_for(svc, list(paths), collection, tuple(include), tuple(exclude)) if paths else None
    if roots is None and not svc.library.sources(collection):
        from ..errors import ValidationError
        from ..library import elsewhere_note, sources_elsewhere

        others = sources_elsewhere(svc.library, collection)
        raise ValidationError("Nothing to watch: " + (elsewhere_note(others) if others else
                              "no folder or file was ingested yet."), hint="Name one: localreason watch ~/notes -c notes")
    bar, update = progress_callback(not quiet and sys.stderr.isatty())
    listener = Listener(notice=lambda message: click.echo(message, err=True),
                        report=lambda report, catch_up: _print_changes(report, catch_up, bar), progress=update)
    watcher = Watcher(svc, roots, listener, collection=collection)
    try:
        with stop_signals(), bar or nullcontext():  # Ctrl+C stops it even in a background job that ignores SIGINT
            watcher.run()
    except KeyboardInterrupt as stop:  # Ctrl+C: the way to stop
        report = getattr(stop, "report", None)
        if report is not None:
            _print_changes(report, False, None)
        click.echo("Stopped watching." + (" The change being written was cut short: what was finished is kept, "
                                          "and the next watch or sync does the rest." if report else ""), err=True)
    return 0


def _print_changes(report, catch_up: bool, bar) -> None:
    """What a watch wrote: after reading a root again, ingest's summary when something was written or failed; for
    changes as they happen, one line a file (what stayed the same is not shown)."""
    if bar is not None:
        for task in list(bar.task_ids):
            bar.remove_task(task)
    changed = [f for f in report.files if f.status != "unchanged"]
    if catch_up:
        if any(f.status not in ("unchanged", "skipped") for f in changed):
            print_report(report, verbose=False)
        return
    out = console()
    for f in changed:
        out.print(file_line(f))


WATCH_HELP = "Also follow the library's folders: changes are applied as they happen (see `localreason watch`)."


@cli.command()
@click.option("--watch", is_flag=True, help=WATCH_HELP)
@click.option("--http", "over_http", is_flag=True,
              help="Serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio (assistants on other machines).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help=f"With --http: the address to listen on. Other than loopback needs {API_KEY_ENV}.")  # fmt: skip
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="With --http: the port.")
@click.pass_obj
def mcp(obj: Ctx, watch, over_http, host, port) -> int:
    """Serve the library to MCP clients (desktop assistants, editors, agents) over stdio.

    \b
    Five read-only tools: find_items, deep_search, deep_read, deep_expand, reason.
    Add it to a client as the command `localreason mcp` (with LOCALREASON_HOME set
    to use another library); see the README for configuration snippets.
    With --http the same tools answer over streamable HTTP at http://HOST:PORT/mcp,
    with REST's rules: loopback only unless LOCALREASON_API_KEY is set, which
    clients then send as Authorization: Bearer <key>.
    """
    if over_http:
        from ..serve.mcp_http import run_http

        run_http(obj.home, host=host, port=port, watch=watch)
        return 0
    from ..serve.mcp import run

    run(obj.home, watch=watch)
    return 0


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help=f"Address to listen on. Other than loopback needs {API_KEY_ENV}.")  # fmt: skip
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--watch", is_flag=True, help=WATCH_HELP)
@click.pass_obj
def serve(obj: Ctx, host, port, watch) -> int:
    """Serve the library over HTTP: POST /v1/reason and the retrieval tools (see /openapi.json).

    \b
    Examples:
      localreason serve                          # http://127.0.0.1:8765
      curl -s localhost:8765/v1/reason -H 'Content-Type: application/json' -d '{"query": "..."}'
      LOCALREASON_API_KEY=<a long random key> localreason serve --host 0.0.0.0   # 16 characters at least
      localreason serve --watch                  # and apply changes to the library's folders as they happen
    """
    from ..serve.rest import run

    run(obj.home, host=host, port=port, watch=watch)
    return 0
