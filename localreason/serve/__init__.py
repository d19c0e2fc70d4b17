"""Everything that serves the library to other programs: the REST API (``localreason serve``), the MCP server over
stdio (``localreason mcp``) and the hand-off of a command's request to a running ``localreason serve``.

    models.py   the requests and responses, defined once (REST bodies, /openapi.json, the MCP tools' schemas)
    http.py     the HTTP layer under the routes: the gate (host, origin, key, body size), strict JSON, errors,
                the queue for the model
    rest.py     the REST routes, the app and ``run`` (docs/rest-api.md describes the API)
    mcp.py      the MCP tools and ``run``; stdio.py answers the lines the SDK cannot read
    handoff.py  the discovery file and the CLI's calls to a running server (standard library only)

Importing this package imports nothing else: the CLI imports handoff.py from here without loading a web framework.
"""
