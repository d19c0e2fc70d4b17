"""``localreason mcp --http``: the same five MCP tools over the official SDK's streamable HTTP transport, so that an
assistant on another machine reaches the library (``http://HOST:PORT/mcp``).

It keeps REST's rules (serve/http.py's ``Gate`` in front of the SDK's app): only loopback Host names are served on a
loopback bind (DNS rebinding), web pages of other sites are refused, the body is limited, and with
``LOCALREASON_API_KEY`` set every request needs ``Authorization: API-Key <key>`` (or ``Bearer <key>``). A bind
other than loopback is refused without a key. The SDK's own Host check is off: the gate does it, as for REST.
The service opens on first use and the models load in the background after the handshake, as over stdio.
"""

from __future__ import annotations

import sys

from ..config import load_settings
from ..signals import stop_signals
from .http import Gate
from .mcp import LocalReasonMCP
from ..keys import KeyCheck, library_has_keys
from .http import is_loopback
from .rest import LOOPBACK_NAMES, MAX_BODY_BYTES, api_key_from_env, bind, served_hosts

MCP_PATH = "/mcp"
"""Where the streamable HTTP endpoint answers (the SDK's default)."""


def create_mcp_app(server: LocalReasonMCP, *, api_key: str | None = None, allowed_hosts=LOOPBACK_NAMES,
                   max_body: int = MAX_BODY_BYTES):  # fmt: skip
    """The ASGI app of ``server``'s tools over streamable HTTP, behind REST's gate (``allowed_hosts`` None: any
    Host, for a keyed non-loopback bind)."""
    from mcp.server.transport_security import TransportSecuritySettings

    inner = server.mcp.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    server.gated = True
    keys = KeyCheck(api_key, server.open_store)
    return Gate(inner, keys=keys, allowed_hosts=allowed_hosts, max_body=max_body)


def run_http(home: str | None = None, host: str = "127.0.0.1", port: int = 8766, watch: bool = False) -> None:
    """Serve the MCP tools of the library at ``home`` over HTTP until interrupted (blocking)."""
    import uvicorn

    key = api_key_from_env()
    allowed = served_hosts(host, key is not None or (not is_loopback(host) and library_has_keys(home)))
    with stop_signals():
        sock = bind(host, port)
        server = LocalReasonMCP(settings=load_settings(home), watch=watch)
        try:
            bound = sock.getsockname()[1]
            shown = f"[{host.strip('[]')}]" if ":" in host else host
            print(f"localreason: MCP tools of {server.settings.home} on http://{shown}:{bound}{MCP_PATH} "
                  f"({'API key required' if key or library_has_keys(home) else 'no API key'})", file=sys.stderr,
                  flush=True)  # fmt: skip
            app = create_mcp_app(server, api_key=key, allowed_hosts=allowed)
            config = uvicorn.Config(app, proxy_headers=False, server_header=False, timeout_graceful_shutdown=5,
                                    log_level="warning")  # fmt: skip
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            sock.close()
            server.close()
