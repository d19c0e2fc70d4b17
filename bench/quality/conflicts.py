#!/usr/bin/env python3
"""Sources that disagree (issue #40): conflict sets built on the shared SQuAD-format sets (and on the bundled
samples), and the same questions without the conflict as the ordinary set, each asked with disagreement
detection (what ships) and without it (today's behaviour: ``Calibration.disagree_candidates = 0``), in one run,
with the real models.

The conflict set is the near-twin construction the issue asks for. Each question is asked of a library that
holds its article and a near-copy of that article titled "... (revised)", in which the gold answer is replaced
by the gold answer of another question of the same kind (a date by a date, a name by a name: the kind the
question asks for, localreason/reason/answer_type.py, which the phrase must look like too). The two documents
differ in that answer only. The ordinary set: the same questions asked of the library without the copy.

- ``--set squad`` (the default): the questions and articles are bench/data/qa_sets.py's, read from the shared
  SQuAD-format files (``--qa-data``, bench/data/qa.py): per domain, answerable questions of the fit half of the
  fit domains (squad-dev, new_wiki) and of the held-out domains (reddit posts, Amazon reviews), one question an
  article, whose gold answer occurs once in its article and looks like what the question asks for. A domain's
  library holds the articles of its questions, one plain-text document each ("one article" is a post on reddit,
  a product's reviews on Amazon). Nothing here was fitted on any of them: the detector's constants are rules set
  by reading. The ordinary set on the held-out domains stands in for the issue's NYT false-alarm rate (the NYT
  set is gone).
- ``--set samples``: QUESTIONS, written for the three sample articles (the set of docs/benchmarks.md's first
  figures): in-sample for the rules it checks, small and easy: a check, not a measure.
- ``--set opposing`` (issue #53): bench/data/opposing.json's yes/no questions, each with two sides in their own
  words: a real paragraph of the shared sets (referenced there, read from ``--qa-data``) and either a passage
  written for the set or another real paragraph (two reviews that disagree). The library holds every case's first
  side, one document each; the other side is the "copy" added for its question. Here "both sides quoted" means
  both stance sentences (the cases' quotes) are quoted, and the ordinary set asks without the other side. Its two
  parts, "fit" (SQuAD dev's fit half) and "held out" (everything else), are reported apart.

Reported, per set and run:
- both sides: the verified quotations hold the gold answer from the article and the replacement from its copy;
- named: a gap says the sources disagree and names both documents;
- phrase leads: a single answer phrase leads the answer although the sources disagree;
- first holds (conflict set): the first statement holds the gold answer or its replacement;
and on the ordinary set (no copies):
- false alarm: an answer claims a disagreement (a side marked, or any gap that says the sources disagree);
- first holds: the first statement's quotations hold the gold answer;
- ask p50 / p95 over every ordinary question, both runs alternating question by question.

    python -m bench.quality.conflicts                                   # 12 questions per domain, both runs
    python -m bench.quality.conflicts --domains reddit --questions 2   # a smoke run
    python -m bench.quality.conflicts --set samples                     # the samples' 24 questions
    python -m bench.quality.conflicts --set opposing                    # opposing passages, both parts
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from bench import cpu_name
from bench.data import qa, qa_sets

QUESTIONS = [  # (sample file, question, gold answer as the article writes it, kind)
    ("apollo_program.md", "When did the Apollo program run?", "1961 to 1972", "time"),
    ("apollo_program.md", "In what year was the first manned flight of Apollo?", "1968", "time"),
    ("apollo_program.md", "How much lunar rock and soil did the Apollo program return to Earth?", "842 pounds",
     "number"),
    ("apollo_program.md", "Who named the Apollo program?", "Abe Silverstein", "person"),
    ("apollo_program.md", "Which company was selected as the LEM contractor?", "Grumman", "named"),
    ("apollo_program.md", "How tall was the Saturn V?", "363 feet", "number"),
    ("apollo_program.md", "Who was the first NASA scientist astronaut to fly in space?", "Harrison Schmitt", "person"),
    ("apollo_program.md", "When did Yuri Gagarin become the first person to fly in space?", "April 12, 1961", "time"),
    ("apollo_program.md", "Who led NASA's in-house spacecraft design studies?", "Maxime Faget", "person"),
    ("apollo_program.md", "Where was the site of the Manned Spacecraft Center chosen?", "Houston, Texas", "place"),
    ("amazon_rainforest.md", "How large is the Amazon basin?", "7,000,000 square kilometres", "number"),
    ("amazon_rainforest.md", "What share of the Amazon rainforest is in Brazil?", "60%", "number"),
    ("amazon_rainforest.md", "How many individual trees does the Amazon rainforest have?", "390 billion", "number"),
    ("amazon_rainforest.md", "Who was the first European to travel the length of the Amazon River?",
     "Francisco de Orellana", "person"),
    ("amazon_rainforest.md", "How many people may have lived in the Amazon region in AD 1500?", "5 million", "number"),
    ("amazon_rainforest.md", "Which satellite measured the dust blown from the Sahara to the Amazon?", "CALIPSO",
     "named"),
    ("black_death.md", "Where did the Black Death originate?", "Central Asia", "place"),
    ("black_death.md", "How much of Europe's population did the Black Death kill?", "30–60%", "number"),
    ("black_death.md", "When did the plague reach Crimea?", "1343", "time"),
    ("black_death.md", "When was the plague introduced in Norway?", "1349", "time"),
    ("black_death.md", "Where was plague first introduced to Europe?", "Kaffa", "place"),
    ("black_death.md", "Who led the Mongol army during the siege of Kaffa?", "Jani Beg", "person"),
    ("black_death.md", "When was the medieval epidemic first called the Black Death in England?", "1823", "time"),
    ("black_death.md", "Who claimed that the Latin name atra mors first appeared in 1631?", "Gasquet", "person"),
]  # fmt: skip


TYPED = ("time", "number", "person", "place", "named")
"""The kinds of answer (answer_type.asked_kind) a conflict is built for: one answer swapped for another of its kind."""
SEARCHED = 4
"""Candidates gathered per question wanted: each needs another of its kind for its replacement."""


@dataclass
class Case:
    """One question of a conflict set: its gold answer in the document ``file``, and the "(revised)" copy (``twin``:
    file name, text) where ``other`` replaces it. The documents' titles are the library's (a Markdown file's first
    heading, a plain-text file's name)."""

    question: str
    gold: str
    other: str
    file: str
    twin: tuple[str, str]


def replacement(i: int) -> str:
    """The gold answer of the next question of the same kind as question ``i`` (cyclically)."""
    kind = QUESTIONS[i][3]
    same = [k for k, q in enumerate(QUESTIONS) if q[3] == kind]
    return QUESTIONS[same[(same.index(i) + 1) % len(same)]][2]


def twin(text: str, gold: str, other: str) -> str:
    """The article as its "(revised)" copy: its first heading marked, the first occurrence of ``gold`` replaced."""
    head, _, rest = text.partition("\n")
    assert gold in rest, gold
    return head + " (revised)\n" + rest.replace(gold, other, 1)


def sample_set(n: int) -> tuple[dict[str, str], list[Case]]:
    """The bundled samples (file -> text) and the first ``n`` of QUESTIONS as cases."""
    from localreason.demo import samples_dir

    samples = {p.name: p.read_text(encoding="utf-8") for p in samples_dir().glob("*.md") if p.name != "LICENSES.md"}
    cases = []
    for i in range(min(n, len(QUESTIONS))):
        file, question, gold, _ = QUESTIONS[i]
        other = replacement(i)
        cases.append(Case(question, gold, other, file, (file.replace(".md", "-revised.md"),
                                                         twin(samples[file], gold, other))))  # fmt: skip
    return samples, cases


def article_file(i: int, article: dict) -> tuple[str, str, str]:
    """(file name, title, text) of an article as a plain-text document: its title underlined, then its paragraphs
    (plain text: a post or a review is not read as Markdown)."""
    title = article["title"].replace("_", " ")
    body = "\n\n".join(p["context"].strip() for p in article["paragraphs"])
    stem = re.sub(r"[^\w.-]+", "_", article["title"])[:60]
    name = f"{i:03d}-{stem}.txt"
    return name, title, f"{title}\n{'=' * max(3, len(title))}\n\n{body}\n"


def candidate(q, article: dict) -> tuple[str, str] | None:
    """(kind, gold) when ``q`` can carry a conflict: it asks for a kind of TYPED, and one of its gold answers (the
    shortest) looks like that kind and occurs exactly once in its article (so the copy differs in that answer only)."""
    from localreason.reason.answer_type import agrees, asked_kind

    kind = asked_kind(q.text)
    if kind not in TYPED:
        return None
    text = "\n\n".join(p["context"] for p in article["paragraphs"])
    golds = sorted({g.strip() for g in q.golds if g.strip()}, key=lambda g: (len(g), g))  # the shortest that fits
    gold = next((g for g in golds if agrees(q.text, g) and text.count(g) == 1), None)
    return (kind, gold) if gold else None


def conflict_cases(questions: list, articles: dict[str, dict], n: int) -> tuple[dict[str, str], list[Case]]:
    """The documents (file -> text) and up to ``n`` cases from ``questions`` (in their order, one an article):
    each gold answer replaced by the gold answer of the next candidate of the same kind, when that answer is
    another text, looks like the kind too and does not occur in the article."""
    from localreason.reason.answer_type import agrees

    pool, used = [], set()
    for q in questions:
        if len(pool) >= SEARCHED * n:
            break
        found = candidate(q, articles[q.article]) if q.article not in used else None
        if found:
            used.add(q.article)
            pool.append((q, *found))
    files, cases = {}, []
    for i, (q, kind, gold) in enumerate(pool):
        same = [p for p in pool if p[1] == kind]
        other = same[(same.index(pool[i]) + 1) % len(same)][2]
        name, title, text = article_file(len(files), articles[q.article])
        if len(cases) >= n or qa_sets.norm(other) == qa_sets.norm(gold) or other in text or not agrees(q.text, other):
            continue
        files[name] = text
        cases.append(Case(q.text, gold, other, name, (name.replace(".txt", "-revised.txt"), twin(text, gold, other))))
    return files, cases


def squad_set(name: str, qa_data, n: int) -> tuple[dict[str, str], list[Case]]:
    """Domain ``name``'s conflict set: answerable questions of its fit half (fit domains) or of its questions
    (held-out domains), in qa_sets.sample's fixed order."""
    from bench.data.squad import kind_articles

    domain = qa_sets.load(name, qa_data)
    half = "fit" if domain.role == "fit" else "eval"
    questions = qa_sets.sample(domain, "answerable", len(domain.questions), half)
    articles = {a["title"]: a for a in kind_articles(name, qa_data)}
    return conflict_cases(questions, articles, n)


OPPOSING = Path(__file__).resolve().parents[1] / "data" / "opposing.json"
"""Issue #53's opposing passages (bench/data/check_opposing.py checks them): a yes/no question, a real paragraph of
the shared sets that takes one side (referenced, read from the shared folder), and a passage on the other side:
written for the set in its own words ("written") or another real paragraph ("natural")."""


def _document(title: str, text: str) -> str:
    return f"{title}\n{'=' * max(3, len(title))}\n\n{text.strip()}\n"


def opposing_set(qa_data, part: str | None = None) -> tuple[dict[str, str], list[Case]]:
    """The documents (file -> text: each case's first side, a paragraph of its own) and the cases, whose "copy" is
    the other side's document; ``gold`` and ``other`` are the two sides' stance sentences. ``part``: "fit" or
    "held out" only."""
    import json

    chosen = [c for c in json.loads(OPPOSING.read_text(encoding="utf-8")) if part in (None, c["part"])]
    articles: dict[str, dict[str, dict]] = {}

    def paragraph(ref: dict) -> str:
        if ref["domain"] not in articles:
            articles[ref["domain"]] = {a["title"]: a for a in qa.articles(ref["domain"], qa_data)}
        return articles[ref["domain"]][ref["title"]]["paragraphs"][ref["paragraph"]]["context"]

    files, cases = {}, []
    for c in chosen:
        a, b = c["a"], c["b"]
        name = f"{c['id']}-a.txt"
        files[name] = _document(f"{a['title'].replace('_', ' ')} ({c['id']})", paragraph(a))
        if "text" in b:
            other = _document(b["title"], b["text"])
        else:
            other = _document(f"{b['title'].replace('_', ' ')} ({c['id']}, {b['paragraph']})", paragraph(b))
        cases.append(Case(c["question"], a["quote"], b["quote"], name, (f"{c['id']}-b.txt", other)))
    return files, cases


def build(folder: Path, files: dict[str, str], embedder, collection: str):
    """A library of ``files`` (name -> text), one collection."""
    from localreason.config import load_settings
    from localreason.library import Library

    docs = folder / "docs"
    docs.mkdir(parents=True)
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    lib = Library(settings=load_settings(folder / "home"), embedder=embedder)
    lib.ingest([docs], collection)
    return lib


def with_twin(lib, folder: Path, case: Case, collection: str):
    """``case``'s "(revised)" copy ingested into ``lib`` (its collection); returns the document."""
    folder.mkdir(parents=True)
    path = folder / case.twin[0]
    path.write_text(case.twin[1], encoding="utf-8")
    lib.ingest([path], collection)
    return next(d for d in lib.documents() if d.source_path == str(path.resolve()))


def ask(lib, question: str, calibration, budget: int):
    from localreason.reason import reason

    start = time.perf_counter()
    a = reason(lib, question, generator=lib.generator, max_tokens=budget, reader=lib.reader, calibration=calibration)
    return a, time.perf_counter() - start


def claims_disagreement(a) -> bool:
    return any(s.side is not None for s in a.statements) or any("disagree" in g.lower() for g in a.gaps)


def conflict_record(a, gold: str, other: str, title: str, twin_title: str) -> dict:
    """What one conflict-set answer did: both sides quoted, the disagreement named (both documents' titles in the
    gap), a phrase leading, the first statement holding either answer."""
    quoted = [(r.quotation, r.document_id) for s in a.statements for r in s.references]
    docs = {c.document_id: c.document_title for c in a.citations}
    from_orig = any(gold in q and docs.get(d, "") == title for q, d in quoted)
    from_twin = any(other in q and docs.get(d, "") == twin_title for q, d in quoted)
    first = " ".join(r.quotation for r in a.statements[0].references) if a.statements else ""
    named = any("sources disagree" in g and title in g and twin_title in g for g in a.gaps)
    return {"both": from_orig and from_twin, "named": named, "phrase": bool(a.statements and a.statements[0].phrase),
            "first": gold in first or other in first}  # fmt: skip


def run_set(lib, root: Path, cases: list[Case], runs: dict, budget: int, collection: str) -> dict:
    """Each case asked with each run of ``runs`` (their order alternating case by case): of ``lib`` with the case's
    copy added (the conflict set), then of ``lib`` as it was (the ordinary set). {"conflict", "ordinary",
    "seconds"}: run -> records (seconds: the ordinary asks')."""
    out = {part: {name: [] for name in runs} for part in ("conflict", "ordinary", "seconds")}
    titles = {Path(d.source_path).name: d.title for d in lib.documents()}
    for n, case in enumerate(cases):
        order = list(runs.items()) if n % 2 == 0 else list(reversed(runs.items()))
        copy = with_twin(lib, root / f"twin-{n}", case, collection)
        for name, cal in order:
            a, _ = ask(lib, case.question, cal, budget)
            record = conflict_record(a, case.gold, case.other, titles[case.file], copy.title)
            out["conflict"][name].append({**record, "q": case.question})
        lib.remove(copy.id)
        for name, cal in order:
            b, t = ask(lib, case.question, cal, budget)
            first = " ".join(r.quotation for r in b.statements[0].references) if b.statements else ""
            out["ordinary"][name].append({"alarm": claims_disagreement(b), "first": case.gold in first,
                                          "q": case.question})  # fmt: skip
            out["seconds"][name].append(t)
        print(f"  {n + 1}/{len(cases)} {case.question}", flush=True)
    return out


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", choices=("squad", "samples", "opposing"), default="squad",
                    help="squad: the shared sets' questions and articles; samples: QUESTIONS on the bundled samples; "
                         "opposing: bench/data/opposing.json's yes/no questions, two sides in their own "
                         "words")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--domains", nargs="+", choices=list(qa_sets.DOMAINS), default=list(qa_sets.DOMAINS),
                    help="--set squad: the domains asked")  # fmt: skip
    ap.add_argument("--questions", type=int, default=None,
                    help=f"questions per domain (--set squad, default 12) or in all (--set samples, default "
                         f"{len(QUESTIONS)})")  # fmt: skip
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="cache folder: the run's libraries go into a new folder under it (default: the system's "
                         "temporary folder)")  # fmt: skip
    ap.add_argument("--budget", type=int, default=None, help="evidence budget (default: the answer_budget setting)")
    return ap.parse_args()


