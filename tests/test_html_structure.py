"""HTML as a reader sees it: line breaks, lists in table cells, DocBook admonition boxes, blocks inside inline
elements, list numbers, sup and sub, callouts, navigation captions. Shapes taken from real Debian manuals (apache2-doc, debian-reference, sqlite3-doc), where each one
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
    """READER_VERSIONS["html"] 6: a page stored by html 5 (an article's header dropped) is read again on the next
    sync (html 5 did the same for html 4's 2<sup>31</sup> read as 231, html 4 for html 3's words glued at <br>)."""
    lib = library_of({"limits.html": page("<p>Copyright 2026 The Foundation.<br>A string holds up to 2<sup>31</sup>-1"
                                          " bytes.</p>").decode()})  # fmt: skip
    [doc] = lib.documents()
    assert lib.document_text(doc.id) == "Copyright 2026 The Foundation.\nA string holds up to 2^31-1 bytes."
    lib.store.db.execute("UPDATE documents SET chunking = replace(chunking, ' reader=6', ' reader=5')")
    assert lib.stale_chunking() == 1, "as the reader before left it"
    [report] = lib.sync()
    assert report.counts["updated"] == 1 and lib.stale_chunking() == 0


# ---------------------------------------------------------------- what a browser draws beside the words


def test_sup_and_sub_read_as_they_are_drawn_not_as_other_numbers():
    # sqlite3-doc limits.html: "up to 2<small><sup>31</sup></small>-1" was stored as "up to 231-1", 2^64 as "264".
    body = ("<p>A length up to 2<small><sup>31</sup></small>-1 or 2147483647; at most 2<sup><small>64</small></sup>"
            " rows; an O(N<sup>2</sup>) loop; x<sup>n+1</sup>; 10<sup>-3</sup> seconds; F = M &times; 2<sup>E</sup>;"
            " log<sub>2</sub>(n) of N<sub><small>left</small></sub> rows; the 11<sup><small>th</small></sup> one;"
            " a note<sup>[4]</sup>, a mark<sup>(1)</sup>, changeset C<sup>+</sup>.</p>")
    assert texts(body) == ["A length up to 2^31-1 or 2147483647; at most 2^64 rows; an O(N^2) loop; x^(n+1); "
                           "10^-3 seconds; F = M \u00d7 2^E; log_2(n) of N_left rows; the 11th one; a note[4], "
                           "a mark(1), changeset C+."]  # fmt: skip
    assert texts("<table><tr><td>2<sup>32</sup></td><td>4 GB</td></tr></table><pre>n = 2<sup>8</sup></pre>") == [
        "2^32 | 4 GB", "n = 2^8"]


def headings(body: str) -> list[tuple[str, int]]:
    """The (text, depth) of each heading, as both readers read them."""
    blocks(body)
    doc = parse_bytes(page(body), Path("p.html"), "html")
    return [(doc.text[b.start:b.end], b.depth) for b in doc.blocks if b.kind == "heading"]


PRAGMAS = """<h2>List Of PRAGMAs</h2><p>The pragmas are listed below.</p>
<a name="pragma_automatic_index"></a>
<h _id=pragma_automatic_index style="display:none"> PRAGMA automatic_index</h><hr>
    <p><b>PRAGMA automatic_index;</b></p>
    <p>Query, set, or clear the automatic indexing capability.
    <p>Automatic indexing is enabled by default,
    but this might change in future releases of SQLite.
<a name="pragma_busy_timeout"></a>
<h _id=pragma_busy_timeout style="display:none"> PRAGMA busy_timeout</h><hr>
    <p><b>PRAGMA busy_timeout;</b></p>"""


def test_sqlites_pragma_names_are_headings_of_their_own():
    # sqlite3-doc pragma.html names each pragma in an <h> (XHTML 2's heading) inside the paragraph left open before
    # it: the name was glued to that paragraph, "...future releases of SQLite. PRAGMA busy_timeout" (27 of them).
    assert texts(PRAGMAS)[-3:] == ["Automatic indexing is enabled by default, but this might change in future "
                                   "releases of SQLite.", "PRAGMA busy_timeout", "PRAGMA busy_timeout;"]  # fmt: skip
    assert headings(PRAGMAS) == [("List Of PRAGMAs", 2), ("PRAGMA automatic_index", 3), ("PRAGMA busy_timeout", 3)]


def test_publicans_navigation_captions_are_a_line_of_their_own():
    # debian-handbook: the stylesheet shows "Prev"/"Next" above the link; they were "PrevChapter 6." and "Next6.3.".
    body = ('<p>Last paragraph.</p><ul class="docnav"><li class="previous"><a accesskey="p" href="apt.html"><strong>'
            'Prev</strong>Chapter 6. Maintenance and Updates: The APT Tools</a></li><li class="up"><a accesskey="u" '
            'href="#"><strong>Up</strong></a></li><li class="next"><a accesskey="n" href="sect.apt-cache.html">'
            "<strong>Next</strong>6.3. The apt-cache Command</a></li></ul>")
    assert texts(body) == ["Last paragraph.", "Prev\nChapter 6. Maintenance and Updates: The APT Tools", "Up",
                           "Next\n6.3. The apt-cache Command"]  # fmt: skip
    assert texts("<p><strong>Prev</strong>ious versions</p>") == ["Previous versions"], "elsewhere: as written"


def test_ordered_lists_show_their_numbers_from_start_and_value():
    # sqlite3-doc: tempfiles.html numbers SQLITE_TEMP_STORE's values with <li value="0">, pragma.html the bits of
    # optimize's mask (1, 2, 4, 8), lang_datefunc.html the twelve time formats the text calls "format 12".
    body = ('<p>Its meaning:</p><ol type="1"><li value="0">Always on disk.<li value="1">On disk by default.</ol>'
            "<ol><li value='1'><p>Debugging mode.</p><li value='4'><p>Run ANALYZE.</p><li>Next bit.</ol>"
            "<ol start=11><li> <b>now</b></li><li> <i>DDDDDDDDDD</i></li></ol>"
            "<ol type=a><li>First<ol class='upperroman simple'><li>inner one<li>inner two</ol><li>Second</ol>"
            "<ol reversed start=3><li>three<li>two</ol><ul><li>a bullet</ul>"
            "<ol><li style='list-style:none'>unnumbered</li><li>counted on</li><li></li><li>after an empty one</ol>")
    assert texts(body) == ["Its meaning:", "0. Always on disk.", "1. On disk by default.", "1. Debugging mode.",
                           "4. Run ANALYZE.", "5. Next bit.", "11. now", "12. DDDDDDDDDD", "a. First",
                           "I. inner one", "II. inner two", "b. Second", "3. three", "2. two", "a bullet",
                           "unnumbered", "2. counted on", "4. after an empty one"]  # fmt: skip


def test_the_items_of_a_list_whose_markup_is_left_open_are_numbered_alike_by_both_readers():
    # sqlite3-doc c3ref/prepare.html: "<p><ol><li>...</li></p><p><li>...": libxml2 ends the paragraph at the list
    # and at each item; the streaming reader does so too (blocks() checks that both agree).
    body = ("<p>Three ways:</p><p><ol>\n<li>\nFirst way.\n</li></p>\n\n<p><li>\nSecond way.\n</li></p>\n</ol></p>"
            "<table><tr><td><ol><li>a<li>b</ol></td><td>c</td></tr></table>")
    assert texts(body) == ["Three ways:", "1. First way.", "2. Second way.", "1. a; 2. b | c"]


SELINUX = """<pre class="programlisting">policy_module(example,1.0.0) <span id="example.te.module"><img class="callout"
 src="Common_Content/images/1.png" alt="1" /></span> # a non-base module name must match the file name
type myapp_t; <span id="example.te.type"><img class="callout" src="Common_Content/images/2.png" alt="2" /></span>
type myapp_exec_t;</pre><div class="calloutlist"><table border="0" summary="Callout list"><tr><td width="5%"
valign="top" align="left"><p><a href="#example.te.module"><img class="callout" src="Common_Content/images/1.png"
alt="1" /></a> </p></td><td valign="top" align="left"><div class="para">
  The module must be identified by its name and version number.
</div></td></tr><tr><td width="5%" valign="top" align="left"><p><a href="#example.te.type"><img class="callout"
src="Common_Content/images/2.png" alt="2" /></a> </p></td><td valign="top" align="left"><div class="para">
  If the module introduces new types, it must declare them.</div><div class="para">A second paragraph.</div>
</td></tr></table></div>"""


def test_docbook_callouts_keep_their_numbers_in_the_code_and_in_the_list_that_explains_them():
    # debian-handbook sect.selinux.html (example.te), Samba's smb.conf: the numbers were images, so the code lost
    # its marks and each explanation its number.
    assert texts(SELINUX) == [
        "policy_module(example,1.0.0) (1) # a non-base module name must match the file name\ntype myapp_t; (2)\n"
        "type myapp_exec_t;", "(1) The module must be identified by its name and version number.",
        "(2) If the module introduces new types, it must declare them.", "A second paragraph."]  # fmt: skip


def test_options_written_with_non_breaking_hyphens_are_found_typed_with_ascii_ones(library_of):
    """sqlite3-doc cli.html writes .expert's options with U+2011 (‑‑sample); the text keeps them as written, and the
    index splits words at every dash on both stores, so "--sample" finds them. A guard: this held before html 5."""
    from localreason.textquery import index_words

    assert index_words("\u2011\u2011sample PERCENT, foo\u2010bar \u2012 x\u2013y") == index_words(
        "--sample percent, foo-bar - x-y")
    lib = library_of({"cli.html": '<meta charset="utf-8">' + page(
        "<p>The .expert command accepts the following options:</p><table><tr><th>Option</th><th>Purpose</th></tr>"
        "<tr><td>\u2011\u2011sample PERCENT</td><td>Sample the tables for statistics.</td></tr></table>").decode()})
    [hit, *_] = lib.deep_search("--sample", limit=3)
    assert "\u2011\u2011sample PERCENT | Sample the tables" in hit.content


def test_an_articles_header_and_footer_and_a_page_that_is_one_form_keep_their_text():
    """A <header> or <footer> inside the main content (an article's title and lead, a section's heading) and a
    page written as one <form> (ASP.NET) were dropped whole: no headings, and a form page read as "no text"."""
    body = ("<header><p>Site banner</p></header><main><article><header><h1>rsync(1)</h1><p>A fast, versatile file "
            "copying tool.</p></header><section><header><h2>Options</h2></header><dl><dt>--delete</dt><dd>Delete "
            "extraneous files.</dd></dl></section><footer><p>See also: ssh(1).</p></footer></article></main>"
            "<footer><p>Copyright of the site</p></footer>")
    assert blocks(body) == [("heading", "rsync(1)"), ("text", "A fast, versatile file copying tool."),
                            ("heading", "Options"), ("text", "--delete"), ("text", "Delete extraneous files."),
                            ("text", "See also: ssh(1).")]  # fmt: skip
    form = '<form id="form1"><h1>Printer help</h1><p>Hold the reset button for ten seconds.</p><button>Go</button></form>'
    assert blocks(form) == [("heading", "Printer help"), ("text", "Hold the reset button for ten seconds.")]
