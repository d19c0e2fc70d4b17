"""Sources that disagree (reason/disagree.py and reason's pipeline): near-twins that differ in the answer are
both heard, each cited, the disagreement named in gaps, no single phrase leads; copies that agree, sentences
that differ in something not asked, and ordinary libraries raise no alarm."""

from __future__ import annotations

import pytest

from localreason.reason import reason
from localreason.reason.candidates import Quote
from localreason.reason.disagree import Disagreement, Side, differs, find, ordered, read_apart, settled

from fakes import FakeGenerator

WARRANTY = "How long does the heat pump warranty last?"


def q(text: str, chunk: str = "chk_a", **kw) -> Quote:
    return Quote(chunk, text, 0, 1.0, **kw)


def test_near_twins_that_differ_in_the_answer_disagree_and_say_what_each_says():
    a = q("The warranty on the heat pump lasts five years from installation.")
    b = q("The warranty on the heat pump lasts three years from installation.", "chk_b")
    assert differs(WARRANTY, a, b) == ("five years", "three years"), "the figure with the unit both give"
    assert differs(WARRANTY, a, q(a.text.replace("  ", " "), "chk_b")) is None, "the same answer agrees"
    assert differs("Who wrote the song?", q("Mike Reid wrote the song in 1991."), q("Mike Reid wrote the song in 1993.")) \
        is None, "a difference that is not the kind asked for (a year for who) is no disagreement about the answer"
    parts = differs(WARRANTY, q("The warranty covers parts for five years."), q("The warranty covers labour for five years."))
    assert parts is None, "what they differ in does not answer how long"
    who = differs("Who wrote the song?", q("The song was written by Mike Reid."), q("The song was written by Tom Waits."))
    assert who == ("Mike Reid", "Tom Waits")
    long = differs("Who founded the society?", q("It was founded by John Smith in May."),
                   q("It was founded by the Imperial Russian Geographical Society in May."))
    assert long == ("John Smith", "the Imperial Russian Geographical Society"), "a long answer in a short sentence"
    assert differs("Who won?", q("Yes."), q("No.")) is None, "too little in common to be twins"


def test_an_answer_that_shares_a_stopword_with_the_other_is_still_one_difference():
    a = q("Rewley Abbey was founded in 1280 by a grandson of King John.")
    b = q("Rewley Abbey was founded in 1280 by the Free Territory of Ukraine.", "chk_b")
    assert differs("Who founded Rewley Abbey?", a, b) == ("a grandson of King John", "the Free Territory of Ukraine")
    apart = differs("Who founded it?", q("It was founded by Anna and later sold to Tom."),
                    q("It was founded by Maria and later sold to Ivan."))  # fmt: skip
    assert apart is None, "two differences apart by words that are not stopwords speak of two things"


def test_one_value_written_two_ways_is_no_disagreement():
    for x, y in [("two years", "2 years"), ("1,000 users", "1000 users"), ("5kg", "5 kg"), ("twenty-five", "25")]:
        a = q(f"Up to the limit, the router warranty lasts {x} from the date of purchase.")
        assert differs(WARRANTY, a, q(a.text.replace(x, y), "chk_b")) is None, (x, y)
    assert differs(WARRANTY, q("The warranty lasts 1,000 days from purchase."),
                   q("The warranty lasts 100 days from purchase.", "chk_b")) == ("1,000 days", "100 days")


def test_documents_each_about_its_own_thing_are_not_two_sides():
    """"The X200 router weighs 5 kg" and "The X300 router weighs 5 kg", each in its own datasheet, say the same of
    two products; a question that names one of them asks about the difference."""
    docs = {"chk_a": ("d1", "X200 datasheet"), "chk_b": ("d2", "X300 datasheet")}
    a, b = q("The X200 router weighs 5 kg without its stand."), q("The X300 router weighs 5 kg without its stand.", "chk_b")
    assert find("How heavy is the router?", [a, b], docs) is None
    plans = {"chk_a": ("d1", "Basic plan"), "chk_b": ("d2", "Premium plan")}
    a, b = q("The Basic plan includes a two-year warranty."), q("The Premium plan includes a two-year warranty.", "chk_b")
    assert find("Which plan includes a two-year warranty?", [a, b], plans) is None
    twins = {"chk_a": ("d1", "Manual 2023"), "chk_b": ("d2", "Manual 2025")}
    a, b = q("The warranty on the heat pump lasts five years."), q("The warranty on the heat pump lasts three years.", "chk_b")
    assert find(WARRANTY, [a, b], twins) is not None, "values in the text, not in the titles, still disagree"


