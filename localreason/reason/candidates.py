"""Quotable sentences: the candidates an answer may quote, and the text that may never be one.

The sentences of the admitted chunks are the only spans the grammar lets the model quote. A question, a
heading or a title is not a candidate; a field ("Weight: 11 kg") or a table row is, with its list's first
field or its table's header row as its context. A sentence that reads like instructions to an AI
(``reads_like_instructions``) is never a candidate: a document can address the model, but what it tells the
model is not evidence. ``Quote`` is a candidate as the later stages carry it: ranked, with its estimates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import (MIN_CHARS, STOPWORDS, WORD, announces, collapse, command_like, is_field, prose_line,
                    says_it_in_words, sentences)

REFERRING = frozenset("he she they it his her their its him them this these those".split())
"""Words that only refer back to someone or something named before (offer.py, refers_back)."""
DESCRIPTION = re.compile(r"^\W*(?:(?i:after|then|later|in|on|at|by|when)\b[^,]{0,40}?,?\s+)?(?i:the|this|that|these)\s+"
                         r"[a-z][\w-]*\b")  # fmt: skip
"""A bare description at the start: "The company ...", "After the war the band ..." (a common noun: "The Eiffel
Tower was designed ..." names what it speaks of)."""


_KINDS = "program|command|tool|utility|package|daemon|script|binary|executable|file|directive|option|variable"
_KIND_NAMED = re.compile(rf"\b([a-z][a-z0-9+]*(?:[-_.][a-z0-9+]+)+)\s+(?:{_KINDS})s?\b")
_OPENING_NAME = re.compile(r"^\W*([a-z][a-z0-9+]*(?:[-_.][a-z0-9+]+)*)\s+([a-z]+)")
_ORDINARY_PARTS = frozenset("year month week day hour minute second time part party source way level state end "
                            "side term page line".split())  # fmt: skip
"""Parts of a hyphenated word of ordinary English ("two-year program", "open-source package"), not a command's."""


_FIGURE = re.compile(r"-?[$\u20ac\u00a3]?\d[\d.,]*[%+]?")
_CODE_WORD = re.compile(r"--?[A-Za-z][\w-]*=?\S*"  # an option: --hostname, -r, --no-color
                        r"|[/~$][\w.~/${}-]*\w[\w.~/${}-]*"  # a path or a variable: /etc/apt, ~/.bashrc, $HOME
                        r"|[\w.+-]*(?:_|/|[a-z0-9]\.[a-z0-9]{2,})[\w.+/-]*(?:\(\d*\))?"  # json_valid, grub.cfg
                        r"|[a-z][\w.+-]*\(\d*\)"  # systemd-cat(1), json_valid()
                        r"|[A-Za-z]+\d[\w]*")  # a name with a digit: CP437, python3, ip6tables
"""A word written as software writes names (``written_as_code``)."""


def written_as_code(phrase: str) -> bool:
    """A phrase of at most three words, each a figure ("62", "3.07", "$250", "40%") or written as software names
    things: an option ("--hostname"), a path or variable ("/var/lib/apt", "$HOME"), a name joined by an
    underscore, a slash or a dot inside it ("json_valid", "grub.cfg"), a manual section ("systemd-cat(1)") or a
    name with a digit in it ("CP437"). Not a hyphenated name ("Coca-Cola", "Austria-Hungary"), nor "U.S." or
    "a.m."."""
    words = phrase.split()
    return 0 < len(words) <= 3 and all(
        re.search(r"[^\W_]", w) and (_FIGURE.fullmatch(w) or _CODE_WORD.fullmatch(w)) for w in words)


def code_like(word: str) -> bool:
    """A joined word as software names it: an underscore, a dot, a digit or a plus in it ("apt.conf", "python3",
    "g++"), or hyphens between parts none of which is ordinary English ("dpkg-deb"; not "two-year", "state-owned",
    "award-winning")."""
    if re.search(r"[_.+\d]", word):
        return True
    parts = word.split("-")
    return len(parts) > 1 and not any(p in _ORDINARY_PARTS or p.endswith(("ed", "ing")) for p in parts)


def command_names(sentence: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Names of commands, files and options written in lower case, as manuals write them: a joined word (a hyphen,
    dot or underscore inside it, ``code_like``) before the kind of thing it is ("the dpkg-deb program", "the
    apt.conf file"), or the word a sentence opens with in lower case when it is joined so or the verb after it
    says what it does ("dpkg-deb packs, unpacks and ..."; "ls lists ..."; not "install the viewer"), that is not
    one of ``stopwords``. A part of a joined word that is a stop word makes it ordinary ("the built-in command",
    "a read-only file")."""
    found = [m.group(1) for m in _KIND_NAMED.finditer(sentence) if code_like(m.group(1))]
    opening = _OPENING_NAME.match(sentence)
    if opening and opening.group(1) not in stopwords and (code_like(opening.group(1)) or (
            opening.group(2).endswith("s") and opening.group(2) not in stopwords)):
        found.insert(0, opening.group(1))
    return [w for w in dict.fromkeys(found) if not (len(parts := re.split(r"[-_.]", w)) > 1 and set(parts) & stopwords)]


def refers_back(sentence: str) -> bool:
    """One of the sentence's first words refers back ("he", "its"), or it opens with a bare description ("The band
    split in 1970.", not "The dpkg-deb program ..."): who or what it speaks of was named before it."""
    first = [w.lower() for w in WORD.findall(sentence)[:8]]
    if REFERRING & set(first):
        return True
    bare = DESCRIPTION.match(sentence)
    return bool(bare) and not any(sentence.find(n) < bare.end() + 1 for n in command_names(sentence, STOPWORDS))


@dataclass(frozen=True)
class Candidate:
    """A sentence that may be quoted: where it is and the sentence before it (for context)."""

    chunk_rank: int
    chunk_id: str
    start: int
    text: str
    previous: str
    item: bool = False
    """An item of a list: its passage has no sentence (``_is_list``), so it is quotable as it is."""


@dataclass(frozen=True)
class Quote:
    chunk_id: str
    text: str
    start: int
    """Character offset of the quote in its chunk's text."""
    score: float
    probability: float = 0.0
    """The ranking's estimate of the chance that this sentence holds the answer (softmax of the scores)."""
    context: str = ""
    """What it was ranked with: the sentence before it, or its table's header row, or its list's first field."""
    reader: float | None = None
    """The reader's estimate (read.py) that this sentence holds the answer, when the reader read it."""
    phrase: tuple[int, int] | None = None
    """Where the reader's span head puts the answer phrase in ``text`` (offsets into it), when it read it."""
    phrase_margin: float | None = None
    """The span head's belief in that phrase over no phrase (reader.Phrase.margin)."""
    before: tuple[int, int] | None = None
    """Where the span head puts its best phrase in ``context`` (the sentence before, offsets into it)."""
    before_margin: float | None = None
    """Its belief in that phrase over no phrase (offer.points_before decides when it is the answer)."""
    phrase_probability: float | None = None
    """With a passage reader (format 3): the span head's probability of ``phrase`` among every phrase of the window
    it read and none at all (passage.Span.probability); phrase.py decides on it."""
    before_probability: float | None = None
    """With a passage reader: the span head's probability of ``before`` (as phrase_probability's)."""
    no_answer: float | None = None
    """With a passage reader: its probability that the window it read this sentence in holds no answer."""
    referent: bool = False
    """The sentence reader found it answering better read together with the sentence before it (read.py,
    read_with_referent): what it refers to is named there, and offer.with_naming_sentence quotes that one with it."""


def is_sentence_like(text: str) -> bool:
    """Ends like a sentence, is long enough to be one, or is a field ("Weight: 11 kg", a table row);
    unlike a heading."""
    last = text.rsplit("\n", 1)[-1]  # a field quoted from its entry's heading ("port / ... / Default: 8080")
    first = text.split("\n", 1)[0].rstrip()  # a sentence announcing a command quoted with it ("Run: / apt update")
    return text.rstrip().endswith((".", "!", ":", ";", '"', "\u201d")) or len(text.split()) > 8 or is_field(text) \
        or is_field(last) or (announces(first) and "\n" in text)  # fmt: skip


def _all_candidates(chunks: list[tuple[str, str]], headings: frozenset[str] = frozenset()) -> list[Candidate]:
    """Every sentence of ``chunks`` that is not a question or one of ``headings`` (collapsed), in order
    (a FAQ heading answers nothing; a section heading in a chunk's text names its topic)."""
    out: list[Candidate] = []
    for rank, (chunk_id, text) in enumerate(chunks):
        listed = _is_list(text)
        spans = _lines(text) if listed else sentences(text)  # a list's items: "2 GB of RAM" is too short for the
        # splitter
        header = ""  # a row's context is its table's header row; a field's, the first field of its list
        for i, (s, e) in enumerate(spans):
            prev = text[spans[i - 1][0]:spans[i - 1][1]] if i else ""
            header = (header or prev) if _same_list(text[s:e], prev, header) else ""
            if not text[s:e].rstrip().endswith("?") and collapse(text[s:e]) not in headings:
                s = _with_term(text, spans[i - 1][1] if i else 0, s, headings)
                entry = _entry_line(text, spans[i - 1], s) if i and s == spans[i][0] else None
                s = s if entry is None else entry
                e = _with_what_follows(text, spans, i, headings)
                s, whole = _in_entry(text, s, spans[i], headings)
                context = header or prev
                while whole and out and out[-1].chunk_id == chunk_id and out[-1].start >= s:
                    context = out.pop().previous  # the entry read whole: its first sentence is in this quote
                out.append(Candidate(rank, chunk_id, s, text[s:e], context, listed))
    return out


GENERIC_LABELS = frozenset({"default", "defaults", "default value", "type", "value", "values", "range", "since",
                            "example", "context", "scope", "unit", "units", "required", "format", "syntax",
                            "allowed values", "possible values", "valid values", "added in", "status"})  # fmt: skip
"""Labels of a field that says nothing of what it belongs to ("Default: 64"): a reference's entries share them,
so such a field is quoted with its entry's heading (``_from_heading``)."""
HEADED_LINES = 6
HEADED_CHARS = 400


def _generic_field(line: str) -> bool:
    return is_field(line) and _cells(line) < 2 and _label(line) in GENERIC_LABELS


def _in_entry(text: str, start: int, own: tuple[int, int], headings: frozenset[str]) -> tuple[int, bool]:
    """Where the sentence ``own`` (its span) is quoted from (``start``: so far) when it says nothing of what it
    belongs to: a generic field ("Default: 64") from its entry's heading or name line (``_from_heading``); a bare
    default ("The default is 30.") or a later sentence of an option's, file's, variable's or setting's description
    that names nothing ("Give twice for debug output.", "This is slower but catches ...": it refers back, or has at
    most BARE_DEFAULT_WORDS words) from the entry's name (an option, a path, a variable: ``_NAMED_ENTRY``; a name
    written as code: "log_file") when that is near enough; else ``start``. With whether the entry is then quoted
    whole from its name (the quotes of its earlier sentences are in this one, and make way for it)."""
    sentence = text[own[0]:own[1]]
    if _generic_field(sentence):
        return _from_heading(text, start, headings), False
    if start != own[0] or not sentence.rstrip().endswith((".", "!")) or _NAMED_ENTRY.match(sentence) \
            or is_field(sentence):  # fmt: skip
        return start, False  # quoted with its term already, the next entry's name ("--timeout=SECONDS"), a field
    if not (_bare_default(sentence) or refers_back(sentence) or len(sentence.split()) <= BARE_DEFAULT_WORDS):
        return start, False
    defined = _defined_on_line(text, start)  # "flush_every (integer) : How long ...": on its line
    at = _from_heading(text, start, headings) if defined is None else defined
    line = text[at:].split("\n", 1)[0]
    name = _TYPE_AFTER.sub("", line.split(" : ", 1)[0].strip())  # "query_mem (integer)": the name is query_mem
    named = _NAMED_ENTRY.match(name) or (written_as_code(name) and any(c.isalpha() for c in name)) \
        or (defined is not None and len(name.split()) == 1 and not name.istitle())  # not "2.0.0"; a definition
    # list's term in capitals or lower case ("HEADER", "filename") is a name, not a word opening prose ("Note : ...")
    before = text[at + len(line.split(" : ", 1)[0] if defined is not None else line):own[0]]  # after the name
    leans = _bare_default(sentence) or bool(_THIS_ENTRY.match(sentence))
    count, chars = len(sentences(before)), len(" ".join(text[at:own[1]].split()))
    if at == start or not named or (defined is not None and not leans):
        return start, False  # on a definition list's line only a default or "this option" leans on the term: "The
        # cache is rebuilt on every start." says what it speaks of well enough, and is the answer alone (a review)
    if count < ENTRY_SENTENCES and chars <= ENTRY_CHARS:
        return at, True  # the entry read whole: its earlier sentences' quotes are in this one
    if leans and count < LEANING_SENTENCES and chars <= LEANING_CHARS:
        return at, False  # quoted from its name, the earlier sentences still quotable alone (a review: "The cache is
    return start, False  # rebuilt on every start." lost to a five-sentence quote of the whole entry)


_DEFINED = re.compile(r"\s*(\S+(?: \([^()\n]{1,30}\))?) : \S")
"""A definition list's term and its description on one line, as a Markdown definition list is stored
("flush_every (integer) : How long pages pile up ...")."""


_TYPE_AFTER = re.compile(r"\s+\([^()]{1,30}\)$")
"""A setting's type after its name ("work_mem (integer)", "--level (string)")."""


def _defined_on_line(text: str, start: int) -> int | None:
    """Where the line holding ``start`` opens, when it opens with a definition list's term (``_DEFINED``) before
    ``start``: the entry a later sentence of that line belongs to; else None."""
    at = text.rfind("\n", 0, start) + 1
    m = _DEFINED.match(text, at)
    return at + len(text[at:m.end()]) - len(text[at:m.end()].lstrip()) if m and m.end() <= start else None


ENTRY_SENTENCES = 3
ENTRY_CHARS = 300
"""An entry is quoted whole from its name (``_in_entry``) only up to its third sentence and this many characters
(whitespace squeezed): a long description's later sentence is quoted alone, as the precise sentence it is, not
as a paragraph that hides it (a review's finding: "It is rotated when it reaches 10 MB." became a five-line quote)."""
_THIS_ENTRY = re.compile(r"\W*(?:this|the|that)\s+(?:option|setting|parameter|variable|directive|flag|switch|"
                         r"key|field|value)\b", re.I)
"""A sentence that speaks of its entry as such ("This option is allowed only in CSV format.")."""
LEANING_SENTENCES = 5
LEANING_CHARS = 600
"""A sentence that opens with its entry's default ("The default value is eight megabytes (8MB).", "The default value
is 2.0, which makes hash operations use twice query_mem") or speaks of it as such ("This option is allowed only in
CSV format.": ``_THIS_ENTRY``; not any sentence that refers back, "The cache is rebuilt on every start.", which a
review found pulling five-sentence entries into one quote) is quoted from the entry's name up to its fifth sentence
and this many characters: read without its name it is any entry's (a probe of a configuration reference: "What is
the default value of query_mem?" led with hash_mem_factor's default, which names query_mem; a question on one
import option led with another option's "This option is not allowed ...")."""


_BARE_DEFAULT = re.compile(r"(?:the\s+)?default(?:\s+value)?\s+is\b|defaults?\s+to\b", re.I)
BARE_DEFAULT_WORDS = 8


def _bare_default(sentence: str) -> bool:
    """A sentence that opens with a default without naming what it is the default of ("The default is 30.", "Defaults
    to zstd.", "The default value is 2.0, which makes ..."): like a "Default:" field, it is quoted with its entry's
    name."""
    return bool(_BARE_DEFAULT.match(sentence))


def _from_heading(text: str, start: int, headings: frozenset[str]) -> int:
    """Where a generic field at ``start`` ("Default: 64") is quoted from: the heading of its entry, or the option
    line that opens it ("--timeout N"), when that is at most HEADED_LINES lines and HEADED_CHARS characters above
    it ("max_connections / The largest number of peers served at once. / Default: 64"), so that the value is
    quoted, and read, with the setting it belongs to; else ``start``. Another generic field between them is fine
    (a "Type:" line above a "Default:" one); one of the same label is another entry's, and ends the search."""
    lines = [m for m in _LINE.finditer(text, 0, start) if m.group().strip()]
    label = _label(text[start:text.find("\n", start) if "\n" in text[start:] else len(text)])
    for k in range(len(lines) - 1, max(-1, len(lines) - 1 - HEADED_LINES), -1):
        m, line = lines[k], lines[k].group().strip()
        if start - m.start() > HEADED_CHARS or (is_field(line) and _label(line) == label):
            return start  # too far, or another entry's "Default:": the heading above is not this one's
        if _heading(line, headings) or _entry_name(line, lines[k - 1].group().strip() if k else ""):
            return m.start() + len(m.group()) - len(m.group().lstrip())  # a heading, or an entry's name line
    return start


def _entry_name(line: str, above: str) -> bool:
    """Whether ``line`` names an entry of a reference (an option "--timeout N", a setting "backlog"): short, not a
    field nor a sentence, on a line of its own after a line that ended (a sentence, a field, a heading, nothing),
    so not the tail of a sentence ("for example / /var/log/tided.log") nor a command announced ("with: / --level 9")."""
    ended = not above or above.endswith((".", "!", "?")) or is_field(above) or _heading(above, frozenset())
    ended = ended and not announces(above)
    return ended and _term_like(line) and not is_field(line) and not prose_line(line)


_NAVIGATION = frozenset({"see also", "contents", "table of contents", "references", "external links", "notes",
                         "further reading", "bibliography", "index", "navigation"})  # fmt: skip


def _is_list(text: str) -> bool:
    """A passage that is a list: no sentence in it, and lines that are items (``_lines``)."""
    return not any(is_sentence_like(text[s:e]) for s, e in sentences(text)) and bool(_lines(text))


def _lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` that is an item of a list: it has a word and is not a title of a few
    capitalised words ("History", "Economy": a table of contents); none in a passage of links ("See also")."""
    found = [m for m in _LINE.finditer(text) if WORD.search(m.group())]
    if not found or collapse(found[0].group()).lower().rstrip(":") in _NAVIGATION:
        return []
    return [(m.start() + len(m.group()) - len(m.group().lstrip()), m.start() + len(m.group().rstrip()))
            for m in found if not _title_only(m.group())]  # fmt: skip


def _title_only(line: str) -> bool:
    words = WORD.findall(line)
    return len(words) <= 4 and all(w[:1].isupper() or w.lower() in STOPWORDS for w in words)


FOLLOW_SPANS = 6
FOLLOW_CHARS = 400


def _with_what_follows(text: str, spans: list[tuple[int, int]], i: int, headings: frozenset[str]) -> int:
    """Where the sentence ``spans[i]`` is quoted to: when it announces what follows (``announces``: "you should run
    the following:", "add the following to your configuration:", "You can change it by the following.") and the
    next lines are not prose (a command, a configuration block, a list of options), the quote goes on to their
    end, so that the command is quoted, and read, with the sentence that announces it (a how-to's answer is the
    command, and the sentence alone says nothing); else the sentence's own end. Lines, not sentences: a command
    shorter than a sentence ("git stash pop") is no sentence to the splitter. At most FOLLOW_SPANS lines and
    FOLLOW_CHARS characters are added; a line of prose or a heading ends it."""
    start, end = spans[i]
    newline = text.find("\n", end)
    if not announces(text[start:end]) or newline < 0 or text[end:newline].strip():
        return end  # not announcing, or the line goes on after it
    last, taken, in_words = end, 0, says_it_in_words(text[start:end])
    for m in _LINE.finditer(text, newline + 1):
        line = m.group().strip()
        if not line:
            continue
        if taken == FOLLOW_SPANS or m.end() - end > FOLLOW_CHARS or prose_line(line) or _heading(line, headings) \
                or _generic_field(line) or (in_words and not command_like(line)):  # fmt: skip
            break  # ("Default: false" after the command is the entry's; after "by the following." only code)
        last, taken = m.start() + len(m.group().rstrip()), taken + 1
    return last


_LINE = re.compile(r"[^\n]+")


TERM_CHARS = 80
TERM_WORDS = 8


def _with_term(text: str, gap_start: int, start: int, headings: frozenset[str]) -> int:
    """Where the sentence at ``start`` is quoted from: the line before it when that line is the term it describes
    (a definition list's ``-b`` or ``--graph``, ``PRAGMA busy_timeout``: too short to be a sentence, so the
    sentence splitter passes over it), so that the option is quoted, and read, with its description; else
    ``start``. A term is the last line between the previous sentence and this one (any line before it there is a
    heading), on a line of its own, at most TERM_WORDS words and TERM_CHARS characters, not ending as a sentence
    does, and not a heading itself. A description's first sentence too short for the splitter ("-D / Delete user.
    If the username exists ...", ``_short_opening``) is quoted with its term and the sentence after it."""
    term = _term_before(text, gap_start, _short_opening(text, gap_start, start), headings)
    return start if term is None else term


def _term_before(text: str, gap_start: int, start: int, headings: frozenset[str]) -> int | None:
    gap = text[gap_start:start]
    if not gap.rstrip(" \t").endswith("\n"):  # the sentence goes on from the line before: no term there
        return None
    if announces(text[:gap_start].rstrip().rsplit("\n", 1)[-1]) or text[start:start + 1] == "-":
        return None  # a command the sentence before announces, or an option line with its own term ("-v  Verbose")
    lines = [ln.strip() for ln in gap.split("\n") if ln.strip()]
    aliases = 0  # the option's other names, each on a line of its own above it ("-S / --sort / Sort the files")
    while aliases + 1 < len(lines) and _alias(lines[-2 - aliases]) and _alias(lines[-1]):
        aliases += 1
    if not lines or not all(_heading(ln, headings) or not WORD.search(ln) for ln in lines[:-1 - aliases]):
        return None  # before the term, only headings, or the tail of a line the splitter cut ("]")
    term = lines[-1]
    if not _term_like(term) or _heading(term, headings):
        return None
    first = gap.rindex(term)
    for name in reversed(lines[-1 - aliases:-1]):
        first = gap.rindex(name, 0, first)
    return gap_start + first


def opens_with_term(text: str) -> bool:
    """Whether a quotation opens with the term it describes on a line of its own (``_with_term``, ``_entry_line``:
    "-c, --checksum" above "Compare files by their SHA-256 checksum ..."): it names what it speaks of, whatever
    pronoun its description opens with. Not a sentence wrapped after a few words ("The server listens" above "on
    port 8080."): the line below goes on in lower case."""
    first, newline, rest = text.partition("\n")
    first, rest = first.strip(), rest.lstrip()
    if not newline or not first or not rest or not _term_like(first):
        return False
    return rest[:1].isupper() or bool(_ENTRY.match(first))


def _alias(line: str) -> bool:
    return line.startswith("-") and _term_like(line) and len(line.split()) <= 2


def _short_opening(text: str, gap_start: int, start: int) -> int:
    """Where the line the sentence at ``start`` is on begins, when what opens that line before it is a sentence too
    short for the splitter (under text.MIN_CHARS: an option's "Delete user." before "If the username exists in the
    file, it will be deleted."), so that it is quoted, and its term with it; else ``start``."""
    line = text.rfind("\n", gap_start, start) + 1
    head = text[line:start].strip()
    if line <= gap_start or len(head) >= MIN_CHARS or not head.endswith((".", "!")) or len(_WORDS.findall(head)) < 2:
        return start  # ("2. Select the network ...": a list's number is no sentence, nor "* Fixed.")
    return line + len(text[line:start]) - len(text[line:start].lstrip())


_WORDS = re.compile(r"[A-Za-z]{2,}")


_ENTRY = re.compile(r"-|/|~/|\$[A-Za-z_{]|[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
"""How an entry of a manual's OPTIONS, FILES or ENVIRONMENT list opens: an option, a path, a variable."""
_NAMED_ENTRY = re.compile(r"--?[A-Za-z0-9]|/\w|~/|\$[A-Za-z_{]|[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
"""An entry that is a name (an option, a path, a variable), not a list's bullet ("- Python 3.11 or newer") nor a
signature ("-- Alice"): only such an entry is joined to a description a blank line below it."""


def _entry_line(text: str, span: tuple[int, int], start: int) -> int | None:
    """Where the option, file or variable that the sentence at ``start`` describes begins, when the sentence
    ``span`` before it is one, too long for ``_with_term``'s short lines ("-u, --include-untracked",
    "/etc/backupctl/backupctl.conf"): on a line of its own (after a section name in capitals the splitter ran into
    it, "ENVIRONMENT"), opening as an entry does (``_ENTRY``), at most TERM_WORDS words, not ending as a sentence
    does, the description on the next line (or, for a name, ``_NAMED_ENTRY``, after one blank line); else None."""
    seg = text[span[0]:span[1]]
    cut = seg.rfind("\n") + 1
    if any(ln.strip() and not _heading(ln.strip(), frozenset()) for ln in seg[:cut].splitlines()):
        return None
    line = seg[cut:].strip()
    before, gap = text[text.rfind("\n", 0, span[0] + cut) + 1:span[0] + cut], text[span[1]:start]
    above = [ln.strip() for ln in text[:span[0] + cut].splitlines() if ln.strip()]
    if not _entry_name(line, above[-1] if above else ""):
        return None  # the tail of a sentence ("for example / /var/log/tided.log"), not an entry
    apart = gap.count("\n") == 2 and _NAMED_ENTRY.match(line)  # one blank line, as HTML's <dt> and <dd> give it
    if _ENTRY.match(line) and not before.strip() and (gap.count("\n") == 1 or apart) and not gap.strip():
        return span[0] + cut + len(seg[cut:]) - len(seg[cut:].lstrip())
    return None


def _term_like(line: str) -> bool:
    """Short enough to be a term (TERM_WORDS words, TERM_CHARS characters), and not ending as a sentence does."""
    short = len(line) <= TERM_CHARS and len(line.split()) <= TERM_WORDS
    return short and not line.endswith((".", "!", "?", ";", ":", ","))


def _heading(line: str, headings: frozenset[str]) -> bool:
    """A heading of the document (its titles and section headings), a line marked as one by the page's own anchor
    sign ("Options \u00b6"), or a manual page's section name in capitals ("OPTIONS", "SEE ALSO")."""
    capitals = line.isupper() and len(line.split()) <= 4 and "_" not in line and not line.startswith("-")
    return collapse(line) in headings or line.endswith("\u00b6") or capitals  # not "BACKUPCTL_HOME", nor "-S"


def _same_list(line: str, prev: str, header: str) -> bool:
    """``line`` goes on the table or the list of fields that ``prev`` is in (whose first line is ``header``,
    or none yet): two rows (a row may leave cells empty), or two ``Label: value`` fields (a record such as
    "Package: x / Section: libs": the first names what the others describe, as a table's header names its
    columns) unless ``line`` repeats the label of the list's first field (the next record starts)."""
    if not prev or not is_field(line) or not is_field(prev):
        return False
    row = _cells(line) >= 2
    if row != (_cells(prev) >= 2):
        return False
    return row or _label(line) != _label(header or prev)


def _label(field: str) -> str:
    return field.split(":", 1)[0].strip().lower()


def _cells(line: str) -> int:
    """The number of cells of a table row ("a | b | c": 3), 0 for any other line."""
    inner = line.strip().strip("|")
    return inner.count("|") + 1 if "|" in inner and is_field(line) else 0


def candidates(chunks: list[tuple[str, str]], headings: frozenset[str] = frozenset()) -> list[Candidate]:
    """The quotable sentences of ``chunks`` ((chunk id, text), in evidence order), in order; lines equal
    to one of ``headings`` (the documents' titles and section headings, collapsed) are left out.

    A sentence that reads like instructions to an AI is never quotable: it is not evidence of anything.
    """
    out = [c for c in _all_candidates(chunks, headings) if not reads_like_instructions(c.text)]
    if headings and not out:  # every line equals a heading (a sentence used as a heading, too): quote them
        out = [c for c in _all_candidates(chunks) if not reads_like_instructions(c.text)]
    # A heading ("Router manual (vendor)") states nothing: quote sentences when there are any. A passage with none
    # is a list (a section's "2 GB of RAM" / "PostgreSQL 14 or newer"): its lines are what it says.
    return [c for c in out if is_sentence_like(c.text) or (c.item and _listed(c, out))] or out


def _listed(cand: Candidate, cands: list[Candidate]) -> bool:
    """Whether ``cand`` is one of two or more lines of its passage: an item of a list, not a lone title."""
    return sum(c.chunk_id == cand.chunk_id for c in cands) >= 2


def instruction_sentences(chunks: list[tuple[str, str]]) -> list[Candidate]:
    """The sentences of ``chunks`` that ``candidates`` leaves out because they read like instructions to an AI."""
    return [c for c in _all_candidates(chunks) if reads_like_instructions(c.text)]


# ---------------------------------------------------------------- text addressed to an AI

_CHAT_MARKUP = re.compile(r"<\|[a-z_]+\|>|\[/?INST\]|<</?SYS>>", re.I)
"""Chat-template tokens (<|im_start|>, [INST], <<SYS>>): only text aimed at a model contains them."""
_OVERRIDE = re.compile(r"\b(?:ignore|disregard|forget|override)\s+((?:[\w']+\s+){0,4}?)"
                       r"(?:instructions?|prompts?|rules|guidelines|directives|programming|above)"
                       r"(?=\s*(?:$|[.,;:!)]|and\b|then\b|given\b|you\b))", re.I)  # fmt: skip
_EARLIER = frozenset("previous prior above earlier preceding foregoing original system all any your everything".split())
"""An override names what it overrides as earlier, the system's or the reader's own ("ignore all previous
instructions", "forget your rules"); "Ignore the instructions for the X200." is a manual's correction."""
_REPLY_THAT = re.compile(r"^\W*(?:please\s+)?(?:always\s+|only\s+)?(?:reply|respond)\s+(?:only\s+)?that\b", re.I)
_AI = r"(?:AI|A\.I\.|assistants?|chat\s?bots?|(?:large\s+)?language\s+models?|LLMs?|GPT[\w-]*|ChatGPT)"
_ADDRESSED = re.compile(rf"\bif\s+you\s+are\s+an?\s+{_AI}\b|\b{_AI}\s+(?:\w+\s+)?(?:reading|processing|summari[sz]ing)"
                        rf"\s+this\b|\bas\s+an?\s+{_AI}(?:\s+\w+)?,?\s+you\b", re.I)  # fmt: skip
"""Speaking to an AI reader as such: "If you are an AI ...", "LLMs reading this ...", "As an AI, you ..."."""
_NAMES_AI = re.compile(rf"\b{_AI}\b|\bsystem\s+prompt\b", re.I)
_DIRECTIVE = re.compile(
    r"(?:^|[,:;]\s*|\bplease\s+|\byou\s+(?:must|should|shall|will|need\s+to|have\s+to|are\s+to)\s+"
    r"(?:now\s+|always\s+|only\s+)?)(?:reply|respond|answer|say|output|tell|pretend|ignore|disregard|forget|claim)\b"
    r"|\byou\s+are\s+(?:now|no\s+longer)\s+(?:\w+,?\s+)?(?:a|an|the|my|in|called|named|bound|restricted)\b"
    r"|\bfrom\s+now\s+on,?\s+you\b|\bpretend\s+(?:to\s+be|you\s+are)\b|\bact\s+as\s+(?:a|an|the|if)\b", re.I)
"""Telling the reader what to say or be: an imperative opening a clause, "you must ...", a new role."""


def reads_like_instructions(sentence: str) -> bool:
    """True for a sentence written to steer an AI that reads it rather than to inform a person.

    Signs: chat-template markup; overriding earlier instructions; opening with "reply that";
    speaking to an AI reader as such; or naming an AI (or its system prompt) while telling it
    what to say or be. A manual's imperatives ("Press the reset button", "Ignore the warning
    light if it blinks once") carry none of them.
    """
    if _CHAT_MARKUP.search(sentence) or _REPLY_THAT.search(sentence) or _ADDRESSED.search(sentence):
        return True
    if any(_EARLIER & set(m.group(1).lower().split()) for m in _OVERRIDE.finditer(sentence)):
        return True
    return bool(_NAMES_AI.search(sentence) and _DIRECTIVE.search(sentence))
