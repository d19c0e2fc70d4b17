"""The commands that ask: ask, search, find, read, expand and evidence."""

from __future__ import annotations

import sys
from contextlib import nullcontext

import click

from ..text import counted
from ..types import DIRECTIONS
from .app import cli
from .common import LOCAL_HELP, SCOPE_HELP, Ctx, console, each_line, emit_json, escaped, print_answer, scope_args


def _print_hits(hits, out) -> None:
    from rich.markup import escape

    if not hits:
        out.print("No matching passages.")
    for i, h in enumerate(hits, 1):
        where = " > ".join(h.section_path)
        pages = f", p. {h.page_start}" if h.page_start else ""
        mark = " [yellow](recognised text)[/]" if h.recognized else ""
        out.print(f"[bold]{i}. {escape(h.document_title)}[/]" + (f" [dim]> {escape(where)}[/]" if where else "")
                  + pages + mark)  # fmt: skip
        out.print(f"   [cyan]{h.chunk_id}[/]  [dim]({h.document_id})[/]")
        snippet = " ".join(h.content.split())
        out.print("   " + (snippet[:300] + " ..." if len(snippet) > 300 else snippet), markup=False)
        if h.also_in:
            out.print("   also in: " + "; ".join(f"{e.document_title} ({e.document_id})" for e in h.also_in),
                      markup=False, style="dim")


