"""reason/polarity.py: which side of a yes/no question a sentence takes, and two documents heard as two sides."""

from localreason.reason import polarity
from localreason.reason.calibration import DEFAULT
from localreason.reason.candidates import Quote
from localreason.reason.disagree import find

RHINE = "Does the Rhine flow into the North Sea?"


def test_a_negation_that_governs_what_is_asked_says_no():
    assert polarity.side(RHINE, "The Rhine itself does not flow into the North Sea.") is False
    assert polarity.side(RHINE, "The Rhine eventually flows into the North Sea in the Netherlands.") is True
    assert polarity.side(RHINE, "None of the Rhine's water flows into the North Sea directly.") is False


def test_a_negation_of_something_else_does_not():
    # "not the Baltic": the question never asks of the Baltic, and the comma closes the clause
    assert polarity.side(RHINE, "The Rhine flows into the North Sea, not the Baltic.") is True
    assert polarity.side(RHINE, "Not only barges but also the Rhine itself flow into the North Sea.") is True


def test_a_prefix_negates_the_word_the_question_asks():
    q = "Was Newcomen's atmospheric engine efficient?"
    assert polarity.side(q, "Newcomen's atmospheric engine was relatively inefficient.") is False
    assert polarity.side(q, "Newcomen's atmospheric engine was an efficient machine for its day.") is True
    assert polarity.side("Is the result stable?", "The result is unstable.") is False
    # a prefix that makes another word, not the word's opposite
    assert polarity.side("Does the app play videos?", "The app can display videos in a window.") is not False
    assert polarity.side("Did the tests prove the fix?", "The tests improve the fix a great deal.") is not False


def test_a_sentence_that_does_not_speak_to_the_question_takes_no_side():
    assert polarity.side(RHINE, "The Danube does not reach the sea at all.") is None
    assert polarity.side(RHINE, "The sea was calm.") is None  # one word of the question is a subject, not a claim


def test_title_words_do_not_count_towards_speaking():
    q = "Is Quarry free to use?"
    assert polarity.side(q, "Quarry is not listed here.", "Quarry") is None
    assert polarity.side(q, "It is not free to use in companies.", "Quarry") is False


def test_a_negative_question_turns_the_sides_round():
    q = "Doesn't the Rhine flow into the North Sea?"
    assert polarity.side(q, "The Rhine flows into the North Sea.") is False
    assert polarity.side(q, "The Rhine does not flow into the North Sea.") is True


def test_only_yes_or_no_questions_are_read():
    assert polarity.contradiction_for("Where does the Rhine flow?") is None
    ask = polarity.contradiction_for(RHINE)
    yes = "The Rhine flows into the North Sea near Rotterdam."
    no = "The Rhine itself does not flow into the North Sea."
    assert ask([(yes, no), (no, yes), (yes, yes), (yes, "The sea was calm.")]) == [1.0, 1.0, 0.0, 0.0]


def _quote(chunk: str, text: str) -> Quote:
    return Quote(chunk, text, 0, 1.0)


def test_two_documents_that_take_opposite_sides_are_heard():
    yes = _quote("c1", "The Rhine eventually flows into the North Sea in the Netherlands.")
    no = _quote("c2", "The Rhine itself does not flow into the North Sea; its water reaches it by other arms.")
    documents = {"c1": ("d1", "Rhine"), "c2": ("d2", "Where the Rhine ends")}
    contradiction = polarity.for_quotes(RHINE, [yes, no], documents)
    found = find(RHINE, [yes, no], documents, calibration=DEFAULT, contradiction=contradiction,
                 least=polarity.RULE_LEAST)  # fmt: skip
    assert found is not None and [s.title for s in found.sides] == ["Rhine", "Where the Rhine ends"]
    assert "does not flow" in found.sides[1].says


def test_two_documents_that_agree_are_not_two_sides():
    a = _quote("c1", "The Rhine eventually flows into the North Sea in the Netherlands.")
    b = _quote("c2", "In the end the Rhine flows into the North Sea near Rotterdam.")
    documents = {"c1": ("d1", "Rhine"), "c2": ("d2", "Dutch rivers")}
    contradiction = polarity.for_quotes(RHINE, [a, b], documents)
    assert find(RHINE, [a, b], documents, contradiction=contradiction, least=polarity.RULE_LEAST) is None


RIVER = ("# The Rhine\n\nThe Rhine rises in the Swiss Alps and forms part of the border of Germany. The Rhine flows "
         "into the North Sea through the delta it shares with the Meuse.\n")
DELTA = ("# Where the Rhine ends\n\nMost of its water is carried off by other arms. The Rhine itself does not flow "
         "into the North Sea; its old course silted up centuries ago.\n")


OTHERS = {"danube.md": "# The Danube\n\nThe Danube flows east through ten countries into the Black Sea.\n",
          "alps.md": "# The Alps\n\nThe Alps are the highest mountain range of Europe. Glaciers cover their peaks.\n",
          "barges.md": "# Barges\n\nA barge carries coal and grain on canals. Most barges have no engine.\n"}


def test_reason_hears_two_documents_that_answer_a_yes_or_no_question_oppositely(library_of):
    from dataclasses import replace

    from localreason.reason import reason
    from tests.fakes import FakeGenerator

    lib = library_of({"rhine.md": RIVER, "delta.md": DELTA, **OTHERS})
    on = replace(DEFAULT, stance_rule=True, stance_when_closest=True)
    a = reason(lib, RHINE, generator=FakeGenerator(), calibration=on, limit=12)
    sides = sorted(s.side.document_title for s in a.statements if s.side is not None)
    assert sides == ["The Rhine", "Where the Rhine ends"], a.to_dict()
    assert any("disagree" in g and "does not flow" in g for g in a.gaps), a.gaps
    assert not any(".." in g or ".;" in g for g in a.gaps), "each side's sentence ends where the gap goes on"
    off = reason(lib, RHINE, generator=FakeGenerator(), calibration=replace(on, stance_rule=False), limit=12)
    assert not any("disagree" in g for g in off.gaps), off.gaps
    lib.remove(next(d.id for d in lib.documents() if d.title == "Where the Rhine ends"))
    one = reason(lib, RHINE, generator=FakeGenerator(), calibration=on, limit=12)
    assert not any("disagree" in g for g in one.gaps), "one source takes one side"


def test_double_negations_hyphenated_words_and_verbs_with_un_are_no_no():
    """A review's probes: "unpacks" is no "not packs", "--no-color" no "no", "never stops" a yes."""
    assert polarity.side("Does dpkg-deb pack archives?", "dpkg-deb packs, unpacks and lists Debian archives.") is True
    assert polarity.side("Does tidewatch color its output?", "The --no-color option disables colored output of "
                         "tidewatch.") is not False  # fmt: skip
    assert polarity.side("Is the nvidia driver free software?", "The nvidia driver is non-free software.") is False
    for agreeing in ("The Rhine never stops flowing into the North Sea.",
                     "Nothing stops the Rhine from flowing into the North Sea.",
                     "There is no question that the Rhine flows into the North Sea."):
        assert polarity.side(RHINE, agreeing) is True, agreeing
    assert polarity.side("Is the API stable?", "The API is stable, not unstable at all.") is True
