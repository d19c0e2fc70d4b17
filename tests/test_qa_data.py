"""The question-answering data the benchmarks read (bench/data/qa.py, bench/data/qa_sets.py): read from a folder,
never downloaded, with one clear message when it is missing. On tests/data/qa, a few articles of each shared set
(its README gives their source and licence), so the suite passes without ../shared."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pytest

from bench.data import qa, qa_sets

FIXTURE = Path(__file__).parent / "data" / "qa"
ROOT = Path(__file__).resolve().parent.parent


def test_every_set_is_read_from_the_folder_given():
    for name in qa.FILES:
        articles = qa.articles(name, FIXTURE)
        assert articles and all(a["paragraphs"] and a["title"] for a in articles), name
        for a in articles:
            for p in a["paragraphs"]:
                for q in p["qas"]:
                    for g in q["answers"]:
                        assert p["context"][g["answer_start"]:].startswith(g["text"]), (name, q["id"])


def test_the_folder_comes_from_the_environment_when_no_argument_names_it(monkeypatch):
    monkeypatch.setenv(qa.ENV, str(FIXTURE))
    assert qa.folder() == FIXTURE
    assert qa.folder(FIXTURE / "..") == FIXTURE / ".."  # an argument wins


def test_a_missing_folder_says_which_and_how_to_name_another(tmp_path, monkeypatch):
    monkeypatch.delenv(qa.ENV, raising=False)
    with pytest.raises(qa.MissingData) as missing:
        qa.articles("squad-dev", tmp_path / "nowhere")
    message = missing.value.message
    assert str(tmp_path / "nowhere") in message and "--qa-data" in message and qa.ENV in message
    assert missing.value.code == message  # a SystemExit: the command prints it and ends with status 1


def test_a_missing_file_names_the_file_and_the_set(tmp_path):
    (tmp_path / "squad1.1-dev.json.gz").write_bytes((FIXTURE / "squad1.1-dev.json.gz").read_bytes())
    with pytest.raises(qa.MissingData, match=r"SQuAD 2\.0 dev .* is missing: expected the file .*squad2\.0-dev"):
        qa.squad_dev_pool(tmp_path)
    (tmp_path / "squad2.0-dev.json.gz").write_bytes(b"not gzip")
    with pytest.raises(qa.MissingData, match="could not be read as gzipped SQuAD JSON"):
        qa.squad_dev_pool(tmp_path)


def test_squad_2_unanswerable_questions_join_the_paragraphs_they_were_written_on():
    pool = qa.squad_dev_pool(FIXTURE)
    v2 = {p["context"]: {q["id"] for q in p["qas"] if q.get("is_impossible")}
          for a in qa.articles("squad2-dev", FIXTURE) for p in a["paragraphs"]}  # fmt: skip
    assert sum(map(len, v2.values())) > 0
    for a in pool:
        for p in a["paragraphs"]:
            impossible = {q["id"] for q in p["qas"] if q.get("is_impossible")}
            assert impossible == v2.get(p["context"], set())
            assert all(not q["answers"] for q in p["qas"] if q.get("is_impossible"))
    assert len(pool) == len(qa.articles("squad-dev", FIXTURE))  # 1.1 dev's articles, none added


def test_the_roles_are_written_once_and_held_out_sets_are_never_fit_on():
    assert qa.ROLES == {"squad-train": "train", "squad-dev": "fit", "squad2-dev": "fit", "new_wiki": "fit",
                        "reddit": "held out", "amazon": "held out"}  # fmt: skip
    assert set(qa_sets.HELD_OUT) == {"reddit", "amazon"} and set(qa_sets.FIT) == {"squad-dev", "new_wiki"}
    for name in qa_sets.HELD_OUT:
        domain = qa_sets.load(name, FIXTURE)
        assert {q.half for q in domain.questions} == {"eval"}


def test_a_fit_domain_is_split_by_article_and_asks_unanswerable_questions_about_paragraphs_it_holds():
    domain = qa_sets.load("squad-dev", FIXTURE)
    sides: dict[str, set] = {}
    for q in domain.questions:
        sides.setdefault(q.article, set()).add(q.half)
    assert all(len(h) == 1 for h in sides.values()), sides
    assert {next(iter(h)) for h in sides.values()} == {"fit", "eval"}
    unanswerable = [q for q in domain.questions if q.kind == "unanswerable"]
    assert unanswerable and all(not q.golds for q in unanswerable)
    collections = {c for c, _, _ in domain.documents}
    assert all(q.article[:80] in collections for q in unanswerable)


def test_the_split_is_the_same_whoever_asks_for_it():
    """bench.quality.retrieval splits its questions with qa.article_half and the same seed as qa_sets."""
    domain = qa_sets.load("squad-dev", FIXTURE)
    halves = qa.article_half([a["title"] for a in qa.articles("squad-dev", FIXTURE)], "squad-dev-halves")
    assert all(halves[q.article] == q.half for q in domain.questions)


def test_loading_needs_no_network_and_starts_no_program(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"the loader tried to reach out: {args[:2]}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    for name in qa_sets.DOMAINS:
        assert qa_sets.load(name, FIXTURE).questions
    assert qa.articles("squad-train", FIXTURE)


OLD_ARCHIVE = "big" + "bench"  # the evaluation archive that can no longer be fetched (spelt so: this file is no user)
DOWNLOADS = re.compile(rf"pip\W+download|urlretrieve|urlopen\(|requests\.get\(|hf_hub_download|snapshot_download|"
                       rf"load_dataset\(|{OLD_ARCHIVE}")  # fmt: skip


def test_no_code_downloads_data():
    """No module of the package or the benchmarks fetches data or weights (Debian documents fetched with apt-get
    by bench/data/debian_docs.py are the one download, and they are documents, not QA data)."""
    found = [f"{path.relative_to(ROOT)}:{i}: {line.strip()}"
             for folder in ("localreason", "bench") for path in sorted((ROOT / folder).rglob("*.py"))
             for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if DOWNLOADS.search(line)]
    assert found == []


def test_the_retrieval_bench_ranks_units_and_pools_manuals_by_their_questions():
    """bench.quality.retrieval: a manual question's gold is any of its answering passages; the manuals' rows pool
    each manual's by its number of questions."""
    from bench.quality.retrieval import doc_rank, pooled

    units = {1: "a", 2: "a", 3: "b", 4: "c"}
    assert doc_rank([1, 2, 3, 4], units, "b") == 1, "a unit counted once however many of its chunks come"
    assert doc_rank([1, 3, 4], units, frozenset({"c", "b"})) == 1 and doc_rank([1], units, frozenset({"z"})) is None
    row = lambda r1: {"R@1": r1, "R@5": r1, "R@10": r1, "MRR@10": r1}  # noqa: E731
    names = ("lexical (FTS5 BM25)", "dense (MiniLM, FAISS)", "localreason hybrid (dense weight 0.3)")
    ms = {"lexical": [1.0], "dense": [2.0], "hybrid": [3.0]}
    got = pooled([(3, {n: row(1.0) for n in names}, ms), (1, {n: row(0.0) for n in names}, ms)])
    assert got[names[0]]["R@1"] == 0.75 and got[names[2]]["p50 ms"] == 3.0
