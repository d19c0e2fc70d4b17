"""Bad input: each bad file gets a per-file reason, the rest of the ingest goes on, nothing stored is lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.library import Library

from fakes import FakeEmbedder
from files import make_docx, make_pdf


def result_for(report, name):
    [found] = [f for f in report.files if Path(f.path).name == name]
    return found


@pytest.fixture
def messy(tmp_path):
    root = tmp_path / "messy"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nThis note is fine and must be ingested.\n")
    (root / "empty.txt").write_bytes(b"")
    (root / "blank.md").write_text("  \n\n   \n")
    (root / "binary.txt").write_bytes(bytes(range(256)) * 10)
    pdf = make_pdf(tmp_path / "whole.pdf", [["A complete page."]]).read_bytes()
    (root / "truncated.pdf").write_bytes(pdf[: len(pdf) // 2])
    (root / "invalid.docx").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    (root / "fake.docx").write_text("this is plain text pretending to be a docx")
    (root / "latin1.txt").write_bytes("Voil\u00e0 le r\u00e9sum\u00e9 du caf\u00e9 fran\u00e7ais. ".encode("cp1252") * 30)
    (root / "oneline.txt").write_text("lorem ipsum dolor sit amet " * 50_000)  # 1.35 MB, no newline
    (root / "loop").symlink_to(root)  # a folder link back to its parent
    (root / "self").symlink_to(root / "self")  # a link to itself
    (root / "dangling.md").symlink_to(root / "missing.md")
    return root


def test_every_bad_file_has_a_reason_and_the_rest_is_ingested(lib, messy):
    report = lib.ingest([messy, messy.parent / "does-not-exist"], "work")
    expect = {
        "good.md": ("added", ""),
        "latin1.txt": ("added", "not UTF-8"),
        "oneline.txt": ("added", ""),
        "empty.txt": ("skipped", "empty file"),
        "blank.md": ("skipped", "empty file"),
        "binary.txt": ("skipped", "binary file"),
        "truncated.pdf": ("failed", "corrupt or unreadable PDF"),
        "invalid.docx": ("failed", "not a valid DOCX"),
        "fake.docx": ("failed", "not a valid DOCX"),
        "self": ("skipped", "symbolic link loop"),
        "dangling.md": ("skipped", "broken symbolic link"),
        "loop": ("skipped", "symbolic link loop"),
        "does-not-exist": ("failed", "no such file or folder"),
    }
    for name, (status, words) in expect.items():
        got = result_for(report, name)
        assert got.status == status, (name, got)
        assert words in got.reason, (name, got)
    assert not report.ok
    assert {d.title for d in lib.documents()} == {"Good", "latin1.txt", "oneline.txt"}
    big = next(d for d in lib.documents() if d.title == "oneline.txt")
    assert big.chunk_count > 1000


def test_a_file_that_turns_corrupt_keeps_its_previous_version(lib, tmp_path):
    path = make_docx(tmp_path / "report.docx", "Report", [("Findings", ["The pump failed twice."])])
    lib.ingest([path], "work")
    [before] = lib.documents()
    path.write_bytes(path.read_bytes()[:200])  # truncated on disk
    report = lib.ingest([path], "work", prune=True)
    assert report.files[0].status == "failed"
    [after] = lib.documents()
    assert after == before
    assert any("pump failed" in c.text for c in lib.chunks(after.id, 2))


def test_files_over_the_size_limit_are_rejected_with_the_setting_to_change(isolated_home, tmp_path):
    (tmp_path / "big.txt").write_text("word " * 30_000)  # ~150 KB
    (tmp_path / "small.txt").write_text("a small file")
    lib = Library(settings=load_settings(isolated_home, max_file_mb=0.1), embedder=FakeEmbedder())
    report = lib.ingest([tmp_path / "big.txt", tmp_path / "small.txt"], "work")
    big = result_for(report, "big.txt")
    assert big.status == "failed" and "too large" in big.reason and "LOCALREASON_MAX_FILE_MB" in big.reason
    assert result_for(report, "small.txt").status == "added"
    lib.close()


def test_unreadable_file_is_reported(lib, tmp_path, monkeypatch):
    (tmp_path / "a.md").write_text("# A\n\nreadable\n")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nno access\n")
    real_open = os.open

    def guarded(path, flags, *args, **kwargs):
        if Path(path).name == "secret.md":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    # Tests run as root in CI, where chmod 000 does not stop reads; simulate the OS refusing.
    monkeypatch.setattr(os, "open", guarded)
    report = lib.ingest([tmp_path], "work")
    assert result_for(report, "secret.md").status == "failed"
    assert "permission denied" in result_for(report, "secret.md").reason
    assert result_for(report, "a.md").status == "added"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files whatever their mode")
def test_unreadable_file_for_real(lib, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n")
    secret.chmod(0)
    report = lib.ingest([secret], "work")
    assert report.files[0].status == "failed" and "permission denied" in report.files[0].reason


def test_fifo_is_not_read(lib, tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "ok.txt").write_text("fine")
    report = lib.ingest([tmp_path], "work")
    assert result_for(report, "pipe.txt").status == "skipped"
    assert "not a regular file" in result_for(report, "pipe.txt").reason
    assert result_for(report, "ok.txt").status == "added"


def test_no_paths_is_a_validation_error(lib):
    from localreason.errors import ValidationError

    with pytest.raises(ValidationError):
        lib.ingest([], "work")
