#!/usr/bin/env python3
"""Fusion that cannot drag (issue #52, item 2): each half of the hybrid alone and fused, on every kind of text,
and the fusion rule chosen on fit data only.

For each kind of bench.quality.retrieval (SQuAD 1.1 dev, new_wiki, reddit, Amazon, our manuals) and a fixed sample
of its questions, the dense ranking (MiniLM + FAISS) and the lexical one (FTS5 BM25 with the product's lifts) are
computed once, their first search.CANDIDATES with scores, and every fusion is read from them: BM25 alone, dense
alone, reciprocal rank fusion, the z-score sum at a constant dense weight (a grid), and search.fusion_weight's
per-question weight (its constants on a grid).

Parts: the fit parts are SQuAD dev's fit half of articles and the fit manuals' fit halves; every constant is chosen
there (best MRR@10, ties to the simpler). Reported on every part, in-sample (the fit parts) beside held out (SQuAD
dev's evaluation half, the fit manuals' evaluation halves, the Apache manual, new_wiki, reddit, Amazon: no fit saw
them), with the better half's figure and the fused one's difference from it: "cannot drag" is that difference
never below zero.

    python -m bench.quality.fusion --questions 1000 --out fusion.jsonl
    python -m bench.quality.fusion --from-records fusion.jsonl          # the tables again, no searching
"""

from __future__ import annotations

import json
from collections import defaultdict

from bench import cpu_name
from bench.data import qa
from bench.data.squad import paragraph_library, paragraph_questions
from bench.quality.retrieval import MANUALS, KindRun, doc_rank, manual_sets, metrics, record_arguments

FIT_PARTS = ("squad-dev fit", "manuals fit")
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 1.0)


def record_run(run: KindRun, part_of, label: str) -> list[dict]:
    """Each question's record: kind, part, question, gold units, both rankings as [rowid, score] pairs and the
    unit (document, or passage for the manuals) of each rowid in them."""
    out = []
    for i, (q, gold, tag) in enumerate(run.qs):
        rowids = {r for ranking in (run.dense_l[i], run.lex_l[i]) for r, _ in ranking}
        out.append({"kind": label, "part": part_of(tag), "q": q,
                    "gold": sorted(gold) if isinstance(gold, frozenset) else [gold],
                    "dense": run.dense_l[i], "lex": run.lex_l[i],
                    "units": {str(r): run.chunk_doc[r] for r in rowids}})  # fmt: skip
    return out


def paragraph_records(kind: str, args) -> list[dict]:
    lib, _, _, articles, corpus = paragraph_library(kind, args.data_dir, args.qa_data)
    run = KindRun(lib, *paragraph_questions(lib, articles, corpus, args.questions))
    halves = qa.article_half([a["title"] for a in articles], "squad-dev-halves") if kind == "squad-dev" else {}
    part = (lambda t: f"squad-dev {halves[t]}") if kind == "squad-dev" else (lambda t: f"{kind} held out")
    recs = record_run(run, part, kind)
    lib.close()
    return recs


def manual_records(args) -> list[dict]:
    from localreason import models
    from localreason.config import load_settings
    from localreason.embed import make_embedder

    settings = load_settings(args.manuals_dir / "libs")
    embedder = make_embedder(models.resolve_embedding_model(settings), cache_root=settings.cache_path)
    return [rec for manual, lib, qs, units, part in manual_sets(args.manuals_dir, embedder, args.questions)
            for rec in record_run(KindRun(lib, qs, {}, units), part, f"manuals {manual}")]


def fused_units(rec: dict, method: str, **kw) -> list[str]:
    """The record's units in the order of ``method``: "lex", "dense", "rrf", "zsum" (``dense_weight``) or
    "adaptive" (search.fusion_weight's weight, its constants in ``kw``)."""
    from localreason.search import ranking

    units = rec["units"]
    dense, lex = [(int(r), s) for r, s in rec["dense"]], [(int(r), s) for r, s in rec["lex"]]
    if method in ("lex", "dense"):
        return [units[str(r)] for r, _ in (lex if method == "lex" else dense)]
    if method == "adaptive":
        fused = ranking.fuse(dense, lex, "zsum", ranking.fusion_weight(dense, **kw))
    else:
        fused = ranking.fuse(dense, lex, method, kw.get("dense_weight", ranking.DENSE_WEIGHT))
    return [units[str(r)] for r, _ in fused]


