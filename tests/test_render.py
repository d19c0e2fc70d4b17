"""render.py: one structure (sections) behind every readable form of an answer."""

from __future__ import annotations

import html
import re

from localreason.reason import NO_EVIDENCE_ANSWER, Answer, Citation, Reference, Statement
from localreason.render import (LIMITATIONS, META, SOURCES, answer_markdown, answer_plain, answer_rich, latency_text,
                                markdown_text, section, sections)  # fmt: skip

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

    for a in (two_statements(), two_statements(gaps=()), no_evidence()):
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
