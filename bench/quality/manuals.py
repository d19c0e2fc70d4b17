#!/usr/bin/env python3
"""Answers from manuals: `reason` on questions we wrote by reading real manuals (bench/data/manuals.py).

Each manual (a Debian package: sqlite3-doc, debian-reference-en, debian-handbook, apache2-doc) is one library of
all its pages, read by localreason's own readers; its questions are asked with the default settings. Reported per
manual, for the fit manuals' two halves (by page) and the held-out manual (apache: no fit, calibration or training
ever used it):

- first: the first statement holds a gold answer; first from the answering paragraph: it quotes the passage that
  holds the answer's evidence; support: any quotation holds it; precision: the share of an answer's statements that
  hold it (answered questions); first by kind (fact, how-to, which, why, default);
- shown / right / wrong: a phrase leads the answer, and it is right (token F1 >= 0.5 with a gold answer, in a first
  statement that holds it) or not (shares of the answerable questions);
- refused: answerable questions given the no-evidence answer; unanswerable stopped: the no-evidence answer, and
  stopped or marked (a gap saying the question is not clearly answered);
- ask p50 / p90 over every question (the model loaded), on the CPU named.

    python -m bench.quality.manuals                          # every manual with questions, real model
    python -m bench.quality.manuals --manuals sqlite --model obedient --questions 30
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bench import cpu_name
from bench.data import manuals as M
from bench.quality.reason import phrase_right, unanswered

ANSWER_KINDS = ("fact", "howto", "which", "why", "default")


@dataclass
class Asked:
    """A manual's question in the shape bench/quality/reason.py scores (kind answerable or unanswerable)."""

    text: str
    kind: str
    golds: list[str]
    source: M.ManualQuestion

    def held_by(self, quotation: str) -> bool:
        return self.source.held_by(quotation)


def library(manual: str, data_dir: Path, embedder):
    """The manual's library in ``data_dir/libs/<manual>``: its pages ingested (again: only what changed is read,
    and a page read otherwise by a newer reader is read again, as a user's sync does)."""
    from localreason.config import load_settings
    from localreason.library import Library

    lib = Library(settings=load_settings(data_dir / "libs" / manual), embedder=embedder)
    t = time.perf_counter()
    report = lib.ingest([str(p) for p in M.pages(manual, data_dir)], manual)
    if not report.ok:
        failed = ", ".join(f.path for f in report.by_status("failed")[:3])
        raise SystemExit(f"{manual}: some pages failed to ingest ({report.stopped or failed})")
    c = report.counts
    print(f"{manual}: {len(lib.documents())} pages, {lib.store.paragraph_count()} passages ({c['added']} added, "
          f"{c['updated']} updated, {c['unchanged']} unchanged) in {time.perf_counter() - t:.0f} s", flush=True)
    return lib


def answering_chunks(lib, manual: str, data_dir: Path, q: M.ManualQuestion) -> set[str]:
    """The ids of the passages of ``q``'s page that hold its evidence (all of it, or failing that its start and its
    end: evidence cut by a passage boundary)."""
    path = os.path.abspath(M.fetch(manual, data_dir) / q.page)  # as the ingest names it (a link not followed)
    doc = next((d for d in lib.documents() if d.source_path == path), None)
    if doc is None:
        return set()
    evidence = M.squeeze(q.evidence)
    chunks = [(c.id, M.squeeze(c.text)) for c in lib.chunks(doc.id) if c.level == 2]
    whole = {cid for cid, text in chunks if evidence in text}
    return whole or {cid for cid, text in chunks if evidence[:60] in text or evidence[-60:] in text}


def score(q: M.ManualQuestion, ans, gold_chunks: set[str]) -> dict:
    """One question's record: bench/quality/reason.py's fields, its kind and whether the first statement quotes
    the answering passage."""
    asked = Asked(q.question, "unanswerable" if q.kind == "unanswerable" else "answerable", q.answers, q)
    quotes = [" ".join(r.quotation for r in s.references) for s in ans.statements]
    held = [asked.held_by(x) for x in quotes]
    first_chunks = {r.chunk_id for r in ans.statements[0].references} if ans.statements else set()
    phrase = ans.statements[0].phrase.text if ans.statements and ans.statements[0].phrase else None
    return {"id": q.id, "q": q.question, "kind": asked.kind, "manualKind": q.kind, "noEvidence": ans.no_evidence,
            "unanswered": unanswered(ans), "held": held, "firstPara": bool(first_chunks & gold_chunks),
            "phrase": phrase, "phraseRight": phrase_right(asked, ans, held), "latencyMs": ans.latency_ms,
            "quotes": quotes, "gaps": list(ans.gaps), "dropped": ans.citations_dropped,
            "stagesMs": stages_of(ans)}  # fmt: skip


