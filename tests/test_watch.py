"""Following folders (localreason/watch.py) with real file events: a real Watcher (watchfiles, inotify) over a real
library (SQLite, FAISS) and real folders in tmp dirs; the fake embedder where the test is about watching.

The watcher's settling runs on a clock the test moves (``Clock``): a change is applied only when the test has seen
the watcher take it (its pending list holds the path as it is on disk) and then moves time past the settling
period. So "still being written", "a burst" and "a save by rename" never depend on how fast this machine is;
everything else waits for a condition with a deadline.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.ingest.prune import EMPTY_NOW
from localreason.library import Library
from localreason.service import Service
from localreason.store import lock as write_lock
from localreason.watch import Root, roots_for

from fakes import FakeEmbedder, FakeGenerator
from files import make_pdf
from waiting import PATIENCE, finished, wait_until
from watch_world import (FAKE_CLI, SETTLE, Clock, Watch, documents, folder, found, ingested, read_until,  # noqa: F401
                         service, start_cli, stop_with_ctrl_c, text_of, watch)  # fmt: skip


# ---------------------------------------------------------------- what editors do


def test_a_save_is_applied_and_the_next_search_finds_the_new_text(service, watch, folder):
    w = watch()
    assert w.notices[0].startswith("Watching 1 folder:") and str(folder) in w.notices[0]
    assert [catch_up for _, catch_up in w.reports] == [True], "it read the folder again when it started"
    pump = folder / "pump.md"
    before = documents(service)[str(pump)].id
    pump.write_text("# Pump\n\nThe pump runs on twenty-four volts since the upgrade.\n")
    w.seen(pump)
    w.drain()
    assert w.changes() == [("updated", "pump.md")]
    assert documents(service)[str(pump)].id == before, "a document keeps its id across saves"
    assert found(service, "twenty-four volts") and not found(service, "twelve volts")


def test_saves_by_rename_are_one_update_each(service, watch, folder):
    """vim: the old file renamed to a backup, the new one written, the backup deleted (and its 4913 probe);
    an IDE: the new text written to a temporary file that is then renamed over the old one."""
    w = watch()
    pump, valve = folder / "pump.md", folder / "valve.md"
    (folder / "4913").write_text("")
    (folder / "4913").unlink()
    os.rename(pump, folder / "pump.md~")
    pump.write_text("# Pump\n\nThe pump was rewritten by vim.\n")
    (folder / "pump.md~").unlink()
    temporary = folder / "valve.md.tmp"
    temporary.write_text("# Valve\n\nThe valve was saved by an IDE.\n")
    os.replace(temporary, valve)
    w.seen(pump, valve)
    w.drain()
    assert sorted(w.changes()) == [("updated", "pump.md"), ("updated", "valve.md")], "no removal, no add"
    assert "rewritten by vim" in text_of(service, pump) and "saved by an IDE" in text_of(service, valve)


def test_swap_backup_temporary_and_lock_files_are_never_ingested(service, watch, folder):
    w = watch()
    transient = [".pump.md.swp", "pump.md~", ".#pump.md", "#pump.md#", "notes.tmp", "manual.pdf.crdownload",
                 "manual.pdf.part", "~$report.docx", "4913", "draft.md.swp"]  # fmt: skip
    for name in transient:
        (folder / name).write_text("# Not a document\n\nHalf-saved text.\n")
    (folder / "new.md").write_text("# New\n\nA real note.\n")
    w.seen(folder / "new.md")
    assert not set(w.watcher.pending.snapshot()) & {str(folder / n) for n in transient}, "never even waited on"
    w.drain()
    assert w.changes() == [("added", "new.md")]
    assert service.ingest([folder], "work").counts == {"added": 0, "updated": 0, "unchanged": 3, "removed": 0,
                                                       "skipped": 0, "failed": 0}, "an ingest walks past them too"


def test_a_file_still_being_written_waits_until_its_size_and_time_hold_still(service, watch, folder):
    w = watch()
    big = folder / "report.md"
    with open(big, "w") as out:
        out.write("# Report\n\nThe first half of the report.\n")
        out.flush()
        w.seen(big)
        w.clock.advance(SETTLE * 0.6)
        w.turns()
        out.write("\nThe second half arrived later.\n")
        out.flush()
        w.seen(big)
        w.clock.advance(SETTLE * 0.6)  # settled since the first write, not since the second
        w.turns()
        assert w.changes() == [], "not applied while it is still being written"
    w.clock.advance(SETTLE * 0.5)
    w.turns()
    assert w.changes() == [("added", "report.md")]
    assert "second half arrived later" in text_of(service, big)


def test_a_burst_of_saves_is_one_reingest(service, watch, folder, fake_embedder):
    w = watch()
    pump = folder / "pump.md"
    for i in range(20):
        pump.write_text(f"# Pump\n\nSave number {i} of the pump note.\n")
    w.seen(pump)
    calls = fake_embedder.calls
    w.drain()
    assert w.changes() == [("updated", "pump.md")]
    assert fake_embedder.calls == calls + 1, "embedded once"
    assert "Save number 19" in text_of(service, pump)


def test_a_folder_renamed_in_the_tree_keeps_its_text_and_embeds_nothing_again(service, watch, folder, fake_embedder):
    sub = folder / "manuals"
    sub.mkdir()
    for name in ("router", "modem", "switch"):
        (sub / f"{name}.md").write_text(f"# {name}\n\nThe {name} resets when its button is held.\n\nMore on {name}.\n")
    service.ingest([folder], "work")
    with service.reading() as lib:
        before = {Path(d.source_path).name: [c.text for c in lib.chunks(d.id)] for d in lib.documents()}
    w = watch()
    texts = fake_embedder.texts
    os.rename(sub, folder / "guides")
    w.seen(folder / "guides", sub)  # the new name there, the old one gone
    w.drain()
    docs = documents(service)
    assert sorted(Path(p).relative_to(folder).as_posix() for p in docs) == [
        "guides/modem.md", "guides/router.md", "guides/switch.md", "pump.md", "valve.md"]
    with service.reading() as lib:
        after = {Path(d.source_path).name: [c.text for c in lib.chunks(d.id)] for d in lib.documents()}
    assert after == before, "every document kept its text"
    assert fake_embedder.texts == texts, "nothing was embedded again"
    statuses = [s for s, _ in w.changes()]
    assert statuses == ["added"] * 3 + ["removed"] * 3, "the new side first: it reuses the old side's vectors"


def test_a_copy_of_hundreds_of_files_goes_in_batches_with_progress(service, watch, folder, tmp_path):
    source = tmp_path / "elsewhere"
    source.mkdir()
    for i in range(240):
        (source / f"n{i:03d}.md").write_text(f"# Note {i}\n\nNote {i} is about part{i}.\n")
    w = watch()
    target = folder / "copied"
    target.mkdir()
    w.seen(target)  # its watch is in place: every file copied into it has its events
    for f in sorted(source.iterdir()):
        shutil.copy(f, target / f.name)
    w.seen(target, *(target / f.name for f in source.iterdir()))
    w.drain()
    assert [s for s, _ in w.changes()] == ["added"] * 240
    batches = [r for r, catch_up in w.reports if not catch_up]
    assert [len(r.files) for r in batches] == [100, 100, 40], "written in batches of BATCH_FILES"
    assert [(p.done, p.total) for p in w.progress][-1] == (240, 240), "progress counts over the whole copy"
    assert len(documents(service)) == 242 and found(service, "part239")


def test_a_file_that_fails_to_parse_is_reported_once_and_the_watch_goes_on(service, watch, folder):
    w = watch()
    (folder / "scan.pdf").write_bytes(b"%PDF-1.4 this is not really a PDF")
    w.seen(folder / "scan.pdf")
    w.drain()
    (folder / "after.md").write_text("# After\n\nWritten after the broken file.\n")
    w.seen(folder / "after.md")
    w.drain()
    assert w.changes() == [("failed", "scan.pdf"), ("added", "after.md")]
    [failure] = [f for r, _ in w.reports for f in r.files if f.status == "failed"]
    assert "PDF" in failure.reason
    good = folder / "manual.pdf"
    make_pdf(good, [["The manual says the filter is cleaned monthly."]])
    w.seen(good)
    w.drain()
    assert w.changes()[-1] == ("added", "manual.pdf")


def test_a_file_name_that_is_not_utf8_is_said_once_and_nothing_written_with_it_is_lost(service, watch, folder):
    """watchfiles cannot report such a name: its watch ends on any event of the file (a write, or a program reading
    it), dropping the changes that came in the same moment. The watcher says so once, however often it happens,
    watches again, and the look that follows finds what was dropped: the file itself and a save beside it."""
    w = watch()
    odd = os.fsencode(folder) + b"/caf\xe9.md"

    def touch_and_wait_for_a_new_watch(*beside: Path) -> None:
        before = list(w.watcher.groups)
        with open(odd, "a") as f:
            f.write("# Cafe\n\nA Latin-1 name.\n")
        for path in beside:  # in the same moment: dropped with the watch
            path.write_text(f"# {path.stem}\n\nWritten beside the odd name.\n")
        wait_until(lambda: w.watcher.groups and w.watcher.groups != before and all(
            g.ready.is_set() and g.thread.is_alive() for g in w.watcher.groups), "the watch to start again")

    touch_and_wait_for_a_new_watch(folder / "pump.md", folder / "valve.md")
    w.seen(folder / "pump.md", folder / "valve.md", Path(os.fsdecode(odd)))
    touch_and_wait_for_a_new_watch()
    (folder / "after.md").write_text("# After\n\nWritten after the odd name.\n")
    w.seen(folder / "after.md")
    w.drain()
    assert sorted(w.changes()) == [("added", "after.md"), ("added", "caf\\xe9.md"), ("updated", "pump.md"),
                                   ("updated", "valve.md")]  # fmt: skip
    assert sum("not valid UTF-8" in n for n in w.notices) == 1, w.notices


# ---------------------------------------------------------------- roots that vanish


def test_a_vanished_root_keeps_its_documents_and_is_followed_again_when_back(service, watch, folder, tmp_path):
    w = watch()
    away = tmp_path / "away"
    os.rename(folder, away)  # a renamed top folder (an unmounted drive looks the same)
    w.settle()  # the roots are looked at when the clock says it is time
    [gone] = [n for n in w.notices if "is gone" in n]
    assert str(folder) in gone and "2 documents" in gone and "sync --prune" in gone
    assert w.watcher.state().gone == (str(folder),)
    (away / "pump.md").write_text("# Pump\n\nEdited while the folder was away.\n")  # inotify reports the old path
    (away / "valve.md").unlink()
    w.drain()
    assert w.changes() == [] and len(documents(service)) == 2, "nothing removed, nothing applied"
    with service.reading() as lib:
        assert lib.vanished_folders() == [("work", str(folder), 2)]
    os.rename(away, folder)
    w.settle()
    assert any(n.startswith(f"{folder} is back") for n in w.notices)
    catch_up = [r for r, catch_up in w.reports if catch_up][-1]
    assert catch_up.counts["updated"] == 1, "read again when it came back"
    assert any("1 document under" in n and "no file any more" in n for n in w.notices), "valve.md: kept, said"
    (folder / "pump.md").write_text("# Pump\n\nFollowed again.\n")
    w.seen(folder / "pump.md")
    w.drain()
    assert w.changes() == [("updated", "pump.md")]


def test_a_root_replaced_by_an_empty_folder_removes_nothing(service, watch, folder, tmp_path):
    """A drive unmounted from its mount point leaves an empty folder in its place: another folder, not an empty
    version of the watched one."""
    w = watch()
    os.rename(folder, tmp_path / "the-drive")
    folder.mkdir()
    w.settle()
    assert any("another folder now" in n or "is back" in n for n in w.notices), w.notices
    assert any("2 documents under" in n and "kept" in n for n in w.notices)
    assert len(documents(service)) == 2


def test_sync_keeps_a_vanished_folder_and_prune_removes_it(lib, folder):
    lib.ingest([folder], "work")
    home = lib.home
    shutil.rmtree(folder)

    def cli(*args) -> str:
        done = subprocess.run([sys.executable, str(FAKE_CLI), "--home", str(home), *args], capture_output=True,
                              text=True, timeout=PATIENCE)  # fmt: skip
        return done.stdout + done.stderr

    assert f"The folder {folder} is gone: its 2 documents in 'work' are kept" in " ".join(cli("sync").split())
    assert len(lib.documents()) == 2 and lib.vanished_folders() == [("work", str(folder), 2)]
    assert "2 removed" in cli("sync", "--prune")
    assert lib.documents() == [] and lib.sources() == [], "the folder is forgotten too"


def test_a_folder_emptied_keeps_its_documents_until_sync_prune(lib, folder):
    lib.ingest([folder], "work")
    for f in folder.iterdir():  # what an unmounted drive leaves: its mount point, empty
        f.unlink()
    report = lib.sync()[0]
    assert report.kept == [(str(folder), 2, EMPTY_NOW)] and report.counts["removed"] == 0
    assert len(lib.documents()) == 2
    assert report.to_dict()["kept"] == [{"folder": str(folder), "documents": 2, "why": EMPTY_NOW}]
    from localreason.tui.screens.dialogs import report_text

    shown = " ".join(report_text([report]).plain.split())
    assert f"kept {folder} 2 documents kept: the folder is empty now" in shown
    assert "sync --prune removes them" in shown.replace("`", "")
    again = lib.ingest([folder], "work", prune=True)
    assert again.kept == [(str(folder), 2, EMPTY_NOW)] and len(lib.documents()) == 2, "an explicit --prune keeps them"
    (folder / "pump.md").write_text("# Pump\n\nThe pump runs on twelve volts.\n")
    partial = lib.sync()[0]
    assert partial.kept == [] and partial.counts["removed"] == 1, "a folder with files in it is pruned as before"
    (folder / "pump.md").unlink()
    pruned = lib.sync(prune_vanished=True)[0]
    assert pruned.counts["removed"] == 1 and lib.documents() == [] and pruned.kept == []


# ---------------------------------------------------------------- writers and readers


def test_a_writer_holding_the_lock_is_waited_for_and_named(service, watch, folder, lib):
    said: list[str] = []
    lib.notice = said.append
    w = watch()
    fd = write_lock.acquire(lib.settings.lock_path, "a test holding the writer lock")
    try:
        (folder / "pump.md").write_text("# Pump\n\nWritten while another program writes.\n")
        w.seen(folder / "pump.md")
        w.clock.advance(SETTLE + 0.01)
        wait_until(lambda: any("a test holding the writer lock" in m for m in said), "the watcher to say who writes")
        assert "waiting for it to finish" in said[-1] and w.changes() == []
    finally:
        write_lock.release(fd)
    wait_until(lambda: w.changes() == [("updated", "pump.md")], "the change once the lock is free")


def test_a_write_that_fails_is_tried_again_later_and_nothing_is_lost(service, watch, folder, monkeypatch):
    from localreason.errors import LibraryError

    w = watch()
    real, calls = service.refresh, []

    def fails_once(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise LibraryError("The library database is locked by another program.", hint="Close it.")
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "refresh", fails_once)
    pump = folder / "pump.md"

    def before_the_retry() -> None:
        assert "They wait, and are tried again in 2 s" in w.notices[-1] and w.changes() == []
        w.settle()
        assert len(calls) == 1, "not tried again before its time"

    retried(w, pump, "changed while the library was locked", "were not applied", before_the_retry)
    assert "changed while the library was locked" in text_of(service, pump)
    assert any("that waited are applied now" in n for n in w.notices)


def retried(w: Watch, pump: Path, change: str, said: str, meanwhile) -> None:
    """``pump`` changed, its first write failing (the watch says ``said``), then, after ``meanwhile``, the retry
    due 2 s later applying it."""
    pump.write_text(f"# Pump\n\nThe pump was {change}.\n")
    w.seen(pump)
    w.settle()
    wait_until(lambda: any(said in n for n in w.notices), "the failure to be said")
    meanwhile()
    w.clock.advance(2.0)
    w.turns()
    wait_until(lambda: w.changes() == [("updated", "pump.md")], "the change applied on the retry")


def test_files_a_full_disk_left_unwritten_wait_for_the_retry(service, watch, folder, monkeypatch):
    from localreason.types import FileResult, IngestReport

    w = watch()
    real, calls = service.refresh, []

    def disk_full_once(collection, files, gone, **kwargs):
        calls.append(files)
        if len(calls) == 1:
            return IngestReport("col", collection, [FileResult(f, "failed", "not written: the disk is full")
                                                    for f in files], stopped="The disk is full.")  # fmt: skip
        return real(collection, files, gone, **kwargs)

    monkeypatch.setattr(service, "refresh", disk_full_once)
    pump = folder / "pump.md"

    def nothing_reported() -> None:
        assert w.changes() == [], "a file not written is not reported as failed: it waits"

    retried(w, pump, "changed on a full disk", "writing stopped: The disk is full", nothing_reported)
    assert calls == [[str(pump)], [str(pump)]]


def test_a_change_the_watch_never_reported_is_found_by_the_slow_look(service, watch, folder):
    """inotify's queue can overflow in a burst, and watchfiles does not pass that on: here a watch that reports
    nothing at all stands in for it, and the look made every ``rescan`` seconds (RESCAN_S) finds the change."""

    def deaf(*paths, stop_event=None, **kwargs):
        while not stop_event.is_set():
            stop_event.wait(0.05)
            yield set()

    w = watch(notify=deaf, rescan=0.2)
    pump = folder / "pump.md"
    pump.write_text("# Pump\n\nThe pump changed in a burst no event reported.\n")
    w.seen(pump)
    w.drain()
    assert w.changes() == [("updated", "pump.md")]
    assert "in a burst no event reported" in text_of(service, pump)


def test_searches_during_changes_see_one_version_of_a_document_never_a_mix(service, watch, folder):
    manual = folder / "manual.md"

    def version(v: int) -> str:
        return "# Manual\n\n" + "\n\n".join(f"## Part {i}\n\nPart {i} of edition ed{v} covers gauges." for i in range(6))

    manual.write_text(version(0))
    service.ingest([folder], "work")
    w = watch()
    mixed, seen_versions, stop = [], set(), threading.Event()

    def search() -> None:
        while not stop.is_set():
            hits = [h for h in service.deep_search("gauges edition", limit=20) if h.document_title == "Manual"]
            versions = {m for h in hits for m in re.findall(r"\bed(\d)\b", h.content)}
            seen_versions.update(versions)
            if len(versions) > 1:
                mixed.append(versions)

    searcher = threading.Thread(target=search)
    searcher.start()
    try:
        for v in range(1, 4):
            manual.write_text(version(v))
            w.seen(manual)
            w.drain()
            wait_until(lambda v=v: str(v) in seen_versions, f"a search to see edition {v}")
    finally:
        stop.set()
        finished(searcher, "the searches, told to stop")
    assert mixed == [], "a search saw parts of two editions"
    assert len(seen_versions) >= 2, "the searches ran while the editions changed"
    assert {m for h in service.deep_search("gauges edition", limit=20) for m in re.findall(r"\bed(\d)\b", h.content)} \
        == {"3"}  # fmt: skip


def test_a_folder_ingested_later_is_followed_and_a_removed_collection_is_not(service, watch, tmp_path):
    w = watch()
    more = tmp_path / "more"
    more.mkdir()
    (more / "fan.md").write_text("# Fan\n\nThe fan spins.\n")
    service.ingest([more], "more")  # as another program's ingest would
    w.settle()
    assert w.watcher.state().folders == 2
    (more / "fan.md").write_text("# Fan\n\nThe fan spins faster now.\n")
    w.seen(more / "fan.md")
    w.drain()
    assert w.changes() == [("updated", "fan.md")]
    service.remove("more")
    w.settle()
    assert w.watcher.state().folders == 1
    (more / "fan.md").write_text("# Fan\n\nNobody follows this any more.\n")
    w.turns(4)
    assert str(more / "fan.md") not in w.watcher.pending.snapshot()


@pytest.mark.parametrize("named", [False, True], ids=["every-source", "folder-named"])
def test_a_document_removed_while_its_folder_is_watched_stays_out_when_its_file_is_saved(service, watch, folder,
                                                                                          named):  # fmt: skip
    """`localreason watch` (every source, read again as they change) and `localreason watch FOLDER` (the roots
    named when it started) both leave out a file removed while they run."""
    w = watch(roots=roots_for(service, [str(folder)])) if named else watch()
    pump = folder / "pump.md"
    result = service.remove(documents(service)[str(pump)].id)
    assert result["keptOut"] == [{"folder": str(folder), "exclude": "/pump.md"}]
    w.settle()  # the watch reads its folders' globs again
    pump.write_text("# Pump\n\nSaved again after it was removed.\n")
    later = folder / "later.md"
    later.write_text("# Later\n\nWritten after the pump was saved.\n")
    w.seen(pump, later)
    w.drain()
    assert w.changes() == [("added", "later.md")] and str(pump) not in documents(service)
    assert not found(service, "Saved again after it was removed")


# ---------------------------------------------------------------- the front ends


@pytest.mark.slow
def test_the_cli_prints_each_change_and_stops_cleanly_on_ctrl_c(tmp_path, folder):
    home = ingested(tmp_path, folder)
    proc = start_cli(home, "watch")
    seen: list[str] = []
    try:
        read_until(proc, r"^Watching 1 folder: .*notes \(work\)", seen)
        (folder / "pump.md").write_text("# Pump\n\nChanged while the CLI watched.\n")
        (folder / "valve.md").unlink()
        read_until(proc, r"updated\s+.*pump\.md \(1 chunk\)", seen)
        read_until(proc, r"removed\s+.*valve\.md: the file no longer exists", seen)
    finally:
        code = stop_with_ctrl_c(proc, seen)
    assert code == 0 and "Stopped watching." in seen[-1], "".join(seen)


@pytest.mark.slow
def test_serve_watch_answers_from_the_new_text(tmp_path, folder):
    import json
    import urllib.request

    home = ingested(tmp_path, folder)
    proc = start_cli(home, "serve", "--watch", "--port", "0")
    seen: list[str] = []

    def search(query: str) -> list[str]:
        request = urllib.request.Request(base + "/v1/deep_search", data=json.dumps({"query": query}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
        with urllib.request.urlopen(request, timeout=PATIENCE) as r:
            return [h["content"] for h in json.loads(r.read())["data"]]

    try:
        base = re.search(r"on (http://127\.0\.0\.1:\d+)", read_until(proc, r"serving .* on http", seen)).group(1)
        read_until(proc, r"Watching 1 folder", seen)
        (folder / "pump.md").write_text("# Pump\n\nThe pump now hums quietly.\n")
        read_until(proc, r"updated\s+.*pump\.md", seen)
        hits = search("pump hums quietly")
        assert hits and "hums quietly" in hits[0], hits
        assert not any("twelve volts" in h for h in hits)
    finally:
        stop_with_ctrl_c(proc, seen)


def test_mcp_watch_answers_from_the_new_text(isolated_home, folder):
    from localreason.serve.mcp import LocalReasonMCP

    from test_mcp import call, text

    svc = Service(Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder(),
                          generator=FakeGenerator()))  # fmt: skip
    svc.ingest([folder], "work")
    server = LocalReasonMCP(settings=svc.settings, service=svc, watch=True)
    server.start_warming()
    try:
        wait_until(lambda: server._watcher is not None and server._watcher.watcher.ticks > 0, "the watch to start")
        (folder / "valve.md").write_text("# Valve\n\nThe valve now closes at midnight.\n")
        wait_until(lambda: found(svc, "closes at midnight"), "the watch to apply the change")
        result = text(call(server, "deep_search", {"query": "valve closes"}))
        assert "closes at midnight" in result and "noon" not in result, result
    finally:
        server.close()
        svc.close()


def test_mcp_watch_begins_on_a_later_request_when_the_library_could_not_be_opened_at_first(isolated_home, folder,
                                                                                            monkeypatch):  # fmt: skip
    """The store down when the first request came (a database restarting): the next request prepares the library
    again and the watch begins then (before, it never began while the server ran)."""
    from localreason.errors import StoreUnavailable
    from localreason.serve.mcp import LocalReasonMCP

    svc = Service(Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder(),
                          generator=FakeGenerator()))  # fmt: skip
    svc.ingest([folder], "work")
    real, tries = svc.reading, []

    def reading(*args, **kwargs):
        tries.append(1)
        if len(tries) == 1:
            raise StoreUnavailable("The PostgreSQL store cannot be reached: the server is restarting.")
        return real(*args, **kwargs)

    monkeypatch.setattr(svc, "reading", reading)
    server = LocalReasonMCP(settings=svc.settings, service=svc, watch=True)
    server.start_warming()
    try:
        wait_until(lambda: tries and not server._warm_started, "the first try to fail")
        assert server._watcher is None
        server.start_warming()  # what the next request does
        wait_until(lambda: server._watcher is not None, "the watch to begin")
    finally:
        server.close()
        svc.close()


def _close_while_warming(server, entered: threading.Event, go_on: threading.Event) -> None:
    """Start the server's warm-up, close the server while the warm-up is held at ``entered``, then let it go on
    and wait for it to end."""
    server.start_warming()
    assert entered.wait(PATIENCE), "the warm-up never reached the library"
    [thread] = [t for t in threading.enumerate() if t.name == "localreason-mcp-warm"]  # (held: still alive)
    server.close()
    go_on.set()
    thread.join(PATIENCE)
    assert not thread.is_alive(), "the warm-up did not end"


def test_an_mcp_server_closed_while_it_warms_opens_no_library_and_starts_no_watch(isolated_home, monkeypatch):
    """close() came while the warm-up waited: the library it would have opened afterwards stayed open and was
    watched by nobody's watch (a thread and an inotify instance past the server's end)."""
    from localreason.serve.mcp import LocalReasonMCP

    server = LocalReasonMCP(settings=load_settings(isolated_home, reader="off"), watch=True)
    real, entered, go_on = server.service, threading.Event(), threading.Event()

    def service():
        entered.set()
        go_on.wait(PATIENCE)
        return real()

    monkeypatch.setattr(server, "service", service)
    _close_while_warming(server, entered, go_on)
    assert server._service is None and server._watcher is None


def test_an_mcp_server_closed_while_its_library_was_opening_starts_no_watch(isolated_home, folder, monkeypatch):
    from localreason.serve.mcp import LocalReasonMCP

    svc = Service(Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder(),
                          generator=FakeGenerator()))  # fmt: skip
    entered, go_on = threading.Event(), threading.Event()

    @contextmanager
    def reading(*args, **kwargs):
        entered.set()
        go_on.wait(PATIENCE)
        yield

    monkeypatch.setattr(svc, "reading", reading)
    monkeypatch.setattr(svc, "warm", lambda background=True: None)
    server = LocalReasonMCP(settings=svc.settings, service=svc, watch=True)
    _close_while_warming(server, entered, go_on)
    assert server._watcher is None


@pytest.mark.real_model
def test_the_real_embedding_model_through_a_real_watch(isolated_home, folder, real_embedder):
    """What a user runs: the packaged embedding model; a question after the change is answered from it."""
    svc = Service(Library(settings=load_settings(isolated_home, reader="off"), embedder=real_embedder,
                          generator=FakeGenerator()))  # fmt: skip
    svc.ingest([folder], "work")
    w = Watch(svc, Clock())
    try:
        (folder / "valve.md").write_text("# Valve\n\nThe valve is serviced by the harbour crew every spring.\n")
        w.seen(folder / "valve.md")
        w.drain()
        assert w.changes() == [("updated", "valve.md")]
        [best] = svc.deep_search("Who services the valve?", limit=1)
        assert "harbour crew" in best.content
        answer = svc.reason("Who services the valve?")
        assert "harbour crew" in answer.answer and [c.document_title for c in answer.citations] == ["Valve"]
    finally:
        w.close()
        svc.close()


def test_a_root_given_by_path_need_not_be_a_source(service, watch, tmp_path):
    elsewhere = tmp_path / "loose.md"
    elsewhere.write_text("# Loose\n\nA loose file.\n")
    w = watch(roots=[Root("work", str(elsewhere), folder=False)])
    assert w.notices[0].startswith("Watching 1 file")
    elsewhere.write_text("# Loose\n\nA loose file, edited.\n")
    (tmp_path / "sibling.md").write_text("# Sibling\n\nNot watched.\n")
    w.seen(elsewhere)
    w.drain()
    assert w.changes() == [("updated", "loose.md")]


# ---------------------------------------------------------------- the TUI


async def _until(pilot, condition, what: str, timeout: float = PATIENCE) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.05)


async def test_the_tui_follows_the_folders_and_shows_it_in_the_status_line(service, folder):
    from localreason.tui.app import LocalReasonApp

    app = LocalReasonApp(service, watch=True)
    said: list[tuple] = []
    notify = app.notify
    app.notify = lambda message, **kwargs: said.append((kwargs.get("title"), message)) or notify(message, **kwargs)
    async with app.run_test(size=(100, 32)) as pilot:
        state = app.query_one("#watch-state")
        await _until(pilot, lambda: "Watching 1 folder" in str(state.render()), "the watch state in the status line")
        assert not state.has_class("hidden")
        (folder / "pump.md").write_text("# Pump\n\nThe pump was edited while the TUI ran.\n")
        await _until(pilot, lambda: ("Changes applied", "Updated pump.md") in said, "the change to be applied and said")
        assert "edited while the TUI ran" in text_of(service, folder / "pump.md")
        await pilot.press("ctrl+q")
    app.stop_watching()  # as tui.run does once the app has ended
    assert not app.watcher.thread.is_alive()


async def test_the_tui_without_watching_shows_no_watch_state(service):
    from localreason.tui.app import LocalReasonApp

    app = LocalReasonApp(service)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        assert app.query_one("#watch-state").has_class("hidden") and app.watcher is None


async def test_f5_asks_before_removing_the_documents_of_a_vanished_folder(service, folder, tmp_path):
    from localreason.tui.app import LocalReasonApp
    from localreason.tui.screens import ConfirmScreen, ReportScreen

    app = LocalReasonApp(service)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.app.workers.wait_for_complete()
        os.rename(folder, tmp_path / "unplugged")
        await pilot.press("f5")
        await _until(pilot, lambda: isinstance(app.screen, ReportScreen), "the re-sync's report")
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question about the vanished folder")
        assert str(folder) in app.screen.question and "2 documents" in app.screen.question
        assert len(documents(service)) == 2, "nothing removed before the answer"
        await pilot.press("y")
        await _until(pilot, lambda: isinstance(app.screen, ReportScreen), "the removal's report")
        assert documents(service) == {}
