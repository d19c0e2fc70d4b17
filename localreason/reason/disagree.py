"""Sources that disagree: two documents that answer the question with different answers, each heard.

Among the best-ranked sentences (the first ``Calibration.disagree_candidates``, after the reader), two from
different documents disagree when they answer the question differently:
- **near-twins** (``differs``): their words agree but for one stretch (at most ``disagree_words`` words on
  each side; the rest at least ``disagree_similarity`` alike and MIN_SHARED words long; two stretches apart by a
  stopword or two are one, JOIN_GAP) and the two stretches share no word but stopwords: "The warranty lasts five
  years." against "The warranty lasts three years.". Sentences that differ in two places speak of two things
  ("Model X weighs 5 kg", "Model Y weighs 7 kg") and do not disagree;
- or the reader is sure of an answer phrase in each (span margin at least ``phrase_margin``, the reader's
  chance at least ``read_answers``), the phrases share no word, and the rest of the two sentences agree as
  much as near-twins must (``disagree_similarity``).
Either way each side's answer must be the kind of thing asked for and not the question's own words
(answer_type.agrees). A negation that only one of two near-twins has ("REST is not required") disagrees too.
Two copies with the same answer agree: they are one side (and identical passages are already folded by
search.ranking.distinct).

So that no side is lost to the evidence budget, a passage of another document that is a near-twin of one of the
best hits is moved up to follow it before the packet is cut (``twins_close``).

The sides are ordered stably (``ordered``): newest first when every side's title carries a year, else by title.
The evidence settles it (``settled``) only when one source says it replaces or supersedes the other, or the
question names one side's version (a word of its title no other side's title has); dates alone never do.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, replace

from ..text import STOPWORDS, WORD, collapse, suffix_stem
from .answer_type import agrees
from .calibration import DEFAULT, Calibration
from .candidates import Quote

TWIN_LEAD = 3
"""``twins_close`` looks for near-twins of this many of the best hits (a limit, not a fit)."""
MIN_SHARED = 4
"""Near-twins share at least this many words besides their answers ("Yes." and "No." are not twins)."""
MOST_SIDES = 3
"""The most sides an answer hears (a limit, not a fit)."""
SAYS_WORDS = 12
"""A side whose difference is a negation is said in at most this many of its sentence's words."""
GIST_WORDS = 24
"""A side that takes a stance is said in at most this many words of its sentence (a limit, not a fit)."""
_NEGATION = frozenset("no not never none cannot without nor neither".split())
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_REPLACES = re.compile(r"\b(replaces|supersedes|obsoletes|supplants|takes precedence over)\b", re.I)
_REPLACED = re.compile(r"\b(replaced|superseded|obsoleted|supplanted)\s+by\b", re.I)


@dataclass(frozen=True)
class Side:
    """One source's answer: its sentence (``quote``), what it says where the sources differ, its document."""

    quote: Quote
    says: str
    document_id: str
    title: str


@dataclass(frozen=True)
class Disagreement:
    """The sides, in the order the answer gives them; ``stands`` is the index of the side the evidence itself
    settles on, with ``why`` (None and "" when it does not settle it)."""

    sides: tuple[Side, ...]
    stands: int | None = None
    why: str = ""

    def gap(self) -> str:
        """What the answer's gaps say of it: each side's document and answer, and whether anything settles it."""
        said = "; ".join(f"\u201c{s.title}\u201d says {s.says}" for s in self.sides)
        if self.stands is None:
            return f"{said}. The sources disagree, and the evidence does not settle which is right."
        return f"{said}. The sources disagree; {self.why}, so \u201c{self.sides[self.stands].title}\u201d stands."


def _tokens(text: str) -> list[re.Match]:
    return list(WORD.finditer(text))