def stages_of(ans) -> dict | None:
    """The answer's stagesMs, or None from a checkout that did not time its stages."""
    stages = getattr(getattr(ans, "timings", None), "stages", None)
    return stages() if callable(stages) else None


def summary(records: list[dict]) -> dict:
    a = [r for r in records if r["kind"] == "answerable"]
    answered = [r for r in a if not r["noEvidence"]]
    un = [r for r in records if r["kind"] == "unanswerable"]
    shown = [r for r in a if r["phraseRight"] is not None]

    def share(xs, f):
        return sum(map(f, xs)) / len(xs) if xs else float("nan")

    first = lambda r: bool(r["held"]) and r["held"][0]  # noqa: E731
    out = {"n": f"{len(a)}/{len(un)}", "first": share(a, first), "first para": share(a, lambda r: r["firstPara"]),
           "support": share(a, lambda r: any(r["held"])),
           "precision": share(answered, lambda r: sum(r["held"]) / max(1, len(r["held"]))),
           "shown": len(shown) / len(a) if a else float("nan"), "right": share(a, lambda r: r["phraseRight"] is True),
           "wrong": share(a, lambda r: r["phraseRight"] is False), "refused": share(a, lambda r: r["noEvidence"]),
           "unans stopped": share(un, lambda r: r["noEvidence"]), "unans +marked": share(un, lambda r: r["unanswered"]),
           "dropped": sum(r["dropped"] for r in records)}  # fmt: skip
    for kind in ANSWER_KINDS:
        out[f"first {kind}"] = share([r for r in a if r["manualKind"] == kind], first)
    return out


COLUMNS = ("first", "first para", "support", "precision", "shown", "right", "wrong", "refused", "unans stopped",
           "unans +marked", *(f"first {k}" for k in ANSWER_KINDS), "dropped")  # fmt: skip


def print_table(rows: dict[str, dict]) -> None:
    print(f"{'manual, half':<24} {'n (a/un)':>9} " + " ".join(f"{c:>13}" for c in COLUMNS))
    for name, s in rows.items():
        cells = [f"{s[c]:>13}" if c == "dropped" else f"{s[c]:>13.3f}" for c in COLUMNS]
        print(f"{name:<24} {s['n']:>9} " + " ".join(cells), flush=True)


def from_records(args) -> None:
    """The table again from ``--from-records`` (JSON lines of an earlier run), the answering passage scored anew
    on the libraries in --data-dir: whether the first statement's quotation lies in a passage that holds the
    evidence."""
    from localreason.config import load_settings
    from localreason.library import Library

    rows, by_manual = {}, defaultdict(list)
    for line in args.from_records.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        by_manual[rec["manual"]].append(rec)
    for manual, records in by_manual.items():
        lib = Library(settings=load_settings(args.data_dir / "libs" / manual))
        questions = {q.id: q for q in M.questions(manual)}
        halves = defaultdict(list)
        for rec in records:
            q = questions[rec["id"]]
            gold = [M.squeeze(lib.chunk(c).text) for c in answering_chunks(lib, manual, args.data_dir, q)] if q.page else []
            first = M.squeeze(rec["quotes"][0]) if rec["quotes"] else None
            rec["firstPara"] = bool(first) and any(first in g for g in gold)
            halves[rec["half"]].append(rec)
        for half in ("fit", "eval"):
            if halves[half]:
                rows[f"{manual}, {half}" + (" (held out)" if manual in M.HELD_OUT else "")] = summary(halves[half])
        lib.close()
    print(f"\nreason on manuals, from {args.from_records}")
    print_table(rows)
    print_stages([r for records in by_manual.values() for r in records])


