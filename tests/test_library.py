"""The Library API with a fake embedder: ingest, sync, prune, lookup, remove, consistency."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from localreason.config import load_settings
from localreason.errors import Interrupted, LibraryError, NotFoundError, ValidationError
from localreason.ingest.walk import left_out
from localreason.library import Library, kept_out
from localreason.store import db as dbmod

from fakes import FakeEmbedder

MANUAL = "# Inverter manual\n\n## Warranty\n\nThe inverter warranty lasts five years from purchase.\n\n" \
         "## Reset\n\nHold the reset button for ten seconds to restart the inverter.\n"  # fmt: skip


@pytest.fixture
def notes(tmp_path):
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "manual.md").write_text(MANUAL)
    (root / "sub" / "todo.txt").write_text("Buy milk.\n\nCall the installer about the inverter.\n")
    (root / ".hidden.md").write_text("# Secret\n\nnot to be ingested\n")
    (root / ".git").mkdir()
    (root / ".git" / "config.md").write_text("# hidden folder\n")
    (root / "photo.heic").write_bytes(b"\x89PNG\r\n\x1a\n")
    return root


def consistent(lib: Library) -> None:
    """The FAISS index holds exactly the paragraph chunks' rowids, and FTS5 matches the chunks."""
    rowids = {r[0] for r in lib.store.db.execute("SELECT rowid FROM chunks WHERE level = 2")}
    ids = {int(lib.vectors.index.id_map.at(i)) for i in range(lib.vectors.size)}
    assert ids == rowids
    fts = lib.store.db.execute("SELECT COUNT(*) FROM chunks_fts_docsize").fetchone()[0]
    assert fts == len(rowids)
    lib.store.db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")


def test_ingest_lists_and_looks_up(lib, notes):
    report = lib.ingest([notes], "work")
    assert report.counts["added"] == 2 and report.ok
    assert {Path(f.path).name for f in report.by_status("skipped")} == {"photo.heic"}
    [col] = lib.collections()
    assert (col.name, col.document_count) == ("work", 2) and col.chunk_count >= 2
    docs = {d.title: d for d in lib.documents("work")}
    manual = docs["Inverter manual"]
    assert manual.format == "markdown" and manual.source_path == str(notes / "manual.md")
    assert lib.document(manual.id) == manual
    assert lib.get(manual.id) == manual and lib.get(col.id).name == "work"
    paras = lib.chunks(manual.id, level=2)
    assert lib.chunk(paras[0].id) == paras[0]
    assert paras[0].section_path == ("Inverter manual", "Warranty")
    assert lib.document_text(manual.id)[paras[0].start:paras[0].end] == paras[0].text
    consistent(lib)


def test_fts_finds_ingested_text(lib, notes):
    lib.ingest([notes], "work")
    hits = lib.store.db.execute(
        "SELECT c.text FROM chunks_fts f JOIN chunks c ON c.rowid = f.rowid WHERE chunks_fts MATCH 'warranty'"
    ).fetchall()
    assert len(hits) == 1 and "five years" in hits[0][0]


def test_reingest_skips_unchanged_without_embedding(lib, notes, fake_embedder):
    lib.ingest([notes], "work")
    calls = fake_embedder.calls
    report = lib.ingest([notes], "work")
    assert report.counts["unchanged"] == 2 and report.counts["added"] == 0
    assert fake_embedder.calls == calls


def test_changed_file_is_reindexed_reusing_unchanged_chunks(lib, notes, fake_embedder):
    lib.ingest([notes], "work")
    before = {d.source_path: d for d in lib.documents()}
    (notes / "manual.md").write_text(MANUAL + "\n## Cleaning\n\nWipe the vents monthly.\n")
    texts = fake_embedder.texts
    report = lib.ingest([notes], "work")
    assert report.counts == {**report.counts, "updated": 1, "unchanged": 1}
    after = {d.source_path: d for d in lib.documents()}
    path = str(notes / "manual.md")
    assert after[path].id == before[path].id, "a document keeps its id across updates"
    assert after[path].content_hash != before[path].content_hash
    assert fake_embedder.texts - texts == 2, "only the new paragraph chunk (and the document's summary) embedded"
    assert any("vents" in c.text for c in lib.chunks(after[path].id, 2))
    consistent(lib)


