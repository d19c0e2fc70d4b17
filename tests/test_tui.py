"""Pilot tests: the real app, the real store and FAISS index, driven by keys; fast fake models."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import shutil
import threading

import pytest

from localreason.config import load_settings
from localreason.demo import samples_dir
from localreason.errors import ModelError
from localreason.library import Library
from localreason.reason import NO_EVIDENCE_ANSWER
from localreason.reason.answer import AnswerPhrase
from localreason.session import Scope, Turn
from localreason.tui.app import LocalReasonApp
from localreason.tui.screens import (AddScreen, ConfirmScreen, ErrorScreen, ExportScreen, HelpScreen, HistoryScreen,
                                     ReportScreen, SourceScreen)  # fmt: skip
from localreason.tui.widgets import AnswerView, LibraryTree, RefItem

from fakes import FakeEmbedder, FakeGenerator, WaitsForCancel
from files import make_pdf

SIZE = (100, 32)


@pytest.fixture
def tui_lib(isolated_home, tmp_path):
    """The bundled samples in collection 'samples', and one extra note in collection 'notes'."""
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator())
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "router.md").write_text("# Router\n\n## Warranty\n\nThe router warranty lasts two years from purchase.\n")
    lib.ingest([notes], "notes")
    yield lib
    lib.close()


async def settle(pilot, rounds: int = 3) -> None:
    """Let workers finish and their results reach the screen."""
    for _ in range(rounds):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def ask(pilot, question: str) -> None:
    pilot.app.query_one("#ask").value = question
    pilot.app.query_one("#ask").focus()
    await pilot.press("enter")
    await settle(pilot)


def texts(app, selector) -> list[str]:
    return [str(w.render()) for w in app.query(selector)]


def highlighted(widget) -> list[str]:
    """The stretches of a Static's content drawn in reverse video (the quotation highlight)."""
    content = widget.render()
    return [content.plain[s.start:s.end] for s in content.spans
            if getattr(s.style, "reverse", False) or "reverse" in str(s.style)]  # fmt: skip


def point_tree_at(app, *labels: str):
    """Focus the library tree with its cursor on the node reached by label prefixes, from the root."""
    tree = app.query_one(LibraryTree)
    node = tree.root
    for label in labels:
        node = next(n for n in node.children if str(n.label).startswith(label))
    tree.focus()
    tree.move_cursor(node)
    return node


def answer_rows(app) -> list[str]:
    view = app.query_one(AnswerView)
    return [str(item.query_one("Static").render()) for item in view.children]


async def test_a_library_of_one_document_is_counted_in_the_singular(isolated_home, tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "note.md").write_text("# Note\n\nThe boiler was serviced in March.\n")
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator())
    lib.ingest([tmp_path / "one"], "notes")
    try:
        app = LocalReasonApp(lib)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            status = str(app.query_one("#status").render())
            assert "1 document, 1 passage." in status, status
    finally:
        lib.close()


