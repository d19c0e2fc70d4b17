"""reason with a scripted generator: the spec's rules on gate, verification, response, failures."""

from __future__ import annotations

import json

import pytest

from localreason.config import load_settings
from localreason.errors import ValidationError
from localreason.generate import GenerationError
from localreason.library import Library
from localreason.reason import NO_EVIDENCE_ANSWER, build_grammar, parse_output, reason
from localreason.reason.calibration import DEFAULT
from localreason.reason.candidates import Quote
from localreason.reason.offer import lead_count

from fakes import FakeEmbedder, FakeGenerator, grammar_choice, grammar_statements

VENDOR = "# Router manual (vendor)\n\n## Warranty\n\nThe router warranty lasts two years from the date of purchase.\n\n" \
         "## Reset\n\nTo reset the router hold the pinhole button for thirty seconds.\n"  # fmt: skip
SHOP = "# Router offer (shop)\n\n## Warranty\n\nThe router warranty lasts five years when bought in our shop.\n"


@pytest.fixture
def library(library_of):
    return library_of({"vendor.md": VENDOR, "shop.md": SHOP})


def doc(lib, title_start):
    return next(d for d in lib.documents() if d.title.startswith(title_start))


def reply_with(statements, limitations=()):
    return json.dumps({"statements": statements, "limitations": list(limitations)})


def test_answer_citations_and_offsets_are_bound_by_the_server(library):
    gen = FakeGenerator()
    a = reason(library, "How long is the router warranty?", generator=gen)
    assert gen.calls == 1
    assert 1 <= len(a.statements) <= DEFAULT.most_lead + 1, "the best quotations lead (and the model may add one)"
    assert "warranty lasts" in a.statements[0].text, "the best-ranked sentence comes first"
    assert all(st.text.endswith(".") for st in a.statements), "sentences, not headings"
    expected = []
    for st in a.statements:
        [ref] = st.references
        assert f"[[{ref.chunk_id}]]" in a.answer and st.text == ref.quotation
        d = library.document(ref.document_id)
        assert library.document_text(d.id)[ref.start:ref.end] == ref.quotation
        expected.append({"chunkId": ref.chunk_id, "documentId": d.id, "documentTitle": d.title})
    assert [c.to_dict() for c in a.citations] == expected
    assert a.meta["citationsDropped"] == 0 and a.meta["chunksGathered"] >= 1 and a.meta["latencyMs"] >= 0
    data = a.to_dict()
    assert set(data) == {"answer", "citations", "gaps", "meta", "statements"}
    assert "score" not in json.dumps(data).lower()


def test_grammar_only_offers_admitted_chunks_and_their_own_text(library):
    gen = FakeGenerator()
    a = reason(library, "How long is the router warranty?", generator=gen)
    _, grammar, _ = gen.last
    offered = grammar_statements(grammar)
    assert offered
    for st in offered:
        [ref] = st["references"]
        chunk = library.chunk(ref["chunkId"])
        assert ref["quotation"] in chunk.text
    assert a.chunks_gathered >= 1


def test_forged_quotation_is_dropped_counted_and_its_statement_withheld(library):
    def forge(messages, grammar):
        real = grammar_statements(grammar)[0]["references"][0]
        return reply_with([{"text": "It lasts ten years.", "references": [
            {"chunkId": real["chunkId"], "quotation": "The router warranty lasts ten years."}]}])

    a = reason(library, "How long is the router warranty?", generator=FakeGenerator(forge))
    assert a.citations_dropped == 1 and a.statements == () and a.citations == ()
    assert "ten years" not in a.answer
    assert any("withheld" in g for g in a.gaps)


def test_wrong_chunk_and_unknown_chunk_are_dropped_but_valid_reference_kept(library):
    reset = next(c for c in library.chunks(doc(library, "Router manual").id, 2) if "pinhole" in c.text)

    def mixed(messages, grammar):
        real = grammar_statements(grammar)[0]["references"][0]
        return reply_with([{"text": "", "references": [
            real,
            {"chunkId": "chk_aaaaaaaaaaaaaaaa", "quotation": real["quotation"]},    # not admitted
            {"chunkId": reset.id, "quotation": real["quotation"]},                 # not in that chunk (or not admitted)
            dict(real),                                                           # retained duplicate
        ]}])

    a = reason(library, "How long is the router warranty?", generator=FakeGenerator(mixed))
    assert a.citations_dropped == 2
    [st] = a.statements
    assert len(st.references) == 1


def test_whitespace_is_collapsed_and_trimmed_when_verifying(library):
    def spaced(messages, grammar):
        real = grammar_statements(grammar)[0]["references"][0]
        q = "  " + real["quotation"].replace(" ", " \n\t ") + "  "
        return reply_with([{"text": "Two years.", "references": [{"chunkId": real["chunkId"], "quotation": q}]}])

    a = reason(library, "How long is the router warranty?", generator=FakeGenerator(spaced))
    assert a.citations_dropped == 0 and len(a.statements) == 1
    assert a.statements[0].text == "Two years."
    assert a.answer.startswith("Two years. [[")


def test_disagreeing_sources_become_separate_cited_statements(library):
    gen = FakeGenerator()  # the forced opening, nothing added
    a = reason(library, "How long is the router warranty?", generator=gen, lead_quotes=3)
    assert len(json.loads(gen.last_prefix + "]}")["statements"]) == 3, "the best quotations lead"
    texts = " ".join(s.text for s in a.statements)
    assert "two years" in texts and "five years" in texts
    cited_docs = {c.document_id for c in a.citations}
    assert cited_docs == {doc(library, "Router manual").id, doc(library, "Router offer").id}
    assert all(len({r.document_id for r in s.references}) == 1 for s in a.statements)


