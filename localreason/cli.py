"""The ``localreason`` command line: a thin layer over :class:`localreason.service.Service`.

Exit codes: 0 success; 1 some files failed; 2 invalid input; 3 not found;
4 model problem; 5 library problem; 130 interrupted.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import click

from .config import API_KEY_ENV, CI_ENV, DEBUG_ENV, HANDOFF_ENV, HOME_ENV
from .errors import Interrupted, LocalReasonError
from .types import DIRECTIONS

DEMO_QUESTION = "Where did the Black Death originate?"

EXAMPLES_INGEST = """
\b
Examples:
  localreason ingest ~/notes ~/manuals/router.pdf --collection work
  localreason ingest ~/src/project --include '*.md' --include '*.py' --exclude 'build/*'
  localreason ingest ~/notes --prune        # also drop documents whose files were deleted
"""


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def _emit_json(data) -> None:
    click.echo(json.dumps({"data": data}, ensure_ascii=False, indent=None))


class _Ctx:
    def __init__(self, home: str | None) -> None:
        self.home = home
        self._service = None

    def service(self, library=None):
        """The service over the library at ``--home`` (or over ``library``), made on first use."""
        if self._service is None:
            from .library import Library
            from .service import Service

            self._service = Service(library or Library(self.home))
            self._service.library.notice = lambda message: click.echo(message, err=True)
        return self._service

    def dispatch(self, local: bool) -> "_LocalOrRemote":
        """Where search and ask send their calls: a running `localreason serve` of this library if there is one,
        unless ``local``; else this process's service."""
        if local:
            return _LocalOrRemote(self, None)
        from .serve.handoff import connect

        return _LocalOrRemote(self, connect(self.home))

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


class _LocalOrRemote:
    """The service calls of search and ask, made to a running server of the same library when there is one
    (serve/handoff.py: no model loads here), else to this process's service.

    A request the server cannot be asked faithfully, or that fails there before it is answered
    (handoff.Fallback), runs here, and so does every later one; the server's refusal of bad input is
    raised as the same error as here. Either way the command prints the same values the same way.
    """

    def __init__(self, ctx: _Ctx, remote) -> None:
        self.ctx = ctx
        self.remote = remote
        if remote is None:
            ctx.service()  # made now, before any work: a library that cannot be opened is the first error shown

    def _call(self, name: str, *args, **kwargs):
        if self.remote is not None:
            from .serve.handoff import Fallback

            try:
                return getattr(self.remote, name)(*args, **kwargs)
            except Fallback:
                self.remote = None
        return getattr(self.ctx.service(), name)(*args, **kwargs)

    def collection(self, name: str):
        return self._call("collection", name)

    def deep_search(self, query: str, **kwargs):
        return self._call("deep_search", query, **kwargs)

    def reason(self, query: str, **kwargs):
        return self._call("reason", query, **kwargs)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--home", type=click.Path(file_okay=False), envvar=HOME_ENV,
              help=f"Library folder (default: ${HOME_ENV} or the per-user data folder).")  # fmt: skip
@click.version_option(package_name="localreason")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """Ask questions of your own documents, offline, with quotations checked word for word.

    \b
    Start with:
      localreason demo                         # ingest the bundled samples and show the library
      localreason ingest ~/notes -c notes      # add your own files
      localreason library                      # what is in the library
    """
    ctx.obj = _Ctx(home)
    ctx.call_on_close(ctx.obj.close)


# ---------------------------------------------------------------- ingest / sync


def _progress_callback(enabled: bool):
    """A rich progress bar on stderr (counts, chunks, rate); None when not wanted."""
    if not enabled:
        return None, None
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)  # fmt: skip

    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[unit]}"),
        TextColumn("{task.fields[extra]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[current]}"), console=_console(stderr=True), transient=True,
    )  # fmt: skip
    task = pages = None

    def update(p) -> None:
        nonlocal task, pages
        if task is None or task not in bar.task_ids:  # watch removes it after each batch
            task = bar.add_task("Ingesting", total=p.total, unit="files", extra="", current="")
        if p.status == "recognizing":  # the pages of one file, under the files' bar
            if pages is None and p.page < p.pages:
                pages = bar.add_task("  recognising", total=p.pages, unit="pages", extra="", current="")
            if pages is not None:
                bar.update(pages, completed=p.page, total=p.pages, current=Path(p.path).name[:30])
                if p.page >= p.pages:
                    bar.remove_task(pages)
                    pages = None
            return
        elapsed = bar.tasks[0].elapsed or 1e-9
        bar.update(task, completed=p.done, total=p.total, extra=f"{p.chunks} chunks {p.done / elapsed:.1f} files/s",
                   current=Path(p.path).name[:30])  # fmt: skip

    return bar, update


