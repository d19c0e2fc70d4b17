"""``localreason mcp``: the library served to MCP clients over stdio (the official SDK's MCPServer).

Five read-only tools, named and shaped as in shared/spec: ``find_items``, ``deep_search``,
``deep_read``, ``deep_expand`` and ``reason``. Each returns ``structuredContent``
``{"data": ...}`` (the shapes the CLI's ``--json`` prints; for ``reason`` exactly the spec's
answer, citations, gaps and meta) and a readable text (for ``reason``: render.answer_markdown).

- **Cold start.** Only the SDK and a few light modules are imported before the handshake; the
  service (numpy, FAISS, SQLite) is opened on first use and the models load in the background
  once the client has said ``notifications/initialized`` (or at the first tool call).
- **Schemas.** Each tool's input and output schemas are made from the REST API's request and
  response models (models.py: the same fields, types and constraints), with MCP's own words for
  each argument (ARGUMENTS). Over MCP, reason takes no maxTokens or includeStatements.
- **Validation** is the library's own (clean_query, check_id, clamp_limit, ...), so a blank query,
  a malformed id or a missing chunk come back as ``isError`` results with the message and the hint
  the CLI shows; before a call, only the argument names are checked here (required present, none unknown).
- **Errors** that nobody anticipated are logged with their traceback to ``<home>/logs/mcp.log``
  and reported as a one-line ``isError`` naming that file.
- **stdout** carries only the protocol (the SDK serves from a private copy of fd 1); fd 2, where
  llama.cpp and torch write, goes to the same log file. Lines the SDK cannot read are answered (stdio.py).
- **Progress** of ``reason`` is sent as notifications (Stage.step of STEPS, Stage.describe) when
  the client asked for it; **cancellation** (notifications/cancelled, which cancels the handler)
  sets the Event that Service.reason watches, which stops llama.cpp between two tokens.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from ..config import Settings, load_settings
from ..errors import Cancelled, LocalReasonError, NotFoundError, ValidationError
from ..stages import STEPS, Stage
from .models import (DeepExpandRequest, DeepExpandResponse, DeepReadRequest, DeepReadResponse, DeepSearchRequest,
                     DeepSearchResponse, FindItemsRequest, FindItemsResponse, ReasonRequest, ReasonResponse,
                     mcp_input_schema, mcp_output_schema)  # fmt: skip

log = logging.getLogger("localreason.mcp")

LOG_NAME = "mcp.log"
"""The server's log under ``<home>/logs/``: Python logging and whatever native libraries print on fd 2."""

WARM_DELAY = 0.3
"""Seconds between the handshake and the start of model loading, so that loading (which holds the GIL
while it imports torch and llama.cpp) does not slow the client's first tools/list."""


# ---------------------------------------------------------------- the contract: schemas and descriptions


def _scope_text(what: str, prefix: str) -> str:
    return f"{what} ({prefix}_ followed by 16 characters). Omit it rather than sending an empty or null value."


_WHAT = "What to look for, in your own words (at least one non-whitespace character; up to 2,000 characters)."
_CHUNK = "A chunk id (chk_ followed by 16 characters) from deep_search, deep_read or deep_expand."

ARGUMENTS: dict[str, tuple[type, dict[str, str]]] = {
    "find_items": (FindItemsRequest, {
        "query": _WHAT,
        "limit": "Maximum documents and collections. Defaults to 10; clamped to 1-100."}),
    "deep_search": (DeepSearchRequest, {
        "query": _WHAT,
        "documentId": _scope_text("Restrict to one document", "doc"),
        "collectionId": _scope_text("Restrict to the documents of one collection", "col"),
        "limit": "Maximum passages. Defaults to 10; clamped to 1-100."}),
    "deep_read": (DeepReadRequest, {"chunkId": _CHUNK}),
    "deep_expand": (DeepExpandRequest, {
        "chunkId": _CHUNK,
        "direction": "up: the parent (a section's document); down: a section's paragraphs; previous / next: the "
                     "neighbouring chunk at the same level in reading order; surrounding: `window` chunks on each side.",
        "window": "For surrounding: chunks on each side. Defaults to 2; clamped to 1-20."}),
    "reason": (ReasonRequest, {
        "query": "The question to answer (at least one non-whitespace character).",
        "limit": "Maximum evidence chunks in the synthesis packet. Defaults to 50; clamped to 1-50.",
        "documentId": _scope_text("Take the evidence from one document", "doc"),
        "collectionId": _scope_text("Take the evidence from the documents of one collection", "col")}),
}  # fmt: skip
"""Each tool's request model, and the fields of it the tool takes (in this order) with what MCP clients read about
each; a tool function's parameters are these names."""