def test_changed_chunking_settings_re_chunk_on_the_next_sync(tmp_path, fake_embedder):
    root = tmp_path / "long"
    root.mkdir()
    (root / "long.md").write_text("# Long\n\n" + " ".join(f"Sentence {i} says something new." for i in range(200)))
    (root / "short.md").write_text("# Short\n\nOne small paragraph.\n")
    home = tmp_path / "home"
    lib = Library(settings=load_settings(home), embedder=fake_embedder)
    lib.ingest([root], "work")
    before = len(lib.chunks(lib.documents()[0].id, 2)) + len(lib.chunks(lib.documents()[1].id, 2))
    lib.close()
    lib = Library(settings=load_settings(home, chunk_tokens=60, chunk_overlap=10), embedder=fake_embedder)
    assert lib.stale_chunking() == 2, "both documents were cut with the old settings"
    texts = fake_embedder.texts
    [report] = lib.sync()
    assert report.counts["updated"] == 2 and report.counts["unchanged"] == 0
    assert all("re-chunked" in f.reason for f in report.files)
    after = sum(len(lib.chunks(d.id, 2)) for d in lib.documents())
    assert after > before, "the long document is now cut into smaller passages"
    assert max(c.token_count for d in lib.documents() for c in lib.chunks(d.id, 2)) <= 60
    assert fake_embedder.texts - texts < after + 2, "the unchanged short passage kept its vector"
    assert lib.stale_chunking() == 0
    assert lib.sync()[0].counts["unchanged"] == 2, "settled: the next sync has nothing to do"
    consistent(lib)
    lib.close()


def test_documents_from_before_chunking_was_recorded_are_re_chunked_once(lib, notes, fake_embedder):
    lib.ingest([notes], "work")
    lib.store.db.execute("UPDATE documents SET chunking = NULL")  # as a schema-4 library left them
    assert lib.stale_chunking() == 2
    texts = fake_embedder.texts
    report = lib.ingest([notes], "work")
    assert report.counts["updated"] == 2
    assert fake_embedder.texts - texts == 0, "same settings, same passages and openings: nothing embedded again"
    assert lib.ingest([notes], "work").counts["unchanged"] == 2
    consistent(lib)


def test_documents_read_by_an_older_reader_are_read_again_on_sync(lib, tmp_path):
    """An HTML table read before READER_VERSION 2 was one glued run of text; sync reads it again."""
    root = tmp_path / "pages"
    root.mkdir()
    (root / "t.html").write_text("<html><body><h1>Sizes</h1><table><thead><tr><th>Type</th><th>Size</th></tr>"
                                 "</thead><tbody><tr><td>smallint</td><td>2 bytes</td></tr></tbody></table>"
                                 "</body></html>")  # fmt: skip
    lib.ingest([root], "pages")
    [doc] = lib.documents()
    assert "smallint | 2 bytes" in lib.document_text(doc.id)
    from localreason.ingest.pipeline import READER_VERSIONS

    (root / "n.md").write_text("# Note\n\nA Markdown note beside the page.\n")
    lib.ingest([root], "pages")
    lib.store.db.execute("UPDATE documents SET chunking = replace(chunking, ?, '')",
                         (f" reader={READER_VERSIONS['html']}",))  # as the reader before it left it  # fmt: skip
    assert lib.stale_chunking() == 1, "the HTML page only: the Markdown note's reader did not change"
    [report] = lib.sync()
    assert report.counts["updated"] == 1 and report.counts["unchanged"] == 1
    assert "read" in report.by_status("updated")[0].reason
    assert lib.stale_chunking() == 0 and lib.sync()[0].counts["unchanged"] == 2
    consistent(lib)


