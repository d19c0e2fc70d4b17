"""The REST API: `localreason serve` serves the library over HTTP (loopback by default).

The routes, the app (create_app) and ``run``, which binds the socket, publishes the hand-off's discovery file and
serves until interrupted. docs/rest-api.md describes the API: endpoints, errors, security, concurrency. The
bodies are the models of models.py; http.py holds what runs under the routes (the gate, strict JSON, errors,
the reason queue).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Iterable
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated

from fastapi import APIRouter, FastAPI, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from .. import __version__
from ..config import API_KEY_ENV
from ..errors import LocalReasonError, ValidationError
from ..ids import check_id
from ..signals import stop_signals
from ..search import DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT, UNSET, clamp_limit, clean_max_tokens, clean_query
from . import handoff
from ..keys import KEY_PREFIX, KeyCheck, library_has_keys
from .http import (Gate, ReasonQueue, StrictJSONRoute, grant_of, host_name, install_error_handlers, is_loopback,
                   UNTOLD, reason_in_thread, service_errors)  # fmt: skip
from .models import (CollectionsResponse, DeepExpandRequest, DeepExpandResponse, DeepReadRequest, DeepReadResponse,
                     DeepSearchRequest, DeepSearchResponse, ErrorResponse, FindItemsRequest, FindItemsResponse,
                     HealthResponse, InstanceResponse, ReasonRequest, ReasonResponse)  # fmt: skip

DESCRIPTION = "The REST API: `localreason serve` serves the library over HTTP (loopback by default)."
"""/openapi.json's info.description."""
MAX_BODY_BYTES = 1_000_000
"""Largest request body accepted (a question is at most 2,000 characters; this leaves room)."""
MAX_WAITING = 4
"""reason requests that may wait for the model behind the running one before new ones get 429."""
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
MIN_KEY_CHARS = 16
NONCE = Query(min_length=16, max_length=128, pattern=r"^[A-Za-z0-9_-]+$",
              description="Fresh random text chosen by the client; the proof is computed over it.")  # fmt: skip


def _errors(*statuses: int) -> dict:
    """The error responses a route documents in /openapi.json: 400 and 401 always, and ``statuses``."""
    return {s: {"model": ErrorResponse} for s in (400, 401, *statuses)}


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


# ---------------------------------------------------------------- routes


def _reason_routes(router: APIRouter, service, queue: ReasonQueue) -> None:
    @router.post("/v1/reason", response_model=None,
                 responses={200: {"model": ReasonResponse}, **_errors(429, 500, 503)},
                 summary="One cited answer from the library (spec: reasoning.md)")  # fmt: skip
    async def reason(request: Request, body: ReasonRequest) -> JSONResponse:
        with service_errors():  # checked now, so a bad request never waits in the queue
            kwargs = {"query": clean_query(body.query),
                      "limit": clamp_limit(body.limit, DEFAULT_EVIDENCE_LIMIT, MAX_EVIDENCE_LIMIT),
                      "max_tokens": clean_max_tokens(body.maxTokens), **_scope(body), "grant": grant_of(request)}  # fmt: skip
            _check_scope_ids(kwargs)
        if not queue.admit():
            raise queue.busy()
        answer = await reason_in_thread(request, service, queue, kwargs)
        data = answer.to_dict()
        keys = ("answer", "citations", "gaps", "meta") + (("statements",) if body.includeStatements else ())
        return JSONResponse({"data": {k: data[k] for k in keys}})


def _retrieval_routes(router: APIRouter, service) -> None:
    @router.post("/v1/find_items", response_model=None, responses={200: {"model": FindItemsResponse}, **_errors(503)},
                 summary="Documents and collections about a query")  # fmt: skip
    def find_items(request: Request, body: FindItemsRequest) -> JSONResponse:
        with service_errors():
            items = service.find_items(body.query, limit=body.limit, grant=grant_of(request))
        return JSONResponse({"data": [i.to_dict() for i in items]})

    @router.post("/v1/deep_search", response_model=None, responses={200: {"model": DeepSearchResponse}, **_errors(503)},
                 summary="Passages about a query, best first, optionally scoped")  # fmt: skip
    def deep_search(request: Request, body: DeepSearchRequest) -> JSONResponse:
        with service_errors():
            hits = service.deep_search(body.query, limit=body.limit, **_scope(body), grant=grant_of(request))
        return JSONResponse({"data": [h.to_dict() for h in hits]})

    @router.get("/v1/collections", response_model=None,
                responses={200: {"model": CollectionsResponse}, **_errors()},
                summary="The library's collections with their document and chunk counts")  # fmt: skip
    def collections(request: Request) -> JSONResponse:
        with service_errors():
            return JSONResponse({"data": [c.to_dict() for c in service.collections(grant=grant_of(request))]})

    @router.post("/v1/deep_read", response_model=None, responses={200: {"model": DeepReadResponse}, **_errors(404)},
                 summary="One chunk in full with its place in the document tree")  # fmt: skip
    def deep_read(request: Request, body: DeepReadRequest) -> JSONResponse:
        with service_errors():
            return JSONResponse({"data": service.deep_read(body.chunkId, grant=grant_of(request))})

    @router.post("/v1/deep_expand", response_model=None, responses={200: {"model": DeepExpandResponse}, **_errors(404)},
                 summary="Move through a document's tree from a chunk")  # fmt: skip
    def deep_expand(request: Request, body: DeepExpandRequest) -> JSONResponse:
        with service_errors():
            result = service.deep_expand(body.chunkId, body.direction, window=body.window, grant=grant_of(request))
        return JSONResponse({"data": result.to_dict()})