def _regions(a: list[str], b: list[str]) -> tuple[float, list[tuple[int, int, int, int]]]:
    """The similarity of two word lists (2 x matched / total) and the stretches where they differ (word indices
    [a_lo, a_hi) and [b_lo, b_hi))."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    ops = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    matched = sum(size for _, _, size in matcher.get_matching_blocks())
    return (2 * matched / (len(a) + len(b)) if a or b else 1.0), ops


def _span(words: list[re.Match], lo: int, hi: int) -> tuple[int, int]:
    return words[lo].start(), words[hi - 1].end()


def _says(quote: Quote, at: tuple[int, int], margin: float) -> str:
    """What ``quote`` says at ``at`` (offsets in its text): the reader's phrase there when it holds those words and
    the reader believes in it (``margin``), else the words themselves."""
    if quote.phrase is not None and (quote.phrase_margin or 0.0) >= margin:
        lo, hi = quote.phrase
        if lo <= at[0] and at[1] <= hi:
            return collapse(quote.text[lo:hi])
    return collapse(quote.text[at[0]:at[1]])


def _clause(quote: Quote, words: list[re.Match], at: int) -> str:
    """``quote``'s words from a little before word index ``at`` (where a negation is, or would be), at most
    SAYS_WORDS of them."""
    lo = max(0, min(at, len(words) - 1) - 3)
    hi = min(len(words), lo + SAYS_WORDS)
    text = collapse(quote.text[words[lo].start():words[hi - 1].end()])
    return text + ("\u2026" if hi < len(words) else "")


JOIN_GAP = 2
"""Two differing stretches apart by at most this many words, all of them stopwords, are one stretch: "a grandson of
King John" against "Free Territory of Ukraine" differ in one answer, though both say "of" (a rule, not a fit)."""


def _joined(regions: list[tuple[int, int, int, int]], la: list[str]) -> list[tuple[int, int, int, int]]:
    """``regions`` (differing stretches, in order) with those apart by JOIN_GAP stopwords or fewer made one."""
    out: list[tuple[int, int, int, int]] = []
    for r in regions:
        if out and r[0] - out[-1][1] <= JOIN_GAP and all(w in STOPWORDS for w in la[out[-1][1]:r[0]]):
            out[-1] = (out[-1][0], r[1], out[-1][2], r[3])
        else:
            out.append(r)
    return out


def differs(question: str, a: Quote, b: Quote, calibration: Calibration = DEFAULT) -> tuple[str, str] | None:
    """What near-twins ``a`` and ``b`` each say where they differ, when that difference answers ``question``
    differently (module doc); else None."""
    wa, wb = _tokens(a.text), _tokens(b.text)
    la, lb = [w.group(0).lower() for w in wa], [w.group(0).lower() for w in wb]
    _, regions = _regions(la, lb)
    content = _joined([r for r in regions if any(w not in STOPWORDS for w in la[r[0]:r[1]] + lb[r[2]:r[3]])
                       or any(w in _NEGATION for w in la[r[0]:r[1]] + lb[r[2]:r[3]])], la)  # fmt: skip
    if len(content) != 1:
        return None
    i1, i2, j1, j2 = content[0]
    if max(i2 - i1, j2 - j1) > calibration.disagree_words:
        return None
    rest_a, rest_b = la[:i1] + la[i2:], lb[:j1] + lb[j2:]  # the sentences but for the one stretch
    agreement, _ = _regions(rest_a, rest_b)
    if agreement < calibration.disagree_similarity or min(len(rest_a), len(rest_b)) < MIN_SHARED:
        return None
    if i1 == i2 or j1 == j2:  # words only one side has: a disagreement when they deny
        if not _NEGATION & set(la[i1:i2] + lb[j1:j2]):
            return None
        return _clause(a, wa, i1), _clause(b, wb, j1)
    if (set(la[i1:i2]) & set(lb[j1:j2])) - STOPWORDS:
        return None
    if _counts(la[i1:i2]) and _counts(lb[j1:j2]) and i2 < len(la) and j2 < len(lb) and la[i2] == lb[j2] \
            and la[i2].isalpha() and la[i2] not in STOPWORDS:  # fmt: skip
        i2, j2 = i2 + 1, j2 + 1  # "five" / "three" -> "five years" / "three years": the unit both give
    at_a, at_b = _span(wa, i1, i2), _span(wb, j1, j2)
    if same_value(a.text[at_a[0]:at_a[1]], b.text[at_b[0]:at_b[1]]):
        return None  # "two years" / "2 years", "1,000" / "1000", "5kg" / "5 kg": one value written two ways
    sa, sb = _says(a, at_a, calibration.phrase_margin), _says(b, at_b, calibration.phrase_margin)
    return (sa, sb) if agrees(question, sa) and agrees(question, sb) else None


