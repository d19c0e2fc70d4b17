"""What the TUI says about the watch's writes (pilot): the real app, a real watch (watchfiles) over a real library and
real folders; the fake embedder.

"Changes applied" means a document was added, updated or removed; a file skipped (an unsupported type, a binary
file) is no change and is listed in the library tree, under its collection; a failure is warned of once per change
of its file, not again on every start. The watch settles changes on a clock the test moves (as in test_watch.py),
so nothing depends on how fast this machine is; everything else waits for a condition with a deadline.
"""

from __future__ import annotations

import gzip
import time

import pytest

from localreason.config import load_settings
from localreason.library import Library
from localreason.service import Service
from localreason.tui.app import LocalReasonApp
from localreason.tui.widgets import LibraryTree
from localreason.watch import BackgroundWatch, logged, stat_key

from waiting import PATIENCE, threads_now

from fakes import FakeEmbedder, FakeGenerator

SETTLE = 0.5


class Clock:
    """The watch's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def folder(tmp_path):
    """A Debian doc folder, as /usr/share/doc/<package> holds: one text read, two files skipped."""
    root = tmp_path / "doc"
    root.mkdir()
    (root / "notes.md").write_text("# Notes\n\nThe pump runs on twelve volts.\n")
    (root / "changelog.Debian.gz").write_bytes(gzip.compress(b"pump (1.0-1) unstable; urgency=low\n"))
    (root / "blob.bin").write_bytes(bytes(range(256)) * 8)
    return root


@pytest.fixture
def service(isolated_home, folder):
    lib = Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder(),
                  generator=FakeGenerator())  # fmt: skip
    report = lib.ingest([folder], "docs")
    assert report.counts["added"] == 1 and report.counts["skipped"] == 2, report.to_dict()
    svc = Service(lib)
    yield svc
    svc.close()


def watching_app(service, clock: Clock) -> tuple[LocalReasonApp, list[tuple]]:
    """The app following the library's folders on ``clock``; with every notification it gives: (title, message,
    severity)."""
    app = LocalReasonApp(service, watch=True, watch_options={"clock": clock, "settle": SETTLE, "recheck": 0.2})
    said: list[tuple] = []
    notify = app.notify
    app.said_in_test = said
    app.notify = lambda message, **kw: said.append((kw.get("title"), message, kw.get("severity"))) or notify(message,
                                                                                                            **kw)
    return app, said


async def until(pilot, condition, what: str, timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{watch_now(pilot.app)}"
        await pilot.pause(0.05)


def watch_now(app) -> str:
    """What the app's watch holds and where every thread is: what a failure message needs to be understood."""
    watch = app.watcher
    if watch is None:
        return "no watch"
    w = watch.watcher
    groups = [(type(g).__name__, g.thread.is_alive()) for g in w.groups]
    return (f"said: {getattr(app, 'said_in_test', None)}\nwatch thread alive: {watch.thread.is_alive()}, ticks: "
            f"{w.ticks}, live: {list(w.live)}, pending: {w.pending.snapshot()}, groups: {groups}\n{threads_now()}")


async def caught_up(pilot, said) -> None:
    """Until the watch has read the folder again (it says it watches once that is done and told), and the tree
    shows what it found."""
    await until(pilot, lambda: any(title == "Watching" for title, _, _ in said), "the watch to start")
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def applied(pilot, clock: Clock, paths, condition, what: str) -> None:
    """Once the watch holds each of ``paths`` as it is on disk, move its clock on until ``condition``."""
    watcher = pilot.app.watcher.watcher
    await until(pilot, lambda: all(watcher.pending.snapshot().get(str(p), "absent") == stat_key(str(p))
                                   for p in paths), "the watch to see the changes")  # fmt: skip
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{watch_now(pilot.app)}"
        clock.now += SETTLE + 0.01
        watcher.wake()
        await pilot.pause(0.05)


def unread_nodes(app):
    """The tree's node listing the collection 'docs''s files not read, or None."""
    [docs] = [n for n in app.query_one(LibraryTree).root.children if n.data and n.data[2] == "docs"]
    return next((n for n in docs.children if n.data and n.data[0] == "unread"), None)


def titled(said, title: str) -> list[tuple]:
    return [s for s in said if s[0] == title]