async def test_first_screen_shows_the_library_tree_with_counts_and_scope(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.query_one(LibraryTree)
        cols = {str(n.label).split()[0]: n for n in tree.root.children}
        assert set(cols) == {"samples", "notes"}
        titles = [str(c.label) for c in cols["samples"].children]
        assert any(t.startswith("Black Death") for t in titles) and len(titles) == 5
        assert "the whole library" in str(app.query_one("#scope").render())
        assert "6 documents" in str(app.query_one("#status").render())
        assert app.focused is app.query_one("#ask"), "the question box has focus on start"


async def test_ask_shows_statements_markers_sources_gaps_and_meta(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        rows = answer_rows(app)
        assert rows[0].startswith("Q Where did the Black Death originate?")
        turn = app.turn
        assert turn.answer is not None and turn.answer.statements
        first = turn.answer.statements[0]
        assert first.phrase is not None, "the packaged reader finds the answer phrase here"
        assert rows[1] == f"{first.phrase.text} [1]\n{first.text}", "the phrase and its marker, the sentence under it"
        assert "Sources" in rows
        source = rows[rows.index("Sources") + 1]
        assert source.startswith("[1] Black Death") and first.references[0].quotation in source
        assert "chunks gathered" in rows[-1] and "citations dropped" in rows[-1]
        assert isinstance(app.query_one(AnswerView).highlighted_child, RefItem), "a marker is selected"
        assert "Answered in" in str(app.query_one("#status").render())
        # typing while the answer has focus starts the next question, digits and spaces included
        app.query_one(AnswerView).focus()
        await pilot.pause()
        await pilot.press("W", "h", "o", "space", "1", "9", "question_mark")
        assert app.focused is app.query_one("#ask") and app.query_one("#ask").value == "Who 19?"
        assert not isinstance(app.screen, (SourceScreen, HelpScreen))


async def test_citation_opens_the_source_with_the_quotation_highlighted_and_tree_navigation(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        ref = app.turn.answer.statements[0].references[0]
        await pilot.press("1")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SourceScreen)
        assert highlighted(screen.query_one("#source-text")) == [ref.quotation], "by its stored offsets"
        assert str(screen.query_one("#crumbs").render()).startswith("Black Death")
        cited = screen.current
        await pilot.press("n")
        await settle(pilot)
        assert screen.current != cited and "(next)" in str(screen.query_one("#where").render())
        await pilot.press("p")
        await settle(pilot)
        assert screen.current == cited
        await pilot.press("u")
        await settle(pilot)
        assert str(screen.query_one("#where").render()).startswith("section")
        assert highlighted(screen.query_one("#source-text")) == [ref.quotation], "also within the section"
        await pilot.press("d")
        await settle(pilot)
        assert str(screen.query_one("#where").render()).startswith("paragraph")
        await pilot.press("s")
        await settle(pilot)
        assert "(around)" in str(screen.query_one("#where").render())
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, SourceScreen)


def with_a_phrase(answer, word: int = 2):
    """``answer`` with the ``word``-th word of its first statement's first quotation as the answer phrase."""
    first = answer.statements[0]
    ref = first.references[0]
    m = list(re.finditer(r"\w{3,}", ref.quotation))[word]
    phrase = AnswerPhrase(m.group(), ref.chunk_id, ref.start + m.start(), ref.start + m.end())
    return dataclasses.replace(answer, statements=(dataclasses.replace(first, phrase=phrase), *answer.statements[1:]))


def styled(widget, *attributes: str) -> list[str]:
    """The stretches of a Static's content drawn with all of ``attributes`` ("bold", "italic", "underline" ...)."""
    content = widget.render()
    return [content.plain[s.start:s.end] for s in content.spans
            if all(getattr(s.style, a, False) for a in attributes)]  # fmt: skip


async def test_the_answer_phrase_is_bold_in_its_source_row_and_marked_in_the_viewer(tui_lib):
    question = "How long does the router warranty last?"
    answer = with_a_phrase(tui_lib.ask(question))
    phrase, ref = answer.statements[0].phrase, answer.statements[0].references[0]
    app = LocalReasonApp(tui_lib, first_turn=Turn(question, Scope(), answer))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = [item.query_one("Static") for item in app.query_one(AnswerView).children]
        texts = [str(r.render()) for r in rows]
        row = rows[texts.index("Sources") + 1]
        lead = next(t for t in texts if answer.statements[0].text in t and t != str(row.render()))
        assert lead.startswith(phrase.text + " [1]\n"), "the statement leads with its phrase, its sentence under it"
        assert ref.quotation in str(row.render())
        assert styled(row, "bold", "italic") == [phrase.text], "the phrase, bold inside the italic quotation"
        assert [t for r in rows if r is not row for t in styled(r, "bold", "italic")] == [], "only there"
        await pilot.press("1")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SourceScreen) and screen.phrase == (phrase.start, phrase.end)
        text = screen.query_one("#source-text")
        assert highlighted(text) == [ref.quotation], "the quotation highlighted as before"
        assert styled(text, "bold", "underline") == [phrase.text], "the phrase marked more strongly within it"


async def test_the_sides_of_a_disagreement_are_marked_and_named_in_limitations(tui_lib, tmp_path):
    from test_disagree import NEW, OLD, WARRANTY

    (tmp_path / "manuals").mkdir()
    (tmp_path / "manuals" / "manual-2023.md").write_text(OLD)
    (tmp_path / "manuals" / "manual-2025.md").write_text(NEW)
    tui_lib.ingest([tmp_path / "manuals"], "manuals")
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, WARRANTY)
        rows = answer_rows(app)
        marks = [r.split("\n")[0] for r in rows if r.startswith("Side ")]
        assert marks == ["Side A \u00b7 \u201cHeat pump manual (2025)\u201d says three years",
                         "Side B \u00b7 \u201cHeat pump manual (2023)\u201d says five years"], rows
        gaps = rows[rows.index("Limitations") + 1:]
        assert any("The sources disagree" in g for g in gaps), rows


