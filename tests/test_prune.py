"""Pruning (ingest/prune.py) on a real library: a document whose file only seems gone (a subfolder where a drive
is mounted, not mounted now; a link to a drive unplugged, a folder that cannot be read, a file given by name whose folder is gone)
is kept and the report says why; a file that is truly gone, or holds no text now, loses its document."""

from __future__ import annotations

import errno
import os

import pytest

from localreason.config import load_settings
from localreason.ingest import prune
from localreason.ingest.prune import FOLDER_GONE, LINK_GONE, NOT_MOUNTED
from localreason.library import Library

from fakes import FakeEmbedder, FakeGenerator


@pytest.fixture
def lib(isolated_home):
    library = Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder(),
                      generator=FakeGenerator())  # fmt: skip
    yield library
    library.close()


@pytest.fixture
def notes(tmp_path):
    """notes/pump.md, and notes/drive/ (a mount point, say) holding two manuals."""
    root = tmp_path / "notes"
    (root / "drive").mkdir(parents=True)
    (root / "pump.md").write_text("# Pump\n\nThe pump runs on twelve volts.\n")
    (root / "drive" / "valve.md").write_text("# Valve\n\nThe valve closes at noon.\n")
    (root / "drive" / "boiler.md").write_text("# Boiler\n\nThe boiler is serviced every spring.\n")
    return root


def titles(lib) -> list[str]:
    return sorted(d.title for d in lib.documents())


def test_a_drive_not_mounted_below_the_folder_keeps_its_documents_until_sync_prune(lib, notes, monkeypatch):
    """A drive that /etc/fstab mounts below the folder given, not mounted now: its mount point is an empty folder.
    Plain sync removed every document on it ("the file no longer exists"). A folder emptied by hand, that no drive
    is mounted on, loses its documents (tests/test_library.py)."""
    lib.ingest([notes], "work")
    for f in (notes / "drive").iterdir():
        f.unlink()
    monkeypatch.setattr(prune, "fstab_mount_points", lambda: frozenset({str(notes / "drive")}))
    [report] = lib.sync()
    assert report.counts["removed"] == 0 and titles(lib) == ["Boiler", "Pump", "Valve"]
    assert report.kept == [(str(notes / "drive"), 2, NOT_MOUNTED)]
    [pruned] = lib.sync(prune_vanished=True)
    assert pruned.counts["removed"] == 2 and titles(lib) == ["Pump"], "the user's word: the drive is not coming back"


def test_the_mount_points_are_read_from_fstab(tmp_path):
    fstab = tmp_path / "fstab"
    fstab.write_text("# <file system> <mount point> <type>\nUUID=1234 / ext4 defaults 0 1\n"
                     "/dev/sdb1  /home/ann/notes/My\\040Drive  vfat  noauto,user  0 0\n\nproc proc proc defaults\n")
    assert prune.fstab_mount_points(str(fstab)) == {"/", "/home/ann/notes/My Drive"}
    assert prune.fstab_mount_points(str(tmp_path / "none")) == frozenset()


def test_a_subfolder_deleted_outright_or_a_file_deleted_beside_others_is_removed(lib, notes):
    lib.ingest([notes], "work")
    (notes / "drive" / "boiler.md").unlink()
    [report] = lib.sync()
    assert [(f.path, f.reason) for f in report.by_status("removed")] == [
        (str(notes / "drive" / "boiler.md"), "the file no longer exists")]
    (notes / "drive" / "valve.md").unlink()
    (notes / "drive").rmdir()
    [report] = lib.sync()
    assert report.counts["removed"] == 1 and report.kept == [] and titles(lib) == ["Pump"]


def test_a_link_to_a_drive_that_is_gone_keeps_its_documents(lib, notes, tmp_path):
    media = tmp_path / "media" / "usb"
    media.mkdir(parents=True)
    (media / "manual.md").write_text("# Manual\n\nHold the button for ten seconds.\n")
    (notes / "usb").symlink_to(media, target_is_directory=True)
    lib.ingest([notes], "work")
    assert "Manual" in titles(lib)
    (media / "manual.md").unlink()
    media.rmdir()  # the drive unplugged: the link points nowhere
    [report] = lib.sync()
    assert report.counts["removed"] == 0 and "Manual" in titles(lib)
    assert report.kept == [(str(notes / "usb"), 1, LINK_GONE)]