def _file_line(f) -> str:
    """One file's result as a line: ingest's --verbose summary, and each change `localreason watch` applies."""
    from rich.markup import escape

    colour = {"failed": "red", "skipped": "yellow", "removed": "magenta"}.get(f.status, "green")
    return f"  [{colour}]{f.status:8}[/] {escape(f.detail())}"


def _print_report(report, verbose: bool) -> None:
    out = _console()
    c = report.counts
    parts = [f"{c[k]} {k}" for k in ("added", "updated", "unchanged", "removed", "skipped", "failed") if c[k]]
    out.print(f"Collection [bold]{report.collection}[/] ({report.collection_id}): "
              f"{', '.join(parts) or 'nothing to do'} in {report.seconds:.1f} s.")  # fmt: skip
    for f in report.by_status("failed"):
        out.print(f"  [red]failed[/]  {f.path}: {f.reason}")
    for folder, n in report.kept:
        out.print(f"  [yellow]kept[/]    {folder} is empty now (a drive not mounted?): its {n} document"
                  f"{'s' * (n != 1)} stay. `localreason sync --prune` removes them.", markup=True, highlight=False)  # fmt: skip
    skipped = report.by_status("skipped")
    if verbose or len(skipped) <= 5:
        for f in skipped:
            out.print(f"  [yellow]skipped[/] {f.path}: {f.reason}")
    else:
        for reason, n in Counter(f.reason for f in skipped).most_common():
            out.print(f"  [yellow]skipped[/] {n} file(s): {reason}")
        out.print("  (--verbose lists every skipped file)")
    for f in report.files:
        if f.status in ("added", "updated") and f.reason:
            out.print(f"  [cyan]note[/]    {f.path}: {f.reason}")
        if verbose and f.status in ("added", "updated", "removed"):
            out.print(_file_line(f))


def _run_ingest(ctx_obj: _Ctx, fn, as_json: bool, quiet: bool, verbose: bool) -> int:
    bar, update = _progress_callback(not (quiet or as_json) and sys.stderr.isatty())
    try:
        with bar or nullcontext():
            reports = fn(update)
    except Interrupted as exc:
        reports = [exc.report]
        click.echo("Interrupted. What was finished is kept; run the same command again to continue.", err=True)
        _show_reports(reports, as_json, verbose)
        return 130
    _show_reports(reports, as_json, verbose)
    stopped = next((r.stopped for r in reports if r.stopped), "")
    if stopped:
        from .errors import StorageFull

        click.echo(f"Error: the ingest stopped early. {stopped}", err=True)
        return StorageFull.exit_code
    return 0 if all(r.ok for r in reports) else 1


def _show_reports(reports, as_json: bool, verbose: bool) -> None:
    if as_json:
        _emit_json([r.to_dict() for r in reports] if len(reports) != 1 else reports[0].to_dict())
        return
    for r in reports:
        _print_report(r, verbose)