_NUMBER_VALUES = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                             "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_NUMBER_VALUES.update({w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(),
                                                       2)})  # fmt: skip
_NUMBER_WORDS = frozenset(_NUMBER_VALUES) | {"hundred", "thousand", "million", "billion", "half"}
_NUMBER_RUN = re.compile(r"\b(?:%s)(?:[\s-]+(?:%s))*\b" % (("|".join(_NUMBER_VALUES),) * 2), re.I)


def _spelled(run: re.Match) -> str:
    return str(sum(_NUMBER_VALUES[w.lower()] for w in re.split(r"[\s-]+", run.group(0))))


_UNITS = {"square kilometres": "km2", "square kilometers": "km2", "sq km": "km2", "km²": "km2", "square metres": "m2",
          "square meters": "m2", "m²": "m2", "square miles": "sqmi", "sq mi": "sqmi", "kilometres": "km",
          "kilometers": "km", "kilometre": "km", "kilometer": "km", "metres": "m", "meters": "m", "metre": "m",
          "meter": "m", "centimetres": "cm", "centimeters": "cm", "millimetres": "mm", "millimeters": "mm",
          "kilograms": "kg", "kilogram": "kg", "kilos": "kg", "grams": "g", "gram": "g", "litres": "l", "liters": "l",
          "litre": "l", "liter": "l", "per cent": "%", "percent": "%", "megabytes": "mb", "megabyte": "mb",
          "gigabytes": "gb", "gigabyte": "gb", "kilobytes": "kb", "kilobyte": "kb", "miles": "mi", "mile": "mi",
          "feet": "ft", "foot": "ft", "pounds": "lb", "lbs": "lb", "hours": "h", "hour": "h", "hrs": "h",
          "minutes": "min", "minute": "min", "mins": "min", "seconds": "s", "second": "s", "secs": "s", "sec": "s"}
_UNIT_RUN = re.compile(r"(?:(?<=[\d\s])|^)(?:%s)(?![\w²])"
                       % "|".join(sorted(map(re.escape, _UNITS), key=len, reverse=True)))  # fmt: skip
_ABOUT = re.compile(r"\b(?:about|around|approximately|roughly|circa|some|nearly|almost)\s+|~\s*|\bc\.\s*")
"""Words that make a number approximate: "about 2,400" and "around 2400" say one value."""


def same_value(x: str, y: str) -> bool:
    """Whether two stretches say one value in two ways: number words and digits ("twenty-five" / "25"), thousands
    marks and spacing ("1,000 users" / "1000 users", "5kg" / "5 kg"), a unit written out or short ("14 square
    kilometres" / "14 km²"), a number made approximate in other words ("about 2,400" / "around 2400"), case, or one
    quantity in two units ("1 GB" / "1024 MB", "half a minute" / "30 seconds": ``_in_base_units``)."""
    cx, cy = _canon(x), _canon(y)
    if cx == cy:
        return True
    if _BITS.search(x) or _BITS.search(y):
        return False  # "1 Gb" is a gigabit: no size in bytes
    qx, qy = _in_base_units(cx), _in_base_units(cy)
    return any(kx == ky and math.isclose(vx, vy, rel_tol=1e-9) for kx, vx in qx for ky, vy in qy)


def _canon(text: str) -> str:
    """``text`` in one form: number words as digits ("half a" as 0.5), units short, approximating words, spaces and
    thousands marks dropped."""
    text = _HALF.sub("0.5 ", _NUMBER_RUN.sub(_spelled, text.lower()))
    text = _UNIT_RUN.sub(lambda m: _UNITS[m.group(0)], _ABOUT.sub("", text))
    return re.sub(r"(?<=\d)[,\u202f\u00a0](?=\d{3}(?!\d))", "", re.sub(r"\s+", "", text)).strip(".")


