"""The answer phrase (reason/phrase.py, readers.py's span decoding): the words of the lead quotation that
answer, which the prose leads with; verified against the quotation, offsets in the document; none when the span
head is unsure, the gate is unsure, or the phrase only refers ("he")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from localreason.reason import Answer, AnswerPhrase, Reference, Statement, compose, reason
from localreason.reason.calibration import DEFAULT
from localreason.reason.candidates import Quote
from localreason.reason.offer import is_reference, name_run, opens_with_reference, points_before
from localreason.reason.phrase import with_phrase
from localreason.models import READER_DIR
from localreason.readers import Phrase, best_phrase, load_tokenizer, pair_text

from fakes import FakeGenerator

APOLLO = ("# Apollo\n\nThe Apollo program, also known as Project Apollo, was the third United States human spaceflight "
          "program, which flew crewed missions from 1969 to 1972. It was run by NASA.\n\n## Why\n\nThe program "
          "was started because the nation wanted to show what it could do in space, and the reasons are debated.\n")
FLEMING = ("# Alexander Fleming\n\nAlexander Fleming was a Scottish physician, born in Ayrshire in 1881. In 1928 he "
           "discovered penicillin at St Mary's Hospital in London. The discovery changed medicine.\n")  # fmt: skip
BRIDGE = ("# Town history\n\nJohn Rennie was the county's chief engineer for thirty years. After the flood of 1810 he "
          "rebuilt the bridge in stone. The old wooden bridge had stood for a century.\n")  # fmt: skip


class SpanReader:
    """A reader with a span head: logits +4 per ``likes`` word; the phrase is the first of ``points`` found in
    the sentence, with ``margin`` over no phrase (no phrase found: margin -5); the phrase before, the first of
    ``before`` found in the sentence before, with ``before_margin``."""

    def __init__(self, likes=(), points=(), margin=DEFAULT.headline_margin, base=-4.0, before=(), before_margin=1.0) -> None:
        self.likes, self.points, self.margin, self.base = likes, points, margin, base
        self.before, self.before_margin = before, before_margin
        self.calls = 0

    def logits(self, question, candidates):
        return self.read(question, candidates)[0]

    def read(self, question, candidates):
        self.calls += 1
        logits = np.array([self.base + 4.0 * sum(w in s.lower() for w in self.likes) for s, _ in candidates])
        phrases = []
        for s, previous in candidates:
            at = next(((s.find(p), p) for p in self.points if p in s), None)
            back = next(((previous.find(p), p) for p in self.before if p in previous), None)
            before = Phrase(back[0], back[0] + len(back[1]), self.before_margin, 0.0) if back else None
            phrases.append(Phrase(at[0], at[0] + len(at[1]), self.margin, 0.0, before) if at
                           else Phrase(0, 3, -5.0, 0.0, before))  # fmt: skip
        return logits, phrases


@pytest.fixture
def library(library_of):
    return library_of({"apollo.md": APOLLO, "bridge.md": BRIDGE, "fleming.md": FLEMING})


def test_the_answer_leads_with_the_phrase_verified_inside_its_quotation(library):
    reader = SpanReader(likes=("1969",), points=("from 1969 to 1972",))
    a = reason(library, "When did the Apollo program fly crewed missions?", generator=FakeGenerator(), reader=reader)
    first = a.statements[0]
    assert first.phrase is not None and first.phrase.text == "from 1969 to 1972"
    assert a.answer.startswith("from 1969 to 1972 [["), a.answer
    ref = next(r for r in first.references if first.phrase_in(r))
    lo, hi = first.phrase_in(ref)
    assert ref.quotation[lo:hi] == "from 1969 to 1972", "the phrase is a verified substring of the quotation"
    assert ref.start <= first.phrase.start < first.phrase.end <= ref.end and first.phrase.chunk_id == ref.chunk_id
    assert "1969 to 1972" in first.text and len(first.text) > len(first.phrase.text), "the statement keeps the sentence"
    data = a.to_dict()
    assert data["statements"][0]["answerPhrase"] == {"text": "from 1969 to 1972", "chunkId": ref.chunk_id,
                                                     "start": first.phrase.start, "end": first.phrase.end}
    assert "answerPhrase" not in data["statements"][1:] and Answer.from_dict(data).statements[0].phrase == first.phrase
    assert set(data) == {"answer", "citations", "gaps", "meta", "statements"}, "the spec's fields stay"


def test_the_phrase_offsets_are_the_documents(library):
    reader = SpanReader(likes=("1969",), points=("from 1969 to 1972",))
    a = reason(library, "When did the Apollo program fly crewed missions?", generator=FakeGenerator(), reader=reader)
    p, ref = a.statements[0].phrase, a.statements[0].references[0]
    text = library.document_text(ref.document_id)
    assert text[ref.start:ref.end] == ref.quotation and text[p.start:p.end] == p.text == "from 1969 to 1972"


def test_an_unsure_span_head_keeps_whole_sentences(library):
    q = "Why was the Apollo program started?"
    reader = SpanReader(likes=("started",), points=("to show what it could do in space",), margin=DEFAULT.headline_margin - 0.5)
    a = reason(library, q, generator=FakeGenerator(), reader=reader)
    assert a.statements and all(s.phrase is None for s in a.statements)
    assert not a.answer.startswith("to show"), "the prose is the sentences"
    sure = reason(library, q, generator=FakeGenerator(), reader=SpanReader(likes=("started",),
                                                                           points=("to show what it could do in space",)))
    assert sure.statements[0].phrase is not None, "the same question with a confident head gets its phrase"


def test_no_phrase_when_the_gate_is_unsure_or_without_a_reader(library):
    from localreason.reason import NOT_ANSWERED_GAP

    q = "When did the Apollo program fly crewed missions?"
    between = float(np.log(((DEFAULT.read_weak * DEFAULT.read_answers) ** 0.5) / (1 - (DEFAULT.read_weak * DEFAULT.read_answers) ** 0.5)))
    unsure = reason(library, q, generator=FakeGenerator(), reader=SpanReader(points=("from 1969 to 1972",), base=between))
    assert NOT_ANSWERED_GAP in unsure.gaps and all(s.phrase is None for s in unsure.statements), \
        "a phrase would claim an answer the gate doubts"
    plain = reason(library, q, generator=FakeGenerator())
    assert plain.statements and all(s.phrase is None for s in plain.statements)


def test_a_pronoun_phrase_is_named_by_the_naming_sentence(library):
    q = "Who rebuilt the bridge after the flood?"
    a = reason(library, q, generator=FakeGenerator(), reader=SpanReader(likes=("rebuilt", "flood"), points=(" he ",)))
    first = a.statements[0]
    assert [r.quotation[:20] for r in first.references] == ["John Rennie was the ", "After the flood of 1"], \
        "one statement: the sentence that names, then the one that says what he did"
    assert first.phrase is not None and first.phrase.text == "John Rennie" and first.phrase_in(first.references[0])
    assert a.answer.startswith("John Rennie [[")


PARTY = ("# Li Dazhao\n\nLi Dazhao was born in Hebei in 1889. He taught history at a school for ten years. In 1921 he "
         "joined the Party and led its northern bureau. The bureau met in a library.\n")  # fmt: skip


def test_the_name_sentences_away_and_the_predicate_are_one_statement_each_verified(library_of):
    """The issue's case: the name in sentence 1, "he joined the Party" in sentence 3: the first statement carries
    both sentences as references, each a verified quotation at its own offsets, and leads with the name."""
    lib = library_of({"li.md": PARTY, "bridge.md": BRIDGE})
    a = reason(lib, "Who joined the Party in 1921?", generator=FakeGenerator(),
               reader=SpanReader(likes=("joined", "party"), points=(" he ",)))  # fmt: skip
    first = a.statements[0]
    assert [r.quotation for r in first.references] == ["Li Dazhao was born in Hebei in 1889.",
                                                       "In 1921 he joined the Party and led its northern bureau."]
    text = lib.document_text(first.references[0].document_id)
    assert all(text[r.start:r.end] == r.quotation for r in first.references), "each reference is verified in place"
    assert first.references[0].end < first.references[1].start, "in the document's order"
    assert first.phrase is not None and first.phrase.text == "Li Dazhao" and a.answer.startswith("Li Dazhao [[")
    assert a.meta["citationsDropped"] == 0
    assert len(a.to_dict()["statements"][0]["references"]) == 2
    assert not any("He taught history" in r.quotation for r in first.references), "the sentence between is not quoted"
    plain = reason(lib, "When did the bureau meet in a library?", generator=FakeGenerator(),
                   reader=SpanReader(likes=("bureau", "library")))  # fmt: skip
    assert len(plain.statements[0].references) == 1, "a question that asks no name: one sentence, one reference"


def test_a_name_in_the_sentence_before_leads_when_the_head_points_there(library):
    q = "Who discovered penicillin?"  # the lead names a hospital and a city: the naming rule alone would not fire
    reader = SpanReader(likes=("penicillin",), points=("St Mary's Hospital",), margin=0.75, before=("Alexander Fleming",),
                        before_margin=0.85)  # fmt: skip
    a = reason(library, q, generator=FakeGenerator(), reader=reader)
    first = a.statements[0]
    assert first.references[0].quotation.startswith("Alexander Fleming was"), "the sentence before is quoted first"
    assert first.references[1].quotation.startswith("In 1928 he discovered"), "and the sentence it names for with it"
    assert first.phrase is not None and first.phrase.text == "Alexander Fleming" and a.answer.startswith("Alexander Fleming [[")
    assert any("he discovered penicillin" in r.quotation for s in a.statements for r in s.references)
    text = library.document_text(first.references[0].document_id)
    assert text[first.phrase.start:first.phrase.end] == "Alexander Fleming" and first.phrase_in(first.references[0])
    unsure = reason(library, q, generator=FakeGenerator(), reader=SpanReader(
        likes=("penicillin",), points=("St Mary's Hospital",), margin=0.75, before=("Alexander Fleming",), before_margin=-0.5))
    assert unsure.statements[0].phrase is None and "he discovered" in unsure.statements[0].references[0].quotation, \
        "a head that believes no phrase there changes nothing"


def test_points_before_asks_for_a_pronoun_and_a_better_phrase_before():
    Q = "Who was the first woman to win a Nobel Prize?"
    ctx = "Marie Curie was a physicist and chemist."
    text = "She was the first woman to win a Nobel Prize."
    quote = Quote("chk_a", text, 50, 1.0, context=ctx, phrase=(0, 23), phrase_margin=4.2, before=(0, 11), before_margin=2.0)
    assert points_before(Q, quote), "the phrase inside only opens with 'She': the name before is the answer"
    assert not points_before(Q, replace(quote, before_margin=0.0)), "no better than no phrase at all"
    assert not points_before(Q, replace(quote, text="Curie was the first woman to win a Nobel Prize.")), "no pronoun"
    assert not points_before(Q, replace(quote, phrase=(12, 23), phrase_margin=5.0)), "a real phrase inside that beats the one before"
    assert points_before(Q, replace(quote, phrase=(12, 23), phrase_margin=1.0)), "one that the phrase before beats"
    assert not points_before(Q, replace(quote, context="She was a physicist and chemist.", before=(0, 3))), "a pronoun before"
    assert not points_before(Q, replace(quote, before=None, before_margin=None))
    assert not points_before("When was the first Nobel Prize won?", quote), "the question does not ask who"
    assert not points_before(Q, replace(quote, context="They said Marie Curie was a chemist.", before=(9, 20))), \
        "the sentence before leans on a pronoun too: the name is further back"
    assert opens_with_reference("She was the first woman") and not opens_with_reference("Marie Curie")


def test_a_phrase_that_opens_with_a_pronoun_is_not_shown():
    sentence = "She was the first woman to win a Nobel Prize."
    quote = Quote("chk_a", sentence, 40, 1.0, phrase=(0, 23), phrase_margin=6.0)
    st = [statement(sentence, start=140)]
    assert with_phrase(st, quote, 140, "Who was the first woman to win a Nobel Prize?") == st


def test_a_phrase_that_refers_takes_no_name_from_its_own_sentence_however_many_statements_follow():
    """No naming sentence was found to join: the first name in the sentence that refers was shown as the answer
    when a second statement followed ("Pierre Curie" for who discovered radium)."""
    sentence = "She discovered radium in 1898, working beside her husband Pierre Curie."
    quote = Quote("chk_a", sentence, 40, 1.0, phrase=(0, 3), phrase_margin=6.0)
    for st in ([statement(sentence, start=140)],
               [statement(sentence, start=140), statement("The shed was cold and damp all winter.", start=300)]):
        assert with_phrase(st, quote, 140, "Who discovered radium?") == st


def statement(quotation: str, start: int = 100, chunk: str = "chk_a") -> Statement:
    return Statement(quotation, (Reference(chunk, quotation, "doc_a", start, start + len(quotation)),))


def test_with_phrase_checks_the_phrase_against_the_quotation():
    sentence = "The bridge was rebuilt in 1810 by the county."
    quote = Quote("chk_a", sentence, 40, 1.0, phrase=(26, 30), phrase_margin=DEFAULT.headline_margin + 1)
    st = [statement(sentence, start=140)]
    got = with_phrase(st, quote, 140, "When was the bridge rebuilt?")
    assert got[0].phrase == AnswerPhrase("1810", "chk_a", 166, 170)
    assert with_phrase(st, quote, 141, "When?") == st, "a phrase not where the quotation has it is not shown"
    assert with_phrase([statement("Another sentence entirely here.", 140)], quote, 140, "When?")[0].phrase is None
    assert with_phrase(st, replace(quote, phrase=(0, 40)), 140, "When?") == st, "most of the sentence is no phrase"
    assert with_phrase(st, quote, 140, "Was the bridge rebuilt by the county?") == st, "yes or no: the statement answers"
    assert with_phrase(st, replace(quote, phrase_margin=-1.0), 140, "When?", calibration=replace(DEFAULT, headline_margin=0.0)) == st
    assert with_phrase(st, replace(quote, phrase=None), 140, "When?") == st
    unsure = replace(quote, phrase_margin=DEFAULT.headline_margin - 1)  # sure enough for the disagreement rules
    assert DEFAULT.phrase_margin <= unsure.phrase_margin and with_phrase(st, unsure, 140, "When?") == st, \
        "the headline asks the span head for more than phrase_margin (bench.tune.headline)"


def test_compose_writes_the_phrase_with_its_token():
    st = statement("The bridge was rebuilt in 1810 by the county.")
    phrased = replace(st, phrase=AnswerPhrase("in\n1810", "chk_a", 123, 130))
    prose, cited = compose([phrased, statement("It is of stone.", chunk="chk_b")], {"chk_a": ("d", "A"), "chk_b": ("e", "B")})
    assert prose == "in 1810 [[chk_a]] It is of stone. [[chk_b]]" and len(cited) == 2


def test_references_and_names():
    assert is_reference("he") and is_reference("the company") and is_reference("its")
    assert not is_reference("the nation wanted") and not is_reference("George Eliot") and not is_reference("from 1969 to 1972") and not is_reference("the 1970s")
    s = "In 1969, Neil Armstrong and Buzz Aldrin landed."
    a, b = name_run(s, "Who landed?")
    assert s[a:b] == "Neil Armstrong"
    assert name_run("it was late.", "When?") is None


def test_best_phrase_maps_tokens_back_through_whitespace():
    from localreason.config import load_settings
    from localreason.models import resolve_embedding_model
    from pathlib import Path

    tok = load_tokenizer(resolve_embedding_model(load_settings(Path("/nonexistent-home"))).path)
    s = "It  ran from 1969\n to 1972."
    enc = tok.encode("When did it run?", pair_text(s, "Apollo  was a\nprogram."))
    starts, ends = np.zeros(len(enc.ids)), np.zeros(len(enc.ids))
    at = {t: i for i, t in enumerate(enc.tokens) if i > 6}
    starts[at["1969"]], ends[at["1972"]] = 5.0, 5.0
    starts[at["apollo"]], ends[at["program"]] = 9.0, 9.0  # the previous sentence: never the phrase of this one
    p = best_phrase(s, enc, starts, ends, "Apollo  was a\nprogram.")
    assert s[p.start:p.end] == "1969\n to 1972" and p.margin == pytest.approx(10.0)
    assert "Apollo  was a\nprogram."[p.before.start:p.before.end] == "Apollo  was a\nprogram", "the phrase before, mapped back"
    assert p.before.margin == pytest.approx(18.0)
    starts[at["1972"]], ends[at["1969"]] = 50.0, 50.0  # an end before its start is no phrase
    assert s[best_phrase(s, enc, starts, ends).start:best_phrase(s, enc, starts, ends).end] != "1972. 1969"


def test_a_rival_phrase_takes_its_share_of_the_mass_and_a_near_copy_does_not():
    tok = load_tokenizer(READER_DIR)
    s = "Apollo ran from 1961 to 1972, and Gemini ran from 1962 to 1966."
    enc = tok.encode("When did Apollo run?", pair_text(s))
    at = {t: i for i, t in reversed(list(enumerate(enc.tokens))) if i > 6}  # each token's first place
    starts, ends = np.full(len(enc.ids), -5.0), np.full(len(enc.ids), -5.0)
    starts[at["1961"]], ends[at["1972"]] = 6.0, 6.0
    starts[at["1961"] + 1] = 5.0  # "to 1972": a near-copy inside the phrase
    alone = best_phrase(s, enc, starts, ends)
    assert s[alone.start:alone.end] == "1961 to 1972" and alone.mass > 0.9
    later = {t: i for i, t in enumerate(enc.tokens) if i > 6}
    starts[later["1962"]], ends[later["1966"]] = 6.0, 6.0  # a rival: the sentence's other period
    rival = best_phrase(s, enc, starts, ends)
    assert rival.mass < 0.5 * alone.mass and rival.margin == pytest.approx(alone.margin)



@pytest.mark.parametrize("span, shown", [
    ('"manual', "manual"), ('manual"', "manual"), ('"manual"', "manual"), ('"manual",', "manual"),
    ("(the default", "the default"), ("ABORT.", "ABORT"), ("e.g.", "e.g."), ("“ort”", "ort"), (" 30 days ", "30 days"),
    ('"a" or "b"', '"a" or "b"'), ("(a) and (b)", "(a) and (b)"), ("don't", "don't"),
    ("<Directory>", "<Directory>"), ("[global]", "[global]"), ("[global],", "[global]"), ("<Directory", "Directory"),
])  # fmt: skip
def test_a_phrase_is_cut_where_its_words_are_not_where_a_token_ended(span, shown):
    """The span head's tokens can end on a quotation mark or a bracket whose partner is outside the phrase, or on
    the clause's punctuation (git-notes: the phrase was shown as `manual"`); the phrase shown is the words."""
    from localreason.reason.phrase import sure_phrase

    sentence = f"The default notes merge strategy is {span} unless notes.mergeStrategy is set."
    lo = sentence.index(span)
    got = sure_phrase(sentence, (lo, lo + len(span)), margin=9.0, threshold=4.0)
    assert got is not None and sentence[got[0]:got[1]] == shown


