"""The library's commands: ingest, sync, library, show, remove and reindex."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext

import click

from ..errors import Interrupted
from ..text import counted
from .app import cli
from .common import Ctx, console, emit_json, escaped, print_library, print_report, progress_callback


EXAMPLES_INGEST = """
\b
Examples:
  localreason ingest ~/notes ~/manuals/router.pdf --collection work
  localreason ingest ~/src/project --include '*.md' --include '*.py' --exclude 'build/*'
  localreason ingest ~/notes --prune        # also drop documents whose files were deleted
"""


def _run_ingest(ctx_obj: Ctx, fn, as_json: bool, quiet: bool, verbose: bool, after=None) -> int:
    """Run ``fn`` (an ingest or a sync, given the progress callback) and show its reports, then ``after(reports)``
    (not with --json); the exit code."""
    bar, update = progress_callback(not (quiet or as_json) and sys.stderr.isatty())
    try:
        with bar or nullcontext():
            reports = fn(update)
    except Interrupted as exc:
        reports = exc.reports
        click.echo("Interrupted. What was finished is kept; run the same command again to continue.", err=True)
        _show_reports(reports, as_json, verbose, after)
        return 130
    _show_reports(reports, as_json, verbose, after)
    stopped = next((r.stopped for r in reports if r.stopped), "")
    if stopped:
        from ..errors import StorageFull

        click.echo(f"Error: the ingest stopped early. {stopped}", err=True)
        return StorageFull.exit_code
    return 0 if all(r.ok for r in reports) else 1


def _show_reports(reports, as_json: bool, verbose: bool, after=None) -> None:
    if as_json:
        emit_json([r.to_dict() for r in reports] if len(reports) != 1 else reports[0].to_dict())
        return
    for r in reports:
        print_report(r, verbose)
    if after is not None:
        after(reports)


def _made_and_remembered(svc, paths) -> object:
    """What `ingest` says after its report: that a new collection was not made when nothing was written into it
    (a failed ingest leaves the library as it was), which folders given had no file to read yet and are remembered
    all the same (sync and a watch ingest what is put in them later), and which paths given yielded nothing that
    could be read and are therefore not remembered (sync will not retry them)."""
    from ..ingest.walk import path_text

    def after(reports) -> None:
        out = console()
        for r in reports:
            if not r.made:
                out.print(f"Nothing was written, so the collection {r.collection!r} was not made: the library is "
                          "as it was.", highlight=False)  # fmt: skip
            elif not r.stopped:
                remembered = {s["path"] for s in svc.library.sources(r.collection)}
                for raw in paths:
                    given = path_text(os.path.abspath(os.path.expanduser(raw)))
                    found = [f for f in r.files if f.path == given or f.path.startswith(given + os.sep)]
                    if given in remembered and not found:
                        out.print(f"No file to read in {given} yet: it is remembered, and `localreason sync` (or "
                                  "`localreason watch`) ingests what is put in it.", highlight=False)
                    elif given not in remembered and found and os.path.lexists(given):
                        out.print(f"Nothing could be read from {given}, so it is not remembered: `localreason sync` "
                                  "will not look at it. Mend or replace the files, then ingest it again.",
                                  highlight=False)  # fmt: skip
    return after


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
def ingest(obj: Ctx, paths, collection, include, exclude, prune, as_json, quiet, verbose) -> int:
    """Add files and folders to the library (unchanged files are skipped, changed ones re-indexed).

    Reads plain text, Markdown, reStructuredText, HTML, PDF, DOCX and source code; scanned PDF pages and
    images (PNG, JPEG, TIFF, WebP, BMP) are recognised on this machine (setting ocr = auto | off).
    Hidden files are skipped. The exit code is 1 if any file failed.
    """
    svc = obj.service()
    return _run_ingest(obj, lambda cb: [svc.ingest(list(paths), collection, include=list(include),
                                                   exclude=list(exclude), prune=prune, progress=cb)],
                       as_json, quiet, verbose, _made_and_remembered(svc, paths))  # fmt: skip


@cli.command()
@click.option("-c", "--collection", default=None, help="Only this collection (default: all).")
@click.option("--prune", is_flag=True,
              help="Also remove the documents of folders that no longer exist (an unmounted drive, a renamed folder).")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("-v", "--verbose", is_flag=True, help="List every file in the summary.")
@click.pass_obj
def sync(obj: Ctx, collection, prune, as_json, quiet, verbose) -> int:
    """Re-ingest every folder and file ingested before, removing documents whose files are gone.

    A folder that is gone itself keeps its documents (it may be a drive not mounted now); --prune removes them.
    """
    svc = obj.service()
    code = _run_ingest(obj, lambda cb: svc.sync(collection, progress=cb, prune_vanished=prune), as_json, quiet,
                       verbose)  # fmt: skip
    if not as_json:
        from ..library import elsewhere_note, sources_elsewhere

        others = sources_elsewhere(svc.library, collection)
        if others and not svc.library.sources(collection):
            click.echo(elsewhere_note(others), err=True)
        for name, folder, count in svc.library.vanished_folders(collection):
            click.echo(f"The folder {folder} is gone: its {counted(count, 'document')} in {name!r} are kept. "
                       "`localreason sync --prune` removes them.", err=True)  # fmt: skip
    return code


@cli.command(name="library")
@click.option("-c", "--collection", default=None, help="List this collection's documents.")
@click.option("-d", "--documents", is_flag=True, help="List documents of every collection.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def library_cmd(obj: Ctx, collection, documents, as_json) -> int:
    """List collections with document and chunk counts (and documents with -d or -c)."""
    svc = obj.service()
    cols = [svc.collection(collection)] if collection else svc.collections()
    docs = svc.documents(collection) if (collection or documents) else []
    stale = svc.library.stale_chunking()
    if as_json:
        emit_json({"home": str(svc.library.home), "collections": [c.to_dict() for c in cols],
                    "documentsToRechunk": stale, "index": svc.library.index_info(),
                    **({"documents": [d.to_dict() for d in docs]} if (collection or documents) else {})})  # fmt: skip
        return 0
    print_library(svc, cols, docs, show_documents=bool(collection or documents))
    if stale:
        console().print(f"[yellow]{stale} document(s) were read or cut otherwise than this version and its "
                         "chunking settings do.[/] Run `localreason sync` to re-chunk them (their unchanged "
                         "passages keep their vectors).")  # fmt: skip
    return 0


@cli.command()
@click.argument("item_id")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def show(obj: Ctx, item_id, as_json) -> int:
    """Show a collection, document or chunk by its id (col_..., doc_..., chk_...)."""
    from ..types import Chunk, Collection, Document

    svc = obj.service()
    item = svc.get(item_id.strip())
    if as_json:
        emit_json({"type": type(item).__name__.lower(), **item.to_dict()})
        return 0
    out = console()
    if isinstance(item, Collection):
        out.print(f"[bold]{escaped(item.name)}[/] ({item.id}): {counted(item.document_count, 'document')}, "
                  f"{counted(item.chunk_count, 'chunk')}")  # fmt: skip
        for d in svc.documents(item.id):
            out.print(f"  {d.id}  {escaped(d.title)}  ({counted(d.chunk_count, 'chunk')})")
    elif isinstance(item, Document):
        for key, value in item.to_dict().items():
            if key != "recognized":
                out.print(f"[bold]{key}[/]: {escaped(str(value))}", highlight=False)
        _print_recognition(out, item, svc.library.settings.ocr_min_confidence)
    elif isinstance(item, Chunk):
        doc = svc.get(item.document_id)
        out.print(f"[bold]{item.id}[/] {item.level_name} {item.index} of {escaped(doc.title)} ({doc.id})")
        out.print(f"[dim]{escaped(' > '.join(item.section_path)) or '(no section)'}  "
                  f"chars {item.start}-{item.end}, {counted(item.token_count, 'token')}"
                  + (f", pages {item.page_start}-{item.page_end}" if item.page_start else "") + "[/]")  # fmt: skip
        if item.recognized:
            out.print(f"[yellow]{RECOGNIZED_NOTE}[/]")
        out.print(item.text, markup=False)
    return 0


RECOGNIZED_NOTE = "Read by text recognition from a scanned page or photo: a letter may be misread."


def _print_recognition(out, doc, threshold: float) -> None:
    """`show`'s lines on a document's recognised pages: the summary, then each page of low confidence."""
    from ..render import low_confidence_pages, recognition_summary

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
def remove(obj: Ctx, target, yes, as_json) -> int:
    """Remove a document (doc_...) or a collection (col_... or its name) from the library.

    The files on disk are not touched.
    """
    svc = obj.service()
    target = target.strip()
    item = svc.get(target) if target.startswith(("doc_", "chk_")) else svc.collection(target)
    if not yes and sys.stdin.isatty():
        label = getattr(item, "title", None) or getattr(item, "name", target)
        click.confirm(f"Remove {label!r} ({item.id}) from the library?", abort=True, err=True)  # (stdout: --json's)
    result = svc.remove(item.id)
    if as_json:
        emit_json(result)
    else:
        click.echo(f"Removed {result['removed']} {result.get('title') or result.get('name')} ({result['id']}).")
        if "keptOut" in result:
            from ..library import kept_out

            click.echo(kept_out(result["keptOut"]), err=True)
    return 0



@cli.command()
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.pass_obj
def reindex(obj: Ctx, quiet) -> int:
    """Re-embed every chunk with the configured embedding model (after changing models)."""
    svc = obj.service()
    bar, update = progress_callback(not quiet and sys.stderr.isatty())
    with bar or nullcontext():
        n = svc.reindex(progress=update)
    click.echo(f"Re-embedded {counted(n, 'chunk')} with {svc.library.embedder.name}.")
    return 0
