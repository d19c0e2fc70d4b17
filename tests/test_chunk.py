"""Hierarchical chunking: offsets, token sizes, word boundaries, overlap, tree links, stable ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from localreason.ids import id_kind
from localreason.ingest.chunk import ChunkParams, chunk_document, split_block
from localreason.ingest.parse import parse_bytes
from localreason.tokens import count_tokens
from localreason.types import LEVEL_PARAGRAPH, LEVEL_SECTION

from files import make_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "localreason" / "samples"
PARAMS = ChunkParams(chunk_tokens=120, overlap=20, section_max_tokens=600)


def sample_docs():
    for path in sorted(SAMPLES.iterdir()):
        fmt = {".md": "markdown", ".rst": "rst", ".html": "html"}.get(path.suffix)
        if fmt and path.name != "LICENSES.md":
            yield parse_bytes(path.read_bytes(), path, fmt)


@pytest.mark.parametrize("doc", list(sample_docs()), ids=lambda d: d.format)
def test_chunks_point_into_stored_text_and_respect_sizes(doc):
    chunks = chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", PARAMS)
    paras = [c for c in chunks if c.level == LEVEL_PARAGRAPH]
    assert paras
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
        assert c.text == c.text.strip() and c.text
    for c in paras:
        assert c.token_count == count_tokens(c.text)
        assert c.token_count <= PARAMS.chunk_tokens
        # never cut mid-word: a chunk starts and ends next to whitespace or the text's edges
        assert c.start == 0 or doc.text[c.start - 1].isspace()
        assert c.end == len(doc.text) or doc.text[c.end].isspace()
    # every character of body text lies in some paragraph chunk
    covered = set()
    for c in paras:
        covered.update(range(c.start, c.end))
    for b in doc.blocks:
        assert set(range(b.start, b.end)) <= covered


def test_tree_links_levels_and_ids():
    doc = next(sample_docs())
    chunks = chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", PARAMS)
    sections = [c for c in chunks if c.level == LEVEL_SECTION]
    by_id = {c.id: c for c in chunks}
    assert len(by_id) == len(chunks)
    assert all(id_kind(c.id) == "chunk" for c in chunks)
    assert [s.index for s in sections] == list(range(len(sections)))
    assert all(s.parent_id == "doc_aaaaaaaaaaaaaaaa" for s in sections)
    for s in sections:
        kids = [c for c in chunks if c.parent_id == s.id]
        assert [k.index for k in kids] == list(range(len(kids)))
        assert all(s.start <= k.start and k.end <= s.end and k.section_path == s.section_path for k in kids)
    # same input, same ids
    assert [c.id for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", PARAMS)] == [c.id for c in chunks]


def test_section_paths_follow_headings_and_empty_headings_merge():
    md = b"# Manual\n\n## Power\n\n### Inverter\n\nThe inverter warranty is five years.\n\n## Care\n\nClean it.\n"
    doc = parse_bytes(md, Path("m.md"), "markdown")
    chunks = chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", PARAMS)
    sections = [c for c in chunks if c.level == LEVEL_SECTION]
    assert [s.section_path for s in sections] == [("Manual", "Power", "Inverter"), ("Manual", "Care")]
    assert sections[0].text.startswith("Manual\n\nPower\n\nInverter")


def test_long_sections_are_split_into_parts():
    body = "\n\n".join(f"Paragraph {i} says something about topic {i} in a few words." for i in range(200))
    doc = parse_bytes(f"# Big\n\n{body}\n".encode(), Path("b.md"), "markdown")
    sections = [c for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", PARAMS) if c.level == LEVEL_SECTION]
    assert len(sections) > 3
    assert all(s.section_path == ("Big",) and s.token_count <= PARAMS.section_max_tokens + 20 for s in sections)


def test_long_paragraph_windows_overlap_and_end_at_whitespace():
    words = " ".join(f"word{i}" for i in range(2000))
    text = f"Start. {words} end."
    spans = split_block(text, 0, len(text), 100, 20)
    assert len(spans) > 5
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s2 < e1, "consecutive windows overlap"
        assert s2 > s1
        assert text[e1].isspace() and text[s2 - 1].isspace()
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(count_tokens(text[s:e]) <= 100 for s, e in spans)


def test_huge_single_line_and_giant_word():
    line = ("alpha beta gamma delta " * 40000).strip()  # ~1 MB on one line
    doc = parse_bytes(line.encode(), Path("one.txt"), "text")
    paras = [c for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", ChunkParams.from_settings()) if c.level == LEVEL_PARAGRAPH]
    assert len(paras) > 500 and all(c.token_count <= 200 for c in paras)
    blob = "QUJD" * 5000  # one 20,000-character "word": the only place a cut may fall inside a word
    doc = parse_bytes(blob.encode(), Path("blob.txt"), "text")
    paras = [c for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", ChunkParams.from_settings()) if c.level == LEVEL_PARAGRAPH]
    assert len(paras) > 1 and "".join(c.text for c in paras).count("QUJD") >= 5000


def test_pdf_chunks_keep_page_numbers(tmp_path):
    pages = [[f"Page {p} sentence number {i} about the router setup." for i in range(30)] for p in range(1, 4)]
    pdf = make_pdf(tmp_path / "r.pdf", pages)
    doc = parse_bytes(pdf.read_bytes(), pdf, "pdf")
    chunks = chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", PARAMS)
    sections = [c for c in chunks if c.level == LEVEL_SECTION]
    assert [s.section_path for s in sections] == [("Page 1",), ("Page 2",), ("Page 3",)]
    for c in chunks:
        assert c.page_start == c.page_end
        assert f"Page {c.page_start} sentence" in c.text