@cli.command()
@click.argument("query")
@click.option("-n", "--limit", default="10", show_default=True, help="How many items.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def find(obj: Ctx, query, limit, as_json) -> int:
    """Which documents and collections are about QUERY (by meaning, or by title and path text)."""
    items = obj.service().find_items(query, limit=limit)
    if as_json:
        emit_json([i.to_dict() for i in items])
        return 0
    out = console()
    if not items:
        out.print("Nothing found.")
    for i in items:
        out.print(f"[bold]{escaped(i.title)}[/]  [dim]{i.type}[/] [cyan]{i.id}[/]")
        out.print(f"   {i.preview}", markup=False)
    return 0


@cli.command()
@click.argument("query", required=False)
@click.option("-c", "--collection", default=None, help=SCOPE_HELP["collection"])
@click.option("-d", "--document", default=None, help=SCOPE_HELP["document"])
@click.option("-n", "--limit", default="10", show_default=True, help="How many passages (1-100).")
@click.option("--queries-file", type=click.File("r", encoding="utf-8"), default=None,
              help="One query per line; prints one JSON line per query (models load once).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--local", is_flag=True, help=LOCAL_HELP)
@click.pass_obj
def search(obj: Ctx, query, collection, document, limit, queries_file, as_json, local) -> int:
    """Passages that say something about QUERY, best first (meaning and keywords combined).

    When `localreason serve` is running on this library, the search runs there (no model loads here).

    \b
    Examples:
      localreason search "reset the inverter" --collection work --limit 10
      localreason search --queries-file questions.txt > results.jsonl
    """
    from ..errors import ValidationError

    svc = obj.dispatch(local)
    scope = scope_args(svc, collection, document)
    if queries_file is not None:
        if query:
            raise ValidationError("Give either QUERY or --queries-file, not both.")
        return each_line(queries_file, lambda q: {"hits": [h.to_dict() for h in
                                                         svc.deep_search(q, limit=limit, **scope)]})
    if query is None:
        raise ValidationError("No query given.", hint="localreason search \"your question\" (or --queries-file FILE)")
    hits = svc.deep_search(query, limit=limit, **scope)
    if as_json:
        emit_json([h.to_dict() for h in hits])
    else:
        _print_hits(hits, console())
    return 0


@cli.command()
@click.argument("chunk_id")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def read(obj: Ctx, chunk_id, as_json) -> int:
    """Read one chunk in full, with its place in the document tree."""
    item = obj.service().deep_read(chunk_id)
    if as_json:
        emit_json(item)
        return 0
    out = console()
    out.print(f"[bold]{escaped(item['documentTitle'])}[/] [dim]({item['documentId']})[/]")
    out.print(f"[dim]{escaped(' > '.join(item['sectionPath'])) or '(top)'}[/]")
    out.print(f"[cyan]{item['chunkId']}[/] {item['levelName']} {item['chunkIndex'] + 1} of {item['siblingCount']}"
              f", {item['childCount']} children, parent {item['parentId']}, {counted(item['tokenCount'], 'token')}")  # fmt: skip
    out.print()
    out.print(item["content"], markup=False)
    return 0


@cli.command()
@click.argument("chunk_id")
@click.option("--direction", required=True, help=f"{', '.join(DIRECTIONS[:-1])} or {DIRECTIONS[-1]}.")
@click.option("--window", default="2", show_default=True, help="Chunks on each side for 'surrounding'.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def expand(obj: Ctx, chunk_id, direction, window, as_json) -> int:
    """Move through a document's tree from a chunk: its parent, children, neighbours or surroundings."""
    result = obj.service().deep_expand(chunk_id, direction, window=window)
    if as_json:
        emit_json(result.to_dict())
        return 0
    out = console()
    if result.document:
        out.print(f"Up from a section is the document itself: [bold]{escaped(result.document['title'])}[/] "
                  f"([cyan]{result.document['id']}[/])")  # fmt: skip
    elif not result.items:
        out.print(f"Nothing {direction}: {result.reason}.")
    _print_hits(result.items, out) if result.items else None
    return 0


@cli.command()
@click.argument("query")
@click.option("-c", "--collection", default=None, help=SCOPE_HELP["collection"])
@click.option("-d", "--document", default=None, help=SCOPE_HELP["document"])
@click.option("-n", "--limit", default="50", show_default=True, help="Most chunks in the packet (1-50).")
@click.option("--max-tokens", default=None, help="Token budget of the whole packet (default: the answer_budget "
              "setting, as ask).")  # fmt: skip
@click.option("--explain", is_flag=True, help="Also say what progressive search did.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def evidence(obj: Ctx, query, collection, document, limit, max_tokens, explain, as_json) -> int:
    """The exact evidence packet `ask` would send to the model for QUERY."""
    svc = obj.service()
    scope = scope_args(svc, collection, document)
    ev, packet = svc.gathered(query, limit=limit, max_tokens=max_tokens, **scope)
    if as_json:
        emit_json({**packet.to_dict(), **({"steps": list(ev.steps)} if explain else {})})
        return 0
    out = console()
    out.print(packet.text or "(empty packet)", markup=False)
    out.print(f"[dim]{counted(packet.chunks_gathered, 'chunk')} gathered, {len(packet.chunks)} admitted, "
              f"{packet.tokens}/{packet.max_tokens} tokens, evidence {'strong' if packet.strong else 'weak'}"
              f"{', truncated' if packet.truncated else ''}{', scoped' if packet.scoped else ''}[/]")  # fmt: skip
    if explain:
        for step in ev.steps:
            out.print(f"[dim]- {step}[/]")
    return 0


@cli.command()
@click.argument("question", required=False)
@click.option("-c", "--collection", default=None, help=SCOPE_HELP["collection"])
@click.option("-d", "--document", default=None, help=SCOPE_HELP["document"])
@click.option("-n", "--limit", default="50", show_default=True, help="Most evidence chunks (1-50).")
@click.option("--max-tokens", default=None, show_default="the answer_budget setting, 1000 unless changed",
              help="Evidence budget in tokens (up to the spec's 8000 and beyond; more is slower).")  # fmt: skip
@click.option("--questions-file", type=click.File("r", encoding="utf-8"), default=None,
              help="One question per line; prints one JSON line per question (models load once).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help='Print {"data": {answer, citations, gaps, meta, statements}}.')
@click.option("--local", is_flag=True, help=LOCAL_HELP)
@click.pass_obj
def ask(obj: Ctx, question, collection, document, limit, max_tokens, questions_file, as_json, local) -> int:
    """Answer QUESTION from your documents, with quotations checked word for word.

    When `localreason serve` is running on this library, the question is answered there (no model loads here).

    \b
    Examples:
      localreason ask "How long is the inverter warranty, and what voids it?"
      localreason ask "..." --collection work --limit 20 --max-tokens 4000
      localreason ask "..." --document doc_... --json
    """
    from ..errors import ValidationError

    svc = obj.dispatch(local)
    scope = scope_args(svc, collection, document)
    if questions_file is not None:
        if question:
            raise ValidationError("Give either QUESTION or --questions-file, not both.")
        return each_line(questions_file, lambda q: {"data": svc.reason(q, limit=limit, max_tokens=max_tokens,
                                                                        **scope).to_dict()})  # fmt: skip
    if question is None:
        raise ValidationError("No question given.", hint='localreason ask "your question" (or --questions-file FILE)')
    from ..stages import Stage

    show = not as_json and sys.stderr.isatty()
    first = "Searching ..." if svc.remote is None else "Answering on the running localreason serve ..."
    with console(stderr=True).status(first) if show else nullcontext() as status:
        def stage(name, **info):
            if status is not None:
                status.update(f"{Stage(name).describe(**info)} ...")

        answer = svc.reason(question, limit=limit, max_tokens=max_tokens, stage=stage, **scope)
    if as_json:
        emit_json(answer.to_dict())
    else:
        print_answer(answer, console())
    return 0
