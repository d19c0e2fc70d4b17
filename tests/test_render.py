"""render.py: one structure (sections) behind every readable form of an answer."""

from __future__ import annotations

import dataclasses
import html
import re

from hypothesis import given
from hypothesis import strategies as st

from localreason.reason import NO_EVIDENCE_ANSWER, Answer, Citation, Reference, Statement
from localreason.reason.answer import AnswerPhrase
from localreason.render import (LIMITATIONS, META, SOURCES, Source, answer_markdown, answer_plain, answer_rich,
                                latency_text, markdown_text, numbered_sources, quotation_parts, section,
                                sections)  # fmt: skip
from localreason.text import collapse

C1, C2, D1, D2 = "chk_aaaaaaaaaaaaaaaa", "chk_bbbbbbbbbbbbbbbb", "doc_aaaaaaaaaaaaaaaa", "doc_bbbbbbbbbbbbbbbb"


def ref(chunk_id: str, quotation: str, doc: str = D1) -> Reference:
    return Reference(chunk_id, quotation, doc, 0, len(quotation))


def two_statements(gaps=("The sources disagree.",), title="Router *manual* [v2]") -> Answer:
    first = Statement("Two years.", (ref(C1, "The warranty lasts two years."), ref(C2, "It covers parts.", D2)))
    second = Statement("Water voids it.", (ref(C1, "Water damage voids the warranty."),))
    return Answer("How long?", f"Two years. [[{C1}]] [[{C2}]] Water voids it. [[{C1}]]",
                  (Citation(C1, D1, title), Citation(C2, D2, "FAQ")), tuple(gaps), 12, 1, 5120,
                  (first, second))  # fmt: skip


def no_evidence() -> Answer:
    return Answer("Who?", NO_EVIDENCE_ANSWER, (), (), 3, 0, 42, no_evidence=True)


def headings(md: str) -> list[str]:
    return re.findall(r"^\*\*(\w+)\*\*$", md, flags=re.M)


def test_sections_in_order_and_only_when_not_empty():
    assert [s.heading for s in sections(two_statements())] == ["Answer", "Sources", "Limitations", "Meta"]
    assert [s.heading for s in sections(two_statements(gaps=()))] == ["Answer", "Sources", "Meta"]
    assert [s.heading for s in sections(no_evidence())] == ["Answer", "Meta"]
    assert headings(answer_markdown(no_evidence())) == ["Answer", "Meta"], "an MCP client always gets both"
    assert headings(answer_markdown(two_statements())) == ["Answer", "Sources", "Limitations", "Meta"]
    assert section(sections(no_evidence()), SOURCES) == ()


def test_sources_are_numbered_in_the_order_the_statements_cite_them():
    sources = section(sections(two_statements()), SOURCES)
    assert [(s.number, s.chunk_id, s.statement) for s in sources] == [(1, C1, 0), (2, C2, 0), (3, C1, 1)]
    assert [s.title for s in sources] == ["Router *manual* [v2]", "FAQ", "Router *manual* [v2]"]
    assert sources[2].quotation == "Water damage voids the warranty." and sources[2].reference.chunk_id == C1
    md, plain = answer_markdown(two_statements()), answer_plain(two_statements())
    assert [int(n) for n in re.findall(r"^- \\\[(\d+)\\\]", md, flags=re.M)] == [1, 2, 3]
    assert [int(n) for n in re.findall(r"^  \[(\d+)\]", plain, flags=re.M)] == [1, 2, 3]


def test_markdown_escapes_document_text_and_plain_does_not():
    a = two_statements(gaps=("# not a heading <b>x</b>",))
    md, plain = answer_markdown(a), answer_plain(a)
    assert "*Router \\*manual\\* \\[v2\\]*" in md and "Router *manual* [v2]" in plain
    assert "- \\# not a heading &lt;b>x&lt;/b>" in md and "  - # not a heading <b>x</b>" in plain
    assert "Two years. \\[1\\]\\[2\\] Water voids it. \\[3\\]" in md, "prose shows the Sources' numbers"
    assert "Two years. [1][2] Water voids it. [3]" in plain and "[[" not in plain + md
    assert md.count("**") == 2 * 4, "bold only for the four headings"


def test_plain_and_markdown_say_the_same_things():
    from markdown_it import MarkdownIt

    for a in (two_statements(), two_statements(gaps=()), no_evidence(), with_phrase()):
        rendered = html.unescape(re.sub(r"<[^>]+>", "", MarkdownIt("commonmark").render(answer_markdown(a))))
        plain = answer_plain(a)
        for s in sections(a):
            assert s.heading in plain and s.heading in rendered
            for item in s.items:
                texts = [item.title, item.chunk_id, item.quotation] if s.heading == SOURCES else [item]
                for text in texts:
                    assert text in plain and text in rendered, text
        assert [h for h in ("Answer", "Sources", "Limitations", "Meta") if h in plain] == headings(answer_markdown(a))


