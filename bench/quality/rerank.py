#!/usr/bin/env python3
"""Re-reading search's first candidates (issue #52): what a cross-encoder that reads the question with each
candidate passage adds to the hybrid ranking, on every kind of text, and what it costs.

For each kind of bench.quality.retrieval (SQuAD 1.1 dev, new_wiki, reddit, Amazon, our manuals) and a fixed sample
of its questions: the hybrid's DEPTH best candidates, each read whole by the packaged passage reader (its window
logit: that the passage holds the answer; search.rerank.reread). Orders compared, on the same candidates:

- BM25 alone, dense alone, the hybrid (today's search);
- the reader's logit plus w x the hybrid's fused score (standardised over the K read), for the K best, the rest
  after them in the hybrid's order; K and w on a grid.

The grid is read on the fit parts only (SQuAD dev's fit half of articles, the fit manuals' fit halves) and the
chosen K and w are reported on every part: in-sample (those fit parts; new_wiki too, which the shipped passage
reader was trained on), and held out (SQuAD dev's evaluation half, the fit manuals' evaluation halves, the Apache
manual, reddit, Amazon). The reader's milliseconds per question for K passages are printed beside it. Last, what
leaving a question unread would save and cost where the hybrid's first candidate stands out (measured, not shipped:
docs/history/52-search-beats-bm25.md).

    python -m bench.quality.rerank --questions 300
    python -m bench.quality.rerank --questions 300 --out rerank.jsonl    # each question's record
    python -m bench.quality.rerank --from-records rerank.jsonl           # the tables again, no reading
    python -m bench.quality.rerank --passage new=DIR --show window,10,1.0  # another passage reader beside
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench import cpu_name
from bench.data import qa
from bench.data.squad import paragraph_library, paragraph_questions
from bench.quality.retrieval import MANUALS, KindRun, doc_rank, manual_sets, metrics, record_arguments
from localreason.search.rerank import SIGNALS

DEPTH = 20
TOLERANCE = 0.005
MIN_DEPTH = 10
"""The choice on the fit parts: the best MRR@10 among depths of MIN_DEPTH or more (a depth of 5 cannot bring a
passage into the first 5, and the issue asks for R@5), and within TOLERANCE of it the fewest passages read (reading
costs time in proportion)."""
DEPTHS = (5, 10, 20)
WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0)


def record_kind(lib, reader, qs, units: dict[int, str], part_of, label: str,
                others: dict | None = None) -> list[dict]:
    """Each question's record: its part, the units (documents or passages) of BM25's, dense's and the hybrid's
    first DEPTH * 3 rowids, the hybrid's fused scores and the reader's logits for its first DEPTH, and the
    reader's milliseconds for 5, 10 and 20 passages (from one reading of DEPTH: its time shares by tokens).
    ``others`` ({name: reader}): other passage readers' logits of the same passages too, as signals "name:signal"."""
    from localreason import search
    from localreason.search.rerank import readings

    run = KindRun(lib, qs, {}, units)
    scope = search.ResolvedScope()
    out = []
    for i, (q, gold, tag) in enumerate(qs):
        ranked = search.hybrid(lib.index, q, DEPTH * 3, scope, qvec=run.qvecs[i])
        rowids = [r.rowid for r in ranked]
        texts = [h.content for h in lib.store.hits(rowids[:DEPTH])]
        t = time.perf_counter()
        read = readings(reader, q, texts)
        ms = (time.perf_counter() - t) * 1000
        for name, other in (others or {}).items():
            read |= {f"{name}:{k}": v for k, v in readings(other, q, texts).items()}
        out.append({"kind": label, "part": part_of(tag), "q": q, "gold": sorted(gold) if isinstance(gold, frozenset)
                    else [gold], "lex": [units[r] for r, _ in run.lex_l[i][:DEPTH * 3]],
                    "dense": [units[r] for r, _ in run.dense_l[i][:DEPTH * 3]], "hybrid": [units[r] for r in rowids],
                    "fused": [r.fused for r in ranked[:DEPTH]], "ms": ms,
                    **{f"logits_{k}": [float(x) for x in v] for k, v in read.items()},
                    "chars": [len(x) for x in texts]})  # fmt: skip
    return out


def paragraph_records(kind: str, args, reader, others: dict) -> list[dict]:
    lib, _, _, articles, corpus = paragraph_library(kind, args.data_dir, args.qa_data)
    qs, _, chunk_doc = paragraph_questions(lib, articles, corpus, args.questions)
    halves = qa.article_half([a["title"] for a in articles], "squad-dev-halves") if kind == "squad-dev" else {}
    held = "in the passage reader's training" if kind == "new_wiki" else "held out"
    part = (lambda t: f"squad-dev {halves[t]}") if kind == "squad-dev" else (lambda t: f"{kind} {held}")
    recs = record_kind(lib, reader, qs, chunk_doc, part, kind, others)
    lib.close()
    return recs


