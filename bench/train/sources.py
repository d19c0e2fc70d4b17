"""What both readers are trained on (bench/train/reader.py, bench/train/passage_reader.py), read from the shared
QA folder (bench/data/qa.py: ``--qa-data``; nothing is downloaded), and only sets whose licences allow shipping
derived weights (SOURCES: each one's licence goes into reader.json and so into the model card):

- SQuAD 1.1 train (``qa.ROLES``' train set): every answerable question; a seeded VALIDATION_SHARE of its articles
  (whole articles) is kept apart for validation;
- SQuAD 2.0 dev's unanswerable questions of the articles in the fit half (bench/data/qa_sets.py's split of the
  squad-dev pool, read from qa_sets itself so that there is one definition; the evaluation asks the other half):
  the paragraph they were written on holds no answer, so every sentence or window of it is a negative.

- the manuals (bench/train/manual_source.py; a trainer's ``--no-manuals`` leaves them out): the questions we wrote
  (bench/data/manuals/*.jsonl) whose page is on the fit half of a fit manual, the fit half's unanswerable ones, and
  questions made from the structure of the same pages (options and terms with their description, NAME lines,
  headings); every one of them trained on, none kept apart (the manuals' evaluation half is bench.quality.manuals').

Left out: new_wiki (the readers' clean calibration domain), the held-out sets (reddit, Amazon reviews, the apache
manual) and every evaluation half.

SQuAD 1.1 train's answer offsets were reconstructed: each points at the first copy of the answer's text (the
folder's README). Where the text occurs more than once in its paragraph, ``locate`` takes the copy with the
question's words nearest it and leaves the question out when no copy is nearer; the counts of each case are
printed with the examples.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import random
import re
import time
from collections import Counter, defaultdict
from pathlib import Path

from bench.data import manuals, qa, qa_sets

from localreason.text import STOPWORDS, WORD

SEED = 13
VALIDATION_SHARE = 0.01
"""The share of articles kept apart for validation, at least one: 4 of SQuAD 1.1 train's 442 (about 800
questions), 1 of SQuAD 2.0 dev's fit-half articles."""
COPY_WORDS = 20
"""How many words either side of a copy of an answer's text are read for the question's words (``locate``)."""
TRAIN, UNANSWERABLE = "squad-train", "squad2-unanswerable"
MANUAL_QUESTIONS, MANUAL_STRUCTURE = "manual-questions", "manual-structure"
FIT_MANUALS = tuple(m for m in manuals.MANUALS if m not in manuals.HELD_OUT)
"""The manuals that may be trained on (their fit half's pages only, bench/train/manual_source.py); never apache."""
MANUAL_TITLES = {"sqlite": "The SQLite documentation", "debian-reference": "The Debian Reference",
                 "debian-handbook": "The Debian Administrator's Handbook"}  # fmt: skip
OURS = "Apache-2.0 (the project's own)"
SOURCES = {
    TRAIN: ("SQuAD 1.1 train, Wikipedia (Rajpurkar et al. 2016): every answerable question but those of a few "
            "articles kept apart for validation", qa.LICENCES["squad-train"]),
    UNANSWERABLE: ("SQuAD 2.0 dev, Wikipedia (Rajpurkar et al. 2018): the unanswerable questions of the articles in "
                   "the fit half (bench/data/qa_sets.py), every sentence of their paragraph a negative",
                   qa.LICENCES["squad2-dev"]),
    MANUAL_QUESTIONS: ("Questions we wrote by reading the fit manuals (bench/data/manuals/*.jsonl): those whose page "
                       "is on the fit half (bench/data/manuals.py page_half), and the fit half's unanswerable ones, "
                       "every sentence of the passage most like them a negative; asked on the manuals' pages below",
                       OURS),
    MANUAL_STRUCTURE: ("Questions made from templates on the structure of the fit manuals' fit-half pages (an option "
                       "or term with its description, a NAME line, a heading with the sentence under it), a few a "
                       "page; asked on the manuals' pages below", OURS),
    **{m: (f"{MANUAL_TITLES.get(m, m)} (Debian package {manuals.MANUALS[m][0]}): the pages of the fit half, the text "
           "both manual sources are asked on", manuals.MANUALS[m][3]) for m in FIT_MANUALS},
}  # fmt: skip
"""Name -> (what it is, its licence)."""
MANUAL_SOURCES = (MANUAL_QUESTIONS, MANUAL_STRUCTURE, *FIT_MANUALS)
SCARCE = (UNANSWERABLE, MANUAL_QUESTIONS, MANUAL_STRUCTURE)
"""The sources whose every question is trained on (the sentence reader draws SQuAD 1.1 train's to make up the
number it is asked for)."""
READ = ("squad-train", "squad-dev", "squad2-dev")
"""The sets of the QA folder the examples are built from (squad-dev for qa_sets' halves)."""