def test_limitations_become_gaps(library):
    gen = FakeGenerator(lambda m, g: grammar_choice(g, 0, limitations=["The sources disagree."]))
    a = reason(library, "How long is the router warranty?", generator=gen)
    assert a.gaps[0] == "The sources disagree."


# ------------------------------------------------------------ the relevance gate


def test_empty_scope_skips_synthesis_with_the_fixed_answer(library):
    gen = FakeGenerator()
    a = reason(library, "How long is the router warranty?", generator=gen, document_id="doc_aaaaaaaaaaaaaaaa")
    assert a.answer == NO_EVIDENCE_ANSWER
    assert a.answer == ("No sufficiently relevant evidence was retrieved for this question within the requested "
                        "scope and retrieval limits.")  # fmt: skip
    assert gen.calls == 0 and a.citations == () and a.gaps == () and a.meta["chunksGathered"] == 0


def test_weak_unscoped_evidence_skips_synthesis_but_scoped_evidence_is_used(library):
    gen = FakeGenerator()
    q = "quantum chromodynamics lattice gluon"
    a = reason(library, q, generator=gen)
    assert a.answer == NO_EVIDENCE_ANSWER and gen.calls == 0
    a = reason(library, q, generator=gen, document_id=doc(library, "Router offer").id)
    assert gen.calls == 1 and a.answer != NO_EVIDENCE_ANSWER
    assert any("only weakly" in g for g in a.gaps)
    a = reason(library, q, generator=gen, collection_id=library.collection("work").id)
    assert gen.calls == 2 and a.statements


def test_the_gate_weighs_the_best_quotable_sentence(library):
    from dataclasses import replace

    from localreason import search
    from localreason.reason.ranking import rank_quotes

    q = "How long is the router warranty?"
    evidence = search.progressive_search(library.index, q)
    best = rank_quotes(q, [(h.chunk_id, h.content) for h in evidence.hits], library.embedder.embed, 1)[0].score
    passage_only = replace(DEFAULT, answer_guard=evidence.relevance + 0.5, sentence_guard_weight=0.0)
    assert reason(library, q, generator=FakeGenerator(), calibration=passage_only).no_evidence, \
        "passage relevance alone falls short"
    with_sentence = replace(passage_only, sentence_guard_weight=0.6 / best)
    assert not reason(library, q, generator=FakeGenerator(), calibration=with_sentence).no_evidence, \
        "the sentence that answers lifts it"


def test_zero_token_budget_means_no_evidence(library):
    gen = FakeGenerator()
    a = reason(library, "How long is the router warranty?", generator=gen, max_tokens=-5)
    assert a.answer == NO_EVIDENCE_ANSWER and gen.calls == 0


# ------------------------------------------------------------ failures are failures


@pytest.mark.parametrize("reply", [
    "", "not json", '{"statements": []}', '{"statements": [], "limitations": [], "extra": 1}',
    '{"statements": [{"text": "x"}], "limitations": []}',
    '{"statements": [{"text": 1, "references": []}], "limitations": []}',
    '{"statements": [{"text": "x", "references": [{"chunkId": "chk_aaaaaaaaaaaaaaaa"}]}], "limitations": []}',
    '{"statements": [], "limitations": [3]}', '[1, 2]', '{"statements": [], "limitations": []',
])  # fmt: skip
def test_output_that_fails_strict_parsing_fails_the_request(library, reply):
    gen = FakeGenerator(reply)
    with pytest.raises(GenerationError):
        reason(library, "How long is the router warranty?", generator=gen)
    assert gen.calls == 1, "one synthesis call, zero retries"


def test_generation_errors_propagate_instead_of_claiming_no_evidence(library):
    gen = FakeGenerator(error=GenerationError("llama.cpp decode failed"))
    with pytest.raises(GenerationError, match="decode failed"):
        reason(library, "How long is the router warranty?", generator=gen)
    assert gen.calls == 1


def test_reason_is_read_only(library):
    db = library.store.db
    before = (db.total_changes, library.store.generation(), library.settings.db_path.stat().st_mtime_ns)
    reason(library, "How long is the router warranty?", generator=FakeGenerator())
    reason(library, "quantum gluon", generator=FakeGenerator())
    assert (db.total_changes, library.store.generation(), library.settings.db_path.stat().st_mtime_ns) == before


def test_packet_is_shrunk_to_fit_a_small_context(library):
    probe = FakeGenerator()
    reason(library, "How long is the router warranty?", generator=probe, max_tokens=8000)
    messages, _, reserve = probe.last
    needed = probe.prompt_tokens(messages) + reserve
    gen = FakeGenerator(context_size=needed - 30)  # the full packet no longer fits
    a = reason(library, "How long is the router warranty?", generator=gen, max_tokens=8000)
    messages, _, max_tokens = gen.last
    assert gen.prompt_tokens(messages) + max_tokens <= needed - 30
    assert any("context window" in g for g in a.gaps)
    with pytest.raises(GenerationError, match="context"):
        reason(library, "How long is the router warranty?", generator=FakeGenerator(context_size=150))


@pytest.mark.parametrize("kwargs", [{"query": "  "}, {"query": "ok", "limit": -1}, {"query": "ok", "document_id": ""},
                                    {"query": "ok", "collection_id": None}, {"query": "ok", "max_tokens": "nan"},
                                    {"query": "ok", "lead_quotes": 0}, {"query": "ok", "lead_quotes": "3"}])  # fmt: skip