def test_sentences_that_differ_in_two_places_speak_of_two_things():
    a = q("Model X weighs 5 kg and ships in a box.")
    b = q("Model Y weighs 7 kg and ships in a box.")
    assert differs("How much does the model weigh?", a, b) is None
    assert differs("How much does it weigh?", q("It weighs 5 kg."), q("Its crate, made of pine, weighs 7 kg in all.")) is None


def test_a_negation_only_one_side_has_disagrees():
    a = q("REST is required for every public endpoint of the service.")
    b = q("REST is not required for every public endpoint of the service.", "chk_b")
    said = differs("Is REST required for public endpoints?", a, b)
    assert said is not None and "not required" in said[1] and "not" not in said[0].split()


def test_the_reader_sure_of_different_phrases_in_sentences_that_otherwise_agree():
    ta, tb = "The committee approved the plan on 3 March after a long debate.", \
        "The committee finally approved the plan on 9 April after a long debate."
    a = q(ta, phrase=(ta.index("3 M"), ta.index(" after")), phrase_margin=6.0, reader=0.9)
    b = q(tb, "chk_b", phrase=(tb.index("9 A"), tb.index(" after")), phrase_margin=6.0, reader=0.9)
    assert read_apart("When did the committee approve the plan?", a, b) == ("3 March", "9 April")
    unsure = q(tb, "chk_b", phrase=b.phrase, phrase_margin=1.0, reader=0.9)
    assert read_apart("When did the committee approve the plan?", a, unsure) is None


def test_two_settings_each_with_its_value_are_not_two_answers():
    """"The cache timeout defaults to 60 seconds." and "The session timeout defaults to 15 minutes.": the reader is
    sure of both values, the rest of the sentences nearly agree, but they name two settings (a probe's finding)."""
    ta, tb = "The cache timeout defaults to 60 seconds.", "The session timeout defaults to 15 minutes."
    a = q(ta, phrase=(ta.index("60"), len(ta) - 1), phrase_margin=6.0, reader=0.9)
    b = q(tb, "chk_b", phrase=(tb.index("15"), len(tb) - 1), phrase_margin=6.0, reader=0.9)
    assert read_apart("What is the default timeout?", a, b) is None
    number = q(tb, "chk_b", phrase=(tb.index("15"), tb.index(" minutes")), phrase_margin=6.0, reader=0.9)
    tc = ta.replace("cache", "session")
    same = q(tc, phrase=(tc.index("60"), tc.index(" seconds")), phrase_margin=6.0, reader=0.9)  # the unit left
    # beside the cut phrase is the answer's own
    assert read_apart("What is the default session timeout?", same, number) == ("60", "15")
    tc, td = "The bridge opened to traffic in 1932.", "The bridge opened to cars in 1933."
    c = q(tc, phrase=(tc.index("1932"), tc.index("1932") + 4), phrase_margin=6.0, reader=0.9)
    d = q(td, "chk_b", phrase=(td.index("1933"), td.index("1933") + 4), phrase_margin=6.0, reader=0.9)
    assert read_apart("When did the bridge open?", c, d) == ("1932", "1933"), "two answers in their own words"


def test_a_pair_that_shares_one_word_with_the_question_does_not_outvote_the_sentence_that_says_them_all():
    """Two guides agree on the session timeout and differ on the upload limit; asked for the default session
    timeout, "default" alone does not make the upload limits an answer (a probe's finding)."""
    docs = {"chk_a": ("d1", "Webapp guide (2023)"), "chk_b": ("d2", "Webapp guide (2024)"), "chk_c": ("d3", "Notes")}
    best = q("The session timeout defaults to 15 minutes.", reader=0.9)
    a = q("The upload limit defaults to 10 MB per file.", reader=0.2)
    b = q("The upload limit defaults to 25 MB per file.", "chk_b", reader=0.2)
    assert find("What is the default session timeout?", [best, a, b], docs) is None
    found = find("What is the default upload limit?", [best, a, b], docs)
    assert found is not None and [s.says for s in found.sides] == ["10 MB", "25 MB"]
    # a sentence that says more of the question's words but does not answer it outvotes nobody (a review's case)
    ask = "In what year did the Sydney Harbour Bridge first open to traffic?"
    ctx = q("Traffic first crossed Sydney Harbour by ferry, long before any bridge.", "chk_c", reader=0.05)
    a, b = q("The bridge was opened in 1932 by the premier."), q("The bridge was opened in 1933 by the premier.", "chk_b")
    found = find(ask, [ctx, a, b], docs)
    assert found is not None and [s.says for s in found.sides] == ["1932", "1933"]


