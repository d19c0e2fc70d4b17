"""End to end with the real default models: all-MiniLM-L6-v2 and SmolLM2-135M-Instruct (GGUF)."""

from __future__ import annotations

import json

import pytest

from localreason.config import load_settings
from localreason.errors import ModelError
from localreason.library import Library
from localreason.reason import NO_EVIDENCE_ANSWER

from test_cli import run

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def demo(tmp_path_factory, real_embedder):
    from localreason.demo import samples_dir

    home = tmp_path_factory.mktemp("reason-home")
    docs = tmp_path_factory.mktemp("disagree")
    (docs / "vendor.md").write_text("# Router manual (vendor)\n\n## Warranty\n\n"
                                    "The router warranty lasts two years from the date of purchase.\n")  # fmt: skip
    (docs / "shop.md").write_text("# Router offer (shop)\n\n## Warranty\n\n"
                                  "The router warranty lasts five years when bought in our shop.\n")  # fmt: skip
    lib = Library(settings=load_settings(home), embedder=real_embedder)
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    lib.ingest([docs], "router")
    yield lib
    lib.close()


def test_answers_with_a_verified_quotation(demo):
    a = demo.ask("Where did the Black Death originate?", max_tokens=1000)
    assert a.answer != NO_EVIDENCE_ANSWER and a.citations_dropped == 0
    quotes = [r.quotation for s in a.statements for r in s.references]
    assert any("Central Asia" in q for q in quotes)
    assert {c.document_title for c in a.citations} == {"Black Death"}
    for st in a.statements:
        for ref in st.references:
            assert demo.document_text(ref.document_id)[ref.start:ref.end] == ref.quotation
            assert f"[[{ref.chunk_id}]]" in a.answer
    t = a.timings
    assert t.prompt_tokens > 100 and t.completion_tokens >= 1  # the lead is prefilled; the model adds the rest
    assert t.rerank_tokens == 0, "the re-ordering is off by default"


def test_the_answer_leads_with_the_phrase_the_packaged_reader_points_at(demo):
    a = demo.ask("Where did the Black Death originate?", max_tokens=1000)
    first = a.statements[0]
    assert first.phrase is not None and "Central Asia" in first.phrase.text, a.answer
    assert a.answer.startswith(f"{first.phrase.text} [[{first.phrase.chunk_id}]]")
    text = demo.document_text(first.references[0].document_id)
    assert text[first.phrase.start:first.phrase.end] == first.phrase.text, "at the document's offsets"
    assert any(first.phrase_in(r) for r in first.references), "inside a verified quotation"
    why = demo.ask("How do I handle exceptions in Python?", max_tokens=1000)
    assert why.statements and why.statements[0].phrase is None, "a how-question keeps whole sentences"


def test_the_model_finds_the_question_likelier_after_the_sentence_that_answers(demo):
    from localreason.reason import likelihood

    gen = demo.generator
    q = "Where did the Black Death originate?"
    sentences = ["The Black Death is thought to have originated in the arid plains of Central Asia.",
                 "The Black Death was one of the most devastating pandemics in human history.",
                 "The router warranty lasts two years from the date of purchase."]  # fmt: skip
    first = likelihood.question_logprobs(gen, q, sentences)
    assert first.given[0] > first.given[1] > first.given[2]
    assert first.pmi()[0] > 0 > first.pmi()[2], "the answer makes the question likelier than nothing; the router less"
    from localreason.reason import reason

    a = reason(demo, q, generator=gen, max_tokens=1000, rerank="likelihood")  # its own scoring and a completion
    assert a.timings.rerank_tokens > 50 and any("Central Asia" in r.quotation for s in a.statements
                                                for r in s.references)  # fmt: skip
    again = likelihood.question_logprobs(gen, q, sentences)
    assert again.given == pytest.approx(first.given, abs=1e-3) and again.prior == pytest.approx(first.prior, abs=1e-3)
    # A context longer than a batch keeps its start token and its end (the cue before the question).
    [long], n, _ = gen.continuation_logprobs(["filler words " * 800 + sentences[0] + "\nQuestion:"], q)
    assert n >= 5 and -200 < long < 0


PEOPLE = ("# Alexander Fleming\n\nAlexander Fleming was a Scottish physician and microbiologist, born in Ayrshire in 1881. "
          "In 1928 he discovered penicillin at St Mary's Hospital in London, after noticing mould on a culture plate.\n\n"
          "# Marie Curie\n\nMarie Curie was a Polish and naturalised French physicist and chemist. She was the first "
          "woman to win a Nobel Prize, and she remains the only person to win Nobel Prizes in two scientific fields.\n")  # fmt: skip


@pytest.mark.parametrize("question, name", [("Who discovered penicillin?", "Alexander Fleming"),
                                            ("Who was the first woman to win a Nobel Prize?", "Marie Curie")])
