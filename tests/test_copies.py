"""One page, one voice: two renderings of a page (its source beside its HTML, or a copy) are one passage in the
evidence, the other kept in ``alsoIn`` (search/copies.py); two passages that say different things never are."""

from __future__ import annotations

import pytest

from localreason.reason import reason
from localreason.search.copies import same_words

from fakes import FakeGenerator

SOURCE = ("= git-log(1)\n\n== OPTIONS\n\n--graph::\n\tDraw a text-based graphical representation of the commit history "
          "on the left hand side of the output. This may cause extra lines to be printed in between commits, in order "
          "for the graph history to be drawn properly. See linkgit:git-rev-list[1] for the details.\n")
RENDERED = ("<html><body><h1>git-log(1)</h1><h2>OPTIONS</h2><dl><dt>--graph</dt><dd><p>Draw a text-based graphical "
            "representation of the commit history on the left hand side of the output. This may cause extra lines to "
            "be printed in between commits, in order for the graph history to be drawn properly. See "
            "<a href='git-rev-list.html'>git-rev-list(1)</a> for the details.</p></dd></dl></body></html>")


@pytest.mark.parametrize("a, b, copies", [
    ("The warranty lasts two years from the date of purchase and covers parts and labour.",
     "The warranty  lasts two years from the date of purchase and covers parts and labour!", True),
    ("See linkgit:git-rev-list[1] for the details of the history walk and its many options.",
     "See git-rev-list(1) for the details of the history walk and its many options.", True),
    ("The warranty lasts two years from the date of purchase and covers parts and labour.",
     "The warranty lasts three years from the date of purchase and covers parts and labour.", False),
    ("The warranty lasts two years from the date of purchase and covers parts and labour.",
     "The warranty does not last two years from the date of purchase and covers parts and labour.", False),
    ("The option must be set to 1 when the server starts and is read only once.",
     "The option must be set to 1 or 2 when the server starts and is read only once.", False),
    ("The cache speeds up opening files on a slow disk by keeping their pages.",
     "The cache speeds up opening large files on a slow disk by keeping their pages.", False),
    ("Running sync removes the documents of files that were deleted from the folder.",
     "Running sync --prune removes the documents of files that were deleted from the folder.", False),
    ("The default file is the one named in the configuration of the server here.",
     "The default option is the one named in the configuration of the server here.", False),
    ("Short line.", "Short line!", False),
    ("Use the dial to reset the boiler after a power cut in the winter months.",
     "Boiler manual Use the dial to reset the boiler after a power cut in the winter months.", True),
    ("Use the dial to reset the boiler after a power cut in the winter months.",
     "Use the dial to reset the boiler after a power cut in the winter months. Not recommended.", False),
    ("Refunds are paid within fourteen days of the return reaching our warehouse. Shipping costs are refunded.",
     "Refunds are paid within fourteen days of the return reaching our warehouse. Shipping costs are refunded only "
     "to EU customers.", False),  # a restriction at the edge
])  # fmt: skip
def test_copies_are_the_same_words_less_the_markup_a_source_spells_out(a, b, copies):
    assert same_words(a, b) is copies
    assert same_words(b, a) is copies


def test_a_page_and_its_rendering_are_one_passage_and_one_statement(library_of):
    lib = library_of({"git-log.txt": SOURCE, "git-log.html": RENDERED})
    hits = lib.deep_search("Which option of git log draws the commit history as a graph?")
    graph = [h for h in hits if "graphical representation" in h.content]
    assert len(graph) == 1, [h.document_title for h in graph]
    assert len(graph[0].also_in) == 1 and graph[0].also_in[0].document_id != graph[0].document_id
    a = reason(lib, "Which option of git log draws the commit history as a graph?", generator=FakeGenerator())
    quoted = [" ".join(r.quotation for r in s.references) for s in a.statements]
    assert sum("graphical representation" in q for q in quoted) <= 1, "the same sentence is not said twice"


def test_two_passages_that_differ_in_a_value_stay_apart(library_of):
    lib = library_of({"reflog-a.md": "# Reflog\n\nReflog entries are kept for 90 days by default, unless the "
                                     "gc.reflogExpire setting says otherwise for this repository.\n",
                      "reflog-b.md": "# Reflog\n\nReflog entries are kept for 30 days by default, unless the "
                                     "gc.reflogExpire setting says otherwise for this repository.\n"})  # fmt: skip
    hits = [h for h in lib.deep_search("How long are reflog entries kept?") if "kept for" in h.content]
    assert len(hits) == 2 and not any(h.also_in for h in hits)


def test_passages_that_differ_only_in_a_sign_or_a_warning_are_two_passages():
    """">= 3.8" and "< 3.8", "-5" and "5", "1,000" and "1.000", and a passage with "Deprecated" or "Warning" at its
    edge were copies: the one asked about was folded into the other, and the model never saw it."""
    base = "The installer requires Python {} and checks the version before it copies any file to the disk."
    assert not same_words(base.format(">= 3.8"), base.format("< 3.8"))
    clock = "Set the offset to {} hours so that the clock shows the local time in the office and at home."
    assert not same_words(clock.format("-5"), clock.format("5"))
    cache = "The cache holds {} entries before the oldest ones are dropped from memory by the collector."
    assert not same_words(cache.format("1,000"), cache.format("1.000"))
    text = "The function copies the tree to the target folder and returns the number of files written there."
    for edge in ("Deprecated: ", "Warning: fire risk. ", "Caution: "):
        assert not same_words(edge + text, text), edge
    assert same_words("OPTIONS " + text, text), "a heading at a cut is still a copy's edge"
    assert same_words(base.format(">= 3.8"), base.format(">= 3.8").replace("  ", " ")), "the same signs: copies"