def test_meta_line_and_latency():
    assert section(sections(two_statements()), META) == ("12 chunks gathered · 1 citation dropped · 5.1 s",)
    assert latency_text(850) == "850 ms" and latency_text(1000) == "1.0 s"
    assert answer_markdown(no_evidence()).endswith("**Meta**\n\n*3 chunks gathered · 0 citations dropped · 42 ms*")
    assert answer_plain(no_evidence()).endswith("\n\nMeta: 3 chunks gathered · 0 citations dropped · 42 ms")
    assert section(sections(no_evidence()), LIMITATIONS) == ()


def test_rich_form_is_the_plain_form_with_styles():
    a = two_statements()
    text = answer_rich(a)
    assert text.plain == answer_plain(a)
    styled = {text.plain[s.start:s.end]: str(s.style) for s in text.spans}
    assert styled["Sources"] == "bold" and styled[C2] == "cyan" and styled["FAQ"] == "bold"
    assert styled[next(k for k in styled if k.startswith("Meta: "))] == "dim"


def test_a_quotation_spanning_lines_is_one_line_in_every_form():
    a = Answer("q", f"A. [[{C1}]]", (Citation(C1, D1, "T"),), (), 1, 0, 1,
               (Statement("A.", (ref(C1, "First line\n\n# second"),)),))  # fmt: skip
    assert "\u201cFirst line # second\u201d" in answer_plain(a)
    assert "\u201cFirst line # second\u201d" in answer_markdown(a), "mid-line, # opens nothing"


def test_notebook_view_is_the_canonical_markdown():
    a = two_statements()
    assert a._repr_markdown_() == answer_markdown(a)
    assert markdown_text("a_b *c*") == "a_b \\*c\\*"


def test_prose_whose_tokens_do_not_match_its_statements_is_left_as_it_is():
    from localreason.render import numbered_prose

    a = two_statements()
    odd = Answer(a.query, f"Two years. [[{C1}]]", a.citations, a.gaps, 12, 0, 5, a.statements)
    assert numbered_prose(odd) == f"Two years. [[{C1}]]"
    assert numbered_prose(no_evidence()) == NO_EVIDENCE_ANSWER


# ---------------------------------------------------------------- the answer phrase under Sources

WARRANTY = "The warranty lasts two years from purchase."
BASE = 100
"""The quotations' offset in their document: the phrase's offsets are document offsets, not the quotation's."""


def with_phrase(quotation: str = WARRANTY, phrase: str = "two years", at: int | None = None,
                text: str | None = None) -> Answer:  # fmt: skip
    """Statement 0 quotes ``quotation`` (C1) with its answer ``phrase`` (at ``at`` in it, by default where it
    first occurs) and "It covers parts." (C2); statement 1, without a phrase, quotes the same ``quotation``."""
    lo = quotation.index(phrase) if at is None else at
    quoted = Reference(C1, quotation, D1, BASE, BASE + len(quotation))
    mark = AnswerPhrase(phrase if text is None else text, C1, BASE + lo, BASE + lo + len(phrase))
    first = Statement("Two years.", (ref(C2, "It covers parts.", D2), quoted), mark)
    second = Statement("It lasts.", (quoted,))
    return Answer("How long?", f"two years [[{C2}]] [[{C1}]] It lasts. [[{C1}]]",
                  (Citation(C1, D1, "Manual"), Citation(C2, D2, "FAQ")), (), 3, 0, 40, (first, second))  # fmt: skip


def without_phrase(a: Answer) -> Answer:
    return dataclasses.replace(a, statements=tuple(dataclasses.replace(s, phrase=None) for s in a.statements))


def source_lines(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("- \\[")]


def test_the_source_holding_the_phrase_knows_where_it_is_and_no_other_does():
    sources = numbered_sources(with_phrase())
    lo = WARRANTY.index("two years")
    assert [s.phrase for s in sources] == [None, (lo, lo + 9), None], "statement 1 quotes it too, with no phrase"
    assert sources[1].document_phrase() == (BASE + lo, BASE + lo + 9)
    assert sources[0].document_phrase() is None
    assert [s.phrase for s in numbered_sources(two_statements())] == [None, None, None]


