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
from types import SimpleNamespace

import pytest

from bench.data import manuals, qa, qa_sets
from bench.train import manual_source, passage_reader, reader, sources

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


def test_the_sources_name_the_sets_they_read_and_their_licences():
    ours = "Apache-2.0 (the project's own)"
    assert {k: v[1] for k, v in sources.SOURCES.items()} == {
        sources.TRAIN: "CC BY-SA 4.0", sources.UNANSWERABLE: "CC BY-SA 4.0", sources.MANUAL_QUESTIONS: ours,
        sources.MANUAL_STRUCTURE: ours, "sqlite": "public domain", "debian-reference": "GPL-2+",
        "debian-handbook": "GPL-2+ or CC BY-SA 3.0"}  # fmt: skip
    assert "apache" not in sources.SOURCES and "apache" not in sources.FIT_MANUALS
    # what reader.json names: without the manuals (--no-manuals), only SQuAD
    assert set(sources.used(False)) == {sources.TRAIN, sources.UNANSWERABLE}
    assert sources.used(True) == sources.SOURCES


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
@pytest.mark.parametrize("bf16", ["--no-bf16", "--bf16"])
@pytest.mark.parametrize("trainer", [reader, passage_reader], ids=["reader", "passage_reader"])
def test_a_pilot_run_trains_on_the_folder_and_writes_nothing(trainer, bf16, qa_folder, fake_manuals, tmp_path,
                                                             monkeypatch, capsys):  # fmt: skip
    """With bf16 matrix products or without (--bf16: where the CPU has them, as fast as 1.7x)."""
    pytest.importorskip("torch")
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", [trainer.__name__, "--qa-data", str(qa_folder), "--data-dir", str(tmp_path / "d"),
                                      "--manuals-dir", str(fake_manuals.dir), "--out", str(out), "--pilot",
                                      "--pilot-steps", "2", "--batch", "8", bf16])  # fmt: skip
    trainer.main()
    log = capsys.readouterr().out
    assert "validation (articles kept apart" in log and not out.exists()
    assert f"bf16 {'on' if bf16 == '--bf16' else 'off'}" in log
    assert f"{sources.MANUAL_STRUCTURE} " in log.split("questions by source:")[1].splitlines()[0]
    assert not (tmp_path / "d" / "reader" / "checkpoint").exists()


# ---------------------------------------------------------------- the manuals (bench/train/manual_source.py)

OPTIONS_PAGE = """<html><head><title>htpasswd - Manage user files</title></head><body>
<h1>htpasswd - Manage user files</h1>
<h2>Synopsis</h2>
<p><code>htpasswd [ -c ] [ -b ] passwordfile username password</code></p>
<h2>Options</h2>
<dl>
<dt><code>-b</code></dt><dd>Use batch mode; that is, get the password from the command line rather than prompting for
it.</dd>
<dt><code>-c</code></dt><dd>Create the password file when it does not exist yet.</dd>
</dl>
<h2>Making the backup file</h2>
<p>The backup file is made with the dump command every night at midnight. It is kept for a week.</p>
<h2>Storage</h2>
<p>The password file holds at most 255 users in this release. Longer user names are cut at 64 characters.</p>
</body></html>"""
EVAL_PAGE = """<html><head><title>ziptool</title></head><body><h1>ziptool</h1>
<dl><dt><code>-z</code></dt><dd>Use zip compression for every archive that the tool writes.</dd></dl>
<h2>Restoring the archive</h2><p>The archive is restored with the unzip command from the rescue disk.</p>
</body></html>"""
HELD_OUT_PAGE = """<html><head><title>server</title></head><body><h1>server</h1>
<dl><dt><code>-p</code></dt><dd>Use the port given for every listening socket of the server.</dd></dl>
<p>The server listens on port 8080 unless told otherwise.</p></body></html>"""


def _page_on(manual: str, half: str, stem: str) -> str:
    return next(f"{stem}{i}.html" for i in range(200) if manuals.page_half(manual, f"{stem}{i}.html") == half)


def _unanswerable_on(manual: str, half: str) -> str:
    ids = (f"{manual}-9{i:02d}" for i in range(100))
    return next(qid for qid in ids if manual_source.unanswerable_half(manual, qid) == half)