def test_a_folder_that_cannot_be_read_keeps_its_documents_even_with_sync_prune(lib, notes, monkeypatch):
    """A listing that fails (permission denied, an I/O error) says nothing about the files in the folder: they
    were reported failed and removed as "no longer read". (The tests run as root, so the failure is made.)"""
    lib.ingest([notes], "work")
    real, drive = os.scandir, str(notes / "drive")

    def scandir(path="."):
        if os.fspath(path) == drive:
            raise PermissionError(errno.EACCES, "Permission denied", drive)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    for prune_vanished in (False, True):
        [report] = lib.sync(prune_vanished=prune_vanished)
        assert report.counts["removed"] == 0 and titles(lib) == ["Boiler", "Pump", "Valve"]
        [(where, n, why)] = report.kept
        assert (where, n) == (drive, 2) and why.startswith("it could not be read (permission denied"), why
    monkeypatch.setattr(os, "scandir", real)
    [report] = lib.sync()
    assert report.kept == [] and report.counts["unchanged"] == 3


def test_a_file_given_by_name_whose_folder_is_gone_is_kept_and_still_followed(lib, tmp_path):
    """`localreason ingest /media/usb/report.md`, the drive unplugged, sync: the document was removed and the file
    forgotten, so nothing looked for it once the drive was back."""
    usb = tmp_path / "usb"
    usb.mkdir()
    report_md = usb / "report.md"
    report_md.write_text("# Report\n\nSales grew by four percent.\n")
    lib.ingest([report_md], "work")
    hidden = tmp_path / "unplugged"
    usb.rename(hidden)
    [report] = lib.sync()
    assert report.counts["removed"] == 0 and titles(lib) == ["Report"]
    assert report.kept == [(str(usb), 1, FOLDER_GONE)]
    hidden.rename(usb)
    report_md.write_text("# Report\n\nSales grew by five percent.\n")
    [report] = lib.sync()
    assert report.counts["updated"] == 1, "the file is still followed"
    (usb / "other.md").write_text("# Other\n\nNot ingested.\n")
    report_md.unlink()  # its folder is there and holds other files, the file is not: deleted
    [report] = lib.sync()
    assert report.counts["removed"] == 1 and titles(lib) == [] and lib.sources() == []


@pytest.mark.parametrize("now, reason", [(b"", "empty file"), (b"\n\n  \n", "empty file")])
def test_a_file_that_holds_no_text_now_loses_its_old_document(lib, notes, now, reason):
    """Emptied after it was ingested: the old sentence went on answering, the report saying only "skipped"."""
    lib.ingest([notes], "work")
    (notes / "pump.md").write_bytes(now)
    report = lib.ingest([notes], "work")
    assert [(f.path, f.reason) for f in report.by_status("removed")] == [
        (str(notes / "pump.md"), f"{reason} now: its old text is removed")]
    assert titles(lib) == ["Boiler", "Valve"]
    assert not any("twelve volts" in hit.content for hit in lib.deep_search("pump twelve volts"))
    [again] = lib.sync()
    assert again.counts["removed"] == 0 and [f.reason for f in again.by_status("skipped")] == [reason]


def test_a_file_left_unread_for_another_reason_keeps_its_document(lib, notes, monkeypatch):
    """Only a file that holds no text now loses its document: one skipped for another reason this time (an image
    while text recognition is off) keeps it."""
    from localreason.ingest import pipeline
    from localreason.types import FileResult

    lib.ingest([notes], "work")
    (notes / "pump.md").write_text("# Pump\n\nThe pump runs on twelve volts, or on a battery.\n")
    monkeypatch.setattr(pipeline, "prepare_file", lambda prep, cand, path: FileResult(
        path, "skipped", "an image file: text recognition is off (ocr = off)"))
    report = lib.ingest([notes], "work")
    assert report.counts["removed"] == 0 and "Pump" in titles(lib)
