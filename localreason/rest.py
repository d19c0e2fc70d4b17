"""The REST API: `localreason serve` serves the library over HTTP (loopback by default).

Endpoints (all JSON; field names as in the spec, camelCase). Every body is a JSON object; unknown
fields are refused (a misspelt ``documentID`` must not silently widen a search to everything).

    POST /v1/reason       {query, limit?=50 (1-50), documentId?, collectionId?, maxTokens?=8000,
                           includeStatements?=false}
                          -> {"data": {answer, citations[{chunkId, documentId, documentTitle}], gaps,
                                       meta{chunksGathered, citationsDropped, latencyMs},
                                       statements? (with includeStatements: as the CLI's ask --json)}}
    POST /v1/find_items   {query, limit?=10 (1-100)}
                          -> {"data": [{id, type, title, preview, collectionId}]}
    POST /v1/deep_search  {query, limit?=10 (1-100), documentId?, collectionId?}
                          -> {"data": [{chunkId, documentId, documentTitle, level, levelName, chunkIndex,
                                        parentId, sectionPath, content, start, end, pageStart, pageEnd,
                                        alsoIn: [{chunkId, documentId, documentTitle}] (the same text elsewhere)}]}
    POST /v1/deep_read    {chunkId}
                          -> {"data": {chunkId, ..., content, tokenCount, siblingCount, childCount, ...}}
    POST /v1/deep_expand  {chunkId, direction: up|down|previous|next|surrounding, window?=2 (1-20)}
                          -> {"data": {chunkId, direction, items[...], reason, document?}}
    GET  /v1/collections  -> {"data": [{id, name, createdAt, documentCount, chunkCount}]}
    GET  /v1/health       -> {"data": {status: ready|loading|model_error, modelsLoaded, modelError,
                                       library{collections, documents, chunks}, reason{inFlight, limit},
                                       version}}
    GET  /v1/instance?nonce=<16-128 of A-Z a-z 0-9 _ ->
                          -> {"data": {proof, pid, protocol, version}}: which server process this is; proof is
                             handoff.proof(token, nonce, ...), HMAC-SHA256 keyed by the token in serve.json
    GET  /openapi.json    the OpenAPI description. No /docs or /redoc page: they load scripts from a CDN.

The ``data`` of each tool is what the CLI's ``--json`` and the MCP server's structuredContent hold.

Inputs are checked by the same validators as every other front end (search/scope.py, ids.py): the
query is trimmed and a blank one refused; limits are clamped (negative ones refused); maxTokens is
truncated, negatives become 0; omitted scope fields mean "unscoped", null or empty ones are refused,
malformed ids are refused, and a well-formed id the library does not hold gives the spec's scoped
no-evidence answer (200), as the service does.

Errors are always ``{"error": {"code", "message", "details"}}`` (details: an object, ``hint`` = what
to do, ``errors`` = each bad field):

    400 invalid_request   bad field: blank query, wrong JSON type, malformed/empty/null id, unknown field
    400 invalid_json      empty body, not JSON, not application/json, not an object, NaN/Infinity
    400 invalid_host      Host header not in the allowlist (DNS rebinding; loopback binds only)
    401 unauthorized      a key is configured and the request lacks it or has another one
    403 forbidden_origin  a browser page from another origin (loopback binds only)
    404 not_found         unknown chunk id, unknown path;  405 method_not_allowed
    413 payload_too_large body over MAX_BODY_BYTES (checked before parsing, chunked bodies included)
    429 busy              too many reason requests queued (Retry-After header)
    500 generation_failed the model failed while writing the answer (logged with its traceback)
    500 library_error / internal_error   the library cannot be used / a bug (logged with traceback)
    503 model_unavailable a model file is missing or broken; the message says what to do

Security. ``run`` binds 127.0.0.1 by default and refuses any other address (not 127.0.0.0/8, ::1 or
localhost) unless LOCALREASON_API_KEY is set (at least 16 characters). When a key is set, every
request, /v1/health and /openapi.json included, must carry ``Authorization: API-Key <key>`` or
``Authorization: Bearer <key>``; the key is compared in constant time (hmac.compare_digest). The one
exception is GET /v1/instance without an Authorization header: the CLI's hand-off asks it before it sends
the key, to learn that this server holds the token of <home>/serve.json (it answers a proof, never the
token; with a header, the key is checked as everywhere). On a
loopback bind the Host header must name a loopback host (127.0.0.1, localhost, ::1, the bound
address; any port), so a rebound DNS name cannot reach the server from a browser, and a request
whose Origin header names another site is refused. No CORS headers are ever sent. On a non-loopback
bind the key is the protection and any Host is accepted.

Concurrency. Retrieval endpoints are plain functions run in the thread pool, so they run at the
same time (the service's read lock admits many readers). ``reason`` requests take turns on the one
model: at most ``max_waiting`` (4) may wait behind the running one; one more gets 429 at once, with
Retry-After = the recent mean reason latency in seconds. Each reason runs in a worker thread with a
cancel Event while the request task awaits the client's ``http.disconnect``: a client that hangs up
while its request waits or runs cancels it (the service checks the Event while waiting for the model
and between generated tokens; the server logs "A question was cancelled"). At shutdown, requests
still running after 5 s are cancelled the same way.

Models load in the background at startup (``service.warm()``); /v1/health answers at once and
says whether they are loaded.

Hand-off (handoff.py). Once the socket listens, ``run`` writes ``<home>/serve.json`` (its URL, pid, library
folder, settings, version and code, whether a key is needed, and the random token /v1/instance proves it
holds), and removes it
when it stops if the file still names this process. `localreason search` and `ask` in a shell find it and
send their request here instead of loading the models themselves.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, WithJsonSchema
from pydantic_core import PydanticCustomError
from starlette.exceptions import HTTPException as StarletteHTTPException

from . import __version__
from .errors import Cancelled, LibraryError, LocalReasonError, ModelError, NotFoundError, ValidationError
from .ids import check_id
from .search import DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT, UNSET, clamp_limit, clean_max_tokens, clean_query
from .serve import handoff

MAX_BODY_BYTES = 1_000_000
"""Largest request body accepted (a question is at most 2,000 characters; this leaves room)."""
MAX_WAITING = 4
"""reason requests that may wait for the model behind the running one before new ones get 429."""
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
MIN_KEY_CHARS = 16
KEY_ENV = "LOCALREASON_API_KEY"

log = logging.getLogger("uvicorn.error")
"""uvicorn's own logger: a model failure's traceback lands where uvicorn's messages go."""