@pytest.mark.parametrize("sentence, span, shown", [
    ("GRUB reads its menu from /boot/grub/grub.cfg at boot.", "cfg", "/boot/grub/grub.cfg"),
    ("GRUB reads its menu from /boot/grub/grub.cfg at boot.", "/boot/grub/gr", "/boot/grub/grub.cfg"),
    ("A script can use systemd-cat(1) to write to the journal.", "systemd-cat(1", "systemd-cat(1)"),
    ("Debian uses the unified hierarchy (a.k.a. cgroups-v2) since Debian 11.", "unified hierarchy (a.k.a. cgroups-v2",
     "unified hierarchy (a.k.a. cgroups-v2)"),
    ("Pass --graph to draw the history.", "graph", "--graph"), ("The plan costs $250 a year.", "250", "$250"),
    ("The strategy is ABORT.", "ABORT", "ABORT"), ("See json_valid() for that.", "json_valid", "json_valid"),
    ("GRUB reads its menu from /boot/grub/grub.cfg at boot.", ".cfg", "/boot/grub/grub.cfg"),
    ("Pass --graph to draw the history.", "-graph", "--graph"),
    ("A script can use systemd-cat(1) to write to the journal.", "systemd-", "systemd-cat(1)"),
    ("The New York-based firm grew.", "New York", "New York"), ("The war of 1939-1945 ended.", "1939", "1939"),
    ("An Anglo-French treaty was signed.", "French", "French"),
])  # fmt: skip
def test_a_phrase_cut_inside_a_word_or_a_bracket_is_shown_whole(sentence, span, shown):
    """The span head's tokens are pieces of words: a phrase started inside "grub.cfg" was shown as "cfg", and one
    that ended before a closing bracket as "systemd-cat(1" (the fit manuals' headlines, 2026-12-07)."""
    from localreason.reason.phrase import sure_phrase

    lo = sentence.index(span)
    got = sure_phrase(sentence, (lo, lo + len(span)), margin=9.0, threshold=4.0)
    assert got is not None and sentence[got[0]:got[1]] == shown


