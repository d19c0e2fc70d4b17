"""Does an answer phrase agree with the question? The type check that can veto the reader's phrase.

A "who" question is answered by a name, a "when" question by a date or a time, a "how many" question by a
number; "singer" for "What is the name of the person who ...", a phone number for "What error code ...", or a
phrase made of the question's own words ("Kerrang!" for "Which song did Kerrang! pick?") answers nothing.
This module knows the question forms in one table (FORMS: a pattern on the question's opening, the kind of
answer it asks for) and what each kind of phrase looks like (LOOKS). It never says that a phrase is right:
the reader's confidence decides that (phrase.py). It only vetoes a phrase that cannot be the answer; a
question it does not recognise is vetoed only for echoing itself.
"""

from __future__ import annotations

import re

from ..text import STOPWORDS, WORD, suffix_stem

_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec")  # fmt: skip
_TIME_WORDS = frozenset((_MONTHS + " monday tuesday wednesday thursday friday saturday sunday century centuries "
                         "decade decades year years month months week weeks day days hour hours minute minutes "
                         "spring summer autumn fall winter morning afternoon evening night noon midnight today "
                         "yesterday tomorrow ago era age dynasty reign period war bc bce ad ce").split())  # fmt: skip
_TIME_LEAD = re.compile(r"^\W*(after|before|during|until|till|since|when|while|following|by|from|between|upon|"
                        r"throughout|within|once|as soon as)\b", re.I)  # fmt: skip
"""A clause or phrase that places an event in time ("after the war ended", "during his first term")."""
_NUMBER_WORDS = frozenset(("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                           "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
                           "eighty ninety hundred hundreds thousand thousands million millions billion billions "
                           "trillion dozen dozens half quarter third several few many couple single double triple "
                           "once twice none no all every most").split())  # fmt: skip
_PLACE_LEAD = re.compile(r"^\W*(in|at|on|near|inside|outside|under|behind|across|along|beside|into|from|to|"
                         r"throughout|within|between|around|above|below|off|over|north|south|east|west)\b", re.I)  # fmt: skip
_CODE = re.compile(r"\b(?:[A-Za-z]+[-_]?\d+[A-Za-z\d]*|\d+[A-Za-z]+[A-Za-z\d]*|0x[\da-f]+)\b", re.I)
_PHONE = re.compile(r"\d(?:[\s().-]?\d){6,}")
"""Seven digits or more in one run, spaced or not: a telephone number, not a code."""
_PERSON_NOUNS = ("person|man|woman|people|player|king|queen|president|leader|author|writer|singer|actor|actress|"
                 "artist|composer|scientist|director|founder|inventor|emperor|pope|captain|coach|member|officer|"
                 "character|son|daughter|father|mother|wife|husband|brother|sister|owner|minister|ruler|general")  # fmt: skip
_PLACE_NOUNS = "place|country|city|town|state|province|region|area|island|continent|village|nation|location|county"
_TIME_NOUNS = "year|date|day|month|century|decade|time|period|era|season"
_NUMBER_NOUNS = "number|percentage|percent|amount|total|count|population|score|age|size|length|distance|cost|price"
_NAMED_NOUNS = "song|album|book|novel|film|movie|team|club|band|company|ship|game|show|group|magazine|newspaper"

FORMS: tuple[tuple[str, str], ...] = (
    (r"(what|which) (is|was) (the )?(full |first |last |real |given )?names? of (the )?(" + _PERSON_NOUNS + ")", "person"),
    (r"(what|which) (is|was|are|were) (the )?(full |first |last |real |given )?names? (of|for) (the )?(" +
     _NAMED_NOUNS + ")", "named"),
    (r"(what|which) (is|was|are|were) (the |his |her |their )?(full |first |last |real |given |sur)?names?\b", "person"),
    (r"(what|which) (" + _NAMED_NOUNS + r")s?\b", "named"),
    (r"(what|which) (" + _PERSON_NOUNS + r")s?\b", "person"),
    (r"(what|which) (" + _PLACE_NOUNS + r")s?\b|(in|at|from|to) (what|which) (" + _PLACE_NOUNS + ")", "place"),
    (r"(what|which|in what|in which) (" + _TIME_NOUNS + r")s?\b|(on|in|at) what (day|date|year|month|time)",
     "time"),  # fmt: skip
    (r"(what|which) ((error|fault|status|model|part|product|postal|zip|area|access|code) )*(code|number)\b(?! of)",
     "code"),  # fmt: skip
    (r"how (many|much)\b|how (long|old|far|large|big|tall|high|wide|deep|heavy|fast|often)\b|(what|which) ("
     + _NUMBER_NOUNS + r")\b", "number"),  # fmt: skip
    (r"whose\b|who\b|whom\b|by whom\b|(to|for|with|from) whom\b", "person"),
    (r"when\b|(in|since|until|by) when\b", "time"),
    (r"where\b|(from|to) where\b", "place"),
)
"""(pattern on the question's opening, after any leading "so", "and" or "then"; the kind of answer it asks for),
first match wins. person: a name; named: the name of a thing (a title, a team); place; time: a date, a time, a
period or a clause that places an event in time; number: a number or a quantity; code: an identifier."""
_COMPILED = tuple((re.compile(r"^\W*(?:(?:so|and|then|also|ok|okay)\W+)*(?:" + p + ")", re.I), k) for p, k in FORMS)
_INNER = re.compile(r"\b(who|whom|whose|when|where|how many|how much)\b", re.I)
"""A question word later in the question ("The band that recorded X was formed where?", "Tell me who ...")."""


