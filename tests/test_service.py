"""The service every front end calls: other processes' writes, locks, cancellation, models, stages."""

from __future__ import annotations

import threading

import pytest

from localreason.config import load_settings
from localreason.errors import Cancelled, ModelError
from localreason.library import Library
from localreason.service import Service
from localreason.stages import STEPS, Stage

from fakes import FakeEmbedder, FakeGenerator, grammar_statements
from waiting import PATIENCE, finished, wait_until


def write_note(folder, name: str, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


@pytest.fixture
def service(isolated_home, fake_embedder):
    svc = Service(Library(settings=load_settings(isolated_home), embedder=fake_embedder, generator=FakeGenerator()))
    yield svc
    svc.close()


class LazyGenerator(FakeGenerator):
    """Loads its model on first use of ``context_size``, as LlamaGenerator does: ``load()`` may wait or raise."""

    def __init__(self, load) -> None:
        self.load = load
        self.loaded = False
        super().__init__()

    @property
    def context_size(self) -> int:
        if not self.loaded:
            self.load()
            self.loaded = True
        return self._context_size

    @context_size.setter
    def context_size(self, value: int) -> None:
        self._context_size = value


def other_program(home, embedder=None) -> Library:
    """Another process on the same folder: its own connection, its own copy of the vector index."""
    return Library(settings=load_settings(home), embedder=embedder or FakeEmbedder())


def test_a_document_added_by_another_program_is_found_by_the_next_search(service, isolated_home, tmp_path):
    service.ingest([write_note(tmp_path / "a", "boiler.md", "# Boiler\n\nBleed the radiators each autumn.\n")], "a")
    assert [h.document_title for h in service.deep_search("radiators", limit=3)] == ["Boiler"]
    other = other_program(isolated_home)
    other.ingest([write_note(tmp_path / "b", "bikes.md", "# Bikes\n\nOil the chain of the tandem monthly.\n")], "b")
    other.close()
    assert service.library.stale(), "the service's index has not seen the other program's write yet"
    hits = service.deep_search("tandem chain oil", limit=3)
    assert hits and hits[0].document_title == "Bikes", "found without restarting"
    assert not service.library.stale()
    assert {c.name for c in service.collections()} == {"a", "b"}


def test_a_removal_by_another_program_is_never_answered_from_the_stale_index(service, isolated_home, tmp_path):
    service.ingest([write_note(tmp_path / "a", "boiler.md", "# Boiler\n\nBleed the radiators each autumn.\n")], "a")
    service.deep_search("radiators")  # the index is loaded
    other = other_program(isolated_home)
    other.remove("a")
    other.close()
    assert service.deep_search("radiators") == []


def test_a_reindex_by_another_program_reloads_the_index(service, isolated_home, tmp_path):
    service.ingest([write_note(tmp_path / "a", "boiler.md", "# Boiler\n\nBleed the radiators each autumn.\n")], "a")
    before = service.library.vectors
    other = other_program(isolated_home)
    other.reindex()
    other.close()
    assert service.deep_search("radiators")[0].document_title == "Boiler"
    assert service.library.vectors is not before, "re-embedded elsewhere: read again from SQLite"


def test_catching_up_never_waits_for_a_long_answer(isolated_home, tmp_path):
    """Another program's write is caught up at the next read, even while an answer is being written."""
    writing = threading.Event()
    release = threading.Event()

    class SlowModel(FakeGenerator):
        def complete(self, *args, **kwargs):
            writing.set()
            release.wait(2 * PATIENCE)  # the answer goes on until the test lets it end
            return super().complete(*args, **kwargs)

    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=SlowModel()))
    svc.ingest([write_note(tmp_path / "a", "r.md", "# Router\n\nThe router warranty lasts two years.\n")], "a")
    asker = threading.Thread(target=svc.reason, args=("How long is the router warranty?",))
    asker.start()
    assert writing.wait(PATIENCE), "the answer never began"
    other = other_program(isolated_home)
    other.ingest([write_note(tmp_path / "b", "m.md", "# Boiler\n\nBleed the radiators each autumn.\n")], "b")
    other.close()
    found: list = []
    searcher = threading.Thread(target=lambda: found.extend(svc.deep_search("radiators autumn", limit=3)))
    searcher.start()
    try:  # the answer is held until the search is back: a search that waited for it would never come back
        finished(searcher, "the search (it waited for the answer being written)")
        assert asker.is_alive() and not release.is_set()
    finally:
        release.set()
    assert found and found[0].document_title == "Boiler"
    finished(asker, "the answer")
    svc.close()