def main() -> None:
    args = arguments()
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model
    from localreason.reason.calibration import DEFAULT

    if args.data_dir:
        args.data_dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="conflicts-", dir=args.data_dir))
    settings = load_settings(root / "probe")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    budget = args.budget or settings.answer_budget
    runs = {"today (no detection)": replace(DEFAULT, disagree_candidates=0), "now": DEFAULT}
    if args.set == "samples":
        sets = {"samples": sample_set(args.questions or len(QUESTIONS))}
    elif args.set == "opposing":
        sets = {f"opposing, {part}": opposing_set(args.qa_data, part) for part in ("fit", "held out")}
        sets = {k: (files, cases[:args.questions] if args.questions else cases) for k, (files, cases) in sets.items()}
    else:
        sets = {name: squad_set(name, args.qa_data, args.questions or 12) for name in args.domains}
    results, warm = {}, False
    for label, (files, cases) in sets.items():
        print(f"{label}: {len(cases)} questions on {len(files)} documents", flush=True)
        if not cases:
            continue
        lib = build(root / label, files, embedder, label)
        if not warm:  # warm the models up
            ask(lib, cases[0].question, DEFAULT, budget)
            warm = True
        results[label] = run_set(lib, root / label, cases, runs, budget, label)
        lib.close()
    report(runs, results)