def asked_kind(question: str) -> str | None:
    """The kind of answer ``question`` asks for (a kind of FORMS), or None when no form of the table matches."""
    q = " ".join(question.split())
    for pattern, kind in _COMPILED:
        if pattern.search(q):
            return kind
    inner = _INNER.search(q)
    if inner and not re.match(r"^\W*(what|which|how)\b", q, re.I):
        return {"who": "person", "whom": "person", "whose": "person", "when": "time", "where": "place"}.get(
            inner.group(1).lower(), "number")
    return None


def _words(text: str) -> list[str]:
    return WORD.findall(text)


def echoes(question: str, phrase: str) -> bool:
    """The phrase holds no content word that the question lacks (its words, suffixes stripped): it repeats the
    question, or is made of stop words only."""
    asked = {suffix_stem(w.lower()) for w in _words(question)}
    own = [w.lower() for w in _words(phrase)]
    content = [w for w in own if w not in STOPWORDS]
    if not content:
        return not any(ch.isdigit() for ch in phrase)
    return all(suffix_stem(w) in asked for w in content)


def opens_with_number(phrase: str) -> bool:
    """Whether ``phrase`` begins with a number: digits (a price's sign before them too) or a number word."""
    words = _words(phrase)
    return bool(re.match(r"[$\u00a3\u20ac\u00a5]?\d", phrase.lstrip())) or bool(
        words and words[0].lower() in _NUMBER_WORDS)


def _has_number(phrase: str) -> bool:
    return any(ch.isdigit() for ch in phrase) or any(w.lower() in _NUMBER_WORDS for w in _words(phrase))


def _has_capital(phrase: str) -> bool:
    return any(w[:1].isupper() and w.lower() not in STOPWORDS for w in _words(phrase)) or "\u201c" in phrase or '"' in phrase


def _looks_like_time(phrase: str) -> bool:
    words = {w.lower() for w in _words(phrase)}
    return any(ch.isdigit() for ch in phrase) or bool(words & _TIME_WORDS) or bool(_TIME_LEAD.match(phrase)) \
        or any(w.endswith(("th", "st", "nd", "rd")) and w in _ORDINALS for w in words)  # fmt: skip


_ORDINALS = frozenset("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
                      "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth twenty-first".split())  # fmt: skip


def _looks_like_place(phrase: str) -> bool:
    if _has_capital(phrase) or _PLACE_LEAD.match(phrase):
        return True
    return bool({w.lower() for w in _words(phrase)} & set(_PLACE_NOUNS.split("|")))


def _looks_like_code(phrase: str) -> bool:
    return bool(_CODE.search(phrase)) and (not _PHONE.search(phrase) or phrase.lower().startswith("0x"))


LOOKS = {
    "person": _has_capital,
    "named": _has_capital,
    "time": _looks_like_time,
    "number": _has_number,
    "place": _looks_like_place,
    "code": _looks_like_code,
}
"""What a phrase of each kind of FORMS must look like (a necessary sign, never a sufficient one)."""


_POLAR = re.compile(r"^\W*(?:(?:so|and|but|then|also|please)\W+)?(?:is|are|was|were|does|do|did|has|have|had|can|"
                    r"could|will|would|should|shall|may|might|must)(?:n['\u2019]t)?\b", re.I)  # fmt: skip


def asks_yes_or_no(question: str) -> bool:
    """Whether ``question`` is answered yes or no ("Is Ferrule free?", "Does it support IPv6?"); not a choice
    ("Is it red or blue?"), which a phrase may answer."""
    if _ASKS_TO_TELL.match(question):
        return False  # "Can you tell me when the bridge was rebuilt?" asks when
    return bool(_POLAR.match(question)) and not re.search(r"\w\s+or\s+\w", question)


_ASKS_TO_TELL = re.compile(r"^\W*(?:can|could|would|will|do|does|did)\s+(?:you|anyone|someone|somebody)\s+"
                           r"(?:please\s+)?(?:tell|know|say|explain|show|remember)\b(?:\s+\w+){0,2}?\s+"
                           r"(?:who|whom|whose|what|when|where|which|why|how)\b", re.I)  # fmt: skip


def agrees(question: str, phrase: str) -> bool:
    """False when ``phrase`` cannot answer ``question``: it only repeats the question's words, or it lacks the
    sign of the kind of answer the question asks for (asked_kind, LOOKS); True otherwise."""
    if not phrase.strip() or echoes(question, phrase):
        return False
    kind = asked_kind(question)
    return kind is None or LOOKS[kind](phrase)


_ASKS_DEFAULT = re.compile(
    r"\bdefaults?\b|\bout of the box\b|\bif (?:i|you|we|one) (?:don['’]t|do not|never|leave|omit)\b|"
    r"\bunless (?:i|you|we|one|someone|configured|told|set|changed|otherwise)\b|"
    r"\bwithout (?:setting|specifying|saying|giving|choosing|picking|passing|naming|configuring|changing)\b|"
    r"\bomit(?:s|ted)?\b|\bif (?:it|that|nothing|none|(?:the |an? |no )?\w+) (?:is|are|was) not (?:set|given|"
    r"specified|configured)\b|\bif (?:it|that|(?:the |an? )?\w+) (?:isn['’]t|aren['’]t|wasn['’]t) (?:set|given|"
    r"specified|configured)\b|\bif (?:no|nothing|none) (?:\w+ )?(?:is|are) (?:set|given|specified|configured)\b",
    re.I)  # fmt: skip


def asks_default(question: str) -> bool:
    """Does ``question`` ask what holds when nothing is set or said ("What threading mode is used by default?",
    "If I don't set MaxRequestWorkers, how many ...", "Out of the box, how long ...")?"""
    return bool(_ASKS_DEFAULT.search(question))
