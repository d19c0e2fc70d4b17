"""A configuration reference's entries: a setting's name on a line of its own (HTML's <dt>, "query_mem (integer)")
or before its description on one line (a Markdown definition list, "flush_every (integer) : How long ..."),
then sentences, one of them its default. A probe of such a reference (a database's settings, written for it) found
"What is the default value of X?" answered with a neighbouring setting's default: the passage packing left the
name at the end of the passage before, and a default sentence was quoted without its name when the description
before it was long, or when the name stood on its line."""

from __future__ import annotations

from pathlib import Path

from localreason.ingest.chunk import ChunkParams, chunk_document, names_entry
from localreason.ingest.parse import parse_bytes
from localreason.reason.candidates import Quote, candidates
from localreason.types import LEVEL_PARAGRAPH

SETTING = ("Caps the memory one sort in the importer holds before it writes the rest to scratch files. A bare "
           "number counts kibibytes. Three sorts of one import may each hold this much at the same moment. The "
           "default value is eight megabytes (8MB).")


def test_a_default_after_a_long_description_is_quoted_from_the_settings_name():
    text = f"sort_mem (integer)\n\n{SETTING}\n\nspill_dir (string)\n\nWhere sorts spill. The default is pg_tmp."
    quoted = [c.text for c in candidates([("c", text)])]
    assert f"sort_mem (integer)\n\n{SETTING}" in quoted, quoted
    assert "The default value is eight megabytes (8MB)." not in quoted, "never without its setting's name"
    assert "Three sorts of one import may each hold this much at the same moment." in quoted, \
        "past the third sentence the entry's earlier sentences stay quotable without it (a review)"
    assert "spill_dir (string)\n\nWhere sorts spill. The default is pg_tmp." in quoted
    prose = f"Some notes on memory.\n\n{SETTING}"
    assert [c.text for c in candidates([("c", prose)])][-1] == "The default value is eight megabytes (8MB).", \
        "no entry above it: quoted as it is"
    long = "sort_mem (integer)\n\n" + " ".join(["It is read at start."] * 6) + " The default is 8MB."
    assert [c.text for c in candidates([("c", long)])][-1] == "The default is 8MB.", "past five sentences: alone"


def test_a_default_on_a_definition_lists_line_is_quoted_from_its_term():
    text = ("flush_every (integer) : How long the spooler lets pages pile up before it writes them out. Anything "
            "from a second to an hour is taken. The default is five minutes (5min).\n\nflush_alert (integer) : "
            "Logs a line when two writes come closer than this. The default is 30 seconds (30s).")
    quoted = [c.text for c in candidates([("c", text)])]
    assert quoted == [text.split("\n\n")[0], text.split("\n\n")[1]], quoted
    plain = "Timeouts : most of them can be changed at run time. The default is five minutes."
    assert [c.text for c in candidates([("c", plain)])][-1] == "The default is five minutes.", \
        "a word before a colon that is no setting's name is no entry"


def test_an_entrys_name_is_packed_with_its_description_not_at_the_end_of_the_passage_before():
    assert names_entry("query_mem (integer)") and names_entry("-n requests") and names_entry("-v, --verbose")
    assert not names_entry("$ chvt 3") and not names_entry("Python 3.11") and not names_entry("See below.")
    html = "<h1>Memory</h1><dl>" + "".join(
        f"<dt><code>setting_{i}</code> (<code>integer</code>)</dt><dd><p>{SETTING}</p></dd>" for i in range(6))
    html += "</dl>"
    doc = parse_bytes(html.encode(), Path("settings.html"), "html")
    paras = [c.text for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", ChunkParams(120, 20, 600))
             if c.level == LEVEL_PARAGRAPH]
    assert len(paras) > 2, "the entries fill several passages"
    for p in paras:
        assert not names_entry(p.strip().splitlines()[-1]), f"a passage ends with an entry's name: {p[-60:]!r}"
    assert sum(p.count("(integer)") for p in paras) == 6, "every name is in a passage (once)"


def test_the_entry_the_question_names_leads_before_another_entry_the_reader_preferred():
    from localreason.reason.candidates import Quote
    from localreason.reason.read import entry_named_first

    other = Quote("c", "autoreclaim_query_mem (integer)\n\nMemory for each worker. The default value is -1.", 0, 9.0,
                  reader=0.99)  # fmt: skip
    named = Quote("c", "query_mem (integer)\n\nMemory for a sort. The default value is eight megabytes (8MB).", 90, 9.0,
                  reader=0.35)  # fmt: skip
    prose = Quote("c", "Sorts use query_mem each.", 200, 5.0, reader=0.5)
    asked = "What is the default value of query_mem?"
    moved = entry_named_first(asked, [other, prose, named])
    assert [q.start for q in moved] == [90, 0, 200] and moved[0].reader == 0.99, "with the displaced one's reading"
    assert entry_named_first(asked, [prose, other, named]) == [prose, other, named], "prose first: as read"
    assert entry_named_first("What is the default sort memory?", [other, named]) == [other, named], "no name asked"
    listed = Quote("c", "flush_every (integer) : How long pages pile up. The default is 5min.", 0, 1)
    warning = Quote("c", "flush_alert (integer) : Logs close writes. The default is 30s.", 99, 1)
    assert entry_named_first("What is the default flush_every?", [warning, listed]) == [listed, warning]
    delete = Quote("c", "--delete\n\nDelete extra files. The default is to keep them.", 0, 1)
    dry = Quote("c", "-n, --dry-run\n\nShow what would be copied. Off by default.", 40, 1)
    assert entry_named_first("Is --dry-run on by default?", [delete, dry])[0] is dry, "an alias is a name too"
    assert entry_named_first("Is -n on by default?", [dry, delete]) == [dry, delete]
    caps = "Which setting caps the total bandwidth of all fetch_workers?"
    assert entry_named_first(caps, [other, named]) == [other, named], "a name in another role: not a default asked"
    two = "Is the default of query_mem larger than autoreclaim_query_mem's?"
    assert entry_named_first(two, [other, named]) == [other, named], "two settings named: the reader chooses"