def test_markdown_bolds_the_phrase_inside_its_quotation_and_nowhere_else():
    md = answer_markdown(with_phrase())
    assert source_lines(md) == [
        f"- \\[1\\] *FAQ* `{C2}`: \u201cIt covers parts.\u201d",
        f"- \\[2\\] *Manual* `{C1}`: \u201cThe warranty lasts **two years** from purchase.\u201d",
        f"- \\[3\\] *Manual* `{C1}`: \u201cThe warranty lasts two years from purchase.\u201d"]
    assert md.count("**") == 2 * 3 + 2, "three headings and the phrase"


def test_the_phrase_is_escaped_and_still_renders_bold():
    from markdown_it import MarkdownIt

    a = with_phrase("It costs $5 *net* <b>now</b> & more_ here.", "$5 *net* <b>now")
    line = source_lines(answer_markdown(a))[1]
    assert "\u201cIt costs **\\$5 \\*net\\* &lt;b>now**&lt;/b> & more\\_ here.\u201d" in line
    rendered = MarkdownIt("commonmark").render(line)
    assert "It costs <strong>$5 *net* &lt;b&gt;now</strong>&lt;/b&gt; &amp; more_ here." in rendered


def test_rich_bolds_the_phrase_and_plain_text_shows_the_quotation_unmarked():
    a = with_phrase()
    text = answer_rich(a)
    assert text.plain == answer_plain(a) == answer_plain(without_phrase(a))
    bold = [text.plain[s.start:s.end] for s in text.spans if str(s.style) == "bold"]
    assert bold == ["Answer", "Sources", "FAQ", "Manual", "two years", "Manual"]
    at = text.plain.index("\u201cThe warranty lasts two years") + len("\u201cThe warranty lasts ")
    assert [str(s.style) for s in text.spans if s.start == at and s.end == at + 9] == ["bold"]
    assert sum(text.plain[s.start:s.end] == "two years" for s in text.spans) == 1, "only in source [2]"


def test_whitespace_before_and_inside_the_phrase_collapses_as_the_quotation_does():
    raw = "The warranty\n\nlasts  two \n years\tfrom   purchase."
    a = with_phrase(raw, "two \n years")
    assert source_lines(answer_markdown(a))[1].endswith("\u201cThe warranty lasts **two years** from purchase.\u201d")
    text = answer_rich(a)
    assert text.plain == answer_plain(without_phrase(a))
    assert [text.plain[s.start:s.end] for s in text.spans if str(s.style) == "bold"].count("two years") == 1
    padded = with_phrase(raw, "  two \n years\t", at=raw.index("  two"))  # offsets that take in the spaces
    assert "\u201cThe warranty lasts **two years** from purchase.\u201d" in answer_markdown(padded)
    start = with_phrase(" \nThe warranty lasts", "The warranty")
    assert "\u201c**The warranty** lasts\u201d" in answer_markdown(start)
    inside = with_phrase("a twofold warranty", "two")  # a word running across the phrase's edge stays one word
    assert "\u201ca **two**fold warranty\u201d" in answer_markdown(inside)


def test_no_phrase_or_one_that_does_not_fit_its_quotation_changes_nothing():
    plain = without_phrase(with_phrase())
    expected = answer_markdown(plain)
    assert "**two years**" not in expected
    lo = WARRANTY.index("two years")
    elsewhere = dataclasses.replace(plain.statements[0], phrase=AnswerPhrase("two years", C2, BASE + lo, BASE + lo + 9))
    wrong_text = with_phrase(text="ten years")
    outside = with_phrase(phrase="years from purchase.", text="years from purchase. And")
    outside = dataclasses.replace(outside, statements=(dataclasses.replace(
        outside.statements[0], phrase=dataclasses.replace(outside.statements[0].phrase,
                                                          end=BASE + len(WARRANTY) + 4)), outside.statements[1]))
    for a in (dataclasses.replace(plain, statements=(elsewhere, plain.statements[1])), wrong_text, outside):
        assert answer_markdown(a) == expected
        assert answer_rich(a).spans == answer_rich(plain).spans
        assert all(s.phrase is None for s in numbered_sources(a))


@given(st.text(alphabet="ab \n\t", max_size=30), st.data())
def test_quotation_parts_are_the_collapsed_quotation_cut_around_the_phrase(quotation, data):
    lo = data.draw(st.integers(0, len(quotation)))
    hi = data.draw(st.integers(lo, len(quotation)))
    source = Source(1, "T", C1, quotation, 0, ref(C1, quotation), (lo, hi))
    before, phrase, after = quotation_parts(source)
    assert before + phrase + after == collapse(quotation)
    assert phrase == collapse(quotation[lo:hi])
    assert "".join(quotation_parts(source, collapsed=False)) == quotation
    assert quotation_parts(dataclasses.replace(source, phrase=None)) == (collapse(quotation), "", "")