class GatedEmbedder(FakeEmbedder):
    """Stops the ingest thread's ``stop_at``-th embedding call until ``release`` is set (others pass)."""

    def __init__(self, stop_at: int) -> None:
        super().__init__()
        self.stop_at, self.ingest_calls = stop_at, 0
        self.reached, self.release = threading.Event(), threading.Event()

    def embed(self, texts):
        if threading.current_thread().name == "ingest":
            self.ingest_calls += 1
            if self.ingest_calls == self.stop_at:
                self.reached.set()
                assert self.release.wait(2 * PATIENCE), "the test never let the ingest go on"
        return super().embed(texts)


def test_searches_and_answers_go_on_while_a_long_ingest_embeds(isolated_home, tmp_path, monkeypatch):
    """An ingest through the service (a watch catching up at start, the TUI adding a folder) holds this process's
    write lock only while it writes rows and vectors: while it reads and embeds the next files, a search answers
    at once and sees the documents already written, each whole."""
    monkeypatch.setattr("localreason.ingest.pipeline.EMBED_GROUP", 1)  # one document per embedding call
    folder = tmp_path / "notes"
    for name in ("alpha", "bravo", "charlie"):
        write_note(folder, f"{name}.md", f"# {name.title()}\n\nThe {name} gauge reads the boiler pressure.\n\n"
                   f"The {name} valve is checked weekly.\n")
    embedder = GatedEmbedder(stop_at=2)
    svc = Service(Library(settings=load_settings(isolated_home), embedder=embedder, generator=FakeGenerator()))
    svc.ingest([write_note(tmp_path / "first", "pump.md", "# Pump\n\nThe pump gauge is read daily.\n")], "work")
    embedder.ingest_calls = 0
    ingest = threading.Thread(target=svc.ingest, args=([folder], "work"), name="ingest")
    ingest.start()
    try:
        assert embedder.reached.wait(PATIENCE), "the ingest never reached its second file"
        seen: dict = {}
        searcher = threading.Thread(target=lambda: seen.update(hits=svc.deep_search("gauge boiler pressure", limit=10)))
        asker = threading.Thread(target=lambda: seen.update(answer=svc.reason("What does the gauge read?")))
        searcher.start()
        asker.start()
        # the ingest is held in its embedding until both are back: waiting for the whole ingest, they never are
        finished(searcher, "a search during the ingest (it waited for the whole ingest)")
        finished(asker, "a question during the ingest (it waited for the whole ingest)")
        titles = {h.document_title for h in seen["hits"]} - {"Pump"}
        assert len(titles) == 1, f"the one document of the three written so far: {titles}"
        assert seen["answer"].statements, "answered from what is written so far"
        assert svc.lock.writing is False, "no write lock held while the ingest embeds"
    finally:
        embedder.release.set()
        finished(ingest, "the ingest, once let go on")
    assert {h.document_title for h in svc.deep_search("gauge", limit=10)} == {"Pump", "Alpha", "Bravo", "Charlie"}
    svc.close()


def test_closing_the_service_waits_for_an_ingest_between_its_turns(isolated_home, tmp_path, monkeypatch):
    monkeypatch.setattr("localreason.ingest.pipeline.EMBED_GROUP", 1)
    folder = tmp_path / "notes"
    for name in ("alpha", "bravo"):
        write_note(folder, f"{name}.md", f"# {name.title()}\n\nThe {name} gauge reads the pressure.\n")
    embedder = GatedEmbedder(stop_at=2)
    svc = Service(Library(settings=load_settings(isolated_home), embedder=embedder, generator=FakeGenerator()))
    ingest = threading.Thread(target=svc.ingest, args=([folder], "work"), name="ingest")
    ingest.start()
    assert embedder.reached.wait(PATIENCE), "the ingest never reached its second file"
    closer = threading.Thread(target=svc.close)
    closer.start()
    closer.join(0.5)  # cannot flake: the ingest is held until the test lets it go, so a right close still waits
    assert closer.is_alive(), "closed under a running ingest"
    embedder.release.set()
    finished(ingest, "the ingest, once let go on")
    finished(closer, "closing the service after the ingest")
    with Library(settings=load_settings(isolated_home), embedder=FakeEmbedder()) as after:
        assert {d.title for d in after.documents("work")} == {"Alpha", "Bravo"}


def test_a_question_waiting_behind_a_writer_says_so_and_can_be_cancelled(service):
    cancel = threading.Event()
    seen, result = [], []
    with service.lock.write():  # an ingest of this process is running
        t = threading.Thread(target=lambda: result.append(_cancelled(
            lambda: service.reason("How long?", cancel=cancel, stage=lambda s, **i: seen.append(s)))))
        t.start()
        wait_until(lambda: seen, "the question to say what it does")
        assert seen == [Stage.WAITING] and t.is_alive()
        cancel.set()
        finished(t, "the cancelled question (while the write goes on)")  # the write lock is still held here
        assert result == [True], "cancelled while the write goes on"