def test_a_pair_sharing_only_its_documents_subject_with_the_question_is_no_answer_to_it():
    """Two editions of "Lake Orvin" differ in its depth; asked which rivers feed it, the depth sentences share only
    "lake", their title's word, with the question: no disagreement (a probe's finding); asked how deep, one."""
    docs = {"chk_a": ("d1", "Lake Orvin"), "chk_b": ("d2", "Lake Orvin (2019 survey)")}
    a = q("The lake is 84 metres deep at its deepest point.", reader=0.3)
    b = q("The lake is 91 metres deep at its deepest point.", "chk_b", reader=0.3)
    rivers = q("It is fed by the Ammer and the Tolle rivers and drains into the Ost.", reader=0.3)
    assert find("Which rivers feed Lake Orvin?", [a, b, rivers], docs) is None
    found = find("How deep is Lake Orvin?", [a, b, rivers], docs)
    assert found is not None and [s.says for s in found.sides] == ["84 metres", "91 metres"]


def test_one_value_in_other_units_or_approximate_words_is_no_disagreement():
    """"about 2,400" / "around 2400" and "14 square kilometres" / "14 km²" (a probe's findings)."""
    assert differs("How many people does it employ?", q("The company employs about 2,400 people."),
                   q("The company employs around 2400 people.", "chk_b")) is None  # fmt: skip
    assert differs("How large is the main mill?", q("Its main mill covers 14 square kilometres of the valley."),
                   q("Its main mill covers 14 km² of the valley.", "chk_b")) is None  # fmt: skip
    assert differs("How large is the main mill?", q("Its main mill covers 14 square kilometres of the valley."),
                   q("Its main mill covers 19 km² of the valley.", "chk_b")) is not None  # fmt: skip


def test_one_quantity_in_two_units_is_no_disagreement():
    """A probe's "1 GB" (an install guide) against "1024 MB" (the FAQ), and "half a minute" against "30 seconds",
    were named as sources that disagree; a size in bytes is counted either way (1000 or 1024)."""
    upload = "What is the maximum upload size?"
    for x, y in [("1 GB", "1024 MB"), ("1 GB", "1000 MB"), ("2 GB", "2048 megabytes"), ("half a minute", "30 seconds"),
                 ("90 minutes", "1.5 hours")]:  # fmt: skip
        a = q(f"On the default install the maximum upload size is {x} per request.")
        assert differs(upload, a, q(a.text.replace(x, y), "chk_b")) is None, (x, y)
    for x, y in [("1 GB", "2048 MB"), ("1 GB", "1024"), ("3 m", "3 min"), ("1 Gb", "1000 MB"), ("1 Gbit", "1 GB")]:
        a = q(f"On the default install the maximum upload size is {x} per request.")
        assert differs(upload, a, q(a.text.replace(x, y), "chk_b")) is not None, (x, y)


def test_find_takes_sides_from_different_documents_only():
    docs = {"chk_a": ("d1", "Manual 2023"), "chk_b": ("d2", "Manual 2025"), "chk_c": ("d1", "Manual 2023")}
    a = q("The warranty on the heat pump lasts five years.")
    b = q("The warranty on the heat pump lasts three years.", "chk_b")
    c = q("The warranty on the heat pump lasts two years.", "chk_c")  # a table row of the same document
    found = find(WARRANTY, [a, c, b], docs)
    assert found is not None and [s.says for s in found.sides] == ["five years", "three years"]
    assert find(WARRANTY, [a, c], docs) is None, "one document's two sentences are not two sources"
    assert find(WARRANTY, [a, q(a.text, "chk_b")], docs) is None


