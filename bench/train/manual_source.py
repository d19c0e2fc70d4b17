"""Manual-shaped examples for both readers (issue #51): questions on the pages of the fit manuals' fit half only
(sources.FIT_MANUALS, never bench/data/manuals.py's HELD_OUT; a page by ``page_half``), asked on the sentences
localreason would quote there.

A page is read as a user's library holds it: localreason's own reader for its format (the text is
bench.data.manuals.stored_text's), cut into passages by the chunker, each passage's candidates
(localreason.reason.candidates: an option or term on the line before its description is quoted with it) with its
headings (the page's title and the passage's section path, as reason passes them). Two sources (sources.SOURCES):

- MANUAL_QUESTIONS, the questions we wrote (bench/data/manuals/<manual>.jsonl): one whose page is on the fit half;
  its answering sentence is the candidate that holds its evidence and a gold answer, its span that answer's first
  copy there; hard negatives are the page's other candidates sharing most of its words (a usage line,
  ranking.is_synopsis, first when one shares any: even one naming the option asked about, unless the question asks
  how a command is written), one at random, and one of the passage of another page most like it. An unanswerable one on the fit half (by its id, as bench.quality.manuals draws it): every sentence of
  the fit-half passage that shares most rare words with it is a negative.
- MANUAL_STRUCTURE, questions made from templates on the same pages: an option or term with its description
  ("-b" / "Use batch mode; ...": "What does the -b option do?", the span the description's first clause, and
  "Which option uses batch mode?", the span the term), a NAME line ("git-bisect - Use binary search ...") the same
  way, and a heading with the first sentence under it ("Making the ISO9660 image file": "How do I make the ISO9660
  image file?", no span; the rest of its section neither answer nor negative). At most ``structure_cap`` a page,
  terms first, so that no page dominates.

Every manual example is trained on (split "train"): the trainers' validation stays SQuAD's kept-apart articles,
and the manuals' evaluation half is bench.quality.manuals'.
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.data import manuals as M
from bench.train.sources import (FIT_MANUALS, MANUAL_QUESTIONS, MANUAL_STRUCTURE, SEED, Passages, add_sources,
                                 cached_examples, examples_key, overlap, terms)  # fmt: skip

from localreason.ingest import chunk as chunking
from localreason.reason import candidates as quotable
from localreason.reason.ranking import is_synopsis, sink_synopses
from localreason.readers import heading_text
from localreason.text import WORD, collapse

HARD = 3
"""Hard negatives a question takes from its page (a usage line first when one shares its words)."""
STRUCTURE_CHARS, STRUCTURE_MIN, STRUCTURE_MAX = 4000, 2, 12
"""A page gives one structure question per STRUCTURE_CHARS characters of its text, at least STRUCTURE_MIN and at
most STRUCTURE_MAX (a manual's chapter is one page of the Debian Reference, a function one page of SQLite's)."""
CLAUSE_WORDS = 16
"""The longest first clause a span or a "Which option ...?" question is made of, in words."""


@dataclass(frozen=True)
class Ask:
    """A question as the builders read it: its text, and its gold answers (held_by: one of them, whitespace and
    case aside, as bench.data.manuals.ManualQuestion.held_by)."""

    text: str
    golds: tuple[str, ...] = ()

    def held_by(self, quotation: str) -> bool:
        quote = M.squeeze(quotation).lower()
        return any(M.squeeze(g).lower() in quote for g in self.golds if g.strip())


@dataclass(frozen=True)
class Sentence:
    """A candidate of a page: where it starts in the page's stored text, its text, what it is read with (the
    sentence before it, its table's header row), its passage and its section (the headings before it)."""

    start: int
    text: str
    previous: str
    passage: int
    section: int
    heading: str = ""
    """What a reader that reads headings is shown with it: reader.heading_text of the page's title and its
    passage's section path, as reason makes it from the evidence (read.headings_of)."""


