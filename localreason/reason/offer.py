"""What the model is offered to quote: the best sentences, how many of them lead the answer, and the sentence
that names what the best one refers to.

The best-ranked quotation leads every answer; the next ones join it only while the ranking gives each at
least a share (the calibration's lead_ratio, or read_lead_ratio after the reader) of the best one's estimated
chance of holding the answer, at most most_lead (``lead_count``). A request may fix the number instead (the
``answer_quotes`` setting, 1 to MAX_LEAD). EXTRA_CANDIDATES more sentences are offered after the lead ones,
which the model may add.

The naming rule: a question that asks who or what by name, whose best sentence says it only through a pronoun
or a bare description ("After the flood he rebuilt the bridge."), is also answered with the nearest sentence
before it in the same passage that names it (``with_naming_sentence``). The two are one statement with two
references (``Offer.joined``): the name is in one sentence and what the question asks about is in the other,
and neither alone answers.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NamedTuple

from ..search.copies import words as copy_words
from ..text import STOPWORDS, WORD, code_line, is_field, sentences, suffix_stem
from ..types import EvidencePacket
from .answer_type import asked_kind, asks_default
from .calibration import DEFAULT, Calibration
from .candidates import (FOLLOW_CHARS, FOLLOW_SPANS, REFERRING, Quote, candidates, command_names,
                         opens_with_term, reads_like_instructions, refers_back)
from .polarity import denies
from .ranking import says_default

MAX_LEAD = 5
"""The most lead quotations a request may fix (``lead_quotes``, the answer_quotes setting: 1 to 5); also the
most that lead once the naming sentence joins. A limit, not a fit."""
EXTRA_CANDIDATES = 2
"""Quotable sentences offered beyond the lead ones, best first (the model may add one of them)."""
REPEAT_WORDS = 5
"""The fewest words a sentence has for ``without_repeats`` to take it for a repeat of another (a limit, not a fit)."""
NAMING_LOOKBACK = 3
"""How many sentences back ``naming_sentence`` looks for one that names."""
_ASKS_NAME = re.compile(r"^\W*(?:(?:and|but|so)\W+)?(?:who|whom|whose|which)\b|\bwho(?:m|se)?\b|"
                        r"\bwhat\s+(?:\w+\s+){0,3}?(?:name|called|named)\b|\bname\s+(?:of|the)\b", re.I)  # fmt: skip
"""A question that asks for who or what by name: who / whom / whose / which, "what is the name of", "what was
it called"."""
_PERSONAL = frozenset("he she they him her them".split())
"""Pronouns that stand for who did something (offer.points_before); "it" and "this" too often stand for nothing."""
_DETERMINERS = frozenset("the this that these those".split())


class Offer(NamedTuple):
    """The quotable sentences offered to the model, best first, how many of them lead the answer, and
    whether the gate found the evidence on the topic without clearly answering (then only the closest)."""

    quotes: list[Quote]
    lead_quotes: int
    closest_only: bool = False
    joined: bool = False
    """The first two quotes lead as one statement with two references: the sentence that names who or what, then
    the best sentence, which says it only through "he" or "the company" (``with_naming_sentence``)."""
    several: bool = False
    """The lead quotes each speak for a different source (``with_sides``: the sides of a disagreement, or the
    documents a comparison asks about): no single answer phrase leads."""

    def narrowed(self) -> "Offer":
        """The offer as the gate's verdict allows: the closest sentence alone when ``closest_only`` (with the
        sentence that names whom it refers to, when ``joined`` leads with it)."""
        if not self.closest_only:
            return self
        n = 2 if self.joined else 1
        return Offer(self.quotes[:n], min(n, self.lead_quotes), True, joined=self.joined)


def lead_count(probabilities, ratio: float = DEFAULT.lead_ratio, most: int = DEFAULT.most_lead) -> int:
    """How many of the best-ranked quotations an answer leads with, given their probabilities best
    first: the best one, and each next one while its probability is at least ``ratio`` x the best's,
    at most ``most`` and never more than there are."""
    probs = [float(p) for p in probabilities]
    if not probs:
        return 0
    k = 1
    while k < min(len(probs), most) and probs[k] >= ratio * probs[0]:
        k += 1
    return k


def offered(ranked: list[Quote], lead: int, closest_only: bool = False) -> Offer:
    """The ``lead`` best sentences of ``ranked`` (repeats already left out: ``without_repeats``) and EXTRA_CANDIDATES
    more, as an offer (not yet narrowed)."""
    return Offer(ranked[:lead + EXTRA_CANDIDATES], lead, closest_only)


