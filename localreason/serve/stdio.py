"""MCP over stdio, with every line answered: the SDK's transport only logs a line it cannot read, so the client
whose request it was would wait for ever. ``serve_stdio`` relays the transport's messages to the server and answers
each unreadable line with a JSON-RPC error (``unreadable_reply``) that carries the request's id where the line
shows one.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

log = logging.getLogger("localreason.mcp")


def _request_id(value: Any) -> int | str | None:
    """The ``id`` of a parsed request, if it has one JSON-RPC allows (a string or an integer). A response's
    id is not taken: ids of responses are the server's own, and naming one would fail its request."""
    if isinstance(value, dict) and "method" in value:
        rid = value.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


def unreadable_reply(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the SDK's transport could not read (it hands us the exception).

    The reply is a parse error (-32700) for text that is not JSON or not Unicode, an invalid request (-32600)
    for JSON that is not a JSON-RPC message, and carries the request's id whenever the line shows one, so that
    the client's pending call fails instead of hanging (id null otherwise, as JSON-RPC 2.0 says).
    """
    errors = exc.errors() if hasattr(exc, "errors") else []
    first = errors[0] if errors else {}
    said = str(first.get("msg", exc))
    if first.get("type") != "json_invalid":
        # Each error names the value it met: a wrong field's own value, or the whole message for a
        # missing field (the message fails as every kind of JSON-RPC message, so one of them misses one).
        message = next((e["input"] for e in errors if isinstance(e.get("input"), dict)), None)
        return _jsonrpc_error(_request_id(message), INVALID_REQUEST,
                              "The message is JSON but not a JSON-RPC 2.0 request, notification or response.",
                              said)  # fmt: skip
    try:  # Python's reader accepts what the SDK's refuses (a lone surrogate escape), and shows the id
        value = json.loads(first["input"]) if isinstance(first.get("input"), str) else None
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python's reader goes
        return _jsonrpc_error(None, PARSE_ERROR, "The line is not JSON; each line must be one JSON-RPC message.", said)
    if _holds_lone_surrogate(value):
        text = ("The message holds a lone surrogate escape (such as \\ud800), which is not Unicode text; "
                "send the text as UTF-8.")  # fmt: skip
    else:
        text = "The message is not JSON as JSON-RPC reads it (for example, nested too deeply)."
    return _jsonrpc_error(_request_id(value), PARSE_ERROR, text, said)


def _holds_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _jsonrpc_error(rid: int | str | None, code: int, message: str, detail: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message, data={"detail": detail}))


async def serve_stdio(server: MCPServer) -> None:
    """``server`` over stdio as ``MCPServer.run("stdio")`` does, but every line it cannot read is answered.

    The SDK's transport turns such a line into an exception on the read stream, which its loop only
    logs; a relay between the two answers it (``unreadable_reply``) on the same write stream, so the
    reply cannot interleave with another frame.
    """
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async uses it the same way (mcp 2.x)
    async with stdio_server() as (read_stream, write_stream):
        relay_send, relay_receive = anyio.create_memory_object_stream(0)

        async def relay() -> None:
            async with relay_send:
                async for item in read_stream:
                    if not isinstance(item, Exception):
                        await relay_send.send(item)
                        continue
                    try:
                        reply = unreadable_reply(item)
                    except Exception:  # noqa: BLE001 - whatever the line was, it is answered and the server goes on
                        log.exception("Reading an unreadable line failed")
                        reply = _jsonrpc_error(None, PARSE_ERROR, "The line could not be read.", str(item))
                    log.warning("Answered an unreadable line (id %s): %s", reply.id, reply.error.data["detail"])
                    try:
                        await write_stream.send(SessionMessage(reply))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay)
            await lowlevel.run(relay_receive, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()
