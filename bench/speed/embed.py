#!/usr/bin/env python3
"""The embedding backends side by side: ingest speed on real documents, retrieval quality on SQuAD.

Two parts, each comparing torch (sentence-transformers, the baseline) with OpenVINO (the same
all-MiniLM-L6-v2 exported from its package; the product's default) in the same run:

- ``ingest``: the python3.11-doc corpus (reST sources and HTML pages, as bench/data/debian_docs.py
  fetches it) ingested into a fresh library with each backend in turn, the order alternating
  over ``--rounds``; files/s, chunks/s and the ratio of the two, plus each model alone on the same
  chunk texts. Target: OpenVINO ingest >= 2x torch's.
- ``retrieval``: SQuAD v1.1 dev (read from the shared SQuAD-format files: ``--qa-data``, bench/data/qa.py) as
  paragraph retrieval (bench/data/squad.py's paragraph_library, as bench/quality/retrieval.py), one library per
  backend, questions (every one, or a ``--questions`` sample) embedded by both. R@1/R@5/MRR@10 for dense only
  and for the product's hybrid, for torch, OpenVINO, and a torch-built library queried with OpenVINO vectors
  (what a library made before the switch sees). Target: within 0.005 of torch's R@5 and MRR@10.
  Also the agreement of the two backends' vectors (cosine).

    python -m bench.speed.embed                            # both parts, whole corpus
    python -m bench.speed.embed --part ingest --fraction 0.25
    python -m bench.speed.embed --part retrieval
    python -m bench.speed.embed --part retrieval --questions 200 --data-dir /tmp/embed   # a smoke run
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.data.debian_docs import fetch_corpus
from bench.data import qa
from bench.data.squad import paragraph_library, paragraph_questions
from bench.quality.retrieval import doc_rank, metrics


def embedders():
    """(name, embedder) for torch and OpenVINO, both loaded (load time printed, not counted)."""
    from localreason.config import load_settings
    from localreason.embed import OpenVINOEmbedder, SentenceTransformerEmbedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(tempfile.mkdtemp(prefix="lr-emb-"))
    info = resolve_embedding_model(settings)
    out = []
    for name, make in (("torch", lambda: SentenceTransformerEmbedder(info, settings.embed_batch_size)),
                       ("openvino", lambda: OpenVINOEmbedder(info, settings.embed_batch_size, settings.cache_path,
                                                             notice=print))):  # fmt: skip
        t = time.perf_counter()
        emb = make()
        emb.embed(["warm up"])
        print(f"{name}: loaded in {time.perf_counter() - t:.1f} s (not counted below)", flush=True)
        out.append((name, emb))
    return out


def part_ingest(args, pairs) -> None:
    from localreason.config import load_settings
    from localreason.library import Library

    files, _ = fetch_corpus(args.data_dir / "bench-ingest")
    rst_html = [f for f in files if not f.name.endswith(".pdf")]
    step = max(1, round(1 / args.fraction))
    files = rst_html[::step]
    stage = Path(tempfile.mkdtemp(prefix="lr-corpus-"))
    for i, f in enumerate(files):
        (stage / f"{i:05d}-{f.name}").symlink_to(f.resolve())
    print(f"\ncorpus: python3.11-doc, {len(files)} files (every {step}th), "
          f"{sum(f.stat().st_size for f in files) / 1e6:.1f} MB", flush=True)  # fmt: skip
    results: dict[str, list[tuple[float, float, int]]] = {name: [] for name, _ in pairs}
    for r in range(args.rounds):
        order = pairs if r % 2 == 0 else pairs[::-1]
        for name, emb in order:
            home = Path(tempfile.mkdtemp(prefix=f"lr-ingest-{name}-"))
            lib = Library(settings=load_settings(home), embedder=emb)
            t = time.perf_counter()
            report = lib.ingest([stage], "bench")
            ingest_s = time.perf_counter() - t
            texts = [row[0] for row in lib.store.db.execute("SELECT text FROM chunks WHERE level = 2")]
            lib.close()
            t = time.perf_counter()
            emb.embed(texts)
            alone_s = time.perf_counter() - t
            failed = report.counts["failed"]
            if not texts:
                raise SystemExit(f"nothing was ingested ({report.counts}): check the corpus under {args.data_dir}")
            results[name].append((ingest_s, alone_s, len(texts)))
            print(f"round {r + 1} {name:>8}: ingest {ingest_s:6.1f} s ({len(files) / ingest_s:5.2f} files/s, "
                  f"{len(texts) / ingest_s:6.1f} chunks/s), model alone {alone_s:6.1f} s, {failed} failed",
                  flush=True)  # fmt: skip
            shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(stage, ignore_errors=True)
    best = {name: min(v) for name, v in results.items()}
    print("\ningest, best of rounds")
    for name, (ingest_s, alone_s, n) in best.items():
        print(f"  {name:>8}: {ingest_s:6.1f} s  {n / ingest_s:6.1f} chunks/s   model alone {n / alone_s:6.1f} chunks/s")
    ratio = best["torch"][0] / best["openvino"][0]
    each = [t[0] / o[0] for t, o in zip(results["torch"], results["openvino"])]
    print(f"  speed-up OpenVINO / torch: {ratio:.2f}x (per round: {', '.join(f'{x:.2f}' for x in each)}; "
          "target >= 2)")


def part_retrieval(args, pairs) -> None:
    """R@1/R@5/MRR@10, dense and hybrid, of each backend's library and of the torch library with OpenVINO queries."""
    from localreason import search

    libs, asked = {}, {}
    for name, emb in pairs:
        t = time.perf_counter()
        lib, _, _, articles, corpus = paragraph_library("squad-dev", args.data_dir / "squad", args.qa_data, emb)
        print(f"{name}: SQuAD dev ingested in {time.perf_counter() - t:.0f} s", flush=True)
        libs[name] = lib
        qs, _, chunk_doc = paragraph_questions(lib, articles, corpus, args.questions)
        asked[name] = ([(q, gold) for q, gold, _ in qs], chunk_doc)  # the same questions, this library's ids
    qs = [q for q, _ in asked["torch"][0]]
    qvecs = {}
    for name, emb in pairs:
        t = time.perf_counter()
        qvecs[name] = emb.embed(qs)
        print(f"{name}: {len(qs)} questions embedded in {time.perf_counter() - t:.1f} s", flush=True)
    vector_agreement(libs["torch"], libs["openvino"], qvecs)
    scope = search.ResolvedScope()
    rows = {}
    for label, name, vecs in (("torch (today)", "torch", qvecs["torch"]), ("openvino", "openvino", qvecs["openvino"]),
                              ("torch library, openvino queries", "torch", qvecs["openvino"])):  # fmt: skip
        lib, (golds, chunk_doc) = libs[name], asked[name]
        dense = [doc_rank([r for r, _ in search.dense_ranking(lib.index, v, 30, scope)], chunk_doc, gold)
                 for (q, gold), v in zip(golds, vecs)]  # fmt: skip
        hybrid = [doc_rank([h.rowid for h in search.hybrid(lib.index, q, 30, scope, qvec=v)], chunk_doc, gold)
                  for (q, gold), v in zip(golds, vecs)]  # fmt: skip
        rows[label] = (metrics(dense), metrics(hybrid))
    retrieval_table(rows, len(qs))
    for lib in libs.values():
        shutil.rmtree(lib.home, ignore_errors=True)
        lib.close()