_HALF = re.compile(r"\bhalf\s+an?\s+")
_BITS = re.compile(r"\d\s*[kKMGT]b(?:it)?s?\b")
_BYTES, _SECONDS, _METRES, _GRAMS = "bytes", "seconds", "metres", "grams"
_SCALES = {"kb": (_BYTES, 1e3, 1024.0), "mb": (_BYTES, 1e6, 1024.0 ** 2), "gb": (_BYTES, 1e9, 1024.0 ** 3),
           "tb": (_BYTES, 1e12, 1024.0 ** 4), "ms": (_SECONDS, 1e-3), "s": (_SECONDS, 1.0), "min": (_SECONDS, 60.0),
           "h": (_SECONDS, 3600.0), "km": (_METRES, 1000.0), "m": (_METRES, 1.0), "cm": (_METRES, 0.01),
           "mm": (_METRES, 0.001), "kg": (_GRAMS, 1000.0), "g": (_GRAMS, 1.0)}  # fmt: skip
"""A short unit's kind and size in that kind's base unit; a size in bytes either way it is counted (a "GB" is
1000 or 1024 MB, as writers use it)."""
_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(%s)" % "|".join(sorted(_SCALES, key=len, reverse=True)))


def _in_base_units(canon: str) -> tuple[tuple[str, float], ...]:
    """(kind, value) pairs a canonical quantity (``_canon``: "1gb", "30s") may be in its kind's base unit, or () for
    another stretch. Only a number with a unit counts, never a bare number ("1024" is no "1 GB")."""
    m = _QUANTITY.fullmatch(canon)
    if not m:
        return ()
    kind, *sizes = _SCALES[m.group(2)]
    return tuple((kind, float(m.group(1)) * size) for size in sizes)


def _counts(words: list[str]) -> bool:
    """Words that are a number: digits, or number words ("five", "twenty")."""
    return all(w.isdigit() or w in _NUMBER_WORDS for w in words)


def _answers_apart(question: str, x: str, y: str) -> bool:
    """Two answers to ``question`` that share no word, each the kind of thing asked for (answer_type.agrees)."""
    wx, wy = {w.lower() for w in WORD.findall(x)}, {w.lower() for w in WORD.findall(y)}
    return bool(wx) and bool(wy) and not (wx & wy) and agrees(question, x) and agrees(question, y)


def read_apart(question: str, a: Quote, b: Quote, calibration: Calibration = DEFAULT) -> tuple[str, str] | None:
    """The reader's phrases in ``a`` and ``b`` when it is sure of both (margin, chance), they answer apart and the
    rest of the two sentences agrees (``disagree_similarity``); else None."""
    phrases = []
    for q in (a, b):
        if q.phrase is None or (q.phrase_margin or -1e9) < calibration.phrase_margin:
            return None
        if q.reader is None or q.reader < calibration.read_answers:
            return None
        phrases.append(q.text[q.phrase[0]:q.phrase[1]])
    rest = [WORD.findall(q.text[:q.phrase[0]].lower()) + [_CUT] + WORD.findall(q.text[q.phrase[1]:].lower())
            for q in (a, b)]  # fmt: skip
    similarity, _ = _regions(*[[w for w in r if w != _CUT] for r in rest])
    _, regions = _regions(*rest)
    sa, sb = collapse(phrases[0]), collapse(phrases[1])
    if similarity < calibration.disagree_similarity or not _answers_apart(question, sa, sb) or same_value(sa, sb):
        return None
    if _other_things(question, rest, regions):
        return None  # "The cache timeout defaults to 60 seconds" / "The session timeout ... 15 minutes"
    return sa, sb


_CUT = "\x00"
"""Where a phrase was taken out of a sentence (read_apart): a difference next to it is the answer's own."""


def _other_things(question: str, rest: list[list[str]], regions: list[tuple[int, int, int, int]]) -> bool:
    """Whether two sentences, their phrases cut out (``rest``), name different things away from the cut: a content
    word of each side in place of the other's ("cache" / "session"), which the question does not name, before a
    word both have that it does ("timeout"): two settings, each with its value, not two answers to one question.
    ("opened to traffic in 1932" / "opened to cars in 1933" are two answers.)"""
    asked = {w.lower() for w in WORD.findall(question)} - STOPWORDS
    la, lb = rest
    for i1, i2, j1, j2 in regions:
        near = _CUT in la[max(0, i1 - 1):i2 + 1] or _CUT in lb[max(0, j1 - 1):j2 + 1]
        own_a = {w for w in la[i1:i2] if w not in STOPWORDS and w != _CUT} - asked
        own_b = {w for w in lb[j1:j2] if w not in STOPWORDS and w != _CUT} - asked
        named = i2 < len(la) and j2 < len(lb) and la[i2] == lb[j2] and la[i2] in asked
        if own_a and own_b and named and not near:
            return True
    return False


