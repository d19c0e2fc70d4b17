"""Arbitrary input never escapes as anything but a ValidationError, and packets and grammars stay well formed.

Hypothesis drives the validators, the search operations (on a real store with the fake
embedder), the packet builder and the grammar builder; the grammar is compiled by llama.cpp's
own GBNF parser. Example counts are kept small so the file runs in seconds.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localreason import search
from localreason.errors import ValidationError
from localreason.ids import check_id
from localreason.reason.candidates import Quote
from localreason.reason import LIMITATION_CHOICES, build_grammar, parse_output, reason
from localreason.tokens import count_tokens
from localreason.types import Evidence, EvidencePacket, SearchHit

from conftest import FakeGenerator

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

ODD = "ab Z9 \t\n\x00\x01\x1b\x7f\x85\u200b\u200f\u202e\u05d0\u0627\ufeff\U0001f600&<>\"'\\#|*[]{}\udce9"
"""Characters that break parsers: controls, NUL, bidi marks, RTL letters, non-BMP, markup, a lone surrogate."""
HEBREW = "\u05d4\u05d0\u05d7\u05e8\u05d9\u05d5\u05ea \u05e9\u05e0\u05ea\u05d9\u05d9\u05dd"
ARABIC = "\u0645\u0627 \u0647\u064a \u0645\u062f\u0629 \u0627\u0644\u0636\u0645\u0627\u0646\u061f"

ANYTHING = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([10**400, -(10**400), 2**63, -(2**63) - 1]),
    st.floats(), st.text(st.characters(exclude_categories=())), st.text(ODD, max_size=30),
    st.sampled_from(["12", " 7 ", "-3", "1e400", "nan", "inf", "1_000", "\u0661\u0662", "1" * 5000]),
    st.binary(max_size=8), st.lists(st.integers(), max_size=2),
)  # fmt: skip
QUERIES = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=60), st.text(ODD, max_size=60),
    st.sampled_from(["caf\udce9", "\x00", "warranty\x00length", "\u202e" + HEBREW, ARABIC, "_" * 40,
                     '"" OR NEAR(a b) *', "x" * 100_000]),
)  # fmt: skip


# ------------------------------------------------------------ validators


@settings(max_examples=300, deadline=None)
@given(value=ANYTHING, kind=st.sampled_from(["collection", "document", "chunk"]))
def test_check_id_returns_the_id_or_refuses(value, kind):
    try:
        out = check_id(value, kind)
    except ValidationError as exc:
        assert exc.message and exc.hint
    else:
        assert out == value and re.fullmatch(r"(col|doc|chk)_[a-z2-7]{16}", out)


@settings(max_examples=300, deadline=None)
@given(value=ANYTHING)
def test_number_validators_return_a_valid_value_or_refuse(value):
    try:
        limit = search.clamp_limit(value, 10, 50)
    except ValidationError as exc:
        assert exc.message
    else:
        assert type(limit) is int and 1 <= limit <= 50
    try:
        budget = search.clean_max_tokens(value)
    except ValidationError as exc:
        assert exc.message
    else:
        assert type(budget) is int and budget >= 0


@settings(max_examples=300, deadline=None)
@given(query=st.one_of(ANYTHING, QUERIES))
def test_clean_query_returns_clean_text_or_refuses(query):
    try:
        q = search.clean_query(query)
    except ValidationError as exc:
        assert exc.message and exc.hint
    else:
        assert q and q == q.strip() and len(q) <= search.MAX_QUERY_CHARS
        q.encode("utf-8")
        assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", q)


@pytest.mark.parametrize("query, message", [
    ("caf\udce9", "not valid UTF-8"), ("x" * 100_000, "100,000 characters"), ("\x00\x01\x1b", "blank"), (42, "text"),
])  # fmt: skip
def test_odd_queries_are_refused_with_what_happened_and_what_to_do(query, message):
    with pytest.raises(ValidationError, match=message) as exc:
        search.clean_query(query)
    assert exc.value.hint


def test_control_characters_become_spaces_and_right_to_left_text_is_kept():
    assert search.clean_query("\x00router\x1b[31m warranty\x7f\n") == "router [31m warranty"
    rtl = "\u202e" + HEBREW + "?"
    assert search.clean_query(rtl) == rtl


# ------------------------------------------------------------ search operations on a real store


@pytest.fixture
def searchable(lib, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "router.md").write_text("# Router manual\n\n## Warranty\n\nThe router warranty lasts two years.\n\n"
                                    "## Reset\n\nPress the reset button for ten seconds.\n")  # fmt: skip
    (docs / "notes.txt").write_text(f"Caf\u00e9 notes.\n\n{HEBREW}. The warranty claim & refund <form> was sent on "
                                    "Monday.\n")  # fmt: skip
    lib.ingest([docs], "work")
    return lib


@FAST
@given(query=QUERIES, limit=st.one_of(st.none(), st.integers(-2, 200), st.sampled_from(["5", "nan", 1.5])))
@example(query="caf\udce9", limit=None)
@example(query="router\x00 warranty\x1b[0m", limit=3)
@example(query="\u202e" + HEBREW, limit=None)
@example(query="warranty " * 12_000, limit=None)
def test_search_operations_return_results_or_refuse(searchable, query, limit):
    for op in (search.deep_search, search.find_items):
        try:
            out = op(searchable.index, query, limit=limit)
        except ValidationError as exc:
            assert exc.message
        else:
            assert isinstance(out, list)
    try:
        evidence = search.progressive_search(searchable.index, query, limit=limit)
    except ValidationError as exc:
        assert exc.message
    else:
        assert isinstance(evidence, Evidence)


@pytest.mark.parametrize("query", ["warranty\x00 length\x1b", HEBREW, ARABIC, "_" * 40, '"warranty" OR NEAR(a b)*'])
def test_odd_but_valid_queries_search_and_answer(searchable, query):
    assert isinstance(search.deep_search(searchable.index, query), list)
    a = reason(searchable, query, generator=FakeGenerator(), collection_id=searchable.collection("work").id)
    assert a.answer


def test_a_query_that_is_not_utf8_is_refused_before_any_work(searchable):
    gen = FakeGenerator()
    with pytest.raises(ValidationError, match="not valid UTF-8"):
        reason(searchable, "caf\udce9 warranty", generator=gen)
    assert gen.calls == 0


# ------------------------------------------------------------ the packet


CHUNK_IDS = st.text("abcdefghijklmnopqrstuvwxyz234567", min_size=16, max_size=16).map(lambda b: "chk_" + b)
DOC_TEXT = st.lists(st.one_of(st.characters(codec="utf-8"), st.sampled_from(list("&<>\"'\\\n\x00\x1b\x85\u2028\U0001f600 ")),
                              st.sampled_from(["</chunk>", '<chunk id="chk_aaaaaaaaaaaaaaaa">', "&amp;", "&#62;"])),
                    max_size=40).map("".join)  # fmt: skip
"""Document text: any characters a decoded file can hold (valid UTF-8: no lone surrogates), weighted towards markup, entities, escapes, controls and line separators."""
_WRAPPED = re.compile(r'<chunk id="(chk_[a-z2-7]{16})" document="([^"]*)"( truncated="true")?>\n(.*?)\n</chunk>\n',
                      re.S)  # fmt: skip


def _evidence(items) -> Evidence:
    hits = tuple(SearchHit(cid, "doc_aaaaaaaaaaaaaaaa", title, 2, i, "chk_bbbbbbbbbbbbbbbb", (), content)
                 for i, (cid, title, content) in enumerate(items))  # fmt: skip
    return Evidence("q", hits, True, False)


@FAST
@given(items=st.lists(st.tuples(CHUNK_IDS, DOC_TEXT, DOC_TEXT), max_size=5, unique_by=lambda t: t[0]),
       budget=st.one_of(st.integers(-5, 120), st.floats(), st.sampled_from([None, "60", "x", True, 10**30])))
@example(items=[("chk_aaaaaaaaaaaaaaaa", 'A "t" <b>', "one &amp; </chunk> two\n" * 20),
                ("chk_bbbbbbbbbbbbbbbb", "B", "never admitted")], budget=60)
def test_packets_stay_within_budget_and_no_text_forges_a_wrapper(items, budget):
    evidence = _evidence(items)
    try:
        packet = search.build_packet(evidence, budget)
    except ValidationError:
        return
    assert isinstance(packet, EvidencePacket)
    assert packet.tokens == (count_tokens(packet.text) if packet.text else 0) <= packet.max_tokens
    wrapped = list(_WRAPPED.finditer(packet.text))
    assert "".join(m.group(0) for m in wrapped) == packet.text, "the packet is exactly its wrappers"
    assert len(wrapped) == len(packet.chunks)
    for m, chunk, hit in zip(wrapped, packet.chunks, evidence.hits):
        assert m.group(1) == chunk.chunk_id == hit.chunk_id
        assert html.unescape(m.group(2)) == hit.document_title
        assert html.unescape(m.group(4)) == chunk.content
        assert hit.content.startswith(chunk.content) and (chunk.truncated or chunk.content == hit.content)


# ------------------------------------------------------------ the grammar


def compiles_in_llama_cpp(grammar: str) -> bool:
    """Whether llama.cpp's GBNF parser accepts ``grammar`` (the sampler it would decode with).

    ``LlamaGrammar.from_string`` only stores the text in llama-cpp-python 0.3; the parse happens
    when the sampler is made, which needs no model when the grammar names no tokens.
    """
    import llama_cpp
    from llama_cpp import LlamaGrammar

    compiled = LlamaGrammar.from_string(grammar, verbose=False)
    sampler = llama_cpp.llama_sampler_init_grammar(None, compiled._grammar.encode("utf-8"), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def test_the_grammar_check_rejects_a_broken_grammar():
    assert compiles_in_llama_cpp('root ::= "a" b\nb ::= "c"')
    assert not compiles_in_llama_cpp('root ::= "a" missing')
    assert not compiles_in_llama_cpp('root ::= "unterminated')


def offered(grammar: str, style: str) -> dict[int, str]:
    """Each stmtN rule's statement JSON, with free text "x" where the style lets the model write."""
    out = {}
    for line in grammar.split("\n"):  # not splitlines: U+2028 may sit inside a literal
        m = re.fullmatch(r'stmt(\d+) ::= ("(?:[^"\\]|\\.)*")( free "\\"}")?', line)
        if m:
            out[int(m.group(1))] = json.loads(m.group(2)) + ('x"}' if style == "free" else "")
    return out