def test_bad_input_is_refused_before_any_work(library, kwargs):
    gen = FakeGenerator()
    query = kwargs.pop("query")
    with pytest.raises(ValidationError):
        reason(library, query, generator=gen, **kwargs)
    assert gen.calls == 0


def test_notebook_rendering_shows_answer_sources_limitations_and_meta(library):
    a = reason(library, "How long is the router warranty?",
               generator=FakeGenerator(lambda m, g: grammar_choice(g, 0, limitations=["The sources disagree."])))  # fmt: skip
    md = a._repr_markdown_()
    assert a.statements[0].references[0].quotation in md
    assert "**Limitations**" in md and "citations dropped" in md


def test_parse_output_and_grammar_units():
    statements, limitations = parse_output('{"statements":[{"references":[{"quotation":"a","chunkId":"chk_x"}],'
                                           '"text":""}],"limitations":["l"]}')  # fmt: skip
    assert statements[0]["references"][0]["quotation"] == "a" and limitations == ["l"]
    prefix, g = build_grammar([Quote("chk_aaaaaaaaaaaaaaaa", 'He said "hi" \\ bye.', 0, 1.0)])
    [st] = grammar_statements(g)
    assert st["references"][0]["quotation"] == 'He said "hi" \\ bye.'
    assert prefix == '{"statements":[' + json.dumps(st, separators=(",", ":")), "the one candidate is forced"
    assert g.startswith('root ::= "],'), "after the forced opening only the limitations remain"
    prefix, many = build_grammar([Quote(f"chk_{c * 16}", f"Sentence {c}.", 0, 1.0) for c in "abcd"], lead_quotes=3)
    assert [s["references"][0]["quotation"] for s in json.loads(prefix + "]}")["statements"]] == \
        [f"Sentence {c}." for c in "abc"], "the best quotations, in rank order, and no more"
    assert "stmt" not in many.splitlines()[0]
    # The prefix plus anything the grammar allows is the contract's JSON.
    full = prefix + '],"limitations":["The sources disagree."]}'
    assert parse_output(full)[1] == ["The sources disagree."]
    free_prefix, free = build_grammar([Quote("chk_aaaaaaaaaaaaaaaa", "A.", 0, 1.0)], style="free")
    assert free_prefix == "" and 'root ::= "{\\"statements\\":[" stmt0' in free


def test_short_lines_without_sentences_are_still_quotable():
    from localreason.text import sentences

    text = "x = 1\ny = 2"
    assert [text[s:e] for s, e in sentences(text)] == ["x = 1\ny = 2"]
    long = "word " * 300
    [(s, e)] = sentences(long)
    assert e - s <= 600 and long[s:e].endswith("word")


def test_a_sentence_wrapped_over_lines_stays_one_sentence_but_lists_and_headings_do_not():
    from localreason.text import sentences

    def split(text):
        return [text[s:e] for s, e in sentences(text)]

    wrapped = ("The old mill stands by the river and its wheel still turns. The mill was built in 1851 by the\n"
               "Hartley family after the great flood. It grinds wheat.")  # fmt: skip
    assert split(wrapped)[1] == "The mill was built in 1851 by the\nHartley family after the great flood."
    listed = "Things to bring on the walk up the hill tomorrow\n- water and some food\n1. a map of the area"
    assert split(listed) == ["Things to bring on the walk up the hill tomorrow", "- water and some food",
                             "1. a map of the area"]  # fmt: skip
    assert split("Short heading line\nThe body starts on the next line.") == [
        "Short heading line", "The body starts on the next line."]
    assert split("The router is configured in the settings menu:\nOpen the admin page first.") == [
        "The router is configured in the settings menu:", "Open the admin page first."]
    # A short line wraps too when the next one goes on in lower case (the python3.11-doc case).
    short = "You can\ncheck if an object\nis an instance of any of a number of classes by providing a tuple."
    assert split(short) == [short]
    assert split("Jane Doe\n12 Main Street\nSpringfield") == ["Jane Doe\n12 Main Street\nSpringfield"]


def test_a_blank_line_ends_a_sentence_even_after_a_capital_letter_and_its_full_stop():
    """A probe's "What is the default max_file_size?" was answered with another setting's default: the splitter read
    "G." as an initial and joined "Default: 2G", a blank line below, to the description, so the field was never a
    candidate of its own (nor joined to its heading)."""
    from localreason.text import sentences

    def split(text):
        return [text[s:e] for s, e in sentences(text)]

    entry = "### max_file_size\nFiles larger than this are skipped. Accepts a suffix of K, M or G.\n\nDefault: 2G"
    assert split(entry)[-2:] == ["Accepts a suffix of K, M or G.", "Default: 2G"]
    assert split("The music of J. S. Bach is played here. It was written ca. 1720.") == [
        "The music of J. S. Bach is played here.", "It was written ca. 1720."]


