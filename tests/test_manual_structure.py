"""Manuals have structure a sentence alone lacks (issue #51): an option is quoted, and read, with its description;
a sentence that announces a command ("run the following:") is quoted with it; a usage line (SYNOPSIS) is not an
answer unless the question asks how a command is written."""

from __future__ import annotations

import numpy as np
import pytest

from localreason.reason import reason
from localreason.reason.candidates import Quote, candidates
from localreason.reason.ranking import is_synopsis, rank_quotes

from fakes import FakeEmbedder, FakeGenerator

GIT_LOG = """git-log(1)

SYNOPSIS

git log [<options>] [<revision-range>] [[--] <path>...]

OPTIONS

--follow

Continue listing the history of a file beyond renames (works only for a single file).

--graph

Draw a text-based graphical representation of the commit history on the left hand side of the output.

--no-decorate

Print out the ref names of any commits that are shown, turned off.
"""

STASH = """git-stash(1)

SYNOPSIS

git stash pop [--index] [-q | --quiet] [<stash>]
git stash apply [--index] [-q | --quiet] [<stash>]

COMMANDS

pop

Remove a single stashed state from the stash list and apply it on top of the current working tree state.
"""


def test_an_option_is_a_candidate_together_with_its_description():
    quoted = {c.text.split("\n")[0]: c.text for c in candidates([("c", GIT_LOG)])}
    assert quoted["--graph"].endswith("on the left hand side of the output.")
    assert "--follow" in quoted and "--no-decorate" in quoted
    headed = candidates([("c", "Options \u00b6\n\nThe options are read in order, left to right.\n")])
    assert headed[0].text == "The options are read in order, left to right.", "a heading is not a term"
    wrapped = candidates([("c", "The password is read\nfrom the command line when -b is given.\n")])
    assert all(not c.text.startswith("The password is read\n") or "command line" in c.text for c in wrapped)


def test_which_option_is_answered_with_the_option_named(library_of):
    lib = library_of({"git-log.txt": GIT_LOG})
    a = reason(lib, "Which option of git log draws the commit history as a graph?", generator=FakeGenerator())
    first = " ".join(r.quotation for r in a.statements[0].references)
    assert "--graph" in first and "graphical representation" in first


CIPHERS = """The server offers the ciphers its OpenSSL build has.

To determine the actual list of ciphers available, you should run the following:

$ openssl ciphers -v

If you have someone spamming your message board, and you want to keep them out, you could do the following:

<RequireAll>
    Require all granted
    Require not ip 10.252.46.165
</RequireAll>

Visitors coming from that address will not be able to see the content. The order is this:

The list is read in order. Then the next one is tried.
"""


HTPASSWD = """Options \u00b6

-S

Show the settings as parsed from the config file.

-T

--skip

Skip document root check at startup.

-D

Delete user. If the username exists in the specified htpasswd file, it will be deleted.

-v

Verify password.
"""


def test_an_option_in_capitals_or_with_a_short_description_is_quoted_with_it():
    """Apache's manual pages (a probe of the held-out manual's misses): an option in capitals ("-S") is no section
    name, and its other names above it are quoted with it; a description whose first sentence is too short to be one
    ("Delete user.") is quoted from its option on to the sentence after it; an option or a variable long enough to
    be a sentence is quoted with its description a blank line below. A short sentence with no term before it,
    a list's number ("2."), a heading in capitals that does not open as an option ("1. INTRODUCTION") and a list item
    above a paragraph stay as they were (a review's cases)."""
    quoted = [c.text for c in candidates([("c", HTPASSWD)])]
    assert "-S\n\nShow the settings as parsed from the config file." in quoted, quoted
    assert "-T\n\n--skip\n\nSkip document root check at startup." in quoted, "an option's other name too"
    assert ("-D\n\nDelete user. If the username exists in the specified htpasswd file, it will be deleted."
            in quoted), quoted  # fmt: skip
    assert "-v\n\nVerify password." in quoted
    plain = [c.text for c in candidates([("c", "The tool runs.\n\nIt is fast. It reads every file once, in order.")])]
    assert plain[-1] == "It reads every file once, in order.", plain
    for heading in ("OPTIONS", "1. INTRODUCTION", "[NOTE]"):
        assert [c.text for c in candidates([("c", f"{heading}\n\nThe options are read in order, left to right.")])] \
            == ["The options are read in order, left to right."], heading  # fmt: skip
    steps = [c.text for c in candidates([("c", "1. Open Settings\n\n2. Select the network and enter its password.")])]
    assert steps[-1] == "Select the network and enter its password.", steps
    items = "Requirements are minimal.\n\n- Python 3.11 or newer\n\nInstall the package with pip and run the setup."
    assert [c.text for c in candidates([("c", items)])][-1] == "Install the package with pip and run the setup."
    signed = "It is fixed.\n\n-- Alice (maintainer of the tool)\n\nPlease reopen the issue if it comes back."
    assert [c.text for c in candidates([("c", signed)])][-1] == "Please reopen the issue if it comes back."
    for name in ("SQLITE_DEFAULT_FOREIGN_KEYS=<0 or 1>", "-T (Available in 2.3.8 and later)"):  # a blank line below
        entry = f"These are the options.\n\n{name}\n\nThis macro or option is described here, one line below."
        assert [c.text for c in candidates([("c", entry)])][-1].startswith(name + "\n\nThis macro"), name


def test_a_short_command_is_quoted_with_its_sentence_and_a_long_option_with_its_description():
    """"git stash pop" is too short to be a sentence: it is quoted with "run the following:", and is not the term
    of the sentence after it; an option line too long for a term ("-u, --include-untracked") is quoted with the
    description on the line below it; an option line with its own term takes no other."""
    text = ("To apply the latest stash and drop it, run the following:\n\n    git stash pop\n\n"
            "To list the stash entries that you currently have, run the following:\n\n    git stash list --stat\n")
    assert [c.text for c in candidates([("c", text)])] == [
        "To apply the latest stash and drop it, run the following:\n\n    git stash pop",
        "To list the stash entries that you currently have, run the following:\n\n    git stash list --stat"]
    page = ("OPTIONS\n       -a, --all\n           All ignored and untracked files are also stashed and then cleaned "
            "up.\n\n       -u, --include-untracked\n           All untracked files are also stashed and then cleaned up.\n"
            "  -q  Quiet\n  -v  Print each step of the stash as it runs.\n")  # fmt: skip
    texts = [c.text for c in candidates([("c", page)])]
    assert any(t.startswith("-u, --include-untracked\n") and t.endswith("cleaned up.") for t in texts), texts
    assert "-v  Print each step of the stash as it runs." in texts, "not glued to the option line above it"