@dataclass
class Page:
    manual: str
    name: str
    text: str
    sentences: list[Sentence]
    headings: list[tuple[int, int, str]]
    """(start, end, text) of every heading block, in order."""

    def passage(self, index: int) -> list[int]:
        """The indices of the sentences of the passage that sentence ``index`` is in, in order."""
        p = self.sentences[index].passage
        return [i for i, s in enumerate(self.sentences) if s.passage == p]


@dataclass
class Asked:
    """One question's material, for either builder: its answering sentence of ``page`` (an index; None for an
    unanswerable question), the answer's (start, end) in it (None: not known), the page's hard negatives (indices,
    best first), the sentences that are neither (``excluded``: the rest of a heading's section), and another
    page's passage most like the question (an unanswerable question's negatives)."""

    source: str
    manual: str
    kind: str
    question: Ask
    page: Page | None = None
    answer: int | None = None
    span: tuple[int, int] | None = None
    negatives: list[int] = field(default_factory=list)
    excluded: frozenset[int] = frozenset()
    elsewhere: list[Sentence] = field(default_factory=list)


def read_page(manual: str, name: str, path: Path) -> Page:
    """The page at ``path`` as a library holds it: its candidates, passage by passage (a sentence that two
    overlapping passages share once)."""
    from localreason.ingest.parse import detect_format, parse_bytes
    from localreason.types import LEVEL_PARAGRAPH

    parsed = parse_bytes(path.read_bytes(), path, detect_format(path))
    heads = [(b.start, b.end, parsed.text[b.start:b.end]) for b in parsed.blocks if b.kind == "heading"]
    starts = [h[0] for h in heads]
    passages = [c for c in chunking.chunk_document(parsed, name, chunking.ChunkParams.from_settings())
                if c.level == LEVEL_PARAGRAPH]  # fmt: skip
    out, seen = [], set()
    for p, c in enumerate(passages):
        names = frozenset(collapse(h) for h in (parsed.title, *c.section_path))
        heading = heading_text(parsed.title or path.name, c.section_path)  # the library's title (ingest.pipeline)
        for cand in quotable.candidates([(c.id, c.text)], names):
            at = c.start + cand.start
            if at not in seen:
                seen.add(at)
                out.append(Sentence(at, cand.text, cand.previous, p, bisect.bisect_right(starts, at), heading))
    return Page(manual, name, parsed.text, out, heads)


def fit_pages(manual: str, manuals_dir: Path) -> dict[str, Page]:
    """The pages of ``manual``'s fit half, read (none of a held-out manual)."""
    if manual in M.HELD_OUT:
        return {}
    root = manual_root(manual, manuals_dir)
    names = [(p.relative_to(root).as_posix(), p) for p in M.pages(manual, manuals_dir)]
    return {n: read_page(manual, n, p) for n, p in names if M.page_half(manual, n) == "fit"}


def manual_root(manual: str, manuals_dir: Path) -> Path:
    """The manual's root folder (bench.data.manuals.fetch: unpacked once), or a message saying what to do."""
    try:
        return M.fetch(manual, manuals_dir)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"The manual {manual!r} is not in {manuals_dir} and could not be fetched ({exc}). Unpack it "
                         f"with `python -m bench.data.manuals --check --data-dir {manuals_dir}` where the Debian "
                         "archive can be reached, or train without the manuals: --no-manuals.") from exc


def unanswerable_half(manual: str, qid: str) -> str:
    """An unanswerable question has no page: its half is drawn by its id, as bench/quality/manuals.py draws it."""
    return M.page_half(manual, f"unanswerable:{qid}")


def locate_answer(text: str, golds) -> tuple[int, int] | None:
    """(start, end) in ``text`` of the first gold answer found there (its first copy; whitespace aside, and case
    when it is not found as written), or None."""
    for flags in (0, re.I):
        for g in golds:
            words = g.split()
            m = re.search(r"\s+".join(map(re.escape, words)), text, flags) if words else None
            if m:
                return m.start(), m.end()
    return None