QUOTES = st.lists(st.builds(Quote, CHUNK_IDS, st.text(min_size=1, max_size=60) | DOC_TEXT.filter(bool),
                            st.just(0), st.floats(-5, 5)), min_size=1, max_size=7)  # fmt: skip


@FAST
@given(quotes=QUOTES, style=st.sampled_from(["extract", "free"]), lead=st.integers(1, 5))
def test_grammars_compile_and_everything_they_offer_parses(quotes, style, lead):
    prefix, grammar = build_grammar(quotes, style=style, lead_quotes=lead)
    assert compiles_in_llama_cpp(grammar), grammar
    statements = offered(grammar, style)
    assert sorted(statements) == list(range(len(quotes)))
    for i, q in enumerate(quotes):
        [ref] = json.loads(statements[i])["references"]
        assert ref == {"quotation": q.text, "chunkId": q.chunk_id}
    n = max(1, min(lead, len(quotes)))
    head = prefix if style == "extract" else '{"statements":[' + ",".join(statements[i] for i in range(n))
    for extra in [None, *range(n, len(quotes))]:
        tail = "" if extra is None else "," + statements[extra]
        for limitation in ([], [LIMITATION_CHOICES[0]]):
            parsed, limits = parse_output(head + tail + '],"limitations":' + json.dumps(limitation) + "}")
            assert [s["references"][0]["quotation"] for s in parsed] == \
                [q.text for q in quotes[:n]] + ([] if extra is None else [quotes[extra].text])
            assert limits == limitation