def test_near_twins_on_another_subject_are_no_answer_to_the_question():
    """Two policies' "up to two days" / "up to three days" of remote work disagree, but not about lunch."""
    docs = {"chk_a": ("d1", "Remote work policy (draft)"), "chk_b": ("d2", "Remote work policy (final)")}
    a = q("Employees may work remotely for up to two days a week, agreed with their team lead in advance.")
    b = q("Employees may work remotely for up to three days a week, agreed with their team lead in advance.", "chk_b")
    assert find("When is lunch served?", [a, b], docs) is None
    assert find("How many days a week may employees work remotely?", [a, b], docs) is not None


def test_a_pair_below_the_first_two_sentences_is_heard():
    docs = {"chk_a": ("d1", "Manual 2023"), "chk_b": ("d2", "Manual 2025"), "chk_x": ("d3", "Guide"),
            "chk_y": ("d4", "Notes")}  # fmt: skip
    first = [q("Register the heat pump online within a month.", "chk_x"), q("Keep the receipt.", "chk_y")]
    a = q("The warranty on the heat pump lasts five years.")
    b = q("The warranty on the heat pump lasts three years.", "chk_b")
    found = find(WARRANTY, first + [a, b], docs)
    assert found is not None and [s.says for s in found.sides] == ["five years", "three years"]


def side(title: str, says: str, doc: str) -> Side:
    return Side(q("x"), says, doc, title)


def test_sides_newest_first_when_dated_else_by_title_and_the_gap_names_them():
    found = Disagreement((side("Heat pump manual (2023)", "five years", "d1"), side("Heat pump manual (2025)", "three years", "d2")))
    got = ordered(found)
    assert [s.title for s in got.sides] == ["Heat pump manual (2025)", "Heat pump manual (2023)"]
    assert got.gap() == ("\u201cHeat pump manual (2025)\u201d says three years; \u201cHeat pump manual (2023)\u201d says "
                         "five years. The sources disagree, and the evidence does not settle which is right.")
    undated = ordered(Disagreement((side("Zeta notes", "a", "d1"), side("Alpha notes", "b", "d2"))))
    assert [s.title for s in undated.sides] == ["Alpha notes", "Zeta notes"]


def test_the_evidence_settles_it_only_by_a_replacement_or_a_version_asked_for():
    found = ordered(Disagreement((side("Manual (2023)", "five years", "d1"), side("Manual (2025)", "three years", "d2"))))
    assert settled(found, WARRANTY, {}).stands is None, "dates alone settle nothing"
    asked = settled(found, "How long is the warranty in the 2023 manual?", {})
    assert asked.stands == 0 and asked.sides[0].title == "Manual (2023)", "the side that stands comes first"
    assert asked.gap().startswith("\u201cManual (2023)\u201d says five years; \u201cManual (2025)\u201d says three years.")
    assert "the question asks about \u201cManual (2023)\u201d, so \u201cManual (2023)\u201d stands." in asked.gap()
    texts = {"d2": "This edition replaces the 2023 manual. The warranty lasts three years.", "d1": ""}
    replaced = settled(found, WARRANTY, texts)
    assert replaced.stands == 0 and replaced.sides[0].title == "Manual (2025)" and "says it replaces" in replaced.why
    older = settled(found, WARRANTY, {"d1": "This manual is superseded by the 2025 edition.", "d2": ""})
    assert older.sides[older.stands].title == "Manual (2025)" and "replaces it" in older.why
    for notice in ({"d1": "The 2025 edition replaces this manual.", "d2": ""},
                   {"d2": "The 2023 manual was superseded by this edition.", "d1": ""}):
        other_way = settled(found, WARRANTY, notice)  # the other side named before the verb: the old one crowned
        assert other_way.sides[other_way.stands].title == "Manual (2025)", (notice, other_way.why)
    both = settled(found, WARRANTY, {"d1": "The 2025 edition replaces the 2025 draft.", "d2": ""})
    assert both.stands is None, "the other side named on both sides of the verb says nothing about this one"
    topics = Disagreement((side("Black Death", "Central Asia", "d1"), side("Plague notes", "China", "d2")))
    assert settled(topics, "Where did the Black Death originate?", {}).stands is None, \
        "a title that names the question's subject is not a version the question asks for"