# ---------------------------------------------------------------- errors


class ApiError(HTTPException):
    """An error response in this API's shape: ``{"error": {"code", "message", "details"}}``."""

    def __init__(self, status: int, code: str, message: str, *, hint: str | None = None,
                 details: dict | None = None, headers: dict | None = None) -> None:  # fmt: skip
        super().__init__(status, message, headers)
        self.code = code
        self.message = message
        self.details = {**({"hint": hint} if hint else {}), **(details or {})}


def error_response(status: int, code: str, message: str, details: dict | None = None,
                   headers: dict | None = None) -> JSONResponse:  # fmt: skip
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return JSONResponse(body, status_code=status, headers=headers)


_ERROR_STATUS = (
    (ValidationError, 400, "invalid_request"),
    (NotFoundError, 404, "not_found"),
    (Cancelled, 499, "cancelled"),  # the client hung up: nobody reads this response
    (ModelError, 503, "model_unavailable"),
    (LibraryError, 500, "library_error"),
    (LocalReasonError, 500, "generation_failed"),  # GenerationError and anything else met while answering
)


def api_error(exc: BaseException) -> ApiError:
    """The response for an exception from the service; a 5xx is logged with its traceback."""
    for kind, status, code in _ERROR_STATUS:
        if isinstance(exc, kind):
            error = ApiError(status, code, exc.message, hint=exc.hint)
            break
    else:
        error = ApiError(500, "internal_error", f"Internal error: {type(exc).__name__}: {exc}",
                         hint="This is a bug in localreason; the server log has the traceback.")  # fmt: skip
    if error.status_code >= 500:
        log.error("%s: %s", error.code, error.message, exc_info=exc)
    return error


