"""The retrieval ranking of quotable sentences: how well each answers the question, best first.

Each candidate (candidates.py) gets a score that is a weighted sum of retrieval signals (FEATURES): the
question-to-sentence cosine of the embedding model, lexical overlap (the share of the question's content
words, weighted by rarity, that the sentence contains), the same two read together with the previous
sentence, word pairs of the question found in the sentence, matches after stripping common suffixes, the
rank of the chunk it came from, and for quantity or date questions the presence of a number. The weights
are the calibration's (``Calibration.ranking_weights``); a softmax over one question's sentences estimates
the chance that each one holds the answer, which the lead count (offer.py) and the gate (gate.py) read.

The echo rule: a field whose value only repeats the question ("Package: mawk" for "Who maintains mawk?")
names its subject and answers nothing, so it is ranked last (here, and again after the reader, read.py).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..text import STOPWORDS, WORD, collapse, is_field, query_terms, suffix_stem
from .answer_type import asks_default
from .calibration import DEFAULT, Calibration
from .candidates import Candidate, Quote, candidates

FEATURES = ("cosine", "context cosine gain", "lexical", "context lexical gain", "chunk rank", "number",
            "word pairs", "suffix-stripped gain", "default")  # fmt: skip
"""What ``features`` measures for each sentence, in column order:
cosine: question-to-sentence cosine; context cosine gain: the cosine of the previous sentence and
this one read together, minus the cosine (the question's subject is often named in the sentence
before: "Von Lettow ... . He surrendered in Northern Rhodesia."); lexical: the rarity-weighted share
of the question's content words in the sentence (a name joined by underscores counts its parts too:
``with_parts``); context lexical gain: the same with the previous
sentence, minus lexical; chunk rank: 1 / (1 + the chunk's rank in the evidence); number: the sentence
has a digit and the question asks how many / much / long / old / far, or when; word pairs: the share
of the question's adjacent word pairs (not both stop words) that occur in the sentence; suffix-stripped
gain: lexical with common suffixes stripped from both sides ("founded" ~ "founding"), minus lexical; default: the
question asks what holds when nothing is set (``asks_default``: "if I don't set MaxRequestWorkers", "out of the
box") and the sentence says what does (``says_default``: "by default", "Default: | KeepAliveTimeout 5", "if the
keyword is omitted"), words such a question seldom shares with its answer."""
ECHO_MARGIN = 5.0
"""How far below every other sentence ``sink_echoes`` puts a field that echoes the question (a softmax
probability under 1% of the least likely other sentence's). Not fitted: it only has to put the field last
with next to no probability."""
_NUMBER_QUESTION = re.compile(r"^\W*(how (many|much|long|old|far|large|big|tall)|what year|in what year|when)\b", re.I)
_YES_NO = re.compile(r"^\W*(?:(?:so|and|but|then|also|please)\W+)?(?:is|are|was|were|does|do|did|has|have|had|can|"
                     r"could|will|would|should|shall|may|might|must)(?:n['’]t)?\b|\bwhether\b|\w\s+or\s+\w", re.I)
"""A question its own words may answer: yes/no ("Isn't the warranty 10 years?"), whether, or a choice."""
_SAYS_DEFAULT = re.compile(
    r"\bby default\b|\bdefaults? to\b|\b(?:is|are|was|as|becomes?) (?:the )?default\b|\bdefault\s*:|"
    r"\bthe default(?: [\w-]+){0,3} (?:is|are|was|will|of)\b|\bdefault (?:value|setting|mode|behaviou?r|choice)\b|"
    r"\b(?:is|are) (?:left out|omitted|not (?:explicitly )?(?:given|specified|set))\b|"
    r"\bif (?:none|nothing|(?:neither|no) \w+(?: \w+)?|neither) (?:is|are) (?:given|specified|present|set|"
    r"configured)\b",
    re.I)  # fmt: skip


def says_default(sentence: str) -> bool:
    """Does ``sentence`` say what holds when nothing is set ("by default", "defaults to", a "Default:" field,
    "if the keyword is omitted", "if none is specified")?"""
    return bool(_SAYS_DEFAULT.search(sentence))


def _pairs(words: list[str]) -> set[tuple[str, str]]:
    return set(zip(words, words[1:]))


def with_parts(words) -> set[str]:
    """``words`` and the parts of each name joined by underscores ("pkgtool_cache_dir" -> "pkgtool", "cache",
    "dir"): a sentence naming PKGTOOL_CACHE_DIR speaks of the cache directory a question asks about."""
    words = set(words)
    return words | {p for w in words if "_" in w for p in w.split("_") if p}


def cosines(question: str, cands: list[Candidate], embed, read_twice: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(question-to-sentence cosine, question-to-(previous sentence + sentence) cosine) of every candidate.

    Each sentence is embedded once: the pair's vector is the sum of the two sentences' vectors weighted by their
    word counts, normalised (the embedding model mean-pools its tokens, so a text's vector is close to that
    weighted mean of its parts'); a previous sentence that is not itself a candidate (a heading, a question) is
    embedded too. ``read_twice`` embeds every pair as one text instead (how the weights were first fitted; twice
    the embedding work, bench/tune/passage.py --ranking compares the two)."""
    n = len(cands)
    if read_twice:
        vecs = np.asarray(embed([question] + [c.text for c in cands] + [f"{c.previous} {c.text}".strip() for c in cands]))
        return vecs[1:n + 1] @ vecs[0], vecs[n + 1:] @ vecs[0]
    texts = list(dict.fromkeys([c.text for c in cands] + [c.previous for c in cands if c.previous]))
    at = {t: i for i, t in enumerate(texts)}
    vecs = np.asarray(embed([question] + texts), dtype=np.float64)
    q, body = vecs[0], vecs[1:]
    own = body[[at[c.text] for c in cands]]
    words = np.array([max(1, len(c.text.split())) for c in cands], dtype=np.float64)[:, None]
    pairs = own * words
    for i, c in enumerate(cands):
        if c.previous:
            pairs[i] += body[at[c.previous]] * max(1, len(c.previous.split()))
    pairs /= np.linalg.norm(pairs, axis=1, keepdims=True).clip(1e-12)
    return own @ q, pairs @ q


def features(question: str, cands: list[Candidate], embed, read_twice: bool = False) -> np.ndarray:
    """One row per candidate, one column per name in FEATURES (``read_twice``: see ``cosines``)."""
    n = len(cands)
    if not n:
        return np.zeros((0, len(FEATURES)))
    cos, cos_ctx = cosines(question, cands, embed, read_twice)
    terms = query_terms(question)
    lowered = [c.text.lower() for c in cands]
    # Rarity of each term among the candidate sentences: rare terms say more.
    weights = {t: math.log(1 + n / (1 + sum(t in s for s in lowered))) for t in terms}
    total = sum(weights.values()) or 1.0
    q_words = WORD.findall(question.lower())
    q_pairs = {p for p in _pairs(q_words) if not (p[0] in STOPWORDS and p[1] in STOPWORDS)}
    numeric = bool(_NUMBER_QUESTION.match(question))
    default = asks_default(question)

    def lexical(words: set[str]) -> float:
        return sum(w for t, w in weights.items() if t in words) / total

    rows = []
    for c, low, cs, cc in zip(cands, lowered, cos, cos_ctx):
        words = WORD.findall(low)
        wset = with_parts(words)
        lex = lexical(wset)
        lex_ctx = lexical(wset | with_parts(WORD.findall(c.previous.lower())))
        stems = {suffix_stem(w) for w in wset}
        lex_stem = sum(w for t, w in weights.items() if suffix_stem(t) in stems) / total
        pairs = len(q_pairs & _pairs(words)) / len(q_pairs) if q_pairs else 0.0
        number = numeric and any(ch.isdigit() for ch in c.text)
        rows.append((float(cs), float(cc - cs), lex, lex_ctx - lex, 1 / (1 + c.chunk_rank), float(number), pairs,
                     max(0.0, lex_stem - lex), float(default and says_default(c.text))))  # fmt: skip
    return np.array(rows)


def rank_quotes(question: str, chunks: list[tuple[str, str]], embed, limit: int, headings: frozenset[str] = frozenset(),
                *, calibration: Calibration = DEFAULT, read_twice: bool = False,
                synopses: frozenset[str] = frozenset()) -> list[Quote]:  # fmt: skip
    """The ``limit`` best sentences of ``chunks`` ((chunk id, text), in evidence order) for ``question``
    (never one of ``headings``, see candidates.candidates), scored with ``calibration.ranking_weights``.

    Each carries its score and its probability among all the candidates (identical sentences
    are quoted once, with their probabilities added up).
    """
    cands = candidates(chunks, headings)
    if not cands:
        return []
    scores = features(question, cands, embed, read_twice) @ np.asarray(calibration.ranking_weights)
    sink_echoes(question, [c.text for c in cands], scores)
    sink_synopses(question, [c.text for c in cands], scores, [c.chunk_id in synopses for c in cands])
    probs = softmax(scores)
    by_text: dict[str, int] = {}
    merged: list[list] = []  # [candidate, score, probability]
    for i in np.argsort(-scores, kind="stable"):
        key = collapse(cands[i].text)
        if key in by_text:
            merged[by_text[key]][2] += float(probs[i])
        else:
            by_text[key] = len(merged)
            merged.append([cands[i], float(scores[i]), float(probs[i])])
    return [Quote(c.chunk_id, c.text, c.start, score, p, c.previous) for c, score, p in merged[:limit]]


def sink_echoes(question: str, texts: list[str], scores: np.ndarray) -> None:
    """Put the scores of the ``texts`` that echo ``question`` (``echoes_question``) ECHO_MARGIN below the lowest
    score, in place, unless every text echoes it: a field that only repeats the question names its subject,
    answering nothing."""
    echo = echo_test(question)
    echoes = [i for i, text in enumerate(texts) if echo(text)]
    if len(echoes) < len(texts):
        scores[echoes] = scores.min() - ECHO_MARGIN


_SYNTAX_ASKED = re.compile(r"\b(?:syntax|synopsis|usage|signature|arguments?|parameters?|grammar|invocation|"
                           r"invoke|call(?:ed|ing)?|spell(?:ed)?|written|format of)\b", re.I)
"""A question that asks how a command or function is written: a usage line may answer it."""
_ENDS_SENTENCE = re.compile(r"[.!?][\"'”’)\]]*\s*$")
"""Prose ends so; a usage block does not (a film's or a book's Synopsis section is prose, and answers)."""
SYNOPSIS_HEADING = re.compile(r"^\W*(?:[\d.]+\s+)?synopsis\W*$", re.I)
"""A section heading that says its text is a usage ("SYNOPSIS", "Synopsis ¶", "2.1 Synopsis"); not "Usage", whose
section often tells how to do things in sentences."""
_SYNOPSIS_GROUP = re.compile(r"\[[^\[\]]{0,60}\]|<[\w.:-]{1,40}>|\{[^{}]{0,40}\}")


def is_synopsis(text: str) -> bool:
    """A usage line: a command or function written with its optional parts (``git log [<options>]
    [<revision-range>] [[--] <path>...]``, ``htpasswd [ -c ] [ -i ] ... username password``): at least two
    bracketed or angled groups, no full stop at its end, and more groups than a sentence's few asides."""
    line = text.strip()
    if line.endswith((".", "!", "?")) or "\n\n" in line or line.startswith("-"):
        return False  # (an option with its description: "-o <file>   Write the output to <file> instead of ...")
    groups = len(_SYNOPSIS_GROUP.findall(line))
    if groups < 2 or groups * 6 < len(WORD.findall(line)):
        return False
    tail = WORD.findall(_SYNOPSIS_GROUP.split(line)[-1].lower())
    return not (len(tail) >= 4 and STOPWORDS & set(tail))  # prose after the groups: "... instead of the output"


_CALL = re.compile(r"\w\(")
"""A call written as code does ("Client(base_url=...)"); a usage line's parentheses stand apart ("[ ( a ) ]")."""


def _usage_block(text: str) -> bool:
    """A Synopsis section's text that is usage: it writes optional or alternative parts ("HEADER [ boolean | MATCH ]",
    "{ stop | skip }") and does not end as prose does. Not an example of use ("client = Client(base_url=...)": a
    module's README puts its examples under "Synopsis", and they answer how-to questions, a review found: a call,
    ``_CALL``, or a dict's braces, marks code) nor a film's synopsis."""
    return bool(_SYNOPSIS_GROUP.search(text)) and not _ENDS_SENTENCE.search(text) and not _CALL.search(text)


def sink_synopses(question: str, texts: list[str], scores: np.ndarray, in_synopsis: list[bool] | None = None) -> None:
    """Put the scores of usage lines (``is_synopsis``, or any text of a passage under a Synopsis heading:
    ``in_synopsis``) ECHO_MARGIN below the lowest score, in place, unless the question asks for the syntax
    (_SYNTAX_ASKED) or every text is one (a Synopsis section's sentence that ends as prose does is no usage: a
    film's synopsis answers what happens in it): a SYNOPSIS shares every word of "what does X do?" or "how do I
    use X to ...?" and answers neither (git-stash's, quoted twice for "What does git stash pop do?"; an SQL reference's
    "where option can be one of: ... HEADER [ boolean | MATCH ]" for "Can the HEADER option be used with text
    format?")."""
    if _SYNTAX_ASKED.search(question):
        return
    usage = [i for i, text in enumerate(texts) if is_synopsis(text) or (in_synopsis and in_synopsis[i]
                                                                        and _usage_block(text))]
    if usage and len(usage) < len(texts):
        scores[usage] = scores.min() - ECHO_MARGIN


def echoes_question(question: str, text: str) -> bool:
    """A field whose value says nothing the question does not ("Package: mawk" for "Who maintains mawk?";
    a table's header row for a question naming its columns): every content word of the value (the
    text after ``Label:``, or every cell of a row) is a word of the question. A yes/no question may be
    answered by its own words ("Is the warranty 10 years?"), so nothing echoes one."""
    return echo_test(question)(text)


CHANGE_LABELS = frozenset(("added", "new", "changed", "removed", "deprecated", "fixed", "security", "breaking"))
"""A release note's labels (the Keep a Changelog kinds): a field so labelled says what happened to what it names,
even when the question names all of it ("What happened to the --legacy-protocol option?")."""


def echo_test(question: str):
    """``echoes_question`` for one question, its words read once (``sink_echoes`` asks it of every candidate)."""
    if _YES_NO.search(question):
        return lambda text: False
    asked = {suffix_stem(w.lower()) for w in WORD.findall(question)}

    def echoes(text: str) -> bool:
        if not is_field(text):
            return False
        if "|" not in text and text.split(":", 1)[0].strip().lower() in CHANGE_LABELS:
            return False  # "Removed: the --legacy-protocol option.": what happened to it is the label
        value = text if "|" in text else text.split(":", 1)[1]
        words = {w.lower() for w in WORD.findall(value)} - STOPWORDS
        return bool(words) and {suffix_stem(w) for w in words} <= asked

    return echoes


def softmax(scores: np.ndarray) -> np.ndarray:
    """Scores to probabilities that sum to 1 (the ranking's estimate of which sentence answers)."""
    p = np.exp(scores - scores.max())
    return p / p.sum()
