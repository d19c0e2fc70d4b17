"""The headless core behind the TUI: locking, scope, history, export."""

from __future__ import annotations

import threading

import pytest

from localreason.errors import NotFoundError, ValidationError
from localreason.service import ReadWriteLock
from localreason.session import Session

from fakes import FakeGenerator
from waiting import PATIENCE, finished, wait_until


class SeenWaiting(ReadWriteLock):
    """A ReadWriteLock that notes, by thread name, who found it taken and had to wait."""

    def __init__(self) -> None:
        super().__init__()
        self.waited: set[str] = set()

    def _wait(self, blocked, cancel) -> None:
        if blocked():
            self.waited.add(threading.current_thread().name)
        super()._wait(blocked, cancel)


def test_writer_waits_for_readers_and_blocks_new_ones():
    """r1 reads until the test lets it go; the writer comes while it reads, r2 while the writer waits: the order
    is the lock's, not the machine's."""
    lock = SeenWaiting()
    events = []
    r1_in, r1_go = threading.Event(), threading.Event()

    def reader(name, go=None):
        with lock.read():
            events.append(f"{name} in")
            if go is not None:
                r1_in.set()
                go.wait(PATIENCE)
            events.append(f"{name} out")

    def writer():
        with lock.write():
            events.append("writer in")
            events.append("writer out")

    r1 = threading.Thread(target=reader, args=("r1", r1_go), name="r1")
    r1.start()
    assert r1_in.wait(PATIENCE), "the first reader never got in"
    w = threading.Thread(target=writer, name="writer")
    w.start()
    wait_until(lambda: "writer" in lock.waited, "the writer to wait for the reader")
    r2 = threading.Thread(target=reader, args=("r2",), name="r2")
    r2.start()
    wait_until(lambda: "r2" in lock.waited or "r2 in" in events, "the second reader to wait or get in")
    r1_go.set()
    for t in (r1, w, r2):
        finished(t, t.name)
    assert events == ["r1 in", "r1 out", "writer in", "writer out", "r2 in", "r2 out"]


def test_scope_history_and_export(library_of, tmp_path):
    lib = library_of({"a.md": "# Router\n\nThe router warranty lasts two years from the date of purchase.\n"})
    lib._generator = FakeGenerator()
    s = Session(lib)
    with pytest.raises(ValidationError):
        s.scope_to("chunk", "chk_aaaaaaaaaaaaaaaa")
    with pytest.raises(NotFoundError):
        s.scope_to("collection", "nope")
    assert s.scope_to("collection", "work").label == "work"
    turn = s.ask("How long is the router warranty?")
    assert turn.scope.kind == "collection" and s.history == [turn]
    with pytest.raises(ValidationError):
        s.ask("   ")
    assert len(s.history) == 1, "a blank question is not history"
    (tmp_path / "exports").mkdir()
    out = s.export(turn, tmp_path / "exports")  # an existing folder: a file name is made up
    text = out.read_text()
    assert out.suffix == ".md" and out.parent == tmp_path / "exports"
    assert "two years" in text and turn.answer.citations[0].chunk_id in text and "collection work" in text
    assert s.export(turn, tmp_path / "x.txt").name == "x.txt.md"


def test_markdown_export_is_question_heading_asked_line_then_the_answer_markdown():
    from datetime import datetime

    from localreason.reason import NO_EVIDENCE_ANSWER, Answer
    from localreason.render import answer_markdown
    from localreason.session import Scope, Turn, markdown

    answer = Answer("Who *is* it?", NO_EVIDENCE_ANSWER, (), ("A gap.",), 2, 0, 30, no_evidence=True)
    turn = Turn("Who *is* it?", Scope("collection", "col_x", "work"), answer, asked_at=datetime(2026, 1, 2, 3, 4))
    assert markdown(turn) == ("# Who \\*is\\* it?\n\n*Asked 2026-01-02 03:04 of collection work with localreason.*\n\n"
                              + answer_markdown(answer) + "\n")  # fmt: skip
    assert "**Answer**" in markdown(turn) and "**Limitations**" in markdown(turn) and "**Meta**" in markdown(turn)