def _line(qid: str, page: str, kind: str, question: str, answers=(), evidence: str = "") -> str:
    return json.dumps({"id": qid, "page": page, "kind": kind, "question": question, "answers": list(answers),
                       "evidence": evidence})  # fmt: skip


@pytest.fixture
def fake_manuals(tmp_path, monkeypatch):
    """A tiny sqlite manual (a page on each half, questions on both, an unanswerable question on each half) and a
    tiny held-out apache manual, where bench.data.manuals finds them: nothing is downloaded. ``fetched`` records
    which manuals were asked for."""
    roots = {m: tmp_path / "manuals" / m for m in manuals.MANUALS}
    fit, other = _page_on("sqlite", "fit", "opts"), _page_on("sqlite", "eval", "zip")
    for root in roots.values():
        root.mkdir(parents=True)
    (roots["sqlite"] / fit).write_text(OPTIONS_PAGE)
    (roots["sqlite"] / other).write_text(EVAL_PAGE)
    (roots["apache"] / "server.html").write_text(HELD_OUT_PAGE)
    questions = tmp_path / "questions"
    questions.mkdir()
    (questions / "sqlite.jsonl").write_text("\n".join([
        _line("sqlite-001", fit, "howto", "How do I give the password on the command line?", ["-b"],
              "-b Use batch mode; that is, get the password from the command line rather than prompting for it."),
        _line("sqlite-002", other, "which", "Which option compresses archives?", ["-z"],
              "-z Use zip compression for every archive that the tool writes."),
        _line(_unanswerable_on("sqlite", "fit"), "", "unanswerable", "Can the password file be kept in LDAP?"),
        _line(_unanswerable_on("sqlite", "eval"), "", "unanswerable", "Can the password expire after a month?"),
    ]) + "\n")  # fmt: skip
    (questions / "apache.jsonl").write_text(_line("apache-001", "server.html", "fact", "Which port does the server "
                                                  "listen on?", ["8080"], "The server listens on port 8080 unless "
                                                  "told otherwise.") + "\n")  # fmt: skip
    fetched: list[str] = []

    def fetch(manual, data_dir):
        fetched.append(manual)
        return roots[manual]

    monkeypatch.setattr(manuals, "fetch", fetch)
    monkeypatch.setattr(manuals, "QUESTIONS", questions)
    monkeypatch.setattr(manual_source, "STRUCTURE_MIN", 20)  # every template question of the tiny page
    return SimpleNamespace(dir=tmp_path / "manuals", roots=roots, fit=fit, other=other, questions=questions,
                           fetched=fetched)  # fmt: skip


MANUAL_SOURCES = (sources.MANUAL_QUESTIONS, sources.MANUAL_STRUCTURE)


def test_the_manual_examples_come_from_the_fit_half_of_the_fit_manuals_only(qa_folder, fake_manuals, tmp_path):
    examples = reader.build_examples(qa_folder, tmp_path / "cache", fake_manuals.dir)
    manual = [e for e in examples if e["src"] in MANUAL_SOURCES]
    fit_text = manuals.squeeze(manuals.stored_text(fake_manuals.roots["sqlite"] / fake_manuals.fit))
    assert manual and all(manuals.squeeze(e["s"]) in fit_text for e in manual), "every sentence: the fit page's"
    asked = {e["q"] for e in manual}
    assert "How do I give the password on the command line?" in asked
    assert "Which option compresses archives?" not in asked, "its page is on the evaluation half"
    assert "Can the password file be kept in LDAP?" in asked and "Can the password expire after a month?" not in asked
    assert "Which port does the server listen on?" not in asked and "apache" not in fake_manuals.fetched
    assert not [e for e in manual if "zip" in e["s"] or "port" in e["s"]], "no sentence of the other pages"
    unanswerable = [e for e in manual if e["q"] == "Can the password file be kept in LDAP?"]
    assert unanswerable and all(e["y"] == 0 and e["kind"] == "unanswerable" for e in unanswerable)
    assert {e["split"] for e in manual} == {"train"}, "the trainers validate on SQuAD's articles kept apart"
    # and the passage reader's windows
    windows = [e for e in passage_reader.build_examples(qa_folder, tmp_path / "cache", fake_manuals.dir)
               if e["src"] in MANUAL_SOURCES]  # fmt: skip
    assert windows and all(manuals.squeeze(s) in fit_text for e in windows for s in e["s"])
    assert {e["q"] for e in windows} == asked