def test_the_answer_shows_the_phrase_without_a_stray_quotation_mark(library_of):
    lib = library_of({"notes.md": "# git notes\n\nThe default notes merge strategy is \"manual\", unless "
                                  "notes.mergeStrategy is configured.\n"})
    reader = SpanReader(likes=("default",), points=('manual"',))
    a = reason(lib, "What is the default notes merge strategy?", generator=FakeGenerator(), reader=reader)
    first = a.statements[0]
    assert first.phrase is not None and first.phrase.text == "manual", first.phrase
    text = lib.document_text(first.references[0].document_id)
    assert text[first.phrase.start:first.phrase.end] == "manual"


class LiteralReader:
    """A sentence reader that, like the trained one, scores a sentence by whether it holds both the answer's words
    and the question's: "he discovered penicillin" alone holds no name."""

    def logits(self, question, pairs):
        return np.array([4.0 if "Fleming" in p[0] and "penicillin" in p[0] else -6.0 for p in pairs])


def test_a_sentence_that_refers_back_is_read_again_with_the_one_it_leans_on():
    from localreason.reason.read import read_with_referent

    naming = "Alexander Fleming was a Scottish physician."
    head = [Quote("c", "In 1928 he discovered penicillin in London.", 44, 1.0, context=naming),
            Quote("c", "Penicillin is an antibiotic.", 90, 0.5, context="Other text."),
            Quote("c", "The mould killed the bacteria.", 120, 0.4, context=naming)]
    pairs = [(q.text, q.context) for q in head]
    reader = LiteralReader()
    logits, joined = read_with_referent(reader, "Who discovered penicillin?", head, pairs, reader.logits("", pairs))
    assert list(logits) == [4.0, -6.0, -6.0] and joined == {0}, "the sentence that says 'he' answers, read with its name"
    sure = [*head[:2], Quote("c", "Fleming discovered penicillin.", 150, 0.4)]
    again = read_with_referent(reader, "Who?", sure, [(q.text, q.context) for q in sure],
                               reader.logits("", [(q.text, q.context) for q in sure]))  # fmt: skip
    assert again[1] == set() and list(again[0]) == [-6.0, -6.0, 4.0], "a sentence read alone answers: nothing read again"
    no_context = [replace(head[0], context="")]
    assert read_with_referent(reader, "Who?", no_context, [(no_context[0].text, "")], np.array([-6.0]))[1] == set()