def manual_records(args, reader, embedder, others: dict) -> list[dict]:
    return [rec for manual, lib, qs, units, part in manual_sets(args.manuals_dir, embedder, args.questions)
            for rec in record_kind(lib, reader, qs, units, part, f"manuals {manual}", others)]


def order(rec: dict, k: int, w: float, signal: str = "window", standout: float = float("inf")) -> list[str]:
    """The units in the re-read order: the first ``k`` by the reader's ``signal`` + w x the fused score's z over
    those k (search.rerank.combined), then the rest of the hybrid's; the hybrid's order where its first
    ``stands_out`` by ``standout``."""
    from localreason.search.rerank import combined

    if stands_out(rec["fused"][:k], standout):
        return rec["hybrid"]
    logits = np.array(rec.get(f"logits_{signal}", rec.get("logits"))[:k])
    top = np.argsort(-combined(logits, np.array(rec["fused"][:k]), w), kind="stable")
    return [rec["hybrid"][i] for i in top] + rec["hybrid"][len(top):]


STANDOUTS = (float("inf"), 3.0, 2.5, 2.0, 1.5, 1.2, 1.0, 0.8, 0.6)
SKIP_TOLERANCE = 0.005


def stands_out(fused, standout: float) -> bool:
    """Whether the first of ``fused`` (the fused scores of the candidates to re-read, best first) stands ``standout``
    standard deviations of them above the second."""
    f = np.asarray(fused, dtype=np.float64)
    return len(f) >= 2 and (f[0] - f[1]) / (f.std() or 1.0) >= standout


def choose_standout(fit: list[dict], sig: str, k: int, w: float) -> float:
    """What leaving a question unread when the hybrid's first stands out would save and cost (not in the product:
    docs/history/52-search-beats-bm25.md): on the fit parts, the lowest threshold (the most questions left unread)
    whose R@5 and MRR@10 stay within SKIP_TOLERANCE of reading every question, lowering it until one does not."""
    every = ranks_of(fit, lambda r: order(r, k, w, sig))
    print("\nleaving unread the questions whose first stands out (fit parts), R@5 / MRR@10 and the share unread")
    chosen = float("inf")
    for t in STANDOUTS:
        m = ranks_of(fit, lambda r, t=t: order(r, k, w, sig, t))
        share = np.mean([stands_out(r["fused"][:k], t) for r in fit])
        print(f"  standout {t:<4}: {m['R@5']:.3f} / {m['MRR@10']:.3f}, unread {share:.2f}")
        if all(every[x] - m[x] <= SKIP_TOLERANCE + 1e-9 for x in ("R@5", "MRR@10")):
            chosen = t  # the thresholds fall: the last one before the first that costs more
        else:
            break
    print(f"chosen: {chosen} (the lowest within {SKIP_TOLERANCE} of reading every question)")
    return chosen


def ranks_of(recs: list[dict], ranking) -> dict[str, float]:
    """metrics of ``ranking(rec)`` (units in order) against each record's gold units."""
    units = lambda xs: {i: u for i, u in enumerate(xs)}  # noqa: E731
    return metrics([doc_rank(list(range(len(r))), units(r), frozenset(rec["gold"]))
                    for rec in recs for r in [ranking(rec)]])  # fmt: skip