def test_fields_and_table_rows_are_statements_but_headings_are_not():
    from localreason.reason.candidates import candidates
    from localreason.text import is_field, sentences

    for field in ["Weight: 11 kg", "Warranty: 10 years", "SM5000 | 22 A", "| SM5000 | 22 A |", "E07: fan blocked."]:
        assert is_field(field), field
    for other in ["Specifications", "| --- | --- |", "10:30 am", "http://example.org/a", "def f(x):"]:
        assert not is_field(other), other
    spec = ("Specifications\n\nRated power: 3 kW\n\nWeight: 11 kg\n\nModel | Max current\n\nSM3000 | 13 A\n\n"
            "SM5000 | 22 A")  # fmt: skip
    assert [spec[s:e] for s, e in sentences(spec)] == ["Rated power: 3 kW", "Weight: 11 kg", "Model | Max current",
                                                        "SM3000 | 13 A", "SM5000 | 22 A"], "short fields are kept"
    prose = "Read all instructions before installing the inverter."
    chunks = [("chk_a", spec), ("chk_b", f"SolarMax 3000: owner's manual\n\n{prose}")]
    quotable = [c.text for c in candidates(chunks, frozenset({"SolarMax 3000: owner's manual", "Specifications"}))]
    assert quotable == ["Rated power: 3 kW", "Weight: 11 kg", "Model | Max current", "SM3000 | 13 A", "SM5000 | 22 A",
                        prose], "fields stay quotable beside prose; the title, a known heading, does not"  # fmt: skip
    rows = {c.text: c.previous for c in candidates(chunks)}
    assert rows["SM5000 | 22 A"] == rows["SM3000 | 13 A"] == "Model | Max current", "a row's context is its header"
    record = "Maintainer: Debian X Strike Force <debian-x@lists.debian.org>\nArchitecture: amd64\nSection: libs"
    assert [record[s:e] for s, e in sentences(record)] == record.split("\n"), "a long field line is not wrapped"


def test_a_best_field_that_names_nothing_the_question_asks_is_not_taken_for_an_answer():
    from types import SimpleNamespace

    from localreason.reason import NOT_ANSWERED_GAP
    from localreason.reason.gate import check_relevance, field_off_question

    q = "What is the website of the libgtk2.0-common project?"
    record = "Package: libgtk2.0-common"
    off = Quote("chk_aaaaaaaaaaaaaaaa", "Source: gtk+2.0", 0, 10.0, 0.9, record)
    on = Quote("chk_aaaaaaaaaaaaaaaa", "Homepage: https://www.gtk.org/ (the website)", 0, 10.0, 0.9, record)
    assert field_off_question(q, off), "only the record's name links it to the question"
    assert not field_off_question(q, on)
    assert not field_off_question("Who maintains mawk?", Quote("c", "Maintainer: Boyuan Yang", 0, 1, 1, "Package: mawk")), \
        "maintains ~ Maintainer"
    assert not field_off_question("How heavy is the inverter?", Quote("c", "Weight: 11 kg", 0, 1, 1, "Rated power: 3 kW")), \
        "a paraphrase whose context does not name the subject either is left to the gate"
    faq = Quote("c", "A: Hold the pinhole button on the back for ten seconds until it blinks.", 0, 1, 1,
                "Q: How do I reset the router?")  # fmt: skip
    assert not field_off_question("How do I reset the router?", faq), "a long value is prose"
    strong = SimpleNamespace(relevance=3.0, scoped=False)
    packet = SimpleNamespace(chunks=[])
    assert check_relevance(strong, packet, [off], q) == (True, [NOT_ANSWERED_GAP])
    assert check_relevance(strong, packet, [on], q) == (False, [])


def test_a_field_that_only_repeats_the_question_is_ranked_last_unless_the_question_is_yes_or_no():
    from localreason.reason.ranking import echoes_question, rank_quotes

    record = "Package: mawk\nSection: interpreters\nMaintainer: Boyuan Yang"
    ranked = rank_quotes("Who maintains the mawk package?", [("chk_a", record)], FakeEmbedder().embed, 5)
    assert ranked[-1].text == "Package: mawk" and ranked[-1].probability < 0.01
    assert echoes_question("What is mawk?", "Package: mawk")
    for q in ["Is the port 8443?", "Isn't the port 8443?", "So is the port 8443?", "Which port, 8080 or 8443?",
              "Tell me whether the port is 8443."]:  # fmt: skip
        assert not echoes_question(q, "Port: 8443"), q
    assert not echoes_question("Who maintains mawk?", "Mawk is mawk."), "only fields echo"
    # A probe's "What happened to the --legacy-protocol option?" was refused: its release note's line, which names
    # all of the question, was sunk as an echo, and the gate found the evidence weak. The label is the answer.
    legacy = "What happened to the --legacy-protocol option?"
    assert not echoes_question(legacy, "Removed: the --legacy-protocol option.")
    notes = "2.0.0\n\nNew: the relay, for syncing between machines.\n\nRemoved: the --legacy-protocol option."
    ranked = rank_quotes(legacy, [("c", notes)], FakeEmbedder().embed, 5)
    assert ranked[0].text == "Removed: the --legacy-protocol option.", [r.text for r in ranked]


def test_the_evidence_titles_and_headings_are_not_quoted_but_a_heading_alone_still_is(library, tmp_path):
    from localreason import search
    from localreason.reason import pipeline as P
    from localreason.reason.candidates import candidates

    docs = tmp_path / "manual"
    docs.mkdir()
    (docs / "m.md").write_text("# SolarMax: owner's manual\n\n## Step 2: connect the cables\n\n"
                               "Connect the red cable to the plus terminal of the inverter first.\n")  # fmt: skip
    library.ingest([docs], "manual")
    q = "How do I connect the inverter cables?"
    req = P.check_request(library, q, FakeGenerator(), {"document_id": search.UNSET, "collection_id": search.UNSET},
                          50, 8000, "extract", None)  # fmt: skip
    evidence = P.gather_evidence(req)
    texts = [x.text for x in P.rank_sentences(req, P.pack_evidence(evidence, req.budget), evidence)]
    assert "Connect the red cable to the plus terminal of the inverter first." in texts
    assert "SolarMax: owner's manual" not in texts and "Step 2: connect the cables" not in texts
    only = [("chk_a", "Returns are accepted within 30 days.")]
    assert [c.text for c in candidates(only, frozenset({"Returns are accepted within 30 days."}))] == [only[0][1]], \
        "when every line is a heading, the headings are quoted rather than nothing"