def report(runs, results: dict[str, dict]) -> None:
    """One table row per set and run (and, with several sets, the questions of all pooled), then the questions the
    shipped run missed."""
    if len(results) > 1:
        results = {**results, "all": {part: {name: [r for res in results.values() for r in res[part][name]]
                                             for name in runs} for part in ("conflict", "ordinary", "seconds")}}
    print(f"\nCPU: {cpu_name()}\n")
    print("| set | questions | run | both sides quoted | disagreement named | a single phrase leads | first holds "
          "(conflict) | false alarm (ordinary) | first holds (ordinary) | ask p50 (ordinary) | ask p95 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, res in results.items():
        for name in runs:
            c, o, s = res["conflict"][name], res["ordinary"][name], sorted(res["seconds"][name])

            def share(rows, key):
                return sum(r[key] for r in rows) / len(rows)

            p95 = s[min(len(s) - 1, int(0.95 * len(s)))]
            print(f"| {label} | {len(c)} | {name} | {share(c, 'both'):.3f} | {share(c, 'named'):.3f} | "
                  f"{share(c, 'phrase'):.3f} | {share(c, 'first'):.3f} | {share(o, 'alarm'):.3f} | "
                  f"{share(o, 'first'):.3f} | {statistics.median(s):.2f} s | {p95:.2f} s |")  # fmt: skip
    today, now = (statistics.median([t for res in results.values() for t in res["seconds"][k]]) for k in runs)
    print(f"\nask p50 now / today: {now / today:.2f}x (same run, alternating)")
    last = list(runs)[-1]
    for label, res in results.items():
        calm = [dict(r, alarm=not r["alarm"]) for r in res["ordinary"][last]]  # a miss here is an alarm
        for what, rows, key in (("not both quoted", res["conflict"][last], "both"), ("not named", res["conflict"][last],
                                "named"), ("false alarm", calm, "alarm")):  # fmt: skip
            missed = [r["q"] for r in rows if not r[key]]
            if missed and label != "all":
                print(f"{label}, {last}, {what}: " + "; ".join(missed))


if __name__ == "__main__":
    main()
