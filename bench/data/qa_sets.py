"""Question sets for calibrating and evaluating `reason` on more than one kind of text.

Every set is read from the shared SQuAD-format files (bench/data/qa.py: ``--qa-data``, $LOCALREASON_QA_DATA or
../shared/data/qa; nothing is downloaded):

- squad-dev: SQuAD 1.1 dev (Wikipedia) with SQuAD 2.0 dev's unanswerable questions, one pool (2.0 dev's articles
  are 1.1 dev's); new_wiki: SQuAD-shifts' newer Wikipedia articles; reddit: SQuAD-shifts' Reddit posts; amazon:
  SQuAD-shifts' Amazon product reviews. One document per paragraph, one collection per article; an answer is held
  by a quotation that contains a gold answer text.

Each domain is one library, built so that one library serves every kind of question:
- answerable: asked about text that is in the library;
- near-miss: the paragraph the question was written on is removed and the rest of the article stays; no gold
  answer occurs anywhere else in the library. The reddit posts are independent one-paragraph "articles", so there
  the whole post goes and its near-miss questions behave like off-topic ones;
- off-topic: whole articles left out of the library;
- unanswerable (squad-dev only): SQuAD 2.0's questions written against a paragraph that is in the library but
  does not answer them (the hardest "not in my documents" case).

DOMAINS says which domains the constants may be fitted on (fit) and which are kept out of every fit (held out: the
kinds of text reddit and product reviews). A fit domain is split by article (bench/data/qa.py ``article_half``)
into a fitting half and an evaluation half; every question of an article, whatever its kind, is on its side.
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.data import qa

# name: (what is read, kind of text, fit or held out)
DOMAINS = {
    "squad-dev": ("squad-dev pool", "Wikipedia (SQuAD 1.1 dev + 2.0 dev)", "fit"),
    "new_wiki": ("new_wiki", "Wikipedia, newer articles (SQuAD-shifts)", "fit"),
    "reddit": ("reddit", "reddit posts (SQuAD-shifts)", "held out"),
    "amazon": ("amazon", "product reviews (SQuAD-shifts)", "held out"),
}
FIT = [d for d, v in DOMAINS.items() if v[2] == "fit"]
HELD_OUT = [d for d, v in DOMAINS.items() if v[2] == "held out"]
KINDS = ("answerable", "near-miss", "off-topic", "unanswerable")

MAX_PARAGRAPHS = 1000
"""SQuAD-format libraries hold at most this many paragraphs (SQuAD dev keeps all its 48 articles)."""
NEAR_MISS = 80
OFF_TOPIC_SHARE = 0.12
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
    """answerable, near-miss, off-topic or unanswerable (KINDS)."""
    golds: list[str] = field(default_factory=list)
    half: str = "eval"
    """fit or eval: its article's half in a fit domain (held-out domains: all eval)."""
    article: str = ""
    """The title of the article it was written on."""

    def held_by(self, quotation: str) -> bool:
        """Does ``quotation`` hold this question's answer (one of the gold texts, as whole words)?"""
        quote = f" {norm(quotation)} "
        return any(g and norm(g) and f" {norm(g)} " in quote for g in self.golds)


@dataclass
class Domain:
    name: str
    label: str
    role: str
    documents: list[tuple[str, str, str]]
    """(collection, file name, text) of every document in the library."""
    questions: list[Question]


def load(name: str, qa_data: Path | str | None = None) -> Domain:
    """Domain ``name`` (a key of DOMAINS), read from the QA data folder (bench/data/qa.py)."""
    source, label, role = DOMAINS[name]
    articles = qa.squad_dev_pool(qa_data) if source == "squad-dev pool" else qa.articles(source, qa_data)
    return _squad(name, label, role, articles)


def _split_halves(questions: list[Question], role: str, name: str) -> None:
    """Fit domains: each question takes its article's half (qa.article_half); held-out domains are all eval."""
    if role != "fit":
        return
    halves = qa.article_half([q.article for q in questions], f"{name}-halves")
    for q in questions:
        q.half = halves[q.article]