INPUT_SCHEMAS: dict[str, dict] = {name: mcp_input_schema(model, words) for name, (model, words) in ARGUMENTS.items()}
OUTPUT_SCHEMAS: dict[str, dict] = {name: mcp_output_schema(model) for name, model in (
    ("find_items", FindItemsResponse), ("deep_search", DeepSearchResponse), ("deep_read", DeepReadResponse),
    ("deep_expand", DeepExpandResponse), ("reason", ReasonResponse))}  # fmt: skip

INSTRUCTIONS = """\
Tools over the user's own local document library (read-only, offline). Choose the right one:
- find_items: which document or collection is about X (catalog level; gives ids to scope the others).
- deep_search, deep_read, deep_expand: find passages, read one in full, move around it in its document.
- reason: one cited answer to a question, with quotations verified word for word against the documents.
Only document content is searched."""

DESCRIPTIONS = {
    "find_items": (
        "Find which documents or collections in the user's local library are about a topic (catalog level), "
        "matched by meaning or by literal title, path or name text. Returns ids, titles and short previews, "
        "not passages. Use it to get a documentId or collectionId that scopes deep_search or reason. To find "
        "passages use deep_search; to get one cited answer use reason."),
    "deep_search": (
        "Find the passages (chunks) of the user's documents that say something about a topic, best first "
        "(hybrid semantic and keyword search), optionally only inside one document (documentId) or one "
        "collection (collectionId). Each hit has chunkId, documentId, documentTitle, content, level, "
        "chunkIndex, parentId and sectionPath (the headings above it); a passage that several documents hold "
        "word for word (copies, versions) is listed once, the others in alsoIn. Then use deep_read to read a chunk in "
        "full and deep_expand to read around it. To find which document or collection is about something, use "
        "find_items; for a single cited answer instead of passages, use reason."),
    "deep_read": (
        "Read one chunk in full, by chunkId (from deep_search or deep_expand), with its place in the document "
        "tree: level (section or paragraph), parent, position among its siblings, number of children, section "
        "path, document and collection."),
    "deep_expand": (
        "Move through a document's tree (document > section > paragraph) from a chunk, to read the context of "
        "a passage without loading the whole document: up (the parent section, or the document for a "
        "section), down (a section's paragraphs), previous / next (the neighbouring chunk at the same level, "
        "in reading order), surrounding (window chunks on each side)."),
    "reason": (
        "Answer a question from the user's documents: one best-effort answer with [[chunkId]] citation "
        "tokens whose quotations are verified word for word against the sources, plus citations (chunkId, "
        "documentId, documentTitle), gaps (limitations noticed; not exhaustive: an empty list does not prove "
        "full coverage) and meta. Use it when you need a conclusion rather than a list of passages; scope it "
        "with documentId or collectionId (from find_items). When no relevant evidence is found it says so "
        "rather than guessing. It runs a local language model: expect seconds, more on the first call."),
}

TITLES = {"find_items": "Find documents and collections", "deep_search": "Search passages",
          "deep_read": "Read a chunk", "deep_expand": "Read around a chunk",
          "reason": "Answer with verified citations"}  # fmt: skip