def test_a_rst_document_read_by_the_line_reader_is_read_again_once(lib, tmp_path):
    """reST's reader changed (rst 2): a document stored by the old one is read again by sync, once."""
    from localreason.ingest.pipeline import READER_VERSIONS

    root = tmp_path / "docs"
    root.mkdir()
    (root / "g.rst").write_text("Guide\n=====\n\nWrap it with\n:func:`functools.cache` to avoid work.\n")
    lib.ingest([root], "docs")
    [doc] = lib.documents()
    assert "functools.cache() to avoid work." in lib.document_text(doc.id)
    lib.store.db.execute("UPDATE documents SET chunking = replace(chunking, ?, '')",
                         (f" reader={READER_VERSIONS['rst']}",))  # as the line reader left it  # fmt: skip
    assert lib.stale_chunking() == 1
    [report] = lib.sync()
    assert report.counts["updated"] == 1
    assert lib.stale_chunking() == 0 and lib.sync()[0].counts["unchanged"] == 1
    consistent(lib)


def test_prune_removes_deleted_files_only_when_asked(lib, notes):
    lib.ingest([notes], "work")
    (notes / "sub" / "todo.txt").unlink()
    report = lib.ingest([notes], "work")
    assert report.counts["removed"] == 0 and len(lib.documents()) == 2
    report = lib.ingest([notes], "work", prune=True)
    assert [Path(f.path).name for f in report.by_status("removed")] == ["todo.txt"]
    assert [d.title for d in lib.documents()] == ["Inverter manual"]
    consistent(lib)


def test_sync_reingests_recorded_sources(lib, notes, tmp_path):
    single = tmp_path / "single.md"
    single.write_text("# Single\n\nA file named on its own.\n")
    lib.ingest([notes], "work")
    lib.ingest([single], "other")
    (notes / "new.md").write_text("# New\n\nA new note about solar panels.\n")
    (notes / "sub" / "todo.txt").unlink()
    single.unlink()
    reports = lib.sync()
    counts = {r.collection: r.counts for r in reports}
    assert counts["work"]["added"] == 1 and counts["work"]["removed"] == 1
    assert counts["other"]["removed"] == 1
    assert sorted(d.title for d in lib.documents()) == ["Inverter manual", "New"]
    assert lib.sync("other") == [], "the removed file's source is forgotten"
    consistent(lib)


def test_include_and_exclude_globs(lib, notes):
    report = lib.ingest([notes], "work", include=["*.md"])
    assert [Path(f.path).name for f in report.by_status("added")] == ["manual.md"]
    report = lib.ingest([notes], "work2", exclude=["sub/*"])
    assert [Path(f.path).name for f in report.by_status("added")] == ["manual.md"]


def test_same_file_in_two_collections_is_two_documents(lib, notes):
    lib.ingest([notes / "manual.md"], "a")
    lib.ingest([notes / "manual.md"], "b")
    docs = lib.documents()
    assert len(docs) == 2 and docs[0].id != docs[1].id