def without_repeats(ranked: list[Quote], documents: dict[str, str] | None = None) -> list[Quote]:
    """``ranked`` less each sentence that repeats a better-ranked one (case, punctuation and spacing aside): its
    words are all in the better one of the same document (``documents``: chunk id -> document id; else the same
    passage), in order (a command line quoted again after the sentence that announced it, a sentence in two
    overlapping windows of one long paragraph; across documents "Never run X" and "Run X" are two voices), or the
    two are the same words but for notes in brackets that only cite (a page quoting another page's sentence with
    its source after it: ``_CITES``). A sentence that adds words of its own, outside such notes, is not a repeat
    (it may restrict what the other says), nor is one of fewer than REPEAT_WORDS words."""
    kept: list[tuple[str, str, str]] = []  # each kept sentence's document, words, and words outside cited notes
    out: list[Quote] = []
    documents = documents or {}
    for q in ranked:
        words, bare = _padded(q.text), _padded(_NOTE.sub(_citation_out, q.text))
        source = documents.get(q.chunk_id, q.chunk_id)
        if len(words.split()) >= REPEAT_WORDS:
            if any((d == source and words in k) or (bare == b and len(bare.split()) >= REPEAT_WORDS)
                   for d, k, b in kept):  # fmt: skip
                continue
            kept.append((source, words, bare))
        out.append(q)
    return out


_NOTE = re.compile(r"\([^()]*(?:\)|$)|\[[^\[\]]*(?:\]|$)")
"""A note in brackets, or one cut off at the sentence's end."""
_CITES = re.compile(r"\s*(?:(?:see|source|sources|cf|ref|refs|reference|checked-by)\b(?![^)\]]*\b(?:not|no|never|"
                    r"except|unless|only|but)\b)|\d{1,3}\s*[\])])", re.I)  # fmt: skip
"""A note that only says where the sentence comes from or where to read more ("(source: lang_createtable.html,
checked-by: ...)", "(see section 3)", "[12]"): what ``without_repeats`` sets aside. A note that says more ("(8443
with TLS)", "(see below: not on Windows)", "(from version 4.0)") makes two sentences different."""


def _citation_out(note: re.Match) -> str:
    return " " if _CITES.match(note.group()[1:]) else note.group()


def _padded(text: str) -> str:
    """``text``'s words, space-padded, with the signs a number's meaning hangs on in their places (copies.words:
    "-40", "> 10", "1.5"), so that two sentences that differ only there are not the same words."""
    return f" {' '.join(copy_words(text))} "


def offer_of(question: str, ranked: list[Quote], lead_quotes: int | None = None, closest_only: bool = False,
             packet: EvidencePacket | None = None, *, calibration: Calibration = DEFAULT,
             documents: dict[str, str] | None = None) -> Offer:  # fmt: skip
    """The sentences offered to the model and how many lead (``lead_count`` on the ranking's estimate, or the
    request's fixed ``lead_quotes``), narrowed to the closest one when the gate said so (``closest_only``).

    With ``packet``, a question that asks who or what by name whose best sentence leans on a reference also
    gets the sentence that names it (``with_naming_sentence``). ``documents`` (chunk id -> document id) says which
    sentences share a document for ``without_repeats``."""
    ranked = without_repeats(ranked, documents)
    read_by_reader = bool(ranked) and ranked[0].reader is not None
    ratio = calibration.read_lead_ratio if read_by_reader else calibration.lead_ratio
    if lead_quotes is None:
        lead = lead_count([o.probability for o in ranked], ratio, calibration.most_lead)
    else:
        lead = min(lead_quotes, len(ranked))
    offer = offered(ranked, lead, closest_only)
    if packet is None or not ranked:
        return offer.narrowed()
    if closest_only:  # the closest sentence alone, and the one that names whom it refers to, when the reader read
        near = offer.narrowed()  # them as one (Quote.referent)
        near = with_naming_sentence(question, near, packet) if ranked[0].referent and asks_for_name(question) else near
        return _before_it(question, near, packet)
    return _before_it(question, with_naming_sentence(question, offer, packet), packet)


def _before_it(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with what the best sentence needs around it: the commands below a how-to's sentence, the sentence
    after it that completes it (a reason, or what holds instead of what it denies), the step
    before a later step of a how-to, the reason before a conclusion a why-question gets, the sentence that what
    the best one opens with refers to, the dated heading of a changelog's entry (at most one of the step, the
    reason, the referent and the heading: each leaves the offer joined)."""
    offer = with_command_after(question, with_default_after(question, offer, packet), packet)
    offer = with_step_before(question, with_sequel_after(question, offer, packet), packet)
    offer = with_referent_before(question, with_reason_before(question, offer, packet), packet)
    return with_dated_heading(question, offer, packet)


def _chunk_text(packet: EvidencePacket, chunk_id: str) -> str:
    """The admitted text of the packet's chunk ``chunk_id`` ("" when it is not in the packet)."""
    return next((c.content for c in packet.chunks if c.chunk_id == chunk_id), "")