class _Omitted:
    """Default of optional arguments: omitted, as opposed to an explicit null (which the library refuses)."""

    def __repr__(self) -> str:
        return "<omitted>"


OMITTED: Any = _Omitted()
_OPTIONAL: Any = Field(default_factory=lambda: OMITTED)


def _given(**kwargs) -> dict[str, Any]:
    """Keyword arguments for the service: the ones the client sent, by their Python names."""
    return {name: value for name, value in kwargs.items() if value is not OMITTED}


# ---------------------------------------------------------------- readable text


def _short(text: str, n: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= n else flat[:n].rsplit(" ", 1)[0] + " …"


def _place(title: str, section_path) -> str:
    """``Title › Section › Subsection`` (a heading equal to the title is not repeated)."""
    parts = [title, *(s for s in section_path if s != title)]
    return " › ".join(p for p in parts if p)


def items_text(query: str, items) -> str:
    if not items:
        return f"No document or collection matches “{_short(query, 80)}”."
    lines = [f"{len(items)} match(es) for “{_short(query, 80)}”, best first:"]
    lines += [f"{i}. {it.type} “{it.title}” ({it.id}): {_short(it.preview, 200)}" for i, it in enumerate(items, 1)]
    return "\n".join(lines)


def hits_text(query: str, hits, scoped: bool) -> str:
    if not hits:
        where = " in the requested scope" if scoped else ""
        return f"No passages found for “{_short(query, 80)}”{where}."
    lines = [f"{len(hits)} passage(s) for “{_short(query, 80)}”, best first:"]
    for i, h in enumerate(hits, 1):
        lines += [f"{i}. {_place(h.document_title, h.section_path)} [{h.chunk_id}]", f"   {_short(h.content, 300)}"]
        if h.also_in:
            lines.append("   Also in: " + "; ".join(f"{e.document_title} [{e.chunk_id}]" for e in h.also_in))
    lines.append("deep_read a chunkId for its full text; deep_expand to read around it.")
    return "\n".join(lines)


def read_text(chunk: dict) -> str:
    where = (f"{chunk['levelName']} {chunk['chunkIndex'] + 1} of {chunk['siblingCount']} under "
             f"{chunk['parentId']}; {chunk['childCount']} child chunk(s); document {chunk['documentId']}")  # fmt: skip
    return "\n".join([f"{_place(chunk['documentTitle'], chunk['sectionPath'])} [{chunk['chunkId']}]", where, "",
                      chunk["content"]])  # fmt: skip


def expand_text(result) -> str:
    if result.document:
        doc = result.document
        return (f"Up from {result.chunk_id}: the document itself, “{doc['title']}” ({doc['id']}, collection "
                f"{doc.get('collectionId', '?')}); it is not a chunk.")  # fmt: skip
    if not result.items:
        return f"Nothing {result.direction} from {result.chunk_id}: {result.reason}."
    lines = [f"{result.direction} from {result.chunk_id}: {len(result.items)} chunk(s)."]
    for h in result.items:
        lines += ["", f"{_place(h.document_title, h.section_path)} [{h.chunk_id}] ({h.to_dict()['levelName']} "
                      f"{h.chunk_index + 1})", h.content]  # fmt: skip
    return "\n".join(lines)


def _result(text: str, data) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"data": data})


def error_text(exc: LocalReasonError) -> str:
    """What was wrong and what to do: the error's message and hint, as the CLI prints them."""
    hint = exc.hint
    if hint is None and isinstance(exc, NotFoundError):
        hint = "Use an id from find_items, deep_search or deep_expand results of this library."
    return f"{exc.message}\n{hint}" if hint else exc.message