def test_remove_document_and_collection(lib, notes):
    (notes / "sub" / "manual.md").write_text("# Sub manual\n\nThe same name one folder down.\n")
    lib.ingest([notes], "work")
    lib.ingest([notes / "manual.md"], "keep")
    doc = next(d for d in lib.documents("work") if d.title == "Inverter manual")
    result = lib.remove(doc.id)
    assert result["removed"] == "document"
    assert result["keptOut"] == [{"folder": str(notes), "exclude": "/manual.md"}], "its folder leaves it out"
    assert "manual.md in " in kept_out(result["keptOut"]) and "ingest the file by name" in kept_out(result["keptOut"])
    with pytest.raises(NotFoundError):
        lib.document(doc.id)
    consistent(lib)
    [report] = lib.sync("work")
    assert report.counts["added"] == 0, "a removed document does not come back with the next sync"
    assert {d.title for d in lib.documents("work")} == {"Sub manual", "todo.txt"}, "only that file: sub/manual.md stays"
    assert [d.title for d in lib.documents("keep")] == ["Inverter manual"], "the other collection's is not touched"
    lib.ingest([notes], "work", exclude=["*.heic"])  # the folder ingested again, with globs of its own
    assert "Inverter manual" not in {d.title for d in lib.documents("work")}, "its removals are kept"
    assert lib.sources("work")[0]["exclude"] == ["*.heic", "/manual.md"]
    lib.ingest([notes / "manual.md"], "work")
    lib.sync("work")
    assert "Inverter manual" in {d.title for d in lib.documents("work")}, "named by itself, it is back and stays"
    nested = next(d for d in lib.documents("work") if d.title == "todo.txt")
    lib.ingest([notes / "sub"], "work")  # a followed folder inside a followed folder: both leave it out
    assert [k["exclude"] for k in lib.remove(nested.id)["keptOut"]] == ["/sub/todo.txt", "/todo.txt"]
    assert "todo.txt" not in {d.title for d in lib.documents("work")} and lib.sync("work")[0].counts["added"] == 0
    single = notes.parent / "single.md"
    single.write_text("# Single\n\nA file named on its own.\n")
    lib.ingest([single], "named")
    [named] = lib.documents("named")
    assert "keptOut" not in lib.remove(named.id), "a file ingested by name is forgotten with its document"
    assert lib.sync("named") == [], "what it was told"
    lib.remove("named")
    result = lib.remove("work")
    assert result == {**result, "removed": "collection", "documents": 2}
    assert [c.name for c in lib.collections()] == ["keep"]
    consistent(lib)
    with pytest.raises(ValidationError):
        lib.remove(lib.chunks(lib.documents()[0].id)[0].id)


def titles(lib, collection: str) -> set[str]:
    return {d.title for d in lib.documents(collection)}


def test_a_removed_file_stays_out_of_every_later_ingest_of_its_folder(lib, tmp_path):
    """Ingested with another folder, its folder gone for a while (a drive unmounted), or a folder above or below it
    ingested later: the removed document never comes back, and nothing else is left out."""
    top = tmp_path / "top"
    a, b = top / "a", top / "b"
    (a / "sub").mkdir(parents=True)
    b.mkdir()
    (a / "keep.md").write_text("# Keep\n\nThe pump runs at five bar.\n")
    (a / "secret.md").write_text("# Secret\n\nThe salary list is private.\n")
    (a / "sub" / "x.md").write_text("# X\n\nThe removed one, one folder down.\n")
    (b / "other.md").write_text("# Other\n\nThe valve is blue.\n")
    lib.ingest([a], "work")
    lib.remove(next(d for d in lib.documents("work") if d.title == "Secret").id)
    lib.ingest([a, b], "work")  # ingested again together with another folder
    assert titles(lib, "work") == {"Keep", "X", "Other"}
    assert lib.sync("work") and titles(lib, "work") == {"Keep", "X", "Other"}
    assert {s["path"]: s["exclude"] for s in lib.sources("work")} == {str(a): ["/secret.md"], str(b): []}
    lib.ingest([a / "sub"], "work")
    lib.remove(next(d for d in lib.documents("work") if d.title == "X").id)
    lib.ingest([a / "sub"], "fresh")  # another collection: not its removal
    assert titles(lib, "fresh") == {"X"}
    lib.remove("fresh")
    os.rename(a, top / "a-unmounted")  # the drive unmounted: sync keeps the folder's documents
    lib.sync("work")
    keep = next(d for d in lib.documents("work") if d.title == "Keep")
    assert lib.remove(keep.id)["keptOut"] == [{"folder": str(a), "exclude": "/keep.md"}], "kept out while away"
    os.rename(top / "a-unmounted", a)
    reports = lib.sync("work")
    assert titles(lib, "work") == {"Other"}, "nothing removed came back"
    assert all(r.counts["added"] == 0 and r.counts["removed"] == 0 for r in reports), "and nothing churns"
    lib.ingest([a / "sub", top], "work")  # a folder above, a folder below: both leave the removed files out
    assert titles(lib, "work") == {"Other"}
    assert {r.counts["added"] for r in lib.sync("work")} == {0}
    consistent(lib)