def _instance_route(router: APIRouter, token: str) -> None:
    instance = {"pid": os.getpid(), "protocol": handoff.PROTOCOL, "version": __version__}

    @router.get(handoff.INSTANCE_PATH, response_model=None, responses={200: {"model": InstanceResponse}, **_errors()},
                summary="Which server process this is: proof that it holds the token of <home>/serve.json")  # fmt: skip
    def instance_info(nonce: Annotated[str, NONCE]) -> JSONResponse:
        # touches no library and no model: it answers at once. The token itself is never sent.
        return JSONResponse({"data": {"proof": handoff.proof(token, nonce, **instance), **instance}})


def _store_of(service, grant) -> dict:
    """Where the library lives: its kind, and (to the main key only: a granted key learns no host) its URL without
    the password."""
    kind = "local" if service.settings.store == "local" else "postgresql"
    return {"kind": kind, **({"url": service.settings.store_shown} if grant is None else {})}


def _health_route(router: APIRouter, service, queue: ReasonQueue) -> None:
    @router.get("/v1/health", response_model=None, responses={200: {"model": HealthResponse}, **_errors()},
                summary="Whether the server is up, its models loaded, and what the library holds")  # fmt: skip
    def health(request: Request) -> JSONResponse:
        with service_errors():
            collections = service.collections(grant=grant_of(request))
        error = service.warm_error
        loaded = service.ready
        status = "model_error" if error is not None else "ready" if loaded else "loading"
        owner = grant_of(request) is None  # a model's problem names files on the server: for its owner only
        return JSONResponse({"data": {
            "status": status, "modelsLoaded": loaded,
            "modelError": ({"message": getattr(error, "message", str(error)), "hint": getattr(error, "hint", None)}
                           if owner else {"message": UNTOLD, "hint": None}) if error is not None else None,
            "library": {"collections": len(collections), "documents": sum(c.document_count for c in collections),
                        "chunks": sum(c.chunk_count for c in collections)},
            "reason": {"inFlight": queue.in_flight, "limit": queue.limit},
            "store": _store_of(service, grant_of(request)),
            "version": __version__,
        }})  # fmt: skip


# ---------------------------------------------------------------- the app


