"""The model's re-ordering of the best-ranked sentences (reason/likelihood.py), with a scripted likelihood."""

from __future__ import annotations

import pytest

from fakes import FakeGenerator
from localreason.config import load_settings
from localreason.errors import ValidationError
from localreason.reason import NO_EVIDENCE_ANSWER, reason
from localreason.reason import likelihood as R
from localreason.reason.calibration import DEFAULT
from localreason.reason.candidates import Quote

MILL = """# The old mill

## History

The old mill stands by the river and its wheel still turns. The mill was built in 1851 by the
Hartley family after the great flood. The mill grinds wheat and barley for the village bakers.
Visitors can see the mill wheel turn on Sundays. The mill pond freezes in hard winters.
"""


class LikelyFake(FakeGenerator):
    """A generator that finds the question likeliest after a sentence containing ``favourite``."""

    def __init__(self, favourite: str = "", **kw) -> None:
        super().__init__(**kw)
        self.favourite = favourite
        self.scored: list[list[str]] = []

    def continuation_logprobs(self, contexts, continuation, cancel=None):
        self.scored.append(list(contexts))
        return [-5.0 if self.favourite and self.favourite in c else -100.0 for c in contexts], 5, 12 * len(contexts)


@pytest.fixture
def mill(library_of):
    return library_of({"mill.md": MILL}, "village")


def quotes_of(answer):
    return [r.quotation for s in answer.statements for r in s.references]


def quote(text: str, score: float, probability: float) -> Quote:
    return Quote("par_x", text, 0, score, probability)


def test_rerank_puts_the_likeliest_sentence_first_and_re_estimates_the_lead():
    qs = [quote("A", 3.0, 0.5), quote("B", 2.9, 0.4), quote("C", 1.0, 0.05), quote("D", 0.5, 0.03),
          quote("E", 0.1, 0.02)]  # fmt: skip
    fake = LikelyFake("Passage: C")
    done = R.rerank(fake, "q?", qs)
    assert [q.text for q in done.quotes] == ["C", "A", "B", "D", "E"], "the unread fifth keeps its place"
    assert len(fake.scored[0]) == DEFAULT.rerank_candidates + 1, "the best four and the question alone"
    probs = [q.probability for q in done.quotes]
    assert probs[0] > 0.9 and abs(sum(probs) - 1) < 1e-9
    assert done.tokens > 0
    same = R.rerank(LikelyFake(""), "q?", qs)  # no preference: the retrieval order stands
    assert [q.text for q in same.quotes] == ["A", "B", "C", "D", "E"]
    assert [q.probability for q in same.quotes] == pytest.approx([0.5, 0.4, 0.05, 0.03, 0.02])


def test_the_calibration_passed_to_reason_reaches_the_re_ordering(mill):
    from dataclasses import replace

    fake = LikelyFake("1851")
    reason(mill, "When was the mill built?", generator=fake, rerank="likelihood",
           calibration=replace(DEFAULT, rerank_candidates=2))  # fmt: skip
    assert len(fake.scored[0]) == 3, "the two best sentences and the question alone"


def test_rerank_leaves_a_single_quote_and_a_generator_without_likelihood_alone():
    one = [quote("A", 3.0, 1.0)]
    fake = LikelyFake("A")
    assert R.rerank(fake, "q?", one).quotes == one and fake.scored == []
    two = [quote("A", 3.0, 0.6), quote("B", 2.0, 0.4)]
    assert R.rerank(FakeGenerator(), "q?", two).quotes == two
    long = LikelyFake("B")
    assert R.rerank(long, "why " * (R.MAX_QUESTION_TOKENS + 1), two).quotes == two and long.scored == []


def test_the_models_choice_leads_the_answer_and_off_keeps_the_ranking(mill):
    q = "When was the mill built?"
    before = reason(mill, q, generator=LikelyFake(), rerank="off", lead_quotes=1)
    ranked_first = quotes_of(before)[0]
    other = "The mill grinds wheat and barley" if "1851" in ranked_first else "built in 1851"
    fake = LikelyFake(other)
    after = reason(mill, q, generator=fake, lead_quotes=1, rerank="likelihood")
    assert fake.scored, "the model read the best sentences"
    assert other in quotes_of(after)[0] and quotes_of(after)[0] != ranked_first
    assert after.timings.rerank_tokens > 0 and after.citations_dropped == 0
    off = LikelyFake(other)
    reason(mill, q, generator=off)
    assert off.scored == [], "off by default: the model reads nothing before it writes"
    mill._generator = on = LikelyFake(other)
    mill.settings = load_settings(mill.settings.home, answer_rerank="likelihood")
    assert other in quotes_of(mill.ask(q))[0] and on.scored, "the setting reaches ask"


def test_a_refused_question_costs_no_model_time(mill):
    fake = LikelyFake("mill")
    a = reason(mill, "What is the best recipe for sourdough bread?", generator=fake, rerank="likelihood")
    assert a.answer == NO_EVIDENCE_ANSWER and fake.scored == [] and fake.calls == 0


def test_rerank_setting_is_checked(isolated_home, monkeypatch, mill):
    with pytest.raises(ValidationError, match="answer_rerank"):
        load_settings(isolated_home, answer_rerank="maybe")
    monkeypatch.setenv("LOCALREASON_ANSWER_RERANK", "off")
    assert load_settings(isolated_home).answer_rerank == "off"
    with pytest.raises(ValidationError, match="rerank"):
        reason(mill, "When was the mill built?", generator=LikelyFake(), rerank="sometimes")
