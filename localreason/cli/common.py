"""What every group of commands shares: the console and JSON output, the progress bar, the per-command context
with its service, the local-or-remote dispatch of search and ask, the scope options, line-by-line input files,
and the printing of ingest reports, the library and answers (used by more than one group)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import click

from ..config import HANDOFF_ENV
from ..errors import LocalReasonError
from ..text import counted


UNLIMITED = 1_000_000
"""The width of output that is not a terminal (a pipe, a file) when COLUMNS does not set one: no limit."""


def escaped(text: str) -> str:
    """``text`` as a Rich console prints it written (a title "Plan [draft] v2" or a folder "[old]" is no markup)."""
    from rich.markup import escape

    return escape(text)


def console(stderr: bool = False):
    """Rich output on stdout (or stderr). Lines are never wrapped here (a terminal wraps them itself); tables are
    printed by ``print_table``, which keeps a row of output that is not a terminal on one line."""
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)


def a_terminal(out) -> bool:
    """Whether ``out`` writes to a terminal (its file's own answer: FORCE_COLOR asks for colours, not a window)."""
    try:
        return bool(out.file.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def print_table(out, table) -> None:
    """``table`` on ``out``. In a terminal it fits the window (a word too long for its column folds there).
    Elsewhere no word is ever broken: every column is at least as wide as its longest word, even where that
    makes the table wider than COLUMNS, and nothing is cut off."""
    if a_terminal(out):
        out.print(table)
        return
    from rich.measure import Measurement

    width = out.width
    if not os.environ.get("COLUMNS", "").isdigit():
        out.width = UNLIMITED  # for this table only: anything justified or ruled would be padded to it
    try:
        for column in table.columns:
            cells = (column.header, *column.cells)
            column.min_width = max(Measurement.get(out, out.options, cell).minimum for cell in cells)
        out.print(table, crop=False)
    finally:
        out.width = width


def emit_json(data) -> None:
    click.echo(json.dumps({"data": data}, ensure_ascii=False, indent=None))


class Ctx:
    def __init__(self, home: str | None) -> None:
        self.home = home
        self._service = None

    def service(self, library=None):
        """The service over the library at ``--home`` (or over ``library``), made on first use."""
        if self._service is None:
            from ..library import Library
            from ..service import Service

            self._service = Service(library or Library(self.home))
            self._service.library.notice = lambda message: click.echo(message, err=True)
        return self._service

    def dispatch(self, local: bool) -> "LocalOrRemote":
        """Where search and ask send their calls: a running `localreason serve` of this library if there is one,
        unless ``local``; else this process's service."""
        if local:
            return LocalOrRemote(self, None)
        from ..serve.handoff import connect

        return LocalOrRemote(self, connect(self.home))

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


class LocalOrRemote:
    """The service calls of search and ask, made to a running server of the same library when there is one
    (serve/handoff.py: no model loads here), else to this process's service.

    A request the server cannot be asked faithfully, or that fails there before it is answered
    (handoff.Fallback), runs here, and so does every later one; the server's refusal of bad input is
    raised as the same error as here. Either way the command prints the same values the same way.
    """

    def __init__(self, ctx: Ctx, remote) -> None:
        self.ctx = ctx
        self.remote = remote
        if remote is None:
            ctx.service()  # made now, before any work: a library that cannot be opened is the first error shown

    def _call(self, name: str, *args, **kwargs):
        if self.remote is not None:
            from ..serve.handoff import Fallback

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


def progress_callback(enabled: bool):
    """A rich progress bar on stderr (counts, chunks, rate); None when not wanted."""
    if not enabled:
        return None, None
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)  # fmt: skip

    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[unit]}"),
        TextColumn("{task.fields[extra]}"), TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
        TextColumn("[dim]{task.fields[current]}"), console=console(stderr=True), transient=True,
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
        bar.update(task, completed=p.done, total=p.total, extra=f"{counted(p.chunks, 'chunk')} {p.done / elapsed:.1f} files/s",
                   current=Path(p.path).name[:30])  # fmt: skip

    return bar, update


def file_line(f) -> str:
    """One file's result as a line: ingest's --verbose summary, and each change `localreason watch` applies."""
    from rich.markup import escape

    colour = {"failed": "red", "skipped": "yellow", "removed": "magenta"}.get(f.status, "green")
    return f"  [{colour}]{f.status:8}[/] {escape(f.detail())}"


