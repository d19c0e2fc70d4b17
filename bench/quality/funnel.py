#!/usr/bin/env python3
"""Where a manual's answer is lost: search, the evidence packet, the ranking of sentences, or the reader's choice.

For every answerable question of the manuals set (bench/data/manuals.py), with the default settings: is the
answering passage in the packet; is a sentence holding a gold answer among the ranking's best 8 (the ones a reader
reads, ``Calibration.read_candidates``) or best 12; and is it first by the ranking's features alone, and by each
reader given (its logit + the shipped feature weight x the ranking score, as reason/read.py combines them).
A reader of format 3 (a passage reader) reads the sentences in their windows. Then the headline phrase of the
shipped reader's first sentence, gate by gate (the span head's margin, the kind asked, the passage reader's second
reading): shown, right and wrong under the shipped gates and looser ones. Shares of all answerable questions, per
fit half, evaluation half and held-out manual. No model writes: this is the ranking before the prompt.

    python -m bench.quality.funnel                                   # the shipped readers
    python -m bench.quality.funnel --reader new=.cache/qa/reader/sentence-40k --out funnel.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench import cpu_name
from bench.data import manuals as M
from bench.quality.manuals import answering_chunks, library

WIDEST = 12


def ranked_for(lib, question: str):
    """The packet's chunks (id: text) and its sentences ranked by the features, best WIDEST first: reason's own
    stages (gather_evidence, pack_evidence, rank_sentences) with the reader's candidates widened to WIDEST, and
    each chunk's heading (read.headings_of); None when search finds nothing."""
    from dataclasses import replace

    from localreason import search
    from localreason.config import Settings
    from localreason.errors import LocalReasonError
    from localreason.reason import pipeline as P
    from localreason.reason.read import headings_of

    scope = {"document_id": search.UNSET, "collection_id": search.UNSET, "grant": None}
    wide = replace(P.DEFAULT, read_candidates=WIDEST)
    req = P.check_request(lib, question, None, scope, search.DEFAULT_EVIDENCE_LIMIT, Settings.answer_budget,
                          "extract", None, "off", lib.reader, wide)  # fmt: skip
    evidence = P.gather_evidence(req)
    try:
        packet = P.pack_evidence(evidence, req.budget)
    except (P.NoEvidence, LocalReasonError):
        return None
    return {c.chunk_id: c.content for c in packet.chunks}, P.rank_sentences(req, packet, evidence), headings_of(evidence)


def logits_of(reader, question: str, ranked, chunks, headings: dict[str, str]) -> list[float]:
    from localreason.reason.read import passage_reading

    if reader.format == 3:
        return [float(x) for x in passage_reading(reader, question, ranked, chunks)[0]]
    return [float(x) for x in reader.logits(question, [(x.text, x.context, headings.get(x.chunk_id, ""))
                                                       for x in ranked])]  # fmt: skip


def record(lib, manual: str, data_dir: Path, q: M.ManualQuestion, readers: dict) -> dict:
    rec = {"manual": manual, "id": q.id, "kind": q.kind, "half": M.page_half(manual, q.page), "packet": False}
    got = ranked_for(lib, q.question)
    if got is None:
        return rec
    chunks, ranked, headings = got
    gold = answering_chunks(lib, manual, data_dir, q)
    rec.update(packet=bool(gold & set(chunks)), held=[q.held_by(x.text) for x in ranked],
               score=[x.score for x in ranked], text=[x.text[:200] for x in ranked])  # fmt: skip
    for name, reader in readers.items():
        rec[name] = logits_of(reader, q.question, ranked, chunks, headings)
    rec.update(phrase_fields(lib.reader, q, ranked, chunks, headings) if lib.reader is not None else {})
    return rec


def phrase_fields(reader, q: M.ManualQuestion, ranked, chunks, headings: dict[str, str]) -> dict:
    """The shipped way to the headline phrase, gate by gate, for the sentence ``reader`` puts first: its span
    head's phrase whatever the margin, the margin, whether it is of the kind asked (answer_type.agrees), whether
    the passage reader's second reading agrees, and whether it is right (token F1 >= 0.5 with a gold answer)."""
    from localreason.reason.answer_type import agrees
    from localreason.reason.phrase import sure_phrase
    from localreason.reason.read import read, same_phrase, second_reading

    best = read(reader, q.question, ranked, chunks=chunks, headings=headings).quotes[0]
    span = sure_phrase(best.text, best.phrase, best.phrase_margin, float("-inf"))
    if span is None:
        return {"phrase": None}
    text = best.text[span[0]:span[1]]
    passage = getattr(reader, "passage", None)
    return {"phrase": text, "margin": best.phrase_margin, "agrees": agrees(q.question, text),
            "confirmed": bool(passage) and second_reading(passage, q.question, chunks)(best, text),
            "right": any(same_phrase(text, a) for a in q.answers)}  # fmt: skip