async def test_a_move_before_the_first_paint_works_and_a_slow_earlier_move_is_not_painted_last(tui_lib, monkeypatch):
    """The viewer's first load is held back: 'n' pressed meanwhile moves from the cited passage (it
    used to raise: nothing was in focus yet), and when the held load ends it does not paint over."""
    app = LocalReasonApp(tui_lib)
    release, calls = threading.Event(), []
    document = tui_lib.document

    def held_document(doc_id):
        calls.append(doc_id)
        if len(calls) == 1:
            release.wait(10)
        return document(doc_id)

    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        monkeypatch.setattr(tui_lib, "document", held_document)
        await pilot.press("1")
        await wait_for_screen(pilot, SourceScreen, "#where")
        screen = app.screen
        cited = screen.cited
        await pilot.press("n")
        for _ in range(200):
            if "(next)" in str(screen.query_one("#where").render()):
                break
            await pilot.pause(0.05)
        assert not isinstance(app.screen, ErrorScreen), "a move before the first paint is not an error"
        assert screen.current != cited and "(next)" in str(screen.query_one("#where").render())
        release.set()
        await settle(pilot)
        assert len(calls) == 2, "the held first load did finish"
        assert screen.current != cited and "(next)" in str(screen.query_one("#where").render()), \
            "the older load, finishing last, was not painted over the newer move"
        await pilot.press("q")
        await settle(pilot)
        # a move that finds nothing ('d' on a paragraph) while the first load is held: the load still paints
        calls.clear()
        release.clear()
        await pilot.press("1")
        await wait_for_screen(pilot, SourceScreen, "#where")
        await pilot.press("d")
        await pilot.pause(0.3)
        release.set()
        await settle(pilot)
        assert "(cited passage)" in str(app.screen.query_one("#where").render()), "not left blank"


async def test_enter_on_a_source_row_and_mouse_click_open_the_viewer(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SourceScreen)
        await pilot.press("q")
        await settle(pilot)
        source_row = list(app.query(RefItem))[-1]
        source_row.scroll_visible(animate=False)
        await pilot.pause()
        await pilot.click(source_row)
        await settle(pilot)
        assert isinstance(app.screen, SourceScreen)


async def test_scoping_by_collection_limits_the_evidence_and_can_be_cleared(tui_lib):
    gen = tui_lib.generator
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        point_tree_at(app, "notes")
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.scope.kind == "collection" and app.session.scope.label == "notes"
        assert "notes" in str(app.query_one("#scope").render())
        await ask(pilot, "How long is the warranty?")
        assert {c.document_title for c in app.turn.answer.citations} == {"Router"}
        assert "Router" in gen.last[0][1]["content"] and "Black Death" not in gen.last[0][1]["content"]
        await pilot.press("ctrl+x")
        await pilot.pause()
        assert app.session.scope.kind == "all"
        assert "the whole library" in str(app.query_one("#scope").render())