def _answer(examples: list[dict], question: str) -> dict:
    found = [e for e in examples if e["q"] == question and e["y"] == 1]
    assert len(found) == 1, question
    return found[0]


def test_the_manual_questions_point_at_the_answer_and_the_term_questions_at_the_term(qa_folder, fake_manuals,
                                                                                     tmp_path):  # fmt: skip
    examples = reader.build_examples(qa_folder, tmp_path / "cache", fake_manuals.dir)
    which = _answer(examples, "Which option uses batch mode?")
    assert which["src"] == sources.MANUAL_STRUCTURE and which["s"].startswith("-b\n")
    assert which["s"][slice(*which["a"])] == "-b", "the span is the term"
    what = _answer(examples, "What does the -b option do?")
    assert what["s"][slice(*what["a"])] == "Use batch mode", "the span is the description's first clause"
    assert _answer(examples, "Which option creates the password file when it does not exist yet?")["a"] == [0, 2]
    ours = [e for e in examples if e["q"] == "How do I give the password on the command line?"]
    positive = [e for e in ours if e["y"] == 1]
    assert len(positive) == 1 and positive[0]["s"][slice(*positive[0]["a"])] == "-b"
    assert positive[0]["src"] == sources.MANUAL_QUESTIONS
    negatives = [e for e in ours if e["y"] == 0]
    assert negatives[0]["kind"] == "synopsis" and negatives[0]["s"].startswith("htpasswd [ -c ]")
    assert not [e for e in negatives if "-b\n" in e["s"]]
    heading = _answer(examples, "How do I make the backup file?")
    assert heading["s"].startswith("The backup file is made") and heading["a"] is None
    assert "It is kept for a week." not in {e["s"] for e in examples if e["q"] == heading["q"]}, "its section: neither"
    windows = passage_reader.build_examples(qa_folder, tmp_path / "cache", fake_manuals.dir)
    window = _answer(windows, "Which option uses batch mode?")
    k, lo, hi = window["a"]
    assert window["s"][k][lo:hi] == "-b" and window["l"][k] == 1
    backup = _answer(windows, "How do I make the backup file?")
    assert backup["a"] is None and backup["l"][backup["s"].index("It is kept for a week.")] == -1


def test_a_page_gives_at_most_its_share_of_template_questions_terms_first(fake_manuals, monkeypatch):
    page = manual_source.read_page("sqlite", fake_manuals.fit, fake_manuals.roots["sqlite"] / fake_manuals.fit)
    retrieval = manual_source.Retrieval({page.name: page})
    made = manual_source.term_questions(page) + manual_source.heading_questions(page)
    assert len(made) == len(manual_source.structure_questions(page, retrieval)) == 6
    monkeypatch.setattr(manual_source, "STRUCTURE_MIN", 2)
    assert len(page.text) < manual_source.STRUCTURE_CHARS and manual_source.structure_cap(page) == 2
    assert [a.kind for a in manual_source.structure_questions(page, retrieval)] == ["term", "term"]


def test_the_manual_examples_are_built_anew_when_a_question_file_changes(qa_folder, fake_manuals, tmp_path):
    before = manual_source.manuals_key(fake_manuals.dir)
    assert manual_source.manuals_key(fake_manuals.dir) == before
    questions = fake_manuals.questions / "sqlite.jsonl"
    questions.write_text(questions.read_text().replace("on the command line?", "in the command?"))
    assert manual_source.manuals_key(fake_manuals.dir) != before
    examples = reader.build_examples(qa_folder, tmp_path / "cache", fake_manuals.dir)
    assert "How do I give the password in the command?" in {e["q"] for e in examples}


