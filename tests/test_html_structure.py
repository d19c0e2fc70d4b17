"""HTML as a reader sees it: line breaks, lists in table cells, DocBook admonition boxes, blocks inside inline
elements. Shapes taken from real Debian manuals (apache2-doc, debian-reference, sqlite3-doc), where each one
used to be glued into one run of text ("Foundation.Licensed", "mod_cachemod_cache_disk"). Each page is read by
both HTML readers: the tree reader and the streaming one that takes over for pages lxml cannot hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from localreason.ingest.parse import parse_bytes, parse_html_stream


def page(body: str) -> bytes:
    return f"<html><head><title>T</title></head><body>{body}</body></html>".encode()


def blocks(body: str) -> list[tuple[str, str]]:
    """The (kind, text) of each block, as both readers read them (and they must agree)."""
    data = page(body)
    tree = parse_bytes(data, Path("p.html"), "html")
    stream = parse_html_stream(data, Path("p.html"), "a test")
    assert (stream.text, stream.blocks) == (tree.text, tree.blocks), "both readers read it alike"
    return [(b.kind, tree.text[b.start:b.end]) for b in tree.blocks]


def texts(body: str) -> list[str]:
    return [text for _, text in blocks(body)]


def test_a_br_in_prose_is_a_line_break_not_a_glued_word():
    # Every apache2-doc page's footer: it was stored as "Foundation.Licensed".
    body = ('<p class="apache">Copyright 2026 The Apache Software Foundation.<br>Licensed under the '
            '<a href="https://www.apache.org/licenses/LICENSE-2.0">Apache License, Version 2.0</a>.</p>')
    assert texts(body) == ["Copyright 2026 The Apache Software Foundation.\nLicensed under the Apache License, "
                           "Version 2.0."]  # fmt: skip


def test_the_lines_of_a_code_example_written_with_br_stay_lines():
    # apache2-doc vhosts/fd-limits.html: the script was one line, "#!/bin/sh ulimit -S -n 100 exec httpd".
    body = ('<ul><li><p>using a script like:</p>\n<div class="example"><p><code>\n  <code>#!/bin/sh<br>\n'
            '   ulimit -S -n 100<br>\n   exec httpd</code>\n</code></p></div></li></ul>')
    assert texts(body) == ["using a script like:", "#!/bin/sh\nulimit -S -n 100\nexec httpd"]


def test_br_inside_pre_and_in_a_heading():
    assert texts("<h2>Small. Fast.<br>Reliable.</h2><pre>a = 1<br>b = 2\n  c = 3</pre>") == [
        "Small. Fast. Reliable.", "a = 1\nb = 2\n  c = 3"]


def test_the_items_of_a_list_in_a_table_cell_stay_apart():
    # Every apache2-doc "Related Modules and Directives" box: "mod_cachemod_cache_disk | CacheEnableCacheDisable".
    body = ('<table class="related"><tr><th>Related Modules</th><th>Related Directives</th></tr><tr><td><ul>'
            '<li><code class="module"><a href="mod_cache.html">mod_cache</a></code></li><li><code class="module">'
            '<a href="mod_cache_disk.html">mod_cache_disk</a></code></li></ul></td><td><ul><li><code>CacheEnable'
            '</code></li><li><code>CacheDisable</code></li><li><code>UseCanonicalName</code></li></ul></td></tr>'
            '<tr><td>NUMERIC<br>DECIMAL(10,5)</td><td><p>First paragraph.</p><p>Second one</p><div>a div</div>'
            '</td></tr></table>')
    assert texts(body) == ["Related Modules | Related Directives",
                           "mod_cache; mod_cache_disk | CacheEnable; CacheDisable; UseCanonicalName",
                           "NUMERIC; DECIMAL(10,5) | First paragraph. Second one; a div"]  # fmt: skip


DOCBOOK_TIP = """
<div class="tip" style="margin-left: 0.5in; margin-right: 0.5in;">
  <table border="0" summary="Tip">
    <tr>
      <td rowspan="2" align="center" valign="top"><img alt="[Tip]" src="images/tip.png"/></td>
      <th align="left">Tip</th>
    </tr>
    <tr>
      <td align="left" valign="top">
        <p>You can create a shell script "<code class="literal">/usr/local/bin/kitty</code>"
           as follows.</p>
        <pre class="screen"># cat /usr/local/bin/kitty &lt;&lt;EOF
#!/bin/sh
GLFW_IM_MODULE=ibus exec /usr/bin/kitty "\\$@"
EOF</pre>
        <p>This script can alternatively be stored in "<code class="literal">~/bin/</code>". </p>
      </td>
    </tr>
  </table>
