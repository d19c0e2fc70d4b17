"""Ingest keeps every word a reader sees: per format, the constructs that used to lose or garble text.

Each fixture is written with what its rendered page shows (Sphinx for reST, a browser for HTML, Word for
DOCX); the stored text must hold those words, in order, and no markup a reader never sees.
bench/quality/fidelity.py measures the same on real documents against independent renderers.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from localreason.ingest.parse import parse_bytes

from files import make_docx, make_docx_with_body, make_pdf


def words(text: str) -> str:
    return " " + " ".join(re.findall(r"\w+", text.lower())) + " "


def assert_shows(stored: str, *rendered: str) -> None:
    """Each rendered line's words occur in the stored text, in order."""
    flat = words(stored)
    for line in rendered:
        assert words(line) in flat, f"{line!r} is not stored as a reader sees it:\n{stored}"


RST = b"""\
:mod:`bisect` --- Array bisection algorithm
===========================================

.. module:: bisect
   :synopsis: Array bisection algorithms.

.. sectionauthor:: Someone <someone@example.org>

If a cache helps, consider wrapping it with
:func:`functools.cache` to avoid duplicate computations.  Alternatively,
consider searching an array of precomputed keys.

Accept a connection with :meth:`socket.accept() <socket.socket.accept>` and send with
:meth:`~socket.socket.sendto`.  See :pep:`8` and :rfc:`2822`.

.. function:: bisect_left(a, x, lo=0, hi=len(a), *, key=None)

   Locate the insertion point for *x* in *a*.

   .. versionchanged:: 3.10
      Added the *key* parameter.

.. class:: Sorter(items)

   .. method:: insort(x)

      Insert *x* in order.

:param items: the values to keep sorted
:type items: list
:returns: nothing at all

term one
   The definition of the first term.

>>> data = b'Lorem ipsum dolor sit amet'
>>> for line in data.split():
...     print(line)
...
b'Lorem'

.. note::
   Keep the receipt for the warranty.

.. seealso:: Module :mod:`heapq` for heaps.

.. index:: single: hidden-index-entry

=====  =====
Name   Value
=====  =====
alpha  one
=====  =====
"""


def test_rst_keeps_what_sphinx_shows():
    doc = parse_bytes(RST, Path("bisect.rst"), "rst")
    assert_shows(
        doc.text,
        "bisect — Array bisection algorithm",
        "If a cache helps, consider wrapping it with functools.cache() to avoid duplicate computations. "
        "Alternatively, consider searching an array of precomputed keys.",  # a line starting with a role
        "Accept a connection with socket.accept() and send with sendto().",  # explicit title, ~ shortened
        "See PEP 8 and RFC 2822.",
        "bisect.bisect_left(a, x, lo=0, hi=len(a), *, key=None)",  # the signature, with its module
        "Locate the insertion point for x in a.",
        "Changed in version 3.10: Added the key parameter.",  # the version label
        "class bisect.Sorter(items)", "insort(x)", "Insert x in order.",  # a directive's body
        "Parameters: items (list) – the values to keep sorted", "Returns: nothing at all",  # a field list
        "term one", "The definition of the first term.",  # a definition list
        "...     print(line)", "b'Lorem'",  # a doctest block keeps its continuation lines and output
        "Note", "Keep the receipt for the warranty.", "See also", "Module heapq for heaps.",
        "Name | Value", "alpha | one",  # a table, row by row
    )  # fmt: skip
    assert doc.title == "bisect --- Array bisection algorithm"
    for hidden in (":func:", ":meth:", "\n.. ", "sectionauthor", "someone@example.org", "hidden-index-entry",
                   "synopsis", "socket.socket.accept", "=====", ":param", ":type"):  # fmt: skip
        assert hidden not in doc.text, hidden


def test_rst_paragraphs_are_one_line_so_sentences_start_where_they_start():
    src = b"You can\ncheck if an object\nis an instance of any of a number of classes by providing a tuple.\n"
    doc = parse_bytes(src, Path("a.rst"), "rst")
    assert doc.text == "You can check if an object is an instance of any of a number of classes by providing a tuple."