def test_a_sentence_after_one_that_answers_alone_takes_no_credit_for_it():
    """Joined to the sentence before, "The rules fit on one page." reads as well as "Its founder, Mary Brown, wrote
    the rules." does alone: the credit is that sentence's, so the joined reading does not count."""
    from localreason.reason.candidates import refers_back
    from localreason.reason.read import read_with_referent

    class NamingReader:
        def logits(self, question, pairs):
            return np.array([0.5 if "Mary Brown" in p[0] else -8.0 for p in pairs])

    head = [Quote("c", "The rules fit on one page.", 40, 1.0, context="Its founder, Mary Brown, wrote the rules.")]
    pairs = [(q.text, q.context) for q in head]
    assert read_with_referent(NamingReader(), "Who wrote the rules?", head, pairs, np.array([-8.0]))[1] == set()
    assert refers_back("The band split in 1970.") and refers_back("After the war the band toured.")
    assert not refers_back("The Eiffel Tower was designed by the firm of Gustave Eiffel."), "it names its subject"


def test_narrowing_an_unsure_offer_keeps_the_sentence_that_names_with_the_closest():
    from localreason.reason.offer import Offer

    naming, best, other = (Quote("c", t, i * 50, 1.0) for i, t in enumerate(
        ("Alexander Fleming was a physician.", "In 1928 he discovered penicillin.", "Penicillin is a drug.")))
    joined = Offer([naming, best, other], 2, True, joined=True)
    assert joined.narrowed() == Offer([naming, best], 2, True, joined=True), "a smaller prompt keeps the pair"
    assert Offer([best, other], 1, True).narrowed() == Offer([best], 1, True)