def test_a_fact_stated_as_a_field_is_the_answer_beside_prose(isolated_home, tmp_path):
    """A manual's specification list: its fields used to be dropped whenever prose was in the evidence."""
    docs = tmp_path / "manual"
    docs.mkdir()
    (docs / "inverter.md").write_text(
        "# SolarMax inverter manual\n\n## Safety\n\nRead all instructions before installing the inverter.\n\n"
        "## Specifications\n\n- Rated power: 3 kW\n- Weight: 11 kg\n- Warranty: 10 years\n")  # fmt: skip
    lib = Library(settings=load_settings(isolated_home), embedder=FakeEmbedder(), generator=FakeGenerator())
    lib.ingest([docs], "manual")
    a = lib.ask("How many years is the inverter warranty?")
    assert a.statements and a.statements[0].references[0].quotation == "Warranty: 10 years"
    lib.close()


def test_answer_quotes_setting_sets_how_many_quotations_lead(library, isolated_home, monkeypatch):
    one = reason(library, "How long is the router warranty?", generator=FakeGenerator(), lead_quotes=1)
    assert len(one.statements) == 1
    library._generator = FakeGenerator()
    import dataclasses

    library.settings = dataclasses.replace(library.settings, answer_quotes="2")
    assert len(library.ask("How long is the router warranty?").statements) == 2
    from localreason.config import load_settings

    assert load_settings(isolated_home).answer_quotes == "auto" and load_settings(isolated_home).lead_quotes is None
    (isolated_home).mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text("answer_quotes = 4\n")
    assert load_settings(isolated_home).lead_quotes == 4, "a TOML number works"
    for bad in ("0", "6", "many"):
        monkeypatch.setenv("LOCALREASON_ANSWER_QUOTES", bad)
        with pytest.raises(ValidationError, match="answer_quotes"):
            load_settings(isolated_home)


def test_the_lead_follows_the_rankings_confidence(library):
    """One quotation when one sentence clearly answers; both sides when the sources disagree."""
    sure = reason(library, "How do I reset the router?", generator=FakeGenerator())
    assert [s.text for s in sure.statements] == [
        "To reset the router hold the pinhole button for thirty seconds."]
    torn = reason(library, "How long is the router warranty?", generator=FakeGenerator())
    texts = [s.text for s in torn.statements]
    assert len(texts) >= 2 and any("two years" in t for t in texts) and any("five years" in t for t in texts)


def test_lead_count_keeps_the_best_and_only_the_close_runners_up():
    assert lead_count([0.97, 0.02, 0.01]) == 1, "a clear best stands alone"
    assert lead_count([0.45, 0.40, 0.05]) == 2, "a near tie (or two disagreeing sources) both lead"
    assert lead_count([0.3, 0.3, 0.2, 0.2]) == DEFAULT.most_lead, "capped when the ranking cannot tell"
    assert lead_count([0.5, 0.5], ratio=0.5, most=5) == 2, "no more than there are"
    assert lead_count([0.6, 0.25, 0.15], ratio=0.4) == 2
    assert lead_count([0.6, 0.25, 0.15], ratio=0.5) == 1
    assert lead_count([]) == 0


def test_the_calibration_passed_to_reason_decides_the_lead(library):
    from dataclasses import replace

    q = "How long is the router warranty?"
    every = reason(library, q, generator=FakeGenerator(), calibration=replace(DEFAULT, lead_ratio=0.0, most_lead=3))
    assert len(every.statements) == 3, "ratio 0: the three best lead"
    one = reason(library, q, generator=FakeGenerator(), calibration=replace(DEFAULT, lead_ratio=0.0, most_lead=1))
    assert len(one.statements) == 1


def test_the_model_reads_only_the_sentences_it_may_quote(library, tmp_path):
    filler = " ".join(f"Filler sentence number {i} talks about the weather in spring." for i in range(40))
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "notes.md").write_text(f"# Router notes\n\nThe router warranty covers the power supply. "
                                                  f"{filler}\n")  # fmt: skip
    library.ingest([tmp_path / "more"], "notes")
    gen = FakeGenerator()
    reason(library, "How long is the router warranty?", generator=gen)
    messages, grammar, _ = gen.last
    offered = [s["references"][0]["quotation"] for s in grammar_statements(grammar)]
    read, prefix = messages[-1]["content"], gen.last_prefix
    lead = [s["references"][0]["quotation"] for s in json.loads(prefix + "]}")["statements"]]
    assert offered and all(q in read + prefix for q in offered), "every sentence the grammar offers is shown"
    assert lead and not any(q in read for q in lead), "the lead sentences are read once, in the reply's opening"
    assert all(q in read for q in offered if q not in lead), "the others are read in the evidence"
    assert read.count("Filler sentence") <= len(offered), "sentences it cannot quote are not read"
    assert "Question: How long is the router warranty?" in read