def evidence_sentence(page: Page, q: M.ManualQuestion) -> int | None:
    """The index of the candidate that holds ``q``'s evidence (or lies inside it) and a gold answer, or None."""
    ask, evidence = Ask(q.question, tuple(q.answers)), M.squeeze(q.evidence).lower()
    holding = [i for i, s in enumerate(page.sentences) if ask.held_by(s.text)]
    whole = [i for i in holding if evidence in M.squeeze(page.sentences[i].text).lower()]
    inside = [i for i in holding if M.squeeze(page.sentences[i].text).lower() in evidence]
    return (whole or inside or [None])[0]


def hard_negatives(page: Page, ask: Ask, avoid: set[int] | frozenset[int]) -> list[int]:
    """The page's candidates sharing most of the question's words (at least one; none in ``avoid``, none that
    holds a gold answer), best first: HARD of them, a usage line (SYNOPSIS) first when one shares them and the
    ranking sinks it for this question (it names the option asked about and answers nothing, unless the question
    asks how a command is written)."""
    shared = {i: overlap(ask.text, s.text) for i, s in enumerate(page.sentences) if i not in avoid}
    order = [i for i in sorted(shared, key=lambda i: -shared[i]) if shared[i] > 0]
    usage = [i for i in order if is_synopsis(page.sentences[i].text) and sunk(ask.text, page.sentences[i].text)][:1]
    return (usage + [i for i in order if i not in usage and not ask.held_by(page.sentences[i].text)])[:HARD]


def sunk(question: str, usage: str) -> bool:
    """Does the ranking put the usage line ``usage`` below the sentences for ``question`` (ranking.sink_synopses:
    the question does not ask how something is written)?"""
    scores = np.zeros(2)
    sink_synopses(question, [usage, "A sentence."], scores)
    return bool(scores[0] < scores[1])


class Retrieval:
    """The fit-half passages of one manual, with rare-word retrieval (sources.Passages): the passage of another
    page most like a question."""

    def __init__(self, pages: dict[str, Page]) -> None:
        self.runs: list[list[Sentence]] = []
        keys = []
        for name, page in pages.items():
            by: dict[int, list[Sentence]] = {}
            for s in page.sentences:
                by.setdefault(s.passage, []).append(s)
            for run in by.values():
                self.runs.append(run)
                keys.append((name, " ".join(s.text for s in run)))
        self.index = Passages(keys)

    def best(self, question: str, page: str = "") -> list[Sentence]:
        i = self.index.best_elsewhere(question, page)
        return self.runs[i] if i is not None else []


def our_questions(manual: str, pages: dict[str, Page], retrieval: Retrieval, counts: Counter):
    """The questions we wrote for ``manual`` on its fit half (Asked, in file order), each kind counted."""
    label = f"{MANUAL_QUESTIONS} {manual}"
    for q in M.questions(manual) if manual not in M.HELD_OUT else []:
        if q.kind == "unanswerable":
            if unanswerable_half(manual, q.id) == "fit":
                counts[f"{label}: unanswerable, fit half"] += 1
                yield Asked(MANUAL_QUESTIONS, manual, q.kind, Ask(q.question), elsewhere=retrieval.best(q.question))
            continue
        page = pages.get(q.page)
        if page is None:
            continue  # on the evaluation half
        at = evidence_sentence(page, q)
        if at is None:
            counts[f"{label}: left out, its evidence in no one candidate"] += 1
            continue
        ask = Ask(q.question, tuple(q.answers))
        counts[f"{label}: answerable, fit half"] += 1
        yield Asked(MANUAL_QUESTIONS, manual, q.kind, ask, page, at, locate_answer(page.sentences[at].text, q.answers),
                    hard_negatives(page, ask, {at}), elsewhere=retrieval.best(q.question, page.name))  # fmt: skip


def add_manuals(builder, manuals_dir: Path, counts: Counter) -> None:
    """Every manual question (ours, then the structure's) of the fit manuals' fit half, added to ``builder`` (this
    reader's or the passage reader's ``add_manual(asked)``); what was made is counted in ``counts``."""
    for manual in FIT_MANUALS:
        pages = fit_pages(manual, manuals_dir)
        counts[f"manual pages {manual}: fit half"] = len(pages)
        retrieval = Retrieval(pages)
        ours = (M.QUESTIONS / f"{manual}.jsonl").is_file()
        for asked in our_questions(manual, pages, retrieval, counts) if ours else ():
            builder.add_manual(asked)
        for name in sorted(pages):
            for asked in structure_questions(pages[name], retrieval):
                counts[f"{MANUAL_STRUCTURE} {manual}: {asked.kind}"] += 1
                builder.add_manual(asked)


