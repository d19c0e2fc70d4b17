"""Readers: each format yields normalised text and the right block structure."""

from __future__ import annotations

from pathlib import Path

import pytest

from localreason.errors import IngestFileError
from localreason.ingest.parse import detect_format, normalize, parse_bytes

from files import make_docx, make_pdf

SAMPLES = Path(__file__).resolve().parent.parent / "localreason" / "samples"


def headings(doc):
    return [(doc.text[b.start:b.end], b.depth) for b in doc.blocks if b.kind == "heading"]


def texts(doc):
    return [doc.text[b.start:b.end] for b in doc.blocks if b.kind == "text"]


@pytest.mark.parametrize("name, fmt", [
    ("notes.txt", "text"), ("README", "text"), ("a.md", "markdown"), ("guide.rst", "rst"),
    ("errors.rst.txt", "rst"), ("page.HTML", "html"), ("m.pdf", "pdf"), ("r.docx", "docx"),
    ("main.py", "code"), ("lib.rs", "code"), ("Makefile", "code"), ("photo.png", "image"), ("scan.TIFF", "image"), ("data.bin", None),
])  # fmt: skip
def test_detect_format(name, fmt):
    assert detect_format(Path(name)) == fmt


def test_normalize_newlines_controls_and_spaces():
    raw = "Title\r\nline\u00a0one\u200b\x07  \r\n\r\n\r\n\r\nnext\tword"
    assert normalize(raw) == "Title\nline one\n\nnext\tword"
    assert normalize("a \n b\n\nc", keep_lines=False) == "a b c"


def test_markdown_structure():
    md = b"# Manual\n\nIntro *text* with `code`.\n\n## Reset\n\n- step one\n- step two\n\n```\nreset --hard\n```\n\n" \
         b"| a | b |\n|---|---|\n| 1 | 2 |\n"
    doc = parse_bytes(md, Path("m.md"), "markdown")
    assert doc.title == "Manual"
    assert headings(doc) == [("Manual", 1), ("Reset", 2)]
    assert texts(doc) == ["Intro text with code.", "step one", "step two", "reset --hard", "a | b", "1 | 2"]


def test_rst_sample_headings_roles_and_directives():
    doc = parse_bytes((SAMPLES / "python-tutorial-errors.rst").read_bytes(), Path("errors.rst"), "rst")
    assert doc.title == "Errors and Exceptions"
    hs = headings(doc)
    assert hs[0] == ("Errors and Exceptions", 1)
    assert ("Handling Exceptions", 2) in hs
    assert ":exc:" not in doc.text and ".. index::" not in doc.text and "``" not in doc.text
    assert "ZeroDivisionError" in doc.text


def test_rst_overline_titles_and_note_text():
    src = b"=====\nGuide\n=====\n\nIntro para.\n\nPart\n----\n\n.. note::\n   Keep the receipt.\n\n" \
          b".. index:: single: hidden\n\nSee :func:`open` and ``x``.\n"
    doc = parse_bytes(src, Path("g.rst"), "rst")
    assert headings(doc) == [("Guide", 1), ("Part", 2)]
    assert "Keep the receipt." in doc.text
    assert "hidden" not in doc.text
    assert "See open() and x." in doc.text  # as Sphinx shows a :func: role


def test_html_sample_keeps_main_content_only():
    doc = parse_bytes((SAMPLES / "python-faq-general.html").read_bytes(), Path("faq.html"), "html")
    assert doc.title.startswith("General Python FAQ")
    assert ("What is Python?", 3) in headings(doc)
    assert "¶" not in doc.text
    assert "Navigation" not in doc.text  # the Sphinx sidebar and related bars are dropped
    assert any(t.startswith("Python is an interpreted, interactive, object-oriented") for t in texts(doc))


def test_html_drops_scripts_and_nav():
    html = b"<html><head><title>T</title><script>var x=1;</script></head><body><nav>menu</nav>" \
           b"<h1>Head</h1><p>Body <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul></body></html>"
    doc = parse_bytes(html, Path("t.html"), "html")
    assert doc.title == "T"
    assert doc.text == "Head\n\nBody bold text.\n\none\n\ntwo"


