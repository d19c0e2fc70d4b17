#!/usr/bin/env python3
"""The headline phrase's second reading, chosen on what `reason` itself shows, one kind of text at a time.

A phrase leads an answer when the sentence reader's span head is sure of it (``calibration.headline_margin``) and
the passage reader, reading the window around it, agrees with at least ``calibration.phrase_agreement`` mass
(read.second_reading). bench/tune/passage.py chose that mass in a simulation of reason's stages, pooled over its
fit kinds; what reason shows differs from the simulation (offers, re-reading, the naming rules), and a mass that
held 0.95 in-sample showed phrases right for 0.79 of the held-out questions they were shown for. This bench asks
`reason` itself (default settings, the obedient model: the lead quotations as statements) and records, for every
phrase reason would show with any agreement at all, the mass the passage reader gave it and the span head's margin.
Every (margin, mass) pair is then a filter on those records, exact, with no second run.

A phrase written as code or a figure (candidates.written_as_code: "--hostname", "json_valid", "62") needs the
margin only, not the passage reader's agreement, as phrase.with_phrase has it; the report shows the choice without
that rule too ("no code rule").

The choice, on fit kinds only: the gate that shows the most right phrases on the fit kinds together while the
phrases it shows are right for at least ``--precision`` (0.90) **on each fit kind separately** (a kind with fewer
than MIN_SHOWN phrases shown is not held to it): SQuAD dev's and new_wiki's fit halves, and each fit manual's fit
half. Leave-one-kind-out shows what such a choice is worth on a kind it did not see: for each fit kind, the gate
chosen on the others, judged on it. Reported beside them, never chosen on: the fit manuals' evaluation halves,
the held-out manual (Apache), and the held-out kinds of text (reddit posts, Amazon reviews).

A phrase is right when the first statement holds a gold answer and the phrase's token F1 with one is at least 0.5
(bench/quality/reason.py's judgement) or, on a manual, it is inside a written answer (bench/tune/passage.py's);
a phrase shown for a near-miss or off-topic question (whose answer the library does not hold) is wrong.

    python -m bench.tune.headline --qa-data ../shared/data/qa --out runs/headline.jsonl
    python -m bench.tune.headline --from-records runs/headline.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from bench import cpu_name
from bench.data import manuals as M
from bench.data import qa, qa_sets

MASSES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MARGINS = (4.0, 5.0, 6.0, 8.0)
MIN_SHOWN = 5
"""A fit kind with fewer phrases shown than this (at the loosest gate) is not held to the precision on its own."""


class Recorder:
    """Stands in for read.second_reading: agrees with every phrase, and notes the mass the passage reader gave it
    (the most of any of its window phrases that name the same thing; 0 when none does) and the span head's margin."""

    def __init__(self):
        self.seen: dict | None = None

    def __call__(self, passage_reader, question, chunks, *, calibration=None):
        from localreason.reason.read import same_phrase, window_phrases

        def confirm(best, text):
            found = window_phrases(passage_reader, question, best, chunks.get(best.chunk_id, ""))
            mass = max((m for p, m in found if same_phrase(p, text)), default=0.0)
            self.seen = {"mass": float(mass), "margin": best.phrase_margin}
            return True

        return confirm


def right(golds: list[str], phrase: str, held_first: bool, manual: bool) -> bool:
    """The bench's judgement of a shown phrase (see the module's doc)."""
    f1 = max((qa_sets.token_f1(phrase, g) for g in golds), default=0.0)
    norm = qa_sets.norm(phrase)
    inside = manual and bool(norm) and any(f" {norm} " in f" {qa_sets.norm(g)} " for g in golds)
    return bool(held_first and (f1 >= 0.5 or inside))


def ask(lib, text: str, golds, held_by, model, reader, recorder: Recorder, manual: bool) -> dict:
    """reason's answer to one question, as a record: the phrase it would show, its mass and margin, right or not."""
    from dataclasses import replace

    from localreason.config import Settings
    from localreason.reason import reason
    from localreason.reason.calibration import DEFAULT

    recorder.seen = None
    loosest = replace(DEFAULT, headline_margin=min(MARGINS))  # every phrase a gate of the grid could show
    ans = reason(lib, text, generator=model, max_tokens=Settings.answer_budget, reader=reader, calibration=loosest)
    phrase = ans.statements[0].phrase.text if ans.statements and ans.statements[0].phrase else None
    rec = {"q": text, "phrase": phrase}
    if phrase is not None:
        held_first = held_by(" ".join(r.quotation for r in ans.statements[0].references))
        rec.update(recorder.seen or {"mass": 0.0, "margin": None}, right=right(golds, phrase, held_first, manual))
    return rec