def test_on_topic_evidence_that_does_not_answer_is_marked_and_shortened(library):
    from dataclasses import replace

    import localreason.reason.gate as G

    q = "How long is the router warranty?"
    sure = reason(library, q, generator=FakeGenerator(), lead_quotes=3)
    assert G.NOT_ANSWERED_GAP not in sure.gaps and len(sure.statements) == 3
    never_sure = replace(DEFAULT, answered_guard=1e9)  # everything that passes the gate is now "unsure"
    gen = FakeGenerator()
    unsure = reason(library, q, generator=gen, lead_quotes=3, calibration=never_sure)
    assert not unsure.no_evidence and gen.calls == 1
    assert unsure.gaps[0] == G.NOT_ANSWERED_GAP, "the answer says the question is not answered"
    assert len(unsure.statements) == 1, "only the closest statement is quoted"
    assert len(grammar_statements(gen.last[1])) == 1, "the model may add nothing"
    refuse_all = replace(never_sure, answer_guard=1e9)
    assert reason(library, q, generator=FakeGenerator(), calibration=refuse_all).no_evidence, \
        "below the lower guard: no evidence"


def test_ranked_quotes_carry_probabilities_and_merge_repeats():
    from fakes import FakeEmbedder
    from localreason.reason.ranking import rank_quotes

    same = "The router warranty lasts two years from the date of purchase."
    chunks = [("chk_a", same + " To reset the router hold the pinhole button."), ("chk_b", same),
              ("chk_c", "Shipping takes three days within the country.")]  # fmt: skip
    ranked = rank_quotes("How long is the router warranty?", chunks, FakeEmbedder().embed, 10)
    assert [q.text for q in ranked].count(same) == 1, "a repeated sentence is offered once"
    assert ranked[0].text == same and ranked[0].chunk_id == "chk_a"
    assert [q.score for q in ranked] == sorted((q.score for q in ranked), reverse=True)
    assert abs(sum(q.probability for q in ranked) - 1.0) < 1e-6, "repeats add up, nothing is lost"
    assert ranked[0].probability > 0.5
    assert len(rank_quotes("warranty?", chunks, FakeEmbedder().embed, 1)) == 1




def test_statements_end_like_sentences_in_the_answer_prose():
    from localreason.reason.verify import _as_sentence

    assert _as_sentence("The warranty lasts two years.") == "The warranty lasts two years."
    assert _as_sentence('He said "it lasts."') == 'He said "it lasts."'
    assert _as_sentence("The warranty lasts two years") == "The warranty lasts two years."
    assert _as_sentence("struck urban and rural areas;") == "struck urban and rural areas\u2026", "a cut quotation"


def test_commands_and_configuration_lines_are_said_as_they_are_written():
    """Two command lines quoted after "run the following commands:" stay two lines (run together they are one
    command that does not exist); a command or a configuration line gets no full stop and no ellipsis."""
    from localreason.reason.verify import _as_sentence, as_said, compose, verify
    from localreason.types import PacketChunk

    block = "To list the stash entries, run the following commands:\n\n  git stash list\n  git stash show -p stash@{1}\n"
    said = "To list the stash entries, run the following commands:\ngit stash list\ngit stash show -p stash@{1}"
    assert as_said(block) == said and _as_sentence(said) == said
    assert _as_sentence("ssl_certificate /etc/ssl/certs/site.crt;") == "ssl_certificate /etc/ssl/certs/site.crt;"
    assert as_said("The warranty lasts two years\nfrom the date of purchase.") == ("The warranty lasts two years from "
                                                                                  "the date of purchase.")  # fmt: skip
    assert as_said("It works as follows:\nThe first one is read.") == "It works as follows: The first one is read."
    assert as_said("Marie Curie won two Nobel Prizes\nin physics.") == "Marie Curie won two Nobel Prizes in physics."
    chunk = PacketChunk("c1", "d1", "Notes", block + "\nssl_certificate /etc/ssl/certs/site.crt;\n")
    quotes = [block.strip(), "ssl_certificate /etc/ssl/certs/site.crt;"]
    v = verify([{"text": "", "references": [{"chunkId": "c1", "quotation": q}]} for q in quotes], {"c1": chunk},
               {"c1": 0})  # fmt: skip
    prose, _ = compose(v.statements, {"c1": ("d1", "Notes")})
    assert prose == f"{said} [[c1]] ssl_certificate /etc/ssl/certs/site.crt; [[c1]]"


def test_a_zero_budget_says_so_in_a_gap(library):
    for budget in (-1, 0, "-7", 0.9):
        a = reason(library, "How long is the router warranty?", generator=FakeGenerator(), max_tokens=budget)
        assert a.answer == NO_EVIDENCE_ANSWER and a.no_evidence
        assert a.gaps == ("The evidence budget (maxTokens) was 0 tokens (negative values count as 0), so no "
                          "evidence was read.",)  # fmt: skip
    tiny = reason(library, "How long is the router warranty?", generator=FakeGenerator(), max_tokens=5)
    assert tiny.answer == NO_EVIDENCE_ANSWER and "of 5 tokens is too small" in tiny.gaps[0]
    empty_scope = reason(library, "How long is the router warranty?", generator=FakeGenerator(), max_tokens=0,
                         document_id="doc_aaaaaaaaaaaaaaaa")  # fmt: skip
    assert "maxTokens" in empty_scope.gaps[0], "said even when nothing was gathered"


def test_a_quotation_with_entity_text_is_verified_as_written():
    from localreason.reason import verify
    from localreason.types import PacketChunk

    content = "Use &gt; or &#62; to write >. Write &amp; for &."
    chunk = PacketChunk("chk_aaaaaaaaaaaaaaaa", "doc_aaaaaaaaaaaaaaaa", "html", content)
    raw = [{"text": "", "references": [{"chunkId": chunk.chunk_id, "quotation": "Use &gt; or &#62; to write >."}]},
           {"text": "", "references": [{"chunkId": chunk.chunk_id, "quotation": "Write &amp;amp; for &amp;."}]}]
    v = verify(raw, {chunk.chunk_id: chunk}, {chunk.chunk_id: 100})
    assert v.dropped == 0 and [s.text for s in v.statements] == ["Use &gt; or &#62; to write >.", "Write &amp; for &."]
    assert [(r.start, r.end) for s in v.statements for r in s.references] == [(100, 129), (130, 148)]


