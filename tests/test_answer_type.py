"""The type check (reason/answer_type.py): a phrase that cannot answer the question's kind is vetoed; one that
may is not (the reader's confidence decides that)."""

from __future__ import annotations

import pytest

from localreason.reason.answer_type import FORMS, LOOKS, agrees, asked_kind, echoes

AGREE = [
    ("Who performed the first landing on the Moon?", "Armstrong and Aldrin"),
    ("What is the name of the person who sang it?", "Tom Jones"),
    ("Whose idea was the bridge?", "John Rennie's"),
    ("When did the Apollo program run?", "from 1961 to 1972"),
    ("When did he leave?", "after the war ended"),
    ("When was it signed?", "in the nineteenth century"),
    ("How many people live there?", "about 2.1 million"),
    ("How long did the siege last?", "three weeks"),
    ("How large is the area covered by the Amazon rainforest?", "5,500,000 square kilometres"),
    ("Where was the treaty signed?", "Paris"),
    ("Where do the birds nest?", "in the reeds by the lake"),
    ("Which song did Kerrang! pick?", '"Helena"'),
    ("What error code should make me call the service line?", "E7"),
    ("What year did the war end?", "1945"),
    ("In which country is the Alhambra?", "Spain"),
    ("What colour is the sky?", "blue"),
    ("Why did the program start?", "to show what the nation could do"),
]
VETO = [
    ("What is the name of the person who sang it?", "singer"),
    ("What is the last name of the person who carved the stones?", "runes"),
    ("Which song did Kerrang! pick?", "Kerrang!"),
    ("What error code should make me call the service line?", "at 22 41 90 00"),
    ("How many people live there?", "the villagers"),
    ("When did the Apollo program run?", "the Gemini program"),
    ("Where was the treaty signed?", "1648"),
    ("What year did the war end?", "the treaty"),
    ("Who founded the company?", "the company"),
    ("Who wrote the letter?", "wrote"),
]


@pytest.mark.parametrize("question, phrase", AGREE)
def test_a_phrase_of_the_kind_asked_for_is_not_vetoed(question, phrase):
    assert agrees(question, phrase), (question, phrase, asked_kind(question))


@pytest.mark.parametrize("question, phrase", VETO)
def test_a_phrase_that_cannot_answer_is_vetoed(question, phrase):
    assert not agrees(question, phrase), (question, phrase, asked_kind(question))


def test_the_table_names_each_kind_and_each_kind_has_a_look():
    kinds = {kind for _, kind in FORMS}
    assert kinds == set(LOOKS) == {"person", "named", "time", "number", "place", "code"}
    assert asked_kind("Who?") == "person" and asked_kind("so when did it open?") == "time"
    assert asked_kind("The band was formed where?") == "place"
    assert asked_kind("What colour is the sky?") is None and asked_kind("Why did it fail?") is None


def test_a_phrase_of_the_questions_own_words_echoes_it():
    assert echoes("Which song did Kerrang! pick as the best?", "Kerrang! pick")
    assert echoes("Who wrote it?", "the") and not echoes("How many?", "12")
    assert not echoes("Which song did Kerrang! pick?", "Helena")


def test_a_yes_or_no_question_is_told_from_a_choice():
    from localreason.reason.answer_type import asks_yes_or_no

    assert asks_yes_or_no("Is Ferrule free?") and asks_yes_or_no("Doesn't it support IPv6?")
    assert not asks_yes_or_no("Is it red or blue?") and not asks_yes_or_no("How much does it cost?")
    assert not asks_yes_or_no("Can you tell me when the old bridge was rebuilt?"), "asked politely, it asks when"
    assert not asks_yes_or_no("Do you know who wrote the manual?")
    assert asks_yes_or_no("Do you know if it is free?") and asks_yes_or_no("Can you use WAL in memory?")