def qa_records(args, embedder, model, recorder, out) -> None:
    """Records of the QA kinds: the fit domains' fit halves, the held-out domains (all eval)."""
    from localreason.readers import packaged_reader

    reader = packaged_reader()  # what reason uses by default: the sentence reader with the passage reader beside it
    for name in qa_sets.DOMAINS:
        domain = qa_sets.load(name, args.qa_data)
        lib = qa_sets.build_library(domain, args.data_dir, embedder)
        half = "fit" if qa_sets.DOMAINS[name][2] == "fit" else "eval"
        for kind in ("answerable", "near-miss", "off-topic"):
            n = args.answerable if kind == "answerable" else args.others
            for q in qa_sets.sample(domain, kind, n, half):
                rec = ask(lib, q.text, q.golds, q.held_by, model, reader, recorder, False)
                out.write(json.dumps({"kind": name, "half": half, "question": kind, **rec}) + "\n")
        out.flush()
        print(f"  {name}: done", flush=True)


def manual_records(args, embedder, model, recorder, out) -> None:
    """Records of every manual question (both halves of the fit manuals, and the held-out manual)."""
    from bench.quality.manuals import library

    for manual in M.MANUALS:
        if not (M.QUESTIONS / f"{manual}.jsonl").is_file():
            continue
        lib = library(manual, args.manuals_dir, embedder)
        for q in M.questions(manual):
            if q.kind == "unanswerable":
                continue
            rec = ask(lib, q.question, q.answers, q.held_by, model, lib.reader, recorder, True)
            half = M.page_half(manual, q.page)
            out.write(json.dumps({"kind": f"manual:{manual}", "half": half, "question": "answerable", **rec}) + "\n")
        out.flush()
        lib.close()
        print(f"  {manual}: done", flush=True)


def fit_kinds(records: list[dict]) -> list[str]:
    """The kinds a gate may be chosen on: fit QA domains and fit manuals (their fit halves)."""
    kinds = {r["kind"] for r in records if r["half"] == "fit"}
    return sorted(k for k in kinds if k.removeprefix("manual:") not in M.HELD_OUT)


def passes(r: dict, margin: float, mass: float, code: bool = True) -> bool:
    """Whether the gate (margin, mass) shows the record's phrase; ``code``: a phrase written as code or a figure
    needs no agreement (phrase.with_phrase's rule, candidates.written_as_code)."""
    from localreason.reason.candidates import written_as_code

    if r["phrase"] is None or (r["margin"] or 0.0) < margin:
        return False
    return r["mass"] >= mass or (code and written_as_code(r["phrase"]))


def figures(records: list[dict], margin: float, mass: float, code: bool = True) -> dict:
    """Shown, right, wrong (of the answerable), and wrong phrases shown for questions the library cannot answer."""
    a = [r for r in records if r["question"] == "answerable"]
    shown = [r for r in a if passes(r, margin, mass, code)]
    others = [r for r in records if r["question"] != "answerable"]
    stray = [r for r in others if passes(r, margin, mass, code)]
    good = sum(r["right"] for r in shown)
    return {"n": len(a), "shown": len(shown), "right": good, "wrong": len(shown) - good, "stray": len(stray),
            "others": len(others), "precision": good / len(shown) if shown else float("nan")}  # fmt: skip


def choose(groups: dict[str, list[dict]], kinds: list[str], least: float,
           code: bool = True) -> tuple[float, float] | None:
    """The (margin, mass) with the most right phrases, less the phrases shown for questions the library cannot
    answer, over ``kinds``, while each kind with MIN_SHOWN or more shown (at the loosest gate) keeps precision >=
    ``least``; ties go to the stricter gate."""
    held = [k for k in kinds if figures(groups[k], MARGINS[0], MASSES[0], code)["shown"] >= MIN_SHOWN]
    best, best_key = None, None
    for margin in MARGINS:
        for mass in MASSES:
            figs = {k: figures(groups[k], margin, mass, code) for k in kinds}
            if any(not figs[k]["shown"] == 0 and figs[k]["precision"] < least for k in held):
                continue
            key = (sum(f["right"] - f["stray"] for f in figs.values()), margin + mass)
            if best_key is None or key > best_key:
                best, best_key = (margin, mass), key
    return best