def _cancelled(call) -> bool:
    try:
        call()
    except Cancelled:
        return True
    return False


def _refused(call) -> bool:
    from localreason.errors import ValidationError

    try:
        call()
    except ValidationError:
        return True
    return False


def test_searches_from_many_threads_beside_a_writer_all_succeed(service, tmp_path):
    service.ingest([write_note(tmp_path / "a", "n0.md", "# N0\n\nRadiators and boilers.\n")], "a")
    errors, counts = [], []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                counts.append(len(service.deep_search("boilers", limit=20)))
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for t in readers:
        t.start()
    wait_until(lambda: len(counts) + len(errors) >= 4, "the readers to be searching")  # before the writes begin
    for i in range(1, 6):
        service.ingest([write_note(tmp_path / "a", f"n{i}.md", f"# N{i}\n\nMore boilers, number {i}.\n")], "a")
    stop.set()
    for t in readers:
        finished(t, "a reader, told to stop")
    assert errors == [] and counts and max(counts) <= 6
    assert len(service.deep_search("boilers", limit=20)) == 6


def test_reason_reports_each_stage_in_order(service, tmp_path):
    service.ingest([write_note(tmp_path / "a", "r.md", "# Router\n\nThe router warranty lasts two years.\n")], "a")
    seen = []
    answer = service.reason("How long is the router warranty?", stage=lambda s, **info: seen.append(s))
    assert "two years" in answer.answer
    assert seen == [Stage.SEARCHING, Stage.READING, Stage.WRITING, Stage.VERIFYING]
    assert all(isinstance(s, Stage) and 1 <= s.step <= STEPS for s in seen)
    assert Stage.READING.describe(chunks=3, tokens=120) == "Reading 3 passages (120 tokens)"
    assert Stage.READING.describe() == "Reading", "a stage described without its details"


def test_reason_uses_the_answer_budget_setting_unless_given_one(isolated_home, tmp_path):
    (isolated_home).mkdir(parents=True)
    (isolated_home / "config.toml").write_text("answer_budget = 60\n")
    gen = FakeGenerator()
    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=gen))
    text = "# Router\n\n" + "\n\n".join(f"Router fact {i}: the warranty covers part {i} for {i} years." for i in range(40))
    svc.ingest([write_note(tmp_path / "a", "r.md", text)], "a")
    def passages_read() -> int:  # the passages the model may quote (the lead's in the reply's opening)
        return len({s["references"][0]["chunkId"] for s in grammar_statements(gen.last[1])})

    svc.reason("What does the router warranty cover?")
    small = passages_read()
    svc.reason("What does the router warranty cover?", max_tokens=2000)
    assert 0 < small < passages_read(), "60 tokens hold fewer passages than 2,000"
    svc.close()


def test_a_question_waiting_for_the_model_can_be_cancelled(service, tmp_path):
    service.ingest([write_note(tmp_path / "a", "r.md", "# Router\n\nThe router warranty lasts two years.\n")], "a")
    service.model_lock.acquire()  # another question holds the model
    cancel = threading.Event()
    seen = []
    result = []

    def ask() -> None:
        try:
            service.reason("How long is the warranty?", cancel=cancel, stage=lambda s, **i: seen.append(s))
        except Cancelled as exc:
            result.append(exc)

    t = threading.Thread(target=ask)
    t.start()
    try:
        wait_until(lambda: seen, "the question to say what it does")
        assert seen == [Stage.WAITING] and t.is_alive()
        cancel.set()
        finished(t, "the cancelled question (while the model is busy)")  # the model lock is still held here
    finally:
        service.model_lock.release()
    assert result, "cancelled while another question holds the model"


def test_warm_loads_the_models_in_the_background(isolated_home):
    release = threading.Event()

    class HeldEmbedder(FakeEmbedder):
        """Loads only when the test lets it: a ``warm`` that waited for the load would not return before."""

        loaded = False

        def embed(self, texts):
            release.wait(PATIENCE)
            self.loaded = True
            return super().embed(texts)

    svc = Service(Library(settings=load_settings(isolated_home), embedder=HeldEmbedder(), generator=FakeGenerator()))
    svc.warm()
    assert not release.is_set() and not svc.ready, "warm returns at once, the models still loading"
    release.set()
    finished(svc._warming, "loading the models")
    assert svc.ready and svc.warm_error is None
    svc.close()


