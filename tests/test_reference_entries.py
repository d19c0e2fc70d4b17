"""A configuration reference's entries: a setting's name on a line of its own (HTML's <dt>, "query_mem (integer)")
or before its description on one line (a Markdown definition list, "checkpoint_timeout (integer) : Maximum ..."),
then sentences, one of them its default. A probe of such a reference (a database's settings, written for it) found
"What is the default value of X?" answered with a neighbouring setting's default: the passage packing left the
name at the end of the passage before, and a default sentence was quoted without its name when the description
before it was long, or when the name stood on its line."""

from __future__ import annotations

from pathlib import Path

from localreason.ingest.chunk import ChunkParams, chunk_document, names_entry
from localreason.ingest.parse import parse_bytes
from localreason.reason.candidates import candidates
from localreason.types import LEVEL_PARAGRAPH

SETTING = ("Specifies the largest amount of memory a sort may use before it spills to temporary files on disk. If "
           "this value is specified without units, it is taken as kilobytes. Note that a query may run several sorts "
           "at once, each of them allowed this much memory. The default value is eight megabytes (8MB).")


def test_a_default_after_a_long_description_is_quoted_from_the_settings_name():
    text = f"sort_mem (integer)\n\n{SETTING}\n\nspill_dir (string)\n\nWhere sorts spill. The default is pg_tmp."
    quoted = [c.text for c in candidates([("c", text)])]
    assert f"sort_mem (integer)\n\n{SETTING}" in quoted, quoted
    assert "The default value is eight megabytes (8MB)." not in quoted, "never without its setting's name"
    assert "spill_dir (string)\n\nWhere sorts spill. The default is pg_tmp." in quoted
    prose = f"Some notes on memory.\n\n{SETTING}"
    assert [c.text for c in candidates([("c", prose)])][-1] == "The default value is eight megabytes (8MB).", \
        "no entry above it: quoted as it is"
    long = "sort_mem (integer)\n\n" + " ".join(["It is read at start."] * 6) + " The default is 8MB."
    assert [c.text for c in candidates([("c", long)])][-1] == "The default is 8MB.", "past five sentences: alone"


def test_a_default_on_a_definition_lists_line_is_quoted_from_its_term():
    text = ("checkpoint_timeout (integer) : Maximum time between automatic checkpoints. The valid range is between "
            "30 seconds and one day. The default is five minutes (5min).\n\ncheckpoint_warning (integer) : Write a "
            "message if checkpoints come closer together than this. The default is 30 seconds (30s).")
    quoted = [c.text for c in candidates([("c", text)])]
    assert quoted == [text.split("\n\n")[0], text.split("\n\n")[1]], quoted
    plain = "Timeouts : most of them can be changed at run time. The default is five minutes."
    assert [c.text for c in candidates([("c", plain)])][-1] == "The default is five minutes.", \
        "a word before a colon that is no setting's name is no entry"


def test_an_entrys_name_is_packed_with_its_description_not_at_the_end_of_the_passage_before():
    assert names_entry("query_mem (integer)") and names_entry("-n requests") and names_entry("-v, --verbose")
    assert not names_entry("$ chvt 3") and not names_entry("Python 3.11") and not names_entry("See below.")
    html = "<h1>Memory</h1><dl>" + "".join(
        f"<dt><code>setting_{i}</code> (<code>integer</code>)</dt><dd><p>{SETTING}</p></dd>" for i in range(6)) + "</dl>"
    doc = parse_bytes(html.encode(), Path("settings.html"), "html")
    paras = [c.text for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", ChunkParams(120, 20, 600))
             if c.level == LEVEL_PARAGRAPH]
    assert len(paras) > 2, "the entries fill several passages"
    for p in paras:
        assert not names_entry(p.strip().splitlines()[-1]), f"a passage ends with an entry's name: {p[-60:]!r}"
    assert sum(p.count("(integer)") for p in paras) == 6, "every name is in a passage (once)"
