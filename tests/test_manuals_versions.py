"""The manuals question set says which package version its questions were checked against, and a data folder
holding another version is named before any figure is read off it (apache2-doc 2.4.68 reworded eleven of the
sentences the Apache questions quote). Nothing is downloaded: the folders are made here."""

from __future__ import annotations

import sys

import pytest

from bench.data import manuals


def _folder(tmp_path, manual: str, version: str):
    package = manuals.MANUALS[manual][0]
    (tmp_path / "unpacked" / package).mkdir(parents=True)  # already unpacked: fetch downloads nothing
    (tmp_path / "debs").mkdir()
    (tmp_path / "debs" / f"{package}_{version.replace(':', '%3a')}_all.deb").write_bytes(b"")
    return tmp_path


def test_the_version_checked_against_is_no_problem(tmp_path):
    data = _folder(tmp_path, "apache", manuals.CHECKED_VERSION["apache"])
    assert manuals.version("apache", data) == manuals.CHECKED_VERSION["apache"]
    assert manuals.version_problem("apache", data) is None


def test_another_version_is_named_with_what_to_do(tmp_path):
    data = _folder(tmp_path, "apache", "1:2.4.99-1")
    assert manuals.version("apache", data) == "1:2.4.99-1"  # apt-get download writes an epoch's colon as %3a
    problem = manuals.version_problem("apache", data)
    assert problem and "1:2.4.99-1" in problem and manuals.CHECKED_VERSION["apache"] in problem
    assert "--check apache" in problem


def test_the_bench_stops_before_asking_when_a_version_differs(tmp_path, monkeypatch):
    from bench.quality import manuals as bench

    data = _folder(tmp_path, "apache", "2.4.99-1")
    monkeypatch.setattr(sys, "argv", ["manuals", "--data-dir", str(data), "--manuals", "apache", "--model", "obedient"])
    with pytest.raises(SystemExit) as stop:
        bench.main()
    assert "2.4.99-1" in str(stop.value) and "--other-versions" in str(stop.value)


def test_every_manual_has_a_checked_version():
    assert set(manuals.CHECKED_VERSION) == set(manuals.MANUALS)


def test_two_runs_records_are_compared_question_by_question(tmp_path):
    """bench.quality.changed: the gained and lost first statements (and the changed answers) between two runs'
    records, a question asked twice in the same words told apart by its turn."""
    import json

    from bench.quality.changed import changes, load

    def write(name: str, records: list[dict]) -> object:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        return load(path)

    base = {"manual": "m", "half": "fit", "kind": "answerable", "phrase": None, "gaps": []}
    asked = {"domain": "reddit", "q": "Why?", "kind": "answerable"}
    before = write("b.jsonl", [{**base, "id": "m-1", "held": [False], "quotes": ["a"]},
                               {**base, "id": "m-2", "held": [True], "quotes": ["b"]},
                               {**asked, "held": [False], "quotes": ["x"]},
                               {**asked, "held": [False], "quotes": ["y"]}])
    after = write("a.jsonl", [{**base, "id": "m-1", "held": [True], "quotes": ["a2"]},
                              {**base, "id": "m-2", "held": [True], "quotes": ["b"], "gaps": ["g"]},
                              {**asked, "held": [False], "quotes": ["x"]}, {**asked, "held": [True], "quotes": ["z"]}])
    counts, moved = changes(before, after)
    assert dict(counts["m, fit"]) == {"questions": 2, "first quotation changed": 1, "phrase changed": 0,
                                      "gaps changed": 1, "gained": 1, "budget gap before": 0, "budget gap after": 0}
    assert counts["reddit"]["questions"] == 2 and counts["reddit"]["gained"] == 1, "the second 'Why?' is its own"
    assert [(g, q, b, a, gained) for g, q, b, a, gained in moved] == [("m, fit", "m-1", "a", "a2", True),
                                                                      ("reddit", "Why?", "y", "z", True)]