def _stems(text: str) -> set[str]:
    """The content words of ``text`` (no stopwords, no digits alone), stemmed."""
    return {suffix_stem(w.lower()) for w in WORD.findall(text) if w.lower() not in STOPWORDS and not w.isdigit()}


def _words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def gist(quote: Quote) -> str:
    """What a side that takes a stance says: its sentence, at most GIST_WORDS words of it, without the full stop
    that ends it (the gap goes on after it: "... the Meuse; “Delta” says ...")."""
    words = quote.text.split()
    if len(words) > GIST_WORDS:
        return " ".join(words[:GIST_WORDS]) + "\u2026"
    said = " ".join(words)
    last = said[:-1].split()[-1] if said.endswith(".") and said[:-1].split() else ""
    return said[:-1] if last and "." not in last and last[-1].isalnum() else said  # not the dot of "U.S."


def opposite(question: str, top: list[Quote], documents: dict[str, tuple[str, str]], contradiction,
             calibration: Calibration = DEFAULT,
             least: float | None = None) -> dict[tuple[int, int], tuple[str, str]]:  # fmt: skip
    """The pairs (i, j) of ``top`` (i < j, different documents, sharing at least ``calibration.stance_shared`` of
    the question's content words: both speak of what is asked) that take opposite sides: the stance reader
    (``contradiction``: pairs of texts -> their chance of contradicting each other) gives them at least ``least``
    (the stance reader's ``calibration.stance_contradiction`` unless given: polarity's rule says 0 or 1); what
    each says (``gist``), both ways round."""
    least = calibration.stance_contradiction if least is None else least
    if contradiction is None or least > 1:
        return {}
    asked = _stems(question)
    words = [_stems(q.text) & asked for q in top]
    pairs = [(i, j) for i in range(len(top)) for j in range(i + 1, len(top))
             if documents[top[i].chunk_id][0] != documents[top[j].chunk_id][0]
             and len(words[i] & words[j]) >= calibration.stance_shared
             and _words(top[i].text) != _words(top[j].text)]  # a sentence never contradicts a copy of itself  # fmt: skip
    if not pairs:
        return {}
    chance = contradiction([(top[i].text, top[j].text) for i, j in pairs])
    out = {}
    for (i, j), c in zip(pairs, chance):
        if c >= least:
            out[(i, j)], out[(j, i)] = (gist(top[i]), gist(top[j])), (gist(top[j]), gist(top[i]))
    return out


def look(question: str, quotes: list[Quote], documents: dict[str, tuple[str, str]], closest_only: bool, *,
         calibration: Calibration = DEFAULT, contradiction=None,
         least: float | None = None) -> Disagreement | None:  # fmt: skip
    """``find`` as ``reason`` asks it: when the relevance gate answers from the closest passage only
    (``closest_only``), near-twins and opposite stances are looked for only as ``calibration.twins_when_closest``
    and ``stance_when_closest`` say."""
    twins = not closest_only or calibration.twins_when_closest
    if closest_only and not calibration.stance_when_closest:
        contradiction = None
    if not twins and contradiction is None:
        return None
    return find(question, quotes, documents, calibration=calibration, contradiction=contradiction, twins=twins,
                least=least)