def test_a_phrase_keeps_the_words_that_bound_it_and_a_question_is_no_phrase():
    """"12 characters long" for "at least 12 characters long" says an exact length for a minimum; "How many days"
    (a description that opens as a question does) answers nothing (a probe's findings)."""
    from localreason.reason.phrase import sure_phrase

    def shown(sentence: str, phrase: str) -> str | None:
        at = sentence.index(phrase)
        span = sure_phrase(sentence, (at, at + len(phrase)), 9.0, 4.0)
        return None if span is None else sentence[span[0]:span[1]]

    assert shown("Passwords must be at least 12 characters long.", "12 characters long") == \
        "at least 12 characters long"  # fmt: skip
    assert shown("He valued loyalty more than money.", "money") == "money", "a bound of a number only"
    assert shown("The flood came when the river broke its banks.", "when the river broke its banks") is not None
    assert shown("Keep up to 3 backups.", "3 backups") == "up to 3 backups"
    assert shown("The tank holds about 40 litres.", "40 litres") == "about 40 litres"
    assert shown("A book about cats.", "cats") == "cats", "a bound before a number only"
    assert shown("How many days deleted files are kept in the trash.", "How many days") is None
    assert shown("The trash keeps files for 14 days.", "14 days") == "14 days"
    assert shown("The default depth was changed from 5 to 3.", "5 to 3") == "from 5 to 3", "which came first"
    for sentence, phrase, whole in (("Fines are up to $250 a day.", "$250", "up to $250"),
                                    ("Back it up at least once a day.", "once a day", "at least once a day"),
                                    ("Doors open no earlier than 7 pm.", "7 pm", "no earlier than 7 pm"),
                                    ("Refunds are paid within 24 hours.", "24 hours", "within 24 hours"),
                                    ("It cost well over \u00a35 million.", "\u00a35 million", "well over \u00a35 million")):
        assert shown(sentence, phrase) == whole