def test_a_near_twin_of_a_best_hit_follows_it_so_the_budget_keeps_both():
    from types import SimpleNamespace as Hit

    from localreason.reason.disagree import twins_close

    twin = "The warranty on the heat pump lasts five years from the date of installation. Register it online."
    hits = [Hit(content=twin, document_id="d1"), Hit(content="Clean the filters every two months.", document_id="d1"),
            Hit(content="The router has four ports.", document_id="d3"),
            Hit(content=twin.replace("five", "three"), document_id="d2"), Hit(content=twin, document_id="d4")]
    got = twins_close(hits, 0.6)
    assert [h.document_id for h in got] == ["d1", "d2", "d1", "d3", "d4"], "the same text is a copy, not a twin"
    assert twins_close(hits[:3], 0.6) == hits[:3]


OLD = ("# Heat pump manual (2023)\n\n## Warranty\n\nThe warranty on the heat pump lasts five years from the date of "
       "installation. Register the unit online to claim it.\n\n## Filters\n\nClean the filters every two months.\n")
NEW = OLD.replace("(2023)", "(2025)").replace("five years", "three years")
ROUTER = ("# Router guide\n\nThe router has four ethernet ports and one USB port. Its warranty is handled by the shop "
          "where it was bought.\n")


@pytest.fixture
def manuals(library_of):
    return library_of({"manual-2023.md": OLD, "manual-2025.md": NEW, "router.md": ROUTER})


def test_both_sides_are_cited_the_gap_names_them_and_no_phrase_leads(manuals):
    a = reason(manuals, WARRANTY, generator=FakeGenerator(), lead_quotes=1)
    sides = [s for s in a.statements if s.side is not None]
    assert [s.side.label for s in sides] == ["A", "B"], a.to_dict()
    assert [s.side.document_title for s in sides] == ["Heat pump manual (2025)", "Heat pump manual (2023)"]
    assert "three years" in sides[0].references[0].quotation and "five years" in sides[1].references[0].quotation
    assert all(s.phrase is None for s in a.statements), "no single phrase leads"
    assert any("says three years" in g and "says five years" in g and "disagree" in g for g in a.gaps), a.gaps
    assert a.answer.startswith("\u201cHeat pump manual (2025)\u201d: "), a.answer
    assert a.meta["citationsDropped"] == 0 and len({c.document_id for c in a.citations}) == 2
    data = a.to_dict()["statements"]
    assert data[0]["side"] == {"label": "A", "says": "three years", "documentTitle": "Heat pump manual (2025)",
                               "stands": False}


def test_sides_whose_documents_share_a_title_are_named_by_their_paths(lib, tmp_path):
    from localreason.reason.disagree import told_apart

    for folder, years in (("shop-a", "five"), ("shop-b", "three")):
        (tmp_path / "posts" / folder).mkdir(parents=True)
        (tmp_path / "posts" / folder / "000.txt").write_text(
            f"The warranty on the heat pump lasts {years} years from the date of installation. Register it online.\n")
    assert lib.ingest([tmp_path / "posts"], "work").ok
    a = reason(lib, WARRANTY, generator=FakeGenerator())
    said = [g for g in a.gaps if "disagree" in g]
    assert said and "\u201cshop-a/000.txt\u201d says five years" in said[0], a.gaps
    assert "\u201cshop-b/000.txt\u201d says three years" in said[0]
    assert sorted(s.side.document_title for s in a.statements if s.side) == ["shop-a/000.txt", "shop-b/000.txt"]
    one = Disagreement((Side(q("x"), "x", "d1", "Manual"), Side(q("y"), "y", "d2", "Guide")))
    assert told_apart(one, {"d1": "/a/m.txt", "d2": "/b/g.txt"}) == one, "titles apart already: unchanged"
    deep = Disagreement((Side(q("x"), "x", "d1", "000.txt"), Side(q("y"), "y", "d2", "000.txt")))
    named = told_apart(deep, {"d1": "/data/x/post/000.txt", "d2": "/data/y/post/000.txt"})
    assert [s.title for s in named.sides] == ["x/post/000.txt", "y/post/000.txt"], "as much of the path as tells"


def test_copies_that_agree_and_ordinary_questions_raise_no_alarm(library_of):
    lib = library_of({"manual.md": OLD, "copy.md": OLD.replace("(2023)", "(copy)"), "router.md": ROUTER})
    for question in (WARRANTY, "How many ethernet ports does the router have?", "How often should the filters be cleaned?"):
        a = reason(lib, question, generator=FakeGenerator())
        assert all(s.side is None for s in a.statements) and not any("disagree" in g for g in a.gaps), (question, a.gaps)