CREATE = ("# CREATE TABLE\n\nIf the default value of a column is CURRENT_TIMESTAMP, then the value used in the new "
          "row is a text representation of the current UTC date and time.\n")
REQUIREMENTS = ("# Requirements\n\nIf the default value of a column is CURRENT_TIMESTAMP, then the value used in "
                "the new row is a text representation of the current UTC date and time. (source: "
                "lang_createtable.html, checked-by: e_createtable.test)\n\nThe default value of a column is used "
                "when the INSERT names no value for it.\n")  # fmt: skip


@pytest.mark.parametrize("better, worse, repeats", [
    ("The value used in the new row is the current UTC date and time.",
     "The value used in the new row is the current UTC date and time. (source: lang_createtable.html, checked-by: e1)",
     True),
    ("The value used in the new row is the current UTC date and time. (source: lang_createtable.html, checked-by: e",
     "The value used in the new row is the current UTC date and time.", True),  # a note cut at the sentence's end
    ("A good way to make an archival copy of a database is this:\n\n$ sqlite3 ex1 .dump | gzip -c >ex1.dump.gz",
     "$ sqlite3 ex1 .dump | gzip -c >ex1.dump.gz", True),
    ("The value used in the new row is the current UTC date and time. (source: lang_createtable.html, checked-by: e1)",
     "The value used in the new row is the current UTC date and time. (source: lang_altertable.html)", True),
    ("Refunds are paid within fourteen days of the return reaching our warehouse.",
     "Refunds are paid within fourteen days of the return reaching our warehouse, but only to EU customers.", False),
    ("The server listens on port 8080 unless the configuration names another port.",
     "The server listens on port 8080 (8443 with TLS) unless the configuration names another port.", False),
    ("The server listens on port 8080 unless the configuration names another port [12].",
     "The server listens on port 8080 unless the configuration names another port (see section 3).", True),
    ("Refunds are paid within fourteen days of the return reaching our warehouse.",
     "Refunds are paid within fourteen days of the return reaching their warehouse [1].", False),
    ("On by default.", "On by default (since 3.2).", False),  # too short to call a repeat
    ("The minimum operating temperature is -40 degrees Celsius for this unit.",
     "The minimum operating temperature is 40 degrees Celsius for this unit.", False),  # a sign is a word of its own
    ("Latency must stay > 10 ms for the cache tier at all times.",
     "Latency must stay < 10 ms for the cache tier at all times.", False),
    ("The API accepts uploads of up to 2 GB (from version 4.0) for every account.",
     "The API accepts uploads of up to 2 GB (from version 5.0) for every account.", False),
    ("The installer also works on the older releases (see below: not on Windows).",
     "The installer also works on the older releases.", False),
    ("Never run apt autoremove on a server while an upgrade is still running.",
     "Run apt autoremove on a server while an upgrade is still running.", False),  # another passage: another voice
])  # fmt: skip
def test_a_sentence_that_repeats_a_better_one_is_not_offered(better, worse, repeats):
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import without_repeats

    same = worse.startswith("$")  # a command quoted again after the sentence that announced it, in its passage
    ranked = [Quote("chk_a", better, 0, 2.0), Quote("chk_a" if same else "chk_b", worse, 0, 1.0),
              Quote("chk_c", "Something else entirely is said here.", 0, 0.5)]  # fmt: skip
    kept = [q.text for q in without_repeats(ranked)]
    assert kept == ([better, ranked[2].text] if repeats else [q.text for q in ranked])


def test_a_page_that_quotes_another_page_with_its_source_is_not_a_second_statement(library_of):
    from dataclasses import replace

    from localreason.reason.calibration import DEFAULT

    lib = library_of({"createtable.md": CREATE, "requirements.md": REQUIREMENTS})
    every = replace(DEFAULT, lead_ratio=0.0, most_lead=3)  # whatever ranks near the best would lead
    a = reason(lib, "Is a CURRENT_TIMESTAMP column default filled in with local time or UTC?",
               generator=FakeGenerator(), calibration=every)  # fmt: skip
    quoted = [" ".join(r.quotation for r in s.references) for s in a.statements]
    assert len(quoted) >= 2, quoted
    assert sum("representation of the current UTC" in q for q in quoted) == 1, quoted


def test_a_sentence_held_in_a_better_one_is_a_repeat_within_its_document_only():
    """A long paragraph's overlapping windows are two passages of one document: a sentence of one held in a longer
    candidate of the other repeats it. From another document the same words are another voice ("Never run X" and
    "Run X")."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import without_repeats

    longer = Quote("chk_a", "SQLite has no DATETIME type. Instead, dates and times are stored as text or numbers.", 0,
                   2.0)
    inner = Quote("chk_b", "Instead, dates and times are stored as text or numbers.", 0, 1.0)
    assert without_repeats([longer, inner], {"chk_a": "doc1", "chk_b": "doc1"}) == [longer]
    assert without_repeats([longer, inner], {"chk_a": "doc1", "chk_b": "doc2"}) == [longer, inner]
    assert without_repeats([longer, inner]) == [longer, inner], "without documents: one passage at a time"