def test_a_sentence_that_announces_a_command_is_quoted_with_it():
    quoted = {c.text.split(":")[0]: c.text for c in candidates([("c", CIPHERS)])}
    assert quoted["To determine the actual list of ciphers available, you should run the following"] == (
        "To determine the actual list of ciphers available, you should run the following:\n\n$ openssl ciphers -v")
    assert quoted["If you have someone spamming your message board, and you want to keep them out, you could do the "
                  "following"].endswith("following:\n\n<RequireAll>\n    Require all granted\n    Require not ip "
                                        "10.252.46.165\n</RequireAll>")  # fmt: skip  (a line too short to be a sentence too)
    assert quoted["The order is this"] == "The order is this:", "prose after it is a sentence of its own"
    plain = candidates([("c", "Note: restart the server. It reads its files once.\n")])
    assert [c.text for c in plain] == ["Note: restart the server.", "It reads its files once."]


def test_a_sentence_that_announces_a_command_in_words_is_quoted_with_it():
    """"You can change it by the following." announces the command on the line after it as a colon does (Debian's
    reference says it so); the quotation, as said, keeps the command on a line of its own. A sentence that only
    mentions "the following" inside it, or prose after it, is quoted alone."""
    from localreason.reason.verify import as_said
    from localreason.text import announces

    assert announces("Run this:") and announces("You can change it by the following.")
    assert announces("Then, configure them with the following command.") and announces("It is done as follows.")
    assert not announces("The following packages are useful.") and not announces("It follows the rules.")
    text = ("Programs call /usr/bin/editor. You can change it by the following.\n\n"
            "$ sudo update-alternatives --config editor\n\nThe following section lists editors.\n\n"
            "It is done as follows.\n\nNothing else is needed for it to work.\n")  # fmt: skip
    texts = [c.text for c in candidates([("c", text)])]
    assert "You can change it by the following.\n\n$ sudo update-alternatives --config editor" in texts, texts
    assert "It is done as follows." in texts and "The following section lists editors." in texts, texts
    assert as_said("You can change it by the following.\n\n$ sudo update-alternatives --config editor") == (
        "You can change it by the following.\n$ sudo update-alternatives --config editor")


def test_how_to_is_answered_with_the_command(library_of):
    lib = library_of({"ssl.txt": CIPHERS})
    a = reason(lib, "How do I see the actual list of ciphers available?", generator=FakeGenerator())
    first = " ".join(r.quotation for r in a.statements[0].references)
    assert "openssl ciphers -v" in first


SYNCD = """# syncd configuration reference

The daemon reads /etc/syncd/syncd.toml at start-up.

## max_connections

The largest number of peers served at once. Further peers are refused until one disconnects.

Default: 64

## idle_timeout

Seconds a peer may stay silent before its connection is closed.

Type: integer

Default: 30

## log_file

Where the log is written. When empty, the log goes to the systemd journal.

Default: (empty)
"""


def test_a_default_is_quoted_with_the_setting_it_belongs_to(library_of):
    """A reference's "Default: 64" lines say nothing of their setting: each is quoted from its entry's heading, and
    said line by line, without a full stop added (a probe's finding: the default of max_connections was answered
    with idle_timeout's "Default: 30")."""
    from localreason.reason.verify import _as_sentence, as_said

    text = SYNCD.replace("# ", "").replace("#", "")
    heads = frozenset({"syncd configuration reference", "max_connections", "idle_timeout", "log_file"})
    quoted = [c.text for c in candidates([("c", text)], heads) if "Default" in c.text]
    assert quoted[0].startswith("max_connections\n") and quoted[0].endswith("Default: 64")
    assert quoted[1].startswith("idle_timeout\n") and "Type: integer" in quoted[1], "a field between them is fine"
    said = as_said(quoted[0])
    assert said == ("max_connections\nThe largest number of peers served at once. Further peers are refused until one "
                    "disconnects.\nDefault: 64") and _as_sentence(said) == said  # fmt: skip
    far = "x_opt\n\n" + "A long description of it goes on. " * 14 + "\n\nDefault: 5"
    assert [c.text for c in candidates([("c", far)], frozenset({"x_opt"}))][-1] == "Default: 5", "too far to quote"
    short = "port\n\nThe port to listen on.\n\nDefault: 8080\n\nhost\n\nThe address to bind to.\n\nDefault: 127.0.0.1\n"
    kept = [c.text for c in candidates([("c", short), ("d", "It is fine.")], frozenset({"port", "host"}))]
    assert "port\n\nThe port to listen on.\n\nDefault: 8080" in kept, "a short entry's default is kept (a review's case)"
    man = "OPTIONS\n--timeout N\nSeconds to wait.\nDefault: 30\n--retries N\nNumber of tries.\nDefault: 5\n"
    assert [c.text for c in candidates([("c", man)]) if c.text.endswith("Default: 5")] == [
        "--retries N\nNumber of tries.\nDefault: 5"], "from its own option's line, not the entry above"  # fmt: skip
    unnamed = "timeout\n\nSeconds to wait.\n\nDefault: 30\n\nretries\n\nNumber of tries.\n\nDefault: 5\n"
    assert [c.text for c in candidates([("c", unnamed)], frozenset({"timeout"}))][-1] == \
        "retries\n\nNumber of tries.\n\nDefault: 5", "an entry named on a line of its own, not a heading"  # fmt: skip
    far = "timeout\n\nSeconds to wait.\n\nDefault: 30\n\nA sentence of the retries, with more.\n\nDefault: 5\n"
    assert [c.text for c in candidates([("c", far)], frozenset({"timeout"}))][-1] == "Default: 5", \
        "another entry's Default ends the search"  # fmt: skip
    settings = "backlog\n    How many connections may queue.\n    Type: integer\n    Default: 128\n"
    assert candidates([("c", "workers\n    How many.\n    Default: 8\n\n" + settings)])[-1].text.startswith("backlog")
    example = "log_file\n    Where the log is written, for example\n    /var/log/tided.log\n    Default: none\n"
    assert all(not c.text.startswith("/var") for c in candidates([("c", example)])), "a sentence's tail, no entry"
    told = "compress\n\nCompress it. Set it together with:\n\n    --level 9\n\nDefault: false\n"
    assert "Set it together with:\n\n    --level 9" in [c.text for c in candidates([("c", told)], frozenset({"compress"}))]
    lib = library_of({"syncd.md": SYNCD})
    for q, value in (("What is the default value of max_connections?", "Default: 64"),
                     ("What is the default idle_timeout?", "Default: 30")):  # fmt: skip
        first = " ".join(r.quotation for r in reason(lib, q, generator=FakeGenerator()).statements[0].references)
        assert value in first and q.split()[-1].rstrip("?") in first, (q, first)


