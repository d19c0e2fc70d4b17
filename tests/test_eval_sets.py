"""The evaluation sets of scripts/qa_sets.py keep their promises: a near-miss question's answer is in no
document of its library, an off-topic question's article is not in it, a fit domain's halves are disjoint."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import qa_sets  # noqa: E402


def _articles(n: int) -> list[dict]:
    out = []
    for a in range(n):
        paragraphs = []
        for p in range(3):
            fact = f"fact{a}x{p}"
            shared = "the harbour" if p == 0 else f"place{a}y{p}"  # "the harbour" occurs in many paragraphs
            paragraphs.append({"context": f"Article {a} paragraph {p} says {fact} near {shared}. More text here.",
                               "qas": [{"question": f"What does paragraph {p} of article {a} say?",
                                        "answers": [{"text": fact}]},
                                       {"question": f"Where is paragraph {p} of article {a}?",
                                        "answers": [{"text": shared}]}]})  # fmt: skip
        out.append({"title": f"Article {a}", "paragraphs": paragraphs})
    return out


def test_near_miss_answers_occur_nowhere_in_the_library_and_off_topic_articles_are_absent():
    domain = qa_sets._squad("squad-wiki", "test", "fit", _articles(30))
    library = " ".join(qa_sets.norm(text) for _, _, text in domain.documents)
    near = [q for q in domain.questions if q.kind == "near-miss"]
    off = [q for q in domain.questions if q.kind == "off-topic"]
    assert near and off
    for q in near:
        assert not any(f" {qa_sets.norm(g)} " in f" {library} " for g in q.golds), q
    titles = {c for c, _, _ in domain.documents}
    assert all(q.text.split(" of ")[-1].rstrip("?").replace("article", "Article") not in titles for q in off)
    answerable = [q for q in domain.questions if q.kind == "answerable"]
    assert all(any(f" {qa_sets.norm(g)} " in f" {library} " for g in q.golds) for q in answerable)
    fit = {q.text for q in domain.questions if q.half == "fit"}
    assert fit and fit.isdisjoint({q.text for q in domain.questions if q.half == "eval"})


def test_held_by_reads_gold_text_or_most_of_the_rationale():
    q = qa_sets.Question("Who created Mickey?", "answerable", ["Walt Disney"], "A man called Walt Disney made a mouse")
    assert q.held_by("A man called Walt Disney made a cartoon mouse.")
    assert not q.held_by("Mickey was a clean mouse.")
    r = qa_sets.Question("Did he do silly things?", "answerable", [], "people did not want Mickey to do silly things")
    assert r.held_by("They said that people did not want Mickey to do silly things.")
    assert not r.held_by("Mickey made some mistakes.")