def phrase_report(records: list[dict], margin: float) -> None:
    """Shares of the answerable questions a phrase would be shown for, right and wrong, under the shipped gates
    and looser ones (the same first sentence)."""
    gates = [(f"shipped: margin >= {margin:g}, of the kind asked, the passage reader agrees", margin, True),
             ("margin >= 2, of the kind asked, the passage reader agrees", 2.0, True),
             ("margin >= 0, of the kind asked, no second reading", 0.0, False),
             ("margin >= -2, of the kind asked, no second reading", -2.0, False)]  # fmt: skip
    for label in ("fit halves", "eval halves", "held out (apache)"):
        rs = [r for r in records if _group(r) == label]
        if not rs:
            continue
        print(f"\nthe headline phrase, {label} ({len(rs)} answerable):       shown   right   wrong  precision")
        for name, least, second in gates:
            shown = [r for r in rs if r.get("phrase") and r["margin"] >= least and r["agrees"]
                     and (r["confirmed"] or not second)]  # fmt: skip
            right = sum(r["right"] for r in shown)
            print(f"  {name:55} {len(shown) / len(rs):7.3f} {right / len(rs):7.3f} {(len(shown) - right) / len(rs):7.3f}"
                  f" {right / max(1, len(shown)):10.3f}")  # fmt: skip


def _group(r: dict) -> str:
    return "held out (apache)" if r["manual"] in M.HELD_OUT else f"{r['half']} halves"


def first_held(rec: dict, name: str | None, feature_weight: float, k: int | None = None) -> bool:
    """Is the sentence put first among the ``k`` best (the reader's candidates, Calibration.read_candidates, unless
    given; by reader ``name`` with the features, or the features alone) one that holds a gold answer? (read.py's
    sinking of a sentence that only repeats the question is left aside.)"""
    from localreason.reason.calibration import DEFAULT

    k = k or DEFAULT.read_candidates
    held = rec.get("held") or []
    if not any(held[:k]):
        return False
    score = np.array(rec["score"][:k])
    combined = score if name is None else np.array(rec[name][:k]) + feature_weight * score
    return bool(held[int(np.argmax(combined))])


def report(records: list[dict], names: list[str], feature_weight: float) -> None:
    groups = defaultdict(list)
    for r in records:
        groups[_group(r)].append(r)
    cols = ["n", "passage in packet", "held in best 12", "held in best 8", "features first",
            *[f"{n} first" for n in names]]  # fmt: skip
    print(f"{'':20}" + "".join(f"{c:>22}" for c in cols))
    for label in sorted(groups):
        rs = groups[label]
        figures = [len(rs), np.mean([r["packet"] for r in rs]), np.mean([any(r.get("held") or []) for r in rs]),
                   np.mean([any((r.get("held") or [])[:8]) for r in rs]),
                   np.mean([first_held(r, None, feature_weight) for r in rs]),
                   *[np.mean([first_held(r, n, feature_weight) for r in rs]) for n in names]]  # fmt: skip
        print(f"{label:20}" + f"{figures[0]:>22}" + "".join(f"{x:>22.3f}" for x in figures[1:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/manuals"), help="bench.quality.manuals' folder")
    ap.add_argument("--manuals", nargs="*", default=list(M.MANUALS), choices=list(M.MANUALS))
    ap.add_argument("--reader", action="append", default=[], metavar="NAME=FOLDER",
                    help="a reader folder to compare beside the shipped ones (repeatable)")
    ap.add_argument("--out", type=Path, help="write each question's record (JSON lines) here")
    args = ap.parse_args()
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import PASSAGE_DIR, READER_DIR, resolve_embedding_model
    from localreason.reason.calibration import DEFAULT
    from localreason.readers import Reader

    readers = {"sentence reader": Reader(READER_DIR), "passage reader": Reader(PASSAGE_DIR)}
    readers.update({n: Reader(Path(f)) for n, _, f in (x.partition("=") for x in args.reader)})
    settings = load_settings(args.data_dir / "libs")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    records = []
    out = args.out.open("w") if args.out else None
    for manual in args.manuals:
        lib = library(manual, args.data_dir, embedder)
        for q in M.questions(manual):
            if q.kind != "unanswerable" and q.page:
                records.append(record(lib, manual, args.data_dir, q, readers))
                if out:
                    out.write(json.dumps(records[-1]) + "\n")
        lib.close()
    print(f"\nwhere answers are lost, answerable questions, default settings, {cpu_name()}")
    report(records, list(readers), DEFAULT.feature_weight)
    phrase_report(records, DEFAULT.headline_margin)


if __name__ == "__main__":
    main()