def vector_agreement(torch_lib, ov_lib, qvecs: dict) -> None:
    """The cosine of the two backends' vectors: of the questions, and of the paragraphs both libraries hold."""
    cos = np.sum(qvecs["torch"] * qvecs["openvino"], axis=1)
    sql = "SELECT rowid, text FROM chunks WHERE level = 2"
    by_text = {t: r for r, t in ov_lib.store.db.execute(sql)}
    common = [(r, by_text[t]) for r, t in torch_lib.store.db.execute(sql) if t in by_text]
    a = torch_lib.store.vectors_of([r for r, _ in common])
    b = ov_lib.store.vectors_of([r for _, r in common])
    pcos = np.array([float(np.dot(a[r], b[o])) for r, o in common])
    print(f"\nvector agreement, cosine torch vs OpenVINO: questions min {cos.min():.5f} mean {cos.mean():.6f}; "
          f"paragraphs min {pcos.min():.5f} mean {pcos.mean():.6f}")  # fmt: skip


def retrieval_table(rows: dict, n_questions: int) -> None:
    print(f"\nSQuAD v1.1 dev paragraph retrieval, {n_questions} questions")
    print(f"{'':<34} {'dense R@1':>9} {'R@5':>6} {'MRR@10':>7}   {'hybrid R@1':>10} {'R@5':>6} {'MRR@10':>7}")
    base = rows["torch (today)"]
    for label, (d, h) in rows.items():
        print(f"{label:<34} {d['R@1']:>9.4f} {d['R@5']:>6.4f} {d['MRR@10']:>7.4f}   {h['R@1']:>10.4f} "
              f"{h['R@5']:>6.4f} {h['MRR@10']:>7.4f}")  # fmt: skip
    for label, (d, h) in rows.items():
        if label != "torch (today)":
            print(f"  {label}: hybrid R@5 {h['R@5'] - base[1]['R@5']:+.4f}, MRR@10 {h['MRR@10'] - base[1]['MRR@10']:+.4f};"
                  f" dense R@5 {d['R@5'] - base[0]['R@5']:+.4f}, MRR@10 {d['MRR@10'] - base[0]['MRR@10']:+.4f}"
                  " (target: within 0.005)")  # fmt: skip


def part_export() -> None:
    """How long the one-time export takes (into a fresh cache folder), and what it recorded."""
    import json

    from localreason.config import load_settings
    from localreason.embed import OpenVINOEmbedder
    from localreason.models import resolve_embedding_model

    cache = Path(tempfile.mkdtemp(prefix="lr-export-"))
    emb = OpenVINOEmbedder(resolve_embedding_model(load_settings(cache / "home")), cache_root=cache)
    t = time.perf_counter()
    folder = emb.prepare()
    took = time.perf_counter() - t
    record = json.loads((folder / "export.json").read_text())
    print(f"\nexport to OpenVINO (once per model): {took:.1f} s, including torch's import; agreement with torch "
          f"{record['agreement']:.5f} (min cosine over the probes), precision {record['precision']}")  # fmt: skip
    shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache"),
                    help="cache folder: bench-ingest/ (the Debian corpus, fetched once) and squad/ (SQuAD dev's "
                         "corpus)")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--questions", type=int, default=0, help="retrieval: a fixed sample of this many questions "
                    "(0: every one)")  # fmt: skip
    ap.add_argument("--part", choices=("ingest", "retrieval", "export", "both"), default="both",
                    help="both: retrieval and ingest; export: only the one-time export's cost")
    ap.add_argument("--fraction", type=float, default=1.0, help="ingest every (1/fraction)-th file")
    ap.add_argument("--rounds", type=int, default=2, help="ingest rounds, alternating which backend goes first")
    args = ap.parse_args()
    if args.part == "export":
        part_export()
        return
    pairs = embedders()
    if args.part in ("retrieval", "both"):
        part_retrieval(args, pairs)
    if args.part in ("ingest", "both"):
        part_ingest(args, pairs)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
