"""The inotify limit and a watch that cannot start (tests/test_watch.py's world: tests/watch_world.py): what the
watcher says, how it falls back to re-checking the folders, and that nothing changed meanwhile is lost."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.library import Library
from localreason.service import Service
from localreason.watch import Root, Watcher, limit_reached

from fakes import FakeEmbedder
from waiting import PATIENCE, wait_until
from watch_world import Clock, Watch, documents, folder, ingested, read_until, service, start_cli, stop_with_ctrl_c, text_of, watch  # noqa: F401


# ---------------------------------------------------------------- the inotify limit


def test_at_the_inotify_limit_the_watch_says_so_and_polls(service, watch, folder):
    """The seam: watchfiles' watch raising what it raises at the limit (the real limit, through a user namespace:
    test_the_real_inotify_limit_...); then the watcher's own re-checking finds the change."""
    asked: list[tuple] = []

    def notify(*paths, **kwargs):
        asked.append(paths)
        raise OSError(f"OS file watch limit reached. about {list(paths)} (Error {{ kind: MaxFilesWatch }})")

    w = watch(notify=notify, poll=0.1)
    assert asked == [(str(folder),)], "inotify was tried once"
    [said] = [n for n in w.notices if "limit on watched folders" in n]
    assert "sudo sysctl fs.inotify.max_user_watches=" in said and "re-checking the folders every 0.1 s" in said
    assert w.watcher.state().polling and "re-checked every 0.1 s" in w.watcher.state().describe()
    (folder / "pump.md").write_text("# Pump\n\nFound by re-checking.\n")
    w.seen(folder / "pump.md")
    w.drain()
    (folder / "pump.md").write_text("# Pump\n\nFound again in the same second.\n")  # whole-second mtimes miss it
    (folder / "sub").mkdir()
    (folder / "sub" / "deep.md").write_text("# Deep\n\nIn a new folder.\n")
    w.seen(folder / "pump.md", folder / "sub" / "deep.md")
    w.drain()
    assert w.changes() == [("updated", "pump.md"), ("updated", "pump.md"), ("added", "deep.md")]


def test_a_watch_that_could_not_start_reads_its_folders_again_once_it_does(service, watch, folder):
    """A watch that fails to start (not at the limit: a folder it may not read, say) is tried again at each turn;
    what changed while it was down was seen by nobody, so once it starts its folders are read again (before, such a
    change waited for `localreason sync`: the slow look beside the new watch took it as already known)."""
    from localreason.watch.sources import inotify_changes as inotify

    down, asked = threading.Event(), []
    down.set()

    def notify(*paths, **kwargs):
        asked.append(paths)
        if down.is_set():
            raise PermissionError(f"Permission denied (os error 13) about {list(paths)}")
        yield from inotify(*paths, **kwargs)

    w = watch(notify=notify)
    [said] = [n for n in w.notices if n.startswith("Cannot watch")]
    assert str(folder) in said and "read again once it works" in said
    pump = folder / "pump.md"
    pump.write_text("# Pump\n\nChanged while nothing watched.\n")
    down.clear()  # the next try starts the watch
    wait_until(lambda: len(w.reports) == 2, "the folder to be read again")
    assert [catch_up for _, catch_up in w.reports] == [True, True], "read at the start, and again"
    assert "while nothing watched" in text_of(service, pump)
    assert [n for n in w.notices if n.startswith("Cannot watch")] == [said], "said once, however often tried"
    assert len(asked) >= 2 and all(paths == (str(folder),) for paths in asked), asked
    (folder / "valve.md").write_text("# Valve\n\nSeen by the watch that works now.\n")
    w.seen(folder / "valve.md")
    w.drain()
    assert w.changes() == [("updated", "valve.md")]


def test_the_inotify_watch_says_it_is_in_place_and_never_times_out(monkeypatch):
    """sources.inotify_changes drives watchfiles' RustNotify with no timeout: watchfiles.watch's timeout empties the
    changes waiting under a second lock after counting them, and an event landing between the two was lost (the
    likeliest cause of a watch test that failed once under load). It says the watches are in place (an empty set)
    before any change, then hands each set over, and ends at a stop."""
    import watchfiles._rust_notify as rust
    from watchfiles import Change

    from localreason.watch.sources import inotify_changes

    asked: list[tuple] = []

    class Fake:
        def __init__(self, paths, debug, force_polling, poll_delay_ms, recursive, ignore_permission_denied):
            asked.append(("made", tuple(paths), recursive))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            asked.append(("closed",))

        def watch(self, debounce_ms, step_ms, timeout_ms, stop_event):
            asked.append(("watch", timeout_ms))
            return {(2, "/x/a.md")} if len(asked) == 2 else "stop"

    monkeypatch.setattr(rust, "RustNotify", Fake)
    stop = threading.Event()
    got = list(inotify_changes("/x", debounce=500, step=100, stop_event=stop, recursive=True))
    assert got == [set(), {(Change.modified, "/x/a.md")}]
    assert asked == [("made", ("/x",), True), ("watch", 0), ("watch", 0), ("closed",)]


def test_a_watch_that_fails_after_its_start_stopped_waiting_is_reported():
    """A watch still setting up when ``start`` stops waiting (a huge tree) counts as started; if it then fails (the
    limit reached half-way), the failure goes to the watcher's queue, which restarts it or polls; before, it was
    said nowhere and the folders were only looked at every RESCAN_S."""
    import queue

    from localreason.watch.sources import Group

    go, out = threading.Event(), queue.Queue()

    def slow(*paths, **kwargs):
        assert go.wait(PATIENCE)
        raise OSError("OS file watch limit reached. (Error { kind: MaxFilesWatch })")
        yield set()  # a generator, as a watch is

    group = Group(["/x"], True, out, slow)
    assert group.start(timeout=0.01) is None, "still setting up: started, as far as start can tell"
    go.set()
    source, failure = out.get(timeout=PATIENCE)
    assert source is group and limit_reached(failure)
    group.stop()


