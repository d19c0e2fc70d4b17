"""Quotable spans: the sentences of the admitted chunks, ranked by how well they answer the question.

The grammar lets the model quote only these spans, best first. Each sentence gets a score
that is a weighted sum of retrieval signals (FEATURES): the question-to-sentence cosine of the
embedding model, lexical overlap (the share of the question's content words, weighted by
rarity, that the sentence contains), the same two read together with the previous sentence,
word pairs of the question found in the sentence, matches after stripping common suffixes,
the rank of the chunk it came from, and for quantity or date questions the presence of a
number. The weights were fitted on several kinds of text (scripts/tune_reason.py, on questions the
evaluation does not ask): a softmax over one question's sentences estimates the chance that each one
holds the answer. ``lead_count`` uses that estimate to decide how many quotations an answer needs. A sentence that reads like instructions to an AI (``reads_like_instructions``) is
never a candidate: a document can address the model, but what it tells the model is not evidence.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .text import STOPWORDS, WORD, collapse, is_field, query_terms, sentences

FEATURES = ("cosine", "context cosine gain", "lexical", "context lexical gain", "chunk rank", "number",
            "word pairs", "suffix-stripped gain")  # fmt: skip
"""What ``features`` measures for each sentence, in column order:
cosine: question-to-sentence cosine; context cosine gain: the cosine of the previous sentence and
this one read together, minus the cosine (the question's subject is often named in the sentence
before: "Von Lettow ... . He surrendered in Northern Rhodesia."); lexical: the rarity-weighted share
of the question's content words in the sentence; context lexical gain: the same with the previous
sentence, minus lexical; chunk rank: 1 / (1 + the chunk's rank in the evidence); number: the sentence
has a digit and the question asks how many / much / long / old / far, or when; word pairs: the share
of the question's adjacent word pairs (not both stop words) that occur in the sentence; suffix-stripped
gain: lexical with common suffixes stripped from both sides ("founded" ~ "founding"), minus lexical."""
WEIGHTS = np.array([8.46, 1.41, 4.48, 2.40, 1.53, 3.13, 1.71, 4.17])
"""Fitted by scripts/tune_reason.py (softmax over each question's sentences, maximising the chance
given to the sentences that hold the answer) on the fit half of six kinds of text (Wikipedia from SQuAD
and CoQA, school exams, science, children's stories, literature); news, reddit and product reviews were
kept out of the fit."""
LEAD_RATIO = 0.2
MOST_LEAD = 3
MAX_LEAD = 5
"""``lead_count``: the best-ranked quotation leads every answer; the next ones join it only while the
ranking gives each at least LEAD_RATIO of the best one's estimated chance of holding the answer (the
ranking cannot tell them apart, or sources disagree), at most MOST_LEAD. A fixed number of lead
quotations (the answer_quotes setting) may go up to MAX_LEAD. Chosen in scripts/tune_reason.py for
statement precision with support, on several kinds of text."""
_NUMBER_QUESTION = re.compile(r"^\W*(how (many|much|long|old|far|large|big|tall)|what year|in what year|when)\b", re.I)
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@dataclass(frozen=True)
class Candidate:
    """A sentence that may be quoted: where it is and the sentence before it (for context)."""

    chunk_rank: int
    chunk_id: str
    start: int
    text: str
    previous: str


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
    """The reader's estimate (reason/read.py) that this sentence holds the answer, when the reader read it."""


def is_sentence_like(text: str) -> bool:
    """Ends like a sentence, is long enough to be one, or is a field ("Weight: 11 kg", a table row);
    unlike a heading."""
    return text.rstrip().endswith((".", "!", ":", ";", '"', "\u201d")) or len(text.split()) > 8 or is_field(text)


def _all_candidates(chunks: list[tuple[str, str]], headings: frozenset[str] = frozenset()) -> list[Candidate]:
    """Every sentence of ``chunks`` that is not a question or one of ``headings`` (collapsed), in order
    (a FAQ heading answers nothing; a section heading in a chunk's text names its topic)."""
    out: list[Candidate] = []
    for rank, (chunk_id, text) in enumerate(chunks):
        spans = sentences(text)
        header = ""  # a row's context is its table's header row; a field's, the first field of its list
        for i, (s, e) in enumerate(spans):
            prev = text[spans[i - 1][0]:spans[i - 1][1]] if i else ""
            header = (header or prev) if _same_list(text[s:e], prev, header) else ""
            if not text[s:e].rstrip().endswith("?") and collapse(text[s:e]) not in headings:
                out.append(Candidate(rank, chunk_id, s, text[s:e], header or prev))
    return out


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
    # A heading ("Router manual (vendor)") states nothing: quote sentences when there are any.
    return [c for c in out if is_sentence_like(c.text)] or out


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


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def word_stem(word: str) -> str:
    """A stem that inflected forms share ("lasts"/"lasted", "warranty"/"warranties", "purchase"/"purchased")."""
    stem = _stem(word)
    if stem.endswith("i"):
        stem = stem[:-1] + "y"
    return stem[:-1] if stem.endswith("e") and len(stem) > 3 else stem


def _pairs(words: list[str]) -> set[tuple[str, str]]:
    return set(zip(words, words[1:]))


def features(question: str, cands: list[Candidate], embed) -> np.ndarray:
    """One row per candidate, one column per name in FEATURES."""
    n = len(cands)
    if not n:
        return np.zeros((0, len(FEATURES)))
    vecs = np.asarray(embed([question] + [c.text for c in cands] + [f"{c.previous} {c.text}".strip() for c in cands]))
    cos = vecs[1:n + 1] @ vecs[0]
    cos_ctx = vecs[n + 1:] @ vecs[0]
    terms = query_terms(question)
    lowered = [c.text.lower() for c in cands]
    # Rarity of each term among the candidate sentences: rare terms say more.
    weights = {t: math.log(1 + n / (1 + sum(t in s for s in lowered))) for t in terms}
    total = sum(weights.values()) or 1.0
    q_words = WORD.findall(question.lower())
    q_pairs = {p for p in _pairs(q_words) if not (p[0] in STOPWORDS and p[1] in STOPWORDS)}
    numeric = bool(_NUMBER_QUESTION.match(question))

    def lexical(words: set[str]) -> float:
        return sum(w for t, w in weights.items() if t in words) / total

    rows = []
    for c, low, cs, cc in zip(cands, lowered, cos, cos_ctx):
        words = WORD.findall(low)
        wset = set(words)
        lex = lexical(wset)
        lex_ctx = lexical(wset | set(WORD.findall(c.previous.lower())))
        stems = {_stem(w) for w in wset}
        lex_stem = sum(w for t, w in weights.items() if _stem(t) in stems) / total
        pairs = len(q_pairs & _pairs(words)) / len(q_pairs) if q_pairs else 0.0
        number = numeric and any(ch.isdigit() for ch in c.text)
        rows.append((float(cs), float(cc - cs), lex, lex_ctx - lex, 1 / (1 + c.chunk_rank), float(number), pairs,
                     max(0.0, lex_stem - lex)))  # fmt: skip
    return np.array(rows)


def rank_quotes(question: str, chunks: list[tuple[str, str]], embed, limit: int,
                headings: frozenset[str] = frozenset()) -> list[Quote]:  # fmt: skip
    """The ``limit`` best sentences of ``chunks`` ((chunk id, text), in evidence order) for ``question``
    (never one of ``headings``, see ``candidates``).

    Each carries its score and its probability among all the candidates (identical sentences
    are quoted once, with their probabilities added up).
    """
    cands = candidates(chunks, headings)
    if not cands:
        return []
    scores = features(question, cands, embed) @ WEIGHTS
    echo = _echo_test(question)
    echoes = [i for i, c in enumerate(cands) if echo(c.text)]
    if len(echoes) < len(cands):  # a field that only repeats the question names its subject, answering nothing
        scores[echoes] = scores.min() - ECHO_MARGIN
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


ECHO_MARGIN = 5.0
"""How far below every other sentence ``rank_quotes`` puts a field that echoes the question (a softmax
probability under 1% of the least likely other sentence's)."""
_YES_NO = re.compile(r"^\W*(?:(?:so|and|but|then|also|please)\W+)?(?:is|are|was|were|does|do|did|has|have|had|can|"
                     r"could|will|would|should|shall|may|might|must)(?:n['’]t)?\b|\bwhether\b|\w\s+or\s+\w", re.I)
"""A question its own words may answer: yes/no ("Isn't the warranty 10 years?"), whether, or a choice."""


def echoes_question(question: str, text: str) -> bool:
    """A field whose value says nothing the question does not ("Package: mawk" for "Who maintains mawk?";
    a table's header row for a question naming its columns): every content word of the value (the
    text after ``Label:``, or every cell of a row) is a word of the question. A yes/no question may be
    answered by its own words ("Is the warranty 10 years?"), so nothing echoes one."""
    return _echo_test(question)(text)


def _echo_test(question: str):
    """``echoes_question`` for one question, its words read once (rank_quotes asks it of every candidate)."""
    if _YES_NO.search(question):
        return lambda text: False
    asked = {_stem(w.lower()) for w in WORD.findall(question)}

    def echoes(text: str) -> bool:
        if not is_field(text):
            return False
        value = text if "|" in text else text.split(":", 1)[1]
        words = {w.lower() for w in WORD.findall(value)} - STOPWORDS
        return bool(words) and {_stem(w) for w in words} <= asked

    return echoes


def field_off_question(question: str, quote: Quote) -> bool:
    """A field ranked high only through its context: it shares no word (or stem) with the question while
    its context (its record's or table's first line) does ("Source: gtk+2.0", after "Package:
    libgtk2.0-common", for "What is the website of libgtk2.0-common?", the package's file having no
    Homepage line). The gate does not take it for an answer. A field with a long value ("A: Hold the
    button for ten seconds, then ...") is prose and left to the gate; so is a field whose context does not
    name the question's subject either ("Weight: 11 kg" for "How heavy is it?": a paraphrase)."""
    text = quote.text
    if not question or not is_field(text) or len(text.split(":", 1)[-1].split()) > 8:
        return False
    asked = _content_stems(query_terms(question))
    return not _shares(asked, _content_stems(WORD.findall(text))) and _shares(asked, _content_stems(
        WORD.findall(quote.context)))  # fmt: skip


def _content_stems(words) -> set[str]:
    """Stems of ``words``; numbers and single letters name nothing."""
    return {_stem(w.lower()) for w in words if len(w) > 1 and not w.isdigit()}


def _shares(a: set[str], b: set[str]) -> bool:
    """A stem in both, or one that begins the other ("maintains" / "Maintainer", "installed" / "Installed-Size")."""
    return any(x == y or (min(len(x), len(y)) >= 4 and (x.startswith(y) or y.startswith(x))) for x in a for y in b)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Scores to probabilities that sum to 1 (the ranking's estimate of which sentence answers)."""
    p = np.exp(scores - scores.max())
    return p / p.sum()


def lead_count(probabilities, ratio: float = LEAD_RATIO, most: int = MOST_LEAD) -> int:
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


# ---------------------------------------------------------------- naming what the answer is about

_ASKS_NAME = re.compile(r"^\W*(?:(?:and|but|so)\W+)?(?:who|whom|whose|which)\b|\bwho(?:m|se)?\b|"
                        r"\bwhat\s+(?:\w+\s+){0,3}?(?:name|called|named)\b|\bname\s+(?:of|the)\b", re.I)  # fmt: skip
"""A question that asks for who or what by name: who / whom / whose / which, "what is the name of", "what was
it called"."""
_REFERRING = frozenset("he she they it his her their its him them this these those".split())
_DESCRIPTION = re.compile(r"^\W*(?:(?:after|then|later|in|on|at|by|when)\b[^,]{0,40}?,?\s+)?(?:the|this|that|these)\s+"
                          r"[a-z][\w-]*\b", re.I)  # fmt: skip
"""A bare description at the start: "The company ...", "After the war the band ..."."""
NAMING_LOOKBACK = 3
"""How many sentences back ``naming_sentence`` looks for one that names."""


def asks_for_name(question: str) -> bool:
    """Whether ``question`` asks who or what by name (who, whose, which, "what is the name of ...")."""
    return bool(_ASKS_NAME.search(question))


def _names(text: str, skip: set[str]) -> list[str]:
    """Capitalised words of ``text`` that are names: not its first word, not a stop word or pronoun, not in
    ``skip`` (the question's own words)."""
    words = WORD.findall(text)
    return [w for i, w in enumerate(words) if w[:1].isupper() and (i > 0 or w.lower() not in STOPWORDS)
            and w.lower() not in STOPWORDS and w.lower() not in _REFERRING and w.lower() not in skip]  # fmt: skip


def leans_on_reference(question: str, sentence: str) -> bool:
    """The sentence says who or what only through a pronoun or a bare description ("After the flood he rebuilt
    the bridge in stone.", "The band split in 1970."): one of its first words refers back, and it names
    nothing the question does not already name."""
    asked = {w.lower() for w in WORD.findall(question)}
    if _names(sentence, asked):
        return False
    first = [w.lower() for w in WORD.findall(sentence)[:8]]
    return bool(_REFERRING & set(first)) or bool(_DESCRIPTION.match(sentence))


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