async def test_the_no_evidence_answer_is_shown_as_an_answer(isolated_home):
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator())
    app = LocalReasonApp(lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        rows = answer_rows(app)
        assert rows[1] == NO_EVIDENCE_ANSWER and not isinstance(app.screen, ErrorScreen)
        assert "widen the scope" in rows[2] and "citations dropped" in rows[-1]
        assert lib.generator.calls == 0
    lib.close()


async def test_scoping_to_a_document(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        point_tree_at(app, "samples", "Black Death")
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.scope.kind == "document" and app.session.scope.label == "Black Death"


async def test_search_as_you_type_drops_stale_results_and_opens_hits(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        assert app.focused is app.query_one("#search")
        await pilot.press(*"plague")
        await asyncio.sleep(0.4)
        await settle(pilot)
        results = app.query_one("#results")
        assert "plague" in results.border_title
        rows = [str(i.query_one("Static").render()) for i in results.children]
        assert any(r.startswith("Black Death") for r in rows)
        # a stale search (an older sequence number) is dropped even if it finishes last
        await app.show_results(app.search_seq - 1, "stale", [], [], None)
        assert "plague" in results.border_title
        await pilot.press("enter")  # focus the results
        passage = next(i for i, item in enumerate(results.children) if getattr(item, "hit", ("",))[0] == "passage")
        results.index = passage
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SourceScreen)


async def test_search_debounce_runs_one_search_for_a_burst_of_keys(tui_lib):
    calls = []
    app = LocalReasonApp(tui_lib)
    real = app.session.search
    app.session.search = lambda q, **k: calls.append(q) or real(q, **k)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3", *"amazon river")
        await asyncio.sleep(0.4)
        await settle(pilot)
        assert calls == ["amazon river"]


async def test_find_items_jumps_to_a_document_and_scopes_to_it(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3", *"Apollo program")
        await asyncio.sleep(0.4)
        await settle(pilot)
        results = app.query_one("#results")
        docs = [i for i, item in enumerate(results.children) if getattr(item, "hit", ("",))[0] == "document"]
        assert docs
        results.focus()
        results.index = docs[0]
        await pilot.press("enter")
        await settle(pilot)
        assert app.session.scope.kind == "document" and app.session.scope.label.startswith("Apollo")
        tree = app.query_one(LibraryTree)
        assert tree.cursor_node.data[2].startswith("Apollo")


async def test_add_a_folder_with_progress_and_a_per_file_summary_including_failures(tui_lib, tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    (new / "inverter.md").write_text("# Inverter\n\nThe inverter warranty lasts ten years.\n")
    make_pdf(new / "broken.pdf", ["x"])
    (new / "broken.pdf").write_bytes((new / "broken.pdf").read_bytes()[:100])
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f6")
        await pilot.pause()
        assert isinstance(app.screen, AddScreen)
        app.screen.query_one("#add-path").value = str(new)
        app.screen.query_one("#add-collection").value = "manuals"
        app.screen.query_one("#add-path").focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ReportScreen)
        report = str(app.screen.query_one("VerticalScroll Static").render())
        assert "failed" in report and "broken.pdf" in report and "added" in report and "inverter.md" in report
        assert "1 failed" in str(app.screen.query_one("#report-title").render())
        await pilot.press("enter")
        await settle(pilot)
        tree = app.query_one(LibraryTree)
        assert any(str(n.label).startswith("manuals") for n in tree.root.children)
        assert app.query_one("#progress").has_class("hidden")


async def test_escape_stops_an_ingest_after_the_current_file_and_keeps_what_was_done(tui_lib, tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    for i in range(300):
        (many / f"note{i:03}.md").write_text(f"# Note {i}\n\nThis is note number {i} about topic {i % 7}.\n")
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.library_work.add_chosen((str(many), "many"))
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ReportScreen)
        assert "cancelled" in str(app.screen.query_one("#report-title").render())
        kept = len(tui_lib.documents("many"))
        assert kept < 300, "stopped before the end"
        assert tui_lib.collection("many").document_count == kept, "the library stays consistent"
        await pilot.press("enter")
        await pilot.press("f5")  # re-sync picks up the rest
        await settle(pilot)
        assert len(tui_lib.documents("many")) == 300


async def test_add_refuses_a_missing_path_inside_the_dialog(tui_lib, tmp_path):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f6")
        await pilot.pause()
        app.screen.query_one("#add-path").value = str(tmp_path / "nope")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, AddScreen)
        assert "does not exist" in str(app.screen.query_one("#add-problem").render())
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AddScreen)


async def test_remove_a_document_after_confirming_and_resync_restores_it(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        point_tree_at(app, "notes", "Router")
        await pilot.press("delete")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert [d.title for d in tui_lib.documents("notes")] == []
        await pilot.press("f5")
        await settle(pilot)
        assert isinstance(app.screen, ReportScreen)
        assert [d.title for d in tui_lib.documents("notes")] == ["Router"]


async def test_escape_cancels_a_running_question_and_stages_are_shown(tui_lib):
    gen = WaitsForCancel(hold=5.0)  # writes until cancelled, like a long generation
    tui_lib._generator = gen
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#ask").value = "Where did the Black Death originate?"
        await pilot.press("enter")
        assert app.stages_seen[0] == "searching", "progress is set before the worker starts"
        for _ in range(200):
            await pilot.pause(0.01)
            if gen.started.is_set():
                break
        await pilot.pause(0.15)
        assert app.stages_seen == ["searching", "searching", "reading", "writing"]
        assert "Writing the answer" in str(app.query_one("#status").render())
        assert "Esc cancels" in str(app.query_one("#status").render())
        await pilot.press("escape")
        await settle(pilot)
        assert "Cancelled after" in str(app.query_one("#status").render())
        assert app.busy is None and app.turn is None
        app.query_one("#ask").value = "Where did the Black Death originate?"
        tui_lib._generator = FakeGenerator()
        await pilot.press("enter")
        await settle(pilot)
        assert app.turn is not None and app.turn.answer.statements, "the app carries on after a cancel"


async def test_errors_appear_in_a_modal_and_the_app_carries_on(tui_lib):
    tui_lib._generator = FakeGenerator(error=ModelError("Could not load the GGUF model /x.gguf: bad magic",
                                                        hint="Replace the file."))  # fmt: skip
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        assert isinstance(app.screen, ErrorScreen)
        assert "bad magic" in str(app.screen.query_one("#error-message").render())
        assert "Replace the file." in str(app.screen.query_one("#error-hint").render())
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        tui_lib._generator = FakeGenerator(error=RuntimeError("boom"))
        await ask(pilot, "Where did the Black Death originate?")
        assert isinstance(app.screen, ErrorScreen)
        assert "RuntimeError: boom" in str(app.screen.query_one("#error-message").render())
        assert (tui_lib.home / "logs" / "tui.log").read_text().count("boom") >= 1
        await pilot.press("enter")
        await pilot.pause()
        await ask(pilot, "   ")
        assert not isinstance(app.screen, ErrorScreen), "a blank question is a notice, not a failure"
        assert app.turn is None


async def wait_for_screen(pilot, kind, ready: str = "", tries: int = 200) -> None:
    """Pause until a screen of ``kind`` is on top and, when ``ready`` names a selector, has composed a
    widget matching it (without waiting on workers, one of which failed). A pushed screen is the app's
    screen before its children are mounted: under load a query straight after the push found nothing."""
    for _ in range(tries):
        screen = pilot.app.screen
        if isinstance(screen, kind) and (not ready or screen.query(ready)):
            return
        await pilot.pause(0.05)


async def test_an_unexpected_exception_in_a_worker_shows_the_error_dialog_and_the_app_goes_on(tui_lib, monkeypatch):
    app = LocalReasonApp(tui_lib)

    def exploding(*args, **kwargs):
        raise RuntimeError(f"{kwargs.get('what', 'search')} exploded")

    monkeypatch.setattr(app.session, "search", exploding)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f3", *"plague")
        await wait_for_screen(pilot, ErrorScreen, "#error-hint")
        assert isinstance(app.screen, ErrorScreen), "the search worker's exception reached the catch-all"
        assert "RuntimeError: search exploded" in str(app.screen.query_one("#error-message").render())
        assert "tui.log" in str(app.screen.query_one("#error-hint").render())
        log = (tui_lib.home / "logs" / "tui.log").read_text()
        assert "Traceback" in log and "search exploded" in log
        await pilot.press("escape")
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, ErrorScreen)
        await pilot.press("f2")  # the app still answers keys
        await pilot.pause()
        assert app.mode == "ask" and app.focused is app.query_one("#ask")
        # a screen's worker: the source viewer forwards its failure to the App
        await ask(pilot, "Where did the Black Death originate?")
        await pilot.press("1")
        await settle(pilot)
        assert isinstance(app.screen, SourceScreen)
        monkeypatch.setattr(tui_lib, "deep_expand", lambda *a, **k: exploding(what="viewer"))
        await pilot.press("n")
        await wait_for_screen(pilot, ErrorScreen, "#error-hint")
        assert isinstance(app.screen, ErrorScreen)
        assert "RuntimeError: viewer exploded" in str(app.screen.query_one("#error-message").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SourceScreen)
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, SourceScreen)