</div>"""


def test_a_docbook_admonition_keeps_its_paragraphs_its_code_lines_and_its_label():
    # debian-reference ch09: the label stood alone and the rest was one line with the heredoc's lines joined.
    assert blocks("<h2>Programs</h2>" + DOCBOOK_TIP + "<p>After the box.</p>") == [
        ("heading", "Programs"),
        ("text", 'Tip: You can create a shell script "/usr/local/bin/kitty" as follows.'),
        ("text", '# cat /usr/local/bin/kitty <<EOF\n#!/bin/sh\nGLFW_IM_MODULE=ibus exec /usr/bin/kitty "\\$@"\nEOF'),
        ("text", 'This script can alternatively be stored in "~/bin/".'),
        ("text", "After the box.")]  # fmt: skip


def test_an_admonition_that_opens_with_code_has_its_label_on_the_line_above():
    box = DOCBOOK_TIP.replace("Tip", "Warning").split("<p>You can")[0]
    body = box + "<pre>rm -rf /tmp/x\n</pre></td></tr></table></div>"
    assert texts(body) == ["Warning:\nrm -rf /tmp/x"]


def test_an_empty_admonition_keeps_its_label_and_a_titled_note_box_is_not_one():
    empty = DOCBOOK_TIP.split("<p>You can")[0] + "</td></tr></table></div><p>Next.</p>"
    assert texts(empty) == ["Tip", "Next."]
    # apache2-doc's notes: a heading, then a data table whose first row has header cells but no icon.
    note = ('<div class="note"><h3>Parameters</h3><table><tr><th>Parameter</th><th>Default</th></tr>'
            "<tr><td>hcpasses</td><td>1</td></tr></table></div>")
    assert texts(note) == ["Parameters", "Parameter | Default", "hcpasses | 1"]


def test_blocks_inside_an_inline_element_or_a_tag_left_open_stay_blocks():
    # sqlite3-doc arch.html writes "<file>" unescaped: libxml2 opens an element that holds the rest of the page,
    # which was one block from there on (headings and code included). json1.html centres its tables.
    body = ("<p>The tokenizer is in the file <file>tokenize.c.<p>Next paragraph.</p><h1>Parser</h1>"
            "<pre>line 1\nline 2</pre></file></p><center><table><tr><th>Function</th><th>Overwrite?</th></tr>"
            "<tr><td>json_insert()</td><td>No</td></tr></table></center>")
    assert blocks(body) == [("text", "The tokenizer is in the file tokenize.c."), ("text", "Next paragraph."),
                            ("heading", "Parser"), ("text", "line 1\nline 2"), ("text", "Function | Overwrite?"),
                            ("text", "json_insert() | No")]  # fmt: skip


def test_a_heading_left_open_is_its_first_text_and_what_follows_is_body_text():
    # sqlite3-doc keyword_index.html: an <h2> never closed held the whole index, stored as one heading.
    body = '<h2 align="center">Keyword Index\n<var class="sidebar">See:<ul><li>Books</li><li>Lists</li></ul></var>'
    assert blocks(body) == [("heading", "Keyword Index See:"), ("text", "Books"), ("text", "Lists")]


@pytest.mark.parametrize(("cells", "read"), [
    ("<td>x</td><td><pre>code 1\ncode 2</pre></td>", ["x", "code 1\ncode 2"]),
    ("<td>x</td><td><table><tr><td>inner</td><td>cell</td></tr></table></td>", ["x", "inner | cell"]),
    ("<td>one cell with text<p>and a paragraph</p></td><td></td>", ["one cell with text", "and a paragraph"]),
])  # fmt: skip
def test_a_row_that_lays_out_code_a_table_or_one_cell_keeps_its_blocks(cells, read):
    assert texts(f"<table><tr><th>A</th><th>B</th></tr><tr>{cells}</tr></table>") == ["A | B", *read]


def test_cells_and_rows_whose_end_tags_are_left_out_are_read_apart():
    body = "<table><tr><td>a<td>b<tr><td>c<td>d</table><p>After.</p>"
    assert texts(body) == ["a | b", "c | d", "After."]


def test_html_stored_by_the_reader_before_is_read_again_once_by_sync(library_of):
    """READER_VERSIONS["html"] 4: a page stored by html 3 (words glued at <br>) is read again on the next sync."""
    lib = library_of({"notice.html": page("<p>Copyright 2026 The Foundation.<br>Licensed under the License.</p>")
                      .decode()})  # fmt: skip
    [doc] = lib.documents()
    assert lib.document_text(doc.id) == "Copyright 2026 The Foundation.\nLicensed under the License."
    lib.store.db.execute("UPDATE documents SET chunking = replace(chunking, ' reader=4', ' reader=3')")
    assert lib.stale_chunking() == 1, "as the reader before left it"
    [report] = lib.sync()
    assert report.counts["updated"] == 1 and lib.stale_chunking() == 0