@contextmanager
def service_errors():
    """Turn what the service raises into ApiError (see api_error)."""
    try:
        yield
    except ApiError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes a response in the API's shape
        raise api_error(exc) from exc


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc, ApiError):
            return error_response(exc.status_code, exc.code, exc.message, exc.details, exc.headers)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        message = "No such endpoint." if exc.status_code == 404 else str(exc.detail)
        return error_response(exc.status_code, code, message, {"hint": "See /openapi.json."}, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [_field_error(e) for e in exc.errors()]
        message = errors[0]["message"] + (f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else "")
        return error_response(400, "invalid_request", message,
                              {"hint": "See /openapi.json for the request schema.", "errors": errors})  # fmt: skip

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        error = api_error(exc)
        return error_response(error.status_code, error.code, error.message, error.details)


def _field_error(e: dict) -> dict:
    loc = [str(p) for p in e.get("loc", ()) if p != "body"]
    field = ".".join(loc) or "body"
    if e.get("type") == "extra_forbidden":
        message = f"Unknown field {field!r}."
    elif e.get("type") == "missing":
        message = f"{field} is required."
    elif e.get("type") == "json_type":
        message = e["msg"] + "."
    else:
        message = f"{field}: {e.get('msg', 'invalid')}."
    return {"field": field, "message": message}


# ---------------------------------------------------------------- request bodies


def _json_kind(value: object) -> str:
    for kind, name in ((type(None), "null"), (bool, "a boolean"), (str, "a string"), ((int, float), "a number"),
                       (list, "an array"), (dict, "an object")):  # fmt: skip
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _json_type(expected: str, nullable: bool = False):
    """A validator accepting exactly one JSON type (no coercion: "5" is not a number, true is not 1)."""

    def check(value: object, info: ValidationInfo) -> object:
        if nullable and value is None:
            return value  # the service's own validators say why null is refused where it is
        if expected == "string":
            ok = isinstance(value, str)
        elif expected == "boolean":
            ok = isinstance(value, bool)
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise PydanticCustomError("json_type", "{field} must be {expected}, not {actual}",
                                      {"field": info.field_name, "expected": f"a {expected}",
                                       "actual": _json_kind(value)})  # fmt: skip
        return value

    return AfterValidator(check)


Text = Annotated[Any, _json_type("string"), WithJsonSchema({"type": "string"})]
Number = Annotated[Any, _json_type("number"), WithJsonSchema({"type": "number"})]
Boolean = Annotated[Any, _json_type("boolean"), WithJsonSchema({"type": "boolean"})]


def _id_type(prefix: str) -> Any:
    return Annotated[Any, _json_type("string", nullable=True),
                     WithJsonSchema({"type": "string", "pattern": f"^{prefix}_[a-z2-7]{{16}}$"})]  # fmt: skip


DocumentId, CollectionId, ChunkId = _id_type("doc"), _id_type("col"), _id_type("chk")
_STRICT = ConfigDict(extra="forbid")
_QUERY = "The question or search text; trimmed, at least one non-blank character, at most 2,000."
_DOC = "Restrict to one document. Omit when unused: null and empty values are refused."
_COL = "Restrict to documents of one collection. Omit when unused: null and empty values are refused."


class _ScopedQuery(BaseModel):
    """A query that may be restricted to one document or collection (reason, deep_search)."""

    model_config = _STRICT
    query: Text = Field(description=_QUERY)
    documentId: DocumentId = Field(None, description=_DOC)
    collectionId: CollectionId = Field(None, description=_COL)


class ReasonRequest(_ScopedQuery):
    limit: Number = Field(None, description="Evidence chunks in the packet: default 50, clamped to 1-50.")
    maxTokens: Number = Field(None, description="Evidence token budget: default 8000; finite values truncated, "
                              "negative ones become 0.")  # fmt: skip
    includeStatements: Boolean = Field(False, description="Also return the verified statements, each with its "
                                       "quotations and their offsets (what the CLI's ask --json prints).")  # fmt: skip


class FindItemsRequest(BaseModel):
    model_config = _STRICT
    query: Text = Field(description=_QUERY)
    limit: Number = Field(None, description="Items to return: default 10, clamped to 1-100.")


class DeepSearchRequest(_ScopedQuery):
    limit: Number = Field(None, description="Passages to return: default 10, clamped to 1-100.")


class DeepReadRequest(BaseModel):
    model_config = _STRICT
    chunkId: ChunkId = Field(description="The chunk to read (chk_...).")


class DeepExpandRequest(BaseModel):
    model_config = _STRICT
    chunkId: ChunkId = Field(description="The chunk to move from (chk_...).")
    direction: Annotated[Any, _json_type("string"),
                         WithJsonSchema({"type": "string", "enum": ["up", "down", "previous", "next", "surrounding"]})]
    window: Number = Field(None, description="For surrounding: chunks on each side, default 2, clamped to 1-20.")


def _scope(body: BaseModel) -> dict:
    """document_id / collection_id for the service: UNSET when omitted, else the value as sent."""
    return {"document_id": body.documentId if "documentId" in body.model_fields_set else UNSET,
            "collection_id": body.collectionId if "collectionId" in body.model_fields_set else UNSET}  # fmt: skip


def _check_scope_ids(scope: dict) -> None:
    """Refuse null, empty or malformed scope ids before a reason request queues for the model."""
    for key, field, kind in (("document_id", "documentId", "document"),
                             ("collection_id", "collectionId", "collection")):  # fmt: skip
        value = scope[key]
        if value is None:
            raise ValidationError(f"{field} is null.", hint="Omit unused scope fields instead of sending null.")
        if value is not UNSET:
            check_id(value, kind, field)


# ---------------------------------------------------------------- response bodies (for the OpenAPI description)


class _Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


class CitationOut(_Shape):
    chunkId: str
    documentId: str
    documentTitle: str


class MetaOut(_Shape):
    chunksGathered: int
    citationsDropped: int
    latencyMs: int


class AnswerOut(_Shape):
    answer: str = Field(description="Prose with [[chunkId]] citation tokens.")
    citations: list[CitationOut]
    gaps: list[str]
    meta: MetaOut
    statements: list[dict] | None = Field(None, description="Only with includeStatements: [{text, references: "
                                          "[{chunkId, quotation, documentId, start, end}]}].")  # fmt: skip


class ReasonResponse(_Shape):
    data: AnswerOut


class ElsewhereOut(_Shape):
    chunkId: str
    documentId: str
    documentTitle: str


class HitOut(_Shape):
    chunkId: str
    documentId: str
    documentTitle: str
    level: int
    levelName: str
    chunkIndex: int
    parentId: str
    sectionPath: list[str]
    content: str
    alsoIn: list[ElsewhereOut] = Field(default_factory=list, description="deep_search: other passages with the "
                                       "same text (a copied file, another version), listed once here.")  # fmt: skip


class ItemOut(_Shape):
    id: str
    type: str = Field(description="document or collection")
    title: str
    preview: str
    collectionId: str | None = None


class FindItemsResponse(_Shape):
    data: list[ItemOut]


class DeepSearchResponse(_Shape):
    data: list[HitOut]


class _Read(HitOut):
    tokenCount: int
    siblingCount: int
    childCount: int
    collectionId: str
    sourcePath: str


class DeepReadResponse(_Shape):
    data: _Read


class _Expand(_Shape):
    chunkId: str
    direction: str
    items: list[HitOut]
    reason: str = Field(description="Why the move found nothing, or empty.")
    document: dict | None = Field(None, description="For up from a section: the document (not a chunk).")


class DeepExpandResponse(_Shape):
    data: _Expand


class _Health(_Shape):
    status: str = Field(description="ready, loading or model_error")
    modelsLoaded: bool
    modelError: dict | None
    library: dict
    reason: dict
    version: str


class HealthResponse(_Shape):
    data: _Health


class _Collection(_Shape):
    id: str
    name: str
    createdAt: str
    documentCount: int
    chunkCount: int


class CollectionsResponse(_Shape):
    data: list[_Collection]


class _Instance(_Shape):
    proof: str = Field(description="HMAC-SHA256 (hex) keyed by this process's random token (in <home>/serve.json) "
                       "over the nonce and the other fields: handoff.proof.")  # fmt: skip
    pid: int
    protocol: int
    version: str


class InstanceResponse(_Shape):
    data: _Instance


class _Error(_Shape):
    code: str
    message: str
    details: dict


class ErrorResponse(_Shape):
    error: _Error


def _errors(*statuses: int) -> dict:
    return {s: {"model": ErrorResponse} for s in (400, 401, *statuses)}


# ---------------------------------------------------------------- strict JSON bodies


class _NotJsonNumber(ValueError):
    pass


def _reject_constant(name: str):
    raise _NotJsonNumber(name)


def parse_json_body(body: bytes, content_type: str | None) -> dict:
    """The body as a JSON object, or ApiError 400. NaN and Infinity (which Python's json accepts) are refused."""
    hint = 'Send a JSON object with Content-Type: application/json, e.g. {"query": "..."}.'
    if not body:
        raise ApiError(400, "invalid_json", "The request body is empty.", hint=hint)
    media = (content_type or "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ApiError(400, "invalid_json", f"The body must be JSON, not {media or 'unlabelled data'}.", hint=hint)
    try:
        value = json.loads(body, parse_constant=_reject_constant)
    except _NotJsonNumber as exc:
        raise ApiError(400, "invalid_json", f"{exc} is not a JSON number.",
                       hint="Send finite numbers: NaN and Infinity are not valid JSON.") from None  # fmt: skip
    except json.JSONDecodeError as exc:
        raise ApiError(400, "invalid_json", f"The body is not valid JSON: {exc.msg} (line {exc.lineno}, "
                       f"column {exc.colno}).", hint=hint) from None  # fmt: skip
    except RecursionError:
        raise ApiError(400, "invalid_json", "The body is nested too deeply to read.", hint=hint) from None
    except UnicodeDecodeError:
        raise ApiError(400, "invalid_json", "The body is not UTF-8 text (compressed bodies are not accepted).",
                       hint=hint) from None  # fmt: skip
    except ValueError:  # a number of over 4,300 digits
        raise ApiError(400, "invalid_json", "The body holds a number too long to read.", hint=hint) from None
    if not isinstance(value, dict):
        raise ApiError(400, "invalid_json", f"The body must be a JSON object, not {_json_kind(value)}.", hint=hint)
    return value


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json_body(await self.body(), self.headers.get("content-type"))
        return self._json


class _StrictJSONRoute(APIRoute):
    """Bodies are parsed strictly (parse_json_body) before FastAPI validates them."""

    def get_route_handler(self):
        handler = super().get_route_handler()
        has_body = self.body_field is not None

        async def strict(request: Request):
            request = _StrictJSONRequest(request.scope, request.receive)
            if has_body:
                await request.json()
            return await handler(request)

        return strict


# ---------------------------------------------------------------- host, origin, key, body size


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value
    return None


def host_name(host: str) -> str:
    """The host part of a Host header or URL authority, lower case: '[::1]:80' -> '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or name to bind) is loopback: localhost, 127.0.0.0/8 or ::1."""
    name = host_name(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Gate:
    """ASGI middleware run before anything else: Host and Origin allowlist, API key, body size limit.

    The body is read here, counted as it arrives (chunked bodies too), and handed on only when it
    fits; afterwards the app's ``receive`` is the server's, so a disconnect is still seen.
    """

    def __init__(self, app, *, api_key: str | None, allowed_hosts: Iterable[str] | None, max_body: int) -> None:
        self.app = app
        self.key = api_key.encode("utf-8") if api_key else None
        self.hosts = frozenset(host_name(h) for h in allowed_hosts) if allowed_hosts is not None else None
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        refusal = self.refusal(scope)
        if refusal is None:
            body = await self.read_body(scope, receive)
            if body is None:
                refusal = error_response(413, "payload_too_large", f"The request body is over {self.max_body:,} bytes.",
                                         {"limit": self.max_body})  # fmt: skip
        if refusal is not None:
            return await refusal(scope, receive, send)
        delivered = False

        async def replay():
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def refusal(self, scope) -> JSONResponse | None:
        """The response refusing this request before its body is read, or None."""
        if self.hosts is not None:
            host = (_header(scope, b"host") or b"").decode("latin-1")
            if host_name(host) not in self.hosts:
                return error_response(400, "invalid_host", f"Host {host!r} is not served here.",
                                      {"hint": "Use http://127.0.0.1:<port> (or localhost)."})  # fmt: skip
            origin = _header(scope, b"origin")
            if origin is not None and (urlsplit(origin.decode("latin-1")).hostname or "") not in self.hosts:
                return error_response(403, "forbidden_origin", "Requests from web pages of other sites are refused.")
        authorization = _header(scope, b"authorization")
        open_to_all = authorization is None and scope.get("path") == INSTANCE_PATH  # the hand-off's proof, first
        if self.key is not None and not open_to_all and not self._authorized(authorization):
            return error_response(401, "unauthorized", "A valid API key is required.",
                                  {"hint": "Send the header Authorization: API-Key <LOCALREASON_API_KEY> "
                                   "(or Bearer <key>)."},
                                  headers={"WWW-Authenticate": 'Bearer realm="localreason"'})  # fmt: skip
        length = _header(scope, b"content-length")
        if length is not None:
            if not length.strip().isdigit():
                return error_response(400, "invalid_request", "The Content-Length header is not a number.")
            if int(length) > self.max_body:
                return error_response(413, "payload_too_large", f"The request body is over {self.max_body:,} bytes.",
                                      {"limit": self.max_body})  # fmt: skip
        return None

    def _authorized(self, header: bytes | None) -> bool:
        scheme, _, token = (header or b"").strip().partition(b" ")
        if scheme.lower() not in (b"api-key", b"bearer"):
            token = b""
        return hmac.compare_digest(token.strip(), self.key) and bool(token.strip())

    async def read_body(self, scope, receive) -> bytes | None:
        """The whole body, or None as soon as it grows over the limit."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)  # the client left; the app will see the disconnect
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


# ---------------------------------------------------------------- the reason queue


class ReasonQueue:
    """Admission to the model: one running plus ``max_waiting`` waiting; past that, 429."""

    def __init__(self, max_waiting: int) -> None:
        self.limit = max_waiting + 1
        self.in_flight = 0
        self.mean_seconds = 10.0
        """Recent mean latency of a reason request (for Retry-After)."""
        self._lock = threading.Lock()

    def admit(self) -> bool:
        with self._lock:
            if self.in_flight >= self.limit:
                return False
            self.in_flight += 1
            return True

    def release(self, seconds: float | None) -> None:
        with self._lock:
            self.in_flight -= 1
            if seconds is not None:
                self.mean_seconds = 0.7 * self.mean_seconds + 0.3 * seconds

    def retry_after(self) -> int:
        return max(1, min(300, math.ceil(self.mean_seconds)))


async def _await_disconnect(request: Request, cancel: threading.Event) -> None:
    """Set ``cancel`` when the client hangs up (the body was read already: the next message is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            cancel.set()
            return


async def _reason_in_thread(request: Request, service, queue: ReasonQueue, kwargs: dict):
    """service.reason in a worker thread, cancelled if the client disconnects or the server stops."""
    cancel = threading.Event()
    outcome: dict = {}

    def work():
        started, ok = time.perf_counter(), False
        try:
            outcome["answer"] = service.reason(cancel=cancel, **kwargs)
            ok = True
        except BaseException as exc:  # noqa: BLE001 - handed back to the request task
            outcome["error"] = exc
        finally:
            queue.release(time.perf_counter() - started if ok else None)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_await_disconnect, request, cancel)
            await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
            tg.cancel_scope.cancel()
    except anyio.get_cancelled_exc_class():
        cancel.set()  # the server is stopping: the abandoned thread stops at its next check
        raise
    if "error" in outcome:
        if isinstance(outcome["error"], Cancelled):
            log.info("A question was cancelled: the client disconnected.")
        raise api_error(outcome["error"])
    return outcome["answer"]


# ---------------------------------------------------------------- routes


def _reason_routes(router: APIRouter, service, queue: ReasonQueue) -> None:
    @router.post("/v1/reason", response_model=None,
                 responses={200: {"model": ReasonResponse}, **_errors(429, 500, 503)},
                 summary="One cited answer from the library (spec: reasoning.md)")  # fmt: skip
    async def reason(request: Request, body: ReasonRequest) -> JSONResponse:
        with service_errors():  # checked now, so a bad request never waits in the queue
            kwargs = {"query": clean_query(body.query),
                      "limit": clamp_limit(body.limit, DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT),
                      "max_tokens": clean_max_tokens(body.maxTokens), **_scope(body)}  # fmt: skip
            _check_scope_ids(kwargs)
        if not queue.admit():
            wait = queue.retry_after()
            raise ApiError(429, "busy", f"{queue.limit} questions are already being answered or waiting for the model.",
                           hint=f"Retry in about {wait} s.", details={"retryAfter": wait},
                           headers={"Retry-After": str(wait)})  # fmt: skip
        answer = await _reason_in_thread(request, service, queue, kwargs)
        data = answer.to_dict()
        keys = ("answer", "citations", "gaps", "meta") + (("statements",) if body.includeStatements else ())
        return JSONResponse({"data": {k: data[k] for k in keys}})


def _retrieval_routes(router: APIRouter, service) -> None:
    @router.post("/v1/find_items", response_model=None, responses={200: {"model": FindItemsResponse}, **_errors(503)},
                 summary="Documents and collections about a query")  # fmt: skip
    def find_items(body: FindItemsRequest) -> JSONResponse:
        with service_errors():
            items = service.find_items(body.query, limit=body.limit)
        return JSONResponse({"data": [i.to_dict() for i in items]})

    @router.post("/v1/deep_search", response_model=None, responses={200: {"model": DeepSearchResponse}, **_errors(503)},
                 summary="Passages about a query, best first, optionally scoped")  # fmt: skip
    def deep_search(body: DeepSearchRequest) -> JSONResponse:
        with service_errors():
            hits = service.deep_search(body.query, limit=body.limit, **_scope(body))
        return JSONResponse({"data": [h.to_dict() for h in hits]})

    @router.get("/v1/collections", response_model=None,
                responses={200: {"model": CollectionsResponse}, **_errors()},
                summary="The library's collections with their document and chunk counts")  # fmt: skip
    def collections() -> JSONResponse:
        with service_errors():
            return JSONResponse({"data": [c.to_dict() for c in service.collections()]})

    @router.post("/v1/deep_read", response_model=None, responses={200: {"model": DeepReadResponse}, **_errors(404)},
                 summary="One chunk in full with its place in the document tree")  # fmt: skip
    def deep_read(body: DeepReadRequest) -> JSONResponse:
        with service_errors():
            return JSONResponse({"data": service.deep_read(body.chunkId)})

    @router.post("/v1/deep_expand", response_model=None, responses={200: {"model": DeepExpandResponse}, **_errors(404)},
                 summary="Move through a document's tree from a chunk")  # fmt: skip
    def deep_expand(body: DeepExpandRequest) -> JSONResponse:
        with service_errors():
            result = service.deep_expand(body.chunkId, body.direction, window=body.window)
        return JSONResponse({"data": result.to_dict()})


INSTANCE_PATH = "/v1/instance"
NONCE = Query(min_length=16, max_length=128, pattern=r"^[A-Za-z0-9_-]+$",
              description="Fresh random text chosen by the client; the proof is computed over it.")  # fmt: skip


def _instance_route(router: APIRouter, token: str) -> None:
    instance = {"pid": os.getpid(), "protocol": handoff.PROTOCOL, "version": __version__}

    @router.get(INSTANCE_PATH, response_model=None, responses={200: {"model": InstanceResponse}, **_errors()},
                summary="Which server process this is: proof that it holds the token of <home>/serve.json")  # fmt: skip
    def instance_info(nonce: Annotated[str, NONCE]) -> JSONResponse:
        # touches no library and no model: it answers at once. The token itself is never sent.
        return JSONResponse({"data": {"proof": handoff.proof(token, nonce, **instance), **instance}})


def _health_route(router: APIRouter, service, queue: ReasonQueue) -> None:
    @router.get("/v1/health", response_model=None, responses={200: {"model": HealthResponse}, **_errors()},
                summary="Whether the server is up, its models loaded, and what the library holds")  # fmt: skip
    def health() -> JSONResponse:
        with service_errors():
            collections = service.collections()
        error = service.warm_error
        loaded = service.ready
        status = "model_error" if error is not None else "ready" if loaded else "loading"
        return JSONResponse({"data": {
            "status": status, "modelsLoaded": loaded,
            "modelError": {"message": getattr(error, "message", str(error)), "hint": getattr(error, "hint", None)}
            if error is not None else None,
            "library": {"collections": len(collections), "documents": sum(c.document_count for c in collections),
                        "chunks": sum(c.chunk_count for c in collections)},
            "reason": {"inFlight": queue.in_flight, "limit": queue.limit},
            "version": __version__,
        }})  # fmt: skip


# ---------------------------------------------------------------- the app


def create_app(service, *, api_key: str | None = None, allowed_hosts: Iterable[str] | None = LOOPBACK_NAMES,
               max_body_bytes: int = MAX_BODY_BYTES, max_waiting: int = MAX_WAITING, warm: bool = True) -> FastAPI:  # fmt: skip
    """The ASGI app over ``service``. ``allowed_hosts`` None accepts any Host (a non-loopback bind, keyed);
    by default only loopback names are (a TestClient needs base_url="http://127.0.0.1").

    ``api_key`` None means no key (``run`` reads LOCALREASON_API_KEY); ``warm`` loads the models in the
    background when the app starts.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if warm:
            service.warm()
        yield

    app = FastAPI(title="localreason", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  swagger_ui_oauth2_redirect_url=None, openapi_url="/openapi.json",
                  description=(__doc__ or "").split("\n\n", 1)[0])  # fmt: skip
    queue = ReasonQueue(max_waiting)
    router = APIRouter(route_class=_StrictJSONRoute)
    _reason_routes(router, service, queue)
    _retrieval_routes(router, service)
    _health_route(router, service, queue)
    app.state.instance_token = handoff.new_token()
    _instance_route(router, app.state.instance_token)
    app.include_router(router)
    _install_error_handlers(app)
    app.add_middleware(Gate, api_key=api_key, allowed_hosts=allowed_hosts, max_body=max_body_bytes)
    app.state.service, app.state.reason_queue = service, queue
    _describe_errors_and_key(app, keyed=api_key is not None)
    return app


def _describe_errors_and_key(app: FastAPI, keyed: bool) -> None:
    """/openapi.json without FastAPI's 422 (this API answers 400), and with the key scheme when one is set."""
    generate = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = generate()
        for operations in doc.get("paths", {}).values():
            for operation in operations.values():
                operation.get("responses", {}).pop("422", None)
        schemas = doc.get("components", {}).get("schemas", {})
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        if keyed:
            doc["components"]["securitySchemes"] = {
                "apiKey": {"type": "apiKey", "in": "header", "name": "Authorization",
                           "description": "API-Key <key> or Bearer <key> (LOCALREASON_API_KEY)"}}  # fmt: skip
            doc["security"] = [{"apiKey": []}]
        return doc

    app.openapi = openapi


def api_key_from_env() -> str | None:
    """LOCALREASON_API_KEY, or None when unset or blank; a short key is refused."""
    key = os.environ.get(KEY_ENV, "").strip()
    if not key:
        return None
    if len(key) < MIN_KEY_CHARS:
        raise ValidationError(f"{KEY_ENV} is too short ({len(key)} characters; at least {MIN_KEY_CHARS}).",
                              hint="Use a long random key, e.g. the output of "
                              "python -c 'import secrets; print(secrets.token_urlsafe(32))'.")  # fmt: skip
    return key


def _bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on host:port, or a LocalReasonError that says why not."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValidationError(f"Port {port!r} is not a port number.",
                              hint="Use --port with 1 to 65535 (0: any free port).")  # fmt: skip
    name = host.strip().strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in name else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((name, port))
        sock.listen(128)  # connections queue from now on, before uvicorn starts: the announced address answers
    except OSError as exc:
        sock.close()
        raise LocalReasonError(f"Cannot listen on {host} port {port}: {exc.strerror or exc}.",
                               hint="Another program may be using the port: choose another with --port, "
                               "or check the --host address.") from None  # fmt: skip
    sock.set_inheritable(True)
    return sock


def run(home: str | None = None, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the library at ``home`` over HTTP until interrupted (blocking). See the module docstring."""
    import uvicorn

    from .service import Service

    key = api_key_from_env()
    loopback = is_loopback(host)
    if not loopback and key is None:
        raise ValidationError(f"Refusing to listen on {host} without an API key: anyone who can reach it could "
                              "read your library.",
                              hint=f"Set {KEY_ENV} to a long random secret (clients send it as "
                              "Authorization: API-Key <key>), or serve on 127.0.0.1.")  # fmt: skip
    sock = _bind(host, port)
    service = Service.open(home)
    try:
        allowed = (LOOPBACK_NAMES | {host_name(host)}) if loopback else None
        app = create_app(service, api_key=key, allowed_hosts=allowed)
        config = uvicorn.Config(app, proxy_headers=False, server_header=False, timeout_graceful_shutdown=5)
        bound = sock.getsockname()[1]
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        print(f"localreason: serving {service.library.home} on http://{shown}:{bound} "
              f"({'API key required' if key else 'no API key'}; models load in the background)",
              file=sys.stderr, flush=True)  # fmt: skip
        token = app.state.instance_token
        published = handoff.publish(service.settings, _local_url(sock), token, key is not None, __version__)
        try:
            with _sigterm_unwinds():
                uvicorn.Server(config).run(sockets=[sock])
        finally:
            handoff.withdraw(published, token)
    finally:
        sock.close()
        service.close()


@contextmanager
def _sigterm_unwinds():
    """SIGTERM ends the server through the ``finally`` blocks, as Ctrl-C does (exit code 143).

    uvicorn shuts down gracefully on SIGTERM and then raises the signal again to the handler in place
    before it: the default one would end the process there, leaving the discovery file and the library open.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _local_url(sock: socket.socket) -> str:
    """The URL a program on this machine reaches the listening socket at (loopback for a wildcard bind)."""
    address, port = sock.getsockname()[:2]
    if ipaddress.ip_address(address).is_unspecified:
        address = "::1" if sock.family == socket.AF_INET6 else "127.0.0.1"
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"


def main(argv: list[str] | None = None) -> int:
    """python -m localreason.rest [--home DIR] [--host H] [--port P] (the same as `localreason serve`)."""
    parser = argparse.ArgumentParser(prog="python -m localreason.rest", description="Serve the library over HTTP.")
    parser.add_argument("--home", default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    try:
        run(args.home, args.host, args.port)
    except LocalReasonError as exc:
        print(f"Error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(exc.hint, file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