def test_a_question_about_one_version_says_which_stands(manuals):
    a = reason(manuals, "How long does the heat pump warranty last in the 2023 manual?", generator=FakeGenerator())
    stands = [s.side for s in a.statements if s.side is not None and s.side.stands]
    assert [m.document_title for m in stands] == ["Heat pump manual (2023)"], a.to_dict()
    assert any("asks about \u201cHeat pump manual (2023)\u201d" in g for g in a.gaps), a.gaps


# ---------------------------------------------------------------- comparison questions


def test_the_question_forms_that_compare():
    from localreason.reason.compare import compared_terms

    assert compared_terms("Which interface is required, REST or GraphQL?") == ["REST", "GraphQL"]
    assert compared_terms("Compare the REST and GraphQL requirements in my API Decisions collection.")[0] == "REST"
    assert compared_terms("What do the 2023 manual and the 2025 manual say about the warranty?") == ["2023 manual", "2025 manual"]
    assert compared_terms("What is the difference between a list and a tuple?") == ["list", "tuple"]
    assert compared_terms("How does Python 2 differ from Python 3?") == ["Python 2", "Python 3"]
    assert compared_terms("How do the two policies differ on remote work?") == []
    for plain in ("When did the Apollo program run?", "Who performed the first landing on the Moon?",
                  "Which song did Kerrang! pick?", "What is the capital of France or Spain?"):
        assert compared_terms(plain) is None, plain


REST = ("# ADR 7: Public API style\n\nStatus: accepted.\n\nDecision: every public endpoint must be a REST resource, "
        "described in OpenAPI. Partners integrate over plain HTTP.\n")
GRAPHQL = ("# ADR 12: Mobile backend\n\nStatus: accepted.\n\nDecision: the mobile apps require a GraphQL gateway, so "
           "that one request fetches a whole screen.\n")
LUNCH = "# Office lunch\n\nLunch is served at noon on weekdays in the canteen on the second floor.\n"


def test_the_specs_comparison_hears_each_document_that_speaks_to_it(library_of):
    lib = library_of({"adr-7.md": REST, "adr-12.md": GRAPHQL}, collection="API Decisions")
    library_of({"lunch.md": LUNCH}, collection="office")
    collection = next(c for c in lib.collections() if c.name == "API Decisions")
    a = reason(lib, "Which interface is required, REST or GraphQL?", generator=FakeGenerator(),
               collection_id=collection.id, limit=12)  # fmt: skip
    titles = [next(c.document_title for c in a.citations if c.chunk_id == s.references[0].chunk_id) for s in a.statements]
    assert titles[:2] == ["ADR 7: Public API style", "ADR 12: Mobile backend"], a.to_dict()
    assert "REST" in a.statements[0].references[0].quotation and "GraphQL" in a.statements[1].references[0].quotation
    assert all(s.phrase is None for s in a.statements) and a.meta["citationsDropped"] == 0
    assert not any("disagree" in g for g in a.gaps), "two documents on two things do not disagree"
    one = reason(lib, "What does the mobile backend require?", generator=FakeGenerator(), collection_id=collection.id)
    assert len({s.references[0].document_id for s in one.statements[:1]}) == 1
    for limit in (1, 2):  # the passages added for each side stay within the request's limit (they went past it)
        few = reason(lib, "Which interface is required, REST or GraphQL?", generator=FakeGenerator(),
                     collection_id=collection.id, limit=limit)  # fmt: skip
        assert few.chunks_gathered <= limit and len(few.citations) <= limit, (limit, few.to_dict())


def testroom_for_a_comparisons_passages_keeps_the_best_hit_and_each_side():
    """Trimming to the request's limit once dropped the weak hit that was a side's only passage."""
    from types import SimpleNamespace as Hit

    from localreason.reason.pipeline import room_for

    hits = [Hit(content=c, document_title="") for c in ("REST is required", "lunch menu", "office hours",
                                                          "GraphQL for the mobile backend")]  # fmt: skip
    assert [h.content for h in room_for(hits, 2, [{"graphql"}])] == ["REST is required", "GraphQL for the mobile backend"]
    assert [h.content for h in room_for(hits, 3, [])] == ["REST is required", "lunch menu", "office hours"]
    assert room_for(hits, 9, [{"graphql"}]) == hits and room_for(hits, 0, [{"graphql"}]) == []