def main() -> None:
    args = arguments()
    if args.from_records:
        return from_records(args)
    from localreason.config import Settings, load_settings
    from localreason.embed import make_embedder
    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_embedding_model, resolve_gguf
    from localreason.reason import reason
    from bench.trace import ObedientModel

    drifted = [p for p in (M.version_problem(m, args.data_dir) for m in args.manuals) if p]
    if drifted and not args.other_versions:
        raise SystemExit("\n".join(drifted) + "\n(--other-versions asks anyway; its figures are not comparable)")
    settings = load_settings(args.data_dir / "libs")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    real = LlamaGenerator(resolve_gguf(settings))
    model = real if args.model == "real" else ObedientModel(real)
    out = args.out.open("w") if args.out else None
    rows, every = {}, []
    for manual in args.manuals:
        lib = library(manual, args.data_dir, embedder)
        reader = lib.reader  # the packaged readers, as the setting has them (a checkout before this one too)
        asked = sample(M.questions(manual), args.questions)
        records = defaultdict(list)
        for q in asked:
            ans = reason(lib, q.question, generator=model, max_tokens=Settings.answer_budget, reader=reader)
            rec = score(q, ans, answering_chunks(lib, manual, args.data_dir, q) if q.page else set())
            rec["half"] = M.page_half(manual, q.page) if q.page else _unanswerable_half(manual, q.id)
            records[rec["half"]].append(rec)
            every.append(rec)
            if out:
                out.write(json.dumps({"manual": manual, **rec}) + "\n")
        for half in ("fit", "eval"):
            if records[half]:
                label = f"{manual}, {half}" + (" (held out)" if manual in M.HELD_OUT else "")
                rows[label] = summary(records[half])
        lib.close()
    import localreason

    print(f"\nreason on manuals, default settings, model {args.model}, {cpu_name()}, localreason from "
          f"{Path(localreason.__file__).parent}")
    print_table(rows)
    ms = sorted(r["latencyMs"] for r in every)
    if ms:
        print(f"\nask p50 {statistics.median(ms) / 1000:.2f} s, p90 {ms[int(0.9 * (len(ms) - 1))] / 1000:.2f} s over "
              f"{len(ms)} questions (targets: p50 <= 1.2 s, p90 <= 2 s on 2 idle cores)")  # fmt: skip
    print_stages(every)


def print_stages(records: list[dict]) -> None:
    """Where the time went: each stage's p50 and p90 (ms) over the questions (answers' stagesMs; a checkout from
    before stagesMs prints nothing)."""
    staged = [r["stagesMs"] for r in records if r.get("stagesMs")]
    if not staged:
        return
    cells = []
    for stage in staged[0]:
        ms = sorted(t.get(stage, 0.0) for t in staged)
        cells.append(f"{stage} {statistics.median(ms):.0f}/{ms[int(0.9 * (len(ms) - 1))]:.0f}")
    print("stages, p50/p90 ms: " + ", ".join(cells))


def _unanswerable_half(manual: str, qid: str) -> str:
    """An unanswerable question has no page: its half is drawn by its id (held-out manual: eval)."""
    return M.page_half(manual, f"unanswerable:{qid}")


def sample(questions: list[M.ManualQuestion], n: int) -> list[M.ManualQuestion]:
    """``n`` questions in a fixed random order (0: all, in file order)."""
    if not n or n >= len(questions):
        return questions
    return random.Random(7).sample(questions, n)


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/manuals"), help="the packages and the libraries")
    ap.add_argument("--manuals", nargs="*", default=[m for m in M.MANUALS if (M.QUESTIONS / f"{m}.jsonl").is_file()])
    ap.add_argument("--model", choices=("real", "obedient"), default="real")
    ap.add_argument("--questions", type=int, default=0, help="a fixed sample of this many per manual (0: all)")
    ap.add_argument("--out", type=Path, default=None, help="one JSON line per question")
    ap.add_argument("--other-versions", action="store_true",
                    help="ask even when a manual's package is not the version its questions were checked against")
    ap.add_argument("--from-records", type=Path, default=None, metavar="FILE",
                    help="print the table from an earlier run's --out, the answering passage scored anew")
    return ap.parse_args()


if __name__ == "__main__":
    main()