def test_a_bare_default_sentence_is_quoted_with_its_option():
    """A probe's "What is the default timeout?" was answered with "The default is 30." and "The default is 4." (the
    --jobs entry's), neither naming its option: a sentence that gives a default and names nothing is quoted, like a
    "Default:" field, from its entry's name; so is any later sentence of an option's description that names
    nothing ("How do I get debug output?": "Give twice for debug output.", without -v)."""
    man = ("OPTIONS\n       -j N, --jobs=N\n"
           "              Transfer up to N files at the same time. The default is 4.\n\n"
           "       --timeout=SECONDS\n              Give up on a connection that has been idle for SECONDS\n"
           "              seconds. The default is 30.\n")  # fmt: skip
    quoted = [c.text for c in candidates([("c", man)]) if "default" in c.text]
    assert quoted == ["-j N, --jobs=N\n              Transfer up to N files at the same time. The default is 4.",
                      "--timeout=SECONDS\n              Give up on a connection that has been idle for SECONDS\n"
                      "              seconds. The default is 30."], quoted  # fmt: skip
    prose = "We tried many settings over the years. The default is 30."
    assert [c.text for c in candidates([("c", prose)])][-1] == "The default is 30.", "no entry above: as it is"
    told = ("OPTIONS\n       -v, --verbose\n              Print each file as it is transferred. Give twice for debug\n"
            "              output.\n\n       --level N\n              How hard to compress. Zstandard accepts levels"
            " above 19 only together with its --ultra option.\n")  # fmt: skip
    quoted = [c.text for c in candidates([("c", told)])]
    assert "-v, --verbose\n              Print each file as it is transferred. Give twice for debug\n              " \
        "output." in quoted, "a later sentence of the description that names nothing is quoted with its option"
    assert quoted[-1].startswith("Zstandard accepts"), "a sentence that names what it speaks of is quoted alone"
    assert not any(c.endswith("--level N") for c in quoted), "the next option's name is no sentence of this one"
    setting = "log_file\n\nWhere the daemon writes its log. An empty value logs to the systemd journal.\n\nDefault: -\n"
    assert [c.text for c in candidates([("c", setting)], frozenset({"log_file"}))][0] == (
        "log_file\n\nWhere the daemon writes its log. An empty value logs to the systemd journal."), \
        "a setting written as code names its entry too (a probe's \"How do I log to the systemd journal?\")"
    long = ("--log-file=PATH\n    Write the log to PATH instead of the journal. The file is created when missing.\n"
            "    It is rotated when it reaches 10 MB. Old logs are kept for a week.\n    See also --log-level.\n")
    texts = [c.text for c in candidates([("c", long)])]
    assert texts == ["--log-file=PATH\n    Write the log to PATH instead of the journal. The file is created when "
                     "missing.\n    It is rotated when it reaches 10 MB.", "Old logs are kept for a week.",
                     "See also --log-level."], "up to its third sentence only: later ones are quoted alone, not as a "\
                                               "paragraph that hides them (a review's finding)"  # fmt: skip
    notes = "2.0.0\n\nNew: the relay, for syncing between machines.\n\nRemoved: the --legacy-protocol option.\n"
    assert [c.text for c in candidates([("c", notes)])][-1] == "Removed: the --legacy-protocol option.", \
        "a release's number is no entry's name, and a field is quoted as it is"


BACKUPCTL = """SYNOPSIS
       backupctl [-f] [-n] [--exclude PATTERN] create SOURCE DEST
       backupctl restore [--target DIR] ARCHIVE

FILES
       /etc/backupctl/backupctl.conf
              The system-wide configuration file.

       ~/.config/backupctl/keys
              The encryption keys. Keep a copy of this file offline.

ENVIRONMENT
       BACKUPCTL_HOME
              Where archives are written when DEST is not given.
"""


def test_a_file_or_variable_of_a_manual_page_is_quoted_with_its_description():
    """A FILES or ENVIRONMENT entry is a line of its own the splitter takes for a sentence: it is quoted with the
    description below it, as an option is (a probe's finding: "Where is the configuration file?" was answered
    "The system-wide configuration file." with no path). Two usage lines are said as two lines."""
    from localreason.reason.verify import _as_sentence, as_said

    quoted = [c.text for c in candidates([("c", BACKUPCTL)])]
    assert "/etc/backupctl/backupctl.conf\n              The system-wide configuration file." in quoted
    assert "~/.config/backupctl/keys\n              The encryption keys. Keep a copy of this file offline." in quoted, \
        "read whole: its second sentence names nothing"
    assert "Keep a copy of this file offline." not in quoted and "~/.config/backupctl/keys\n              The " \
        "encryption keys." not in quoted, "its sentences are in the whole entry's quote"
    assert "BACKUPCTL_HOME\n              Where archives are written when DEST is not given." in quoted
    usage = next(c for c in quoted if "restore" in c)
    said = as_said(usage)
    assert said.endswith("create SOURCE DEST\nbackupctl restore [--target DIR] ARCHIVE"), said
    assert _as_sentence(said) == said


QUARRY = """# Installing Quarry

Quarry is a self-hosted search server for log files.

## Requirements

- Linux with kernel 5.4 or newer
- 2 GB of RAM
- PostgreSQL 14 or newer

## Start the service

To start Quarry and enable it at boot, run:

    sudo systemctl enable --now quarry
"""


def test_the_items_of_a_list_are_quotable_beside_passages_of_sentences(library_of):
    """A requirements list has no sentence: its items are its lines, each quotable although other passages hold
    sentences, and a short item is not glued to the next as its term (a probe's finding: "How much RAM does Quarry
    need?" was refused, the list never offered)."""
    items = "Requirements\n\nLinux with kernel 5.4 or newer\n\n2 GB of RAM\n\nPostgreSQL 14 or newer"
    got = [c.text for c in candidates([("a", "Quarry is a search server for log files."), ("b", items)],
                                      frozenset({"Requirements"}))]  # fmt: skip
    assert got[1:] == ["Linux with kernel 5.4 or newer", "2 GB of RAM", "PostgreSQL 14 or newer"], got
    assert [c.text for c in candidates([("a", "Router manual (vendor)"), ("b", "It is red.")])] == ["It is red."]
    for links in ("See also\nList of rivers of France\nGeography of France", "Contents\n\nHistory\n\nEconomy"):
        assert [c.text for c in candidates([("a", "It is red."), ("b", links)], frozenset({"See also", "Contents"}))
                ] == ["It is red."], "links and a table of contents are no list of answers"  # fmt: skip
    lib = library_of({"install.md": QUARRY})
    a = reason(lib, "How much RAM does Quarry need?", generator=FakeGenerator())
    assert a.statements and a.statements[0].references[0].quotation == "2 GB of RAM", a.to_dict()


STEPS = """# Installing Quarry

## Install from the package repository

First add the signing key, run:

    curl -fsSL https://pkg.quarry.example/key.asc | sudo gpg --dearmor -o /usr/share/keyrings/quarry.gpg

Then install the package:

    sudo apt-get install quarry-server
"""