def find(question: str, quotes: list[Quote], documents: dict[str, tuple[str, str]], *,
         calibration: Calibration = DEFAULT, contradiction=None, twins: bool = True,
         least: float | None = None) -> Disagreement | None:  # fmt: skip
    """The disagreement among the first ``calibration.disagree_candidates`` of ``quotes`` (best first), or None:
    the first of them (in that order) that disagrees with others, with every other that does. Any of them may: the
    sentence that answers is not always among the first two (the re-reading of #52 put a near-twin pair third and
    fourth behind two sentences on the plague's spread). ``documents``: chunk id -> (document id, title).
    Two sentences that the stance reader finds contradicting each other (``contradiction``, ``opposite``) disagree
    too; ``twins`` False looks for those only. Unordered and unsettled: see ``ordered`` and ``settled``."""
    top = [q for q in quotes[:calibration.disagree_candidates] if q.chunk_id in documents]
    opposed = opposite(question, top, documents, contradiction, calibration, least)
    asked = _stems(question)
    covers = [len(_stems(q.text) & asked - _stems(documents[q.chunk_id][1])) for q in top]  # the words of its
    # document's title name what the document is about, not what the question asks of it ("lake" in Lake Orvin)
    most = max((c for c, q in zip(covers, top) if q.reader is None or q.reader >= calibration.read_answers), default=0)
    for a, anchor in enumerate(top):
        sides: list[Side] = []
        speaks = covers[a] > 0 and 2 * covers[a] >= most  # near-twins on another subject ("two days" / "three
        # days" a week of remote work, for "When is lunch served?"; the upload limit's 10 / 25 MB, which shares
        # "default" with "What is the default session timeout?" where a sentence that answers says all three
        # words) are no answer to this question, however they differ
        for o, other in enumerate(top):
            if documents[other.chunk_id][0] == documents[anchor.chunk_id][0]:
                continue
            said = twins and speaks and (differs(question, anchor, other, calibration)
                                         or read_apart(question, anchor, other, calibration))  # fmt: skip
            said = said or opposed.get((a, o))
            if said is None or any(_same(said[1], s.says) for s in sides):
                continue
            if _own_subjects(question, said, documents[anchor.chunk_id][1], documents[other.chunk_id][1]):
                continue  # "The X200 router weighs 5 kg" / "The X300 ...": each about its own thing, not apart
            if not sides:
                sides.append(Side(anchor, said[0], *documents[anchor.chunk_id]))
            elif not _same(said[0], sides[0].says):
                continue  # the anchor says it in other words against this one: not the same two sides
            sides.append(Side(other, said[1], *documents[other.chunk_id]))
            if len(sides) == MOST_SIDES:
                break
        if sides:
            return Disagreement(tuple(sides))
    return None


def told_apart(found: Disagreement, paths: dict[str, str]) -> Disagreement:
    """``found`` with each side whose title another side's document shares ("000.txt" in two folders) named by the
    shortest end of its source path (``paths``: document id -> path) that no other of them has: a gap that says
    "“000.txt” says ...; “000.txt” says ..." names neither."""
    sides = list(found.sides)
    for title in {s.title for s in sides}:
        clash = [i for i, s in enumerate(sides) if s.title == title]
        if len({sides[i].document_id for i in clash}) < 2:
            continue
        parts = {i: [p for p in paths.get(sides[i].document_id, "").replace("\\", "/").split("/") if p] for i in clash}
        for n in range(1, max(len(p) for p in parts.values()) + 1):
            ends = {i: "/".join(p[-n:]) for i, p in parts.items()}
            if all(ends.values()) and len(set(ends.values())) == len(clash):
                sides = [replace(s, title=ends[i]) if i in ends else s for i, s in enumerate(sides)]
                break
    return replace(found, sides=tuple(sides))


def _own_subjects(question: str, said: tuple[str, str], title_a: str, title_b: str) -> bool:
    """Whether each side's words are its own document's subject (every one in its own title: "X200" in "X200
    datasheet", "Basic" in "Basic plan") and the question names neither: two documents about two things, each
    saying what it is about, not two answers to one question."""
    asked = {w.lower() for w in WORD.findall(question)}
    words = [{w.lower() for w in WORD.findall(x)} - STOPWORDS for x in said]
    titles = [{w.lower() for w in WORD.findall(t)} for t in (title_a, title_b)]
    return all(w and w <= t and not (w & asked) for w, t in zip(words, titles))


def _same(x: str, y: str) -> bool:
    return {w.lower() for w in WORD.findall(x)} == {w.lower() for w in WORD.findall(y)}


def ordered(found: Disagreement) -> Disagreement:
    """The sides newest first when every title carries a year (different ones), else by title, then document."""
    years = [_YEAR.findall(s.title) for s in found.sides]
    if all(years) and len({max(y) for y in years}) == len(years):
        key = sorted(range(len(years)), key=lambda i: -int(max(years[i])))
    else:
        key = sorted(range(len(found.sides)), key=lambda i: (found.sides[i].title.lower(), found.sides[i].document_id))
    return replace(found, sides=tuple(found.sides[i] for i in key))


