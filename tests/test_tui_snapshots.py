"""Snapshot tests of the main screens at 80x24 and 120x36 (pytest-textual-snapshot).

Ids derive from the collection id and the file path, and the meta line shows a latency,
so the library lives at a fixed path with a fixed collection id and the answer's latency
is pinned: everything else on screen is what the app draws. Update the snapshots with
``python -m pytest tests/test_tui_snapshots.py --snapshot-update`` after a deliberate change,
and look at the SVGs in tests/__snapshots__/ before committing them.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.demo import samples_dir
from localreason.library import Library
from localreason.session import Scope, Turn
from localreason.tui.app import LocalReasonApp
from localreason.tui.screens import HelpScreen

from fakes import FakeEmbedder, FakeGenerator
from tui_waiting import first_turn_shown, searched, viewer_shows, wait_for_screen

BASE = Path("/tmp/localreason-snapshots")
QUESTION = "Where did the Black Death originate?"


@pytest.fixture
def snap_app(monkeypatch):
    shutil.rmtree(BASE, ignore_errors=True)
    shutil.copytree(samples_dir(), BASE / "samples", ignore=shutil.ignore_patterns("LICENSES*"))
    monkeypatch.setattr("localreason.library.random_id", lambda prefix: f"{prefix}_snapshotsnapshot")
    lib = Library(settings=load_settings(BASE / "home", reader="off"), embedder=FakeEmbedder(), generator=FakeGenerator())
    lib.ingest([BASE / "samples"], "samples")
    answer = dataclasses.replace(lib.ask(QUESTION, max_tokens=1000), latency_ms=5120)
    turn = Turn(QUESTION, Scope(), answer)
    app = LocalReasonApp(lib, first_turn=turn)
    yield app
    lib.close()


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
def test_answer_screen(snap_compare, snap_app, size):
    assert snap_compare(snap_app, terminal_size=size, run_before=first_turn_shown)


def test_source_viewer(snap_compare, snap_app):
    async def open_citation(pilot):
        await first_turn_shown(pilot)
        await pilot.press("1")
        await viewer_shows(pilot, "(cited passage)")

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=open_citation)


def test_search_results(snap_compare, snap_app):
    async def search(pilot):
        await first_turn_shown(pilot)
        await pilot.press("f3")
        pilot.app.query_one("#search").cursor_blink = False  # the picture must not depend on the blink phase
        await pilot.press(*"plague in venice")
        await searched(pilot, "plague in venice")  # the debounced search, however slow the machine

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=search)


def test_help_screen(snap_compare, snap_app):
    async def help_(pilot):
        await first_turn_shown(pilot)
        await pilot.press("f1")
        await wait_for_screen(pilot, HelpScreen, "#help Static")

    assert snap_compare(snap_app, terminal_size=(80, 24), run_before=help_)