def test_stages_are_reported_as_stage_members_and_cancel_between_them(library):
    import threading

    from localreason.errors import Cancelled
    from localreason.stages import Stage

    seen = []
    reason(library, "How long is the router warranty?", generator=FakeGenerator(),
           stage=lambda s, **info: seen.append((s, info)))  # fmt: skip
    assert [s for s, _ in seen] == [Stage.SEARCHING, Stage.READING, Stage.WRITING, Stage.VERIFYING]
    assert all(type(s) is Stage for s, _ in seen) and set(seen[1][1]) == {"chunks", "tokens"}
    seen.clear()
    reason(library, "How long is the router warranty?", generator=FakeGenerator(), max_tokens=0,
           stage=lambda s, **info: seen.append((s, info)))  # fmt: skip
    assert [s for s, _ in seen] == [Stage.SEARCHING], "no evidence read: nothing more to report"
    cancel, gen = threading.Event(), FakeGenerator()

    def cancel_after_reading(s, **info):
        if s is Stage.READING:
            cancel.set()

    with pytest.raises(Cancelled):
        reason(library, "How long is the router warranty?", generator=gen, stage=cancel_after_reading, cancel=cancel)
    assert gen.calls == 0, "cancelled at the next stage boundary, before the model"


def test_fitting_the_context_keeps_the_gates_verdict_and_measures_what_the_model_reads(library):
    from localreason import search
    from localreason.reason import pipeline as P
    from localreason.reason.offer import Offer, offer_of

    q = "How long is the router warranty?"
    probe = FakeGenerator()
    req = P.check_request(library, q, probe, {"document_id": search.UNSET, "collection_id": search.UNSET}, 50, 8000,
                          "extract", 3)  # fmt: skip
    evidence = P.gather_evidence(req)
    packet = P.pack_evidence(evidence, req.budget)
    offer = offer_of(req.query, P.rank_sentences(req, packet, evidence), req.lead_quotes)
    wide = P.prompt_for(req, packet, Offer(offer.quotes, offer.lead_quotes, True))  # not yet narrowed
    narrow = P.prompt_for(req, packet, wide.offer.narrowed())
    assert len(narrow.offer.quotes) == 1 < len(wide.offer.quotes)
    room = probe.prompt_tokens(narrow.messages) + narrow.out_tokens
    req = P.Request(library, q, FakeGenerator(context_size=room + 5), req.scope, req.limit, req.budget, "extract", 3,
                    "likelihood")  # fmt: skip
    fitted = P.shrink_prompt(req, evidence, wide)
    assert fitted.offer.closest_only and len(fitted.offer.quotes) == 1, "the verdict survives the shrink"
    assert fitted.packet.max_tokens > 1000, "shrinking stops as soon as what the model reads fits"
    sides = P.prompt_for(req, packet, Offer(offer.quotes[:2], 2, True, several=True))  # two sides, the gate unsure
    room = probe.prompt_tokens(sides.messages) + sides.out_tokens
    req = P.Request(library, q, FakeGenerator(context_size=room + 5), req.scope, req.limit, req.budget, "extract", 3,
                    "likelihood")  # fmt: skip
    heard = P.shrink_prompt(req, evidence, P.prompt_for(req, packet, Offer(offer.quotes, 2, True, several=True)))
    assert heard.offer.several and heard.offer.lead_quotes == min(2, len(heard.offer.quotes)), \
        "each side is still heard after the shrink (it was narrowed to the closest sentence)"


def test_a_question_about_one_model_is_not_answered_for_its_sibling(library_of):
    """"How much did the Nimbus X1 cost?" over a review of the X2 only led with "$249" in bold, no gap (a probe's
    finding): the X2's sentence is quoted as the closest, with the gap that the question is not answered."""
    from localreason.reason.gate import NOT_ANSWERED_GAP, names_a_sibling
    from localreason.types import EvidencePacket, PacketChunk

    review = ("# Review: Nimbus X2 headphones\n\nThe Nimbus X2 costs $249 and is the second pair of noise-cancelling "
              "headphones from Nimbus Audio. The X2 weighs 250 grams.\n")  # fmt: skip
    text = review.split("\n\n", 1)[1]
    packet = EvidencePacket("q", text, (PacketChunk("c", "d", "Review", text),), 50, 1000, 1, True, False, False)
    best = Quote("c", text.split(". ")[0] + ".", 0, 1.0)
    assert names_a_sibling("How much did the Nimbus X1 cost?", best, packet)
    assert not names_a_sibling("How much did the Nimbus X2 cost?", best, packet)
    assert not names_a_sibling("How much did the headphones cost?", best, packet)
    lib = library_of({"review.md": review})
    a = reason(lib, "How much did the Nimbus X1 cost?", generator=FakeGenerator())
    assert NOT_ANSWERED_GAP in a.gaps and all(s.phrase is None for s in a.statements), a.to_dict()
    b = reason(lib, "How much did the Nimbus X2 cost?", generator=FakeGenerator())
    assert NOT_ANSWERED_GAP not in b.gaps, b.to_dict()