def test_ingesting_again_without_globs_drops_a_persons_own_anchored_glob(lib, tmp_path):
    """Only Library.remove's globs (a file named alone) outlive an ingest with other globs: "/drafts/*" is a
    person's own and goes when the folder is ingested again without it."""
    b = tmp_path / "b"
    (b / "drafts").mkdir(parents=True)
    (b / "keep.md").write_text("# Keep\n\nThe pump runs at five bar.\n")
    (b / "drafts" / "d.md").write_text("# Draft\n\nA draft.\n")
    lib.ingest([b], "w", exclude=["/drafts/*"])
    assert titles(lib, "w") == {"Keep"}
    lib.ingest([b], "w")
    assert titles(lib, "w") == {"Keep", "Draft"} and lib.sources("w")[0]["exclude"] == []


def test_remove_keeps_out_a_file_whose_name_is_not_utf8(lib, notes):
    """A name that is not UTF-8 is stored with \\xNN escapes: the exclude glob must name the file's real bytes, or
    the removed document comes back with the next sync."""
    odd = notes / os.fsdecode(b"caf\xe9 notes.txt")
    odd.write_text("Espresso before noon, the caf\u00e9 rule.\n")
    lib.ingest([notes], "work")
    doc = next(d for d in lib.documents("work") if d.source_path.endswith("caf\\xe9 notes.txt"))
    result = lib.remove(doc.id)
    assert result["keptOut"] == [{"folder": str(notes), "exclude": "/caf\\xe9 notes.txt"}], "shown as text"
    assert lib.sync("work")[0].counts["added"] == 0, "the removed file stays out"
    assert doc.source_path not in {d.source_path for d in lib.documents("work")}
    assert lib.sources("work")[0]["exclude"] == [left_out(os.fsdecode(b"caf\xe9 notes.txt"))], "its bytes, stored"
    consistent(lib)


@pytest.mark.parametrize("bad, error", [
    ("", ValidationError), ("   ", ValidationError), ("doc_", ValidationError), ("doc_ABC", ValidationError),
    ("doc_aaaaaaaaaaaaaaa!", ValidationError), ("chk_aaaaaaaaaaaaaaaa", NotFoundError),
    ("doc_aaaaaaaaaaaaaaaa", NotFoundError), ("col_aaaaaaaaaaaaaaaa", NotFoundError), ("x/../y", ValidationError),
])  # fmt: skip
def test_get_rejects_malformed_and_unknown_ids(lib, bad, error):
    with pytest.raises(error):
        lib.get(bad)


def test_lookup_by_wrong_kind_of_id_says_so(lib):
    with pytest.raises(ValidationError, match="is a chunk id, not a document id"):
        lib.document("chk_aaaaaaaaaaaaaaaa")


@pytest.mark.parametrize("name", ["", "  ", "x" * 81, "doc_aaaaaaaaaaaaaaaa"])
def test_bad_collection_names(lib, notes, name):
    with pytest.raises(ValidationError):
        lib.ingest([notes], name)
    assert lib.collections() == []


def test_failed_write_leaves_previous_documents_intact(lib, notes, monkeypatch):
    lib.ingest([notes / "manual.md"], "work")
    (notes / "manual.md").write_text(MANUAL.replace("five", "seven"))
    real = lib.store.replace_document

    def explode(doc, chunks, vectors, *rest):
        if "todo" in doc["source_path"]:
            raise sqlite3.OperationalError("disk I/O error (simulated)")
        return real(doc, chunks, vectors, *rest)

    monkeypatch.setattr(lib.store, "replace_document", explode)
    with pytest.raises(sqlite3.OperationalError):
        lib.ingest([notes], "work")
    monkeypatch.undo()
    titles = {d.title for d in lib.documents()}
    assert titles == {"Inverter manual"}
    lib.close()
    again = Library(settings=lib.settings, embedder=FakeEmbedder())
    consistent(again)
    again.close()