def report(recs: list[dict], shown: list[tuple[str, int, float]] | None = None) -> None:
    """The grid on the fit parts, the depth and weight it chooses, and every part's figures under BM25, dense, the
    hybrid, the chosen re-read order and those ``shown`` (K, w) besides."""
    parts = defaultdict(list)
    for r in recs:
        parts[r["part"]].append(r)
    fit = [r for r in recs if r["part"] in ("squad-dev fit", "manuals fit")]
    print(f"\nthe grid on the fit parts ({len(fit)} questions: SQuAD dev fit half, the fit manuals' fit halves), "
          "R@5 / MRR@10")
    signals = [x for x in SIGNALS if f"logits_{x}" in fit[0]] or ["window"]
    signals += sorted(k.removeprefix("logits_") for k in fit[0] if k.startswith("logits_") and ":" in k)
    grid = {}
    for sig in signals:
        for k in DEPTHS:
            for w in WEIGHTS:
                grid[sig, k, w] = ranks_of(fit, lambda r, k=k, w=w, sig=sig: order(r, k, w, sig))
            print(f"  {sig:<8} K={k:<3} " + "  ".join(f"w={w}: {grid[sig, k, w]['R@5']:.3f} / "
                                                  f"{grid[sig, k, w]['MRR@10']:.3f}" for w in WEIGHTS))  # fmt: skip
    deep = {key: m for key, m in grid.items() if key[1] >= MIN_DEPTH}
    top = max(m["MRR@10"] for m in deep.values())
    sig, k, w = min((key for key, m in deep.items() if m["MRR@10"] >= top - TOLERANCE),
                    key=lambda key: (key[1], -deep[key]["MRR@10"]))  # fmt: skip
    print(f"chosen on the fit parts: {sig}, K={k}, w={w} (the best MRR@10 at a depth of {MIN_DEPTH} or more; within "
          f"{TOLERANCE} of it, the fewest passages read)")
    standout = choose_standout(fit, sig, k, w)
    methods = {"BM25 alone": lambda r: r["lex"], "dense alone": lambda r: r["dense"],
               "hybrid (today)": lambda r: r["hybrid"]}  # fmt: skip
    for sg, kk, ww in [(sig, k, w), *(shown or [])]:  # k, w stay the chosen ones for the columns below
        methods[f"{sg} K={kk} w={ww}"] = lambda r, kk=kk, ww=ww, sg=sg: order(r, kk, ww, sg)
    from localreason.search.ranking import query_phrases

    methods["chosen, exact names kept"] = lambda r: r["hybrid"] if query_phrases(r["q"], exact_only=True) \
        else order(r, k, w, sig)  # search.ranking.reread_unless_exact: the product's order
    methods[f"standouts unread ({standout})"] = lambda r: r["hybrid"] if query_phrases(r["q"], exact_only=True) \
        else order(r, k, w, sig, standout)  # measured, not shipped
    print(f"\nR@1 / R@5 / MRR@10 by part ({cpu_name()})")
    print(f"{'part':<22} {'n':>5} " + " ".join(f"{m:>24}" for m in methods) + " reader ms p50 (each K read)")
    for name in sorted(parts):
        rs = parts[name]
        cells = []
        for fn in methods.values():
            m = ranks_of(rs, fn)
            cells.append(f"{m['R@1']:.3f} / {m['R@5']:.3f} / {m['MRR@10']:.3f}")
        ms = [statistics.median(r["ms"] * sum(r["chars"][:k]) / max(1, sum(r["chars"])) for r in rs)
              for k in sorted({int(m.split("K=")[1].split()[0]) for m in methods if "K=" in m})]
        unread = np.mean([stands_out(r["fused"][:k], standout) for r in rs])
        print(f"{name[:22]:<22} {len(rs):>5} " + " ".join(f"{c:>24}" for c in cells) + " "
              + " / ".join(f"{x:.0f}" for x in ms) + f"; unread {unread:.2f}")  # fmt: skip


def main() -> None:
    ap = record_arguments(__doc__, 300)
    ap.add_argument("--show", nargs="*", default=[], metavar="SIGNAL,K,W",
                    help="re-read orders to show beside the chosen one (window,20,1.0; NAME:window,10,1.0)")
    ap.add_argument("--passage", nargs="*", default=[], metavar="NAME=DIR", type=_named_folder,
                    help="other passage readers (bench.train.passage_reader, .compress) to read the same passages "
                         "too: their signals are NAME:window, NAME:sentence, NAME:span, chosen among on the fit parts")
    args = ap.parse_args()
    if args.from_records:
        return report([json.loads(line) for line in args.from_records.open()], shown(args.show))
    from localreason import models
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.readers import Reader

    reader = Reader(models.PASSAGE_DIR, threads=2)
    others = {name: Reader(Path(folder), threads=2) for name, folder in args.passage}
    recs = []
    for kind in args.kinds:
        if kind == MANUALS:
            settings = load_settings(args.manuals_dir / "libs")
            embedder = make_embedder(models.resolve_embedding_model(settings), cache_root=settings.cache_path)
            recs += manual_records(args, reader, embedder, others)
        else:
            recs += paragraph_records(kind, args, reader, others)
        print(f"{kind}: {len(recs)} questions read so far", flush=True)
    if args.out:
        with args.out.open("w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    report(recs, shown(args.show))


def _named_folder(text: str) -> tuple[str, str]:
    import argparse

    name, sep, folder = text.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"{text!r}: write it as NAME=FOLDER (new=.cache/qa/reader/passage)")
    return name, folder


def shown(triples: list[str]) -> list[tuple[str, int, float]]:
    return [(p.split(",")[0], int(p.split(",")[1]), float(p.split(",")[2])) for p in triples]


if __name__ == "__main__":
    main()
