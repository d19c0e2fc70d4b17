"""The HTTP layer under the REST routes: errors in the API's shape, strict JSON bodies, the gate, the model's queue.

- **Errors** are always ``{"error": {"code", "message", "details"}}``: what the service raises maps to a status
  (api_error), FastAPI's own errors are rewritten into the same shape (install_error_handlers).
- **Bodies** are parsed strictly (parse_json_body) before FastAPI validates them: NaN and Infinity, which
  Python's json accepts, are refused, as is anything but a JSON object.
- **The gate** (Gate) runs before anything else: the Host and Origin allowlist against DNS rebinding, the API key,
  and the body size, counted as the body arrives.
- **The queue** (ReasonQueue): reason requests take turns on the one model; a full queue answers 429 at once.
  Each runs in a worker thread (reason_in_thread) that a client hanging up cancels.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import threading
import time
from collections.abc import Iterable
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config import API_KEY_ENV
from ..errors import (Cancelled, LibraryError, LocalReasonError, ModelError, NotFoundError, StoreUnavailable,
                      ValidationError)  # fmt: skip
from ..keys import KeyCheck, KeyRefused
from .handoff import INSTANCE_PATH
from .models import json_kind

log = logging.getLogger("uvicorn.error")

GRANT = "localreason.grant"
"""Where the gate puts a request's grant in its ASGI scope: None (everything) or the collection ids of its key."""


def grant_of(request) -> frozenset | None:
    """The collections the request's key may see (None: all), as the gate found them."""
    return request.scope.get(GRANT)
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
    (StoreUnavailable, 503, "store_unavailable"),
    (LibraryError, 500, "library_error"),
    (LocalReasonError, 500, "generation_failed"),  # GenerationError and anything else met while answering
)


UNTOLD = "The server could not answer this request; its log says why. Ask whoever runs it."
"""What a granted key is told of a server-side failure (5xx): its details can name the store's host and database
or files on the server, which only the library's owner (the main key, or anyone when no key is needed) sees."""


def told(error: ApiError, grant) -> ApiError:
    """``error`` as the caller with ``grant`` may see it (see UNTOLD): a request's own faults (4xx) in full."""
    if grant is None or error.status_code < 500:
        return error
    return ApiError(error.status_code, error.code, UNTOLD)


def api_error(exc: BaseException) -> ApiError:
    """The response for an exception from the service; a 5xx is logged with its traceback."""
    for kind, status, code in _ERROR_STATUS:
        if isinstance(exc, kind):
            error = ApiError(status, code, exc.message, hint=exc.hint)
            break
    else:
        error = ApiError(500, "internal_error", f"Internal error: {type(exc).__name__}: {exc}",
                         hint="This is a bug in localreason; the server log has the traceback.")  # fmt: skip
    if isinstance(exc, StoreUnavailable):  # a passing state met by every request of an outage: one line each
        log.warning("%s: %s", error.code, error.message)
    elif error.status_code >= 500:
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


def install_error_handlers(app: FastAPI) -> None:
    """Every error the app answers, its own and FastAPI's (404, 405, a body that fails its model), in the API's shape."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc, ApiError):
            exc = told(exc, grant_of(request))
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
        error = told(api_error(exc), grant_of(request))
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
        raise ApiError(400, "invalid_json", f"The body must be a JSON object, not {json_kind(value)}.", hint=hint)
    return value


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json_body(await self.body(), self.headers.get("content-type"))
        return self._json


class StrictJSONRoute(APIRoute):
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

    def __init__(self, app, *, api_key: str | None = None, allowed_hosts: Iterable[str] | None, max_body: int,
                 keys: KeyCheck | None = None) -> None:  # fmt: skip
        self.app = app
        self.keys = keys or KeyCheck(api_key)
        """The main key and the library's granted keys (keys.py); each request's grant goes into its scope."""
        self.hosts = frozenset(host_name(h) for h in allowed_hosts) if allowed_hosts is not None else None
        self.max_body = max_body

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        refusal = await anyio.to_thread.run_sync(self.refusal, scope)  # the keys may be read from a database
        if refusal is None:
            body = await self.read_body(scope, receive)
            if body is None:
                refusal = self._too_large()
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
        try:
            authorized = open_to_all or self._authorized(scope, authorization)
        except Exception as exc:  # noqa: BLE001 - the keys could not be read (the store is down): nobody is known yet
            log.error("the library's keys could not be read: %s", exc, exc_info=exc)
            return error_response(503, "unavailable", "The server cannot check keys now; its log says why.",
                                  {"hint": "Try again later, or ask whoever runs the server."})  # fmt: skip
        if not authorized:
            return error_response(401, "unauthorized", "A valid API key is required.",
                                  {"hint": f"Send the header Authorization: API-Key <key> (or Bearer <key>): "
                                   f"{API_KEY_ENV}, or a key from `localreason keys add`."},
                                  headers={"WWW-Authenticate": 'Bearer realm="localreason"'})  # fmt: skip
        length = _header(scope, b"content-length")
        if length is not None:
            if not length.strip().isdigit():
                return error_response(400, "invalid_request", "The Content-Length header is not a number.")
            if int(length) > self.max_body:
                return self._too_large()
        return None

    def _too_large(self) -> JSONResponse:
        return error_response(413, "payload_too_large", f"The request body is over {self.max_body:,} bytes.",
                              {"limit": self.max_body})  # fmt: skip

    def _authorized(self, scope, header: bytes | None) -> bool:
        """Whether the request may go on; its grant (None: everything) is put in ``scope[GRANT]``. Without a key
        configured anywhere every request sees everything; otherwise it must bring a known key."""
        scope[GRANT] = None
        scheme, _, token = (header or b"").strip().partition(b" ")
        token = token.strip() if scheme.lower() in (b"api-key", b"bearer") else b""
        required = self.hosts is None or self.keys.required()  # beyond loopback, always
        if not token:
            return not required
        try:
            scope[GRANT] = self.keys.grant(token)
        except KeyRefused:
            return not required
        return True

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

    def busy(self) -> ApiError:
        """The 429 for a request that finds the queue full."""
        wait = self.retry_after()
        return ApiError(429, "busy", f"{self.limit} questions are already being answered or waiting for the model.",
                        hint=f"Retry in about {wait} s.", details={"retryAfter": wait},
                        headers={"Retry-After": str(wait)})  # fmt: skip


async def _await_disconnect(request: Request, cancel: threading.Event) -> None:
    """Set ``cancel`` when the client hangs up (the body was read already: the next message is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            cancel.set()
            return


async def reason_in_thread(request: Request, service, queue: ReasonQueue, kwargs: dict):
    """service.reason in a worker thread, cancelled if the client disconnects or the server stops.

    The caller was admitted to ``queue``; its place is released when the work ends.
    """
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