async def test_ids_typed_in_search_open_their_item_and_bad_ids_explain_themselves(tui_lib):
    chunk = tui_lib.chunks(next(d.id for d in tui_lib.documents() if d.title == "Black Death"), level=2)[3]
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        for value, expected in [(chunk.id, SourceScreen), ("chk_nothinghere", ErrorScreen),
                                ("doc_aaaaaaaaaaaaaaaa", ErrorScreen)]:  # fmt: skip
            app.query_one("#search").value = value
            app.query_one("#search").focus()
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, expected), value
            if expected is ErrorScreen:
                message = str(app.screen.query_one("#error-message").render())
                assert ("not a valid" in message or "No document" in message), message
            await pilot.press("escape")
            await settle(pilot)


async def test_missing_model_file_names_the_fix(isolated_home, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALREASON_GENERATION_MODEL", str(tmp_path / "missing.gguf"))
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder())
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    app = LocalReasonApp(lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        assert isinstance(app.screen, ErrorScreen)
        message = str(app.screen.query_one("#error-message").render())
        assert "missing.gguf" in message
    lib.close()


async def test_history_revisits_answers_and_export_writes_markdown(tui_lib, tmp_path):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        await ask(pilot, "How long is the router warranty?")
        await pilot.press("f4")
        await pilot.pause()
        assert isinstance(app.screen, HistoryScreen)
        history = app.screen.query_one("#history-list")
        assert len(history.children) == 2
        history.index = 1  # newest first: the Black Death question
        await pilot.press("enter")
        await settle(pilot)
        assert app.turn.question == "Where did the Black Death originate?"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        target = tmp_path / "out" / "answer.md"
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await pilot.pause()
        text = target.read_text()
        assert text.startswith("# Where did the Black Death originate?")
        unmarked = text.replace("**", "")  # the answer phrase is bold inside its quotation
        for st in app.turn.answer.statements:
            assert st.references[0].quotation in unmarked and st.references[0].chunk_id in text
            assert st.phrase is None or f"**{st.phrase.text}**" in text
        assert "Black Death" in text and "citations dropped" in text


async def test_help_screen_and_footer_bindings(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        keys = {b.key for b in app.BINDINGS if b.show}
        assert {"f1", "f2", "f3", "f4", "f5", "f6", "ctrl+s", "ctrl+q"} <= keys


def test_tui_command_refuses_without_a_terminal_or_with_a_bad_budget(capsys):
    from localreason.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["tui"])
    assert exit_info.value.code == 2
    assert "needs a terminal" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["tui", "--max-tokens", "lots"])
    assert exit_info.value.code == 2
    assert "maxTokens" in capsys.readouterr().err