_REASON_AFTER = re.compile(
    r"^\W*(?:(?:this|that|it)\s+is\s+(?:(?:so|done|needed|required|necessary)\s+)?(?:because|to(?!\s+be\b)|so\s+that|"
    r"in\s+order\s+to|since)\b|(?:the|one)\s+reason\s+(?:is|for\s+this)\b|because\b|"
    r"(?:this|that)\s+(?:ensures|prevents|avoids|guarantees)\b)", re.I)  # fmt: skip
"""A sentence that gives the reason for the one before it ("This is to maintain the integrity of files, ...", "The
reason is ...", "This prevents ..."); not "This is why ..." (a conclusion: the reason is before it), nor "It is to be
run as ..." (an instruction, a review found)."""
_INSTEAD = re.compile(r"^\W*(?:instead|rather)\b", re.I)
_IN_THAT_CASE = re.compile(r"^\W*(?:in\s+(?:such|this|that|these|those)\s+(?:an?\s+)?"
                           r"(?:cases?|circumstances?|situations?|events?)|to\s+do\s+(?:so|this|that)|"
                           r"to\s+achieve\s+(?:this|that))\b", re.I)  # fmt: skip
"""A sentence that says what to do in the situation the one before it describes ("Sometimes two disks are not
available at once ... In such circumstances, it is possible to create a degraded array by passing missing ...")."""