def test_html_tables_in_thead_and_tbody_are_read_row_by_row():
    """As DocBook (the PostgreSQL manual) and most real pages write them; the cells used to be glued
    into one run of text ("OperationStrategy Numberstrictly left of1does not extend ...")."""
    from localreason.ingest.parse import parse_html_stream

    html = (b"<html><body><h1>Strategies</h1><div class='table'><p class='title'>Table 1. R-tree</p><table>"
            b"<colgroup><col/><col/></colgroup><thead><tr><th>Operation</th><th>Strategy Number</th></tr></thead>"
            b"<tbody><tr><td>strictly left of</td><td>1</td></tr><tr><td>overlaps</td><td>3</td></tr></tbody>"
            b"<tfoot><tr><td>total</td><td>2</td></tr></tfoot></table></div><p>After the table.</p></body></html>")
    doc = parse_bytes(html, Path("t.html"), "html")
    assert texts(doc) == ["Table 1. R-tree", "Operation | Strategy Number", "strictly left of | 1", "overlaps | 3",
                          "total | 2", "After the table."]  # fmt: skip
    stream = parse_html_stream(html, Path("t.html"), "a test")
    assert (stream.text, stream.blocks) == (doc.text, doc.blocks), "both readers read it alike"


def test_pdf_pages_are_kept(tmp_path):
    pdf = make_pdf(tmp_path / "m.pdf", [["First page line.", "Still page one."], ["Second page."]])
    doc = parse_bytes(pdf.read_bytes(), pdf, "pdf")
    assert [(doc.text[b.start:b.end], b.page) for b in doc.blocks] == [
        ("First page line.\nStill page one.", 1), ("Second page.", 2)]


def test_docx_title_headings_and_table(tmp_path):
    path = make_docx(tmp_path / "r.docx", "Inverter Manual", [("Warranty", ["Five years from purchase."])])
    doc = parse_bytes(path.read_bytes(), path, "docx")
    assert doc.title == "Inverter Manual"
    assert ("Warranty", 1) in headings(doc)
    assert "Five years from purchase." in texts(doc)
    assert "Inverter | five years" in texts(doc)


def test_plain_text_headings():
    src = b"USER GUIDE\n\nIntro text.\n\nInstallation\n============\nRun the installer.\n"
    doc = parse_bytes(src, Path("g.txt"), "text")
    assert headings(doc) == [("USER GUIDE", 1), ("Installation", 1)]
    assert "Run the installer." in texts(doc)


def test_code_has_no_headings():
    doc = parse_bytes(b"import os\n\n\ndef main():\n    return 1\n", Path("m.py"), "code")
    assert headings(doc) == [] and "def main():\n    return 1" in doc.text


def test_non_utf8_is_decoded_with_a_note():
    data = "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e, na\u00efve r\u00e9sum\u00e9 for the gar\u00e7on. " * 20
    doc = parse_bytes(data.encode("cp1252"), Path("menu.txt"), "text")
    assert "Café crème brûlée" in doc.text
    assert doc.notes and "not UTF-8" in doc.notes[0]


def test_utf16_with_bom():
    doc = parse_bytes("Hello wide world".encode("utf-16"), Path("w.txt"), "text")
    assert doc.text == "Hello wide world"


@pytest.mark.parametrize("data, fmt, status, words", [
    (b"", "text", "skipped", "empty"),
    (b"   \n\n  ", "markdown", "skipped", "empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR", "text", "skipped", "binary"),
    (b"%PDF-1.4\n1 0 obj garbage", "pdf", "failed", "corrupt"),
    (b"PK\x03\x04 not really a zip", "docx", "failed", "not a valid DOCX"),
])  # fmt: skip
def test_bad_bytes_raise_with_reason(data, fmt, status, words):
    with pytest.raises(IngestFileError) as err:
        parse_bytes(data, Path("x"), fmt)
    assert err.value.status == status and words in err.value.message


