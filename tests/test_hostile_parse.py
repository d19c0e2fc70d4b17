"""Hostile files: the readers and the chunker never hang, crash or exhaust memory, and never drop text silently."""

from __future__ import annotations

import base64
import io
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from localreason.errors import IngestFileError
from localreason.ingest.chunk import ChunkParams, chunk_document
from localreason.ingest.parse import READERS, parse_bytes, parse_html_stream
from localreason.ingest.recognised import NeedsRecognition, Recognition
from localreason.types import LEVEL_PARAGRAPH

from files import make_docx, make_docx_with_body, make_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "localreason" / "samples"
DOC_ID = "doc_aaaaaaaaaaaaaaaa"


def headings(doc):
    return [(doc.text[b.start:b.end], b.depth) for b in doc.blocks if b.kind == "heading"]


def texts(doc):
    return [doc.text[b.start:b.end] for b in doc.blocks if b.kind == "text"]


# ---------------------------------------------------------------- deeply nested HTML


def deep_html(depth: int, *, closed: bool = True) -> bytes:
    """A page whose middle is ``depth`` nested divs, with text before, at and after the deep point."""
    after = b"".join(b"<p>After the depths, paragraph %d.</p>" % i for i in range(3))
    return (b"<html><head><title>Deep</title></head><body><nav>Menu</nav><h1>Top</h1><p>Before the depths.</p>"
            + b"<div>" * depth + b"<h2>Bottom</h2><p>Deep text.</p>" + (b"</div>" * depth if closed else b"")
            + after + b"<table><tr><td>Part</td><td>Warranty</td></tr></table></body></html>")  # fmt: skip


@pytest.mark.parametrize("depth", [300, 1500, 100_000])
def test_deeply_nested_html_keeps_every_text(depth):
    doc = parse_bytes(deep_html(depth), Path("deep.html"), "html")
    assert doc.title == "Deep"
    assert headings(doc) == [("Top", 1), ("Bottom", 2)]
    after = [f"After the depths, paragraph {i}." for i in range(3)]
    assert texts(doc) == ["Before the depths.", "Deep text.", *after, "Part | Warranty"]
    # lxml builds trees up to 2048 levels; deeper files are streamed, and the note says so.
    assert any("too deeply nested" in note for note in doc.notes) == (depth > 2048)


def test_deep_html_that_never_closes_its_elements_keeps_every_text():
    doc = parse_bytes(deep_html(100_000, closed=False), Path("deep.html"), "html")
    assert "Deep text." in texts(doc) and "After the depths, paragraph 2." in texts(doc)
    assert "Menu" not in doc.text


def test_streaming_html_reader_matches_the_tree_reader():
    data = (SAMPLES / "python-faq-general.html").read_bytes()
    tree = parse_bytes(data, Path("faq.html"), "html")
    stream = parse_html_stream(data, Path("faq.html"), "a test")
    assert (stream.title, stream.text, stream.blocks) == (tree.title, tree.text, tree.blocks)


def test_html_text_node_over_10_mb_is_read_whole():
    # libxml2 refuses a text node over 10 MB unless told otherwise, and then returns no text at all.
    data = b"<html><body><p>" + b"word " * 2_200_000 + b"</p><p>After.</p></body></html>"
    doc = parse_bytes(data, Path("big.html"), "html")
    assert texts(doc)[-1] == "After." and len(texts(doc)[0]) == 11_000_000 - 1


NESTED = {"lists": lambda i: "  " * i + f"- item {i}", "quotes": lambda i: "> " * i + f"quote {i}"}
LAST = {"lists": "- item 39", "quotes": "> quote 39"}


@pytest.mark.parametrize("kind", sorted(NESTED))
def test_deeply_nested_markdown_is_read_whole_as_text(kind):
    # markdown-it skips everything past its 20th level; the file is read as plain text instead.
    nested = "\n".join(NESTED[kind](i) for i in range(40))
    doc = parse_bytes(f"# Title\n\nIntro.\n\n{nested}\n\nThe end.\n".encode(), Path("deep.md"), "markdown")
    assert doc.format == "markdown" and any("nested deeper" in note for note in doc.notes)
    assert "Intro." in doc.text and LAST[kind] in doc.text and doc.text.endswith("The end.")