def test_a_question_asked_while_the_models_load_says_so_and_can_be_cancelled(isolated_home, tmp_path):
    loading, release = threading.Event(), threading.Event()

    def held_load() -> None:  # the model loads until the test lets it finish
        loading.set()
        release.wait(PATIENCE)

    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(),
                          generator=LazyGenerator(held_load)))  # fmt: skip
    svc.ingest([write_note(tmp_path / "a", "r.md", "# Router\n\nThe router warranty lasts two years.\n")], "a")
    svc.warm()
    assert loading.wait(PATIENCE), "the background load never began"
    cancel = threading.Event()
    seen, result = [], []
    t = threading.Thread(target=lambda: result.append(_cancelled(
        lambda: svc.reason("How long?", cancel=cancel, stage=lambda s, **i: seen.append(s)))))
    t.start()
    try:
        wait_until(lambda: Stage.LOADING_GENERATOR in seen, "the question to say the model is loading")
        cancel.set()
        finished(t, "the cancelled question (while the model loads)")
        assert result == [True], "cancelled while the model was still loading"
    finally:
        release.set()
    finished(svc._warming, "loading the models")
    svc.close()


def test_a_model_that_fails_to_load_in_the_background_fails_the_first_request_with_its_message(isolated_home):
    def damaged():
        raise ModelError("The GGUF file is damaged.", hint="Download it again.")

    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(),
                          generator=LazyGenerator(damaged)))  # fmt: skip
    svc.warm()
    finished(svc._warming, "the failing load")
    assert isinstance(svc.warm_error, ModelError)
    with pytest.raises(ModelError, match="damaged"):
        svc.reason("anything at all?")
    svc.close()


def test_a_malformed_question_is_refused_at_once_even_while_the_model_is_busy(service, tmp_path):
    from localreason.errors import ValidationError

    service.model_lock.acquire()  # another question holds the model, until each refusal is back
    try:
        for bad in ({"document_id": "doc_nope"}, {"collection_id": ""}, {"limit": "many"}, {"max_tokens": "lots"}):
            raised: list = []
            asker = threading.Thread(target=lambda bad=bad: raised.append(_refused(
                lambda: service.reason("How long is the warranty?", **bad))))
            asker.start()
            finished(asker, f"the malformed question {bad} (it waited for the model)")
            assert raised == [True], bad
        with pytest.raises(ValidationError, match="blank"):
            service.reason("   ")
    finally:
        service.model_lock.release()


def test_a_model_that_loads_on_a_later_try_clears_the_earlier_failure(isolated_home, tmp_path):
    tries = []

    def busy_the_first_time():
        tries.append(1)
        if len(tries) == 1:
            raise ModelError("The GGUF file is busy.", hint="Try again.")

    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(),
                          generator=LazyGenerator(busy_the_first_time)))  # fmt: skip
    svc.ingest([write_note(tmp_path / "a", "r.md", "# Router\n\nThe router warranty lasts two years.\n")], "a")
    svc.warm()
    finished(svc._warming, "the failing load")
    assert isinstance(svc.warm_error, ModelError)
    assert "two years" in svc.reason("How long is the router warranty?").answer
    assert svc.warm_error is None and svc.ready
    svc.close()


def test_a_progress_callback_may_search_through_the_same_service(isolated_home, tmp_path):
    """Each file is told to the progress callback after the write's turn: a front end that searches from it (to
    show what arrived) does not wait on its own ingest."""
    svc = Service(Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator()))
    seen: list = []

    def progress(p) -> None:
        seen.append(len(svc.deep_search("gauge", limit=5)))

    folder = write_note(tmp_path / "notes", "a.md", "# A\n\nThe gauge reads five bar.\n")
    write_note(folder, "b.md", "# B\n\nThe gauge reads six bar.\n")
    worker = threading.Thread(target=svc.ingest, args=([folder], "work"), kwargs={"progress": progress}, daemon=True)
    worker.start()
    finished(worker, "the ingest (it waited on its own progress callback)")  # (left hanging, not closed)
    assert seen and seen[-1] == 2
    svc.close()


def test_a_cancelled_ingest_reports_every_file_it_wrote(isolated_home, tmp_path):
    """Stopped from its progress callback (the TUI's cancel), an ingest's report holds exactly the files written."""
    from localreason.errors import Interrupted

    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder())
    folder = tmp_path / "notes"
    for i in range(5):
        write_note(folder, f"n{i}.md", f"# Note {i}\n\nThe gauge {i} reads {i} bar.\n")

    def stop(p) -> None:
        raise KeyboardInterrupt

    with pytest.raises(Interrupted) as cancelled:
        lib.ingest([folder], "work", progress=stop)
    reported = {f.path for f in cancelled.value.report.files if f.status == "added"}
    assert reported and reported == {d.source_path for d in lib.documents("work")}
    lib.close()
