"""Setting up and looking around: config, models, demo, and tui (the terminal UI over the library)."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext
from pathlib import Path

import click

from ..config import CI_ENV
from .app import cli
from .common import Ctx, console, emit_json, print_answer, print_library, print_report, progress_callback


DEMO_QUESTION = "Where did the Black Death originate?"


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def models(obj: Ctx, as_json) -> int:
    """Show which embedding and generation models are configured and whether their files are usable."""
    from ..config import load_settings
    from ..models import describe_models, models_dirs

    settings = load_settings(obj.home)
    rows = describe_models(settings)
    if as_json:
        emit_json({"models": rows, "searched": [str(d) for d in models_dirs(settings)]})
    else:
        for r in rows:
            status = "PROBLEM" if not r["ok"] else "ok" if r["path"] else "not used"
            click.echo(f"{r['kind']:10} {r['setting']}\n           {status}: {r['path'] or r['problem']}")
        click.echo("Model names are looked up in: " + ", ".join(str(d) for d in models_dirs(settings)))
    return 0 if all(r["ok"] for r in rows) else 4


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--markdown", is_flag=True,
              help="Describe every setting and environment variable as Markdown tables (nothing is loaded).")
@click.pass_obj
def config(obj: Ctx, as_json, markdown) -> int:
    """Show the settings in force, where each came from, and the other environment variables read."""
    from ..config import config_text, environment_in_force, markdown_reference, settings_and_sources

    if markdown:
        click.echo(markdown_reference(), nl=False)
        return 0
    settings, sources = settings_and_sources(obj.home)
    if as_json:
        values = {name: getattr(settings, name) for name in ("home", *sources)}
        values["store"] = settings.store_shown
        values = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
        emit_json({"settings": values, "configFile": str(settings.config_path), "sources": sources,
                    "environment": environment_in_force()})  # fmt: skip
        return 0
    click.echo(config_text(settings, sources))
    return 0


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the ingest summary and library as JSON.")
@click.option("--tui/--no-tui", default=None,
              help="End in the TUI over the demo library (default: when run in a terminal).")
@click.pass_obj
def demo(obj: Ctx, as_json, tui) -> int:
    """Ingest the bundled sample documents, answer a sample question, then open the TUI over them."""
    from ..demo import demo_library, samples_dir

    svc = obj.service(demo_library(obj.home))
    home = svc.library.home
    bar, update = progress_callback(not as_json and sys.stderr.isatty())
    with bar or nullcontext():
        report = svc.ingest([samples_dir()], "samples", exclude=["LICENSES*", "README*"], prune=True, progress=update)
    if as_json:
        emit_json({"ingest": report.to_dict(), "collections": [c.to_dict() for c in svc.collections()],
                    "documents": [d.to_dict() for d in svc.documents()], "question": DEMO_QUESTION,
                    "answer": svc.reason(DEMO_QUESTION).to_dict()})  # fmt: skip
        return 0 if report.ok else 1
    print_report(report, verbose=False)
    print_library(svc, svc.collections(), svc.documents(), show_documents=True)
    out = console()
    out.print(f"\n[bold]Sample question:[/] {DEMO_QUESTION}\n")
    answer = svc.reason(DEMO_QUESTION)
    print_answer(answer, out)
    if tui is None:
        tui = sys.stdin.isatty() and sys.stdout.isatty() and not os.environ.get(CI_ENV)
    if tui:
        from ..session import Scope, Turn
        from ..tui import run

        run(svc, first_turn=Turn(DEMO_QUESTION, Scope(), answer))
        click.echo(f"The demo library lives in {home}. Open it again: localreason --home {home} tui")
    else:
        click.echo(f"\nThe demo library lives in {home}. Explore it: localreason --home {home} tui, "
                   f"or ask: localreason --home {home} ask \"...\"")  # fmt: skip
    return 0 if report.ok else 1


@cli.command()
@click.option("--max-tokens", default=None, show_default="the answer_budget setting, 1000 unless changed",
              help="Evidence budget of each question (more considers more passages).")
@click.option("--watch/--no-watch", default=None, show_default="the tui_watch setting, on unless changed",
              help="Follow the library's folders while the TUI runs (changes are applied as they happen).")
@click.pass_obj
def tui(obj: Ctx, max_tokens, watch) -> int:
    """Open the terminal UI over your library: ask, read citations in context, search, manage files."""
    from ..search import clean_max_tokens

    budget = None if max_tokens is None else clean_max_tokens(max_tokens)  # a bad value is refused now
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.UsageError("The TUI needs a terminal. Use `localreason ask` or `search` in scripts.")
    from ..tui import run

    svc = obj.service()
    run(svc, max_tokens=budget, watch=svc.settings.tui_watch == "on" if watch is None else watch)
    return 0