@pytest.mark.parametrize("trainer", [reader, passage_reader], ids=["reader", "passage_reader"])
def test_no_manuals_leaves_them_out(trainer, qa_folder, fake_manuals, tmp_path, monkeypatch):
    argv = [trainer.__name__, "--qa-data", str(qa_folder), "--data-dir", str(tmp_path / "d"), "--manuals-dir",
            str(fake_manuals.dir), "--pilot"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    chosen = trainer.training_data(trainer.arguments())[0]
    assert {e["src"] for e in chosen} >= {*MANUAL_SOURCES, sources.TRAIN}
    monkeypatch.setattr(sys, "argv", [*argv, "--no-manuals"])
    fake_manuals.fetched.clear()
    chosen = trainer.training_data(trainer.arguments())[0]
    assert {e["src"] for e in chosen} == {sources.TRAIN, sources.UNANSWERABLE} and not fake_manuals.fetched


def test_an_unanswerable_manual_question_is_on_the_half_the_manuals_benchmark_puts_it():
    from bench.quality.manuals import _unanswerable_half

    for manual in manuals.MANUALS:
        for q in manuals.questions(manual) if (manuals.QUESTIONS / f"{manual}.jsonl").is_file() else []:
            assert manual_source.unanswerable_half(manual, q.id) == _unanswerable_half(manual, q.id)


def test_manual_repeat_puts_each_manual_question_that_many_times_in_the_batches_and_no_other():
    examples = [{"qid": 1, "src": "squad-train"}, {"qid": 1, "src": "squad-train"},
                {"qid": 2, "src": sources.MANUAL_QUESTIONS}, {"qid": 2, "src": sources.MANUAL_QUESTIONS},
                {"qid": 3, "src": sources.MANUAL_STRUCTURE}]  # fmt: skip
    lengths = [10] * len(examples)
    import random

    once = reader.batches(examples, lengths, 4, random.Random(1))
    assert sorted(i for b in once for i in b) == [0, 1, 2, 3, 4]
    thrice = reader.batches(examples, lengths, 4, random.Random(1),
                            {sources.MANUAL_QUESTIONS: 3, sources.MANUAL_STRUCTURE: 3})  # fmt: skip
    seen = sorted(i for b in thrice for i in b)
    assert seen == sorted([0, 1] + [2, 3] * 3 + [4] * 3)
    assert all(b.count(0) == b.count(1) for b in thrice), "a question's candidates stay in one batch"


def test_every_example_carries_the_heading_reason_would_show_a_reader_that_reads_headings(qa_folder, fake_manuals,
                                                                                          tmp_path):  # fmt: skip
    examples = reader.build_examples(qa_folder, tmp_path / "cache", fake_manuals.dir)
    mill = [e for e in examples if e["q"] == "Who was the chief engineer of the Mill plant 0?"]
    assert {e["h"] for e in mill if e["kind"] != "other document"} == {"Mill"}, "a SQuAD article's title"
    assert {e["h"] for e in mill if e["kind"] == "other document"} <= {"Quarry", "Harbour"}, "the other article's"
    unanswerable = [e for e in examples if e["kind"] == "unanswerable" and e["src"] == sources.UNANSWERABLE]
    assert unanswerable and all(e["h"] == e["q"].split()[-2] for e in unanswerable), "its own article (Dev<i>)"
    which = _answer(examples, "Which option uses batch mode?")
    assert which["h"] == "htpasswd - Manage user files > Options", "the page's title and the section it is under"
    backup = _answer(examples, "How do I make the backup file?")
    assert backup["h"] == "htpasswd - Manage user files > Making the backup file"
    # the trainer shows it only with --headings, after the sentence before it
    assert reader.read_as(which, False)[3] == "" and reader.read_as(which, True)[3] == which["h"]


def _nli_folder(folder):
    """A tiny folder in the shapes bench/train/stance.py reads (SNLI lines, VitaminC zips, Perspectrum JSON)."""
    import json
    import zipfile

    folder.mkdir()
    for split in ("dev", "test"):
        (folder / f"snli_s1.{split}").write_text("A man sleeps .\nA dog runs .\nTwo kids play .\n")
        (folder / f"snli_s2.{split}").write_text("A man is awake .\nAn animal moves .\nKids are outside .\n")
        (folder / f"snli_labels.{split}").write_text("contradiction\nentailment\nneutral\n")
    for name in ("vitaminc_real", "vitaminc_synthetic"):
        rows = [{"evidence": f"Page {i} had {i} visitors .", "claim": f"Page {i} had {i + 1} visitors .",
                 "label": "REFUTES", "page": f"Page{i}", "case_id": str(i)} for i in range(40)]
        rows.append({"evidence": "Page 0 had 1 visitors .", "claim": "Page 0 had 1 visitors .", "label": "SUPPORTS",
                     "page": "Page0", "case_id": "0"})  # the other revision of case 0's sentence
        with zipfile.ZipFile(folder / f"{name}.zip", "w") as z:
            z.writestr(f"{name}/test.jsonl", "\n".join(json.dumps(r) for r in rows))
    (folder / "perspective_pool_v1.0.json").write_text(json.dumps(
        [{"pId": i, "text": f"Perspective {i}."} for i in range(8)]))
    (folder / "dataset_split_v1.0.json").write_text(json.dumps({"1": "train", "2": "test"}))
    claims = [{"cId": c, "text": f"Claim {c}.", "perspectives": [
        {"stance_label_3": "SUPPORT", "pids": [4 * (c - 1)]}, {"stance_label_3": "SUPPORT", "pids": [4 * (c - 1) + 1]},
        {"stance_label_3": "UNDERMINE", "pids": [4 * (c - 1) + 2, 4 * (c - 1) + 3]}]} for c in (1, 2)]
    (folder / "perspectrum_with_answers_v1.0.json").write_text(json.dumps(claims))
    return folder


def test_the_stance_readers_pairs_come_from_the_inference_sets_and_keep_validation_claims_out(qa_folder, tmp_path):
    from bench.train import stance as st

    examples = st.build_examples(_nli_folder(tmp_path / "nli"), qa_folder, same=20)
    by = lambda src: [e for e in examples if e["src"] == src]  # noqa: E731
    assert {("A man sleeps .", 2), ("A dog runs .", 0), ("Two kids play .", 1)} <= {(e["p"], e["y"]) for e in by("snli")}
    assert {e["y"] for e in by("vitaminc")} == {0, 2} and {e["split"] for e in by("vitaminc")} <= {"train", "val"}
    revised = by("vitaminc-revisions")
    assert {frozenset((e["p"], e["h"])) for e in revised} == {frozenset(("Page 0 had 1 visitors .",
                                                                         "Page 0 had 0 visitors ."))}
    assert all(e["y"] == 2 for e in revised), "a claim's two revisions contradict each other"
    persp = by("perspectrum")
    assert {e["split"] for e in persp if e["h"] == "Claim 2."} == {"val"}, "a test-split claim is validation only"
    assert {(e["p"], e["y"]) for e in persp if e["h"] == "Claim 1."} == {("Perspective 0.", 0), ("Perspective 1.", 0),
                                                                        ("Perspective 2.", 2), ("Perspective 3.", 2)}
    pairs = by("perspectrum-pairs")
    assert pairs and all("Claim" not in e["p"] and e["split"] == "train" for e in pairs)
    assert {e["y"] for e in pairs if {e["p"], e["h"]} == {"Perspective 0.", "Perspective 2."}} == {2}, "opposite sides"
    assert {e["y"] for e in pairs if {e["p"], e["h"]} == {"Perspective 0.", "Perspective 1."}} == {1}, "one side"
    assert not any(e["p"] in ("Perspective 4.", "Perspective 6.") for e in pairs), "no pair of a validation claim"
    same = by("squad-train")
    assert same and all(e["y"] == 1 and e["p"] != e["h"] for e in same)
    swapped = [e for e in examples if e["src"] == "snli" and e["p"] == "A man is awake ."]
    assert all(e["y"] == 2 for e in swapped), "a contradiction shown the other way round is still one"
    assert set(st.SOURCES) == {"snli", "vitaminc", "perspectrum", "squad-train"} and all(
        "CC BY-SA" in licence for _, licence in st.SOURCES.values())
