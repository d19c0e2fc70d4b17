#!/usr/bin/env python3
"""Sources that disagree (issue #40): a conflict set built on the bundled samples, and the same questions on the
plain samples as the ordinary set, each asked with disagreement detection (what ships) and without it (today's
behaviour: ``Calibration.disagree_candidates = 0``), in one run, with the real models.

The conflict set: each question of QUESTIONS (written for the three sample articles, its gold answer verbatim in
the article) is asked of its own library: the samples, and a near-copy of the article that holds the answer,
titled "... (revised)", in which the gold answer is replaced by the gold answer of the next question of the same
kind (a date by a date, a name by a name). The two documents differ in that answer only.

Reported, per run:
- both sides: the verified quotations hold the gold answer from the article and the replacement from its copy;
- named: a gap says the sources disagree and names both documents;
- phrase leads: a single answer phrase leads the answer although the sources disagree;
- first holds (conflict set): the first statement holds the gold answer or its replacement;
and on the ordinary set (the plain samples, no copies):
- false alarm: an answer claims a disagreement (a side marked, or any gap that says the sources disagree);
- first holds: the first statement's quotations hold the gold answer;
- ask p50 / p95 over every ordinary question, both runs alternating question by question.

The evaluation sets of bench/data/qa_sets.py (the bigbench archive) are the set the issue asks for (fit halves,
a held-out kind of text, NYT); when this was written the archive could not be fetched here, so this set is small,
written for the samples, and in-sample for the rules it checks: read its figures as a check, not a measure.

    python -m bench.quality.conflicts                 # every question, both runs
    python -m bench.quality.conflicts --questions 6   # a smoke run
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

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


def build(folder: Path, files: dict[str, str], embedder):
    from localreason.config import load_settings
    from localreason.library import Library

    docs = folder / "docs"
    docs.mkdir(parents=True)
    for name, text in files.items():
        (docs / name).write_text(text, encoding="utf-8")
    lib = Library(settings=load_settings(folder / "home"), embedder=embedder)
    lib.ingest([docs], "samples")
    return lib


def ask(lib, question: str, calibration, budget: int):
    from localreason.reason import reason

    start = time.perf_counter()
    a = reason(lib, question, generator=lib.generator, max_tokens=budget, reader=lib.reader, calibration=calibration)
    return a, time.perf_counter() - start


def claims_disagreement(a) -> bool:
    return any(s.side is not None for s in a.statements) or any("disagree" in g.lower() for g in a.gaps)


def conflict_record(a, gold: str, other: str, title: str) -> dict:
    quoted = [(r.quotation, r.document_id) for s in a.statements for r in s.references]
    docs = {c.document_id: c.document_title for c in a.citations}
    from_orig = any(gold in q and docs.get(d, "") == title for q, d in quoted)
    from_twin = any(other in q and docs.get(d, "").endswith("(revised)") for q, d in quoted)
    first = " ".join(r.quotation for r in a.statements[0].references) if a.statements else ""
    named = any("sources disagree" in g and title in g and f"{title} (revised)" in g for g in a.gaps)
    return {"both": from_orig and from_twin, "named": named, "phrase": bool(a.statements and a.statements[0].phrase),
            "first": gold in first or other in first}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=len(QUESTIONS))
    ap.add_argument("--budget", type=int, default=None, help="evidence budget (default: the answer_budget setting)")
    args = ap.parse_args()

    from localreason.config import load_settings
    from localreason.demo import samples_dir
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model
    from localreason.reason.calibration import DEFAULT

    settings = load_settings(Path(tempfile.mkdtemp()) / "probe")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    budget = args.budget or settings.answer_budget
    runs = {"today (no detection)": replace(DEFAULT, disagree_candidates=0), "now": DEFAULT}
    samples = {p.name: p.read_text(encoding="utf-8") for p in samples_dir().glob("*.md") if p.name != "LICENSES.md"}
    root = Path(tempfile.mkdtemp(prefix="conflicts-"))
    chosen = list(range(min(args.questions, len(QUESTIONS))))
    plain = build(root / "plain", samples, embedder)
    ask(plain, QUESTIONS[0][1], DEFAULT, budget)  # warm the models up
    conflict = {name: [] for name in runs}
    ordinary = {name: [] for name in runs}
    seconds = {name: [] for name in runs}
    for n, i in enumerate(chosen):
        file, question, gold, _ = QUESTIONS[i]
        other = replacement(i)
        title = samples[file].partition("\n")[0].lstrip("# ").strip()
        lib = build(root / f"q{i}", {**samples, file.replace(".md", "-revised.md"): twin(samples[file], gold, other)},
                    embedder)  # fmt: skip
        order = list(runs.items()) if n % 2 == 0 else list(reversed(runs.items()))
        for name, cal in order:
            a, _ = ask(lib, question, cal, budget)
            conflict[name].append({**conflict_record(a, gold, other, title), "q": question})
            b, t = ask(plain, question, cal, budget)
            first = " ".join(r.quotation for r in b.statements[0].references) if b.statements else ""
            ordinary[name].append({"alarm": claims_disagreement(b), "first": gold in first, "q": question})
            seconds[name].append(t)
        lib.close()
        print(f"  {n + 1}/{len(chosen)} {question}", flush=True)
    plain.close()
    report(runs, conflict, ordinary, seconds)


def report(runs, conflict, ordinary, seconds) -> None:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())  # fmt: skip
    n = len(next(iter(conflict.values())))
    print(f"\n{n} questions; CPU: {cpu}\n")
    print("| run | both sides quoted | disagreement named | a single phrase leads | first holds (conflict) "
          "| false alarm (ordinary) | first holds (ordinary) | ask p50 (ordinary) | ask p95 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in runs:
        c, o, s = conflict[name], ordinary[name], sorted(seconds[name])

        def share(rows, key):
            return sum(r[key] for r in rows) / len(rows)

        p95 = s[min(len(s) - 1, int(0.95 * len(s)))]
        print(f"| {name} | {share(c, 'both'):.3f} | {share(c, 'named'):.3f} | {share(c, 'phrase'):.3f} | "
              f"{share(c, 'first'):.3f} | {share(o, 'alarm'):.3f} | {share(o, 'first'):.3f} | "
              f"{statistics.median(s):.2f} s | {p95:.2f} s |")
    today, now = (statistics.median(seconds[k]) for k in runs)
    print(f"\nask p50 now / today: {now / today:.2f}x (same run, alternating)")
    last = list(runs)[-1]
    calm = [dict(r, alarm=not r["alarm"]) for r in ordinary[last]]  # a miss here is an alarm
    for what, rows, key in (("not both quoted", conflict[last], "both"), ("not named", conflict[last], "named"),
                            ("false alarm", calm, "alarm")):  # fmt: skip
        missed = [r["q"] for r in rows if not r[key]]
        if missed:
            print(f"{last}, {what}: " + "; ".join(missed))


if __name__ == "__main__":
    main()