def create_app(service, *, api_key: str | None = None, allowed_hosts: Iterable[str] | None = LOOPBACK_NAMES,
               max_body_bytes: int = MAX_BODY_BYTES, max_waiting: int = MAX_WAITING, warm: bool = True) -> FastAPI:  # fmt: skip
    """The ASGI app over ``service``. ``allowed_hosts`` None accepts any Host (a non-loopback bind, keyed);
    by default only loopback names are (a TestClient needs base_url="http://127.0.0.1").

    ``api_key`` None means no main key (``run`` reads LOCALREASON_API_KEY); the library's own keys (keys.py) are
    checked on every request either way. ``warm`` loads the models in the background when the app starts.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if warm:
            service.warm()
        yield

    app = FastAPI(title="localreason", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  swagger_ui_oauth2_redirect_url=None, openapi_url="/openapi.json", description=DESCRIPTION)  # fmt: skip
    queue = ReasonQueue(max_waiting)
    router = APIRouter(route_class=StrictJSONRoute)
    _reason_routes(router, service, queue)
    _retrieval_routes(router, service)
    _health_route(router, service, queue)
    app.state.instance_token = handoff.new_token()
    _instance_route(router, app.state.instance_token)
    app.include_router(router)
    install_error_handlers(app)
    keys = KeyCheck(api_key, service.library.open_store)
    app.add_middleware(Gate, keys=keys, allowed_hosts=allowed_hosts, max_body=max_body_bytes)
    app.state.service, app.state.reason_queue, app.state.keys = service, queue, keys
    _describe_errors_and_key(app, keyed=keys.required())
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
                           "description": f"API-Key <key> or Bearer <key> ({API_KEY_ENV})"}}  # fmt: skip
            doc["security"] = [{"apiKey": []}]
        return doc

    app.openapi = openapi


# ---------------------------------------------------------------- serving


def api_key_from_env() -> str | None:
    """LOCALREASON_API_KEY, or None when unset or blank; a short key is refused."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        return None
    if key.startswith(KEY_PREFIX):
        raise ValidationError(f"{API_KEY_ENV} holds a collection key (it starts with {KEY_PREFIX!r}, as `localreason "
                              "keys add` makes them): as the server's main key it would see every collection.",
                              hint=f"Give {API_KEY_ENV} a long random key of its own, e.g. the output of python -c "
                              "'import secrets; print(secrets.token_urlsafe(32))', and the collection key to the "
                              "client that should see only its collections.")  # fmt: skip
    if len(key) < MIN_KEY_CHARS:
        raise ValidationError(f"{API_KEY_ENV} is too short ({len(key)} characters; at least {MIN_KEY_CHARS}).",
                              hint="Use a long random key, e.g. the output of "
                              "python -c 'import secrets; print(secrets.token_urlsafe(32))'.")  # fmt: skip
    return key


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on host:port, or a LocalReasonError that says why not."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValidationError(f"Port {port!r} is not a port number.",
                              hint="Use --port with 1 to 65535 (0: any free port).")  # fmt: skip
    name = host.strip().strip("[]")
    # IPPROTO_TCP named, as getaddrinfo would: asyncio sets TCP_NODELAY on the connections of a socket it knows
    # is TCP, so the body of a response on a kept-alive connection does not wait ~40 ms behind its headers
    sock = socket.socket(socket.AF_INET6 if ":" in name else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
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


def run(home: str | None = None, host: str = "127.0.0.1", port: int = 8765, watch: bool = False) -> None:
    """Serve the library at ``home`` over HTTP until interrupted (blocking): `localreason serve`.

    A bind other than loopback needs an API key. The discovery file is published once the socket listens and
    withdrawn when the server stops; SIGINT and SIGTERM stop it through the ``finally`` blocks (signals.stop_signals).
    With ``watch``, the library's folders are followed while it serves (watch.py), changes said on stderr.
    """
    key = api_key_from_env()
    allowed = served_hosts(host, key is not None or (not is_loopback(host) and library_has_keys(home)))
    with stop_signals():
        _serve(home, host, port, key, allowed, watch)


def served_hosts(host: str, keyed: bool) -> frozenset | None:
    """The Host names a server bound to ``host`` answers (loopback names on a loopback bind; None: any, which a
    bind beyond loopback may only do when ``keyed``: the main key is set or the library holds keys), or
    ValidationError for such a bind without keys. (Beyond loopback the gate then refuses every request without a
    known key, even once the library's last key is removed.)"""
    if is_loopback(host):
        return LOOPBACK_NAMES | {host_name(host)}
    if not keyed:
        raise ValidationError(f"Refusing to listen on {host} without an API key: anyone who can reach it could "
                              "read your library.",
                              hint=f"Set {API_KEY_ENV} to a long random secret, or add keys that see some "
                              "collections (`localreason keys add`); clients send a key as Authorization: "
                              "API-Key <key> or Bearer <key>. Or serve on 127.0.0.1.")  # fmt: skip
    return None


def _serve(home: str | None, host: str, port: int, key: str | None, allowed: frozenset | None,
           watch: bool = False) -> None:  # fmt: skip
    """Bind, open the library, publish the discovery file and run uvicorn; undo each, however it stops."""
    from ..service import Service

    sock = bind(host, port)
    service = Service.open(home)
    try:
        keyed = key is not None or service.library.store.has_keys()
        _announce(service, sock, host, keyed)  # before the watch starts: its first line always comes second
        with _watching(service, watch):
            _run_uvicorn(service, sock, host, key, allowed)
    finally:
        sock.close()
        service.close()


@contextmanager
def _watching(service, watch: bool):
    """With ``watch``, the library's folders followed on a thread of their own while the server runs."""
    if not watch:
        yield
        return
    from ..watch import BackgroundWatch, logged

    watcher = BackgroundWatch(service, logged(lambda line: print(f"localreason: {line}", file=sys.stderr,
                                                                 flush=True))).start()  # fmt: skip
    try:
        yield
    finally:
        watcher.stop()


def _announce(service, sock: socket.socket, host: str, keyed: bool) -> None:
    """The line that says where the library is served (stderr)."""
    bound = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    print(f"localreason: serving {service.library.home} on http://{shown}:{bound} "
          f"({'API key required' if keyed else 'no API key'}; models load in the background)",
          file=sys.stderr, flush=True)  # fmt: skip


def _run_uvicorn(service, sock: socket.socket, host: str, key: str | None, allowed: frozenset | None) -> None:
    """Run uvicorn on ``sock`` with the discovery file published, until it stops."""
    import uvicorn

    app = create_app(service, api_key=key, allowed_hosts=allowed)
    config = uvicorn.Config(app, proxy_headers=False, server_header=False, timeout_graceful_shutdown=5)
    token = app.state.instance_token
    keyed = key is not None or service.library.store.has_keys()  # a library's own keys bar the keyless hand-off too
    published = handoff.publish(service.settings, _local_url(sock), token, keyed, __version__)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        handoff.withdraw(published, token)


def _local_url(sock: socket.socket) -> str:
    """The URL a program on this machine reaches the listening socket at (loopback for a wildcard bind)."""
    address, port = sock.getsockname()[:2]
    if ipaddress.ip_address(address).is_unspecified:
        address = "::1" if sock.family == socket.AF_INET6 else "127.0.0.1"
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"