def used(with_manuals: bool) -> dict[str, tuple[str, str]]:
    """SOURCES, less the manuals' when they were left out (--no-manuals): what reader.json names."""
    return {k: v for k, v in SOURCES.items() if with_manuals or k not in MANUAL_SOURCES}


@functools.lru_cache(maxsize=1 << 19)  # a sentence is compared with many questions of its article
def terms(text: str) -> frozenset[str]:
    return frozenset(w for w in WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1)


def overlap(question: str, sentence: str) -> float:
    q = terms(question)
    return len(q & terms(sentence)) / (len(q) or 1)


class Passages:
    """Every passage of a source, with rare-word retrieval: the passage of another article that shares most
    inverse-document-frequency weight with a question."""

    def __init__(self, passages: list[tuple[str, str]]) -> None:  # (article key, text)
        self.passages = passages
        self.terms = [terms(t) for _, t in passages]
        df = Counter(w for ts in self.terms for w in ts)
        n = len(passages)
        self.idf = {w: math.log(1 + n / c) for w, c in df.items()}
        self.postings: dict[str, list[int]] = defaultdict(list)
        for i, ts in enumerate(self.terms):
            for w in ts:
                self.postings[w].append(i)

    def best_elsewhere(self, question: str, article: str) -> int | None:
        score: dict[int, float] = defaultdict(float)
        for w in sorted(terms(question)):  # in one order: set order changes with the hash seed, and so would ties
            if len(self.postings.get(w, ())) > 200:  # a common word finds nothing in particular
                continue
            for i in self.postings.get(w, ()):
                score[i] += self.idf[w]
        ranked = sorted((i for i in score if self.passages[i][0] != article), key=lambda i: -score[i])
        return ranked[0] if ranked else None


def first_without(candidates, question: qa_sets.Question, key):
    """The candidates (sentence tuples whose text is ``key(c)``) in order of their word overlap with the question,
    most first (ties in their order), those that hold one of its gold answers left out; lazily, as the held_by
    test is the dear part."""
    ranked = sorted(candidates, key=lambda c: -overlap(question.text, key(c)))
    return (c for c in ranked if not question.held_by(key(c)))


def copies(context: str, text: str) -> list[int]:
    """Where ``text`` occurs in ``context`` as whole words ("German" is not a copy inside "Germany")."""
    before = r"(?<!\w)" if re.match(r"\w", text[:1]) else ""
    after = r"(?!\w)" if re.match(r"\w", text[-1:]) else ""
    return [m.start() for m in re.finditer(before + re.escape(text) + after, context)]


def nearness(context: str, start: int, end: int, question: set[str]) -> float:
    """How near the question's words are to ``context[start:end]``: each one among the COPY_WORDS words either
    side counts 1 / (1 + its distance), once a side."""
    before = [w.lower() for w in WORD.findall(context[:start])[-COPY_WORDS:]][::-1]
    after = [w.lower() for w in WORD.findall(context[end:])[:COPY_WORDS]]
    total = 0.0
    for side in (before, after):
        seen: set[str] = set()
        for distance, w in enumerate(side):
            if w in question and w not in seen:
                seen.add(w)
                total += 1 / (1 + distance)
    return total


def locate(context: str, question: str, answer: dict, counts: Counter) -> tuple[int, int] | None:
    """(start, end) of ``answer`` ({"text", "answer_start"}) in ``context``. When its text occurs more than once
    (SQuAD 1.1 train's offsets point at the first copy), the copy with the question's words nearest it
    (``nearness``); None (the question is left out) when no copy has them nearer than every other. ``counts``
    counts each case."""
    text, start = answer["text"], answer["answer_start"]
    found = copies(context, text)
    if len(found) <= 1:
        counts["answer text once in its paragraph"] += 1
        return start, start + len(text)
    q = terms(question)
    scores = [nearness(context, at, at + len(text), q) for at in found]
    best = max(scores)
    if best == 0 or scores.count(best) > 1:
        counts["answer text several times, no copy nearest the question: question left out"] += 1
        return None
    at = found[scores.index(best)]
    counts["answer text several times, the given copy nearest the question" if at == start else
           "answer text several times, moved to the copy nearest the question"] += 1  # fmt: skip
    return at, at + len(text)


def kept_apart(titles: list[str]) -> set[str]:
    """The articles kept apart for validation: a seeded VALIDATION_SHARE of them, at least one."""
    order = sorted(set(titles))
    return set(random.Random(SEED).sample(order, max(1, round(VALIDATION_SHARE * len(order))))) if order else set()