def test_a_later_step_of_a_procedure_is_quoted_with_the_step_before():
    """"How do I install Quarry?" led with "Then install the package: ...", which skips the signing key (a probe's
    finding): a how-to's best sentence that opens as a later step ("Then", "Next", "Finally") is quoted after the
    step before it, the command that step announces with it, in one statement."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, with_step_before
    from localreason.types import EvidencePacket, PacketChunk

    text = STEPS.replace("# ", "").replace("#", "")
    packet = EvidencePacket("q", text, (PacketChunk("c1", "d1", "Installing Quarry", text),), 90, 1000, 1, True,
                            False, False)  # fmt: skip
    then = text.index("Then install")
    best = Quote("c1", text[then:].strip(), then, 2.0)
    got = with_step_before("How do I install Quarry?", Offer([best], 1), packet)
    assert got.joined and got.lead_quotes == 2 and got.quotes[1] == best
    first = got.quotes[0]
    assert first.text.startswith("First add the signing key, run:") and first.text.endswith("quarry.gpg")
    assert text[first.start:first.start + len(first.text)] == first.text, "verbatim where it says it is"
    assert with_step_before("Which package does Quarry install?", Offer([best], 1), packet) == Offer([best], 1)
    noted = text.replace("Then install", "Note: this can take up to 3 minutes.\n\nThen install")
    packet = EvidencePacket("q", noted, (PacketChunk("c1", "d1", "Installing Quarry", noted),), 90, 1000, 1, True,
                            False, False)  # fmt: skip
    then = noted.index("Then install")
    got = with_step_before("How do I install Quarry?", Offer([Quote("c1", noted[then:].strip(), then, 2.0)], 1), packet)
    assert got.quotes[0].text.startswith("First add the signing key"), "an aside is not the step before"
    beside = Quote("c1", "Next to the power button is a small reset hole.", then, 2.0)
    assert not with_step_before("How do I reset it?", Offer([beside], 1), packet).joined, "\"Next to\" is no step"
    alone = Quote("c1", "First add the signing key, run:", text.index("First"), 2.0)
    assert with_step_before("How do I install Quarry?", Offer([alone], 1), packet) == Offer([alone], 1)


def test_a_why_question_gets_the_reason_before_a_conclusion():
    """"Why does the tool think 2.0pre1 is newer than 2.0?" led with "This is why it considers 0pre1 greater than 0."
    (the conclusion); the reason is the sentence before it, which now leads with it in one statement. A conclusion
    is not joined for a question that does not ask why, nor a sentence that concludes nothing. A bare "So" opens a
    conclusion (SQLite's "So to prevent your code from being broken ..."), "So far" and "So long as" do not."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, offer_of, with_reason_before
    from localreason.types import EvidencePacket, PacketChunk

    text = ("Version strings are compared piece by piece. The tool compares the letters in the same way as the "
            "numbers, and a letter sorts after a digit. This is why it considers 0pre1 to be greater than 0.")
    packet = EvidencePacket("q", text, (PacketChunk("c1", "d1", "Versions", text),), 60, 1000, 1, True, False, False)
    at = text.index("This is why")
    best = Quote("c1", text[at:], at, 2.0, probability=0.9)
    why = "Why does the tool think 2.0pre1 is newer than 2.0?"
    got = with_reason_before(why, Offer([best], 1), packet)
    assert got.joined and got.lead_quotes == 2 and got.quotes[1] == best
    reason = got.quotes[0]
    assert reason.text.startswith("The tool compares the letters") and text[reason.start:].startswith(reason.text)
    assert offer_of(why, [best], packet=packet).quotes[:2] == got.quotes, "offer_of joins it too"
    assert not with_reason_before("Which version is newer, 2.0pre1 or 2.0?", Offer([best], 1), packet).joined
    plain = Quote("c1", text[:text.index(" The tool")], 0, 2.0)
    assert with_reason_before(why, Offer([plain], 1), packet) == Offer([plain], 1), "it concludes nothing"
    from localreason.reason.offer import concludes

    assert concludes("So to prevent your code from being broken, quote any identifier that is an English word.")
    assert concludes("So, in most real systems, an index should be created on the child key columns.")
    for opening in ("So far, nothing failed.", "So long as the file exists, it is read.", "So-called journals stay.",
                    "So is the other one.", "Sometimes it fails."):  # fmt: skip
        assert not concludes(opening), opening


PURGE = ("Removed packages leave their configuration files behind. "
         "You can purge all remaining configuration files of removed packages.\n"
         "\n # aptitude purge '~c'\n # aptitude clean\n"
         "\nThis frees little disk space. See the next section for the cache.\n")


def test_a_how_to_sentence_is_quoted_on_to_the_commands_below_it():
    """"How can I clean out the configuration files left behind by every package I removed?" led with "You can purge
    all remaining configuration files of removed packages.", not the command after it ("# aptitude purge '~c'"),
    which the sentence does not announce (a fit manual's miss): a how-to's best sentence that ends its line is quoted
    on to the code lines below it, prose ending them; a question that does not ask how, or a sentence the line goes
    on after, or one with no command below, is left alone."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, offer_of, with_command_after
    from localreason.types import EvidencePacket, PacketChunk

    packet = EvidencePacket("q", PURGE, (PacketChunk("c1", "d1", "Purging", PURGE),), 60, 1000, 1, True, False, False)
    at = PURGE.index("You can purge")
    best = Quote("c1", PURGE[at:PURGE.index("\n")], at, 2.0, probability=0.9)
    command = Quote("c1", "# aptitude purge '~c'", PURGE.index("# aptitude purge"), 1.0, probability=0.1)
    how = "How can I clean out the configuration files left behind by every package I removed but never purged?"
    got = with_command_after(how, Offer([best, command], 2), packet)
    [quoted] = got.quotes  # the command alone is a repeat of it now, and not offered again
    assert quoted.text.endswith("# aptitude purge '~c'\n # aptitude clean") and got.lead_quotes == 1
    assert PURGE[quoted.start:quoted.start + len(quoted.text)] == quoted.text, "verbatim where it says it is"
    assert offer_of(how, [best, command], packet=packet).quotes[0] == quoted, "offer_of quotes it so too"
    assert with_command_after("What does aptitude purge remove?", Offer([best], 1), packet) == Offer([best], 1)
    knows = "I know how to purge a package, but why are its configuration files kept?"
    assert with_command_after(knows, Offer([best], 1), packet) == Offer([best], 1), "it asks why, not how"
    weak = Quote("c1", "This frees little disk space.", PURGE.index("This frees"), 0.1, probability=0.03)
    led = with_command_after(how, Offer([best, command, weak], 2), packet)
    assert led.quotes == [quoted, weak] and led.lead_quotes == 1, "the command's place is not given to a weak extra"
    from localreason.reason.verify import as_said

    assert as_said(quoted.text).endswith(".\n# aptitude purge '~c'\n# aptitude clean"), "each command on its own line"
    inner = Quote("c1", PURGE[:PURGE.index(" You can")], 0, 2.0)
    assert with_command_after(how, Offer([inner], 1), packet) == Offer([inner], 1), "the line goes on after it"
    last = PURGE.index("This frees")
    after = Quote("c1", PURGE[last:PURGE.index(" See")], last, 2.0)
    assert with_command_after(how, Offer([after], 1), packet) == Offer([after], 1), "no command below it"


def test_the_commands_below_a_how_to_stop_at_an_options_name_and_at_a_cut():
    """A review's probes: "How do I draw the history as a graph?" took the next option's name ("--no-decorate") as a
    command below the --graph description; and a passage cut at the budget gave a command cut short ("$ kubectl delete
    pods --namespace prod", which deletes every pod)."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, with_command_after
    from localreason.types import EvidencePacket, PacketChunk

    options = ("--graph\n    Draw a text-based graphical representation of the commit history.\n--no-decorate\n"
               "    Print out the ref names of any commits that are shown.\n")  # fmt: skip
    packet = EvidencePacket("q", options, (PacketChunk("c1", "d1", "git-log", options),), 40, 1000, 1, True, False,
                            False)  # fmt: skip
    at = options.index("Draw")
    best = Quote("c1", options[at:options.index("\n--no")], at, 2.0)
    how = "How do I draw the commit history as a graph with git log?"
    assert with_command_after(how, Offer([best], 1), packet) == Offer([best], 1), "an option's name is no command"
    paragraphs = "-D\n\nDelete user. If the user exists, it is deleted.\n\n-v\n\nVerify password.\n"  # HTML's <dd>
    packet = EvidencePacket("q", paragraphs, (PacketChunk("c3", "d3", "htpasswd", paragraphs),), 30, 1000, 1, True,
                            False, False)  # fmt: skip
    best = Quote("c3", paragraphs[:paragraphs.index("\n\n-v")], 0, 2.0)
    how = "How do I remove a user from a password file?"
    assert with_command_after(how, Offer([best], 1), packet) == Offer([best], 1), "nor after a blank line"
    run = ("You can start the web server in a container.\n\n$ docker run \\\n  --name web \\\n  -p 8080:80 nginx\n\n"
           "This starts the server in the background.\n")  # fmt: skip
    packet = EvidencePacket("q", run, (PacketChunk("c4", "d4", "web", run),), 30, 1000, 1, True, False, False)
    best = Quote("c4", "You can start the web server in a container.", 0, 2.0)
    got = with_command_after("How do I start the web server?", Offer([best], 1), packet).quotes[0].text
    assert got.endswith("-p 8080:80 nginx"), "a command's last line is no option's name (a review's case)"
    cut = "You can remove the pods of the old release.\n\n$ kubectl delete pods --namespace prod"
    whole = cut + " --selector app=old-release\n"
    best = Quote("c2", "You can remove the pods of the old release.", 0, 2.0)
    for text, truncated, quoted in ((cut, True, best.text), (whole, False, whole.strip())):
        packet = EvidencePacket("q", text, (PacketChunk("c2", "d2", "Pods", text, truncated),), 30, 30, 1, True, False,
                                truncated)  # fmt: skip
        got = with_command_after("How do I remove the old release's pods?", Offer([best], 1), packet)
        assert got.quotes[0].text == quoted, truncated


QUILLMARK = """# Quillmark

Quillmark turns a folder of Markdown notes into a searchable static website.

## Requirements

- Python 3.10 or newer
- 512 MB of RAM
- Git 2.30 or newer

## Installation

To build the site, run quillmark build in the notes folder. The site is written to the _site folder.
"""


def test_an_item_of_a_list_is_read_under_its_heading_and_title(library_of):
    """"512 MB of RAM" read after "Python 3.10 or newer" is nothing to the reader (0.01 for "How much RAM does
    Quillmark need?", which was refused: a probe's finding); read under "Quillmark > Requirements" it answers."""
    from localreason.reason.read import item_context

    item = Quote("c", "512 MB of RAM", 90, 1.0, context="Python 3.10 or newer")
    assert item_context(item, {"c": "Quillmark > Requirements"}) == "Quillmark > Requirements"
    sentence = Quote("c", "The site is written to the _site folder.", 0, 1.0, context="To build the site, run it.")
    assert item_context(sentence, {"c": "Quillmark > Installation"}) == "To build the site, run it."
    lib = library_of({"README.md": QUILLMARK})
    a = reason(lib, "How much RAM does Quillmark need?", generator=FakeGenerator())
    assert a.statements and a.statements[0].references[0].quotation == "512 MB of RAM", a.to_dict()


CHANGELOG = """# Changelog for Tidewater

## 2.4.0 (2025-03-02)

- The default of worker_threads changed from 2 to 4.
- Added the --quiet option.

## 2.0.0 (2024-01-10)

- TLS is now on by default. Use --no-tls to turn it off.
"""


def test_a_changelog_item_is_quoted_with_its_release_when_asked_when():
    """"When was the --quiet option added?" was answered "Added the --quiet option." alone (a probe's finding): the
    release heading above it leads it in one statement; a section number ("3.2 Activating WAL Mode") is no release."""
    from localreason.reason.offer import Offer, with_dated_heading
    from localreason.types import EvidencePacket, PacketChunk

    text = CHANGELOG.replace("## ", "").replace("# ", "").replace("- ", "")
    packet = EvidencePacket("q", text, (PacketChunk("c1", "d1", "Changelog", text),), 90, 1000, 1, True, False, False)
    at = text.index("Added the")
    best = Quote("c1", "Added the --quiet option.", at, 2.0)
    got = with_dated_heading("When was the --quiet option added?", Offer([best], 1), packet)
    assert got.joined and got.quotes[0].text == "2.4.0 (2025-03-02)" and got.quotes[1] == best
    assert text[got.quotes[0].start:].startswith("2.4.0 (2025-03-02)")
    assert with_dated_heading("What does --quiet do?", Offer([best], 1), packet) == Offer([best], 1)
    wal = "3.2 Activating WAL Mode\n\nRun the pragma to switch the journal.\n"
    pw = EvidencePacket("q", wal, (PacketChunk("c2", "d2", "WAL", wal),), 20, 1000, 1, True, False, False)
    run = Quote("c2", "Run the pragma to switch the journal.", wal.index("Run"), 2.0)
    assert with_dated_heading("When is the journal switched?", Offer([run], 1), pw) == Offer([run], 1)


@pytest.mark.parametrize("line, usage", [
    ("git log [<options>] [<revision-range>] [[--] <path>...]", True),
    ("htpasswd [ -c ] [ -i ] [ -m | -B | -2 ] [ -r rounds ] [ -C cost ] username password", True),
    ("The default [merge] strategy is ort.", False), ("See the [docs] and <url> for more on the option.", False),
    ("Use -r together with -d to delete remote-tracking branches.", False),
    ("-o <file>        Write the output to <file> instead of standard output", False),  # an option of --help
    ("mytool [-o <file>] [-v] <input> writes the result to the output file", False),  # prose after the groups
])  # fmt: skip
def test_a_usage_line_is_told_from_a_sentence(line, usage):
    assert is_synopsis(line) is usage


def test_a_usage_line_is_not_the_answer_unless_the_syntax_is_asked():
    embed = FakeEmbedder().embed
    what = rank_quotes("What does git stash pop do?", [("c", STASH)], embed, 8)
    assert what[0].text.startswith("pop\n\nRemove a single stashed state"), [q.text for q in what]
    assert not any(is_synopsis(q.text) for q in what[:1])
    how = rank_quotes("What is the syntax of git stash pop?", [("c", STASH)], embed, 8)
    assert is_synopsis(how[0].text), [q.text for q in how]


def test_the_passage_reader_reads_an_option_with_its_description():
    """The passage reader's window holds the quote as it is quoted, the option's line included (it could not
    place a quote that starts on its term, and read the description alone)."""
    from localreason.reason.passage import windows_for

    quotes = [q for q in rank_quotes("What does --graph do?", [("c", GIT_LOG)], FakeEmbedder().embed, 8)
              if q.text.startswith("--graph")]
    windows, placed = windows_for(quotes, {"c": GIT_LOG})
    assert placed[0] is not None
    sentence = windows[placed[0].window].sentences[placed[0].sentence][1]
    assert sentence.startswith("--graph") and sentence.endswith("left hand side of the output.")


def test_a_name_joined_by_underscores_counts_its_parts_as_words_the_question_asks():
    """'How do I change the cache directory?': PKGTOOL_CACHE_DIR speaks of the cache directory; a sentence on
    another variable does not (both name the tool, neither says 'cache' or 'dir' otherwise)."""
    from localreason.reason.candidates import Candidate
    from localreason.reason.ranking import FEATURES, features, with_parts

    assert with_parts(["pkgtool_cache_dir", "sets"]) == {"pkgtool_cache_dir", "pkgtool", "cache", "dir", "sets"}
    assert with_parts(["__init__", "plain"]) == {"__init__", "init", "plain"}
    cands = [Candidate(0, "c", 0, "Set PKGTOOL_INDEX_URL to use another package index.", ""),
             Candidate(0, "c", 60, "Set PKGTOOL_CACHE_DIR to use another directory.", "")]
    rows = features("Which variable changes the cache dir of pkgtool?", cands, FakeEmbedder().embed)
    lexical = FEATURES.index("lexical")
    assert rows[1, lexical] > rows[0, lexical] > 0, rows[:, lexical]


def test_a_question_that_asks_for_a_default_finds_the_sentence_that_states_one():
    """'If I don't set the timeout, how long ...' shares no word with 'Default: | ConnTimeout 5': the ranking's
    default feature is 1 only where the question asks what holds when nothing is set and the sentence says it,
    and with the shipped weights it puts the Default row above the one that only describes the setting."""
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.candidates import Candidate
    from localreason.reason.ranking import FEATURES, asks_default, features, says_default

    assert asks_default("Out of the box, how long does the server wait?")
    assert asks_default("Which protocol is used if I don't set Proto?")
    assert asks_default("What happens if the port isn't set?")
    assert not asks_default("How long does the server wait for a reply?")
    assert says_default("Default: | ConnTimeout 5") and says_default("A comma is used if Y is omitted.")
    assert says_default("If neither keyword is present, VIRTUAL is used.")
    assert not says_default("The number of seconds the server waits.")
    described = "Description: | Idle peer links are closed after this time"
    cands = [Candidate(0, "c", 0, described, ""), Candidate(0, "c", 60, "Default: | PeerLinkTTL 5m", described)]
    column = FEATURES.index("default")
    without = np.asarray(DEFAULT.ranking_weights)
    without[column] = 0.0
    rows = features("If I don't configure it, how long is an idle peer link kept?", cands, FakeEmbedder().embed)
    assert list(rows[:, column]) == [0.0, 1.0]
    before, after = rows @ without, rows @ np.asarray(DEFAULT.ranking_weights)
    assert before[0] > before[1] and after[1] > after[0], (before, after)
    rows = features("How long is an idle peer link kept?", cands, FakeEmbedder().embed)
    assert list(rows[:, column]) == [0.0, 0.0]


def test_the_rules_for_manuals_leave_ordinary_text_alone():
    """A review's probes: "or below." and "described below." announce no command, and after "by the following." only
    code is taken (not an entry's name); a reason is only a sentence of the same paragraph, not the answer of the
    FAQ entry before; "the --why option" is no why-question; a conclusion that gives its own reason is not joined;
    "If the server is set to UTC" asks for no default, and "a default gateway" or "in default of payment" is none."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, concludes, with_reason_before
    from localreason.reason.ranking import asks_default, says_default
    from localreason.text import announces
    from localreason.types import EvidencePacket, PacketChunk

    assert not announces("Keep the battery at 30 degrees or below.") and announces("Run it as shown below.")
    assert not announces("Each option is described below.")
    texts = [c.text for c in candidates([("c", "Set the cache by the following.\n\ncache_size\n\nThe size of it.\n")])]
    assert "Set the cache by the following." in texts, texts
    texts = [c.text for c in candidates([("c", "The two relate by the following.\n\nMSS = MTU - 40 for IPv4\n")])]
    assert texts == ["The two relate by the following.\n\nMSS = MTU - 40 for IPv4"], "a formula is taken"
    faq = ("Q: How do I reset my password?\nA: Use the link on the sign-in page.\n\nQ: Why are large uploads "
           "rejected?\nA: Uploads are scanned first, and the scanner therefore refuses files over 2 GB.")
    packet = EvidencePacket("q", faq, (PacketChunk("c1", "d1", "FAQ", faq),), 60, 1000, 1, True, False, False)
    at = faq.index("A: Uploads")
    best = Quote("c1", faq[at:], at, 2.0)
    assert not with_reason_before("Why are large uploads rejected?", Offer([best], 1), packet).joined
    text = "Files are scanned as they arrive. Hence, uploads over 2 GB are refused."
    packet = EvidencePacket("q", text, (PacketChunk("c1", "d1", "Uploads", text),), 30, 1000, 1, True, False, False)
    best = Quote("c1", text[text.index("Hence"):], text.index("Hence"), 2.0)
    assert with_reason_before("Why are big uploads refused?", Offer([best], 1), packet).joined
    assert not with_reason_before("What does the --why option print?", Offer([best], 1), packet).joined
    assert concludes("Debian therefore introduced a wrapper.")
    assert not concludes("Because it drops privileges, it therefore cannot bind port 80.")
    assert not asks_default("If the server is set to UTC, how are dates shown?")
    assert not asks_default("Which ports must be open, unless a proxy is used?")
    assert asks_default("What happens if the port isn't set?") and asks_default("Unless configured otherwise, what?")
    assert not says_default("In default of payment, the lease ends.") and not says_default("Restore factory defaults.")
    assert says_default("The default journal size limit is -1.") and says_default("STEP defaults to 1.")


IDLE = """IdleWait Directive

Description: | How long the server waits for the next request on an open connection

Syntax: | IdleWait seconds

Default: | IdleWait 7

Context: | server config

Workers sets the most worker processes the server starts. The default is 150; raise FileLimit with it.

Spares sets how many idle workers are kept.

The default is 10."""


def test_a_default_question_is_quoted_on_to_the_default_after_its_best_sentence():
    """"Out of the box, how long does Apache keep an idle keep-alive connection open ...?" led with the directive
    table's "Description: | Amount of time the server will wait ..." and not its "Default: | KeepAliveTimeout 5"
    two fields on; "If I don't set MaxRequestWorkers, how many child processes ...?" with the sentence before "The
    default value is 256" (the held-out manual's misses): a default question's best sentence that says no default
    is quoted on to the default said right after it, in its paragraph or its table's run of fields."""
    from localreason.reason.offer import Offer, offer_of, with_default_after
    from localreason.types import EvidencePacket, PacketChunk

    packet = EvidencePacket("q", IDLE, (PacketChunk("c1", "d1", "IdleWait", IDLE),), 90, 1000, 1, True, False, False)

    def quote(start: str, end: str, p: float = 0.9) -> Quote:
        at = IDLE.index(start)
        return Quote("c1", IDLE[at:IDLE.index(end, at) + len(end)], at, 2.0, probability=p)

    description = quote("Description:", "open connection")
    default_row = quote("Default:", "IdleWait 7", 0.1)
    asked = "Out of the box, how long does the server keep an idle connection open?"
    got = with_default_after(asked, Offer([description, default_row], 2), packet)
    [joined] = got.quotes  # the Default row alone is inside it now, and not offered again
    assert joined.text.startswith("Description:") and joined.text.endswith("Default: | IdleWait 7")
    assert IDLE[joined.start:joined.start + len(joined.text)] == joined.text and got.lead_quotes == 1
    assert offer_of(asked, [description, default_row], packet=packet).quotes[0] == joined, "offer_of does it too"
    assert with_default_after("How long may a connection stay idle?", Offer([description], 1), packet) \
        == Offer([description], 1), "no default asked"
    workers = quote("Workers sets", "starts.")
    got = with_default_after("How many workers does it start if I don't set Workers?", Offer([workers], 1), packet)
    assert got.quotes[0].text.endswith("The default is 150; raise FileLimit with it.")
    spares = quote("Spares sets", "kept.")
    assert with_default_after("How many idle workers are kept by default?", Offer([spares], 1), packet) \
        == Offer([spares], 1), "not across a blank line into another paragraph"
    said = quote("Default:", "IdleWait 7")
    assert with_default_after(asked, Offer([said], 1), packet) == Offer([said], 1), "it says the default already"


def test_a_sentence_whose_subject_only_refers_back_is_quoted_with_the_sentence_before_it():
    """"By default, what does the share server do with requests from root on a client?" led with "This behavior
    corresponds to the root_squash option, and is enabled by default.", which never says what the behaviour is
    (the sentence before does); "My external disk holds up the boot when it is unplugged: what do I do?" with
    "Make sure to put this option for external drives ..." (the option is named in the sentence before). Such a
    sentence now leads with the sentence before it, in one statement; so does one under a heading that names
    its thing, and when the sentence before refers back too, one sentence further (a why-question's reason before a
    conclusion as well: "This bypasses ..." after "Modern servers share memory ..."). An "it" that stands for what
    follows ("It is possible to ..."), a sentence that names its own subject, or a sentence before it in another
    paragraph is left alone, and so is every "it" (a review found more of them standing for what follows than
    pointing back)."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, offer_of, with_referent_before
    from localreason.types import EvidencePacket, PacketChunk

    text = ("Exports\n\nShares are read from the exports table at start. Requests that seem to come from root on a "
            "client are treated as coming from the nobody account. This behavior corresponds to the squash_root "
            "option, and is enabled by default.\n\nskipmissing lets the boot go on when the disk is absent. Make sure "
            "to put this option on external disks that may be unplugged at boot.\n\nIt is possible to export a "
            "folder twice. Exports are reread on reload.\n\n4.2. crate-check\n\nThis is another useful tool: it tests "
            "an export from a client.")
    packet = EvidencePacket("q", text, (PacketChunk("c1", "d1", "Exports", text),), 90, 1000, 1, True, False, False)

    def best(opening: str, end: str = ".") -> Quote:
        at = text.index(opening)
        return Quote("c1", text[at:text.index(end, at) + 1], at, 2.0, probability=0.9)

    asked = "By default, what does the share server do with requests from root on a client?"
    got = with_referent_before(asked, Offer([best("This behavior")], 1), packet)
    assert got.joined and got.lead_quotes == 2 and got.quotes[1] == best("This behavior")
    assert got.quotes[0].text == ("Requests that seem to come from root on a client are treated as coming from the "
                                  "nobody account.")
    assert text[got.quotes[0].start:].startswith(got.quotes[0].text), "verbatim where it says it is"
    assert offer_of(asked, [best("This behavior")], packet=packet).quotes[:2] == got.quotes, "offer_of joins it too"
    disk = with_referent_before("My external disk holds up the boot when unplugged: what do I do?",
                                Offer([best("Make sure")], 1), packet)
    assert disk.joined and disk.quotes[0].text == "skipmissing lets the boot go on when the disk is absent."
    tool = with_referent_before("Which tool tests an export from a client?", Offer([best("This is another")], 1),
                                packet)  # fmt: skip
    assert tool.joined and tool.quotes[0].text == "4.2. crate-check", "the heading right above names it"
    other = with_referent_before("Can I export a folder twice?", Offer([best("It is possible")], 1), packet)
    assert not other.joined, "this 'it' stands for what follows"
    warm = ("Store the fan half charged if it is not used for months. It is normal for the battery to feel warm "
            "while it charges.")
    packet5 = EvidencePacket("q", warm, (PacketChunk("c5", "d5", "K2", warm),), 30, 1000, 1, True, False, False)
    normal = Quote("c5", warm[warm.index("It is normal"):], warm.index("It is normal"), 2.0, probability=0.9)
    assert not with_referent_before("Is it normal for the battery to feel warm?", Offer([normal], 1), packet5).joined, \
        "'it' is never taken to point back (a review: 'It is normal for ... to', 'It makes sense to')"
    named = best("Exports are reread")
    assert with_referent_before("When are exports reread?", Offer([named], 1), packet) == Offer([named], 1)
    first = best("skipmissing")
    assert with_referent_before("What does skipmissing do?", Offer([first], 1), packet) == Offer([first], 1)
    chain = "The relay prefetches every page it lists. This reads each page twice. This keeps the cache warm."
    packet3 = EvidencePacket("q", chain, (PacketChunk("c3", "d3", "R", chain),), 30, 1000, 1, True, False, False)
    warm = Quote("c3", "This keeps the cache warm.", chain.index("This keeps"), 2.0, probability=0.9)
    got = with_referent_before("What keeps the cache warm?", Offer([warm], 1), packet3)
    assert got.joined, "the sentence before refers back too: one sentence further"
    assert got.quotes[0].text == "The relay prefetches every page it lists. This reads each page twice."
    why = ("Modern servers share memory with their local clients. This bypasses the network channel and gains speed. "
           "This situation was the background of the local-only protocol.")
    packet4 = EvidencePacket("q", why, (PacketChunk("c4", "d4", "W", why),), 30, 1000, 1, True, False, False)
    from localreason.reason.offer import with_reason_before

    situation = Quote("c4", why[why.index("This situation"):], why.index("This situation"), 2.0, probability=0.9)
    got = with_reason_before("What led to the local-only protocol?", Offer([situation], 1), packet4)
    assert got.joined and got.quotes[0].text.startswith("Modern servers share memory"), got.quotes[0].text
    apart = ("The nobody account owns nothing.\n\nThis matters for shares mounted by root.")
    packet2 = EvidencePacket("q", apart, (PacketChunk("c2", "d2", "Exports", apart),), 30, 1000, 1, True, False, False)
    at = apart.index("This matters")
    lone = Quote("c2", apart[at:], at, 2.0, probability=0.9)
    assert with_referent_before("Why does it matter?", Offer([lone], 1), packet2) == Offer([lone], 1), \
        "the sentence before is in another paragraph"


def test_a_sentence_is_quoted_on_to_the_reason_or_the_alternative_right_after_it():
    """"Why must the machine be shut down properly?" led with "... the system needs the proper shutdown procedure
    before power can safely be turned off." and stopped before "This is to keep the files whole, ...", the reason;
    "How am I supposed to store dates?" with "The store has no column type set aside for dates." and stopped before
    "Instead, dates are kept as text, real or integer values."; a how-to with the situation, not "In such
    circumstances, ..." after it (fit manuals' misses). The sentence right after, in the same paragraph, is now
    quoted with it; a conclusion after it ("This is why ...") is not a reason, "Instead"
    after a sentence that denies nothing is left alone, and so is a sentence in the next paragraph."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import Offer, offer_of, with_sequel_after
    from localreason.types import EvidencePacket, PacketChunk

    text = ("Shutting down\n\nLike other systems that cache writes in memory, the system needs the proper shutdown "
            "procedure before power can safely be turned off. This is to keep the files whole, by writing every "
            "change in memory to disk. The procedure can turn the power off.\n\nThe store has no column type set "
            "aside for dates. Instead, dates are kept as text, real or integer values.\n\nThe store keeps dates in "
            "three forms. Instead, times are kept apart.\n\nThe store keeps no dates.\n\nInstead, it keeps text.")
    packet = EvidencePacket("q", text, (PacketChunk("c1", "d1", "Store", text),), 90, 1000, 1, True, False, False)

    def best(opening: str) -> Quote:
        at = text.index(opening)
        return Quote("c1", text[at:text.index(".", at) + 1], at, 2.0, probability=0.9)

    why = "Why must the machine be shut down properly?"
    got = with_sequel_after(why, Offer([best("Like other")], 1), packet)
    assert got.quotes[0].text.endswith("by writing every change in memory to disk.") and not got.joined
    assert text[got.quotes[0].start:].startswith(got.quotes[0].text), "verbatim where it says it is"
    assert offer_of(why, [best("Like other")], packet=packet).quotes[0] == got.quotes[0], "offer_of quotes it so too"
    plain = with_sequel_after("When does the procedure turn the power off?", Offer([best("Like other")], 1), packet)
    assert plain == Offer([best("Like other")], 1), "not a why-question: the reason is not what it asks"
    dates = with_sequel_after("How am I supposed to store dates?", Offer([best("The store has")], 1), packet)
    assert dates.quotes[0].text.endswith("kept as text, real or integer values.")
    forms = best("The store keeps dates")
    assert with_sequel_after("How are dates kept?", Offer([forms], 1), packet) == Offer([forms], 1), \
        "it denies nothing: what comes instead is of something else"
    instruction = ("The prune checks the index against the disk first. It is to be run as the service user, "
                   "not as root.")
    packet6 = EvidencePacket("q", instruction, (PacketChunk("c6", "d6", "P", instruction),), 30, 1000, 1, True, False,
                             False)  # fmt: skip
    checks = Quote("c6", "The prune checks the index against the disk first.", 0, 2.0, probability=0.9)
    assert with_sequel_after("Why does the prune check the index first?", Offer([checks], 1), packet6) \
        == Offer([checks], 1), "'It is to be run as ...' is an instruction, no reason (a review)"
    unsure = Offer([best("The store has")], 1, closest_only=True)
    assert with_sequel_after("How am I supposed to store dates?", unsure, packet) == unsure, \
        "an answer marked as not answering is not lengthened with what holds instead"
    apart = best("The store keeps no")
    assert with_sequel_after("Does it keep dates?", Offer([apart], 1), packet) == Offer([apart], 1), "next paragraph"
    from localreason.reason.polarity import denies

    assert denies("It doesn't keep dates.") and denies("It keeps no dates.") and not denies("It is not only fast.")
    raid = ("Sometimes the second disk still holds the data to move. In such circumstances, it is possible to create "
            "the mirror degraded by passing missing instead of a device.")
    packet3 = EvidencePacket("q", raid, (PacketChunk("c3", "d3", "R", raid),), 30, 1000, 1, True, False, False)
    situation = Quote("c3", raid[:raid.index(" In such")], 0, 2.0, probability=0.9)
    how = with_sequel_after("How do I create the mirror now?", Offer([situation], 1), packet3)
    assert how.quotes[0].text == raid, "what to do in the situation it describes"
    assert with_sequel_after("When is the mirror degraded?", Offer([situation], 1), packet3) == Offer([situation], 1)
    conclusion = ("The cache is flushed at exit. This is why the files survive a crash.")
    packet2 = EvidencePacket("q", conclusion, (PacketChunk("c2", "d2", "C", conclusion),), 30, 1000, 1, True, False,
                             False)  # fmt: skip
    first = Quote("c2", "The cache is flushed at exit.", 0, 2.0, probability=0.9)
    assert with_sequel_after("Why do files survive a crash?", Offer([first], 1), packet2) == Offer([first], 1)