def test_a_later_sentence_that_refers_back_is_quoted_from_its_term_in_capitals():
    """A probe's question on one option of an import command led with another option's fourth sentence, "This option
    is not allowed ...", which names no option: a sentence that refers back is quoted from its entry's term up to the
    fifth sentence (a term in capitals or lower case on the description's line is a name)."""
    text = ("SEPARATOR : What stands between two fields of a record. Plain files take a tab unless told. "
            "Exactly one character fits. This option is refused for packed files.\n\n"
            "TITLES : Reads the first record as the fields' names. Off unless given. This option works for "
            "quoted files alone.")  # fmt: skip
    quoted = [c.text for c in candidates([("c", text)])]
    assert text.split("\n\n")[0] in quoted and text.split("\n\n")[1] in quoted, quoted
    assert not any(q.startswith("This option") for q in quoted), "never without its option's name"


def test_a_passage_under_a_synopsis_heading_is_no_answer_unless_the_syntax_is_asked():
    """A probe's SQL reference: two questions on one option each led with the Synopsis block's list of options, which
    names the option and says nothing of it."""
    from localreason.reason.ranking import SYNOPSIS_HEADING, rank_quotes

    synopsis = "with any of:\n\n    LAYOUT name\n    TITLES [ on | off ]\n    SKIP_BUSY"
    entry = "SKIP_BUSY : Moves on to the next shelf when another worker holds the one it wanted."
    chunks = [("syn", synopsis), ("par", entry)]

    def embed(texts):  # every text alike: only the rules order them
        return [[1.0, 0.0] for _ in texts]

    from localreason.reason.ranking import ECHO_MARGIN

    def gap(ranked):  # the entry's score less the synopsis block's
        score = {q.chunk_id: q.score for q in ranked}
        return score["par"] - score["syn"]

    asked = "What does the SKIP_BUSY option do?"
    plain = rank_quotes(asked, chunks, embed, 5)
    sunk = rank_quotes(asked, chunks, embed, 5, synopses=frozenset({"syn"}))
    assert sunk[0].chunk_id == "par" and gap(sunk) >= ECHO_MARGIN > gap(plain), [(q.text, q.score) for q in sunk]
    syntax = "What is the syntax of the SKIP_BUSY option?"
    assert gap(rank_quotes(syntax, chunks, embed, 5, synopses=frozenset({"syn"}))) < ECHO_MARGIN, "syntax asked"
    plot = [("syn", "The miller's daughter hides the ring in the well."), ("par", "The film was shot in Galicia.")]
    told = rank_quotes("Where does the daughter hide the ring?", plot, embed, 5, synopses=frozenset({"syn"}))
    assert told[0].chunk_id == "syn", "a film's Synopsis section is prose that answers"
    assert SYNOPSIS_HEADING.match("SYNOPSIS") and SYNOPSIS_HEADING.match("Synopsis ¶")
    assert SYNOPSIS_HEADING.match("2.1 Synopsis") and not SYNOPSIS_HEADING.match("Usage")


def test_what_a_review_found_the_first_versions_doing():
    """A review (a helper comparing the code before and after on some 170 questions of its own) found where the first
    versions misled: a command announced by "... and run:" carried into the next passage as if it were an entry's
    name; a README's example code under "Synopsis" sunk as usage; another setting's default appended to a default
    question's best sentence."""
    from localreason.reason.offer import Offer, with_default_after
    from localreason.reason.ranking import rank_quotes
    from localreason.types import EvidencePacket, PacketChunk

    long = " ".join(["The thumbnails are kept beside the photos and rebuilt when a photo changes."] * 6)
    text = f"{long} To rebuild them all, open a terminal and run:\n\naster_thumbs.py --rebuild\n\n{long}"
    doc = parse_bytes(text.encode(), Path("aster.txt"), "text")
    paras = [c.text for c in chunk_document(doc, "doc_aaaaaaaaaaaaaaaa", ChunkParams(120, 20, 600))
             if c.level == LEVEL_PARAGRAPH]
    assert names_entry("aster_thumbs.py --rebuild")
    assert any(p.endswith("and run:\n\naster_thumbs.py --rebuild") for p in paras), "a command stays with its sentence"

    def embed(texts):
        return [[1.0, 0.0] for _ in texts]

    example = 'Create one with client = Client(base_url="https://api.example.org") and call it'
    chunks = [("syn", example), ("par", "The client retries twice.")]
    ranked = rank_quotes("How do I create a client with a base URL?", chunks, embed, 5, synopses=frozenset({"syn"}))
    score = {q.chunk_id: q.score for q in ranked}
    assert score["syn"] > score["par"] - 1, "an example of use under Synopsis is no usage line: not sunk"
    heron = ("Rooms expire after the days set by room_expiry without a message. The default history limit is ten "
             "thousand messages per room.")  # fmt: skip
    packet = EvidencePacket("q", heron, (PacketChunk("c1", "d1", "Heron", heron),), 40, 1000, 1, True, False, False)
    best = Quote("c1", heron[:heron.index(" The default")], 0, 2.0, probability=0.9)
    asked = "What is the default room_expiry in Heron?"
    assert with_default_after(asked, Offer([best], 1), packet) == Offer([best], 1), "the history limit's default"