# ---------------------------------------------------------------- questions from the pages' structure

VERBS = frozenset(
    "add allow cause change check close compare contain control convert copy create declare define delete determine "
    "disable display do enable exclude force generate ignore implement include indicate keep limit list load make "
    "match open output prevent print provide query read remove report require restrict return run save search "
    "select send set show skip specify start stop store suppress tell treat turn use write".split())
"""Verbs a description opens with ("Use batch mode", "Returns the ..."): "Which option uses batch mode?"."""
BACK_REFERENCES = frozenset("that these those it its you then so but and or also here there".split())
"""A sentence opening with one of these goes on from the one before: no description of the line above it."""
HOWTO_VERBS = frozenset(
    "access add apply back boot build change check choose compile configure connect convert create customize "
    "customise debug define delete disable enable encrypt export filter find get handle import insert install keep "
    "load log make manage manipulate migrate monitor mount open partition prepare print query read receive remove "
    "restore run save secure select send set share start stop test update upgrade use write".split())
"""A heading that opens with one of these as a gerund ("Making the ISO9660 image file") is asked as "How do I make
...?"."""
GENERIC = frozenset(
    "introduction overview summary examples example notes note history background conclusion conclusions references "
    "prerequisites contents acknowledgments acknowledgements thanks credits copyright license preface abstract "
    "version history table of contents see also prev next home index search download support about "
    "documentation usage concepts websites tutorials description details syntax options parameters limitations "
    "features requirements installation configuration setup troubleshooting motivation implementation discussion "
    "results methods functions variables settings files commands operation operations status definitions "
    "terminology goals design interface bugs caveats compatibility performance security testing tools "
    "miscellaneous other general basics limits".split())
"""Headings that name no topic a user asks about (alone: "Usage", "Security")."""
FINITE = frozenset("is are was were does do goes has have can will should must works".split())
"""A heading with one of these is a sentence, not a topic to ask "What is ...?" of."""
LEADS = frozenset("when why where which what who with without about as for in on at from by into over under after "
                  "before between through beyond using".split())
"""A heading that opens with one of these ("When Something Goes Wrong", "Over time") names no thing."""
ASIDES = frozenset("example examples acknowledgments acknowledgements thanks credits introduction overview summary "
                   "conclusion".split())
"""A heading with one of these anywhere ("A concrete example") is about the document, not a topic."""
_NUMBERED = re.compile(r"^(?:(?:chapter|appendix|section|part)\s+)?"
                       r"(?:[A-Z]?\d+(?:\.\d+)*\.?|\(\d+\)|[A-Z]\.(?:\d+\.?)*)\s+", re.I)  # fmt: skip
_CALLOUT = re.compile(r"^[A-Z]{3,}(?:\s+[A-Z]{2,})*\s+(?=\S*[a-z])")
"""A callout's label before its title ("NOTE Permanent questioning", "TOOL Samba")."""
_NAME_LINE = re.compile(r"^(?P<name>[A-Za-z][\w.+:-]*(?:\(\d\w*\))?)[ \t]+(?:-|--|\u2013|\u2014)[ \t]+"
                        r"(?P<desc>[A-Za-z].*)$")  # fmt: skip


