"""Both readers' trainers build their examples from the SQuAD-format QA folder (bench/train/sources.py): SQuAD 1.1
train's answerable questions, with whole articles kept apart for validation and answers whose text occurs twice put
at the copy the question points to (or left out when it points to none), and SQuAD 2.0 dev's unanswerable questions
of qa_sets' fit half only, every sentence of their paragraph a negative. The folder is made here, small, so that
this runs without the shared data; a folder without the files stops the trainer with the loader's message."""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter

import pytest

from bench.data import qa, qa_sets
from bench.train import passage_reader, reader, sources

FILLER = "Fishermen sold cod and herring at the market every morning, and the boats came back before noon each day."
TWICE = f"The harbour office moved to Oslo in the spring. {FILLER} The new lighthouse was built near Oslo by the navy."
TIED = "The small pump cost 5 dollars in the shop. The brass valve cost 5 dollars at the market."


def _qa(question: str, answer: str, context: str, start: int | None = None) -> dict:
    at = context.index(answer) if start is None else start
    return {"id": question, "question": question, "answers": [{"text": answer, "answer_start": at}]}


def _article(title: str, paragraphs: list[tuple[str, list[dict]]]) -> dict:
    return {"title": title, "paragraphs": [{"context": c, "qas": q} for c, q in paragraphs]}


def _plain(title: str, n: int) -> dict:
    """An article of two paragraphs of four sentences, one question on each paragraph's third sentence."""
    paragraphs = []
    for p in range(2):
        context = (f"The {title} works of paragraph {p} opened in the valley. Its first owner was a farmer of the "
                   f"region. The chief engineer of the {title} plant {p} was Engineer{n}x{p} from Bergen. Later the "
                   f"plant closed for good after a flood.")  # fmt: skip
        paragraphs.append((context, [_qa(f"Who was the chief engineer of the {title} plant {p}?", f"Engineer{n}x{p}",
                                         context)]))  # fmt: skip
    return _article(title, paragraphs)


def _write(folder, name: str, articles: list[dict]) -> None:
    with gzip.open(folder / qa.FILES[name][0], "wt", encoding="utf-8") as f:
        json.dump({"version": "test", "data": articles}, f)


def write_qa_folder(folder):
    """Three SQuAD 1.1 train articles (one with an answer whose text occurs twice, its offset at the first copy,
    and one whose two copies the question cannot tell apart), and four dev articles, each with an unanswerable
    question in SQuAD 2.0 dev."""
    folder.mkdir(parents=True, exist_ok=True)
    harbour = _article("Harbour", [(TWICE, [_qa("Where did the navy build the new lighthouse?", "Oslo", TWICE)]),
                                   (TIED, [_qa("How much was the price?", "5 dollars", TIED)])])  # fmt: skip
    _write(folder, "squad-train", [harbour, _plain("Mill", 1), _plain("Quarry", 2)])
    dev = [_plain(f"Dev{i}", 10 + i) for i in range(4)]
    _write(folder, "squad-dev", dev)
    v2 = json.loads(json.dumps(dev))
    for i, a in enumerate(v2):
        a["paragraphs"][0]["qas"].append({"id": f"u{i}", "question": f"Which river flooded the Dev{i} plant?",
                                          "answers": [], "is_impossible": True})  # fmt: skip
    _write(folder, "squad2-dev", v2)
    return folder


@pytest.fixture
def qa_folder(tmp_path):
    return write_qa_folder(tmp_path / "qa")


def _halves(qa_folder) -> dict[str, set[str]]:
    domain = qa_sets.load("squad-dev", qa_folder)
    out: dict[str, set[str]] = {"fit": set(), "eval": set()}
    for q in domain.questions:
        out[q.half].add(q.article)
    return out


def _unanswerable_by_article(qa_folder) -> dict[str, str]:
    return {f"Which river flooded the {a['title']} plant?": a["title"] for a in qa.articles("squad2-dev", qa_folder)}


def test_the_sentence_readers_examples_come_from_squad_train_and_the_fit_halfs_unanswerable_questions(qa_folder,
                                                                                                     tmp_path, capsys):
    examples = reader.build_examples(qa_folder, tmp_path / "cache")
    by_q: dict[str, list[dict]] = {}
    for e in examples:
        by_q.setdefault(e["q"], []).append(e)
    answer = [e for e in by_q["Who was the chief engineer of the Mill plant 0?"] if e["y"] == 1]
    assert len(answer) == 1 and answer[0]["s"] == "The chief engineer of the Mill plant 0 was Engineer1x0 from Bergen."
    assert answer[0]["s"][slice(*answer[0]["a"])] == "Engineer1x0"
    assert {e["kind"] for e in by_q["Who was the chief engineer of the Mill plant 0?"] if e["y"] == 0} >= {"passage"}
    # the answer's text twice: the copy the question's words are near, not the first one the offset points at
    moved = [e for e in by_q["Where did the navy build the new lighthouse?"] if e["y"] == 1]
    assert [e["s"] for e in moved] == ["The new lighthouse was built near Oslo by the navy."]
    assert moved[0]["s"][slice(*moved[0]["a"])] == "Oslo"
    assert "How much was the price?" not in by_q, "two copies that the question cannot tell apart: left out"
    # SQuAD 2.0 dev's unanswerable questions: the fit half's only, every sentence of their paragraph a negative
    halves, asked = _halves(qa_folder), _unanswerable_by_article(qa_folder)
    unanswerable = {e["q"] for e in examples if e["kind"] == "unanswerable"}
    assert unanswerable and {asked[q] for q in unanswerable} == halves["fit"]
    for q in unanswerable:
        assert [e["y"] for e in by_q[q]] == [0, 0, 0, 0] and all(e["a"] is None for e in by_q[q])
        assert all(e["src"] == sources.UNANSWERABLE for e in by_q[q])
    _validation_is_whole_articles(examples, qa_folder)
    log = capsys.readouterr().out
    assert "answer text several times, moved to the copy nearest the question: 1" in log
    assert "answer text several times, no copy nearest the question: question left out: 1" in log


