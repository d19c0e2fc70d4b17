"""The passage reader's view (reason/passage.py) and its path through reason (read.passage_reading, phrase.py):
windows of a chunk's sentences, where each token lies, what a window's outputs say, the phrase shown only when
the span head is sure of it and it agrees with the question."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from localreason.models import READER_DIR
from localreason.reason import reason
from localreason.reason.calibration import DEFAULT
from localreason.reason.candidates import Quote
from localreason.reason.passage import around, windows_for
from localreason.reason.read import UNREAD, passage_reading
from localreason.readers import Span, WindowRead, load_tokenizer, read_window, token_sentences, window_text

from fakes import FakeGenerator

APOLLO = ("# Apollo\n\nThe Apollo program was the third United States human spaceflight program. Apollo ran from "
          "1961 to 1972, and was supported by the two-man Gemini program which ran concurrently with it from 1962 "
          "to 1966. It was run by NASA.\n")  # fmt: skip
LANDING = ("# Landing\n\nNeil Armstrong and Buzz Aldrin flew the lunar module. The two men performed the first "
           "landing at the Sea of Tranquility in July 1969. Harrison Schmitt walked on the Moon with Apollo 17.\n")  # fmt: skip


class WindowReader:
    """A passage reader (format 3) from words: a sentence's logit is +4 per ``likes`` word in it, ``base`` else;
    the phrase in each sentence is the first of ``points`` found in it, with ``probability``; a sentence with none
    gets a phrase of its first word at probability 0.01. Records the windows it was given."""

    format = 3

    def __init__(self, likes=(), points=(), probability=0.8, base=-4.0) -> None:
        self.likes, self.points, self.probability, self.base = likes, points, probability, base
        self.windows: list[list[str]] = []

    def read_windows(self, question, windows):
        out = []
        for w in windows:
            self.windows.append(list(w))
            logits = np.array([self.base + 4.0 * sum(x in s.lower() for x in self.likes) for s in w])
            spans = []
            for i, s in enumerate(w):
                hit = next((p for p in self.points if p in s), None)
                spans.append(Span(i, s.find(hit), s.find(hit) + len(hit), self.probability, 6.0, self.probability) if hit
                             else Span(i, 0, len(s.split()[0]), 0.01, -3.0, 0.01))  # fmt: skip
            out.append(WindowRead(float(logits.max()), logits, spans, 0.05))
        return out


def test_window_text_joins_squeezed_sentences_and_maps_back():
    text, ranges, maps = window_text(["Apollo  ran\nfrom 1961.", "It was run by NASA."])
    assert text == "Apollo ran from 1961. It was run by NASA."
    assert [text[a:b] for a, b in ranges] == ["Apollo ran from 1961.", "It was run by NASA."]
    assert "Apollo  ran\nfrom 1961."[maps[0][11]:maps[0][14] + 1] == "from"


def test_every_window_token_knows_its_sentence():
    tok = load_tokenizer(READER_DIR, 320)
    text, ranges, _ = window_text(["Apollo ran from 1961 to 1972.", "It was run by NASA."])
    enc = tok.encode("When did Apollo run?", text)
    where = token_sentences(enc, ranges)
    words = {i: [enc.tokens[t] for t in np.flatnonzero(where == i)] for i in (0, 1)}
    assert words[0][:2] == ["apollo", "ran"] and words[1][-1] == "." and "nasa" in words[1]
    assert all(where[t] == -1 for t, s in enumerate(enc.sequence_ids) if s != 1), "the question is in no sentence"


def test_read_window_finds_the_best_phrase_in_any_sentence_and_its_probability():
    tok = load_tokenizer(READER_DIR, 320)
    sents = ["Armstrong and Aldrin flew the module.", "The two men performed the first landing."]
    text, ranges, maps = window_text(sents)
    enc = tok.encode("Who performed the first landing?", text)
    n = len(enc.ids)
    starts, ends, marks = np.full(n, -5.0), np.full(n, -5.0), np.zeros(n)
    where = token_sentences(enc, ranges)
    first = np.flatnonzero(where == 0)
    last = next(t for t in first if enc.offsets[t][1] == len("Armstrong and Aldrin"))
    starts[first[0]], ends[last] = 6.0, 6.0  # "armstrong and aldrin"
    marks[where == 1] = 3.0
    r = read_window(enc, ranges, maps, 1.5, starts, ends, marks)
    best = r.best
    assert best.sentence == 0 and sents[0][best.start:best.end] == "Armstrong and Aldrin"
    assert 0.5 < best.probability < 1 and r.null < 0.01 and best.margin > 10
    assert r.sentences[1] == pytest.approx(3.0) and r.sentences[0] == pytest.approx(0.0)


def test_around_takes_the_sentences_before_first_and_stays_within_its_words():
    spans = [(i * 10, f"w{i} " * 5) for i in range(10)]
    run = around(spans, 5, words=15)
    assert [s for s, _ in run] == [30, 40, 50]
    assert around(spans, 0, words=15)[0][0] == 0 and len(around(spans, 9, words=1000)) == 10


def test_windows_for_reads_each_passage_once():
    text = ("Apollo ran from 1961 to 1972 as planned. The Gemini program ran from 1962 to 1966. "
            "It was run by NASA from Houston.")
    q = [Quote("c", s, text.index(s), 0.0) for s in ("The Gemini program ran from 1962 to 1966.",
                                                       "Apollo ran from 1961 to 1972 as planned.")]  # fmt: skip
    q.append(Quote("missing", "Elsewhere.", 0, 0.0))
    windows, placed = windows_for(q, {"c": text})
    assert len(windows) == 1 and [t for _, t in windows[0].sentences][0].startswith("Apollo")
    assert placed[0].sentence == 1 and placed[1].sentence == 0 and placed[2] is None


def test_passage_reading_gives_sentence_logits_phrases_and_the_phrase_before():
    text = "Neil Armstrong flew the lunar module down. He stepped out first, in July 1969."
    quotes = [Quote("c", "He stepped out first, in July 1969.", text.index("He"), 0.0,
                    context="Neil Armstrong flew the lunar module down."),
              Quote("gone", "Not in the packet.", 0, 0.0)]  # fmt: skip
    reader = WindowReader(likes=("stepped",), points=("Neil Armstrong", "July 1969"))
    logits, fields = passage_reading(reader, "Who stepped out first?", quotes, {"c": text})
    assert logits[0] == 0.0 and logits[1] == UNREAD and fields[1] == {}
    f = fields[0]
    assert quotes[0].text[f["phrase"][0]:f["phrase"][1]] == "July 1969" and f["phrase_probability"] == 0.8
    assert quotes[0].context[f["before"][0]:f["before"][1]] == "Neil Armstrong" and f["no_answer"] == 0.05


@pytest.fixture
def library(library_of):
    return library_of({"apollo.md": APOLLO, "landing.md": LANDING})


def test_a_sure_phrase_of_the_passage_reader_leads_the_answer(library):
    reader = WindowReader(likes=("1961",), points=("from 1961 to 1972",))
    a = reason(library, "When did the Apollo program run?", generator=FakeGenerator(), reader=reader)
    assert a.statements[0].phrase is not None and a.statements[0].phrase.text == "from 1961 to 1972"
    assert reader.windows and all(len(w) >= 1 for w in reader.windows)


def test_an_unsure_phrase_is_not_shown(library):
    reader = WindowReader(likes=("1961",), points=("from 1961 to 1972",), probability=0.3)
    a = reason(library, "When did the Apollo program run?", generator=FakeGenerator(), reader=reader,
               calibration=replace(DEFAULT, phrase_probability=0.5))  # fmt: skip
    assert a.statements and a.statements[0].phrase is None and "1961" in a.statements[0].text


def test_a_phrase_of_the_wrong_kind_is_vetoed(library):
    reader = WindowReader(likes=("landing",), points=("the first landing",))
    a = reason(library, "Who performed the first landing?", generator=FakeGenerator(), reader=reader)
    assert a.statements and a.statements[0].phrase is None
    off = reason(library, "Who performed the first landing?", generator=FakeGenerator(), reader=reader,
                 calibration=replace(DEFAULT, type_veto=False))  # fmt: skip
    assert off.statements[0].phrase is not None and off.statements[0].phrase.text == "the first landing"


def test_a_phrase_is_shown_only_when_the_passage_reader_agrees(library):
    from test_phrase import SpanReader

    q = "When did the Apollo program run?"

    def ask(passage, needs=False):
        reader = SpanReader(likes=("1961",), points=("from 1961 to 1972",), margin=6.0)
        reader.passage, reader.needs_second_reading = passage, needs
        return reason(library, q, generator=FakeGenerator(), reader=reader).statements[0]

    agreeing = WindowReader(points=("1961 to 1972",), probability=0.6)
    first = ask(agreeing)
    assert first.phrase is not None and first.phrase.text == "from 1961 to 1972", "the same phrase, near enough"
    assert len(agreeing.windows) == 1 and any("1961 to 1972" in s for s in agreeing.windows[0]), "one window read"
    assert ask(WindowReader(points=("1962 to 1966",), probability=0.9)).phrase is None, "it points elsewhere"
    assert ask(WindowReader(points=("1961 to 1972",), probability=0.1)).phrase is None, "it is not sure"
    assert ask(None, needs=True).phrase is None, "the packaged reader without its passage reader shows none"
    assert ask(None).phrase is not None, "a reader that needs no second reading: its margin decides"

    def figure(passage, needs=True):
        reader = SpanReader(likes=("1961",), points=("1961",), margin=DEFAULT.headline_margin + 1)
        reader.passage, reader.needs_second_reading = passage, needs
        return reason(library, "In which year did the Apollo program start?", generator=FakeGenerator(),
                      reader=reader).statements[0]  # fmt: skip

    elsewhere = WindowReader(points=("1962 to 1966",), probability=0.9)
    assert figure(elsewhere).phrase is not None and figure(elsewhere).phrase.text == "1961", \
        "a figure leads on the span head's margin: the passage reader is not asked"
    assert figure(None).phrase is None, "without its passage reader the packaged reader shows none, not even a figure"


# ---------------------------------------------------------------- the packaged passage reader


def test_the_passage_reader_ships_beside_the_reader_within_the_size_limit():
    from localreason.models import PASSAGE_DIR, READER_FORMATS, read_reader_info, reader_shipped

    assert reader_shipped(PASSAGE_DIR), "the passage reader is committed in localreason/models/passage"
    info = read_reader_info(PASSAGE_DIR)
    assert info.meta["format"] == 3 in READER_FORMATS and {"squad-train", "squad2-unanswerable", "manual-questions"} \
        <= set(info.meta["sources"])  # fmt: skip
    assert not {"new_wiki", "reddit", "amazon", "apache"} & set(info.meta["sources"]), "held-out kinds stay out"
    assert all(v["licence"] for v in info.meta["sources"].values()), "every training source names its licence"
    assert info.meta["int8_max_logit_difference"] < 0.25 and info.meta["int8_same_phrase"] >= 0.9
    size = sum(p.stat().st_size for d in (READER_DIR, PASSAGE_DIR) for p in d.iterdir()) / 1e6
    assert size <= 60, f"the two readers are {size:.0f} MB together"
    card = (PASSAGE_DIR / "README.md").read_text()
    for needed in ("all-MiniLM-L6-v2", "Apache-2.0", "CC BY-SA 4.0", "GPL-2+", "public domain", "3,812 of the epoch",
                   "bench.train.passage_reader", "bench.train.compress", "no GPU"):  # fmt: skip
        assert needed in card, needed


def test_the_packaged_passage_reader_reads_across_sentences():
    from localreason.models import PASSAGE_DIR
    from localreason.readers import Reader, packaged_reader

    reader = Reader(PASSAGE_DIR)
    window = ["Neil Armstrong and Buzz Aldrin flew the lunar module down.",
              "The two men performed the first landing at the Sea of Tranquility."]  # fmt: skip
    r = reader.read_windows("Who performed the first landing on the Moon?", [window])[0]
    best = r.best
    assert best.sentence == 0 and window[0][best.start:best.end] in ("Neil Armstrong and Buzz Aldrin", "Buzz Aldrin",
                                                                     "Neil Armstrong"), "the name is a sentence away"
    eliot = reader.read_windows("Who wrote the novel Middlemarch?", [["Middlemarch is set in a provincial town.",
                                                                       "Middlemarch was written by George Eliot."]])[0]
    assert int(np.argmax(eliot.sentences)) == 1 and eliot.best.mass > 0.5 and eliot.null < 0.05
    off = reader.read_windows("Who wrote the novel Middlemarch?", [["The router warranty lasts two years."]])[0]
    assert off.null > 0.5 and off.logit < eliot.logit, "no answer in a window on another topic"
    shipped = packaged_reader()
    assert shipped.needs_second_reading and shipped.passage is not None and shipped.passage.format == 3