def test_the_name_a_pronoun_leans_on_is_found_in_the_sentence_before(tmp_path, real_embedder, question, name):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "people.md").write_text(PEOPLE)
    with Library(settings=load_settings(tmp_path / "home"), embedder=real_embedder) as lib:
        lib.ingest([tmp_path / "docs"])
        a = lib.ask(question, max_tokens=1000)
    first = a.statements[0]
    if first.phrase is not None:  # shown only when the passage reader is sure of it too (reason/read.py)
        assert first.phrase.text == name and a.answer.startswith(f"{name} [["), a.answer
    assert first.references[0].quotation.startswith(f"{name} was"), "the sentence before, which names, is quoted first"
    assert len(first.references) == 2 and (" he " in first.references[1].quotation
                                           or "She was" in first.references[1].quotation), \
        "the sentence that says what follows is the same statement's second reference"
    assert a.meta["citationsDropped"] == 0


def test_disagreeing_documents_are_both_cited(demo):
    a = demo.ask("How long is the router warranty?", collection_id=demo.collection("router").id)
    assert a.citations_dropped == 0
    quotes = " ".join(r.quotation for s in a.statements for r in s.references)
    assert "two years" in quotes and "five years" in quotes
    assert len({c.document_id for c in a.citations}) == 2


def test_off_topic_question_gets_the_fixed_answer(demo):
    a = demo.ask("What is the best recipe for sourdough bread?")
    assert a.answer == NO_EVIDENCE_ANSWER and a.statements == ()


def test_missing_and_corrupt_gguf_name_the_file(isolated_home, tmp_path, real_embedder):
    lib = Library(settings=load_settings(isolated_home, generation_model=str(tmp_path / "gone.gguf")),
                  embedder=real_embedder)  # fmt: skip
    with pytest.raises(ModelError, match="gone.gguf"):
        lib.ask("anything at all?")
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 5000)  # right magic, garbage after it
    from localreason.generate import LlamaGenerator

    with pytest.raises(ModelError, match="broken.gguf"):
        LlamaGenerator(broken).llm
    from localreason.models import resolve_gguf

    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(resolve_gguf(load_settings(isolated_home)).read_bytes()[:3_000_000])
    with pytest.raises(ModelError, match="truncated.gguf"):
        LlamaGenerator(truncated).llm


def test_cli_ask_json_human_and_questions_file(capsys, tmp_path):
    from localreason.demo import samples_dir

    run(capsys, "ingest", str(samples_dir()), "-c", "samples", "--exclude", "LICENSES*", "-q")
    code, out, err = run(capsys, "ask", "What is the Python Software Foundation?", "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert set(data) == {"answer", "citations", "gaps", "meta", "statements"}
    assert data["citations"] and data["meta"]["citationsDropped"] == 0
    code, out, _ = run(capsys, "ask", "What is the Python Software Foundation?")
    assert "Answer" in out and "Sources" in out and "Meta:" in out
    prose = out.split("Sources")[0]
    assert "[[chk_" not in out and "[1]" in prose, "the prose shows the Sources' numbers; JSON keeps the tokens"
    assert "[[chk_" in data["answer"]
    questions = tmp_path / "q.txt"
    questions.write_text("What is the Python Software Foundation?\n\nHow do I bake sourdough bread?\n")
    code, out, _ = run(capsys, "ask", "--questions-file", str(questions))
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == 2 and lines[1]["data"]["answer"] == NO_EVIDENCE_ANSWER
    code, out, err = run(capsys, "ask", "   ")
    assert code == 2 and "blank" in err


def test_cancel_interrupts_the_model_mid_prompt_and_it_answers_afterwards(demo):
    """The abort callback stops llama.cpp inside a long prompt; the KV cache stays usable."""
    import threading

    from localreason.errors import Cancelled

    gen = demo.generator

    class InsideThePrompt(threading.Event):
        """Reads as set once llama.cpp, asking between graph nodes, has read part of the prompt into its cache (a
        timer instead loses on a fast machine, which reads the whole prompt first, and on a slow one)."""

        start: int | None = None

        def is_set(self) -> bool:
            if self.start is None:
                self.start = gen.llm.n_tokens  # the first ask: the prompt's reading has begun
            return gen.llm.n_tokens > self.start

    cancel = InsideThePrompt()
    long_prompt = [{"role": "user", "content": "The quick brown fox jumps over the lazy dog. " * 400}]
    with pytest.raises(Cancelled):
        gen.complete(long_prompt, 'root ::= "a" "b"', 4, cancel=cancel)
    assert gen.llm.n_tokens < gen.prompt_tokens(long_prompt), "stopped inside the prompt, not after it"
    assert gen.complete([{"role": "user", "content": "Say ab"}], 'root ::= "a" "b"', 4).text == "ab"
    a = demo.ask("Where did the Black Death originate?", max_tokens=1000)
    assert a.citations_dropped == 0 and a.statements