def test_the_roots_a_watch_that_started_late_follows_are_read_again():
    """Which roots are read again once a watch that could not start does: a recursive watch follows the folder roots
    at or under its folder and the files ingested by name there; one of a folder's own entries only the files
    ingested by name in that folder (not the folder roots under it, whose own watch never failed)."""
    tree, below = Root("c", "/x"), Root("c", "/x/sub")
    named, elsewhere = Root("c", "/x/f.md", folder=False), Root("c", "/y")
    roots = [tree, below, named, elsewhere]
    assert [r for r in roots if Watcher._followed_by(r, {("/x", True)})] == [tree, below, named]
    assert [r for r in roots if Watcher._followed_by(r, {("/x", False)})] == [named]
    assert [r for r in roots if Watcher._followed_by(r, {("/x/s", True)})] == [], "a prefix is not a folder above"


def test_watch_mode_poll_never_asks_inotify(lib, folder, isolated_home):
    lib.ingest([folder], "work")
    svc = Service(Library(settings=load_settings(isolated_home, reader="off", watch_mode="poll"),
                          embedder=FakeEmbedder()))  # fmt: skip
    w = Watch(svc, Clock(), notify=lambda *a, **k: pytest.fail("inotify was asked"), poll=0.1)
    try:
        assert w.watcher.state().polling and not any("limit" in n for n in w.notices)
        (folder / "valve.md").write_text("# Valve\n\nPolled.\n")
        w.seen(folder / "valve.md")
        w.drain()
        assert w.changes() == [("updated", "valve.md")]
    finally:
        w.close()
        svc.close()


def test_what_counts_as_the_limit():
    assert limit_reached(OSError('OS file watch limit reached. about ["/x"] (Error { kind: MaxFilesWatch })'))
    assert limit_reached(RuntimeError("Error creating recommended watcher: Too many open files (os error 24)"))
    assert not limit_reached(FileNotFoundError("No such file or directory"))
    assert not limit_reached(RuntimeError('Unable to decode path "/x/\\xFF" to string'))


def _unshare_works() -> bool:
    try:
        return subprocess.run(["unshare", "-U", "-r", "sh", "-c", "echo 9 > /proc/sys/user/max_inotify_watches"],
                              capture_output=True, timeout=PATIENCE).returncode == 0  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _unshare_works(), reason="needs unprivileged user namespaces (unshare -U -r)")
@pytest.mark.parametrize("when", ["at the start", "for a new folder"])
def test_the_real_inotify_limit_is_said_and_polling_takes_over(tmp_path, folder, when):
    for i in range(4):
        (folder / f"part{i}").mkdir()
    home = ingested(tmp_path, folder)
    limit = 3 if when == "at the start" else 5 + 1  # the tree has 5 folders
    proc = start_cli(home, "watch", limit=limit)
    seen: list[str] = []
    try:
        read_until(proc, r"^Watching 1 folder", seen)
        if when == "for a new folder":
            assert not any("limit on watched folders" in line for line in seen)
            for name in ("new1", "new2"):
                (folder / name).mkdir()
            read_until(proc, "limit on watched folders", seen)
            target = folder / "new2" / "fresh.md"
        else:
            assert any("limit on watched folders" in line and "sysctl" in line for line in seen), seen
            target = folder / "part3" / "fresh.md"
        target.write_text("# Fresh\n\nFound by re-checking.\n")
        read_until(proc, r"added\s+.*fresh\.md", seen)
    finally:
        code = stop_with_ctrl_c(proc, seen)
    assert code == 0, "".join(seen)



def test_a_drive_unplugged_below_a_watched_folder_keeps_its_documents(service, watch, folder, tmp_path, monkeypatch):
    """The watch saw the files under a link to a drive, or under a drive's mount point, go and removed them all:
    what `localreason sync` keeps (ingest/prune.py) the watch now keeps too, and says why. A file deleted beside
    others is still removed."""
    from localreason.ingest import prune
    from localreason.ingest.prune import LINK_GONE, NOT_MOUNTED

    media = tmp_path / "media" / "usb"
    media.mkdir(parents=True)
    (media / "manual.md").write_text("# Manual\n\nHold the button for ten seconds.\n")
    (folder / "usb").symlink_to(media, target_is_directory=True)
    (folder / "drive").mkdir()
    (folder / "drive" / "boiler.md").write_text("# Boiler\n\nThe boiler is serviced every spring.\n")
    monkeypatch.setattr(prune, "fstab_mount_points", lambda fstab="/etc/fstab": frozenset({str(folder / "drive")}))
    service.ingest([folder], "work")
    w = watch()
    (media / "manual.md").unlink()
    media.rmdir()  # the drive unplugged: the link points nowhere
    (folder / "drive" / "boiler.md").unlink()  # the drive not mounted: its mount point is empty
    (folder / "valve.md").unlink()  # deleted, beside pump.md
    w.seen(folder / "valve.md", folder / "drive" / "boiler.md", folder / "usb" / "manual.md")
    w.drain()
    assert sorted(Path(p).name for p in documents(service)) == ["boiler.md", "manual.md", "pump.md"]
    assert w.changes() == [("removed", "valve.md")]
    said = " ".join(w.notices)
    assert f"{folder / 'usb'}: the files under it in 'work' are kept: {LINK_GONE}" in said, w.notices
    assert f"{folder / 'drive'}: the files under it in 'work' are kept: {NOT_MOUNTED}" in said, w.notices
