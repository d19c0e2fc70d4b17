"""Pilot tests: the real app, the real store and FAISS index, driven by keys; fast fake models."""

from __future__ import annotations

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
from tui_waiting import (ask, closed, first_turn_shown, loaded, on_screen, scoped, searched, settle, under_click, until,
                         viewer_shows, wait_for_screen, where)  # fmt: skip
from waiting import PATIENCE

SIZE = (100, 32)
REAL_MODEL_PATIENCE = 5 * PATIENCE
"""The real models answer in seconds on an idle machine, in minutes on a busy one: five times the usual patience."""


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
            await loaded(pilot)
            status = str(app.query_one("#status").render())
            assert "1 document, 1 passage." in status, status
    finally:
        lib.close()


async def test_first_screen_shows_the_library_tree_with_counts_and_scope(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
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
        await until(pilot, lambda: app.focused is app.query_one(AnswerView), "the answer to have focus")
        await pilot.press("W", "h", "o", "space", "1", "9", "question_mark")
        box = app.query_one("#ask")
        await until(pilot, lambda: box.value == "Who 19?", "the keys typed into the question box",
                    now=lambda: repr(box.value))  # fmt: skip
        assert app.focused is box
        assert not isinstance(app.screen, (SourceScreen, HelpScreen))


async def test_citation_opens_the_source_with_the_quotation_highlighted_and_tree_navigation(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        ref = app.turn.answer.statements[0].references[0]
        await pilot.press("1")
        await viewer_shows(pilot, "(cited passage)")
        screen = app.screen
        assert highlighted(screen.query_one("#source-text")) == [ref.quotation], "by its stored offsets"
        assert str(screen.query_one("#crumbs").render()).startswith("Black Death")
        cited = screen.current
        await pilot.press("n")
        await viewer_shows(pilot, "(next)")
        assert screen.current != cited
        await pilot.press("p")
        await viewer_shows(pilot, "(previous)")
        assert screen.current == cited
        await pilot.press("u")
        await viewer_shows(pilot, "(up)")
        assert where(app).startswith("section")
        assert highlighted(screen.query_one("#source-text")) == [ref.quotation], "also within the section"
        await pilot.press("d")
        await viewer_shows(pilot, "(down)")
        assert where(app).startswith("paragraph")
        await pilot.press("s")
        await viewer_shows(pilot, "(around)")
        await pilot.press("escape")
        await closed(pilot, SourceScreen)


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
        await first_turn_shown(pilot)
        rows = [item.query_one("Static") for item in app.query_one(AnswerView).children]
        texts = [str(r.render()) for r in rows]
        row = rows[texts.index("Sources") + 1]
        lead = next(t for t in texts if answer.statements[0].text in t and t != str(row.render()))
        assert lead.startswith(phrase.text + " [1]\n"), "the statement leads with its phrase, its sentence under it"
        assert ref.quotation in str(row.render())
        assert styled(row, "bold", "italic") == [phrase.text], "the phrase, bold inside the italic quotation"
        assert [t for r in rows if r is not row for t in styled(r, "bold", "italic")] == [], "only there"
        await pilot.press("1")
        await viewer_shows(pilot, "(cited passage)")
        screen = app.screen
        assert screen.phrase == (phrase.start, phrase.end)
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


class HeldLoad:
    """The library's document read, the first one after ``clear()`` held until ``release`` is set (never by
    itself: the test sets it on its way out, whatever happened); what deep_expand found, and which moves the
    viewers reached painting with, as (screen, move number)."""

    def __init__(self, lib, monkeypatch) -> None:
        self.release, self.calls, self.expanded, self.painted = threading.Event(), [], [], []
        document, expand, paint = lib.document, lib.deep_expand, SourceScreen._paint

        def held_document(doc_id):
            self.calls.append(doc_id)
            if len(self.calls) == 1:
                self.release.wait()
            return document(doc_id)

        def recorded_expand(*args, **kwargs):
            self.expanded.append(expand(*args, **kwargs))
            return self.expanded[-1]

        def recorded_paint(screen, chunks, doc, focus, how, request):
            paint(screen, chunks, doc, focus, how, request)
            self.painted.append((screen, request))

        monkeypatch.setattr(lib, "document", held_document)
        monkeypatch.setattr(lib, "deep_expand", recorded_expand)
        monkeypatch.setattr(SourceScreen, "_paint", recorded_paint)

    def clear(self) -> None:
        self.release.clear()
        self.calls.clear()
        self.expanded.clear()

    async def open_viewer(self, pilot) -> SourceScreen:
        """Open citation 1; the viewer's first load (move 1) begins and is held."""
        await pilot.press("1")
        await until(pilot, lambda: len(self.calls) == 1, "the viewer's first load to begin")
        await wait_for_screen(pilot, SourceScreen, "#where")
        return pilot.app.screen

    async def let_go(self, pilot, screen) -> None:
        """Release the held load and wait until it has reached the viewer's painting (which may draw nothing)."""
        self.release.set()
        await until(pilot, lambda: (screen, 1) in self.painted, "the held first load to reach the painting")


async def test_a_move_before_the_first_paint_works_and_a_slow_earlier_move_is_not_painted_last(tui_lib, monkeypatch):
    """The viewer's first load is held back: 'n' pressed meanwhile moves from the cited passage (it
    used to raise: nothing was in focus yet), and when the held load ends it does not paint over."""
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        held = HeldLoad(tui_lib, monkeypatch)
        try:
            screen = await held.open_viewer(pilot)
            cited = screen.cited
            await pilot.press("n")
            await viewer_shows(pilot, "(next)")  # a move before the first paint is not an error
            assert screen.current != cited
            await held.let_go(pilot, screen)
            assert len(held.calls) == 2, "the held first load did finish"
            assert screen.current != cited and "(next)" in where(app), \
                "the older load, finishing last, was not painted over the newer move"
            await pilot.press("q")
            await closed(pilot, SourceScreen)
            # a move that finds nothing ('d' on a paragraph) while the first load is held: the load still paints
            held.clear()
            screen = await held.open_viewer(pilot)
            await pilot.press("d")
            await until(pilot, lambda: held.expanded, "the move down to be looked up")
            assert not held.expanded[0].items, "a paragraph has nothing inside it"
            await held.let_go(pilot, screen)
            assert "(cited passage)" in where(app), "not left blank"
        finally:
            held.release.set()


async def test_enter_on_a_source_row_and_mouse_click_open_the_viewer(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        await pilot.press("enter")
        await viewer_shows(pilot, "(cited passage)")
        await pilot.press("q")
        await closed(pilot, SourceScreen)
        source_row = list(app.query(RefItem))[-1]
        source_row.scroll_visible(animate=False)
        await until(pilot, lambda: under_click(app, source_row), "the last source row to scroll into view")
        await pilot.click(source_row)
        await viewer_shows(pilot, "(cited passage)")


async def test_scoping_by_collection_limits_the_evidence_and_can_be_cleared(tui_lib):
    gen = tui_lib.generator
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        point_tree_at(app, "notes")
        await pilot.press("enter")
        await scoped(pilot, "collection")
        assert app.session.scope.label == "notes"
        assert "notes" in str(app.query_one("#scope").render())
        await ask(pilot, "How long is the warranty?")
        assert {c.document_title for c in app.turn.answer.citations} == {"Router"}
        assert "Black Death" not in gen.last[0][1]["content"] + gen.last_prefix
        await pilot.press("ctrl+x")
        await scoped(pilot, "all")
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
        await loaded(pilot)
        point_tree_at(app, "samples", "Black Death")
        await pilot.press("enter")
        await scoped(pilot, "document")
        assert app.session.scope.label == "Black Death"


async def test_search_as_you_type_drops_stale_results_and_opens_hits(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3")
        await until(pilot, lambda: app.focused is app.query_one("#search"), "the search box to have focus")
        await pilot.press(*"plague")
        await searched(pilot, "plague")
        results = app.query_one("#results")
        rows = [str(i.query_one("Static").render()) for i in results.children]
        assert any(r.startswith("Black Death") for r in rows)
        # a stale search (an older sequence number) is dropped even if it finishes last
        await app.show_results(app.search_seq - 1, "stale", [], [], None)
        assert "plague" in results.border_title
        await pilot.press("enter")  # focus the results
        await until(pilot, lambda: app.focused is results, "Enter to move to the results")
        passage = next(i for i, item in enumerate(results.children) if getattr(item, "hit", ("",))[0] == "passage")
        results.index = passage
        await pilot.press("enter")
        await viewer_shows(pilot, "(cited passage)")


async def test_search_debounce_runs_one_search_for_a_burst_of_keys(tui_lib):
    """Keys that come while the search box waits for the next one start no search; the key after which it waits
    in vain starts one, for the whole text. The wait is made long for the burst, so that every key lands inside it
    however slow the machine, and a millisecond for the last key, so that its search comes at once."""
    calls = []
    app = LocalReasonApp(tui_lib)
    real = app.session.search
    app.session.search = lambda q, **k: calls.append(q) or real(q, **k)
    async with app.run_test(size=SIZE) as pilot:
        app.search_debounce = PATIENCE
        await pilot.press("f3", *"amazon rive")
        box = app.query_one("#search")
        await until(pilot, lambda: box.value == "amazon rive", "the burst to be typed", now=lambda: repr(box.value))
        await settle(pilot)
        assert calls == [], "no search while the keys keep coming"
        app.search_debounce = 0.001
        await pilot.press("r")
        await searched(pilot, "amazon river")
        assert calls == ["amazon river"]


async def test_find_items_jumps_to_a_document_and_scopes_to_it(tui_lib):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f3", *"Apollo program")
        await searched(pilot, "Apollo program")
        results = app.query_one("#results")
        docs = [i for i, item in enumerate(results.children) if getattr(item, "hit", ("",))[0] == "document"]
        assert docs
        results.focus()
        await until(pilot, lambda: app.focused is results, "the results to have focus")
        results.index = docs[0]
        await pilot.press("enter")
        await scoped(pilot, "document")
        assert app.session.scope.label.startswith("Apollo")
        tree = app.query_one(LibraryTree)
        await until(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data
                    and tree.cursor_node.data[2].startswith("Apollo"), "the tree's cursor on the document")  # fmt: skip


async def test_add_a_folder_with_progress_and_a_per_file_summary_including_failures(tui_lib, tmp_path):
    new = tmp_path / "new"
    new.mkdir()
    (new / "inverter.md").write_text("# Inverter\n\nThe inverter warranty lasts ten years.\n")
    make_pdf(new / "broken.pdf", ["x"])
    (new / "broken.pdf").write_bytes((new / "broken.pdf").read_bytes()[:100])
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("f6")
        await wait_for_screen(pilot, AddScreen, "#add-collection")
        app.screen.query_one("#add-path").value = str(new)
        app.screen.query_one("#add-collection").value = "manuals"
        app.screen.query_one("#add-path").focus()
        await pilot.press("enter")
        await wait_for_screen(pilot, ReportScreen, "VerticalScroll Static")
        report = str(app.screen.query_one("VerticalScroll Static").render())
        assert "failed" in report and "broken.pdf" in report and "added" in report and "inverter.md" in report
        assert "1 failed" in str(app.screen.query_one("#report-title").render())
        await pilot.press("enter")
        await closed(pilot, ReportScreen)
        tree = app.query_one(LibraryTree)
        await until(pilot, lambda: any(str(n.label).startswith("manuals") for n in tree.root.children),
                    "the new collection in the tree")  # fmt: skip
        assert app.query_one("#progress").has_class("hidden")


async def test_escape_stops_an_ingest_after_the_current_file_and_keeps_what_was_done(tui_lib, tmp_path, monkeypatch):
    many = tmp_path / "many"
    many.mkdir()
    for i in range(300):
        (many / f"note{i:03}.md").write_text(f"# Note {i}\n\nThis is note number {i} about topic {i % 7}.\n")
    started, release, embed = threading.Event(), threading.Event(), tui_lib.embedder.embed

    def held_embed(texts):
        """The ingest's first embedding waits for the test: Escape comes while the first files are in hand."""
        if not started.is_set():
            started.set()
            release.wait()
        return embed(texts)

    monkeypatch.setattr(tui_lib.embedder, "embed", held_embed)
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        try:
            app.library_work.add_chosen((str(many), "many"))
            await until(pilot, started.is_set, "the ingest to embed its first files")
            await pilot.press("escape")
            await until(pilot, app.library_work.cancel.is_set, "Escape to ask the ingest to stop")
        finally:
            release.set()
        await wait_for_screen(pilot, ReportScreen, "#report-title")
        assert "cancelled" in str(app.screen.query_one("#report-title").render())
        kept = len(tui_lib.documents("many"))
        assert kept < 300, "stopped before the end"
        assert tui_lib.collection("many").document_count == kept, "the library stays consistent"
        await pilot.press("enter")
        await closed(pilot, ReportScreen)
        await pilot.press("f5")  # re-sync picks up the rest
        await wait_for_screen(pilot, ReportScreen, "#report-title")
        assert len(tui_lib.documents("many")) == 300


async def test_add_refuses_a_missing_path_inside_the_dialog(tui_lib, tmp_path):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f6")
        await wait_for_screen(pilot, AddScreen, "#add-problem")
        app.screen.query_one("#add-path").value = str(tmp_path / "nope")
        await pilot.press("enter")
        problem = app.screen.query_one("#add-problem")
        await until(pilot, lambda: "does not exist" in str(problem.render()), "the dialog to name the problem",
                    now=lambda: on_screen(app))  # fmt: skip
        assert isinstance(app.screen, AddScreen)
        await pilot.press("escape")
        await closed(pilot, AddScreen)


async def test_remove_a_document_after_confirming_and_a_resync_keeps_it_out(tui_lib):
    app, said = LocalReasonApp(tui_lib), []
    notify = app.notify
    app.notify = lambda message, **kwargs: said.append(message) or notify(message, **kwargs)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        point_tree_at(app, "notes", "Router")
        await pilot.press("delete")
        await wait_for_screen(pilot, ConfirmScreen)
        await pilot.press("y")
        await until(pilot, lambda: tui_lib.documents("notes") == [], "the document to be removed")
        await until(pilot, lambda: any(m.startswith("Removed") for m in said), "the removal to be told")
        assert "left out from now on" in next(m for m in said if m.startswith("Removed"))
        await settle(pilot)
        await pilot.press("f5")
        await wait_for_screen(pilot, ReportScreen)
        assert tui_lib.documents("notes") == [], "its folder leaves it out: it does not come back"


async def test_escape_cancels_a_running_question_and_stages_are_shown(tui_lib):
    gen = WaitsForCancel(hold=PATIENCE)  # writes until cancelled, like a long generation; not cancelled, it answers
    tui_lib._generator = gen  # (after PATIENCE, and the status then says "Answered": the test fails)
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        app.query_one("#ask").value = "Where did the Black Death originate?"
        await pilot.press("enter")
        await until(pilot, lambda: app.stages_seen, "the question to start")
        assert app.stages_seen[0] == "searching", "progress is set before the worker starts"
        await until(pilot, gen.started.is_set, "the model to start writing")
        await until(pilot, lambda: "writing" in app.stages_seen, "the writing stage", now=lambda: app.stages_seen)
        assert app.stages_seen == ["searching", "searching", "reading", "writing"]
        status = app.query_one("#status")
        await until(pilot, lambda: "Writing the answer" in str(status.render()), "the status to say it writes",
                    now=lambda: status.render())  # fmt: skip
        assert "Esc cancels" in str(status.render())
        asked = len(app.session.history)
        await pilot.press("escape")
        await until(pilot, lambda: len(app.session.history) > asked and app.busy is None, "the question to end")
        await settle(pilot)
        assert gen.cancelled.is_set(), "the model saw the cancel"
        assert "Cancelled after" in str(status.render())
        assert app.busy is None and app.turn is None
        tui_lib._generator = FakeGenerator()
        await ask(pilot, "Where did the Black Death originate?")
        assert app.turn is not None and app.turn.answer.statements, "the app carries on after a cancel"


async def test_errors_appear_in_a_modal_and_the_app_carries_on(tui_lib):
    tui_lib._generator = FakeGenerator(error=ModelError("Could not load the GGUF model /x.gguf: bad magic",
                                                        hint="Replace the file."))  # fmt: skip
    app = LocalReasonApp(tui_lib)
    said = []
    notify = app.notify
    app.notify = lambda message, **kwargs: said.append(message) or notify(message, **kwargs)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        await wait_for_screen(pilot, ErrorScreen, "#error-hint")
        assert "bad magic" in str(app.screen.query_one("#error-message").render())
        assert "Replace the file." in str(app.screen.query_one("#error-hint").render())
        await pilot.press("escape")
        await closed(pilot, ErrorScreen)
        tui_lib._generator = FakeGenerator(error=RuntimeError("boom"))
        await ask(pilot, "Where did the Black Death originate?")
        await wait_for_screen(pilot, ErrorScreen, "#error-message")
        assert "RuntimeError: boom" in str(app.screen.query_one("#error-message").render())
        assert (tui_lib.home / "logs" / "tui.log").read_text().count("boom") >= 1
        await pilot.press("enter")
        await closed(pilot, ErrorScreen)
        app.query_one("#ask").value = "   "
        app.query_one("#ask").focus()
        await pilot.press("enter")
        await until(pilot, lambda: "Type a question first." in said, "the notice that the question is blank",
                    now=lambda: said)  # fmt: skip
        assert not isinstance(app.screen, ErrorScreen), "a blank question is a notice, not a failure"
        assert app.turn is None


async def test_an_unexpected_exception_in_a_worker_shows_the_error_dialog_and_the_app_goes_on(tui_lib, monkeypatch):
    app = LocalReasonApp(tui_lib)

    def exploding(*args, **kwargs):
        raise RuntimeError(f"{kwargs.get('what', 'search')} exploded")

    monkeypatch.setattr(app.session, "search", exploding)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("f3", *"plague")
        await wait_for_screen(pilot, ErrorScreen, "#error-hint")  # the search worker's exception reached the catch-all
        assert "RuntimeError: search exploded" in str(app.screen.query_one("#error-message").render())
        assert "tui.log" in str(app.screen.query_one("#error-hint").render())
        log = (tui_lib.home / "logs" / "tui.log").read_text()
        assert "Traceback" in log and "search exploded" in log
        await pilot.press("escape")
        await closed(pilot, ErrorScreen)
        assert app.is_running
        await pilot.press("f2")  # the app still answers keys
        await until(pilot, lambda: app.mode == "ask" and app.focused is app.query_one("#ask"), "the ask mode")
        # a screen's worker: the source viewer forwards its failure to the App
        await ask(pilot, "Where did the Black Death originate?")
        await pilot.press("1")
        await viewer_shows(pilot, "(cited passage)")
        monkeypatch.setattr(tui_lib, "deep_expand", lambda *a, **k: exploding(what="viewer"))
        await pilot.press("n")
        await wait_for_screen(pilot, ErrorScreen, "#error-hint")
        assert "RuntimeError: viewer exploded" in str(app.screen.query_one("#error-message").render())
        await pilot.press("escape")
        await wait_for_screen(pilot, SourceScreen)
        await pilot.press("q")
        await closed(pilot, SourceScreen)
        assert app.is_running


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
            await wait_for_screen(pilot, expected, "#where" if expected is SourceScreen else "#error-message")
            if expected is ErrorScreen:
                message = str(app.screen.query_one("#error-message").render())
                assert ("not a valid" in message or "No document" in message), message
            await pilot.press("escape")
            await closed(pilot, expected)
            await settle(pilot)


async def test_missing_model_file_names_the_fix(isolated_home, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALREASON_GENERATION_MODEL", str(tmp_path / "missing.gguf"))
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder())
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    app = LocalReasonApp(lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        await wait_for_screen(pilot, ErrorScreen, "#error-message")
        message = str(app.screen.query_one("#error-message").render())
        assert "missing.gguf" in message
    lib.close()


async def test_history_revisits_answers_and_export_writes_markdown(tui_lib, tmp_path):
    app = LocalReasonApp(tui_lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        await ask(pilot, "How long is the router warranty?")
        await pilot.press("f4")
        await wait_for_screen(pilot, HistoryScreen, "#history-list")
        history = app.screen.query_one("#history-list")
        await until(pilot, lambda: len(history.children) == 2, "both questions in the history",
                    now=lambda: f"{len(history.children)} rows")  # fmt: skip
        history.index = 1  # newest first: the Black Death question
        await pilot.press("enter")
        await closed(pilot, HistoryScreen)
        await until(pilot, lambda: app.turn.question == "Where did the Black Death originate?", "the older answer")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await wait_for_screen(pilot, ExportScreen, "#export-path")
        target = tmp_path / "out" / "answer.md"
        app.screen.query_one("#export-path").value = str(target)
        await pilot.press("enter")
        await closed(pilot, ExportScreen)
        await until(pilot, target.exists, f"the answer saved to {target}")
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
        await wait_for_screen(pilot, HelpScreen)
        await pilot.press("escape")
        await closed(pilot, HelpScreen)
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
    app = LocalReasonApp(tui_lib, max_tokens=5)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?")
        assert app.session.max_tokens == 5
        # a clear answer does not say the budget's cut: the budget shows where it admits nothing
        gaps = app.turn.answer.gaps
        assert any("budget (maxTokens) of 5 tokens is too small" in g for g in gaps), gaps


@pytest.mark.real_model
async def test_end_to_end_with_the_real_default_models(isolated_home, real_embedder, tmp_path):
    """The real embedding model and the real GGUF: ask, open the citation, see the quotation highlighted."""
    shutil.copytree(samples_dir(), tmp_path / "samples")
    lib = Library(settings=load_settings(isolated_home), embedder=real_embedder)
    lib.ingest([tmp_path / "samples"], "samples", exclude=["LICENSES*"])
    app = LocalReasonApp(lib)
    async with app.run_test(size=SIZE) as pilot:
        await ask(pilot, "Where did the Black Death originate?", patience=REAL_MODEL_PATIENCE)
        assert app.turn is not None, on_screen(app)
        answer = app.turn.answer
        assert answer.citations_dropped == 0
        quotes = [r.quotation for s in answer.statements for r in s.references]
        assert any("Central Asia" in q for q in quotes)
        await pilot.press("1")
        await viewer_shows(pilot, "(cited passage)")
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
        await viewer_shows(pilot, "(cited passage)")
        assert RECOGNIZED_WHERE in where(app)
        await pilot.press("n")
        await viewer_shows(pilot, "(next)")
        assert RECOGNIZED_WHERE not in where(app), "a passage read from a text layer is not marked"