async def test_the_evidence_budget_reaches_every_question(tui_lib):
    app = LocalReasonApp(tui_lib, max_tokens=300)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        assert app.session.max_tokens == 300
        assert any("budget of 300 tokens" in g for g in app.turn.answer.gaps)


@pytest.mark.real_model
async def test_end_to_end_with_the_real_default_models(isolated_home, real_embedder, tmp_path):
    """The real embedding model and the real GGUF: ask, open the citation, see the quotation highlighted."""
    shutil.copytree(samples_dir(), tmp_path / "samples")
    lib = Library(settings=load_settings(isolated_home), embedder=real_embedder)
    lib.ingest([tmp_path / "samples"], "samples", exclude=["LICENSES*"])
    app = LocalReasonApp(lib)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#ask").value = "Where did the Black Death originate?"
        await pilot.press("enter")
        for _ in range(600):
            await pilot.pause(0.1)
            if app.busy is None:
                break
        await settle(pilot)
        answer = app.turn.answer
        assert answer.citations_dropped == 0
        quotes = [r.quotation for s in answer.statements for r in s.references]
        assert any("Central Asia" in q for q in quotes)
        await pilot.press("1")
        await settle(pilot)
        assert highlighted(app.screen.query_one("#source-text")) == [quotes[0]]
    lib.close()


def test_the_viewer_names_every_direction_there_is():
    """The source viewer's words for the expand directions cover exactly the directions the core defines."""
    from localreason.tui.screens.source import DIRECTION_LABELS, HOW
    from localreason.types import DIRECTIONS

    assert set(DIRECTION_LABELS) == set(DIRECTIONS)
    assert set(HOW) == set(DIRECTIONS) | {"cited"}


async def test_the_viewer_marks_a_passage_read_by_text_recognition(tui_lib):
    """The source viewer says when a passage's text was recognised from a scanned page (the store's mark; the real
    recogniser's marks are tested in tests/test_ocr.py)."""
    from localreason.tui.screens.source import RECOGNIZED_WHERE

    chunks = tui_lib.chunks(next(d.id for d in tui_lib.documents() if d.title == "Black Death"), level=2)
    with tui_lib.store.transaction():
        tui_lib.store.db.execute("UPDATE chunks SET recognized = 1 WHERE id = ?", (chunks[3].id,))
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        app.query_one("#search").value = chunks[3].id
        app.query_one("#search").focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SourceScreen)
        assert RECOGNIZED_WHERE in str(app.screen.query_one("#where").render())
        await pilot.press("n")
        await settle(pilot)
        where = str(app.screen.query_one("#where").render())
        assert "(next)" in where and RECOGNIZED_WHERE not in where, "a passage read from a text layer is not marked"