def test_the_evidence_packet_is_the_one_ask_sends_comparisons_included(library_of):
    """`localreason evidence` said "the exact evidence packet ask would send" but searched alone, at 8,000 tokens:
    the passages a comparison adds, and the answer_budget ask uses, were not in it."""
    lib = library_of({"adr-7.md": REST, "adr-12.md": GRAPHQL}, collection="API Decisions")
    q = "Which interface is required, REST or GraphQL?"
    evidence, packet = lib.gathered(q)
    assert any("a comparison: added passages" in step for step in evidence.steps), evidence.steps
    assert packet.max_tokens == lib.settings.answer_budget and lib.evidence_packet(q) == packet
    a = reason(lib, q, generator=FakeGenerator(), max_tokens=lib.settings.answer_budget)
    assert a.chunks_gathered == packet.chunks_gathered
    assert {c.chunk_id for c in a.citations} <= {c.chunk_id for c in packet.chunks}


def test_an_unsure_comparison_says_each_sources_closest_statement_is_quoted(library_of, monkeypatch):
    """The gate doubts the evidence (only the closest statement, its gap says) but a comparison hears each
    document: two statements were shown under a gap that said one was."""
    from localreason.reason import pipeline
    from localreason.reason.gate import NOT_ANSWERED_GAP, NOT_ANSWERED_SIDES_GAP

    lib = library_of({"adr-7.md": REST, "adr-12.md": GRAPHQL}, collection="API Decisions")
    monkeypatch.setattr(pipeline, "check_relevance", lambda *args, **kwargs: (True, [NOT_ANSWERED_GAP]))
    a = reason(lib, "Which interface is required, REST or GraphQL?", generator=FakeGenerator(), limit=12)
    assert len(a.statements) >= 2 and NOT_ANSWERED_SIDES_GAP in a.gaps and NOT_ANSWERED_GAP not in a.gaps, a.gaps
    one = reason(lib, "What does the mobile backend require?", generator=FakeGenerator())
    assert len(one.statements) == 1 and NOT_ANSWERED_GAP in one.gaps, "no sides: the closest statement alone"


def test_every_front_ends_form_names_the_sides_and_the_disagreement(manuals):
    """The CLI's plain text and the Markdown of MCP's readable output and the notebook: each side's document in
    the prose, both quotations under Sources, the disagreement under Limitations; JSON keeps it for a client."""
    from localreason.reason import Answer
    from localreason.render import answer_markdown, answer_plain

    a = reason(manuals, WARRANTY, generator=FakeGenerator())
    for text in (answer_plain(a), answer_markdown(a)):
        prose, _, rest = text.partition("Sources")
        assert "Heat pump manual (2025)" in prose and "Heat pump manual (2023)" in prose, text
        assert "three years" in rest and "five years" in rest and "The sources disagree" in rest
    back = Answer.from_dict(a.to_dict(), a.query)
    assert [s.side for s in back.statements] == [s.side for s in a.statements], "a remote answer keeps its sides"


def test_sentences_the_stance_reader_finds_contradicting_are_two_sides_in_their_own_words():
    from dataclasses import replace as with_

    from localreason.reason.calibration import DEFAULT
    from localreason.reason.disagree import GIST_WORDS, opposite

    question = "Is acupuncture painful for most people?"
    a = q("Most patients feel little or nothing when the thin needles go in.", "chk_a")
    b = q("Many people find the needling painful, and some stop treatment because of it.", "chk_b")
    c = q("The needles are thinner than those used for injections.", "chk_c")
    same_doc = q("Sessions last about half an hour.", "chk_a2")
    documents = {"chk_a": ("doc1", "Clinic leaflet"), "chk_a2": ("doc1", "Clinic leaflet"),
                 "chk_b": ("doc2", "Patient survey"), "chk_c": ("doc3", "Needle maker")}
    asked: list = []

    def contradiction(pairs):
        asked.extend(pairs)
        return [0.97 if {x, y} == {a.text, b.text} else 0.2 for x, y in pairs]

    on = with_(DEFAULT, stance_contradiction=0.9, stance_shared=0)
    found = find(question, [a, same_doc, b, c], documents, calibration=on, contradiction=contradiction)
    assert found is not None and [s.title for s in found.sides] == ["Clinic leaflet", "Patient survey"]
    assert [s.says for s in found.sides] == [a.text[:-1], b.text[:-1]], "each side says its own sentence"
    assert ".;" not in found.gap() and ".." not in found.gap(), "its full stop left to the gap"
    assert (a.text, same_doc.text) not in asked and (same_doc.text, a.text) not in asked, \
        "two sentences of one document are never asked about"
    assert "The sources disagree" in found.gap()
    copy = q("Most patients feel little or nothing when the thin needles go in", "chk_b")
    assert opposite(question, [a, copy], documents, lambda pairs: [1.0] * len(pairs), on) == {}, \
        "a sentence is never asked whether it contradicts a copy of itself"
    assert find(question, [a, b, c], documents, calibration=on, contradiction=lambda pairs: [0.2] * len(pairs)) is None, \
        "below the threshold nothing is claimed"
    off = with_(DEFAULT, stance_contradiction=1.5)
    assert opposite(question, [a, b], documents, lambda pairs: pytest.fail("asked though off"), off) == {}
    long = q(" ".join(["word"] * (GIST_WORDS + 5)) + ".", "chk_c")
    pair = opposite(question, [a, long], documents, lambda pairs: [0.99] * len(pairs), on)
    assert find(question, [a, b], documents, contradiction=lambda pairs: pytest.fail("asked")) is None, \
        "the shipped calibration asks nothing: no stance reader ships"
    assert pair[(1, 0)][0].endswith("\u2026") and len(pair[(1, 0)][0].split()) == GIST_WORDS, "a long side is cut"


