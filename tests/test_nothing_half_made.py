"""A failed ingest creates nothing that was not there before: a new collection, and each path given as a source
(what `sync` and a watch re-check), come into being only with the first document written under it. A missing path,
a corrupt file, a folder of bad files, an interrupt before the first write: the library is exactly as it was
(collections, sources, documents, vectors), on either store, through the API and the CLI."""

from __future__ import annotations

import pytest

from localreason.cli import main
from localreason.config import load_settings
from localreason.errors import Interrupted
from localreason.ids import random_id
from localreason.library import Library

from fakes import FakeEmbedder

NOT_A_PDF = bytes(range(256)) * 12
"""A binary file renamed .pdf: PDFium refuses it as corrupt."""
NOTE = "# Inverter\n\nThe inverter shows error E7 when the battery is cold.\n"


@pytest.fixture
def any_lib(store_setting, isolated_home):
    """A library on the fake embedder, on each store in turn (SQLite + FAISS, PostgreSQL)."""
    library = Library(settings=load_settings(isolated_home, store=store_setting, reader="off"), embedder=FakeEmbedder())
    yield library
    library.close()


@pytest.fixture
def files(tmp_path):
    """``good/`` (one note), ``bad/`` (two corrupt files), ``mixed/`` (a corrupt file first, then a note)."""
    for folder in ("good", "bad", "mixed"):
        (tmp_path / folder).mkdir()
    (tmp_path / "good" / "inverter.md").write_text(NOTE)
    (tmp_path / "bad" / "fake.pdf").write_bytes(NOT_A_PDF)
    (tmp_path / "bad" / "fake.docx").write_bytes(NOT_A_PDF)
    (tmp_path / "mixed" / "a-fake.pdf").write_bytes(NOT_A_PDF)
    (tmp_path / "mixed" / "b-note.md").write_text(NOTE)
    return tmp_path


def state(lib: Library) -> tuple:
    """What can be seen of a library: its collections with their counts, its sources, its documents, its vectors
    and the count of its writes."""
    return ([(c.id, c.name, c.document_count, c.chunk_count) for c in lib.collections()], lib.sources(),
            sorted(d.id for d in lib.documents()), lib.store.paragraph_count(), lib.index_info()["vectors"],
            lib.store.generation())  # fmt: skip


def test_a_missing_path_makes_nothing(any_lib, tmp_path):
    before = state(any_lib)
    report = any_lib.ingest([tmp_path / "no-such-folder"], "junk")
    assert [f.reason for f in report.by_status("failed")] == ["no such file or folder"]
    assert state(any_lib) == before and before[:5] == ([], [], [], 0, 0)
    assert any_lib.sync() == []


def test_a_corrupt_file_makes_nothing(any_lib, files):
    before = state(any_lib)
    report = any_lib.ingest([files / "bad" / "fake.pdf"], "junk")
    assert "corrupt" in report.by_status("failed")[0].reason
    assert state(any_lib) == before and before[:5] == ([], [], [], 0, 0)
    assert any_lib.sync() == []


def test_a_folder_of_bad_files_makes_nothing_and_an_existing_collection_stays_as_it_was(any_lib, files):
    assert any_lib.ingest([files / "good"], "work").counts["added"] == 1
    before = state(any_lib)
    assert any_lib.ingest([files / "bad"], "junk").counts["failed"] == 2
    assert any_lib.ingest([files / "bad"], "work").counts["failed"] == 2
    assert state(any_lib) == before  # no "junk", and "work" does not remember bad/: sync re-checks good/ only
    [synced] = any_lib.sync()
    assert (synced.collection, synced.counts["unchanged"], synced.counts["failed"]) == ("work", 1, 0)


def test_an_interrupt_before_the_first_write_makes_nothing(lib, files):
    def stop(progress):
        raise KeyboardInterrupt  # Ctrl+C, or the TUI's cancel, as the first file (a-fake.pdf) is reported

    before = state(lib)
    with pytest.raises(Interrupted) as err:
        lib.ingest([files / "mixed"], "notes", progress=stop)
    assert err.value.report.counts["added"] == 0
    assert state(lib) == before and before[:5] == ([], [], [], 0, 0) and lib.sync() == []
    assert not lib.settings.vectors_path.exists()
    report = lib.ingest([files / "mixed"], "notes")  # the same command again does it all
    assert (report.counts["added"], report.counts["failed"]) == (1, 1)
    assert [s["path"] for s in lib.sources()] == [str(files / "mixed")]


def test_an_interrupt_inside_the_first_write_takes_the_new_collection_back_with_it(any_lib, files, monkeypatch):
    """The new collection, its source and its first document are one transaction: all or nothing."""
    written = any_lib.store.replace_document

    def write_then_stop(*args):
        written(*args)
        raise KeyboardInterrupt

    before = state(any_lib)
    monkeypatch.setattr(any_lib.store, "replace_document", write_then_stop)
    with pytest.raises(Interrupted):
        any_lib.ingest([files / "good"], "notes")
    monkeypatch.undo()
    assert state(any_lib) == before and before[:5] == ([], [], [], 0, 0) and any_lib.sync() == []
    assert any_lib.ingest([files / "good"], "notes").counts["added"] == 1
    [col] = any_lib.collections()
    assert (col.name, col.document_count) == ("notes", 1)