def squad_answers(articles: list[dict], val_titles: set[str], counts: Counter):
    """Every answerable question of ``articles``, located (``locate``): (split, question, its paragraph, the
    answer's (start, end) there, the article's other paragraphs, the passage of another article most like the
    question or None). ``split`` is "val" for an article of ``val_titles``, else "train"."""
    flat = [(a["title"], p["context"]) for a in articles for p in a["paragraphs"]]
    index = Passages(flat)
    for a in articles:
        split = "val" if a["title"] in val_titles else "train"
        texts = [p["context"] for p in a["paragraphs"]]
        for pi, p in enumerate(a["paragraphs"]):
            for item in p["qas"]:
                if item.get("is_impossible") or not item["answers"]:
                    continue
                where = locate(p["context"], item["question"], item["answers"][0], counts)
                if where is None:
                    continue
                golds = [g["text"] for g in item["answers"]]
                question = qa_sets.Question(item["question"], "answerable", golds, article=a["title"])
                other = index.best_elsewhere(item["question"], a["title"])
                yield (split, question, p["context"], where, [t for j, t in enumerate(texts) if j != pi],
                       flat[other][1] if other is not None else None)  # fmt: skip


def held_apart(examples: list[dict]) -> list[dict]:
    """The validation examples (those of kept_apart's articles), in order: what both trainers validate on, and
    bench/quality/readers.py the exported readers."""
    return [e for e in examples if e["split"] == "val"]


def unanswerable(qa_data: Path | str | None) -> list[tuple[str, str, str]]:
    """(article, question, paragraph) of SQuAD 2.0 dev's unanswerable questions on the articles of the squad-dev
    pool's fit half, as bench/data/qa_sets.py splits it (an article on both sides would be left out)."""
    domain = qa_sets.load("squad-dev", qa_data)
    fit = {q.article for q in domain.questions if q.half == "fit"}
    fit -= {q.article for q in domain.questions if q.half != "fit"}
    return [(a["title"], q["question"], p["context"]) for a in qa.articles("squad2-dev", qa_data)
            if a["title"] in fit for p in a["paragraphs"] for q in p["qas"] if q.get("is_impossible")]  # fmt: skip


def add_sources(builder, qa_data: Path | str | None, squad_questions) -> Counter:
    """The questions of SOURCES, in order, added to ``builder`` (this reader's or the passage reader's):
    SQuAD 1.1 train by ``squad_questions(builder, articles, source, validation titles, counts)``, then the fit
    half's unanswerable questions by ``builder.add_unanswerable(source, split, question, paragraph)``; each set
    keeps kept_apart's articles for validation. The counts of how answers were located (``locate``)."""
    counts: Counter = Counter()
    train = qa.articles("squad-train", qa_data)
    squad_questions(builder, train, TRAIN, kept_apart([a["title"] for a in train]), counts)
    items = unanswerable(qa_data)
    val = kept_apart([title for title, _, _ in items])
    for title, question, text in items:
        builder.add_unanswerable(UNANSWERABLE, "val" if title in val else "train", question, text, title=title)
    counts[f"{UNANSWERABLE} questions"] = len(items)
    return counts


def examples_key(parts: list, qa_data: Path | str | None) -> str:
    """What cached examples were built from: a hash of the code that builds them (``parts``: functions and
    classes) and of the names and sizes of the QA files read (MissingData when one is missing)."""
    digest = hashlib.sha256()
    for part in [*parts, Passages, copies, nearness, locate, kept_apart, squad_answers, unanswerable, add_sources,
                 terms, overlap, qa_sets.load, qa.article_half]:  # fmt: skip
        digest.update(inspect.getsource(part).encode())
    for name in READ:
        file = qa.path(name, qa_data)
        digest.update(f"{file.name}\0{file.stat().st_size}\0".encode())
    return digest.hexdigest()[:10]


def cached_examples(cache: Path, build) -> list[dict]:
    """The examples cached in ``cache`` (JSON lines, the first the counts of how answers were located), else
    those ``build()`` returns with its counts, written there; the counts are printed either way, and the speed
    of building when it was built."""
    if cache.is_file():
        head, *rest = cache.read_text(encoding="utf-8").splitlines()
        counts, examples = json.loads(head), [json.loads(line) for line in rest]
        print(f"{len(examples)} examples read from {cache}")
    else:
        t0 = time.perf_counter()
        examples, counts = build()
        took = time.perf_counter() - t0
        print(f"{len(examples)} examples built in {took:.0f} s ({len(examples) / max(took, 1e-9):.0f} examples/s)")
        cache.parent.mkdir(parents=True, exist_ok=True)
        lines = [json.dumps(dict(counts))] + [json.dumps(e) for e in examples]
        part = cache.with_name(cache.name + ".part")  # renamed when whole: a run stopped while writing leaves no cache
        part.write_text("\n".join(lines) + "\n", encoding="utf-8")
        part.replace(cache)
    for what, n in sorted(counts.items()):
        print(f"  {what}: {n}")
    return examples


def shares(train: list[dict]) -> str:
    """How many training questions each source gives, and its share: the line both trainers print."""
    first: dict[int, str] = {}
    for e in train:
        first.setdefault(e["qid"], e["src"])
    n = Counter(first.values())
    total = sum(n.values()) or 1
    return "questions by source: " + ", ".join(f"{src} {k} ({100 * k / total:.1f}%)" for src, k in n.most_common())