_VERSION_WORDS = frozenset(("draft final revised old new current latest previous legacy beta alpha preview archived "
                            "obsolete updated amended original edition version release").split())  # fmt: skip
"""Words of a title that name a version of a document (with any word holding a digit: "2025", "v2")."""


def _own_words(found: Disagreement, i: int) -> set[str]:
    """The words of side ``i``'s title that no other side's title has and that name a version ("2025", "draft",
    "v2"): a title that only names another subject ("Black Death" against "Plague notes") has none."""
    others = {w.lower() for j, s in enumerate(found.sides) if j != i for w in WORD.findall(s.title)}
    own = {w.lower() for w in WORD.findall(found.sides[i].title)} - others - STOPWORDS
    return {w for w in own if w in _VERSION_WORDS or any(ch.isdigit() for ch in w)}


def settled(found: Disagreement, question: str, texts: dict[str, str]) -> Disagreement:
    """``found`` with the side the evidence settles on, if any: the one whose own title words the question names,
    or the one a source says replaces the other (``texts``: document id -> its text). Dates alone settle nothing."""
    asked = {w.lower() for w in WORD.findall(question)}
    named = [i for i in range(len(found.sides)) if _own_words(found, i) & asked]
    if len(named) == 1:
        return _first(found, named[0], f"the question asks about \u201c{found.sides[named[0]].title}\u201d")
    for i, side in enumerate(found.sides):
        text = texts.get(side.document_id, "")
        for j, other in enumerate(found.sides):
            own = _own_words(found, j)
            if j == i or not own:
                continue
            for s in re.split(r"(?<=[.!?])\s+", text):
                newer = _other_is_newer(s, own)
                if newer is True:  # "... is superseded by the 2025 edition", in side i's own text
                    return _first(found, j, f"\u201c{side.title}\u201d says \u201c{other.title}\u201d replaces it")
                if newer is False:  # "This edition replaces the 2023 manual."
                    return _first(found, i, f"\u201c{side.title}\u201d says it replaces \u201c{other.title}\u201d")
    return found


def _other_is_newer(sentence: str, own: set[str]) -> bool | None:
    """Whether ``sentence`` (of one side's text) says the other side, named by its ``own`` title words, replaces
    this one (True) or is replaced by it (False), by where those words stand around the verb: "the 2025 edition
    replaces this manual", "this manual is superseded by the 2025 edition" (True); "this edition replaces the
    2023 manual", "the 2023 manual was superseded by this edition" (False). None when the sentence says neither,
    or names the other side on both sides of the verb."""
    for pattern, named_first in ((_REPLACES, True), (_REPLACED, False)):
        m = pattern.search(sentence)
        if m is None:
            continue
        before = bool(own & {w.lower() for w in WORD.findall(sentence[:m.start()])})
        after = bool(own & {w.lower() for w in WORD.findall(sentence[m.end():])})
        if before == after:
            return None
        return named_first if before else not named_first
    return None


def _first(found: Disagreement, stands: int, why: str) -> Disagreement:
    """``found`` settled on side ``stands`` for the reason ``why``, that side first."""
    order = [stands] + [k for k in range(len(found.sides)) if k != stands]
    return Disagreement(tuple(found.sides[k] for k in order), 0, why)


def twins_close(hits: list, similarity: float, lead: int = TWIN_LEAD) -> list:
    """``hits`` (search hits, best first) with each passage of another document that is a near-twin of one of the
    first ``lead`` (at least ``similarity`` of their words match, and they are not the same text) moved to follow
    it, so that the evidence budget keeps both; else in their order."""
    words = [[w.lower() for w in WORD.findall(h.content)] for h in hits]
    out = list(range(len(hits)))
    for i in range(min(lead, len(hits))):
        twins = []
        for j in range(i + 1, len(hits)):
            if hits[j].document_id == hits[i].document_id or words[j] == words[i] or out.index(j) <= out.index(i) + 1:
                continue
            matcher = difflib.SequenceMatcher(None, words[i], words[j], autojunk=False)
            if matcher.real_quick_ratio() >= similarity and matcher.quick_ratio() >= similarity \
                    and matcher.ratio() >= similarity:  # fmt: skip
                twins.append(j)
        for j in reversed(twins):
            out.remove(j)
            out.insert(out.index(i) + 1, j)
    return [hits[k] for k in out]