def print_report(report, verbose: bool) -> None:
    """An ingest's summary line, then its failures, kept folders, skipped files and notes (paths and reasons
    print as they are: a "[draft]" in a path stays)."""
    from rich.markup import escape

    out = console()
    c = report.counts
    parts = [f"{c[k]} {k}" for k in ("added", "updated", "unchanged", "removed", "skipped", "failed") if c[k]]
    made = report.collection_id if report.made else "not made: nothing was written"
    out.print(f"Collection [bold]{escape(report.collection)}[/] ({made}): "
              f"{', '.join(parts) or 'nothing to do'} in {report.seconds:.1f} s.")  # fmt: skip
    for f in report.by_status("failed"):
        out.print(f"  [red]failed[/]  {escape(f'{f.path}: {f.reason}')}")
    for folder, n, why in report.kept:
        kept = f"{folder}: {counted(n, 'document')} kept: {why}."
        out.print(f"  [yellow]kept[/]    {escape(kept)}", highlight=False)
    skipped = report.by_status("skipped")
    if verbose or len(skipped) <= 5:
        for f in skipped:
            out.print(f"  [yellow]skipped[/] {escape(f'{f.path}: {f.reason}')}")
    else:
        for reason, n in Counter(f.reason for f in skipped).most_common():
            out.print(f"  [yellow]skipped[/] {n} file(s): {escape(reason)}")
        out.print("  (ingest and sync with --verbose list every skipped file)")
    for f in report.files:
        if f.status in ("added", "updated") and f.reason:
            out.print(f"  [cyan]note[/]    {escape(f'{f.path}: {f.reason}')}")
        if verbose and f.status in ("added", "updated", "removed"):
            out.print(file_line(f))


def scope_args(svc, collection: str | None, document: str | None) -> dict:
    """CLI scope options -> API keywords: omitted stays omitted; a collection may be given by name."""
    from ..ids import id_kind

    kw: dict = {}
    if document is not None:
        kw["document_id"] = document.strip()
    if collection is not None:
        value = collection.strip()
        kw["collection_id"] = value if (not value or id_kind(value) or value.startswith("col_")) \
            else svc.collection(value).id  # fmt: skip
    return kw


def each_line(lines, run) -> int:
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
    from ..errors import ValidationError

    try:
        yield from lines
    except UnicodeDecodeError as exc:  # raised for a whole buffer, so no line number can be trusted
        raise ValidationError(f"The file is not valid UTF-8 ({exc.reason}).",
                              hint="Save the file as UTF-8 and run the command again.") from None


SCOPE_HELP = {"collection": "Only this collection (name or col_ id).", "document": "Only this document (doc_ id)."}


LOCAL_HELP = ("Load the models here even when a `localreason serve` of this library is running (by default the "
               f"request goes to it; {HANDOFF_ENV}=0 also turns that off).")  # fmt: skip


def print_library(svc, cols, docs, show_documents: bool) -> None:
    """The collections (and with ``show_documents`` the documents) as tables, then the vector index in a line.
    Names and titles print as they are (never read as markup: "[draft]" stays)."""
    from rich.table import Table
    from rich.text import Text

    out = console()
    settings = svc.library.settings
    home = settings.home if settings.store == "local" else settings.store_shown  # a shared store: its URL, no password
    if not cols:
        out.print(f"The library at {home} is empty. Add files with: localreason ingest PATH --collection NAME",
                  markup=False)  # fmt: skip
        return
    out.print(f"Library at {home}", markup=False)
    table = Table()
    for name in ("Collection", "Id", "Documents", "Chunks"):
        table.add_column(name, justify="right" if name in ("Documents", "Chunks") else "left", no_wrap=name == "Id")
    for c in cols:
        table.add_row(Text(c.name), c.id, str(c.document_count), str(c.chunk_count))
    print_table(out, table)
    out.print(describe_index(svc.library.index_info()), markup=False)
    if show_documents:
        names = {c.id: c.name for c in svc.collections()}
        dt = Table(title="Documents", title_justify="left")
        for name in ("Title", "Id", "Collection", "Format", "Chunks", "Tokens"):
            dt.add_column(name, justify="right" if name in ("Chunks", "Tokens") else "left",
                          overflow="fold", no_wrap=name == "Id")  # fmt: skip
        for d in docs:
            dt.add_row(Text(d.title), d.id, Text(names.get(d.collection_id, "?")), d.format, str(d.chunk_count),
                       str(d.token_count))  # fmt: skip
        print_table(out, dt)


def describe_index(info: dict) -> str:
    """The vector index and embedding backend in a sentence (``Library.index_info``)."""
    how = "chosen by size" if info["setting"] == "auto" else f"set by vector_index = {info['setting']}"
    if info["kind"] == "ivf":
        text = (f"Vector index: IVF, approximate ({info['vectors']:,} vectors in {info['lists']:,} lists, "
                f"{info['probe']} searched per query; {how}).")  # fmt: skip
    elif info["kind"] == "flat":
        switch = f"; IVF from {info['ivfFrom']:,} passages" if info["setting"] == "auto" else ""
        text = f"Vector index: exact ({info['vectors']:,} vectors; {how}{switch})."
    elif info["kind"] == "hnsw":
        text = f"Vector index: PostgreSQL's HNSW (pgvector), approximate ({info['vectors']:,} vectors)."
    else:
        text = "Vector index: not built yet (the first search builds it)."
    if info["embeddingBackend"] is None:
        return f"{text} The embedding model is not available: {info['embeddingProblem']}"
    return f"{text} Embeddings run on {info['embeddingBackend']}."


def print_answer(answer, out) -> None:
    """Answer with its citation markers, then sources, limitations and meta (render.answer_rich)."""
    from ..render import answer_rich

    out.print(answer_rich(answer))