def _arguments_error(name: str, arguments: dict) -> str | None:
    """Unknown or missing arguments, said in words (None when the names are right)."""
    schema = INPUT_SCHEMAS[name]
    known = list(schema["properties"])
    unknown = [k for k in arguments if k not in known]
    missing = [k for k in schema["required"] if k not in arguments]
    if not unknown and not missing:
        return None
    said = f"{name} does not take {', '.join(unknown)}." if unknown else f"{name} needs {', '.join(missing)}."
    if "maxTokens" in unknown and name == "reason":
        said += " Over MCP, reason uses the configured evidence budget (maxTokens is a REST API option)."
    listed = ", ".join(f"{k} (required)" if k in schema["required"] else k for k in known)
    return f"{said}\nIts arguments are: {listed}."


class _Server(MCPServer):
    """MCPServer that checks argument names itself, so a client's mistake is answered in words."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        if name in INPUT_SCHEMAS:
            problem = _arguments_error(name, arguments)
            if problem:
                raise ToolError(problem)
        return await super().call_tool(name, arguments, context)


# ---------------------------------------------------------------- the server


class LocalReasonMCP:
    """The MCP front end over one library: the SDK server (``.mcp``), the service (opened on first use)."""

    def __init__(self, home: str | Path | None = None, *, settings: Settings | None = None, service=None,
                 watch: bool = False) -> None:  # fmt: skip
        from .. import __version__

        self.settings = settings or load_settings(home)
        self.watch = watch
        """Whether the library's folders are followed once the library is open (watch.py); changes go to the log."""
        self._watcher = None
        self.log_path = self.settings.home / "logs" / LOG_NAME
        self._service = service
        self.gated = False
        """Served over HTTP behind the gate (mcp_http.py): each request's key decides what it sees."""
        self._open_lock = threading.Lock()
        self._warm_lock = threading.Lock()
        self._warm_started = False
        self._closed = False
        """Set by close(), under ``_open_lock``: no service is opened and no watch started after it."""
        tools = [self._tool(name) for name in INPUT_SCHEMAS]
        self.mcp = _Server("localreason", title="localreason", version=__version__, instructions=INSTRUCTIONS,
                           tools=tools, middleware=[self._on_message], log_level="WARNING")  # fmt: skip

    def _tool(self, name: str) -> Tool:
        annotations = ToolAnnotations(title=TITLES[name], read_only_hint=True, destructive_hint=False,
                                      idempotent_hint=True, open_world_hint=False)  # fmt: skip
        tool = Tool.from_function(getattr(self, name), name=name, title=TITLES[name], description=DESCRIPTIONS[name],
                                  annotations=annotations)  # fmt: skip
        tool.parameters = INPUT_SCHEMAS[name]
        tool.fn_metadata.output_schema = OUTPUT_SCHEMAS[name]
        return tool

    # ------------------------------------------------------------ service and models

    def service(self):
        """The service over the library, opened on first use (numpy, FAISS and SQLite load here, not at start)."""
        with self._open_lock:
            if self._closed:
                raise LocalReasonError("The server is shutting down.", hint="Start it again to ask more.")
            if self._service is None:
                from ..service import Service

                self._service = Service.open(settings=self.settings)
            return self._service

    def open_store(self):
        """A new connection to the library's store (the HTTP gate checks keys through one of its own)."""
        from ..library import open_store

        return open_store(self.settings)

    def start_warming(self, delay: float = 0.0) -> None:
        """Open the library and load the models in a background thread (once)."""
        with self._warm_lock:
            if self._warm_started:
                return
            self._warm_started = True
        threading.Thread(target=self._warm, args=(delay,), name="localreason-mcp-warm", daemon=True).start()

    def _warm(self, delay: float) -> None:
        time.sleep(delay)
        t0 = time.perf_counter()
        try:
            svc = self.service()
            with svc.reading():  # the vector index loaded and caught up with other processes' writes
                pass
            self._start_watching(svc)
            svc.warm(background=False)
        except Exception:  # noqa: BLE001 - the first request meets the same problem and reports it
            if self._closed:  # (the server closed while it was preparing: nothing to say)
                return
            log.exception("Preparing the library failed; the next request tries again")
            with self._warm_lock:  # (a database down at start: the watch must still begin once it is back)
                self._warm_started = False
            return
        if svc.warm_error is not None:
            log.warning("Loading the models failed (requests that need them will say why): %s", svc.warm_error)
        else:
            log.info("Library and models ready in %.1f s", time.perf_counter() - t0)

    async def _on_message(self, ctx, call_next):
        """Middleware: start loading the models once the handshake is over, or at the first call."""
        if ctx.method == "tools/call":
            self.start_warming()
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self.start_warming(WARM_DELAY)
        return result

    def _start_watching(self, svc) -> None:
        with self._open_lock:  # (close() may have come while the library was opening: then no watch begins)
            if self.watch and self._watcher is None and not self._closed:
                from ..watch import BackgroundWatch, logged

                self._watcher = BackgroundWatch(svc, logged(log.info)).start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop watching, close the service, waiting at most ``timeout`` seconds for requests still running.
        A warm-up still under way opens nothing and starts no watch after this."""
        with self._open_lock:  # (waits for a service being opened, so that it is closed here too)
            self._closed = True
            watcher, service = self._watcher, self._service
        if watcher is not None:
            watcher.stop(timeout)
        if service is not None:
            closer = threading.Thread(target=service.close, name="localreason-mcp-close", daemon=True)
            closer.start()
            closer.join(timeout)

    # ------------------------------------------------------------ running a request

    async def _run(self, name: str, work, cancel: threading.Event | None = None, grant: frozenset | None = None):
        """``work(service)`` on a worker thread. Errors become isError results (to a granted key, a failure of the
        server's own is said without its details: serve/http.UNTOLD); cancellation sets ``cancel``."""
        try:
            return await anyio.to_thread.run_sync(self._guarded, name, work, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            if cancel is not None:
                cancel.set()
            log.info("%s: cancelled by the client", name)
            raise
        except (ValidationError, NotFoundError, Cancelled) as exc:
            raise ToolError(error_text(exc)) from exc
        except Exception as exc:
            if grant is not None:
                from .http import UNTOLD

                raise ToolError(UNTOLD) from exc
            if isinstance(exc, LocalReasonError):
                raise ToolError(error_text(exc)) from exc
            first = _short(str(exc).splitlines()[0] if str(exc) else "", 160)
            raise ToolError(f"{name} failed unexpectedly ({type(exc).__name__}{': ' + first if first else ''}); "
                            f"the details are in {self.log_path}.") from exc  # fmt: skip

    def _guarded(self, name: str, work):
        """Runs on the worker thread, so its end is logged even when the client gave up waiting."""
        t0 = time.perf_counter()
        try:
            result = work(self.service())
        except Cancelled:
            log.info("%s: stopped after cancellation (%.2f s)", name, time.perf_counter() - t0)
            raise
        except LocalReasonError as exc:
            log.info("%s: %s: %s", name, type(exc).__name__, exc.message)
            raise
        except Exception:
            log.exception("%s failed unexpectedly", name)
            raise
        log.info("%s: done in %.2f s", name, time.perf_counter() - t0)
        return result

    def _progress(self, ctx: Context, cancel: threading.Event):
        """A stage callback for Service.reason that sends progress notifications (from the worker thread)."""
        last = 0

        def stage(name, **info) -> None:
            nonlocal last
            current = Stage(name)
            if current.step <= last or cancel.is_set():
                return  # progress must increase; nobody is listening after a cancellation
            last = current.step
            try:
                anyio.from_thread.run(ctx.report_progress, current.step, STEPS, current.describe(**info))
            except Exception:  # noqa: BLE001 - progress is a courtesy: never fail the request for it
                log.debug("progress notification not sent", exc_info=True)

        return stage

    # ------------------------------------------------------------ the tools (named as the spec names them)

    def grant(self, ctx: Context | None) -> frozenset | None:
        """The collections the caller's key may see: over HTTP, what the gate found for the request (serve/http.py);
        over stdio, everything (the user's own process). Over HTTP a request the gate did not mark sees nothing."""
        from .http import GRANT

        try:
            request = ctx.request_context.request if ctx is not None else None
        except ValueError:  # no request context
            request = None
        scope = getattr(request, "scope", None)
        if scope is not None and GRANT in scope:
            return scope[GRANT]
        return frozenset() if self.gated else None

    async def find_items(self, query: Any, limit: Any = _OPTIONAL, ctx: Context = None) -> CallToolResult:
        grant = self.grant(ctx)
        items = await self._run("find_items", lambda svc: svc.find_items(query, grant=grant, **_given(limit=limit)),
                                 grant=grant)
        return _result(items_text(query, items), [i.to_dict() for i in items])

    async def deep_search(self, query: Any, documentId: Any = _OPTIONAL, collectionId: Any = _OPTIONAL,
                          limit: Any = _OPTIONAL, ctx: Context = None) -> CallToolResult:  # fmt: skip
        kwargs = _given(document_id=documentId, collection_id=collectionId, limit=limit)
        grant = self.grant(ctx)
        hits = await self._run("deep_search", lambda svc: svc.deep_search(query, grant=grant, **kwargs), grant=grant)
        scoped = "document_id" in kwargs or "collection_id" in kwargs
        return _result(hits_text(query, hits, scoped), [h.to_dict() for h in hits])

    async def deep_read(self, chunkId: Any, ctx: Context = None) -> CallToolResult:
        grant = self.grant(ctx)
        chunk = await self._run("deep_read", lambda svc: svc.deep_read(chunkId, grant=grant), grant=grant)
        return _result(read_text(chunk), chunk)

    async def deep_expand(self, chunkId: Any, direction: Any, window: Any = _OPTIONAL,
                          ctx: Context = None) -> CallToolResult:  # fmt: skip
        grant = self.grant(ctx)
        result = await self._run("deep_expand", lambda svc: svc.deep_expand(chunkId, direction, grant=grant,
                                                                             **_given(window=window)), grant=grant)  # fmt: skip
        return _result(expand_text(result), result.to_dict())

    async def reason(self, query: Any, limit: Any = _OPTIONAL, documentId: Any = _OPTIONAL,
                     collectionId: Any = _OPTIONAL, ctx: Context = None) -> CallToolResult:  # fmt: skip
        from ..render import answer_markdown

        cancel = threading.Event()
        stage = self._progress(ctx, cancel) if ctx is not None else None
        kwargs = _given(limit=limit, document_id=documentId, collection_id=collectionId)
        grant = self.grant(ctx)
        answer = await self._run("reason", lambda svc: svc.reason(query, stage=stage, cancel=cancel, max_tokens=None,
                                                                   grant=grant, **kwargs), cancel, grant)  # fmt: skip
        data = answer.to_dict()
        return _result(answer_markdown(answer), {k: data[k] for k in ("answer", "citations", "gaps", "meta")})


# ---------------------------------------------------------------- entry point


def _log_to(path: Path) -> None:
    """Python logging to the log file (stderr if it cannot be opened), before the SDK configures its own."""
    try:
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    log.setLevel(logging.INFO)


def run(home: str | None = None, watch: bool = False) -> None:
    """Serve the library at ``home`` (default: LOCALREASON_HOME or the per-user library) over stdio.

    Blocks until the client closes the connection. stdout carries only the protocol; Python logging
    and native libraries' stderr go to ``<home>/logs/mcp.log``, the changes a watch applies too.
    """
    from ..logs import stderr_to
    from .stdio import serve_stdio

    settings = load_settings(home)
    log_path = settings.home / "logs" / LOG_NAME
    with stderr_to(log_path):
        _log_to(log_path)
        print(f"localreason MCP server: library {settings.home}; log {log_path}", file=sys.__stderr__, flush=True)
        log.info("Serving %s over stdio", settings.home)
        server = LocalReasonMCP(settings=settings, watch=watch)
        try:
            anyio.run(serve_stdio, server.mcp)
        finally:
            server.close()
            log.info("Stopped")