def test_a_word_broken_at_a_pdf_line_end_is_one_word_and_an_options_hyphen_stays(tmp_path):
    """pdfium marks a hyphen at a line end it joined with U+FFFE: "docu\\ufffement" matched no search for
    "document", and "--no\\ufffecolor" none for "--no-color"."""
    from files import make_pdf

    pdf = make_pdf(tmp_path / "h.pdf", [["The configuration docu-", "ment explains every option.", "Use the --no-",
                                         "color option to switch colours off."]])  # fmt: skip
    text = parse_bytes(pdf.read_bytes(), pdf, "pdf").text
    assert "configuration document explains" in text and "--no-color option" in text and "\ufffe" not in text, text


def test_a_soft_hyphen_is_not_part_of_the_word():
    text = parse_bytes("<p>Die Konfigu&shy;rations&shy;datei</p>".encode(), Path("s.html"), "html").text
    assert text == "Die Konfigurationsdatei"


def test_markdowns_html_line_breaks_and_entities_read_as_drawn():
    """"-a<br>--all" in a table cell was stored "-a--all", "line one<br>line two" as "line oneline two", and an HTML
    block's "&amp;" as written."""
    md = (b"line one<br>line two\n\n| opt | what |\n|---|---|\n| `-a`<br>`--all` | all files<br>even hidden |\n\n"
          b"<div>Tom &amp; Jerry</div>\n")
    text = parse_bytes(md, Path("a.md"), "markdown").text
    assert text == "line one\nline two\n\nopt | what\n\n-a --all | all files even hidden\n\nTom & Jerry", text


def test_a_list_in_a_rest_table_cell_keeps_its_items_apart():
    rst = (b".. list-table::\n   :header-rows: 1\n\n   * - option\n     - effect\n   * - ``--fast``\n"
           b"     - * skips checks\n       * uses cache\n   * - ``--slow``\n     - Checks everything, twice.\n")
    text = parse_bytes(rst, Path("a.rst"), "rst").text
    assert text == "option | effect\n\n--fast | skips checks; uses cache\n\n--slow | Checks everything, twice.", text


def test_a_man_page_rendered_to_text_has_its_sections_and_a_form_feed_parts_pages():
    """`man ls > ls.txt` puts each section's indented body right under its name: no section was found, so no option
    had a heading; a form feed inside a line glued the two pages' words ("feed.Third")."""
    man = (b"NAME\n       ls - list directory contents\n\nOPTIONS\n       -a, --all\n              do not ignore entries"
           b" starting with .\n\n       -B, --ignore-backups\n              do not list implied entries ending with ~\n"
           b"\nfeed.\x0cThird page\n")
    doc = parse_bytes(man, Path("ls.txt"), "text")
    assert headings(doc) == [("NAME", 1), ("OPTIONS", 1)], headings(doc)
    assert "feed.\n\nThird page" in doc.text


def test_a_docx_text_box_and_a_table_nested_in_a_cell_keep_their_text(tmp_path):
    """A warning drawn in a text box, and a table inside a table's cell, were left out of the library; Word writes
    each text box twice (the second for old readers, mc:Fallback), and it is read once."""
    from files import make_docx_with_body

    box = ("<w:txbxContent><w:p><w:r><w:t>Warning: disconnect mains before opening.</w:t></w:r></w:p>"
           "</w:txbxContent>")  # fmt: skip
    body = ("<w:p><w:r><w:t>Before box.</w:t></w:r></w:p><w:p><w:r><w:t xml:space=\"preserve\">Anchor </w:t></w:r>"
            f"<w:r><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:drawing><wp:anchor><wps:wsp><wps:txbx>{box}"
            f"</wps:txbx></wps:wsp></wp:anchor></w:drawing></mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox>{box}"
            "</v:textbox></v:shape></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
            "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Outer cell</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>Inner A"
            "</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>Inner B</w:t></w:r></w:p></w:tc></w:tr></w:tbl><w:p/></w:tc>"
            "<w:tc><w:p><w:r><w:t>Second cell</w:t></w:r></w:p></w:tc></w:tr></w:tbl>")  # fmt: skip
    path = make_docx_with_body(tmp_path / "box.docx", body.encode())
    text = parse_bytes(path.read_bytes(), path, "docx").text
    assert text.count("Warning: disconnect mains before opening.") == 1, text
    assert "Outer cell Inner A Inner B | Second cell" in text, text
