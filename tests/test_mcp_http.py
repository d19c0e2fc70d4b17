"""``localreason mcp --http``: the MCP tools over the official SDK's streamable HTTP transport, reached with the
SDK's own client on a real uvicorn server on 127.0.0.1 (fake models), with REST's rules: the API key when one is
set, only loopback Host names on a loopback bind, no bind elsewhere without a key."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from localreason.config import load_settings
from localreason.errors import ValidationError
from localreason.library import Library
from localreason.serve.mcp import LocalReasonMCP
from localreason.serve.mcp_http import MCP_PATH, create_mcp_app, run_http
from localreason.serve.rest import bind
from localreason.service import Service

from fakes import FakeEmbedder, FakeGenerator
from test_mcp import ROUTER
from waiting import PATIENCE, finished, wait_until

KEY = "a-long-enough-test-key-for-the-mcp-server"


@contextmanager
def mcp_server(svc, key: str | None):
    """The MCP tools of ``svc`` over HTTP on a free loopback port, in a thread (main key ``key``): yields the /mcp URL."""
    import uvicorn

    server = LocalReasonMCP(settings=svc.settings, service=svc)
    sock = bind("127.0.0.1", 0)
    app = create_mcp_app(server, api_key=key)
    runner = uvicorn.Server(uvicorn.Config(app, log_config=None, timeout_graceful_shutdown=1))  # logging left as it is
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_until(lambda: runner.started or not thread.is_alive(), "the server to start")
    assert runner.started, "the server did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}{MCP_PATH}"
    finally:
        runner.should_exit = True
        finished(thread, "the server, told to stop")
        sock.close()


@pytest.fixture
def served(isolated_home, tmp_path):
    """A keyed MCP-over-HTTP server on a free loopback port, in a thread: yields its /mcp URL."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "router.md").write_text(ROUTER)
    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator()))
    svc.ingest([docs], "work")
    with mcp_server(svc, KEY) as url:
        yield url
    svc.close()


def ask(url: str, name: str, args: dict, key: str | None = KEY):
    """tools/list and one tools/call through the SDK's streamable HTTP client."""

    async def go():
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers, timeout=PATIENCE) as http, \
                streamable_http_client(url, http_client=http) as (read, write), \
                ClientSession(read, write) as session:  # fmt: skip
            await session.initialize()
            tools = await session.list_tools()
            return {t.name for t in tools.tools}, await session.call_tool(name, args)

    return anyio.run(go)


def test_the_five_tools_answer_over_http_with_the_sdk_client(served):
    names, result = ask(served, "reason", {"query": "How long does the router warranty last?"})
    assert names == {"find_items", "deep_search", "deep_read", "deep_expand", "reason"}
    assert not result.is_error and "two years" in result.structured_content["data"]["answer"]
    _, hits = ask(served, "deep_search", {"query": "reset button"})
    assert "reset button" in hits.structured_content["data"][0]["content"]


def test_without_the_key_or_with_a_foreign_host_nothing_is_served(served):
    port_url = served.removesuffix(MCP_PATH)
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
            "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=PATIENCE) as http:
        assert http.post(served, json=body, headers=accept).status_code == 401
        wrong = http.post(served, json=body, headers={**accept, "Authorization": "Bearer not-the-key"})
        assert wrong.status_code == 401 and "API key" in wrong.json()["error"]["message"]
        rebound = http.post(served, json=body, headers={**accept, "Authorization": f"Bearer {KEY}",
                                                        "Host": "attacker.example"})  # fmt: skip
        assert rebound.status_code == 400 and rebound.json()["error"]["code"] == "invalid_host"
        assert http.post(f"{port_url}/mcp", json=body, headers={**accept, "Authorization": f"Bearer {KEY}"}).status_code == 200
    with pytest.raises(Exception):
        ask(served, "reason", {"query": "warranty"}, key=None)


def test_a_bind_beyond_loopback_needs_a_key(isolated_home, monkeypatch):
    monkeypatch.delenv("LOCALREASON_API_KEY", raising=False)
    with pytest.raises(ValidationError, match="without an API key"):
        run_http(str(isolated_home), host="0.0.0.0", port=0)
