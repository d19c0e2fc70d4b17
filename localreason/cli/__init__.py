"""The ``localreason`` command line: a thin layer over :class:`localreason.service.Service`, one module per group
of commands, each with its own options and help:

    app.py       the command group and the entry point (``main``)
    common.py    what the groups share: output, progress, JSON, the local-or-remote dispatch of search and ask
    library.py   ingest, sync, library, show, remove, reindex
    asking.py    ask, search, find, read, expand, evidence
    servers.py   watch, serve, mcp
    setup.py     config, models, demo, tui
    team.py      keys (and moving a library between stores)

Exit codes: 0 success; 1 some files failed; 2 invalid input; 3 not found;
4 model problem; 5 library problem; 130 interrupted.
"""

from __future__ import annotations

from . import asking, library, servers, setup, team  # noqa: F401  (each registers its commands on ``cli``)
from .app import cli, main

__all__ = ["cli", "main"]