def row(label: str, f: dict) -> str:
    n = f["n"] or 1
    return (f"{label:<34} {f['n']:>5} {f['shown']:>6} {f['right'] / n:>7.3f} {f['wrong'] / n:>7.3f} "
            f"{f['precision']:>9.3f} {f['stray']:>4}/{f['others']:<4}")


def report(records: list[dict], least: float) -> None:
    """The choice on the fit kinds, leave-one-kind-out, and every kind's figures at the choice and at today's."""
    from localreason.reason.calibration import DEFAULT

    groups = defaultdict(list)
    for r in records:
        groups[r["kind"] if r["half"] == "fit" or r["kind"] in qa_sets.HELD_OUT else f"{r['kind']} (eval)"].append(r)
    kinds = fit_kinds(records)
    chosen = choose(groups, kinds, least)
    print(f"\nheadline gate, reason's own phrases (obedient model), {cpu_name()}; precision >= {least} on each "
          "fit kind")
    print(f"fit kinds: {', '.join(kinds)}; chosen (margin, mass): {chosen}")
    print(f"\n{'leave one kind out':<34} {'n':>5} {'shown':>6} {'right':>7} {'wrong':>7} {'precision':>9} stray")
    for k in kinds:
        gate = choose(groups, [x for x in kinds if x != k], least)
        if gate is not None:
            print(row(f"{k} at {gate}", figures(groups[k], *gate)))
    today = (DEFAULT.headline_margin, DEFAULT.phrase_agreement)
    plain = choose(groups, kinds, least, code=False)
    for label, gate, code in (("today's", today, True), ("chosen", chosen, True), ("no code rule", plain, False)):
        if gate is None:
            continue
        print(f"\n{label + ' ' + str(gate):<34} {'n':>5} {'shown':>6} {'right':>7} {'wrong':>7} {'precision':>9} stray")
        for k in sorted(groups):
            role = "fit" if k in kinds else "held out" if k in qa_sets.HELD_OUT or "apache" in k else "eval"
            print(row(f"{k} [{role}]", figures(groups[k], *gate, code)))


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="where the QA libraries are kept")
    ap.add_argument("--manuals-dir", type=Path, default=Path(".cache/manuals"), help="the manuals and their libraries")
    qa.add_argument(ap)
    ap.add_argument("--answerable", type=int, default=200, help="answerable questions per QA kind")
    ap.add_argument("--others", type=int, default=40, help="near-miss and off-topic questions per QA kind, each")
    ap.add_argument("--part", choices=("qa", "manuals", "both"), default="both", help="which records to make")
    ap.add_argument("--precision", type=float, default=0.90, help="the least precision on each fit kind")
    ap.add_argument("--out", type=Path, default=None, help="write the records here (JSON lines)")
    ap.add_argument("--from-records", type=Path, nargs="+", default=None, metavar="FILE", help="choose from these")
    return ap.parse_args()


def main() -> None:
    args = arguments()
    if args.from_records:
        records = [json.loads(line) for f in args.from_records for line in f.open()]
        return report(records, args.precision)
    if args.out is None:
        raise SystemExit("Give --out FILE for the records (or --from-records FILE ... to choose from records).")
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_embedding_model, resolve_gguf
    from localreason.reason import phrase, pipeline
    from bench.trace import ObedientModel

    settings = load_settings(args.data_dir / "libs")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    model = ObedientModel(LlamaGenerator(resolve_gguf(settings)))
    recorder = Recorder()
    pipeline.second_reading = recorder  # every phrase agreed with, its mass noted
    phrase.written_as_code = lambda text: False  # asked of every phrase here; ``passes`` applies the code rule
    with args.out.open("w") as out:
        if args.part in ("qa", "both"):
            qa_records(args, embedder, model, recorder, out)
        if args.part in ("manuals", "both"):
            manual_records(args, embedder, model, recorder, out)
    report([json.loads(line) for line in args.out.open()], args.precision)


if __name__ == "__main__":
    main()