def _squad(name: str, label: str, role: str, articles: list[dict]) -> Domain:
    rng = random.Random(f"{name}-library")
    if len(articles) == 1:  # reddit: one "article" of unrelated posts; each post stands alone
        articles = [{"title": f"post-{i:04d}", "collection": "Reddit posts", "paragraphs": [p]}
                    for i, p in enumerate(articles[0]["paragraphs"])]  # fmt: skip
    articles = sorted(articles, key=lambda a: a["title"])
    rng.shuffle(articles)
    kept, total = [], 0
    for a in articles:
        if total >= MAX_PARAGRAPHS and name != "squad-dev":
            break
        kept.append(a)
        total += len(a["paragraphs"])
    off = set(range(max(1, round(OFF_TOPIC_SHARE * len(kept)))))  # the first articles of the shuffle
    present = [a for i, a in enumerate(kept) if i not in off]
    removed, near = _near_misses(present, rng)
    docs = [(a.get("collection", a["title"])[:80], f"{a['title'][:60]}/{pi:03d}.txt", p["context"].strip())
            for ai, a in enumerate(present) for pi, p in enumerate(a["paragraphs"]) if (ai, pi) not in removed]
    questions = [Question(qa["question"], "unanswerable" if qa.get("is_impossible") else "answerable",
                          [g["text"] for g in qa["answers"]], article=a["title"])
                 for ai, a in enumerate(present) for pi, p in enumerate(a["paragraphs"]) if (ai, pi) not in removed
                 for qa in p["qas"]]  # fmt: skip
    questions += near
    questions += [Question(qa["question"], "off-topic", [g["text"] for g in qa["answers"]], article=a["title"])
                  for i, a in enumerate(kept) if i in off for p in a["paragraphs"] for qa in _answerable(p)]  # fmt: skip
    _split_halves(questions, role, name)
    return Domain(name, label, role, docs, questions)


def _answerable(paragraph: dict) -> list[dict]:
    return [qa for qa in paragraph["qas"] if not qa.get("is_impossible")]


def _near_misses(present: list[dict], rng: random.Random) -> tuple[set[tuple[int, int]], list[Question]]:
    """NEAR_MISS paragraphs to remove, each of an article that keeps others, and one question of each whose gold
    answers occur nowhere else in the library (articles of one paragraph, reddit: the post alone is removed)."""
    multi = [(ai, pi) for ai, a in enumerate(present) for pi in range(len(a["paragraphs"])) if len(a["paragraphs"]) > 1]
    if len(multi) < NEAR_MISS:
        multi = [(ai, pi) for ai, a in enumerate(present) for pi in range(len(a["paragraphs"]))]
    rng.shuffle(multi)
    texts = {(ai, pi): f" {norm(p['context'])} " for ai, a in enumerate(present) for pi, p in enumerate(a["paragraphs"])}
    removed: set[tuple[int, int]] = set()
    near: list[Question] = []
    for ai, pi in multi:
        if len(near) >= NEAR_MISS:
            break
        asked = _answerable(present[ai]["paragraphs"][pi])
        if not asked:
            continue
        qa = rng.choice(asked)
        golds = [f" {norm(g['text'])} " for g in qa["answers"] if norm(g["text"])]
        if not golds or any(g in t for k, t in texts.items() if k != (ai, pi) and k not in removed for g in golds):
            continue  # the answer occurs elsewhere in the library: not a near miss
        removed.add((ai, pi))
        near.append(Question(qa["question"], "near-miss", [g["text"] for g in qa["answers"]],
                             article=present[ai]["title"]))  # fmt: skip
    return removed, near


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
                                        "answers": [{"text": shared}]},
                                       {"question": f"Who wrote paragraph {p} of article {a}?", "answers": [],
                                        "is_impossible": True}]})  # fmt: skip
        out.append({"title": f"Article {a}", "paragraphs": paragraphs})
    return out


def check_squad_sets() -> None:
    """A near-miss question's answer is in no document of its library, an off-topic question's article is not
    in it, an answerable one's answer is, an unanswerable one's paragraph is, and a fit domain's halves split it by
    article (every question of an article on one side)."""
    domain = _squad("squad-dev", "test", "fit", _articles(30))
    library = " ".join(norm(text) for _, _, text in domain.documents)
    near, off, answerable, unanswerable = ([q for q in domain.questions if q.kind == k]
                                           for k in ("near-miss", "off-topic", "answerable", "unanswerable"))
    assert near and off and answerable and unanswerable
    for q in near:
        assert not any(f" {norm(g)} " in f" {library} " for g in q.golds), q
    titles = {c for c, _, _ in domain.documents}
    assert all(q.article not in titles for q in off) and all(q.article in titles for q in answerable)
    assert all(any(f" {norm(g)} " in f" {library} " for g in q.golds) for q in answerable)
    for q in unanswerable:  # asked about a paragraph that is in the library
        para = q.text.removeprefix("Who wrote paragraph ").split(" of ")[0]
        assert f"article {q.article.split()[-1]} paragraph {para}" in library, q
    sides = {}
    for q in domain.questions:
        sides.setdefault(q.article, set()).add(q.half)
    assert all(len(h) == 1 for h in sides.values()) and {h for hs in sides.values() for h in hs} == {"fit", "eval"}


def check_held_by() -> None:
    """held_by reads a gold text as whole words."""
    q = Question("Who created Mickey?", "answerable", ["Walt Disney"])
    assert q.held_by("A man called Walt Disney made a cartoon mouse.")
    assert not q.held_by("Mickey was a clean mouse.") and not q.held_by("Walt Disneyland opened.")


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