# ---------------------------------------------------------------- DOCX bombs and big documents

TINY_PARAGRAPH = b"<w:p><w:r><w:t>x</w:t></w:r></w:p>"


def test_docx_bomb_fails_before_it_is_unpacked(tmp_path):
    bomb = make_docx_with_body(tmp_path / "bomb.docx", TINY_PARAGRAPH * (60 * 2**20 // len(TINY_PARAGRAPH)))
    assert bomb.stat().st_size < 500_000  # 60 MB of XML in a few hundred KB
    with pytest.raises(IngestFileError) as err:
        parse_bytes(bomb.read_bytes(), bomb, "docx", max_unpacked_bytes=32 * 2**20)
    assert err.value.status == "failed"
    assert "word/document.xml alone is 60.0 MB" in err.value.message
    assert "limit of 32.0 MB" in err.value.message and "max_unpacked_mb" in err.value.message


def test_docx_with_one_huge_text_node_fails_naming_the_limit(tmp_path):
    big = make_docx_with_body(tmp_path / "big.docx", b"<w:p><w:r><w:t>" + b"A" * (5 * 2**20) + b"</w:t></w:r></w:p>")
    with pytest.raises(IngestFileError) as err:
        parse_bytes(big.read_bytes(), big, "docx", max_unpacked_bytes=2**20)
    assert err.value.status == "failed"
    assert "word/document.xml alone is 5.0 MB" in err.value.message and "limit of 1.0 MB" in err.value.message


def test_large_docx_is_read_whole_with_headings_and_tables(tmp_path):
    parts = []
    for i in range(20_000):  # about 3 MB of document XML
        if i % 100 == 0:
            parts.append(b'<w:p><w:pPr><w:pStyle w:val="Heading%d"/></w:pPr><w:r><w:t>Section %d</w:t></w:r></w:p>'
                         % (1 + i // 100 % 2, i))  # fmt: skip
        else:
            parts.append(b'<w:p><w:r><w:t xml:space="preserve">Paragraph %d says </w:t></w:r>'
                         b"<w:r><w:rPr><w:b/></w:rPr><w:t>something</w:t></w:r>"
                         b"<w:r><w:tab/><w:t>here.</w:t></w:r></w:p>" % i)  # fmt: skip
    merged = (b"<w:tbl><w:tr>"
              b'<w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>Wide</w:t></w:r></w:p></w:tc>'
              b'<w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:r><w:t>Tall</w:t></w:r></w:p></w:tc>'
              b"</w:tr><w:tr>"
              b"<w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>b</w:t></w:r></w:p></w:tc>"
              b"<w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc>"
              b"</w:tr></w:tbl>")  # fmt: skip
    path = make_docx_with_body(tmp_path / "big.docx", b"".join(parts) + merged)
    doc = parse_bytes(path.read_bytes(), path, "docx")
    hs = headings(doc)
    assert len(hs) == 200 and hs[:2] == [("Section 0", 1), ("Section 100", 2)]
    body = texts(doc)
    assert len(body) == 19_800 + 2
    assert body[0] == "Paragraph 1 says something\there." and body[-3] == "Paragraph 19999 says something\there."
    assert body[-2:] == ["Wide | Tall", "a | b | Tall"]


# ---------------------------------------------------------------- PDF


@pytest.mark.parametrize("lines", [["Text line.", "\x00" * 3000], ["\x00" * 3000, "Text line."]],
                         ids=["trailing", "leading"])  # fmt: skip
def test_pdf_page_with_thousands_of_excluded_characters_is_read(tmp_path, lines):
    # pypdfium2 recurses once per character it excludes at either end of a page.
    pdf = make_pdf(tmp_path / "nul.pdf", [lines])
    assert parse_bytes(pdf.read_bytes(), pdf, "pdf").text == "Text line."


# ---------------------------------------------------------------- every failure is an IngestFileError


@pytest.mark.parametrize("error, words", [
    (RecursionError("maximum recursion depth exceeded"), "nested too deeply to parse"),
    (MemoryError(), "too large to parse in memory"),
    (KeyError("w:val"), "could not be parsed (KeyError: 'w:val')"),
])  # fmt: skip
def test_a_reader_failure_becomes_a_failed_file(monkeypatch, error, words):
    def broken(data, path):
        raise error

    monkeypatch.setitem(READERS, "markdown", broken)
    with pytest.raises(IngestFileError) as err:
        parse_bytes(b"# Title\n", Path("a.md"), "markdown")
    assert err.value.status == "failed" and words in err.value.message


# ---------------------------------------------------------------- a 20 MB line


def assert_chunks_cover(doc, chunks, chunk_tokens):
    """Every chunk is its span of the text, and paragraph chunks leave out nothing but whitespace."""
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
    paras = sorted((c for c in chunks if c.level == LEVEL_PARAGRAPH), key=lambda c: c.start)
    assert paras and all(c.token_count <= chunk_tokens for c in paras)
    reach = 0
    for c in paras:
        assert not doc.text[reach:c.start].strip()
        reach = max(reach, c.end)
    assert reach == len(doc.text)


@pytest.mark.parametrize("kind", ["words", "no whitespace"])
def test_a_20_mb_single_line_is_parsed_and_chunked_whole(kind):
    size = 20 * 2**20
    if kind == "words":
        line = ("alpha beta gamma delta " * (size // 23 + 1))[:size].strip()
    else:  # letters only: one 20 MB piece for the tokenizer's regex, the worst case for BPE
        line = base64.b64encode(b"ABC" * (size // 4)).decode()
    doc = parse_bytes(line.encode(), Path("one.txt"), "text")
    assert doc.text == line
    assert_chunks_cover(doc, chunk_document(doc, DOC_ID, ChunkParams.from_settings()), ChunkParams.from_settings().chunk_tokens)


# ---------------------------------------------------------------- lines a careless reader backtracks on for hours

N = 100_000


@pytest.mark.parametrize("data, fmt, expected", [
    pytest.param(b"a" + b" " * N + b"x\n", "text", "a" + " " * N + "x", id="spaces-not-at-a-line-end"),
    pytest.param(b"<div>\n" + b"<" * N + b"\n", "markdown", "<" * N, id="markdown-html-block-of-<"),
    pytest.param(b"[" * N, "markdown", "[" * N, id="markdown-brackets"),
    pytest.param(b"x " + b":" * N + b"\n", "rst", "x " + ":" * (N - 1), id="rst-colons"),
    # A reST paragraph is stored as a reader sees it: a run of spaces is one space.
    pytest.param(b"x :r:`a" + b" " * N + b"b\n", "rst", "x :r:`a b", id="rst-unclosed-role"),
    pytest.param(b"x `a" + b" " * N + b"b`\n", "rst", "x a b", id="rst-unclosed-reference"),  # interpreted text
    pytest.param(b"<p>" + b"<script>s</script>word " * (N // 4) + b"</p>", "html", ("word " * (N // 4)).strip(),
                 id="html-many-scripts"),
])  # fmt: skip
def test_hostile_lines_parse_in_linear_time(data, fmt, expected):
    assert parse_bytes(data, Path("x"), fmt).text == expected


def test_runs_of_combining_marks_are_cut_before_normalising():
    zalgo = "a" + "\u0301\u0316" * 25_000 + " end"  # reordering these marks for NFC is quadratic
    doc = parse_bytes(zalgo.encode(), Path("z.txt"), "text")
    assert doc.text.startswith("\u00e1") and doc.text.endswith(" end") and len(doc.text) < 40
    assert parse_bytes("Cafe\u0301 cre\u0300me".encode(), Path("c.txt"), "text").text == "Caf\u00e9 cr\u00e8me"


# ---------------------------------------------------------------- fuzzing every reader

FORMATS = sorted(READERS)
FUZZ_PARAMS = ChunkParams(chunk_tokens=40, overlap=8, section_max_tokens=120)


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, bytes]:
    """One small valid file per format, for mutations to start from."""
    folder = tmp_path_factory.mktemp("seeds")
    return {
        "text": b"USER GUIDE\n\nIntro text.\n\nInstallation\n============\nRun the installer.\n",
        "code": b"import os\n\n\ndef main():\n    return os.sep  # the end\n",
        "markdown": b"# Manual\n\nIntro *text* with `code` and [a link](http://x).\n\n## Reset\n\n- one\n- two\n\n"
                    b"| a | b |\n|---|---|\n| 1 | 2 |\n\n<div>html</div>\n",
        "rst": b"=====\nGuide\n=====\n\nIntro para.\n\nPart\n----\n\n.. note::\n   Keep the receipt.\n\n"
               b"See :func:`open` and ``x`` and `ref <http://x>`_.\n",
        "html": b"<html><head><title>T</title><script>var x=1;</script></head><body><nav>menu</nav><h1>Head</h1>"
                b"<p>Body <b>bold</b> text &amp; more.</p><ul><li>one</li></ul><table><tr><td>a</td><td>b</td></tr>"
                b"</table><pre>code\n  here</pre></body></html>",
        "pdf": make_pdf(folder / "s.pdf", [["First page line.", "Still page one."], ["Second page."]]).read_bytes(),
        "docx": make_docx(folder / "s.docx", "Manual", [("Warranty", ["Five years.", "Keep it."])]).read_bytes(),
        "image": _small_png(),
    }


def _small_png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (64, 48), 255).save(out, "PNG")
    return out.getvalue()


def assert_parses_or_fails_cleanly(data: bytes, fmt: str) -> None:
    """A ParsedDocument whose chunks point into its text, or an IngestFileError with a reason."""
    try:
        doc = parse_bytes(data, Path(f"fuzz.{fmt}"), fmt, recognition=Recognition(max_pixels=10_000_000))
    except IngestFileError as exc:
        assert exc.status in ("failed", "skipped") and exc.message
        return
    except NeedsRecognition as need:  # a first pass over a scan or an image: the pages to recognise, in its range
        assert need.pages and set(need.pages) <= set(range(1, need.page_count + 1))
        return
    for c in chunk_document(doc, DOC_ID, FUZZ_PARAMS):
        assert doc.text[c.start:c.end] == c.text


@st.composite
def mutations(draw, seed: bytes) -> bytes:
    """``seed`` after a few truncations, bit flips, insertions and repeated slices."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["truncate", "flip", "insert", "repeat"]))
        pos = draw(st.integers(0, len(data)))
        if op == "truncate":
            del data[pos:]
        elif op == "flip" and pos < len(data):
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        else:
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 64))] * draw(st.integers(2, 50))
    return bytes(data)


def rezip(docx: bytes, member: str, content: bytes) -> bytes:
    """``docx`` with one member replaced: damage inside the XML, past the zip layer."""
    source = zipfile.ZipFile(io.BytesIO(docx))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, content if info.filename == member else source.read(info))
    return out.getvalue()


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(data=st.binary(max_size=3000))
def test_arbitrary_bytes_parse_or_fail_cleanly(fmt, data):
    assert_parses_or_fails_cleanly(data, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@FUZZ
@given(draw=st.data())
def test_mutated_valid_files_parse_or_fail_cleanly(seeds, fmt, draw):
    assert_parses_or_fails_cleanly(draw.draw(mutations(seeds[fmt])), fmt)


@pytest.mark.parametrize("member", ["word/document.xml", "word/styles.xml", "[Content_Types].xml"])
@FUZZ
@given(draw=st.data())
def test_docx_with_damaged_xml_parts_parses_or_fails_cleanly(seeds, member, draw):
    original = zipfile.ZipFile(io.BytesIO(seeds["docx"])).read(member)
    assert_parses_or_fails_cleanly(rezip(seeds["docx"], member, draw.draw(mutations(original))), "docx")


HTML_PIECES = ["<div>", "</div>", "<p>", "</p>", "<tr>", "</tr>", "<td>", "</td>", "<h2>", "</h2>", "<pre>", "</pre>",
               "<main>", "</main>", "<nav>", "</nav>", "<script>", "</script>", "<title>", "</title>", "<!--", "-->",
               "<a href='", "' class=headerlink>", '<div role="main">', "<br/>", "&amp;", "&#12345678901234;",
               "&#x41;", "<", ">", "</", "<!", "<?", "=", '"', "'", "text", " ", "\n", "\u0301"]  # fmt: skip


@FUZZ
@given(pieces=st.lists(st.sampled_from(HTML_PIECES), max_size=80))
def test_streaming_html_reader_survives_any_markup(pieces):
    try:
        doc = parse_html_stream("".join(pieces).encode(), Path("fuzz.html"), "a test")
    except IngestFileError:
        return
    assert all(doc.text[b.start:b.end].strip() for b in doc.blocks)
