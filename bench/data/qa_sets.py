"""Question sets for calibrating and evaluating `reason` on more than one kind of text.

Every set comes from the `bigbench==1.0.0` source archive on PyPI (fetched once, cached in
--data-dir, see bench/data/squad.py):

- SQuAD format (squad_shifts/): SQuAD v1.1 dev (Wikipedia), and the SQuAD-shifts sets written the
  same way on New York Times articles, Reddit posts and Amazon reviews. One document per paragraph,
  one collection per article; an answer is held by a quotation that contains a gold answer text.
- CoQA (coqa.test.json): 100 stories from each of 7 sources (school exams, reddit, science,
  children's stories, literature, CNN news, Wikipedia). One document per story, one collection per
  domain. Only questions that stand alone are asked (the first turn, and later turns with no pronoun
  or "that"/"there" that leans on an earlier turn). An answer is held by a quotation that covers most
  of the rationale's content words, or contains the short answer when that occurs in the story.

Each domain is one library, built so that one library serves three kinds of question:
- answerable: asked about text that is in the library;
- near-miss: the paragraph (SQuAD format) or the rationale's sentences (CoQA) the question was written
  on are removed and the rest of the article or story stays. SQuAD format: no gold answer occurs
  anywhere else in the library. CoQA: no sentence of the rest of the story holds the answer (other
  stories are not checked: a short answer such as "white" occurs in many, about other things).
  The SQuAD-shifts reddit posts are independent one-paragraph "articles", so there the whole post
  goes and its near-miss questions behave like off-topic ones;
- off-topic: whole articles or stories left out of the library.

DOMAINS says which domains the constants may be fitted on (fit) and which are kept out of every fit
(held out); a kind of text is held out entirely: news (CNN, NYT), reddit (both sets) and product reviews.
Each fit domain's questions are split into a fitting half and an evaluation half.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

ARCHIVE_MEMBERS = {
    "squaddev_v1.1.json": "squad_shifts/squaddev_v1.1.json",
    "nyt_v1.0.json": "squad_shifts/nyt_v1.0.json",
    "reddit_v1.0.json": "squad_shifts/reddit_v1.0.json",
    "amazon_reviews_v1.0.json": "squad_shifts/amazon_reviews_v1.0.json",
    "new_wiki_v1.0.json": "squad_shifts/new_wiki_v1.0.json",
    "coqa.test.json": "coqa_conversational_question_answering/coqa.test.json",
}

# name: (source file, CoQA source or None, kind of text, fit or held out)
DOMAINS = {
    "squad-wiki": ("squaddev_v1.1.json", None, "Wikipedia (SQuAD dev)", "fit"),
    "coqa-wikipedia": ("coqa.test.json", "wikipedia", "Wikipedia (CoQA)", "fit"),
    "coqa-race": ("coqa.test.json", "race", "school exam passages", "fit"),
    "coqa-science": ("coqa.test.json", "science", "science texts", "fit"),
    "coqa-mctest": ("coqa.test.json", "mctest", "children's stories", "fit"),
    "coqa-gutenberg": ("coqa.test.json", "gutenberg", "literature", "fit"),
    "coqa-cnn": ("coqa.test.json", "cnn", "news (CNN)", "held out"),
    "coqa-reddit": ("coqa.test.json", "reddit", "reddit posts (CoQA)", "held out"),
    "nyt": ("nyt_v1.0.json", None, "news (New York Times, SQuAD-shifts)", "held out"),
    "reddit": ("reddit_v1.0.json", None, "reddit posts (SQuAD-shifts)", "held out"),
    "amazon": ("amazon_reviews_v1.0.json", None, "product reviews (SQuAD-shifts)", "held out"),
}
FIT = [d for d, v in DOMAINS.items() if v[3] == "fit"]
HELD_OUT = [d for d, v in DOMAINS.items() if v[3] == "held out"]

MAX_PARAGRAPHS = 1000
"""SQuAD-format libraries hold at most this many paragraphs (SQuAD dev keeps all its 48 articles)."""
NEAR_MISS = 80
OFF_TOPIC_SHARE = 0.12
_LEANS_ON_EARLIER = re.compile(r"\b(he|she|it|they|him|her|his|hers|its|their|them|that|those|this|these|there|then"
                               r"|one|else|also|other)\b", re.I)  # fmt: skip
_WORD = re.compile(r"\w+")
_STOP = frozenset("a an the of to in on at for and or but is was were are be been by with as from that this it its "
                  "he she they his her their them i you we what who when where why how which did do does".split())


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def token_f1(got: str, gold: str) -> float:
    """SQuAD's token F1 of ``got`` against ``gold``, on ``norm``'s words (1.0 for two empty texts)."""
    from collections import Counter

    a, b = norm(got).split(), norm(gold).split()
    common = sum((Counter(a) & Counter(b)).values())
    if not a or not b or not common:
        return float(a == b)
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r)


@dataclass
class Question:
    text: str
    kind: str
    """answerable, near-miss or off-topic."""
    golds: list[str] = field(default_factory=list)
    rationale: str = ""
    half: str = "eval"
    """fit or eval: which half of a fit domain's questions it belongs to (held-out domains: all eval)."""

    def held_by(self, quotation: str) -> bool:
        """Does ``quotation`` hold this question's answer?"""
        quote = norm(quotation)
        if any(g and norm(g) and f" {norm(g)} " in f" {quote} " for g in self.golds):
            return True
        if not self.rationale:
            return False
        words = [w for w in norm(self.rationale).split() if w not in _STOP] or norm(self.rationale).split()
        have = set(quote.split())
        return bool(words) and sum(w in have for w in words) / len(words) >= 0.6