@cli.command(epilog=EXAMPLES_INGEST)
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("-c", "--collection", default="default", show_default=True, help="Collection to add to.")
@click.option("--include", multiple=True, metavar="GLOB", help="Only files matching this (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Leave out files matching this (repeatable).")
@click.option("--prune", is_flag=True, help="Remove documents whose files are gone from the given folders.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("-v", "--verbose", is_flag=True, help="List every file in the summary.")
@click.pass_obj
def ingest(obj: _Ctx, paths, collection, include, exclude, prune, as_json, quiet, verbose) -> int:
    """Add files and folders to the library (unchanged files are skipped, changed ones re-indexed).

    Reads plain text, Markdown, reStructuredText, HTML, PDF, DOCX and source code; scanned PDF pages and
    images (PNG, JPEG, TIFF, WebP, BMP) are recognised on this machine (setting ocr = auto | off).
    Hidden files are skipped. The exit code is 1 if any file failed.
    """
    svc = obj.service()
    return _run_ingest(obj, lambda cb: [svc.ingest(list(paths), collection, include=list(include),
                                                   exclude=list(exclude), prune=prune, progress=cb)],
                       as_json, quiet, verbose)  # fmt: skip


@cli.command()
@click.option("-c", "--collection", default=None, help="Only this collection (default: all).")
@click.option("--prune", is_flag=True,
              help="Also remove the documents of folders that no longer exist (an unmounted drive, a renamed folder).")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("-v", "--verbose", is_flag=True, help="List every file in the summary.")
@click.pass_obj
def sync(obj: _Ctx, collection, prune, as_json, quiet, verbose) -> int:
    """Re-ingest every folder and file ingested before, removing documents whose files are gone.

    A folder that is gone itself keeps its documents (it may be a drive not mounted now); --prune removes them.
    """
    svc = obj.service()
    code = _run_ingest(obj, lambda cb: svc.sync(collection, progress=cb, prune_vanished=prune), as_json, quiet,
                       verbose)  # fmt: skip
    if not as_json:
        for name, folder, count in svc.library.vanished_folders(collection):
            click.echo(f"The folder {folder} is gone: its {count} document{'s' * (count != 1)} in {name!r} are kept. "
                       "`localreason sync --prune` removes them.", err=True)  # fmt: skip
    return code


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
def watch(obj: _Ctx, paths, collection, include, exclude, quiet) -> int:
    """Follow folders: re-ingest a file when it changes, remove a document when its file is deleted.

    With no PATHS: every folder and file ingested before (`localreason library`), and those ingested later.
    First each is read again, as `ingest` does; then one line per change is printed, as `ingest` reports a
    file. A folder that disappears (an unmounted drive) keeps its documents. Ctrl+C stops (exit 0).
    """
    from .signals import stop_signals
    from .watch import Listener, Watcher, roots_for

    svc = obj.service()
    roots = roots_for(svc, list(paths), collection, tuple(include), tuple(exclude)) if paths else None
    if roots is None and not svc.library.sources(collection):
        from .errors import ValidationError

        raise ValidationError("Nothing to watch: no folder or file was ingested yet.",
                              hint="Name one: localreason watch ~/notes -c notes")  # fmt: skip
    bar, update = _progress_callback(not quiet and sys.stderr.isatty())
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
            _print_report(report, verbose=False)
        return
    out = _console()
    for f in changed:
        out.print(_file_line(f))


# ---------------------------------------------------------------- library / show / remove


@cli.command(name="library")
@click.option("-c", "--collection", default=None, help="List this collection's documents.")
@click.option("-d", "--documents", is_flag=True, help="List documents of every collection.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def library_cmd(obj: _Ctx, collection, documents, as_json) -> int:
    """List collections with document and chunk counts (and documents with -d or -c)."""
    svc = obj.service()
    cols = [svc.collection(collection)] if collection else svc.collections()
    docs = svc.documents(collection) if (collection or documents) else []
    stale = svc.library.stale_chunking()
    if as_json:
        _emit_json({"home": str(svc.library.home), "collections": [c.to_dict() for c in cols],
                    "documentsToRechunk": stale, "index": svc.library.index_info(),
                    **({"documents": [d.to_dict() for d in docs]} if (collection or documents) else {})})  # fmt: skip
        return 0
    print_library(svc, cols, docs, show_documents=bool(collection or documents))
    if stale:
        _console().print(f"[yellow]{stale} document(s) were read or cut otherwise than this version and its "
                         "chunking settings do.[/] Run `localreason sync` to re-chunk them (their unchanged "
                         "passages keep their vectors).")  # fmt: skip
    return 0


def describe_index(info: dict) -> str:
    """The vector index and embedding backend in a sentence (``Library.index_info``)."""
    how = "chosen by size" if info["setting"] == "auto" else f"set by vector_index = {info['setting']}"
    if info["kind"] == "ivf":
        text = (f"Vector index: IVF, approximate ({info['vectors']:,} vectors in {info['lists']:,} lists, "
                f"{info['probe']} searched per query; {how}).")  # fmt: skip
    elif info["kind"] == "flat":
        switch = f"; IVF from {info['ivfFrom']:,} passages" if info["setting"] == "auto" else ""
        text = f"Vector index: exact ({info['vectors']:,} vectors; {how}{switch})."
    else:
        text = "Vector index: not built yet (the first search builds it)."
    if info["embeddingBackend"] is None:
        return f"{text} The embedding model is not available: {info['embeddingProblem']}"
    return f"{text} Embeddings run on {info['embeddingBackend']}."


def print_library(svc, cols, docs, show_documents: bool) -> None:
    from rich.table import Table

    out = _console()
    home = svc.library.home
    if not cols:
        out.print(f"The library at {home} is empty. Add files with: localreason ingest PATH --collection NAME")
        return
    out.print(f"Library at {home}", markup=False)
    table = Table()
    for name in ("Collection", "Id", "Documents", "Chunks"):
        table.add_column(name, justify="right" if name in ("Documents", "Chunks") else "left", no_wrap=name == "Id")
    for c in cols:
        table.add_row(c.name, c.id, str(c.document_count), str(c.chunk_count))
    out.print(table)
    out.print(describe_index(svc.library.index_info()), markup=False)
    if show_documents:
        names = {c.id: c.name for c in svc.collections()}
        dt = Table(title="Documents", title_justify="left")
        for name in ("Title", "Id", "Collection", "Format", "Chunks", "Tokens"):
            dt.add_column(name, justify="right" if name in ("Chunks", "Tokens") else "left",
                          overflow="fold", no_wrap=name == "Id")  # fmt: skip
        for d in docs:
            dt.add_row(d.title, d.id, names.get(d.collection_id, "?"), d.format, str(d.chunk_count),
                       str(d.token_count))  # fmt: skip
        out.print(dt)


@cli.command()
@click.argument("item_id")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def show(obj: _Ctx, item_id, as_json) -> int:
    """Show a collection, document or chunk by its id (col_..., doc_..., chk_...)."""
    from .types import Chunk, Collection, Document

    svc = obj.service()
    item = svc.get(item_id.strip())
    if as_json:
        _emit_json({"type": type(item).__name__.lower(), **item.to_dict()})
        return 0
    out = _console()
    if isinstance(item, Collection):
        out.print(f"[bold]{item.name}[/] ({item.id}): {item.document_count} documents, {item.chunk_count} chunks")
        for d in svc.documents(item.id):
            out.print(f"  {d.id}  {d.title}  ({d.chunk_count} chunks)")
    elif isinstance(item, Document):
        for key, value in item.to_dict().items():
            if key != "recognized":
                out.print(f"[bold]{key}[/]: {value}", highlight=False)
        _print_recognition(out, item, svc.library.settings.ocr_min_confidence)
    elif isinstance(item, Chunk):
        doc = svc.get(item.document_id)
        out.print(f"[bold]{item.id}[/] {item.level_name} {item.index} of {doc.title} ({doc.id})")
        out.print(f"[dim]{' > '.join(item.section_path) or '(no section)'}  "
                  f"chars {item.start}-{item.end}, {item.token_count} tokens"
                  + (f", pages {item.page_start}-{item.page_end}" if item.page_start else "") + "[/]")  # fmt: skip
        if item.recognized:
            out.print(f"[yellow]{RECOGNIZED_NOTE}[/]")
        out.print(item.text, markup=False)
    return 0


RECOGNIZED_NOTE = "Read by text recognition from a scanned page or photo: a letter may be misread."


def _print_recognition(out, doc, threshold: float) -> None:
    """`show`'s lines on a document's recognised pages: the summary, then each page of low confidence."""
    from .render import low_confidence_pages, recognition_summary

    summary = recognition_summary(doc)
    if summary:
        out.print(f"[bold]recognized[/]: [yellow]{summary}[/]", highlight=False)
    for p in low_confidence_pages(doc, threshold):
        out.print(f"  [yellow]page {p.page}[/]: low confidence ({p.confidence:.2f}), its text may hold misread words",
                  highlight=False)  # fmt: skip


@cli.command()
@click.argument("target")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@click.pass_obj
def remove(obj: _Ctx, target, yes, as_json) -> int:
    """Remove a document (doc_...) or a collection (col_... or its name) from the library.

    The files on disk are not touched.
    """
    svc = obj.service()
    target = target.strip()
    item = svc.get(target) if target.startswith(("doc_", "chk_")) else svc.collection(target)
    if not yes and sys.stdin.isatty():
        label = getattr(item, "title", None) or getattr(item, "name", target)
        click.confirm(f"Remove {label!r} ({item.id}) from the library?", abort=True)
    result = svc.remove(item.id)
    if as_json:
        _emit_json(result)
    else:
        click.echo(f"Removed {result['removed']} {result.get('title') or result.get('name')} ({result['id']}).")
    return 0


@cli.command()
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_obj
def reindex(obj: _Ctx, quiet) -> int:
    """Re-embed every chunk with the configured embedding model (after changing models)."""
    svc = obj.service()
    bar, update = _progress_callback(not quiet and sys.stderr.isatty())
    with bar or nullcontext():
        n = svc.reindex(progress=update)
    click.echo(f"Re-embedded {n} chunks with {svc.library.embedder.name}.")
    return 0


# ---------------------------------------------------------------- retrieval


def _scope_args(svc, collection: str | None, document: str | None) -> dict:
    """CLI scope options -> API keywords: omitted stays omitted; a collection may be given by name."""
    from .ids import id_kind

    kw: dict = {}
    if document is not None:
        kw["document_id"] = document.strip()
    if collection is not None:
        value = collection.strip()
        kw["collection_id"] = value if (not value or id_kind(value) or value.startswith("col_")) \
            else svc.collection(value).id  # fmt: skip
    return kw


def _each_line(lines, run) -> int:
    """One JSON line per non-blank input line: {"query", ...run(query)} or {"query", "error"}; exit 2 if any failed."""
    failed = 0
    for line in _decoded(lines):
        q = line.rstrip("\n")
        if not q.strip():
            continue
        try:
            record = {"query": q, **run(q)}
        except LocalReasonError as exc:
            failed += 1
            record = {"query": q, "error": exc.message}
        click.echo(json.dumps(record, ensure_ascii=False))
    return 0 if not failed else 2


def _decoded(lines):
    """The lines of a --queries-file, or a clear error at the first one that is not UTF-8."""
    from .errors import ValidationError

    try:
        yield from lines
    except UnicodeDecodeError as exc:  # raised for a whole buffer, so no line number can be trusted
        raise ValidationError(f"The file is not valid UTF-8 ({exc.reason}).",
                              hint="Save the file as UTF-8 and run the command again.") from None


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


_SCOPE_HELP = {"collection": "Only this collection (name or col_ id).", "document": "Only this document (doc_ id)."}
_LOCAL_HELP = ("Load the models here even when a `localreason serve` of this library is running (by default the "
               f"request goes to it; {HANDOFF_ENV}=0 also turns that off).")  # fmt: skip


@cli.command()
@click.argument("query")
@click.option("-n", "--limit", default="10", show_default=True, help="How many items.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def find(obj: _Ctx, query, limit, as_json) -> int:
    """Which documents and collections are about QUERY (by meaning, or by title and path text)."""
    items = obj.service().find_items(query, limit=limit)
    if as_json:
        _emit_json([i.to_dict() for i in items])
        return 0
    out = _console()
    if not items:
        out.print("Nothing found.")
    for i in items:
        out.print(f"[bold]{i.title}[/]  [dim]{i.type}[/] [cyan]{i.id}[/]")
        out.print(f"   {i.preview}", markup=False)
    return 0


@cli.command()
@click.argument("query", required=False)
@click.option("-c", "--collection", default=None, help=_SCOPE_HELP["collection"])
@click.option("-d", "--document", default=None, help=_SCOPE_HELP["document"])
@click.option("-n", "--limit", default="10", show_default=True, help="How many passages (1-100).")
@click.option("--queries-file", type=click.File("r", encoding="utf-8"), default=None,
              help="One query per line; prints one JSON line per query (models load once).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--local", is_flag=True, help=_LOCAL_HELP)
@click.pass_obj
def search(obj: _Ctx, query, collection, document, limit, queries_file, as_json, local) -> int:
    """Passages that say something about QUERY, best first (meaning and keywords combined).

    When `localreason serve` is running on this library, the search runs there (no model loads here).

    \b
    Examples:
      localreason search "reset the inverter" --collection work --limit 10
      localreason search --queries-file questions.txt > results.jsonl
    """
    from .errors import ValidationError

    svc = obj.dispatch(local)
    scope = _scope_args(svc, collection, document)
    if queries_file is not None:
        if query:
            raise ValidationError("Give either QUERY or --queries-file, not both.")
        return _each_line(queries_file, lambda q: {"hits": [h.to_dict() for h in
                                                         svc.deep_search(q, limit=limit, **scope)]})
    if query is None:
        raise ValidationError("No query given.", hint="localreason search \"your question\" (or --queries-file FILE)")
    hits = svc.deep_search(query, limit=limit, **scope)
    if as_json:
        _emit_json([h.to_dict() for h in hits])
    else:
        _print_hits(hits, _console())
    return 0


@cli.command()
@click.argument("chunk_id")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def read(obj: _Ctx, chunk_id, as_json) -> int:
    """Read one chunk in full, with its place in the document tree."""
    item = obj.service().deep_read(chunk_id)
    if as_json:
        _emit_json(item)
        return 0
    out = _console()
    out.print(f"[bold]{item['documentTitle']}[/] [dim]({item['documentId']})[/]")
    out.print(f"[dim]{' > '.join(item['sectionPath']) or '(top)'}[/]")
    out.print(f"[cyan]{item['chunkId']}[/] {item['levelName']} {item['chunkIndex'] + 1} of {item['siblingCount']}"
              f", {item['childCount']} children, parent {item['parentId']}, {item['tokenCount']} tokens")  # fmt: skip
    out.print()
    out.print(item["content"], markup=False)
    return 0


@cli.command()
@click.argument("chunk_id")
@click.option("--direction", required=True, help=f"{', '.join(DIRECTIONS[:-1])} or {DIRECTIONS[-1]}.")
@click.option("--window", default="2", show_default=True, help="Chunks on each side for 'surrounding'.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def expand(obj: _Ctx, chunk_id, direction, window, as_json) -> int:
    """Move through a document's tree from a chunk: its parent, children, neighbours or surroundings."""
    result = obj.service().deep_expand(chunk_id, direction, window=window)
    if as_json:
        _emit_json(result.to_dict())
        return 0
    out = _console()
    if result.document:
        out.print(f"Up from a section is the document itself: [bold]{result.document['title']}[/] "
                  f"([cyan]{result.document['id']}[/])")  # fmt: skip
    elif not result.items:
        out.print(f"Nothing {direction}: {result.reason}.")
    _print_hits(result.items, out) if result.items else None
    return 0


@cli.command()
@click.argument("query")
@click.option("-c", "--collection", default=None, help=_SCOPE_HELP["collection"])
@click.option("-d", "--document", default=None, help=_SCOPE_HELP["document"])
@click.option("-n", "--limit", default="50", show_default=True, help="Most chunks in the packet (1-50).")
@click.option("--max-tokens", default="8000", show_default=True, help="Token budget of the whole packet.")
@click.option("--explain", is_flag=True, help="Also say what progressive search did.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def evidence(obj: _Ctx, query, collection, document, limit, max_tokens, explain, as_json) -> int:
    """The exact evidence packet `ask` would send to the model for QUERY."""
    svc = obj.service()
    scope = _scope_args(svc, collection, document)
    ev = svc.progressive_search(query, limit=limit, **scope)
    from .search import build_packet

    packet = build_packet(ev, max_tokens)
    if as_json:
        _emit_json({**packet.to_dict(), **({"steps": list(ev.steps)} if explain else {})})
        return 0
    out = _console()
    out.print(packet.text or "(empty packet)", markup=False)
    out.print(f"[dim]{packet.chunks_gathered} chunks gathered, {len(packet.chunks)} admitted, "
              f"{packet.tokens}/{packet.max_tokens} tokens, evidence {'strong' if packet.strong else 'weak'}"
              f"{', truncated' if packet.truncated else ''}{', scoped' if packet.scoped else ''}[/]")  # fmt: skip
    if explain:
        for step in ev.steps:
            out.print(f"[dim]- {step}[/]")
    return 0


# ---------------------------------------------------------------- ask


def print_answer(answer, out) -> None:
    """Answer with its citation markers, then sources, limitations and meta (render.answer_rich)."""
    from .render import answer_rich

    out.print(answer_rich(answer))


@cli.command()
@click.argument("question", required=False)
@click.option("-c", "--collection", default=None, help=_SCOPE_HELP["collection"])
@click.option("-d", "--document", default=None, help=_SCOPE_HELP["document"])
@click.option("-n", "--limit", default="50", show_default=True, help="Most evidence chunks (1-50).")
@click.option("--max-tokens", default=None, show_default="the answer_budget setting, 1000 unless changed",
              help="Evidence budget in tokens (up to the spec's 8000 and beyond; more is slower).")  # fmt: skip
@click.option("--questions-file", type=click.File("r", encoding="utf-8"), default=None,
              help="One question per line; prints one JSON line per question (models load once).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help='Print {"data": {answer, citations, gaps, meta, statements}}.')
@click.option("--local", is_flag=True, help=_LOCAL_HELP)
@click.pass_obj
def ask(obj: _Ctx, question, collection, document, limit, max_tokens, questions_file, as_json, local) -> int:
    """Answer QUESTION from your documents, with quotations checked word for word.

    When `localreason serve` is running on this library, the question is answered there (no model loads here).

    \b
    Examples:
      localreason ask "How long is the inverter warranty, and what voids it?"
      localreason ask "..." --collection work --limit 20 --max-tokens 4000
      localreason ask "..." --document doc_... --json
    """
    from .errors import ValidationError

    svc = obj.dispatch(local)
    scope = _scope_args(svc, collection, document)
    if questions_file is not None:
        if question:
            raise ValidationError("Give either QUESTION or --questions-file, not both.")
        return _each_line(questions_file, lambda q: {"data": svc.reason(q, limit=limit, max_tokens=max_tokens,
                                                                        **scope).to_dict()})  # fmt: skip
    if question is None:
        raise ValidationError("No question given.", hint='localreason ask "your question" (or --questions-file FILE)')
    from .stages import Stage

    show = not as_json and sys.stderr.isatty()
    first = "Searching ..." if svc.remote is None else "Answering on the running localreason serve ..."
    with _console(stderr=True).status(first) if show else nullcontext() as status:
        def stage(name, **info):
            if status is not None:
                status.update(f"{Stage(name).describe(**info)} ...")

        answer = svc.reason(question, limit=limit, max_tokens=max_tokens, stage=stage, **scope)
    if as_json:
        _emit_json(answer.to_dict())
    else:
        print_answer(answer, _console())
    return 0


# ---------------------------------------------------------------- models / config / demo


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def models(obj: _Ctx, as_json) -> int:
    """Show which embedding and generation models are configured and whether their files are usable."""
    from .config import load_settings
    from .models import describe_models, models_dirs

    settings = load_settings(obj.home)
    rows = describe_models(settings)
    if as_json:
        _emit_json({"models": rows, "searched": [str(d) for d in models_dirs(settings)]})
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
def config(obj: _Ctx, as_json, markdown) -> int:
    """Show the settings in force, where each came from, and the other environment variables read."""
    from .config import config_text, environment_in_force, markdown_reference, settings_and_sources

    if markdown:
        click.echo(markdown_reference(), nl=False)
        return 0
    settings, sources = settings_and_sources(obj.home)
    if as_json:
        values = {name: getattr(settings, name) for name in ("home", *sources)}
        values = {k: str(v) if isinstance(v, Path) else v for k, v in values.items()}
        _emit_json({"settings": values, "configFile": str(settings.config_path), "sources": sources,
                    "environment": environment_in_force()})  # fmt: skip
        return 0
    click.echo(config_text(settings, sources))
    return 0


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the ingest summary and library as JSON.")
@click.option("--tui/--no-tui", default=None,
              help="End in the TUI over the demo library (default: when run in a terminal).")
@click.pass_obj
def demo(obj: _Ctx, as_json, tui) -> int:
    """Ingest the bundled sample documents, answer a sample question, then open the TUI over them."""
    from .demo import demo_library, samples_dir

    svc = obj.service(demo_library(obj.home))
    home = svc.library.home
    bar, update = _progress_callback(not as_json and sys.stderr.isatty())
    with bar or nullcontext():
        report = svc.ingest([samples_dir()], "samples", exclude=["LICENSES*", "README*"], prune=True, progress=update)
    if as_json:
        _emit_json({"ingest": report.to_dict(), "collections": [c.to_dict() for c in svc.collections()],
                    "documents": [d.to_dict() for d in svc.documents()], "question": DEMO_QUESTION,
                    "answer": svc.reason(DEMO_QUESTION).to_dict()})  # fmt: skip
        return 0 if report.ok else 1
    _print_report(report, verbose=False)
    print_library(svc, svc.collections(), svc.documents(), show_documents=True)
    out = _console()
    out.print(f"\n[bold]Sample question:[/] {DEMO_QUESTION}\n")
    answer = svc.reason(DEMO_QUESTION)
    print_answer(answer, out)
    if tui is None:
        tui = sys.stdin.isatty() and sys.stdout.isatty() and not os.environ.get(CI_ENV)
    if tui:
        from .session import Scope, Turn
        from .tui import run

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
def tui(obj: _Ctx, max_tokens, watch) -> int:
    """Open the terminal UI over your library: ask, read citations in context, search, manage files."""
    from .search import clean_max_tokens

    budget = None if max_tokens is None else clean_max_tokens(max_tokens)  # a bad value is refused now
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.UsageError("The TUI needs a terminal. Use `localreason ask` or `search` in scripts.")
    from .tui import run

    svc = obj.service()
    run(svc, max_tokens=budget, watch=svc.settings.tui_watch == "on" if watch is None else watch)
    return 0


# ---------------------------------------------------------------- servers


_WATCH_HELP = "Also follow the library's folders: changes are applied as they happen (see `localreason watch`)."


@cli.command()
@click.option("--watch", is_flag=True, help=_WATCH_HELP)
@click.pass_obj
def mcp(obj: _Ctx, watch) -> int:
    """Serve the library to MCP clients (desktop assistants, editors, agents) over stdio.

    \b
    Five read-only tools: find_items, deep_search, deep_read, deep_expand, reason.
    Add it to a client as the command `localreason mcp` (with LOCALREASON_HOME set
    to use another library); see the README for configuration snippets.
    """
    from .serve.mcp import run

    run(obj.home, watch=watch)
    return 0


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help=f"Address to listen on. Other than loopback needs {API_KEY_ENV}.")  # fmt: skip
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option("--watch", is_flag=True, help=_WATCH_HELP)
@click.pass_obj
def serve(obj: _Ctx, host, port, watch) -> int:
    """Serve the library over HTTP: POST /v1/reason and the retrieval tools (see /openapi.json).

    \b
    Examples:
      localreason serve                          # http://127.0.0.1:8765
      curl -s localhost:8765/v1/reason -H 'Content-Type: application/json' -d '{"query": "..."}'
      LOCALREASON_API_KEY=secret localreason serve --host 0.0.0.0
      localreason serve --watch                  # and apply changes to the library's folders as they happen
    """
    from .serve.rest import run

    run(obj.home, host=host, port=port, watch=watch)
    return 0


# ---------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the command and turn errors into messages and exit codes."""
    try:
        code = cli.main(args=argv, prog_name="localreason", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        code = 130
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except LocalReasonError as exc:
        click.echo(f"Error: {exc.message}", err=True)
        if exc.hint:
            click.echo(exc.hint, err=True)
        code = exc.exit_code
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        code = 130
    except Exception as exc:  # a bug: say so plainly, keep the traceback for those who ask
        if os.environ.get(DEBUG_ENV):
            raise
        click.echo(f"Internal error: {exc.__class__.__name__}: {exc}\n"
                   f"This is a bug in localreason. Run again with {DEBUG_ENV}=1 to see the traceback.",
                   err=True)  # fmt: skip
        code = 70
    sys.exit(code if isinstance(code, int) else 0)