def test_a_watch_refresh_makes_its_collection_only_with_a_document(lib, files):
    report = lib.refresh("watched", [str(files / "bad" / "fake.pdf")])
    assert report.counts["failed"] == 1 and lib.collections() == []
    report = lib.refresh("watched", [str(files / "good" / "inverter.md")])
    assert report.counts["added"] == 1
    assert [(c.name, c.document_count) for c in lib.collections()] == [("watched", 1)]
    assert lib.sources() == []  # a watcher's files are files of the folders it follows, not sources of their own


def test_an_empty_folder_is_remembered_for_the_notes_to_come(lib, tmp_path):
    """Decided: a user's new, empty notes folder is not a failure. Its ingest succeeds (exit 0), makes the collection
    asked for and remembers the folder, so that `sync` (and a watch) ingest what is put in it later."""
    notes = tmp_path / "new-notes"
    notes.mkdir()
    assert lib.ingest([notes], "notes").ok
    assert [(c.name, c.document_count) for c in lib.collections()] == [("notes", 0)]
    assert [s["path"] for s in lib.sources()] == [str(notes)]
    (notes / "first.md").write_text(NOTE)
    [report] = lib.sync()
    assert report.counts["added"] == 1


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, " ".join(out.split()), " ".join(err.split())


def _seen(isolated_home) -> tuple:
    """``state`` of the library the CLI wrote, less its count of writes (a fresh SQLite library starts at 1)."""
    lib = Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder())
    try:
        return state(lib)[:5]
    finally:
        lib.close()


@pytest.mark.parametrize("what", ["missing", "corrupt", "bad folder"])
def test_the_cli_says_it_failed_and_made_nothing(capsys, files, isolated_home, what):
    path = {"missing": files / "nope", "corrupt": files / "bad" / "fake.pdf", "bad folder": files / "bad"}[what]
    code, out, _ = run(capsys, "ingest", str(path), "-c", "junk")
    assert code == 1
    assert ("no such file or folder" if what == "missing" else "corrupt or unreadable PDF") in out
    assert "Nothing was written, so the collection 'junk' was not made: the library is as it was." in out
    assert "Collection junk (not made: nothing was written)" in out and "col_" not in out  # no id of nothing
    assert _seen(isolated_home) == ([], [], [], 0, 0)
    code, out, _ = run(capsys, "ingest", str(path), "-c", "junk", "--json")
    import json

    report = json.loads(out)["data"]
    assert code == 1 and report["collectionId"] is None and report["collectionMade"] is False
    code, out, _ = run(capsys, "library")
    assert code == 0 and "junk" not in out
    code, out, _ = run(capsys, "sync")
    assert code == 0 and "junk" not in out


def test_the_cli_interrupted_before_the_first_write_made_nothing(capsys, files, isolated_home, monkeypatch):
    def stop(progress):
        raise KeyboardInterrupt

    monkeypatch.setattr("localreason.cli.library.progress_callback", lambda shown: (None, stop))
    code, out, err = run(capsys, "ingest", str(files / "mixed"), "-c", "notes")
    assert code == 130 and "Interrupted." in err
    assert "the collection 'notes' was not made" in out
    assert _seen(isolated_home) == ([], [], [], 0, 0)


def test_the_cli_says_an_empty_folder_is_remembered(capsys, tmp_path):
    (tmp_path / "new-notes").mkdir()
    code, out, _ = run(capsys, "ingest", str(tmp_path / "new-notes"), "-c", "notes")
    assert code == 0
    assert f"No file to read in {tmp_path / 'new-notes'} yet: it is remembered, and `localreason sync` (or " \
        "`localreason watch`) ingests what is put in it." in out  # fmt: skip


def test_a_transaction_inside_another_commits_or_rolls_back_with_it(any_lib):
    """What the above rests on, on either store: the collection made inside the transaction of a document's write
    goes when that transaction is rolled back; an inner transaction that fails takes back only its own writes."""
    store = any_lib.store
    with pytest.raises(KeyboardInterrupt):
        with store.transaction():
            store.insert_collection(random_id("col"), "outer")
            with store.transaction():
                store.insert_collection(random_id("col"), "inner")
            raise KeyboardInterrupt
    assert store.collection_rows() == []
    with store.transaction():
        store.insert_collection(random_id("col"), "kept")
        with pytest.raises(ValueError), store.transaction():
            store.insert_collection(random_id("col"), "taken back")
            raise ValueError
    assert [c.name for c in store.collection_rows()] == ["kept"]


def test_the_cli_says_a_path_that_yielded_nothing_is_not_remembered(capsys, files, isolated_home):
    """Into a collection that exists, a folder whose every file fails adds nothing, so it is not remembered: the
    command says so, since sync will not retry it once the files are mended."""
    code, _, _ = run(capsys, "ingest", str(files / "good"), "-c", "work")
    assert code == 0
    code, out, _ = run(capsys, "ingest", str(files / "bad"), "-c", "work")
    assert code == 1 and f"Nothing could be read from {files / 'bad'}, so it is not remembered" in out
    code, out, _ = run(capsys, "ingest", str(files / "good"), "-c", "work")
    assert code == 0 and "not remembered" not in out