def with_sequel_after(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with its best sentence quoted on to the next one in its paragraph when that one completes it: the
    reason a why-question asks for, given right after ("... the Debian system needs the proper shutdown procedure
    ... This is to maintain the integrity of files, ..."), or what holds instead of what the best sentence denies
    ("SQLite does not have a storage class set aside for storing dates and/or times. Instead, the built-in Date And
    Time Functions ... as TEXT, REAL, or INTEGER values"), or what a how-to asks, said for the situation the best
    sentence describes ("In such circumstances, it is possible to ..."); else ``offer``."""
    if offer.joined or offer.several or not offer.quotes:
        return offer
    best = offer.quotes[0]
    text, end = _chunk_text(packet, best.chunk_id), best.start + len(best.text)
    if text[best.start:end] != best.text:
        return offer
    after = next(((s, e) for s, e in sentences(text) if s >= end), None)
    if after is None or "\n\n" in text[end:after[0]]:
        return offer
    sequel = text[after[0]:after[1]]
    instead = _INSTEAD.match(sequel) and denies(best.text) and not offer.closest_only  # not under an unsure answer
    if (_ASKS_WHY.search(question) and _REASON_AFTER.match(sequel)) or instead or (
            _ASKS_HOW.search(question) and not _ASKS_WHY.search(question) and _IN_THAT_CASE.match(sequel)):
        return _best_quoted_to(offer, text, after[1])
    return offer


_ASKS_VERSION = re.compile(r"\b(?:which|what)\s+(?:version|release)\b|\bsince\s+when\b", re.I)
_DATED = re.compile(r"\d")
HEADING_LOOKBACK = 8
"""How many lines above its best sentence ``with_dated_heading`` looks for the heading of a changelog's release."""


def with_dated_heading(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with its passage's heading leading its best sentence, in one statement, when the question asks
    when or in which version, the best sentence says no date or version and the heading does: a changelog's
    "2.4.0 (2025-03-02)" above "Added the --quiet option."; else ``offer``."""
    if offer.joined or offer.several or not offer.quotes:
        return offer
    if asked_kind(question) != "time" and not _ASKS_VERSION.search(question):
        return offer
    best = offer.quotes[0]
    if _DATED.search(best.text):
        return offer
    text = _chunk_text(packet, best.chunk_id)
    lines = [m for m in re.finditer(r"[^\n]+", text[:best.start]) if m.group().strip()]
    for m in reversed(lines[-HEADING_LOOKBACK:]):
        line = m.group().strip()
        if line.endswith((".", "!", "?", ":", ";", ",")) or len(line.split()) > 8:
            continue  # a sentence or an item above it
        if not _DATED.search(line) or len(re.findall(r"[^\W\d_]+", line)) > 2:
            return offer  # the heading above says no date or version ("3.2 Activating WAL Mode": a section's number)
        at = m.start() + len(m.group()) - len(m.group().lstrip())
        dated = Quote(best.chunk_id, line, at, best.score, 0.0, "", best.reader)
        break
    else:
        return offer
    return Offer([dated, *offer.quotes], min(offer.lead_quotes + 1, MAX_LEAD, len(offer.quotes) + 1),
                 offer.closest_only, joined=True)  # fmt: skip


_HOW_TO = re.compile(r"^\W*how\s+(?:do|can|should|would|could|must|shall)\s+(?:i|you|we|one)\b|^\W*how\s+to\b", re.I)
_NEXT_STEP = re.compile(r"^\W*(?:then|next(?!\s+to\b)|finally|afterwards|after\s+that|second(?:ly)?|third(?:ly)?|"
                        r"lastly)\b", re.I)  # fmt: skip
_ASIDE = re.compile(r"^\W*(?:note|tip|hint|warning|caution|important)\b", re.I)
"""An aside between two steps ("Note: this can take up to 3 minutes."): not the step before."""


def with_step_before(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with the step before its best sentence leading just before it, in one statement, when the question
    asks how to do something and the best sentence is a later step of a procedure ("Then install the package:
    ..."): the step before ("First add the signing key, run: ...") is part of the answer; else ``offer``."""
    if offer.joined or offer.several or not offer.quotes or not _HOW_TO.match(question):
        return offer
    best = offer.quotes[0]
    if not _NEXT_STEP.match(best.text):
        return offer
    step = _sentence_before(best, packet, skip=_ASIDE)
    return offer if step is None else _joined_before(offer, step)


_ASKS_HOW = re.compile(r"(?:^|[,;:.?!]\s*|\b(?:and|but|so|then|now)\s+)how\s+(?:(?:do|can|should|would|could|must|"
                       r"shall)\s+(?:i|you|we|one)|to)\b", re.I)  # fmt: skip
"""A question that asks how to do something, at the start of a clause ("From a shell prompt, how can I ..."), not
"I know how to ..."."""


def with_command_after(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with its best sentence quoted on to the command lines right below it, when the question asks how to
    do something (not why) and the sentence ends its line with commands after it, announced or not ("You can purge
    all remaining configuration files of removed packages." then "# aptitude purge '~c'"): the command is what a
    how-to asks for. Else ``offer``. Only code lines are taken (``_commands_after``)."""
    if offer.joined or offer.several or not offer.quotes or not _ASKS_HOW.search(question) \
            or _ASKS_WHY.search(question):  # fmt: skip
        return offer
    best = offer.quotes[0]
    chunk = next((c for c in packet.chunks if c.chunk_id == best.chunk_id), None)
    end = best.start + len(best.text)
    if chunk is None or chunk.content[best.start:end] != best.text or code_line(best.text.splitlines()[-1]):
        return offer  # the quotation already ends with a command
    last = _commands_after(chunk.content, end, chunk.truncated)
    if last == end:
        return offer
    return _best_quoted_to(offer, chunk.content, last)


def _best_quoted_to(offer: Offer, text: str, end: int) -> Offer:
    """``offer`` with its best quotation quoted on to ``end`` of its passage's ``text``; another quotation inside
    the added stretch is not offered again, and no weak extra takes a place in the lead that one left."""
    best = offer.quotes[0]
    rest = [q for q in offer.quotes[1:] if q.chunk_id != best.chunk_id or q.start >= end
            or q.start + len(q.text) <= best.start]  # fmt: skip
    lead = offer.lead_quotes - sum(1 for q in offer.quotes[1:offer.lead_quotes] if q not in rest)
    quotes = [replace(best, text=text[best.start:end]), *rest]
    return offer._replace(quotes=quotes, lead_quotes=max(1, min(lead, len(quotes))))


DEFAULT_SENTENCES = 2
"""How many sentences after a default question's best one ``with_default_after`` reads for the default (a table's
fields: DEFAULT_FIELDS)."""
DEFAULT_FIELDS = 3
"""How many fields of a table after its best field ``with_default_after`` reads ("Syntax:" stands between a
directive's "Description:" and its "Default:")."""
DEFAULT_CHARS = 400


def with_default_after(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with its best sentence quoted on to the one right after it that says the default, when the question
    asks for a default (``answer_type.asks_default``) and the best sentence says none: "For non-threaded servers (i.e.,
    prefork), MaxRequestWorkers translates into the maximum number of child processes ... The default value is
    256; ...", or a table's "Description: | Amount of time the server will wait ..." on to its "Default: |
    KeepAliveTimeout 5". Only within its paragraph (a table: its run of fields), at most DEFAULT_SENTENCES
    sentences (DEFAULT_FIELDS fields) and DEFAULT_CHARS characters on; else ``offer``."""
    if offer.joined or offer.several or not offer.quotes or not asks_default(question):
        return offer
    best = offer.quotes[0]
    chunk = next((c for c in packet.chunks if c.chunk_id == best.chunk_id), None)
    end = best.start + len(best.text)
    if says_default(best.text) or chunk is None or chunk.content[best.start:end] != best.text:
        return offer
    text, field = chunk.content, is_field(best.text)
    after = [(s, e) for s, e in sentences(text) if s >= end][:DEFAULT_FIELDS if field else DEFAULT_SENTENCES]
    last = end
    for s, e in after:
        if e - best.start > DEFAULT_CHARS or (field != is_field(text[s:e])) \
                or (not field and "\n\n" in text[last:s].replace(" ", "")):  # fmt: skip
            return offer  # past its paragraph, or out of the table
        if says_default(text[s:e]) and not _default_of_another(text[s:e], question + " " + best.text):
            return _best_quoted_to(offer, text, e)
        last = e
    return offer


_DEFAULT_OF = re.compile(r"\W*the\s+default\s+((?:[\w-]+\s+){0,3}?[\w-]+)\s+(?:is|are|was|were|will)\b", re.I)
_GENERIC_DEFAULT = frozenset("value values setting settings mode behaviour behavior choice option one".split())


def _default_of_another(sentence: str, asked: str) -> bool:
    """Whether ``sentence`` gives the default of something that neither the question nor the best sentence names
    ("The default history limit is ten thousand messages per room." after a sentence on room expiry: a review)."""
    m = _DEFAULT_OF.match(sentence)
    if not m:
        return False
    words = {suffix_stem(w.lower()) for w in WORD.findall(m.group(1))} - {suffix_stem(w) for w in _GENERIC_DEFAULT}
    return bool(words) and not words & {suffix_stem(w.lower()) for w in WORD.findall(asked)}


def _commands_after(text: str, end: int, truncated: bool) -> int:
    """Where the code lines right below a sentence ending at ``end`` end (``end`` when there are none, or the line goes
    on after the sentence): lines of ``text.code_line`` (a shell prompt, or no stop word and a sign of code), at most
    FOLLOW_SPANS of them and FOLLOW_CHARS characters; anything else ends them, and so does a code line with prose on
    the very next line (an option's name above its description, "--no-decorate"), or, the first line below the
    sentence, after one blank line when it is an option's ("-v", its description a paragraph of its own, as HTML
    pages give it; a command's last line "  -p 8080:80 nginx" is not the first). A passage cut at the budget
    (``truncated``) never gives its last line: it may be a command cut short."""
    newline = text.find("\n", end)
    if newline < 0 or text[end:newline].strip():
        return end
    lines = list(re.finditer(r"[^\n]*\S[^\n]*", text[newline + 1:]))
    last, taken = end, 0
    for i, m in enumerate(lines):
        line_end = newline + 1 + m.start() + len(m.group().rstrip())
        after = lines[i + 1] if i + 1 < len(lines) else None
        between = text[newline + 1 + m.end():newline + 1 + after.start()] if after is not None else ""
        described = after is not None and not code_line(after.group()) and (between.count("\n") == 1 or (
            not taken and m.group().strip().startswith("-") and between.count("\n") == 2))
        if taken == FOLLOW_SPANS or line_end - end > FOLLOW_CHARS or not code_line(m.group()) or described \
                or (truncated and after is None):  # fmt: skip
            break
        last, taken = line_end, taken + 1
    return last


def _sentence_before(best: Quote, packet: EvidencePacket, skip: re.Pattern | None = None) -> Quote | None:
    """The quotable sentence that ends last before ``best`` in its passage (with the sentence announcing it, when
    it is a command), none that ``skip`` matches; None when there is none."""
    text = _chunk_text(packet, best.chunk_id)
    prior = [c for c in candidates([(best.chunk_id, text)]) if c.start + len(c.text) <= best.start
             and not (skip and skip.match(c.text))]  # fmt: skip
    if not prior:
        return None
    end = max(c.start + len(c.text) for c in prior)
    last = min((c for c in prior if c.start + len(c.text) == end), key=lambda c: c.start)
    return Quote(best.chunk_id, last.text, last.start, best.score, 0.0, "", best.reader)


def _joined_before(offer: Offer, before: Quote) -> Offer:
    """``offer`` with ``before`` leading just before its best sentence, in one statement (``Offer.joined``); another
    quotation of the same words (overlapping it in the same passage) is not offered again."""
    end = before.start + len(before.text)
    rest = [q for q in offer.quotes[1:] if q.chunk_id != before.chunk_id or q.start >= end
            or q.start + len(q.text) <= before.start]  # fmt: skip
    quotes = [before, offer.quotes[0]] + rest
    return Offer(quotes, min(offer.lead_quotes + 1, MAX_LEAD, len(quotes)), offer.closest_only, joined=True)


_ASKS_WHY = re.compile(r"(?<![-\w'\"`‘“])(?:why|how\s+come)\b(?![-'\"`’”])|"
                       r"\bwhat\s+(?:causes|caused|led\s+to|leads\s+to)\b|\bwhat\s+reason\b", re.I)  # fmt: skip
"""A question that asks why; not the word inside a name ("the --why option", "the 'Why is this here?' link")."""
_CONCLUDES = re.compile(r"^\W*(?:and\s+|so\s+)?(?:hence|thus|therefore|consequently|as\s+a\s+(?:result|consequence)|"
                        r"for\s+(?:that|this)\s+reason|(?:this|that)\s+is\s+(?:why|the\s+reason)|this\s+situation)\b|"
                        r"^\W*so\b(?!-|\s+(?:far|long|much|many|that|called|to\s+speak|it\s+is|is|are|was|were|do|does)\b)",
                        re.I)  # fmt: skip
"""A sentence that opens as a conclusion does; a bare "So" too ("So, in most real systems, an index should be
created ...", "So to prevent your code from being broken ..."), not "So far", "So long as", "so-called", "So is the
other one"."""
_CONCLUDES_INSIDE = re.compile(r"\btherefore\b|\bwhich\s+is\s+why\b", re.I)
_OWN_REASON = re.compile(r"\b(?:because|since|as\s+a\s+result\s+of|due\s+to)\b", re.I)


def concludes(sentence: str) -> bool:
    """Whether ``sentence`` draws a conclusion from the one before it: it opens as one does ("Hence, there is no way
    to raise the limit.", "This is why the tasks are started with nice.") or says "therefore" inside without giving
    a reason of its own ("Debian therefore introduced invoke-rc.d."; not "Because it drops privileges, it therefore
    cannot bind port 80.")."""
    return bool(_CONCLUDES.match(sentence)) or bool(_CONCLUDES_INSIDE.search(sentence) and not
                                                    _OWN_REASON.search(sentence))  # fmt: skip


def with_reason_before(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with the sentence before its best one leading just before it, in one statement, when the question
    asks why and the best sentence is a conclusion drawn from what comes before it ("This is why it considers 0pre3
    greater than 0."): the reason is there ("... compares the letters in the same way as the numbers."); else
    ``offer``. Only a sentence of the same paragraph (no blank line between them, and a heading or a question line
    above it left out) is a reason; one that only refers back is quoted from the sentence before it
    (``_from_referent``)."""
    if offer.joined or offer.several or not offer.quotes or not _ASKS_WHY.search(question):
        return offer
    best = offer.quotes[0]
    if not concludes(best.text):
        return offer
    reason = _sentence_before(best, packet)
    if reason is None:
        return offer
    cut = reason.text.rfind("\n\n")  # a heading or a term the candidate was quoted with: not the reason
    if cut >= 0:
        tail = reason.text[cut + 2:]
        reason = replace(reason, text=tail.strip(), start=reason.start + cut + 2 + len(tail) - len(tail.lstrip()))
    between = _chunk_text(packet, best.chunk_id)[reason.start + len(reason.text):best.start]
    if "\n\n" in between or not reason.text or reason.text.rstrip().endswith("?"):
        return offer
    return _joined_before(offer, _from_referent(reason, packet))


_OPENS_REFERRING = re.compile(r"^\W*(?:(?:hence|thus|also|however|but|and|instead|here|again)\W+)?"
                              r"(?:this|these|such)\b", re.I)  # fmt: skip
"""A sentence whose subject is only a word that points back ("This behavior corresponds to the root_squash option",
"This is another important tool: it automates ..."). Not "it": a review found "It is normal for the battery to feel
warm ...", "It makes sense to pin ...", "It is not known who ..." (an "it" that stands for what follows) led by an
unrelated sentence; no first statement of the manuals bench opened with a referring "it"."""
_THIS_THING = re.compile(r"^(?:\W*[\w'’-]+){0,5}?\W+(?:this|these)\s+(?:option|command|tool|program|utility|setting|"
                         r"directive|flag|parameter|variable|file|package|module|function|pragma|mode|feature|method|"
                         r"behaviou?r|approach|technique|syntax|clause|keyword)s?\b", re.I)  # fmt: skip
"""A sentence that names what it is about only as "this option", "this command" among its first words ("Make sure
to put this option for external drives ...")."""
HEADING_WORDS = 8
"""The most words a line of its own has for ``with_referent_before`` to take it for a heading that names a thing."""


def _heading_above(best: Quote, text: str) -> Quote | None:
    """The line right above ``best``'s paragraph when it is a heading (at most HEADING_WORDS words on a line of its own,
    no sentence's end: "15.4.1.3.4. piuparts"), as a Quote; else None."""
    above = text[:best.start]
    if not above.endswith("\n\n") and not above.rstrip(" ").endswith("\n\n"):
        return None
    lines = above.rstrip().splitlines()
    line = lines[-1].strip() if lines else ""
    if not line or len(line.split()) > HEADING_WORDS or line.endswith((".", "!", "?", ":", ";", ",")):
        return None
    at = above.rstrip().rfind(line)
    return Quote(best.chunk_id, line, at, best.score, 0.0, "", best.reader)


def with_referent_before(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with the sentence before its best one leading just before it, in one statement, when the best
    sentence's subject only refers back (``_OPENS_REFERRING``: "This behavior corresponds to the root_squash
    option, and is enabled by default.") or it names its thing only as "this option" (``_THIS_THING``): what it
    speaks of, often the answer, is in the sentence before ("All queries from a root user are considered by the
    server as coming from nobody."; "nofail allows the boot to proceed even when the device is not present."), and
    a quotation that does not say what "this" is answers nothing on its own. Only a sentence of the same
    paragraph, or a heading right above it ("piuparts" above "This is another important tool: ..."); else
    ``offer``."""
    if offer.joined or offer.several or not offer.quotes:
        return offer
    best = offer.quotes[0]
    if opens_with_term(best.text) or not (_OPENS_REFERRING.match(best.text) or _THIS_THING.match(best.text)):
        return offer
    before = _in_paragraph_before(best, packet) or _heading_above(best, _chunk_text(packet, best.chunk_id))
    return offer if before is None else _joined_before(offer, _from_referent(before, packet))


def _in_paragraph_before(quote: Quote, packet: EvidencePacket) -> Quote | None:
    """The sentence just before ``quote`` (``_sentence_before``) when it is of the same paragraph (no blank line
    between them) and no question; else None."""
    before = _sentence_before(quote, packet)
    if before is None or before.text.rstrip().endswith("?"):
        return None
    between = _chunk_text(packet, quote.chunk_id)[before.start + len(before.text):quote.start]
    return None if "\n\n" in between else before


def _from_referent(before: Quote, packet: EvidencePacket) -> Quote:
    """``before`` (the sentence joined before a best one) quoted from the sentence before it too, when it also only
    refers back ("Modern X servers have the MIT Shared Memory Extension ... This bypasses the network transparent
    Xlib ..." before "This situation was the background of creating Wayland ..."): one sentence further, within its
    paragraph; else ``before``."""
    if not (_OPENS_REFERRING.match(before.text) or _THIS_THING.match(before.text)):
        return before
    prior = _in_paragraph_before(before, packet)
    if prior is None or "\n\n" in prior.text:  # (a heading or a term quoted with it: not one paragraph)
        return before
    text = _chunk_text(packet, before.chunk_id)
    return replace(before, text=text[prior.start:before.start + len(before.text)], start=prior.start)


def with_naming_sentence(question: str, offer: Offer, packet: EvidencePacket) -> Offer:
    """``offer`` with the sentence that names what its best sentence refers to leading just before it, in the
    document's order and in the same statement (``Offer.joined``): the sentence before, when the reader's span
    head points there (``points_before``) or, for a question that asks for a name, the reader read the best
    sentence as answering better with it (``Quote.referent``); or, when the question asks for a name and the best
    sentence leans on a pronoun or a bare description, the nearest one that names (``naming_sentence``); else
    ``offer``."""
    best = offer.quotes[0]
    if opens_with_term(best.text):  # an option quoted with its name says what it is about (the entry above is
        return offer  # another option's: "Without this option nothing is deleted." is --delete's, not --checksum's)
    before = points_before(question, best) or (best.referent and asks_for_name(question))
    if not before and not (asks_for_name(question) and leans_on_reference(question, best.text)):
        return offer
    text = _chunk_text(packet, best.chunk_id)
    naming = sentence_before(best, text) if before else naming_sentence(question, best, text)
    if naming is None:
        return offer
    quotes = [naming, best] + [q for q in offer.quotes[1:] if (q.chunk_id, q.start) != (naming.chunk_id, naming.start)]
    return Offer(quotes, min(offer.lead_quotes + 1, MAX_LEAD, len(quotes)), offer.closest_only, joined=True)


def with_sides(offer: Offer, sides: list[Quote]) -> Offer:
    """``offer`` led by ``sides`` (the sentences of sources that disagree, disagree.py, or of the documents a
    comparison asks about, compare.py, in the answer's order), one statement each, then its other quotes: no
    side is lost to the lead count, and no single phrase leads (``Offer.several``)."""
    keys = {(q.chunk_id, q.start) for q in sides}
    rest = [q for q in offer.quotes if (q.chunk_id, q.start) not in keys]
    return Offer([*sides, *rest], min(MAX_LEAD, max(offer.lead_quotes, len(sides))), offer.closest_only,
                 several=True)  # fmt: skip


# ---------------------------------------------------------------- naming what the answer is about


def asks_for_name(question: str) -> bool:
    """Whether ``question`` asks who or what by name (who, whose, which, "what is the name of ...")."""
    return bool(_ASKS_NAME.search(question))


def _names(text: str, skip: set[str]) -> list[str]:
    """Capitalised words of ``text`` that are names: not its first word, not a stop word or pronoun, not in
    ``skip`` (the question's own words); and the names of commands, files and options written in lower case
    (candidates.command_names: "dpkg-deb packs ...", "the apt.conf file") that the question does not name."""
    words = WORD.findall(text)
    capitalised = [w for i, w in enumerate(words) if w[:1].isupper() and (i > 0 or w.lower() not in STOPWORDS)
                   and w.lower() not in STOPWORDS and w.lower() not in REFERRING and w.lower() not in skip]  # fmt: skip
    commands = [n for n in command_names(text, STOPWORDS | REFERRING) if not set(WORD.findall(n)) <= skip]
    return capitalised + commands


def is_reference(phrase: str) -> bool:
    """Whether ``phrase`` only refers to someone or something: pronouns ("he", "its"), or a bare description of
    two words with no name in it ("the company", "this band")."""
    words = WORD.findall(phrase)
    if not words:
        return False
    if all(w.lower() in REFERRING for w in words):
        return True
    return (len(words) == 2 and words[0].lower() in _DETERMINERS and words[1].isalpha()
            and not _names(" ".join(["of", *words[1:]]), set()))  # fmt: skip


def name_run(sentence: str, question: str) -> tuple[int, int] | None:
    """(start, end) in ``sentence`` of its first run of names (capitalised words, joined by spaces, that the
    question does not name; see ``_names``), or None."""
    asked = {w.lower() for w in WORD.findall(question)}
    names = set(_names(sentence, asked))
    run: tuple[int, int] | None = None
    for m in WORD.finditer(sentence):
        if m.group(0) in names and (run is None or sentence[run[1]:m.start()] == " "):
            run = (run[0] if run else m.start(), m.end())
        elif run is not None:
            break
    return run


def leans_on_reference(question: str, sentence: str) -> bool:
    """The sentence says who or what only through a pronoun or a bare description ("After the flood he rebuilt
    the bridge in stone.", "The band split in 1970."): one of its first words refers back, and it names
    nothing the question does not already name."""
    asked = {w.lower() for w in WORD.findall(question)}
    return not _names(sentence, asked) and refers_back(sentence)


def naming_sentence(question: str, quote: Quote, chunk_text: str) -> Quote | None:
    """The nearest sentence before ``quote`` in its chunk (at most NAMING_LOOKBACK back) that names someone or
    something the question does not, as a Quote; None when there is none."""
    asked = {w.lower() for w in WORD.findall(question)}
    before = [(s, e) for s, e in sentences(chunk_text) if e <= quote.start]
    for s, e in reversed(before[-NAMING_LOOKBACK:]):
        text = chunk_text[s:e]
        if _names(text, asked) and not reads_like_instructions(text) and not text.rstrip().endswith("?"):
            return Quote(quote.chunk_id, text, s, quote.score, 0.0, "", quote.reader)
    return None


def opens_with_reference(phrase: str) -> bool:
    """Whether ``phrase`` begins with a word that only refers ("She was the first woman", "it"): not an answer."""
    words = WORD.findall(phrase)
    return bool(words) and words[0].lower() in REFERRING


def points_before(question: str, quote: Quote) -> bool:
    """Whether the reader's span head puts the answer to ``question`` in the sentence before ``quote``'s, which
    it read as the context. All of:
    - the question asks who or what by name (``asks_for_name``);
    - the sentence says who through a personal pronoun in its first words ("In 1928 he discovered ...");
    - the sentence before does not open with one too (then the name is further back);
    - the head's best phrase before beats no phrase at all and neither is nor opens with a reference;
    - the head's best phrase inside the sentence only refers ("she", "She was the first woman") or scores below
      the one before."""
    if quote.before is None or quote.before_margin is None or quote.before_margin <= 0 or quote.phrase is None:
        return False
    if not asks_for_name(question) or not _PERSONAL & {w.lower() for w in WORD.findall(quote.text)[:8]}:
        return False
    if opens_with_reference(quote.context):
        return False
    before = quote.context[quote.before[0]:quote.before[1]]
    if not before.strip() or is_reference(before) or opens_with_reference(before):
        return False
    inside = quote.text[quote.phrase[0]:quote.phrase[1]]
    return (is_reference(inside) or opens_with_reference(inside)
            or quote.phrase_margin is None or quote.before_margin > quote.phrase_margin)  # fmt: skip


def sentence_before(quote: Quote, chunk_text: str) -> Quote | None:
    """The sentence just before ``quote`` in its chunk, as a Quote, when it is the context the reader read with
    it (not a table's header row or a list's first field); else None."""
    before = [(s, e) for s, e in sentences(chunk_text) if e <= quote.start]
    if not before:
        return None
    s, e = before[-1]
    text = chunk_text[s:e]
    if " ".join(text.split()) != " ".join(quote.context.split()):
        return None
    return Quote(quote.chunk_id, text, s, quote.score, 0.0, "", quote.reader)
