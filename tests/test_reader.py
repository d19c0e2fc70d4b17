"""The trained reader (readers.py, reason/read.py): where it decides, how it fails, what ships; the naming
rule; the numbered answer prose."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from localreason.config import load_settings
from localreason.errors import ModelError, ValidationError
from localreason.library import Library
from localreason.models import READER_DIR, READER_FORMAT, READER_FORMATS, read_reader_info, reader_shipped
from localreason.reason import NO_EVIDENCE_ANSWER, NOT_ANSWERED_GAP, reason
from localreason.reason.calibration import DEFAULT
from localreason.reason.candidates import Quote
from localreason.reason.offer import asks_for_name, leans_on_reference, naming_sentence
from localreason.reason.read import read
from localreason.readers import Reader, heading_text, pair_text

READ_CANDIDATES = DEFAULT.read_candidates

from fakes import FakeEmbedder, FakeGenerator

VENDOR = "# Router manual (vendor)\n\n## Warranty\n\nThe router warranty lasts two years from the date of purchase.\n\n" \
         "## Reset\n\nTo reset the router hold the pinhole button for thirty seconds.\n"  # fmt: skip
SHOP = "# Router offer (shop)\n\n## Warranty\n\nThe router warranty lasts five years when bought in our shop.\n"
BRIDGE = ("# Town history\n\nJohn Rennie was the county's chief engineer for thirty years. After the flood of 1810 he "
          "rebuilt the bridge in stone. The old wooden bridge had stood for a century.\n")  # fmt: skip


class FakeReader:
    """Logits from words: +4 for each ``likes`` word in the sentence; every other sentence ``base``."""

    def __init__(self, likes=(), base=-4.0, fail=False) -> None:
        self.likes, self.base, self.fail = likes, base, fail
        self.calls: list[tuple[str, list]] = []

    def logits(self, question, candidates):
        self.calls.append((question, list(candidates)))
        if self.fail:
            raise ModelError("The reader's model file is damaged.")
        return np.array([self.base + 4.0 * sum(w in s.lower() for w in self.likes) for s, *_ in candidates])


@pytest.fixture
def library(library_of):
    return library_of({"vendor.md": VENDOR, "shop.md": SHOP, "bridge.md": BRIDGE})


def quotations(answer) -> list[str]:
    return [r.quotation for s in answer.statements for r in s.references]


def test_the_reader_reorders_the_best_sentences_and_carries_its_estimate(library):
    q = "How long is the router warranty?"
    plain = reason(library, q, generator=FakeGenerator())
    reader = FakeReader(likes=("shop",))
    a = reason(library, q, generator=FakeGenerator(), reader=reader)
    assert reader.calls and reader.calls[0][0] == q
    assert 1 < len(reader.calls[0][1]) <= READ_CANDIDATES
    assert "shop" in quotations(a)[0], "the reader's choice leads"
    assert quotations(plain)[0] != quotations(a)[0], "the fake reader disagrees with the features' ranking"
    assert a.meta["citationsDropped"] == 0 and a.timings.read_ms > 0


def test_the_calibration_passed_to_reason_reaches_the_reader(library):
    from dataclasses import replace

    reader = FakeReader(likes=("warranty",))
    reason(library, "How long is the router warranty?", generator=FakeGenerator(), reader=reader,
           calibration=replace(DEFAULT, read_candidates=2))  # fmt: skip
    assert len(reader.calls[0][1]) == 2, "the reader reads as many sentences as the calibration says"


def test_read_keeps_every_sentence_and_gives_probabilities_to_the_ones_it_read():
    quotes = [Quote("c", f"Sentence number {i} about warranty.", i * 40, 10.0 - i, 0.1) for i in range(READ_CANDIDATES + 5)]
    done = read(FakeReader(likes=("number 7 ",), base=-2.0), "Which sentence?", quotes).quotes
    assert len(done) == len(quotes) and {q.start for q in done} == {q.start for q in quotes}
    assert done[0].start == 7 * 40 and done[0].reader > 0.5
    assert abs(sum(q.probability for q in done) - 1.0) < 1e-9
    assert all(q.reader is None and q.probability == 0.0 for q in done[READ_CANDIDATES:]), "unread ones keep their place"


def test_the_reader_gate_stops_refuses_and_marks(library):
    q = "How long is the router warranty?"

    def logit(p):
        return float(np.log(p / (1 - p)))

    below = logit(DEFAULT.read_weak / 2)
    between = logit((DEFAULT.read_weak * DEFAULT.read_answers) ** 0.5)
    none = reason(library, q, generator=FakeGenerator(), reader=FakeReader(likes=(), base=below))
    assert none.no_evidence and none.answer == NO_EVIDENCE_ANSWER and none.statements == ()
    unsure = reason(library, q, generator=FakeGenerator(), reader=FakeReader(likes=(), base=between))
    assert not unsure.no_evidence and NOT_ANSWERED_GAP in unsure.gaps and len(unsure.statements) == 1
    sure = reason(library, q, generator=FakeGenerator(), reader=FakeReader(likes=("warranty",), base=0.0))
    assert not sure.no_evidence and NOT_ANSWERED_GAP not in sure.gaps


def test_a_scoped_question_is_still_answered_when_the_reader_finds_nothing(library):
    vendor = next(d for d in library.documents() if d.title.startswith("Router manual"))
    a = reason(library, "How long is the router warranty?", generator=FakeGenerator(), document_id=vendor.id,
               reader=FakeReader(base=-8.0))  # fmt: skip
    assert not a.no_evidence and a.statements, "the spec answers scoped weak evidence, with a gap"


def test_a_failing_reader_falls_back_to_the_ranking_with_a_notice(isolated_home, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "vendor.md").write_text(VENDOR)
    broken = FakeReader(fail=True)
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator(),
                  reader=broken)  # fmt: skip
    told: list[str] = []
    lib.notice = told.append
    lib.ingest([docs], "work")
    a = lib.ask("How long is the router warranty?")
    assert a.statements and "warranty lasts two years" in quotations(a)[0]
    assert len(told) == 1 and "reader is not used" in told[0] and "damaged" in told[0]
    lib.ask("How do I reset the router?")
    assert len(broken.calls) == 1 and len(told) == 1, "not tried again, not said again"
    lib.close()


def test_the_reader_setting(isolated_home, monkeypatch, tmp_path):
    assert load_settings(isolated_home).reader == "auto"
    with pytest.raises(ValidationError, match="reader must be one of auto, off"):
        load_settings(isolated_home, reader="sometimes")
    off = Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder())
    assert off.reader is None
    monkeypatch.setattr("localreason.models.READER_DIR", tmp_path / "nowhere")
    absent = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder())
    told: list[str] = []
    absent.notice = told.append
    assert absent.reader is None and len(told) == 1 and "missing" in told[0] and "reinstall" in told[0], \
        "a damaged installation ranks without the reader, and says so"
    assert absent.reader is None and len(told) == 1, "once"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "reader.json").write_text(json.dumps({"format": READER_FORMAT}))
    monkeypatch.setattr("localreason.models.READER_DIR", broken)
    missing = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder())
    told.clear()
    missing.notice = told.append
    assert missing.reader is None and missing.reader is None
    assert len(told) == 1 and "incomplete" in told[0] and "ranked without it" in told[0]


def test_a_reader_folder_that_is_not_ours_is_refused_with_a_reason(tmp_path):
    with pytest.raises(ModelError, match="incomplete"):
        read_reader_info(tmp_path)
    for name in ("model.xml", "model.bin", "tokenizer.json"):
        (tmp_path / name).write_text("x")
    (tmp_path / "reader.json").write_text("{not json")
    with pytest.raises(ModelError, match="cannot be read"):
        read_reader_info(tmp_path)
    (tmp_path / "reader.json").write_text(json.dumps({"format": max(READER_FORMATS) + 1}))
    with pytest.raises(ModelError, match="input format"):
        read_reader_info(tmp_path)
    (tmp_path / "reader.json").write_text(json.dumps({"format": READER_FORMAT}))
    with pytest.raises(ModelError, match="Could not load the reader"):
        Reader(tmp_path).logits("q?", [("a sentence.", "")])


def test_models_lists_the_reader(isolated_home):
    from localreason.models import describe_models

    row = next(r for r in describe_models(load_settings(isolated_home)) if r["kind"] == "reader")
    assert row["ok"] and row["setting"] == "auto"
    assert row["path"] == str(READER_DIR) if reader_shipped() else "not shipped" in row["problem"]
    off = next(r for r in describe_models(load_settings(isolated_home, reader="off")) if r["kind"] == "reader")
    assert off["path"] == "" and "off" in off["problem"]
    passage = next(r for r in describe_models(load_settings(isolated_home)) if r["kind"] == "passage reader")
    assert passage["ok"] and passage["path"].endswith("passage") and passage["name"] == "localreason-passage-reader"


def test_the_model_card_names_base_data_and_licences():
    card = (READER_DIR / "README.md").read_text()
    for needed in ("all-MiniLM-L6-v2", "Apache-2.0", "SQuAD 1.1 train", "SQuAD 2.0 dev", "bench.train.reader", "CPU"):
        assert needed in card, needed
    sources = read_reader_info(READER_DIR).meta["sources"]
    for name, source in sources.items():  # every licence reader.json names is in the card too
        for licence in source["licence"].replace(" (the project's own)", "").split(" or "):
            assert licence.strip() in card, (name, licence)


def test_pair_text_puts_the_sentence_before_its_context():
    assert pair_text("He rebuilt it.", "John Rennie was an engineer.") == "He rebuilt it. [SEP] John Rennie was an engineer."
    assert pair_text("  One\nline. ", "") == "One line."
    assert pair_text("Use -b.", "Options", "htpasswd > Options") == "Use -b. [SEP] Options [SEP] htpasswd > Options"
    assert pair_text("Use -b.", "", "htpasswd") == "Use -b. [SEP]  [SEP] htpasswd", "the heading keeps its place"


def test_the_heading_a_reader_is_shown_is_the_title_and_the_nearest_section():
    assert heading_text("mod_rewrite", ("Apache Module mod_rewrite", "RewriteRule Flags")) == \
        "mod rewrite > RewriteRule Flags"
    assert heading_text("Super_Bowl_50") == "Super Bowl 50" and heading_text("", ()) == ""
    assert heading_text("Guide", ("Guide",)) == "Guide", "a section named as its document once"
    assert heading_text("000.txt") == "" and heading_text("2024-01.md", ("Setup",)) == "Setup", "a number names nothing"
    assert heading_text("notes.txt") == "notes.txt" and heading_text("Web_2.0") == "Web 2.0"
    long = heading_text("word " * 60)
    assert len(long) <= 120 and not long.endswith(" ")


def test_the_phrase_before_stays_inside_the_sentence_before_when_a_heading_follows():
    """span_tokens: the context a phrase 'before' may come from is the sentence before, not the heading."""
    from localreason.readers import load_tokenizer, span_tokens

    tok = load_tokenizer(READER_DIR)
    enc = tok.encode("Who built it?", pair_text("He built it.", "John was there.", "Bridge history"))
    inside, context = span_tokens(enc, len("He built it."), len("John was there."))
    words = [enc.tokens[t] for t in np.flatnonzero(context)]
    assert words == ["john", "was", "there", "."] and [enc.tokens[t] for t in np.flatnonzero(inside)][0] == "he"
    _, to_end = span_tokens(enc, len("He built it."))
    assert "bridge" in [enc.tokens[t] for t in np.flatnonzero(to_end)], "without its length: to the end"


class HeadingReader(FakeReader):
    reads_headings = True


def test_a_reader_trained_with_headings_reads_each_sentence_with_its_chunks_heading():
    quotes = [Quote("a", "The warranty lasts two years.", 0, 2.0, 0.1), Quote("b", "Shipping is free.", 0, 1.0, 0.1)]
    with_heads = HeadingReader(likes=("warranty",))
    read(with_heads, "How long is the warranty?", quotes, headings={"a": "Router > Warranty"})
    assert with_heads.calls[0][1] == [("The warranty lasts two years.", "", "Router > Warranty"),
                                      ("Shipping is free.", "", "")]  # fmt: skip
    plain = FakeReader(likes=("warranty",))
    read(plain, "How long is the warranty?", quotes, headings={"a": "Router > Warranty"})
    assert plain.calls[0][1] == [("The warranty lasts two years.", ""), ("Shipping is free.", "")], "one that does not: as before"


def test_reason_gives_a_heading_reader_the_evidences_titles_and_sections(library):
    reader = HeadingReader(likes=("warranty",))
    reason(library, "How long is the router warranty?", generator=FakeGenerator(), reader=reader)
    headings = {c[2] for c in reader.calls[0][1]}
    assert headings and all(h for h in headings), headings
    assert any(h.startswith(("vendor", "shop", "bridge", "Router", "Shop")) for h in headings), headings


# ---------------------------------------------------------------- the packaged reader

def test_the_reader_ships_in_the_package():
    assert reader_shipped(), "the trained reader is committed in localreason/models/reader (bench/train/reader.py)"
    info = read_reader_info(READER_DIR)
    assert info.meta["format"] == READER_FORMAT and set(info.meta["sources"]) >= {"squad-train", "squad2-unanswerable"}
    assert all(v["licence"] for v in info.meta["sources"].values()), "every training source names its licence"
    assert info.meta["export_max_logit_difference"] < 0.1 and info.meta["export_same_phrase"] >= 0.9
    assert info.meta["trained_on"].startswith("cpu"), "the card and reader.json say which run made the weights"


def test_the_packaged_reader_finds_the_answering_sentence():
    reader = Reader(READER_DIR)
    info = read_reader_info(READER_DIR)
    assert info.meta["format"] == READER_FORMAT and "sources" in info.meta
    assert (READER_DIR / "README.md").is_file(), "a model card ships beside the weights"
    size = sum(p.stat().st_size for p in READER_DIR.iterdir()) / 1e6
    assert size <= 60, f"the reader is {size:.0f} MB"
    cases = [
        ("When was the bridge rebuilt in stone?",
         ["The old wooden bridge had stood for a century.", "After the flood of 1810 the bridge was rebuilt in stone.",
          "The county employed an engineer."]),
        ("What colour is the reset button?",
         ["The router has four network ports.", "The reset button on the back is red.", "Reset the router weekly."]),
        ("Who wrote the novel Middlemarch?",
         ["Middlemarch is set in a provincial town.", "Middlemarch was written by George Eliot.",
          "The novel appeared in eight parts."]),
    ]  # fmt: skip
    for question, sentences in cases:
        logits = reader.logits(question, [(s, "") for s in sentences])
        assert int(np.argmax(logits)) == 1, (question, logits)
    p = reader.probabilities("Who wrote the novel Middlemarch?", [("The router warranty lasts two years.", "")])
    assert p[0] < 0.2, "a sentence on another topic is not an answer"


def test_the_packaged_reader_points_at_the_answer_phrase():
    reader = Reader(READER_DIR)
    cases = [
        ("When was the bridge rebuilt in stone?", "After the flood of 1810 the bridge was rebuilt in stone.", "1810"),
        ("Who wrote the novel Middlemarch?", "Middlemarch was written by George Eliot in 1871.", "George Eliot"),
        ("How many ports does the router have?", "The router has four network ports on its back.", "four"),
    ]  # fmt: skip
    for question, sentence, answer in cases:
        _, phrases = reader.read(question, [(sentence, "")])
        p = phrases[0]
        assert p is not None and answer in sentence[p.start:p.end], (question, sentence[p.start:p.end])
        assert len(sentence[p.start:p.end]) < len(sentence) / 2, "a phrase, not the sentence"
    _, off = reader.read("Who wrote the novel Middlemarch?", [("The router warranty lasts two years.", "")])
    _, on = reader.read("Who wrote the novel Middlemarch?", [("Middlemarch was written by George Eliot.", "")])
    assert off[0].margin < on[0].margin, "the span head is surer where the sentence answers"


def test_asking_with_the_reader_imports_no_torch(tmp_path):
    code = ("import sys, numpy as np\n"
            "from localreason.readers import Reader\n"
            "r = Reader()\n"
            "x, p = r.read('How long is the warranty?', [('The warranty lasts two years.', ''), ('Hello.', '')])\n"
            "assert x.shape == (2,) and np.isfinite(x).all() and p[0] is not None\n"
            "print('torch' in sys.modules)\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- naming what the answer is about


def test_names_and_references():
    q = "What is the last name of the engineer who rebuilt the bridge after the flood?"
    assert asks_for_name(q) and asks_for_name("Which band recorded it?") and asks_for_name("Whose car was it?")
    assert not asks_for_name("How long is the warranty?") and not asks_for_name("When did the flood come?")
    assert leans_on_reference(q, "After the flood he rebuilt the bridge in stone.")
    assert leans_on_reference("Which band released the album?", "The band released it in 1969.")
    assert not leans_on_reference("Who founded Apple?", "Apple was founded by Steve Jobs in 1976.")
    text = "John Rennie was an engineer. The work took a year. After the flood he rebuilt the bridge in stone."
    best = Quote("c", "After the flood he rebuilt the bridge in stone.", text.index("After"), 1.0)
    named = naming_sentence(q, best, text)
    assert named is not None and named.text == "John Rennie was an engineer." and named.start == 0
    assert naming_sentence(q, Quote("c", "John Rennie was an engineer.", 0, 1.0), text) is None


@pytest.mark.parametrize("naming", ["dpkg-deb packs, unpacks and provides information about archives.",
                                    "The dpkg-deb program packs and unpacks archives."])
def test_a_command_named_in_lower_case_is_the_name_a_pronoun_leans_on(naming):
    """Manuals name commands in lower case: the sentence that names one is the naming sentence (not the capitalised
    one before it), and "The dpkg-deb program ..." names what it speaks of; "The built-in command ..." does not."""
    from localreason.reason.candidates import command_names, refers_back
    from localreason.text import STOPWORDS

    q = "Which program can list the contents of a package?"
    text = f"See the Debian Policy Manual first.\n\n{naming} It can also list the contents of a package."
    best = Quote("c", "It can also list the contents of a package.", text.index("It can"), 1.0)
    named = naming_sentence(q, best, text)
    assert named is not None and named.text == naming
    assert not refers_back(naming)
    assert refers_back("The built-in command lists them.") and refers_back("The program lists them.")
    assert leans_on_reference(q, "The built-in command lists them.")
    for ordinary in ("The two-year program drew students.", "- install the notes viewer to read it"):
        assert not command_names(ordinary, STOPWORDS), ordinary
    assert refers_back("The two-year program drew students.")
    assert command_names("ls lists the files.", STOPWORDS) == ["ls"]


def test_an_option_quoted_with_its_name_takes_no_sentence_from_the_entry_above():
    """A probe's "Which hash does --checksum use?" led with "Without this option nothing is ever deleted on the
    destination." (the --delete entry's last sentence) glued to "-c, --checksum / Compare files by their SHA-256
    ...": the description's "their" read as leaning on a name before it. An option quoted with its name names
    what it speaks of."""
    from types import SimpleNamespace

    from localreason.reason.candidates import opens_with_term
    from localreason.reason.offer import Offer, with_naming_sentence

    text = ("OPTIONS\n       --delete\n              Remove files that no longer exist in SOURCE.\n"
            "              Without this option nothing is ever deleted on the destination.\n\n"
            "       -c, --checksum\n"
            "              Compare files by their SHA-256 checksum instead of size.")  # fmt: skip
    at = text.index("-c, --checksum")
    best = Quote("c", text[at:], at, 1.0, referent=True, context="Without this option nothing is ever deleted on "
                 "the destination.")  # fmt: skip
    packet = SimpleNamespace(chunks=[SimpleNamespace(chunk_id="c", content=text)])
    offer = Offer([best], 1)
    assert with_naming_sentence("Which hash does --checksum use?", offer, packet) is offer
    assert opens_with_term(best.text) and opens_with_term("max_file_size\n\nFiles larger than this are skipped.")
    assert not opens_with_term("The server listens\non port 8080 by default.")
    assert not opens_with_term("Compare files by their checksum.")
    named = "John Rennie and his son came back. They rebuilt it in stone."
    packet = SimpleNamespace(chunks=[SimpleNamespace(chunk_id="c", content=named)])
    leaning = Quote("c", "They rebuilt it in stone.", named.index("They"), 1.0, referent=True,
                    context="John Rennie and his son came back.")  # fmt: skip
    joined = with_naming_sentence("Who rebuilt the bridge?", Offer([leaning], 1), packet)
    assert joined.joined and joined.quotes[0].text == "John Rennie and his son came back.", "the rule stands elsewhere"


def test_an_answer_that_leans_on_a_pronoun_also_quotes_the_sentence_that_names(library):
    q = "What is the last name of the engineer who rebuilt the bridge after the flood?"
    a = reason(library, q, generator=FakeGenerator(), reader=FakeReader(likes=("rebuilt", "flood")))
    got = quotations(a)
    assert got[:2] == ["John Rennie was the county's chief engineer for thirty years.",
                       "After the flood of 1810 he rebuilt the bridge in stone."], got
    assert a.meta["citationsDropped"] == 0
    when = reason(library, "When was the bridge rebuilt after the flood?", generator=FakeGenerator(),
                  reader=FakeReader(likes=("rebuilt", "flood")))  # fmt: skip
    assert quotations(when)[0].startswith("After the flood"), "a question that asks no name gets no naming sentence"


# ---------------------------------------------------------------- what users see


def test_prose_shows_the_sources_numbers_and_json_keeps_the_tokens(library):
    from localreason.render import answer_markdown, answer_plain, numbered_prose, numbered_sources

    a = reason(library, "How long is the router warranty?", generator=FakeGenerator(), reader=FakeReader(likes=("warranty",)))
    assert "[[" in a.answer and "[[" in json.dumps(a.to_dict()), "the spec's tokens stay in the data"
    prose = numbered_prose(a)
    assert "[[" not in prose and "[1]" in prose
    numbers = [s.number for s in numbered_sources(a)]
    assert all(f"[{n}]" in prose for n in numbers)
    plain, md = answer_plain(a), answer_markdown(a)
    assert "[[" not in plain and "[1]" in plain.split("Sources")[0]
    assert "[[" not in md and "\\[1\\]" in md.split("**Sources**")[0]


def test_the_reader_keeps_a_field_that_only_repeats_the_question_last():
    from localreason.reason.ranking import rank_quotes

    record = "Package: mawk\nSection: interpreters\nMaintainer: Boyuan Yang"
    ranked = rank_quotes("Who maintains the mawk package?", [("chk_a", record)], FakeEmbedder().embed, 5)
    done = read(FakeReader(likes=("mawk",), base=-2.0), "Who maintains the mawk package?", ranked).quotes
    assert done[-1].text == "Package: mawk" and done[-1].probability < 0.01
    yes_no = read(FakeReader(likes=("mawk",), base=-2.0), "Is the package mawk?", ranked).quotes
    assert yes_no[0].text == "Package: mawk", "nothing echoes a yes/no question"


def test_the_blended_gate_moves_the_readers_estimate_by_the_retrieval_margin():
    from dataclasses import replace

    from localreason.reason import gate

    alone = replace(DEFAULT, read_gate_blend=0.0)
    assert gate.read_estimate(0.2, 0.0, 0.0, calibration=alone) == 0.2, "without a blend the reader alone decides"
    blended = replace(DEFAULT, read_gate_blend=1.0)
    at_guard = blended.answer_guard  # relevance exactly at the retrieval guard: no margin, no move

    def estimate(reader, relevance):
        return gate.read_estimate(reader, relevance, 0.0, calibration=blended)

    assert estimate(0.2, at_guard) == pytest.approx(0.2)
    above, below = estimate(0.2, at_guard + 1), estimate(0.2, at_guard - 1)
    assert below < 0.2 < above and above == pytest.approx(1 / (1 + np.exp(-(np.log(0.25) + 1))))
    assert estimate(1.0, at_guard - 50) < 1.0 and estimate(0.0, at_guard + 50) > 0.0
    strict = replace(blended, read_weak=0.1, read_answers=0.3)
    assert gate.judge_read(0.2, at_guard - 1, 0.0, calibration=strict) == gate.WEAK  # 0.2 alone would be "unsure"
    assert gate.judge_read(0.2, at_guard + 1, 0.0, calibration=strict) == gate.ANSWERS