def structure_cap(page: Page) -> int:
    return min(STRUCTURE_MAX, max(STRUCTURE_MIN, len(page.text) // STRUCTURE_CHARS))


def structure_questions(page: Page, retrieval: Retrieval) -> list[Asked]:
    """The page's template questions (``term_questions``, ``heading_questions``), at most ``structure_cap``: terms
    and NAME lines first, then headings, each kind in a seeded order."""
    rng = random.Random(f"{SEED}:{page.manual}:{page.name}")
    made = []
    for kind in (term_questions, heading_questions):
        found = kind(page)
        rng.shuffle(found)
        made += found
    out = []
    for kind, text, at, span, golds, excluded in made[:structure_cap(page)]:
        ask = Ask(text, golds)
        out.append(Asked(MANUAL_STRUCTURE, page.manual, kind, ask, page, at, span,
                         hard_negatives(page, ask, excluded | {at}), excluded, retrieval.best(text, page.name)))
    return out


def first_clause(text: str, start: int) -> int | None:
    """Where the first clause of the description at ``text[start:]`` ends (at ";", ":", " (" or a full stop), or
    None when it is longer than CLAUSE_WORDS words (cut at a comma, it might end inside a list) or shorter than
    two."""
    m = re.compile(r"[;:]|\s\(|\.(?=\s|$)").search(text, start)
    end = m.start() if m else len(text.rstrip())
    return end if 2 <= len(text[start:end].split()) <= CLAUSE_WORDS else None


def prose(text: str, capital: bool = True) -> bool:
    """Reads as a description: starts with a capital (where ``capital``), four words or more, mostly letters (not
    code or a table)."""
    return bool(re.match(r"[A-Z]" if capital else r"[A-Za-z]", text)) and len(text.split()) >= 4 and \
        sum(ch.isalpha() or ch.isspace() for ch in text) >= 0.8 * len(text)


def term_noun(term: str) -> str | None:
    """What kind of thing a definition list's term is (option, pragma, function, constant, term), or None when the
    line is no term (code, a figure, a number, a navigation link)."""
    if re.fullmatch(r"--?[A-Za-z][\w-]*(?:[ =][\w<>.=-]+)?", term):
        return "option"
    if re.fullmatch(r"PRAGMA\s+[\w.]+", term, re.I):
        return "pragma"
    if re.fullmatch(r"[A-Za-z_][\w.:]*\([^()]*\)", term):
        return "function"
    if re.fullmatch(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+", term):
        return "constant"
    plain = re.fullmatch(r'"?[A-Za-z][\w .+/=-]{0,38}"?', term) and not _CALLOUT.match(term)
    if plain and len(term.split()) <= 4 and term.lower().strip('"') not in GENERIC and not _NUMBERED.match(term + " "):
        return "term"
    return None


def third_person(verb: str) -> str:
    if verb == "do":
        return "does"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + ("es" if re.search(r"(?:s|sh|ch|x|z)$", verb) else "s")


def predicate(clause: str, noun: str) -> tuple[str, str] | None:
    """("option", "uses batch mode") from the clause "Use batch mode" (or "This option uses ...", "Returns ..."):
    the noun a "Which ...?" question names and what it asks, or None when the clause does not open with a verb
    (VERBS, or is, has, can, may, must after "This")."""
    words = clause.split()
    modal = ("is", "has", "can", "may", "will", "must")
    if words[0] == "This" and len(words) > 2:
        if words[1] in modal or verb_form(words[1]) == words[1]:
            return noun, " ".join(words[1:])
        if words[1].isalpha() and words[1].islower() and (words[2] in modal or verb_form(words[2]) == words[2]):
            return words[1], " ".join(words[2:])
        return None
    verb = verb_form(words[0].lower())
    return (noun, " ".join([verb, *words[1:]])) if verb else None


def term_questions(page: Page) -> list[tuple]:
    """(kind, question, sentence, span, golds, excluded) for every option or term with its description (a
    candidate whose first line is the term, ``described``) and every NAME line: "What does X do?" (the span: the
    description's first clause) and, when that clause starts with a verb, "Which option ...?" (the span: the
    term)."""
    out = []
    for i, s in enumerate(page.sentences):
        term, d, noun, kind = described(s.text)
        if noun is None:
            continue
        end = first_clause(s.text, d)
        ask = {"option": f"What does the {term} option do?", "term": f"What does {term} mean?",
               "constant": f"What does {term} mean?"}.get(noun, f"What does {term} do?")  # fmt: skip
        out.append((kind, ask, i, (d, end) if end else None, (s.text[d:end],) if end else (), frozenset()))
        said = predicate(s.text[d:end], noun) if end else None
        if said and said[0] != "term":
            out.append((kind, f"Which {said[0]} {said[1]}?", i, (0, len(term)), (term,), frozenset()))
    return out


def described(text: str) -> tuple[str, int, str | None, str]:
    """(the term, where its description starts, its noun, "term" or "name line") of a candidate that starts with
    a term on its own line (candidates._with_term; an option without its argument) or is a NAME line
    ("git-bisect - Use binary search ..."), whose description is one sentence of prose that describes it
    (``describes``); the noun (term_noun's; a NAME line's: command or file) is None for any other."""
    head, sep, rest = text.partition("\n")
    if sep:
        term, noun, kind = head.strip(), term_noun(head.strip()), "term"
        d = len(text) - len(rest.lstrip())
        term = term.split()[0] if noun == "option" else term
    else:
        name = _NAME_LINE.match(text)
        if not name or re.search(r"/|:|\s(?:-|--|\u2013|\u2014)\s", name["desc"]):
            return "", 0, None, "term"
        term, d, kind = name["name"], name.start("desc"), "name line"
        noun = ("command" if re.fullmatch(r"[a-z][a-z0-9+-]*(?:\(\d\w*\))?", term) else
                "file" if re.search(r"\.\w{1,4}$", term) else term_noun(term))  # fmt: skip
    return term, d, noun if noun and describes(term, text[d:], noun, kind) else None, kind


def describes(term: str, description: str, noun: str, kind: str) -> bool:
    """Is ``description`` one sentence of prose (a capital, a full stop, mostly letters; a NAME line's may be
    in small letters without a full stop) that does not go on from an earlier one, and, for a plain term, one
    that names it or opens as a definition does ("This ...", "The ...", a verb)?"""
    text = description.strip()
    words = text.split()
    if "\n" in text or len(words) < 4 or sum(ch.isalpha() or ch.isspace() for ch in text) < 0.8 * len(text):
        return False
    if kind == "term" and not (text[0].isupper() and text.endswith(".")):
        return False
    first = words[0].lower()
    if first in BACK_REFERENCES:
        return False
    if noun != "term":
        return True
    opens = first in ("this", "the", "a", "an", "each", "every") or verb_form(first) is not None
    return opens and (first == "this" or bool(terms(term) & terms(text)))


def verb_form(word: str) -> str | None:
    """The third person of ``word`` when it is one of VERBS, in either form ("use", "uses": "uses"), else None."""
    for v in VERBS:
        if word in (v, third_person(v)):
            return third_person(v)
    return None


def heading_questions(page: Page) -> list[tuple]:
    """(kind, question, sentence, span, golds, excluded) for every heading a user's question can be made of
    (``heading_question``) whose first sentence under it reads as prose: that sentence answers (no span is known),
    the rest of its section is neither answer nor negative."""
    words = Counter(WORD.findall(page.text))
    by_section: dict[int, list[int]] = {}
    for i, s in enumerate(page.sentences):
        by_section.setdefault(s.section, []).append(i)
    out = []
    for h, (_, _, text) in enumerate(page.headings):
        section = by_section.get(h + 1, [])
        question = heading_question(text, words)
        if not question or not section:
            continue
        first = page.sentences[section[0]]
        if "\n" in first.text.strip() or not prose(first.text) or not first.text.rstrip().endswith("."):
            continue
        out.append(("heading", question, section[0], None, (), frozenset(section[1:])))
    return out


def heading_question(heading: str, words: Counter) -> str | None:
    """The question a user would ask of a section by its heading, or None: "How do I make the ISO9660 image
    file?" (a gerund), "How do I ...?" ("How to ..."), the heading itself when it is a question, "What is the ps
    command?" (a short noun phrase without a colon); numbering, a callout's label and an aside in brackets go."""
    h = _CALLOUT.sub("", _NUMBERED.sub("", collapse(heading)))
    h = re.sub(r"\s*\([^)]*\)", "", re.split(r"\s+(?:-|--|\u2013|\u2014)\s+", h)[0]).strip(" .")
    letters = sum(ch.isalpha() for ch in h)
    if not h or letters < 0.6 * len(h) or h.lower() in GENERIC or "/" in h or re.search(r"\bvs\b", h, re.I):
        return None
    first, *rest = h.split()
    if h.endswith("?"):
        return h if len(h.split()) >= 3 else None
    if first.lower() == "how" and rest[:1] and rest[0].lower() == "to" and len(rest) > 1:
        return f"How do I {lower(' '.join(rest[1:]).split(':')[0], words)}?"
    if base_verb(first) and rest:
        return f"How do I {base_verb(first)} {lower(' '.join(rest).split(':')[0], words)}?"
    small = {w.lower() for w in h.split()}
    if ":" in h or len(h.split()) > 5 or not terms(h) or first.lower().endswith("ing") or small & FINITE or \
            first.lower() in GENERIC | LEADS or first[0].isdigit() or small & ASIDES:
        return None  # a long title, a sentence ("SQLite Is Transactional"), "Example Usage"
    are = " and " in h or re.search(r"[a-z][^su]s$", h.split()[-1])
    return f"What {'are' if are else 'is'} {lower(h, words)}?"


def base_verb(word: str) -> str | None:
    """The verb of HOWTO_VERBS that ``word`` is the gerund of ("Making": "make", "Setting": "set"), or None."""
    stem = word.lower()[:-3] if word.lower().endswith("ing") else ""
    for verb in (stem, stem + "e", stem[:-1] if stem[-2:-1] == stem[-1:] else ""):
        if verb in HOWTO_VERBS:
            return verb
    return None


def lower(phrase: str, words: Counter) -> str:
    """``phrase`` with a capitalised word lower-cased where the page writes it in small letters too ("Virtual
    Consoles": "virtual consoles"; "Debian" stays)."""
    out = []
    for w in phrase.split():
        if w[:1].isupper() and (w[1:].islower() or w == "A") and words[w.lower()]:
            w = w.lower()
        out.append(w)
    return " ".join(out)


# ---------------------------------------------------------------- what cached examples were made from


def manuals_key(manuals_dir: Path) -> str:
    """A hash of what the manual examples are made from: this module's code and the code that reads a page
    (localreason's readers, chunker and candidates), the question files, and the fit manuals' pages (names and
    sizes): a change to any of them builds the examples anew."""
    import localreason.ingest as ingest

    digest = hashlib.sha256(inspect.getsource(sys.modules[__name__]).encode())
    import localreason.reason.ranking as ranking
    import localreason.text as wording

    code = sorted(Path(ingest.__file__).parent.rglob("*.py")) + [Path(m.__file__) for m in (quotable, ranking, wording)]
    for path in [*code, *(M.QUESTIONS / f"{m}.jsonl" for m in FIT_MANUALS)]:
        digest.update(path.read_bytes() if path.is_file() else b"-")
    for manual in FIT_MANUALS:
        root = manual_root(manual, manuals_dir)
        for p in M.pages(manual, manuals_dir):
            digest.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\0".encode())
    return digest.hexdigest()[:10]


def built_examples(kind: str, parts: list, builder_class, squad_questions, qa_data, data_dir: Path,
                   manuals_dir: Path | None) -> list[dict]:  # fmt: skip
    """A trainer's examples (``kind``: its cache's name) of SOURCES, the manuals' too with ``manuals_dir`` (where
    they are unpacked), cached in ``data_dir`` under sources.examples_key of ``parts`` (the code that builds them)
    and manuals_key: built anew when that code, the data or the question files change."""
    key = examples_key(parts, qa_data) + (f"-m{manuals_key(manuals_dir)}" if manuals_dir else "")

    def build():
        builder = builder_class(random.Random(SEED))
        counts = add_sources(builder, qa_data, squad_questions)
        if manuals_dir:
            add_manuals(builder, manuals_dir, counts)
        return builder.examples, counts

    return cached_examples(data_dir / "reader" / f"{kind}-s{SEED}-{key}.jsonl", build)