def test_when_the_gate_answers_from_the_closest_passage_only_each_check_runs_as_the_calibration_says():
    from dataclasses import replace as with_

    from localreason.reason.calibration import DEFAULT
    from localreason.reason.disagree import look

    a = q("The warranty on the heat pump lasts five years from installation.", "chk_a")
    b = q("The warranty on the heat pump lasts three years from installation.", "chk_b")
    c = q("Owners say the pump broke down within months.", "chk_c")
    documents = {"chk_a": ("doc1", "Manual"), "chk_b": ("doc2", "Manual (revised)"), "chk_c": ("doc3", "Forum")}
    stances: list = []

    def contradiction(pairs):
        stances.extend(pairs)
        return [0.99 if c.text in pair else 0.0 for pair in pairs]

    quiet = with_(DEFAULT, twins_when_closest=False, stance_when_closest=False, stance_contradiction=0.9,
                  stance_shared=0)  # fmt: skip
    assert look(WARRANTY, [a, b], documents, False, calibration=quiet) is not None, "an ordinary answer looks"
    assert look(WARRANTY, [a, b, c], documents, True, calibration=quiet, contradiction=contradiction) is None
    assert stances == [], "nothing is asked when nothing is looked for"
    twins = look(WARRANTY, [a, b, c], documents, True, calibration=with_(quiet, twins_when_closest=True),
                 contradiction=contradiction)  # fmt: skip
    assert twins is not None and [s.says for s in twins.sides] == ["five years", "three years"] and stances == []
    only = look(WARRANTY, [c, a], documents, True, calibration=with_(quiet, stance_when_closest=True),
                contradiction=contradiction)  # fmt: skip
    assert only is not None and {s.title for s in only.sides} == {"Forum", "Manual"}
    assert look(WARRANTY, [a, b], documents, True, calibration=with_(quiet, stance_when_closest=True),
                contradiction=lambda pairs: [0.0] * len(pairs)) is None, "near-twins are not looked for then"


def test_two_sentences_are_asked_about_only_when_both_speak_of_what_is_asked():
    from dataclasses import replace as with_

    from localreason.reason.calibration import DEFAULT
    from localreason.reason.disagree import opposite

    question = "Do bacteria have an immune system?"
    a = q("Bacteria possess a rudimentary immune system of enzymes.", "chk_a")
    b = q("On this view bacteria have no immune system at all.", "chk_b")
    c = q("Immunology is the science of the immune system.", "chk_c")
    documents = {"chk_a": ("d1", "A"), "chk_b": ("d2", "B"), "chk_c": ("d3", "C")}
    asked: list = []

    def contradiction(pairs):
        asked.extend(pairs)
        return [0.99] * len(pairs)

    found = opposite(question, [a, b, c], documents, contradiction, with_(DEFAULT, stance_contradiction=0.9,
                                                                         stance_shared=3))  # fmt: skip
    assert set(found) == {(0, 1), (1, 0)} and asked == [(a.text, b.text)], \
        "only the pair that shares bacteria, immune and system is read; the definition shares two of them"