@dataclass
class Domain:
    name: str
    label: str
    role: str
    documents: list[tuple[str, str, str]]
    """(collection, file name, text) of every document in the library."""
    questions: list[Question]


def member(data_dir: Path, name: str) -> Path:
    """A file of the bigbench archive, extracted once into ``data_dir``."""
    target = data_dir / name
    if target.is_file():
        return target
    data_dir.mkdir(parents=True, exist_ok=True)
    archives = sorted(data_dir.glob("bigbench-*.tar.gz"))
    if not archives:
        print("Fetching the bigbench 1.0.0 source archive (358 MB) for its evaluation sets ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "bigbench==1.0.0", "-d", str(data_dir)], check=True)  # fmt: skip
        archives = sorted(data_dir.glob("bigbench-*.tar.gz"))
    with tarfile.open(archives[0]) as tar:
        found = next(m for m in tar.getmembers() if m.name.endswith(ARCHIVE_MEMBERS[name]))
        with tar.extractfile(found) as src:
            target.write_bytes(src.read())
    return target


def load(data_dir: Path, name: str) -> Domain:
    source, coqa_source, label, role = DOMAINS[name]
    data = json.loads(member(data_dir, source).read_text())["data"]
    if coqa_source:
        return _coqa(name, label, role, [s for s in data if s["source"] == coqa_source])
    return _squad(name, label, role, data)


def _split_halves(questions: list[Question], role: str, seed: int) -> None:
    """Fit domains: every other question of each kind (in a seeded order) is for fitting."""
    if role != "fit":
        return
    for kind in ("answerable", "near-miss", "off-topic"):
        some = [q for q in questions if q.kind == kind]
        random.Random(f"{seed}-{kind}").shuffle(some)
        for i, q in enumerate(some):
            q.half = "fit" if i % 2 else "eval"


def _squad(name: str, label: str, role: str, articles: list[dict]) -> Domain:
    rng = random.Random(f"{name}-library")
    if len(articles) == 1:  # reddit: one "article" of unrelated posts; each post stands alone
        articles = [{"title": f"post-{i:04d}", "collection": "Reddit posts", "paragraphs": [p]}
                    for i, p in enumerate(articles[0]["paragraphs"])]  # fmt: skip
    articles = list(articles)
    rng.shuffle(articles)
    kept, total = [], 0
    for a in articles:
        if total >= MAX_PARAGRAPHS and name != "squad-wiki":
            break
        kept.append(a)
        total += len(a["paragraphs"])
    off = set(range(max(1, round(OFF_TOPIC_SHARE * len(kept)))))  # the first articles of the shuffle
    present = [a for i, a in enumerate(kept) if i not in off]
    # Near-miss: a paragraph of an article that keeps others, whose answers occur nowhere else.
    multi = [(ai, pi) for ai, a in enumerate(present) for pi in range(len(a["paragraphs"])) if len(a["paragraphs"]) > 1]
    if len(multi) < NEAR_MISS:  # articles of one paragraph (reddit): the post alone is removed
        multi = [(ai, pi) for ai, a in enumerate(present) for pi in range(len(a["paragraphs"]))]
    rng.shuffle(multi)
    texts = {(ai, pi): f" {norm(p['context'])} " for ai, a in enumerate(present) for pi, p in enumerate(a["paragraphs"])}
    removed: set[tuple[int, int]] = set()
    near: list[Question] = []
    for ai, pi in multi:
        if len(near) >= NEAR_MISS:
            break
        qa = rng.choice(present[ai]["paragraphs"][pi]["qas"])
        golds = [f" {norm(g['text'])} " for g in qa["answers"] if norm(g["text"])]
        if not golds or any(g in t for k, t in texts.items() if k != (ai, pi) and k not in removed for g in golds):
            continue  # the answer occurs elsewhere in the library: not a near miss
        removed.add((ai, pi))
        near.append(Question(qa["question"], "near-miss", [g["text"] for g in qa["answers"]]))
    docs = [(a.get("collection", a["title"])[:80], f"{a['title'][:60]}/{pi:03d}.txt", p["context"].strip())
            for ai, a in enumerate(present) for pi, p in enumerate(a["paragraphs"]) if (ai, pi) not in removed]
    questions = [Question(qa["question"], "answerable", [g["text"] for g in qa["answers"]])
                 for ai, a in enumerate(present) for pi, p in enumerate(a["paragraphs"]) if (ai, pi) not in removed
                 for qa in p["qas"]]  # fmt: skip
    questions += near
    questions += [Question(qa["question"], "off-topic", [g["text"] for g in qa["answers"]])
                  for i, a in enumerate(kept) if i in off for p in a["paragraphs"] for qa in p["qas"]]  # fmt: skip
    _split_halves(questions, role, 7)
    return Domain(name, label, role, docs, questions)


def _stands_alone(question: str, turn: int) -> bool:
    words = question.split()
    return turn == 1 or (len(words) >= 4 and not _LEANS_ON_EARLIER.search(question))


def _coqa(name: str, label: str, role: str, stories: list[dict]) -> Domain:
    from localreason.text import sentences

    rng = random.Random(f"{name}-library")
    stories = sorted(stories, key=lambda s: s["id"])
    rng.shuffle(stories)
    n_off = round(OFF_TOPIC_SHARE * len(stories))
    off, near_pool, intact = stories[:n_off], stories[n_off:n_off + 35], stories[n_off + 35:]
    docs, questions = [], []

    def asked(story):
        for q, a in zip(story["questions"], story["answers"]):
            if _stands_alone(q["input_text"], q["turn_id"]) and a["span_start"] >= 0:
                yield q["input_text"], a

    def golds(story, a) -> list[str]:
        short = a["input_text"].strip().rstrip(".!")
        return [short] if norm(short) not in ("yes", "no", "unknown", "") and norm(short) in norm(story) else []

    for s in intact:
        docs.append((name, f"{s['id']}.txt", s["story"]))
        questions += [Question(q, "answerable", golds(s["story"], a), a["span_text"]) for q, a in asked(s)]
    for s in near_pool:
        first = next(asked(s), None)
        if first is None:  # no question of this story stands alone with a rationale: keep it whole
            docs.append((name, f"{s['id']}.txt", s["story"]))
            continue
        q, a = first
        text = s["story"]
        lo, hi = a["span_start"], a["span_end"]
        kept = [text[b:e] for b, e in sentences(text) if e <= lo or b >= hi]
        rest = " ".join(kept)
        question = Question(q, "near-miss", golds(text, a), a["span_text"])
        stated = any(question.held_by(rest[b:e]) for b, e in sentences(rest))
        if not rest or stated or any(norm(g) in norm(rest) for g in question.golds):  # stated elsewhere too
            docs.append((name, f"{s['id']}.txt", text))
            continue
        docs.append((name, f"{s['id']}.txt", rest))
        questions.append(question)
    for s in off:
        questions += [Question(q, "off-topic", golds(s["story"], a), a["span_text"]) for q, a in asked(s)]
    _split_halves(questions, role, 7)
    return Domain(name, label, role, docs, questions)


def fingerprint(domain: Domain) -> str:
    """What a domain's library holds, as a short hash: a cached library built from other documents
    (another MAX_PARAGRAPHS, another sampling) is refused instead of trusted."""
    import hashlib

    digest = hashlib.sha256()
    for collection, fname, text in domain.documents:
        digest.update(f"{collection}\0{fname}\0{text}\0".encode())
    return digest.hexdigest()[:16]


def _check_marker(marker: Path, expected: str) -> bool:
    """True when ``marker`` exists and names ``expected``; SystemExit when it names something else."""
    if not marker.is_file():
        return False
    if marker.read_text().strip() != expected:
        raise SystemExit(f"{marker.parent} was built from other documents than this code selects; delete it "
                         "and run again.")  # fmt: skip
    return True


def write_documents(domain: Domain, folder: Path) -> None:
    """The library's documents as text files (one folder per collection), written once."""
    if _check_marker(folder / ".complete", fingerprint(domain)):
        return
    for collection, fname, text in domain.documents:
        path = folder / re.sub(r"[^\w.-]+", "_", collection) / re.sub(r"[^\w./-]+", "_", fname)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    (folder / ".complete").write_text(fingerprint(domain))


def build_library(domain: Domain, data_dir: Path, embedder):
    """The domain's library in ``data_dir/libs/<name>``, ingested once (one collection per folder).
    A file that fails to ingest stops the run: an evaluation on part of its library would mislead."""
    from localreason.config import load_settings
    from localreason.library import Library

    folder = data_dir / "docs" / domain.name
    write_documents(domain, folder)
    home = data_dir / "libs" / domain.name
    lib = Library(settings=load_settings(home), embedder=embedder)
    if not _check_marker(home / ".complete", fingerprint(domain)):
        for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
            report = lib.ingest([sub], sub.name[:80])
            if not report.ok:
                failed = ", ".join(f.path for f in report.by_status("failed")[:3])
                raise SystemExit(f"{domain.name}: ingesting {sub} failed ({report.stopped or failed}).")
        (home / ".complete").write_text(fingerprint(domain))
    return lib


def sample(domain: Domain, kind: str, n: int, half: str = "eval", seed: int = 1) -> list[Question]:
    """``n`` questions of one kind from one half (held-out domains have only the eval half), in a fixed
    random order."""
    pool = [q for q in domain.questions if q.kind == kind and q.half == half]
    rng = random.Random(f"{domain.name}-{kind}-{half}-{seed}")
    return rng.sample(pool, min(n, len(pool)))


# ---------------------------------------------------------------- self-check (python -m bench.data.qa_sets --check)


def _articles(n: int) -> list[dict]:
    """``n`` small SQuAD-format articles of three paragraphs, one phrase ("the harbour") shared by many."""
    out = []
    for a in range(n):
        paragraphs = []
        for p in range(3):
            fact = f"fact{a}x{p}"
            shared = "the harbour" if p == 0 else f"place{a}y{p}"  # "the harbour" occurs in many paragraphs
            paragraphs.append({"context": f"Article {a} paragraph {p} says {fact} near {shared}. More text here.",
                               "qas": [{"question": f"What does paragraph {p} of article {a} say?",
                                        "answers": [{"text": fact}]},
                                       {"question": f"Where is paragraph {p} of article {a}?",
                                        "answers": [{"text": shared}]}]})  # fmt: skip
        out.append({"title": f"Article {a}", "paragraphs": paragraphs})
    return out


def check_squad_sets() -> None:
    """A near-miss question's answer is in no document of its library, an off-topic question's article is not
    in it, an answerable one's answer is, and a fit domain's halves are disjoint."""
    domain = _squad("squad-wiki", "test", "fit", _articles(30))
    library = " ".join(norm(text) for _, _, text in domain.documents)
    near = [q for q in domain.questions if q.kind == "near-miss"]
    off = [q for q in domain.questions if q.kind == "off-topic"]
    assert near and off
    for q in near:
        assert not any(f" {norm(g)} " in f" {library} " for g in q.golds), q
    titles = {c for c, _, _ in domain.documents}
    assert all(q.text.split(" of ")[-1].rstrip("?").replace("article", "Article") not in titles for q in off)
    answerable = [q for q in domain.questions if q.kind == "answerable"]
    assert all(any(f" {norm(g)} " in f" {library} " for g in q.golds) for q in answerable)
    fit = {q.text for q in domain.questions if q.half == "fit"}
    assert fit and fit.isdisjoint({q.text for q in domain.questions if q.half == "eval"})


def check_held_by() -> None:
    """held_by reads the gold text, or most of the rationale's content words."""
    q = Question("Who created Mickey?", "answerable", ["Walt Disney"], "A man called Walt Disney made a mouse")
    assert q.held_by("A man called Walt Disney made a cartoon mouse.")
    assert not q.held_by("Mickey was a clean mouse.")
    r = Question("Did he do silly things?", "answerable", [], "people did not want Mickey to do silly things")
    assert r.held_by("They said that people did not want Mickey to do silly things.")
    assert not r.held_by("Mickey made some mistakes.")


def main() -> int:
    import argparse

    ap = argparse.ArgumentParser(description="The evaluation sets keep their promises (no data needed).")
    ap.add_argument("--check", action="store_true", help="check the sets' rules on small made-up articles")
    args = ap.parse_args()
    if not args.check:
        ap.print_help()
        return 2
    for name, check in (("squad sets", check_squad_sets), ("held_by", check_held_by)):
        check()
        print(f"{name}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