def scored(recs: list[dict], method: str, **kw) -> dict[str, float]:
    units = lambda xs: {i: u for i, u in enumerate(xs)}  # noqa: E731
    return metrics([doc_rank(list(range(len(r))), units(r), frozenset(rec["gold"]))
                    for rec in recs for r in [fused_units(rec, method, **kw)]])  # fmt: skip


def choose(fit: list[dict]) -> tuple[float, dict]:
    """The constant dense weight and the adaptive rule's constants that give the best MRR@10 on ``fit``."""
    from localreason.search import ranking

    print(f"\nthe grid on the fit parts ({len(fit)} questions), R@5 / MRR@10")
    const = {w: scored(fit, "zsum", dense_weight=w) for w in WEIGHTS}
    print("  constant dense weight: " + "  ".join(f"{w}: {m['R@5']:.3f} / {m['MRR@10']:.3f}" for w, m in const.items()))
    best_w = max(const, key=lambda w: (round(const[w]["MRR@10"], 3), -abs(w - ranking.DENSE_WEIGHT)))
    grid = {}
    for kw in ranking.fusion_grid():
        grid[tuple(sorted(kw.items()))] = m = scored(fit, "adaptive", **kw)
        print(f"  adaptive {kw}: {m['R@5']:.3f} / {m['MRR@10']:.3f}", flush=True)
    best = max(grid, key=lambda key: round(grid[key]["MRR@10"], 3))
    return best_w, dict(best)


def report(recs: list[dict]) -> None:
    from localreason.search import ranking

    parts = defaultdict(list)
    for r in recs:
        parts[r["part"]].append(r)
    product = ranking.fusion_constants()
    fit = [r for r in recs if r["part"] in FIT_PARTS]
    if fit:
        best_w, best_kw = choose(fit)
        print(f"chosen on the fit parts: constant weight {best_w}; adaptive {best_kw} (the product's: {product})")
    else:
        best_kw = product
        print(f"no fit part among these kinds: nothing chosen (the product's: {product})")
    methods = {"BM25 alone": ("lex", {}), "dense alone": ("dense", {}), "RRF k=60": ("rrf", {}),
               f"zsum w={ranking.DENSE_WEIGHT}": ("zsum", {"dense_weight": ranking.DENSE_WEIGHT}),
               "adaptive (product's)": ("adaptive", product)}  # fmt: skip
    if best_kw != product:
        methods["adaptive (chosen)"] = ("adaptive", best_kw)
    print(f"\nR@5 / MRR@10 by part ({cpu_name()}); 'drag' = fused minus the better half, each figure")
    print(f"{'part':<22} {'n':>5} " + " ".join(f"{m:>22}" for m in methods) + "   drag (each fused)")
    for name in sorted(parts, key=lambda p: (p not in FIT_PARTS, p)):
        rs, cells, got = parts[name], [], {}
        for label, (method, kw) in methods.items():
            got[label] = m = scored(rs, method, **kw)
            cells.append(f"{m['R@5']:.3f} / {m['MRR@10']:.3f}")
        better = {k: max(got["BM25 alone"][k], got["dense alone"][k]) for k in ("R@5", "MRR@10")}
        drags = [f"{got[lb]['R@5'] - better['R@5']:+.3f}/{got[lb]['MRR@10'] - better['MRR@10']:+.3f}"
                 for lb in list(methods)[2:]]  # fmt: skip
        tag = "in-sample" if name in FIT_PARTS else "held out"
        print(f"{name[:22]:<22} {len(rs):>5} " + " ".join(f"{c:>22}" for c in cells) + "   " + " ".join(drags)
              + f"  ({tag})")  # fmt: skip


def main() -> None:
    ap = record_arguments(__doc__, 1000)
    args = ap.parse_args()
    if args.from_records:
        return report([json.loads(line) for line in args.from_records.open()])
    recs: list[dict] = []
    for kind in args.kinds:
        recs += manual_records(args) if kind == MANUALS else paragraph_records(kind, args)
        print(f"{kind}: {len(recs)} questions so far", flush=True)
    if args.out:
        with args.out.open("w") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
    report(recs)


if __name__ == "__main__":
    main()