def _validation_is_whole_articles(examples: list[dict], qa_folder) -> None:
    """Validation questions are all the questions of the articles kept apart, and no others."""
    train = qa.articles("squad-train", qa_folder)
    apart = sources.kept_apart([a["title"] for a in train])
    assert len(apart) == 1
    questions = {q["question"] for a in train if a["title"] in apart for p in a["paragraphs"] for q in p["qas"]}
    questions -= {"How much was the price?"}
    got = {e["q"] for e in examples if e["split"] == "val" and e["src"] == sources.TRAIN}
    assert got == questions
    assert not got & {e["q"] for e in examples if e["split"] == "train"}
    unanswerable = Counter(e["split"] for e in examples if e["kind"] == "unanswerable")
    assert unanswerable["val"] and unanswerable["train"], "one of the fit half's articles kept apart as well"


def test_the_passage_readers_windows_come_from_the_same_questions(qa_folder, tmp_path):
    examples = passage_reader.build_examples(qa_folder, tmp_path / "cache")
    lighthouse = [e for e in examples if e["q"] == "Where did the navy build the new lighthouse?" and e["y"] == 1]
    assert len(lighthouse) == 1
    k, lo, hi = lighthouse[0]["a"]
    assert lighthouse[0]["s"][k][lo:hi] == "Oslo" and lighthouse[0]["s"][k].startswith("The new lighthouse")
    assert lighthouse[0]["l"][k] == 1
    assert not [e for e in examples if e["q"] == "How much was the price?"]
    halves, asked = _halves(qa_folder), _unanswerable_by_article(qa_folder)
    unanswerable = [e for e in examples if e["kind"] == "unanswerable"]
    assert {asked[e["q"]] for e in unanswerable} == halves["fit"]
    for e in unanswerable:
        assert e["y"] == 0 and e["a"] is None and e["l"] == [0] * len(e["s"]) and len(e["s"]) == 4
    assert {e["split"] for e in unanswerable} == {"train", "val"}
    assert {e["src"] for e in examples} == {sources.TRAIN, sources.UNANSWERABLE}


def test_both_trainers_name_the_sets_they_read_and_their_licences():
    for trainer in (reader, passage_reader):
        assert {k: v[1] for k, v in trainer.SOURCES.items()} == {sources.TRAIN: "CC BY-SA 4.0",
                                                                  sources.UNANSWERABLE: "CC BY-SA 4.0"}
        assert all("SQuAD" in what for what, _ in trainer.SOURCES.values())


def test_examples_are_built_anew_when_the_data_changes(qa_folder, tmp_path):
    parts = [reader.Builder]
    before = sources.examples_key(parts, qa_folder)
    assert sources.examples_key(parts, qa_folder) == before
    _write(qa_folder, "squad-train", [_plain("Mill", 1)])
    assert sources.examples_key(parts, qa_folder) != before


@pytest.mark.parametrize("trainer", [reader, passage_reader], ids=["reader", "passage_reader"])
def test_a_trainer_without_the_qa_files_stops_with_the_loaders_message(trainer, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setattr(sys, "argv", [trainer.__name__, "--qa-data", str(empty), "--data-dir", str(tmp_path / "d"),
                                      "--pilot"])  # fmt: skip
    with pytest.raises(qa.MissingData) as stopped:
        trainer.main()
    assert str(empty / "squad1.1-train.json.gz") in stopped.value.message and "--qa-data" in stopped.value.message


@pytest.mark.real_model
@pytest.mark.parametrize("trainer", [reader, passage_reader], ids=["reader", "passage_reader"])
def test_a_pilot_run_trains_on_the_folder_and_writes_nothing(trainer, qa_folder, tmp_path, monkeypatch, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", [trainer.__name__, "--qa-data", str(qa_folder), "--data-dir", str(tmp_path / "d"),
                                      "--out", str(out), "--pilot", "--pilot-steps", "2", "--batch", "8"])  # fmt: skip
    trainer.main()
    log = capsys.readouterr().out
    assert "validation (articles kept apart" in log and not out.exists()
    assert not (tmp_path / "d" / "reader" / "checkpoint").exists()