@pytest.mark.parametrize("phrase, code", [
    ("--hostname", True), ("json_valid", True), ("/var/lib/apt/extended_states", True), ("systemd-cat(1)", True),
    ("62", True), ("3.07", True), ("iptables-translate and ip6tables", False), ("LXDE", False),
    ("the Netatalk daemon", False), ("two-year", False), ("", False), ("$250", True), ("40%", True),
    ("CP437", True), ("~/.bashrc", True), ("grub.cfg", True), ("json_valid()", True), ("--no-color", True),
    ("Coca-Cola", False), ("Austria-Hungary", False), ("Wi-Fi", False), ("U.S.", False), ("a.m.", False),
    ("3 p.m.", False), ("No. 5", False), ("-", False), ("/", False), ("$", False), ("x-ray", False),
])  # fmt: skip
def test_a_phrase_written_as_code_or_a_figure(phrase, code):
    from localreason.reason.candidates import written_as_code

    assert written_as_code(phrase) is code


def test_a_phrase_written_as_code_needs_no_second_reading_and_prose_does():
    """The passage reader, trained on prose, gave "--hostname" 0.35 of its mass and "json_valid" 0.08 where the span
    head was sure of them (the fit manuals' headline records, bench.tune.headline): such a phrase leads on the
    span head's margin; a phrase of words still needs the second reading."""
    sentence = "The only mandatory parameter is --hostname, which names the new machine."
    quote = Quote("chk_a", sentence, 0, 1.0, phrase=(31, 41), phrase_margin=DEFAULT.headline_margin + 1)
    st = [statement(sentence, start=100)]
    never = lambda best, text: False  # noqa: E731  (a second reading that never agrees)
    got = with_phrase(st, quote, 100, "Which parameter is mandatory?", confirm=never)
    assert got[0].phrase is not None and got[0].phrase.text == "--hostname"
    prose = "The only mandatory parameter names the new machine for the host."
    worded = Quote("chk_a", prose, 0, 1.0, phrase=(37, 48), phrase_margin=DEFAULT.headline_margin + 1)
    st = [statement(prose, start=100)]
    assert with_phrase(st, worded, 100, "Which parameter is mandatory?", confirm=never) == st
