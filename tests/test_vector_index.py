"""The vector index's two kinds: exact (flat) for small libraries, IVF for large ones, switched by size."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from localreason.config import load_settings
from localreason.library import Library
from localreason.store import vectors as vectors_mod
from localreason.store.vectors import VectorIndex, ivf_lists, wanted_kind

from fakes import FakeEmbedder


def notes(root: Path, n: int, start: int = 0) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        (root / f"note{i:03d}.md").write_text(f"# note {i}\n\ntopic{i} word{i % 7} shared text {i}.\n")
    return root


def open_lib(home: Path, **overrides) -> Library:
    return Library(settings=load_settings(home, **overrides), embedder=FakeEmbedder())


def consistent(lib: Library) -> None:
    assert np.array_equal(lib.vectors.ids(), lib.store.paragraph_rowids())


def test_kind_follows_size_with_hysteresis_and_the_setting_wins():
    f = vectors_mod.IVF_FROM
    assert wanted_kind("auto", f - 1) == "flat" and wanted_kind("auto", f) == "ivf"
    assert wanted_kind("auto", f // 2, current="ivf") == "ivf"  # no flapping around the threshold
    assert wanted_kind("auto", f // 2 - 1, current="ivf") == "flat"
    assert wanted_kind("flat", 10 * f) == "flat" and wanted_kind("ivf", 3) == "ivf"
    assert ivf_lists(1_000_000) == 1024 and ivf_lists(200_000) == 512 and ivf_lists(10) == 256


def test_a_library_switches_to_ivf_when_it_grows_and_back_when_it_shrinks(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors_mod, "IVF_FROM", 40)
    home = tmp_path / "home"
    lib = open_lib(home)
    lib.ingest([notes(tmp_path / "a", 30)], "a")
    assert lib.index_info()["kind"] == "flat" and lib.index_info()["exact"]
    lib.ingest([notes(tmp_path / "b", 20, start=100)], "b")  # 50 chunks: clustered when published
    info = lib.index_info()
    assert info["kind"] == "ivf" and not info["exact"] and info["lists"] == 256 and info["vectors"] == 50
    consistent(lib)
    lib.close()

    meta = json.loads((home / "vectors.json").read_text())
    assert (meta["kind"], meta["count"]) == ("ivf", 50)
    reader = open_lib(home)
    assert reader.index_info()["kind"] == "ivf"  # read from the published file, without loading it
    hits = reader.deep_search("topic105", limit=3)
    assert hits and hits[0].document_title == "note 105"
    consistent(reader)
    assert reader.vectors.kind == "ivf" and not reader.vectors.repaired  # loaded as saved, not rebuilt
    assert reader.vectors.mapped  # memory-mapped, not read
    reader.remove("b")  # 30 left: still above half the threshold; the lists are copied into memory first
    assert reader.vectors.kind == "ivf" and not reader.vectors.mapped
    consistent(reader)
    reader.remove("a")  # 0 left: flat again
    assert reader.vectors.kind == "flat" and reader.vectors.size == 0
    reader.close()


def test_ivf_search_finds_what_exact_search_finds_and_respects_scope(tmp_path):
    home = tmp_path / "home"
    lib = open_lib(home, vector_index="ivf")
    lib.ingest([notes(tmp_path / "a", 60)], "a")
    lib.ingest([notes(tmp_path / "b", 5, start=500)], "b")
    assert lib.vectors.kind == "ivf"
    consistent(lib)
    exact = open_lib(tmp_path / "exact", vector_index="flat")
    exact.ingest([notes(tmp_path / "a", 60)], "a")
    exact.ingest([notes(tmp_path / "b", 5, start=500)], "b")
    for q in ("topic3 shared", "word5 text", "topic502"):
        assert [h.document_title for h in lib.deep_search(q, limit=5)] == \
            [h.document_title for h in exact.deep_search(q, limit=5)]  # fmt: skip
    scoped = lib.deep_search("topic3 shared", collection_id=lib.collection("b").id, limit=5)
    assert scoped and {h.document_title for h in scoped} <= {f"note {i}" for i in range(500, 505)}
    ids, vecs = lib.vectors.contents()
    assert sorted(ids.tolist()) == lib.vectors.ids().tolist() and vecs.shape == (65, FakeEmbedder.dim)
    stored = lib.store.vectors_of(ids[:5].tolist())
    for rowid, vec in zip(ids[:5], vecs[:5]):
        assert np.allclose(stored[int(rowid)], vec)
    lib.close()
    exact.close()


def test_the_setting_converts_a_published_index_on_open(tmp_path):
    home = tmp_path / "home"
    lib = open_lib(home)
    lib.ingest([notes(tmp_path / "a", 12)], "a")
    lib.close()
    forced = open_lib(home, vector_index="ivf")
    assert forced.vectors.kind == "ivf" and forced.vectors.repaired
    consistent(forced)
    forced.close()
    assert json.loads((home / "vectors.json").read_text())["kind"] == "ivf"
    back = open_lib(home, vector_index="flat")
    assert back.vectors.kind == "flat"
    consistent(back)
    back.close()


def test_an_overgrown_ivf_index_is_clustered_again(tmp_path, monkeypatch):
    index = VectorIndex(tmp_path / "vectors.faiss", 8, kind_setting="ivf")
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((300, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index.fit_kind()
    assert index.kind == "ivf" and index._ivf().nlist == 256
    index.index.add_with_ids(vecs, np.arange(300, dtype=np.int64))
    monkeypatch.setattr(vectors_mod, "ivf_lists", lambda n: 1024 if n >= 300 else 256)
    assert index.fit_kind() and index._ivf().nlist == 1024
    assert np.array_equal(index.ids(), np.arange(300))
    scores, found = index.search(vecs[7], 1)
    assert found[0] == 7 and scores[0] == pytest.approx(1.0, abs=1e-5)
    monkeypatch.setattr(vectors_mod, "SCAN_ALL_BELOW", 0)  # the approximate path: NPROBE of 1024 lists
    assert all(index.search(v, 1)[1][0] == i for i, v in enumerate(vecs[:50]))  # a stored vector's own list is probed


def test_a_published_index_is_checked_by_content_not_by_its_label(tmp_path):
    import sqlite3

    home = tmp_path / "home"
    lib = open_lib(home)
    lib.ingest([notes(tmp_path / "a", 6)], "a")
    lib.close()
    label = json.loads((home / "vectors.json").read_text())["generation"]
    raw = sqlite3.connect(home / "library.sqlite3")  # behind the store's back: the generation does not move
    gone = raw.execute("SELECT rowid FROM chunks WHERE level = 2 ORDER BY rowid LIMIT 1").fetchone()[0]
    raw.execute("DELETE FROM chunks WHERE rowid = ?", (gone,))
    raw.commit()
    raw.close()
    again = open_lib(home)
    assert again.store.generation() == label  # the label still says current ...
    consistent(again)  # ... but the count and rowid sum differ, so it was reconciled
    assert gone not in again.vectors.ids().tolist() and again.vectors.repaired
    again.close()


def test_the_content_check_tells_apart_sets_with_the_same_count_and_sum(tmp_path):
    from localreason.store.db import rowid_digest

    assert rowid_digest(np.array([1, 4])) != rowid_digest(np.array([2, 3]))  # same count, same sum
    home = tmp_path / "home"
    lib = open_lib(home)
    lib.ingest([notes(tmp_path / "a", 4)], "a")
    rowids = lib.store.paragraph_rowids()
    assert rowid_digest(rowids) == lib.store.paragraph_digest()
    index = lib.vectors
    # An index holding {r0, r3} where SQLite holds {r1, r2} (same count and sum): must be reconciled.
    r0, r1, r2, r3 = rowids[:4].tolist()
    index.remove([r1, r2])
    vecs = lib.store.vectors_of([r1, r2])
    lib.store.db.execute("DELETE FROM chunks WHERE rowid IN (?, ?)", (r0, r3))
    index.generation = None
    assert index.sync(lib.store) and np.array_equal(index.ids(), np.array(sorted([r1, r2])))
    assert np.allclose(lib.store.vectors_of([r1])[r1], vecs[r1])
    lib.close()


def test_a_scope_far_from_the_query_is_still_searched_in_an_ivf_index(tmp_path, monkeypatch):
    index = VectorIndex(tmp_path / "vectors.faiss", 8, kind_setting="ivf")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((400, 8)).astype(np.float32) + np.array([5, 0, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    b = rng.standard_normal((400, 8)).astype(np.float32) - np.array([5, 0, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    vecs = np.vstack([a, b])
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index.fit_kind()
    index.index = index._build("ivf", vecs)
    index.index.add_with_ids(vecs, np.arange(800, dtype=np.int64))
    monkeypatch.setattr(vectors_mod, "SCAN_ALL_BELOW", 0)
    monkeypatch.setattr(vectors_mod, "NPROBE", 1)  # one list: near the query, far from the scope
    scope = np.arange(400, 800)  # cluster b, more than 20 x k ids, so the approximate path runs first
    scores, found = index.search(vecs[0], 5, ids=scope)
    assert len(found) == 5 and set(found.tolist()) <= set(scope.tolist())
    exact = np.argsort(-(vecs[400:] @ vecs[0]))[:5] + 400
    assert set(found.tolist()) == set(exact.tolist())


def test_the_lexical_budget_scores_the_rarest_words_and_changes_nothing_in_a_small_library(tmp_path, monkeypatch):
    from localreason.search import ranking

    root = tmp_path / "docs"
    root.mkdir()
    for i in range(30):
        extra = " zebra" if i < 3 else ""
        (root / f"n{i:02d}.md").write_text(f"# n {i}\n\ncommon words here{extra} item{i}.\n")
    lib = open_lib(tmp_path / "home")
    lib.ingest([root], "a")
    assert ranking._affordable(lib.index, ["common", "zebra"]) == ["common", "zebra"]  # 30 passages: all
    monkeypatch.setattr(ranking, "LEXICAL_POSTINGS", 10)
    assert ranking._affordable(lib.index, ["common", "zebra"]) == ["zebra"]  # 3 fit; "common" (30) does not
    assert ranking._affordable(lib.index, ["common", "words"]) == []  # the rarest is over twice the budget
    monkeypatch.setattr(ranking, "LEXICAL_POSTINGS", 20)
    assert ranking._affordable(lib.index, ["common", "words"]) == ["common"]  # within twice: the rarest is kept
    hits = lib.deep_search("common zebra", limit=3)
    assert {h.document_title for h in hits} == {"n 0", "n 1", "n 2"}
    lib.close()