def test_rst_a_section_label_referenced_in_the_same_file_shows_its_title():
    src = b"See :ref:`errors` for details.\n\n.. _errors:\n\nHandling errors\n---------------\n\nText.\n"
    assert "See Handling errors for details." in parse_bytes(src, Path("a.rst"), "rst").text


def test_rst_that_docutils_cannot_parse_is_kept_as_plain_text():
    deep = b"".join(b"  " * i + b"* level\n\n" for i in range(400))  # nested past the recursion limit
    doc = parse_bytes(deep, Path("deep.rst"), "rst")
    assert doc.text.count("level") == 400


ROLE_NAMES = st.sampled_from(["func", "meth", "class", "mod", "data", "attr", "exc", "term", "envvar", "c:func",
                              "py:meth", "ref", "doc", "option", "keyword"])  # fmt: skip
WORDS = st.text("abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=9)


@st.composite
def rst_lines(draw) -> tuple[list[str], list[str]]:
    """Lines of one reST paragraph (each may start with a role, or look like a field) and what each shows."""
    source, shown = [], []
    for _ in range(draw(st.integers(2, 6))):
        ws = draw(st.lists(WORDS, min_size=3, max_size=8))
        kind = draw(st.sampled_from(["plain", "role", "titled", "field-like"]))
        if kind == "role":
            name = draw(ROLE_NAMES)
            source.append(f":{name}:`{ws[0]}.{ws[1]}` " + " ".join(ws[2:]))
            shown.append(f"{ws[0]}.{ws[1]} " + " ".join(ws[2:]))
        elif kind == "titled":
            source.append(f":{draw(ROLE_NAMES)}:`{ws[0]} <{ws[1]}>` " + " ".join(ws[2:]))
            shown.append(" ".join([ws[0], *ws[2:]]))
        elif kind == "field-like":  # a wrapped line that happens to start with ":word:" text
            source.append(f"{ws[0]} :{ws[1]}: " + " ".join(ws[2:]))
            shown.append(" ".join(ws))
        else:
            source.append(" ".join(ws))
            shown.append(" ".join(ws))
    return source, shown


@settings(max_examples=150, deadline=None)
@given(rst_lines(), st.integers(0, 6))
def test_no_line_of_a_rst_paragraph_vanishes(lines, indent):
    source, shown = lines
    pad = " " * indent
    body = "\n".join(pad + line for line in source)
    text = parse_bytes(f"Title\n=====\n\nFirst paragraph.\n\n{body}\n".encode(), Path("p.rst"), "rst").text
    assert_shows(text, *shown)


def test_markdown_keeps_text_of_lists_tables_code_and_links():
    md = (b"# Guide\n\nSee [the manual](http://x) and `reset()`.\n\n1. First step\n2. Second step\n\n"
          b"| Key | Value |\n|---|---|\n| a | one |\n\n```sh\nreset --hard\n```\n\n> Quoted advice here.\n")  # fmt: skip
    doc = parse_bytes(md, Path("g.md"), "markdown")
    assert_shows(doc.text, "Guide", "See the manual and reset().", "1. First step", "2. Second step", "Key | Value",
                 "a | one", "reset --hard", "Quoted advice here.")  # fmt: skip
    assert "](" not in doc.text and "```" not in doc.text


def test_html_keeps_main_content_sidebars_and_entities():
    html = (b"<html><body><nav>menu</nav><div role='main'><h1>Guide</h1><aside class='sidebar'><p>Hello World "
            b"example</p></aside><p>Fish &amp; chips &lt;3 caf&eacute;</p><dl><dt>term</dt><dd>its meaning</dd></dl>"
            b"</div></body></html>")  # fmt: skip
    doc = parse_bytes(html, Path("g.html"), "html")
    assert_shows(doc.text, "Guide", "Hello World example", "Fish & chips <3 café", "term", "its meaning")
    assert "menu" not in doc.text and "&amp;" not in doc.text


def test_docx_keeps_headings_paragraphs_tables_and_footnotes(tmp_path):
    path = make_docx(tmp_path / "r.docx", "Inverter Manual", [("Warranty", ["Five years from purchase."])])
    doc = parse_bytes(path.read_bytes(), path, "docx")
    assert_shows(doc.text, "Inverter Manual", "Warranty", "Five years from purchase.", "Inverter | five years")


W = b'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def with_part(path: Path, name: str, xml: bytes) -> Path:
    """``path`` (a DOCX) with a part ``word/<name>.xml`` holding ``xml`` (footnotes, numbering), linked as Word
    links it: a relationship of the main document and a content type."""
    import io
    import zipfile

    base = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
    rel = f'<Relationship Id="rId{name}" Target="{name}.xml" Type="{base}{name}"/>'.encode()
    kind = (f'<Override PartName="/word/{name}.xml" ContentType="application/'
            f'vnd.openxmlformats-officedocument.wordprocessingml.{name}+xml"/>').encode()  # fmt: skip
    source = zipfile.ZipFile(io.BytesIO(path.read_bytes()))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "word/_rels/document.xml.rels":
                data = data.replace(b"</Relationships>", rel + b"</Relationships>")
            elif info.filename == "[Content_Types].xml":
                data = data.replace(b"</Types>", kind + b"</Types>")
            if info.filename != f"word/{name}.xml":
                out.writestr(info.filename, data)
        out.writestr(f"word/{name}.xml", xml)
    return path


def test_docx_keeps_inserted_text_content_controls_and_footnotes_but_not_deleted_text(tmp_path):
    body = (b"<w:p><w:r><w:t>The warranty lasts </w:t></w:r><w:ins w:id='1' w:author='a'><w:r><w:t>ten</w:t></w:r>"
            b"</w:ins><w:del w:id='2' w:author='a'><w:r><w:delText>five</w:delText></w:r></w:del><w:r><w:t> years."
            b"</w:t></w:r><w:r><w:footnoteReference w:id='1'/></w:r></w:p>"
            b"<w:sdt><w:sdtContent><w:p><w:r><w:t>Inside a content control.</w:t></w:r></w:p></w:sdtContent></w:sdt>"
            b"<w:p><w:fldSimple w:instr='DATE'><w:r><w:t>2 December 2026</w:t></w:r></w:fldSimple></w:p>")  # fmt: skip
    notes = (b"<w:footnote w:type='separator' w:id='-1'><w:p><w:r><w:separator/></w:r></w:p></w:footnote>"
             b"<w:footnote w:id='1'><w:p><w:r><w:t>Registered products only.</w:t></w:r></w:p></w:footnote>")
    notes = b"<w:footnotes " + W + b">" + notes.replace(b"'", b'"') + b"</w:footnotes>"
    path = with_part(make_docx_with_body(tmp_path / "w.docx", body.replace(b"'", b'"')), "footnotes", notes)
    doc = parse_bytes(path.read_bytes(), path, "docx")
    assert_shows(doc.text, "The warranty lasts ten years. [1]", "Inside a content control.", "2 December 2026",
                 "[1] Registered products only.")  # fmt: skip
    assert "five" not in doc.text


NUMBERING = (b"<w:numbering " + W + b"><w:abstractNum w:abstractNumId=\"0\">"
             b"<w:lvl w:ilvl=\"0\"><w:start w:val=\"1\"/><w:numFmt w:val=\"decimal\"/><w:lvlText w:val=\"%1.\"/></w:lvl>"
             b"<w:lvl w:ilvl=\"1\"><w:start w:val=\"1\"/><w:numFmt w:val=\"lowerLetter\"/><w:lvlText w:val=\"%2)\"/></w:lvl>"
             b"</w:abstractNum><w:num w:numId=\"1\"><w:abstractNumId w:val=\"0\"/></w:num></w:numbering>")  # fmt: skip
"""List 1: "1.", "2." at level 0 and "a)", "b)" at level 1."""


def test_docx_numbered_paragraphs_show_their_numbers(tmp_path):
    def item(level: int, text: str) -> bytes:
        return (f'<w:p><w:pPr><w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="1"/></w:numPr></w:pPr>'
                f"<w:r><w:t>{text}</w:t></w:r></w:p>").encode()

    body = item(0, "Unplug the unit.") + item(1, "Wait ten seconds.") + item(1, "Press reset.") + item(0, "Plug it in.")
    path = with_part(make_docx_with_body(tmp_path / "n.docx", body), "numbering", NUMBERING)
    doc = parse_bytes(path.read_bytes(), path, "docx")
    assert_shows(doc.text, "1. Unplug the unit.", "a) Wait ten seconds.", "b) Press reset.", "2. Plug it in.")


def test_markdown_footnotes_are_kept_with_their_numbers():
    md = b"# Notes\n\nCurves are supported[^1] here.\n\n[^1]: An experimental\n    implementation.\n"
    doc = parse_bytes(md, Path("n.md"), "markdown")
    assert_shows(doc.text, "Curves are supported[1] here.", "[1] An experimental implementation.")


def test_pdf_keeps_every_line_of_every_page(tmp_path):
    pdf = make_pdf(tmp_path / "m.pdf", [["The inverter warranty lasts five", "years from purchase."],
                                        ["Page two holds the reset steps."]])  # fmt: skip
    doc = parse_bytes(pdf.read_bytes(), pdf, "pdf")
    assert_shows(doc.text, "The inverter warranty lasts five years from purchase.", "Page two holds the reset steps.")


def test_plain_text_keeps_every_word():
    src = b"NOTES\n\nThe pump is\nserviced yearly.\n\nParts\n=====\nFilter, hose.\n"
    doc = parse_bytes(src, Path("n.txt"), "text")
    assert_shows(doc.text, "NOTES", "The pump is serviced yearly.", "Parts", "Filter, hose.")


def test_rst_substitutions_nested_cyclic_and_case_insensitive():
    def text(src: str) -> str:
        return parse_bytes(src.encode(), Path("s.rst"), "rst").text

    assert text("See |a|.\n\n.. |b| replace:: bee\n.. |a| replace:: x |b| y\n") == "See x bee y."
    assert text(".. |a| replace:: |a|\n\nSee |a| now.\n") == "See now."  # a cycle is empty, not a lost file
    assert text("Use |python|.\n\n.. |Python| replace:: CPython\n") == "Use CPython."


def test_rst_warnings_do_not_repeat_the_source_and_footnotes_keep_their_numbers():
    assert parse_bytes(b"Hello world\n=====\n\nBody text.\n", Path("w.rst"), "rst").text == "Hello world\n\nBody text."
    src = b"See [#a]_ and again [#a]_ then [#b]_.\n\n.. [#a] First note.\n\n.. [#b] Second note.\n"
    assert parse_bytes(src, Path("f.rst"), "rst").text.startswith("See [1] and again [1] then [2].")


def test_a_rst_role_directive_changes_nothing_for_later_documents():
    import docutils.core

    parse_bytes(b".. role:: emphasis(raw)\n   :format: html\n\nHello.\n", Path("r.rst"), "rst")
    assert parse_bytes(b"See :emphasis:`bar` now.\n", Path("s.rst"), "rst").text == "See bar now."
    assert b"<em>bar</em>" in docutils.core.publish_string("See *bar* now.", writer_name="html")


def test_a_markdown_list_number_stays_with_its_item():
    text = parse_bytes(b"1. ```\n   code\n   ```\n\nAfter the list.\n\n- b bullet\n", Path("l.md"), "markdown").text
    assert "1. After" not in text and "1. b" not in text and "After the list." in text


def test_docx_content_controls_inside_tables_are_read(tmp_path):
    body = (b'<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Name</w:t></w:r></w:p></w:tc><w:tc><w:sdt><w:sdtContent><w:p><w:r>'
            b'<w:t>Alice Smith</w:t></w:r></w:p></w:sdtContent></w:sdt></w:tc></w:tr><w:sdt><w:sdtContent><w:tr><w:tc>'
            b'<w:p><w:r><w:t>Row two</w:t></w:r></w:p></w:tc></w:tr></w:sdtContent></w:sdt></w:tbl>')  # fmt: skip
    path = make_docx_with_body(tmp_path / "form.docx", body)
    assert_shows(parse_bytes(path.read_bytes(), path, "docx").text, "Name | Alice Smith", "Row two")
