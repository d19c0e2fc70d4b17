"""Issue #53's opposing passages (bench/data/opposing.json): each case's two sides, the library the conflicts bench
builds of them, and the file's own consistency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.data import qa
from bench.quality import conflicts

FIXTURE = Path(__file__).parent / "data" / "qa"


def test_the_bench_builds_one_document_a_side_from_the_references(tmp_path, monkeypatch):
    text = qa.articles("squad-dev", FIXTURE)[0]["paragraphs"][0]["context"]
    quote = text.split(". ")[0]
    cases = [{"id": "op01", "kind": "written", "part": "fit", "question": "Did the 1973 oil crisis begin in 1973?",
              "a": {"domain": "squad-dev", "title": "1973_oil_crisis", "paragraph": 0, "says": "yes", "quote": quote},
              "b": {"title": "A dissenting account", "says": "no", "quote": "it did not begin until 1974",
                    "text": "Some historians hold that it did not begin until 1974."}},
             {"id": "op02", "kind": "natural", "part": "held out", "question": "Is the holder too big?",
              "a": {"domain": "amazon", "title": "Amazon_Reviews_2030", "paragraph": 0, "says": "no",
                    "quote": "not too big and not too small"},
              "b": {"domain": "amazon", "title": "Amazon_Reviews_2030", "paragraph": 0, "says": "yes",
                    "quote": "It fits any lipstick"}}]  # fmt: skip
    path = tmp_path / "opposing.json"
    path.write_text(json.dumps(cases))
    monkeypatch.setattr(conflicts, "OPPOSING", path)
    files, built = conflicts.opposing_set(FIXTURE, "fit")
    assert list(files) == ["op01-a.txt"] and [c.question for c in built] == [cases[0]["question"]]
    case = built[0]
    assert files["op01-a.txt"].startswith("1973 oil crisis (op01)\n") and text.strip() in files["op01-a.txt"]
    assert case.gold == quote and case.other == "it did not begin until 1974"
    assert case.twin[0] == "op01-b.txt" and case.twin[1].startswith("A dissenting account\n")
    _, natural = conflicts.opposing_set(FIXTURE, "held out")
    assert natural[0].twin[1].startswith("Amazon Reviews 2030 (op02, 0)\n"), "a real paragraph, titled apart"


def _cases() -> list[dict]:
    return json.loads(conflicts.OPPOSING.read_text(encoding="utf-8"))


def test_the_shipped_set_holds_forty_cases_or_more_each_with_two_opposite_sides():
    cases = _cases()
    assert len(cases) >= 40 and len({c["id"] for c in cases}) == len(cases)
    assert {c["part"] for c in cases} == {"fit", "held out"}
    for c in cases:
        assert c["question"].endswith("?") and {c["a"]["says"], c["b"]["says"]} == {"yes", "no"}, c["id"]
        if "text" in c["b"]:
            assert c["b"]["quote"] in c["b"]["text"], c["id"]


@pytest.mark.skipif(not qa.DEFAULT.is_dir(), reason="the shared QA folder is not beside this checkout")
def test_every_real_side_is_quoted_word_for_word_from_its_paragraph():
    files, cases = conflicts.opposing_set(qa.DEFAULT)
    for case in cases:
        assert case.gold in files[case.file], case.question
        assert case.other in case.twin[1], case.question


def test_the_alarm_count_reads_the_gaps_of_recorded_answers(tmp_path):
    from bench.quality.alarms import alarms, claims_disagreement

    said = {"domain": "reddit", "kind": "answerable", "q": "q",
            "gaps": ["\u201ca\u201d says x; \u201cb\u201d says y. The sources disagree, and the evidence does not settle "
                     "which is right."]}  # fmt: skip
    calm = {"manual": "sqlite", "kind": "answerable", "q": "q", "gaps": ["Only the closest statement is quoted."]}
    assert claims_disagreement(said) and not claims_disagreement(calm)
    assert alarms([said, calm, dict(calm)]) == {("reddit", "answerable"): (1, 1), ("sqlite", "answerable"): (0, 2)}