def test_interrupt_keeps_finished_documents_and_index_consistent(lib, tmp_path, monkeypatch):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(6):
        (folder / f"n{i}.md").write_text(f"# Note {i}\n\n" + f"Sentence {i} about topic {i}. " * 300)
    monkeypatch.setattr("localreason.ingest.pipeline.EMBED_GROUP", 1)
    real = lib.store.replace_document
    written = []

    def interrupt_third(doc, chunks, vectors, *rest):
        if len(written) == 2:
            raise KeyboardInterrupt
        written.append(doc["id"])
        return real(doc, chunks, vectors, *rest)

    monkeypatch.setattr(lib.store, "replace_document", interrupt_third)
    with pytest.raises(Interrupted) as err:
        lib.ingest([folder], "work")
    assert err.value.report.counts["added"] == 2
    monkeypatch.undo()
    lib.close()
    again = Library(settings=lib.settings, embedder=FakeEmbedder())
    assert len(again.documents()) == 2
    consistent(again)
    report = again.ingest([folder], "work")
    assert report.counts["added"] == 4 and report.counts["unchanged"] == 2
    again.close()


def test_stale_vector_cache_is_rebuilt(lib, notes):
    lib.ingest([notes], "work")
    lib.close()
    settings = lib.settings
    # Simulate a crash after a database commit but before the index was saved.
    store = dbmod.Store(settings.db_path)
    store.bump_generation()
    store.close()
    again = Library(settings=settings, embedder=FakeEmbedder())
    consistent(again)
    again.close()
    settings.vectors_path.write_bytes(b"garbage")
    again = Library(settings=settings, embedder=FakeEmbedder())
    consistent(again)
    again.close()


def test_other_embedding_model_is_refused_then_reindex_switches(lib, notes):
    lib.ingest([notes], "work")
    lib.close()

    class Other(FakeEmbedder):
        name = "other-model"
        fingerprint = "other-v1"

    other = Library(settings=lib.settings, embedder=Other())
    with pytest.raises(LibraryError, match="fake-words") as err:
        other.ingest([notes / "manual.md"], "more")
    assert "reindex" in err.value.hint
    assert other.reindex() == other.store.paragraph_count()
    report = other.ingest([notes / "manual.md"], "more")
    assert report.counts["added"] == 1
    consistent(other)
    other.close()


def test_schema_is_migrated_and_newer_schema_refused(isolated_home):
    settings = load_settings(isolated_home)
    store = dbmod.Store(settings.db_path)
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == dbmod.SCHEMA_VERSION
    store.db.execute(f"PRAGMA user_version={dbmod.SCHEMA_VERSION + 1}")
    store.close()
    with pytest.raises(LibraryError, match="newer localreason"):
        dbmod.Store(settings.db_path)


def test_vectors_are_stored_and_searchable(lib, notes, fake_embedder):
    lib.ingest([notes], "work")
    q = fake_embedder.embed(["inverter warranty five years"])[0]
    scores, rowids = lib.vectors.search(q, 3)
    top = lib.store.db.execute("SELECT text FROM chunks WHERE rowid = ?", (int(rowids[0]),)).fetchone()[0]
    assert "warranty" in top
    assert np.all(np.diff(scores) <= 1e-6)


def test_a_sync_stopped_in_a_later_folder_reports_the_folders_before_it_too(lib, tmp_path):
    """Ctrl-C (Escape in the TUI) during the third folder of a sync: the report held that folder alone, and what
    the first two added, removed or failed was never said."""
    from localreason.errors import Interrupted

    folders = []
    for name in ("a", "b", "c"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.md").write_text(f"# Note {name}\n\nThe {name} note says little.\n")
        lib.ingest([folder], "work")
        (folder / f"{name}-new.md").write_text(f"# New {name}\n\nA new note in folder {name}.\n")
        folders.append(folder)

    def progress(p):
        if p.path.startswith(str(folders[2])):
            raise KeyboardInterrupt

    with pytest.raises(Interrupted) as stop:
        lib.sync(progress=progress)
    added = [f.path for r in stop.value.reports for f in r.by_status("added")]
    assert [str(f / f"{f.name}-new.md") for f in folders[:2]] == added[:2], added
    assert len(stop.value.reports) == 3