def test_a_question_naming_what_nothing_gathered_holds_is_not_answered(library_of):
    """A probe's "Can driftsync sync to Amazon S3?" over a manual that never names S3 was answered with three
    sentences on other things and no gap: a question that names something (a capital or a digit in a word, not its
    first word, not a number) that no passage, title or heading gathered holds is answered from the closest
    sentence, with the gap that it is not answered."""
    from types import SimpleNamespace

    from localreason.reason.gate import NOT_ANSWERED_GAP, names_the_absent
    from localreason.types import EvidencePacket, PacketChunk

    faq = ("# driftsync FAQ\n\nThe relay lets two machines that cannot reach each other directly sync through a "
           "third host. Windows is not supported as a destination. Beyoncé's albums sync fine.\n")  # fmt: skip
    text = faq.split("\n\n", 1)[1] + ("It runs on ChromeOS over WiFi, with two-factor login in the web interface; "
                                       "backups over 2GB are split; a relativist wrote it.")  # fmt: skip
    packet = EvidencePacket("q", text, (PacketChunk("c", "d", "driftsync FAQ", text),), 50, 1000, 1, True, False, False)
    hit = SimpleNamespace(content=text, document_title="driftsync FAQ", section_path=("Destinations",))
    evidence = SimpleNamespace(hits=(hit,))
    assert names_the_absent("Can driftsync sync to Amazon S3?", evidence, packet)
    assert names_the_absent("Does the relay run on FreeBSD?", evidence, packet)
    assert not names_the_absent("Does the relay run on FreeBSD?", evidence, packet, known=lambda w: w == "FreeBSD"), \
        "a name the library holds elsewhere (\"SQL\" in a database manual) says little of one answer's evidence"
    for held in ("Can Windows be a destination?", "Which Destinations are supported?", "Do Beyonce's albums sync?",
                 "Is the FAQ about driftsync?", "Does it sync 300 files?", "What does the relay do?",
                 "Does it support 2FA?", "Does it run on Chrome OS?", "Does it fail on Wi-Fi?",
                 "Are backups over 3 GB split?", "How do I log out of the Web UI?", "Was it fine in the 1990s?",
                 "Did Relativism shape it?"):  # fmt: skip
        assert not names_the_absent(held, evidence, packet), held
    settings = text + " Each sync uses sync_mem (integer) of memory."
    chunk = PacketChunk("c", "d", "driftsync FAQ", settings)
    packet = EvidencePacket("q", settings, (chunk,), 60, 1000, 1, True, False, False)
    assert names_the_absent("What is the default value of work_mem?", evidence, packet), "a setting's name (a probe)"
    assert not names_the_absent("What is the default value of sync_mem?", evidence, packet)
    assert not names_the_absent("How long are old versions kept in my project_notes folder?", evidence, packet), \
        "a user's own name for a folder is no setting (a review)"
    lib = library_of({"faq.md": faq})
    a = reason(lib, "Can driftsync sync through a relay to Amazon S3?", generator=FakeGenerator())
    assert NOT_ANSWERED_GAP in a.gaps and len(a.statements) == 1, a.to_dict()
    b = reason(lib, "Can driftsync sync through a relay to another host?", generator=FakeGenerator())
    assert NOT_ANSWERED_GAP not in b.gaps, b.to_dict()


def test_the_budgets_cut_is_said_only_when_the_evidence_does_not_clearly_answer(library):
    """"Only 6 of 16 gathered passages fit the evidence budget ..." was said on nearly every answer of the manuals
    bench, burying the gaps that matter; the spec lets the budget's cut go unsaid. It is said now only when the
    evidence did not clearly answer (a larger budget may find what does)."""
    from dataclasses import replace

    import localreason.reason.gate as G

    q = "How long is the router warranty?"
    never_sure = replace(DEFAULT, answered_guard=1e9)  # everything that passes the gate is now "unsure"

    def cut(b: int) -> bool:
        return any("evidence budget" in g for g in reason(library, q, generator=FakeGenerator(), max_tokens=b,
                                                          calibration=never_sure).gaps)  # fmt: skip

    def answers(b: int) -> bool:
        statements = reason(library, q, generator=FakeGenerator(), max_tokens=b).statements
        return bool(statements) and "warranty lasts" in statements[0].text

    budget = next(b for b in range(20, 400, 5) if cut(b) and answers(b))
    sure = reason(library, q, generator=FakeGenerator(), max_tokens=budget)
    assert sure.statements and G.NOT_ANSWERED_GAP not in sure.gaps
    assert not any("evidence budget" in g for g in sure.gaps), sure.gaps
    unsure = reason(library, q, generator=FakeGenerator(), max_tokens=budget, calibration=never_sure)
    assert unsure.gaps[0] == G.NOT_ANSWERED_GAP
    assert any(g.startswith("Only ") and f"budget of {budget} tokens" in g for g in unsure.gaps), unsure.gaps


def test_a_closing_bracket_or_quote_after_the_full_stop_ends_the_sentence_it_closes():
    """"(Otherwise, you may have to press the power button for a few seconds.)" was cut before its ")", which then
    opened the next quotation (")\\n\\nYou can shut the system down from the command line.", an answer's first
    statement on a fit manual): the closing marks after a sentence's full stop are the sentence's."""
    from localreason.reason.candidates import candidates
    from localreason.text import sentences

    text = ("Power it off. (Otherwise, you may have to press the power button for a few seconds.)\n\nYou can shut the "
            "system down from the command line. She wrote \"The disk is full.\" The next line says so.")
    said = [text[s:e] for s, e in sentences(text)]
    assert said == ["(Otherwise, you may have to press the power button for a few seconds.)",
                    "You can shut the system down from the command line.", 'She wrote "The disk is full."',
                    "The next line says so."], said
    assert "You can shut the system down from the command line." in [c.text for c in candidates([("c", text)])]
