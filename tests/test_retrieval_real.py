"""Functional retrieval with the real embedding model over the bundled samples, through the API and the CLI."""

from __future__ import annotations

import json

import pytest

from localreason.config import load_settings
from localreason.library import Library
from localreason.tokens import count_tokens

from test_cli import run

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def samples_lib(tmp_path_factory, real_embedder):
    from localreason.demo import samples_dir

    home = tmp_path_factory.mktemp("samples-home")
    lib = Library(settings=load_settings(home), embedder=real_embedder)
    lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    yield lib
    lib.close()


@pytest.mark.parametrize("question, title, words", [
    ("When did the Black Death reach Europe?", "Black Death", "Europe"),
    ("Which rocket launched the Apollo missions to the Moon?", "Apollo program", "Saturn V"),
    ("How much of the Amazon rainforest is in Brazil?", "Amazon rainforest", "Brazil"),
    ("What happens when an exception is not handled?", "Errors and Exceptions", "exception"),
])  # fmt: skip
def test_progressive_search_finds_the_passage(samples_lib, question, title, words):
    ev = samples_lib.progressive_search(question)
    assert ev.strong and not ev.scoped
    assert ev.hits[0].document_title == title
    assert any(words in h.content for h in ev.hits[:3])


def test_off_topic_question_is_weak_unscoped_and_kept_when_scoped(samples_lib):
    question = "What is a good recipe for sourdough bread?"
    assert not samples_lib.progressive_search(question).strong
    doc = next(d for d in samples_lib.documents() if d.title == "Black Death")
    scoped = samples_lib.progressive_search(question, document_id=doc.id)
    assert scoped.hits and scoped.scoped and {h.document_id for h in scoped.hits} == {doc.id}


def test_collection_scope_and_packet_budget(samples_lib):
    col = samples_lib.collection("samples")
    packet = samples_lib.evidence_packet("What did the Apollo program achieve?", collection_id=col.id, max_tokens=700)
    assert 0 < packet.tokens == count_tokens(packet.text) <= 700
    assert packet.chunks and packet.chunks[0].document_title == "Apollo program"
    assert packet.chunks_gathered >= len(packet.chunks)


def test_find_items_by_meaning(samples_lib):
    items = samples_lib.find_items("plague pandemic in medieval Europe")
    assert items[0].title == "Black Death" and items[0].type == "document"
    assert samples_lib.find_items("python faq")[0].title.startswith("General Python FAQ")


def test_cli_retrieval_commands(capsys, tmp_path):
    from localreason.demo import samples_dir

    code, out, err = run(capsys, "ingest", str(samples_dir()), "-c", "samples", "--exclude", "LICENSES*", "-q")
    assert code == 0, err
    code, out, _ = run(capsys, "search", "moon landing rocket", "--json", "--limit", "3")
    hits = json.loads(out)["data"]
    assert len(hits) == 3 and hits[0]["documentTitle"] == "Apollo program"
    chunk = hits[0]["chunkId"]
    code, out, _ = run(capsys, "read", chunk)
    assert code == 0 and "Apollo program" in out
    code, out, _ = run(capsys, "expand", chunk, "--direction", "up", "--json")
    assert json.loads(out)["data"]["items"][0]["levelName"] == "section"
    code, out, _ = run(capsys, "find", "python faq")
    assert "General Python FAQ" in out
    code, out, _ = run(capsys, "evidence", "how long is the Amazon river basin?", "--max-tokens", "500", "--json")
    data = json.loads(out)["data"]
    assert data["tokens"] <= 500 and data["chunksAdmitted"] >= 1 and data["packet"].startswith("<chunk id=")
    queries = tmp_path / "q.txt"
    queries.write_text("Who led the Apollo program?\n\n   \nWhat is a try statement?\n")
    code, out, _ = run(capsys, "search", "--queries-file", str(queries), "--limit", "2")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [len(x["hits"]) for x in lines] == [2, 2] and lines[1]["query"] == "What is a try statement?"
    code, out, _ = run(capsys, "search", "warranty", "--collection", "samples", "--json")
    assert code == 0 and json.loads(out)["data"]


@pytest.mark.parametrize("args, words", [
    (["search", "   "], "query is blank"),
    (["search", "x", "--limit", "-3"], "cannot be negative"),
    (["search", "x", "--limit", "lots"], "whole number"),
    (["search", "x", "--collection", ""], "collectionId is empty"),
    (["search", "x", "--document", "doc_nope"], "not a valid document id"),
    (["evidence", "x", "--max-tokens", "nan"], "finite"),
    (["expand", "chk_aaaaaaaaaaaaaaaa", "--direction", "sideways"], "Unknown direction"),
    (["read", "not-an-id"], "not a valid chunk id"),
])  # fmt: skip
def test_cli_retrieval_bad_input_exits_2(capsys, args, words):
    code, out, err = run(capsys, *args)
    assert code == 2 and words in err and out == ""