async def test_an_unchanged_folder_says_no_change_and_its_skipped_files_are_in_the_tree(service, folder):
    app, said = watching_app(service, Clock())
    async with app.run_test(size=(100, 32)) as pilot:
        await caught_up(pilot, said)
        assert not titled(said, "Changes applied") and not titled(said, "Not read"), said
        group = unread_nodes(app)
        assert group is not None and str(group.label) == "2 files not read"
        assert [leaf.data[1] for leaf in group.children] == [str(folder / "blob.bin"),
                                                             str(folder / "changelog.Debian.gz")]  # fmt: skip
        for leaf, name in zip(group.children, ["blob.bin", "changelog.Debian.gz"]):
            why = leaf.data[2].removeprefix("Skipped: ")
            assert why != leaf.data[2] and str(leaf.label) == f"{name}  {why}", "each with why"
        assert not group.is_expanded, "folded: the documents come first"
        tree = app.query_one(LibraryTree)
        tree.focus()
        tree.move_cursor(group)
        await pilot.press("enter")
        assert group.is_expanded, "Enter opens the list"
        tree.move_cursor(group.children[0])
        await pilot.press("enter", "delete")
        await pilot.pause()
        assert titled(said, "Not in the library")[-1][1] == f"{folder / 'blob.bin'}\n{group.children[0].data[2]}"
        assert app.screen is app.screen_stack[0], "Delete on a file not read asks for nothing"
        await pilot.press("ctrl+q")
    app.stop_watching()


async def test_an_edit_is_said_and_a_new_file_skipped_is_listed_not_said(service, folder):
    clock = Clock()
    app, said = watching_app(service, clock)
    async with app.run_test(size=(100, 32)) as pilot:
        await caught_up(pilot, said)
        (folder / "notes.md").write_text("# Notes\n\nThe pump runs on twenty-four volts now.\n")
        (folder / "todo.md").write_text("")  # read, and skipped: an empty file
        await applied(pilot, clock, [folder / "notes.md", folder / "todo.md"],
                      lambda: titled(said, "Changes applied") and str(unread_nodes(app).label) == "3 files not read",
                      "the change to be said and the empty file listed")  # fmt: skip
        assert titled(said, "Changes applied") == [("Changes applied", "Updated notes.md", None)], said
        assert not titled(said, "Not read")
        assert str(folder / "todo.md") in [leaf.data[1] for leaf in unread_nodes(app).children]
        await pilot.press("ctrl+q")
    app.stop_watching()


async def test_a_failure_is_warned_of_once_per_change_of_its_file_not_on_every_start(service, folder):
    broken = folder / "manual.pdf"
    broken.write_bytes(b"%PDF-1.4\nnot a PDF at all\n")
    app, said = watching_app(service, Clock())
    async with app.run_test(size=(100, 32)) as pilot:
        await caught_up(pilot, said)
        [(_, message, severity)] = titled(said, "Not read")
        assert message.startswith("Could not read manual.pdf: ") and severity == "warning", message
        assert not titled(said, "Changes applied"), said
        group = unread_nodes(app)
        assert str(group.label) == "3 files not read" and "yellow" in str(group.label.style), "a warning's colour"
        why = {leaf.data[1]: leaf.data[2] for leaf in group.children}[str(broken)]
        assert why.startswith("Could not be read: ") and why[len("Could not be read: "):] in message, why
        await pilot.press("ctrl+q")
    app.stop_watching()

    clock = Clock()
    app, said = watching_app(service, clock)  # started again, nothing changed: nothing to say
    async with app.run_test(size=(100, 32)) as pilot:
        await caught_up(pilot, said)
        assert not titled(said, "Not read") and not titled(said, "Changes applied"), said
        assert str(broken) in [leaf.data[1] for leaf in unread_nodes(app).children], "still listed"
        broken.write_bytes(b"%PDF-1.4\nstill not a PDF\n")  # a change of the file: worth a warning again
        await applied(pilot, clock, [broken], lambda: titled(said, "Not read"), "the failure to be warned of")
        assert len(titled(said, "Not read")) == 1 and not titled(said, "Changes applied"), said
        await pilot.press("ctrl+q")
    app.stop_watching()


def test_a_servers_log_lists_a_skipped_file_when_it_changes_not_on_every_start(service, folder):
    """``serve --watch`` and ``mcp --watch`` log each change; a file skipped, unchanged, is no change (before, each
    start logged every file skipped in the folders again)."""
    lines: list[str] = []
    clock = Clock()
    watch = BackgroundWatch(service, logged(lines.append), clock=clock, settle=SETTLE, recheck=0.2).start()
    try:
        deadline = time.monotonic() + PATIENCE
        while not any(line.startswith("Watching") for line in lines):
            assert time.monotonic() < deadline, "timed out waiting for the watch to start"
            time.sleep(0.01)
        assert not any(line.startswith("skipped") for line in lines), lines
        (folder / "todo.md").write_text("")  # read, and skipped: an empty file
        pending = watch.watcher.pending
        while pending.snapshot().get(str(folder / "todo.md")) != stat_key(str(folder / "todo.md")):
            assert time.monotonic() < deadline, "timed out waiting for the watch to see the change"
            time.sleep(0.01)
        while not any(line.startswith("skipped") for line in lines):
            assert time.monotonic() < deadline, "timed out waiting for the change to be logged"
            clock.now += SETTLE + 0.01
            watch.watcher.wake()
            time.sleep(0.01)
        [line] = [line for line in lines if line.startswith("skipped")]
        assert line == f"skipped  {folder / 'todo.md'}: empty file", line
    finally:
        watch.stop()
