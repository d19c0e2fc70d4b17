#!/usr/bin/env python3
"""Libraries of 100,000 and 1,000,000 passages: search speed, start-up, memory, disk, recall, growth.

The passages are real text with real vectors, replicated: the 7,733 paragraphs of SQuAD 1.1 dev and SQuAD-shifts
(new_wiki, reddit, Amazon reviews), read from the shared SQuAD-format files (``--qa-data``, bench/data/qa.py),
are embedded once with the product's embedder, and each library repeats them, every copy's vector moved by a
small random step (cosine ~0.99 to the original, like a near-paraphrase) so no two vectors tie. Documents of 50
passages are written through the store's own write path (one transaction per document, full-text index
included); the vector index is then built the way a library builds it.

For each size it reports, in one run:
- deep_search p50/p95 over real questions (warm process), with the index the library chose
  (``auto``: exact below IVF_FROM passages, IVF from there) and, as the baseline, exact search
  over the same vectors;
- recall@10 of the chosen index against exact search (dense retrieval): the lists probed are swept on 500
  questions and the chosen setting reported on 500 others;
- what opening the index costs: the file read vs memory-mapped, the check against SQLite by rowid list
  (with and without migration 6's index) vs by digest;
- the first query from a new process (start, imports, opening the library, loading the index and
  the embedding model, embedding and searching), and that process's peak memory;
- the size on disk, and the time to ingest 1,000 more documents (real files, real ingest: paragraphs of SQuAD 1.1
  train, none of which is a seed passage).
Targets at 1M: deep_search p50 < 100 ms, first query < 3 s, memory < 3 GB, recall@10 >= 0.98.

    python -m bench.speed.scale                        # 100k and 1M (about 25 minutes the first time)
    python -m bench.speed.scale --sizes 100000         # one size
    python -m bench.speed.scale --sizes 1000000 --quick     # only open costs and recall of a built library
    python -m bench.speed.scale --sizes 10000 --grow 20 --data-dir /tmp/scale   # a smoke run

The seed vectors are cached under a name that hashes the seed texts, and each library's stamp names FORMAT, the
seed texts' hash and the embedder: a cache made from other texts (the archive-era sets) is rebuilt, not trusted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.data import qa

SOURCES = ("squad-dev", "new_wiki", "reddit", "amazon")
"""The sets (bench/data/qa.py) whose paragraphs are the seed passages, and whose questions are searched for."""
GROWTH = "squad-train"
"""The set whose paragraphs are ingested as new documents (disjoint from the seeds: other articles)."""
PER_DOC = 50
NOISE = 0.15
"""Length of the random step added to each copy's vector before normalising (cosine ~0.99)."""
FORMAT = 3
"""Bumped when the way libraries are built here changes (a cached library of another format is rebuilt). 3: the
seeds are the shared sets' paragraphs (SOURCES), no longer the archive's."""


def seed_texts(qa_data) -> tuple[list[str], list[str], list[str], str]:
    """(paragraphs, questions, each question's paragraph, a hash of the paragraphs) of SOURCES."""
    import hashlib

    texts, questions, golds = [], [], []
    for name in SOURCES:
        for art in qa.articles(name, qa_data):
            for para in art["paragraphs"]:
                texts.append(" ".join(para["context"].split()))
                questions += [q["question"] for q in para["qas"]]
                golds += [texts[-1]] * len(para["qas"])
    digest = hashlib.sha256("\0".join(SOURCES + tuple(texts)).encode()).hexdigest()[:12]
    return texts, questions, golds, digest


def seed(data_dir: Path, qa_data):
    """(texts, vectors, questions, question vectors, embedder, the texts' hash) from SOURCES, embedded once and
    cached in ``data_dir`` under the texts' hash."""
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    texts, questions, golds, digest = seed_texts(qa_data)
    settings = load_settings(tempfile.mkdtemp(prefix="lr-seed-"))
    embedder = make_embedder(resolve_embedding_model(settings), "auto", 32, settings.cache_path, notice=print)
    cache = data_dir / f"scale-seed-{digest}-{embedder.fingerprint}.npz"  # vectors of these texts and this model only
    if cache.is_file():
        saved = np.load(cache)
        vecs, qvecs = saved["vecs"], saved["qvecs"]
    else:
        print(f"Embedding {len(texts)} seed passages and 2,000 questions (once) ...", flush=True)
        vecs = embedder.embed(texts)
        qvecs = embedder.embed(random.Random(5).sample(questions, 2000))
        data_dir.mkdir(parents=True, exist_ok=True)
        np.savez(cache, vecs=vecs, qvecs=qvecs)
    qtexts = random.Random(5).sample(questions, 2000)
    qgolds = random.Random(5).sample(golds, 2000)  # the same positions as qtexts: each question's paragraph
    return texts, vecs, list(zip(qtexts, qgolds)), qvecs, embedder, digest


def build(home: Path, size: int, texts: list[str], vecs: np.ndarray, embedder, digest: str) -> None:
    """A library of ``size`` passages under ``home`` (reused if already built the same way: FORMAT, the seed
    texts' hash ``digest``, the embedder)."""
    from localreason.config import load_settings
    from localreason.ingest.pipeline import model_meta
    from localreason.library import Library
    from localreason.tokens import count_tokens

    stamp = home / ".complete"
    tag = f"{FORMAT} {size} {digest} {embedder.fingerprint}"
    if stamp.is_file() and stamp.read_text() == tag:
        from localreason.store.db import Store

        Store(home / "library.sqlite3").close()  # a schema migration, if any, is not timed below
        return
    shutil.rmtree(home, ignore_errors=True)
    lib = Library(settings=load_settings(home), embedder=embedder)
    store = lib.store
    col = lib.ensure_collection("scale")
    for key, value in model_meta(embedder, vecs.shape[1]).items():
        store.set_meta(key, value)
    tokens = [count_tokens(t) for t in texts]
    rng = np.random.default_rng(42)
    order = np.arange(len(texts))
    from tqdm import tqdm

    written = 0
    with tqdm(total=size, unit="passage", desc=f"building {size:,}", mininterval=5) as bar:
        copy = 0
        while written < size:
            if written % len(texts) == 0:
                rng.shuffle(order)
                copy += 1
            take = order[written % len(texts):written % len(texts) + min(PER_DOC, size - written)]
            doc, chunks, moved = one_document(rng, texts, tokens, vecs, take, col.id, f"Passages {written + 1}-"
                                              f"{written + len(take)} (copy {copy})")  # fmt: skip
            store.replace_document(doc, chunks, moved)
            written += len(take)
            bar.update(len(take))
    t = time.perf_counter()
    lib.vectors  # built from SQLite, clustered if the size calls for it, published
    lib.close()
    print(f"  vector index built and saved in {time.perf_counter() - t:.0f} s", flush=True)
    stamp.write_text(tag)


def one_document(rng, texts: list[str], tokens: list[int], vecs: np.ndarray, take: np.ndarray, collection_id: str,
                 title: str) -> tuple[dict, list, np.ndarray]:  # fmt: skip
    """(document row, chunks, vectors) of one document of the passages ``take``: a section chunk holding them all,
    one paragraph chunk each, each vector moved by a random step of length NOISE."""
    from localreason.ids import random_id
    from localreason.store.db import now
    from localreason.types import LEVEL_PARAGRAPH, LEVEL_SECTION, Chunk

    doc_id = random_id("doc")
    noise = rng.standard_normal((len(take), vecs.shape[1])).astype(np.float32)
    moved = vecs[take] + NOISE * noise / np.linalg.norm(noise, axis=1, keepdims=True)
    moved /= np.linalg.norm(moved, axis=1, keepdims=True)
    body = "\n\n".join(texts[i] for i in take)
    section = Chunk(random_id("chk"), doc_id, LEVEL_SECTION, doc_id, 0, (), sum(tokens[i] for i in take),
                    body, 0, len(body))  # fmt: skip
    chunks, pos = [section], 0
    for j, i in enumerate(take):
        chunks.append(Chunk(random_id("chk"), doc_id, LEVEL_PARAGRAPH, section.id, j, (), tokens[i],
                            texts[i], pos, pos + len(texts[i])))  # fmt: skip
        pos += len(texts[i]) + 2
    doc = {"id": doc_id, "collection_id": collection_id, "title": title, "source_path": f"/scale/{doc_id}.txt",
           "format": "text", "content_hash": doc_id, "size_bytes": len(body), "mtime": 0.0,
           "char_count": len(body), "token_count": section.token_count, "text": body, "updated_at": now(),
           "embedding": moved[0].tobytes()}  # fmt: skip
    return doc, chunks, moved


def disk_mb(home: Path) -> float:
    return sum(p.stat().st_size for p in home.rglob("*") if p.is_file()) / 1e6


FIRST_QUERY = """
import json, sys, time
t0 = time.perf_counter()
from localreason.library import Library
lib = Library(sys.argv[1])
hits = lib.deep_search(sys.argv[2], limit=10)
t1 = time.perf_counter()
hwm = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0])  # peak of this process image
print(json.dumps({"in_process_s": t1 - t0, "hits": len(hits), "kind": lib.index_info()["kind"], "rss_mb": hwm / 1024}))
"""


def first_query(home: Path, question: str) -> dict:
    """A new process answers one deep_search: wall time from spawn, and its peak memory."""
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FIRST_QUERY, str(home), question], capture_output=True, text=True,
                         check=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})  # fmt: skip
    wall = time.perf_counter() - t
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall_s": wall}


def percentiles(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.median(xs), xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def recall(vectors, qvecs, row: dict):
    """Recall@10 of the chosen index against exact search, into ``row``; returns (exact index, questions used).

    NPROBE is chosen on one set of 500 question vectors (the sweep, printed) and the recall of the chosen
    value is reported on another 500 it was not chosen on (``recall_at_10``; ``recall_at_10_sweep_set`` beside).
    """
    import faiss

    from localreason import search
    from localreason.store import vectors as vectors_mod

    ids, vecs = vectors.contents()
    exact = faiss.IndexIDMap2(faiss.IndexFlatIP(vecs.shape[1]))
    exact.add_with_ids(vecs, ids)
    del vecs

    def recall_on(q) -> float:
        _, truth = exact.search(q, 10)
        got = [vectors.search(v, 10)[1][:10] for v in q]
        return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(truth, got)]))

    sweep_q, held_q = np.ascontiguousarray(qvecs[300:800]), np.ascontiguousarray(qvecs[800:1300])
    row["recall_at_10"] = recall_on(held_q)
    row["recall_at_10_sweep_set"] = recall_on(sweep_q)
    if vectors.kind == "ivf":  # how many lists a query must scan for the recall target (on the sweep set)
        chosen = vectors_mod.NPROBE
        sweep = {}
        for probe in (16, 32, 48, 64, 96, 128, 192):
            vectors_mod.NPROBE = probe
            r = recall_on(sweep_q)
            t = time.perf_counter()
            for v in sweep_q[:100]:
                vectors.search(v, search.CANDIDATES)
            sweep[probe] = (r, 10 * (time.perf_counter() - t))  # ms per query
        vectors_mod.NPROBE = chosen
        row["nprobe_sweep"] = {p: f"recall@10 {r:.3f}, {ms:.1f} ms" for p, (r, ms) in sweep.items()}
    return exact, sweep_q


def open_costs(home: Path, row: dict) -> None:
    """What opening the index costs, the old way and the new: reading vs mapping the file, and checking it
    against SQLite by the full rowid list vs by the digest (into ``row``)."""
    import faiss

    from localreason.store.db import Store, rowid_digest
    from localreason.store.vectors import VectorIndex

    meta = VectorIndex.published(home / "vectors.faiss") or {}
    file = str(home / meta["file"])
    for label, flag in (("read", 0), ("mapped", faiss.IO_FLAG_MMAP if meta.get("kind") == "ivf" else 0)):
        t = time.perf_counter()
        index = faiss.read_index(file, flag)
        row[f"open_{label}_s"] = time.perf_counter() - t
    held = VectorIndex(home / "vectors.faiss", index.d)
    held.index = index
    ids = held.ids()
    store = Store(home / "library.sqlite3")
    t = time.perf_counter()
    wanted = store.paragraph_rowids()
    np.setdiff1d(ids, wanted, assume_unique=True), np.setdiff1d(wanted, ids, assume_unique=True)
    row["check_rowid_list_s"] = time.perf_counter() - t
    t = time.perf_counter()
    same = store.paragraph_digest() == rowid_digest(ids)
    row["check_digest_s"] = time.perf_counter() - t
    row["digest_agrees"] = same
    t = time.perf_counter()
    store.db.execute("SELECT rowid FROM chunks NOT INDEXED WHERE level = 2 AND embedding IS NOT NULL").fetchall()
    row["check_rowid_list_without_index_s"] = time.perf_counter() - t  # what migration 6's index saves
    store.close()


def measure(home: Path, size: int, questions, qvecs, embedder, qa_data, grow: int) -> dict:
    from localreason.config import load_settings
    from localreason.library import Library

    qtexts = [q for q, _ in questions]

    row: dict = {"size": size}
    runs = [first_query(home, qtexts[i]) for i in range(5)]
    row["first_query_s"] = statistics.median(r["wall_s"] for r in runs)
    row["first_query_runs"] = [round(r["wall_s"], 2) for r in runs]
    row["first_rss_mb"] = max(r["rss_mb"] for r in runs)

    lib = Library(settings=load_settings(home), embedder=embedder)
    t = time.perf_counter()
    vectors = lib.vectors
    row["index_open_s"] = time.perf_counter() - t
    row["index"] = lib.index_info()
    lib.deep_search(qtexts[0])  # the model is warm
    sample = list(range(100, 300))
    time_deep_search(lib, questions, sample, row)
    time_parts(lib, qtexts, sample, row)
    time_dense(vectors, qvecs, row)
    row["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row["disk_mb"] = disk_mb(home)

    # 1,000 more documents, as files through the real ingest (paragraphs of SQuAD 1.1 train).
    if grow:
        grow_and_shrink(lib, qa_data, grow, row)
    lib.close()
    return row


def time_deep_search(lib, questions, sample: list[int], row: dict) -> None:
    """deep_search p50/p95 and found@10 with the product's lexical postings budget, and with every word scored."""
    from localreason.search import ranking

    qtexts = [q for q, _ in questions]
    budget = ranking.LEXICAL_POSTINGS
    for label, postings in (("", budget), ("_unbounded", 10**12)):  # the product; every query word scored
        ranking.LEXICAL_POSTINGS = postings
        times, found = [], 0
        for i in sample:
            t = time.perf_counter()
            hits = lib.deep_search(qtexts[i], limit=10)
            times.append(time.perf_counter() - t)
            found += any(" ".join(h.content.split()) == questions[i][1] for h in hits)
        row[f"deep_search{label}_p50_ms"], row[f"deep_search{label}_p95_ms"] = (1000 * x for x in percentiles(times))
        row[f"found_at_10{label}"] = found / len(sample)
    ranking.LEXICAL_POSTINGS = budget


def time_parts(lib, qtexts: list[str], sample: list[int], row: dict) -> None:
    """p50 of a search's parts: embedding the question, the dense ranking, the lexical ranking."""
    from localreason import search

    parts = {"embed": [], "dense": [], "lexical": []}
    scope = search.ResolvedScope()
    for i in sample[:100]:
        t = time.perf_counter()
        v = lib.embedder.embed([qtexts[i]])[0]
        parts["embed"].append(time.perf_counter() - t)
        t = time.perf_counter()
        search.dense_ranking(lib.index, v, search.CANDIDATES, scope)
        parts["dense"].append(time.perf_counter() - t)
        t = time.perf_counter()
        search.lexical_ranking(lib.index, qtexts[i], search.CANDIDATES, scope)
        parts["lexical"].append(time.perf_counter() - t)
    row["parts_p50_ms"] = {k: 1000 * statistics.median(v) for k, v in parts.items()}


def time_dense(vectors, qvecs, row: dict) -> None:
    """Recall of the chosen index against exact search, and the dense search's p50 with each."""
    from localreason import search

    exact, q = recall(vectors, qvecs, row)
    exact_t, chosen_t = [], []
    for v in q[:100]:
        t = time.perf_counter()
        exact.search(v.reshape(1, -1), search.CANDIDATES)
        exact_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        vectors.search(v, search.CANDIDATES)
        chosen_t.append(time.perf_counter() - t)
    row["dense_exact_p50_ms"] = 1000 * statistics.median(exact_t)
    row["dense_chosen_p50_ms"] = 1000 * statistics.median(chosen_t)
    del exact


def grow_and_shrink(lib, qa_data, grow: int, row: dict) -> None:
    """Ingest ``grow`` new documents as files (paragraphs of GROWTH), then remove them (the library is left as
    built)."""
    extra = Path(tempfile.mkdtemp(prefix="lr-grow-"))
    paras = [p["context"] for a in qa.articles(GROWTH, qa_data) for p in a["paragraphs"]][:grow]
    for i, text in enumerate(paras):
        (extra / f"{i:04d}.txt").write_text(text + "\n", encoding="utf-8")
    t = time.perf_counter()
    report = lib.ingest([extra], "grown")
    row["grow_s"] = time.perf_counter() - t
    row["grow_docs"] = report.counts["added"]
    t = time.perf_counter()
    lib.remove("grown")  # the library is left as built, for the next run
    row["shrink_s"] = time.perf_counter() - t
    shutil.rmtree(extra, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/scale"),
                    help="cache folder: the seed vectors and the built libraries")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--grow", type=int, default=1000, help="documents ingested into each big library (0: skip)")
    ap.add_argument("--quick", action="store_true",
                    help="only the open costs and the recall of an already built library (no search timing)")
    args = ap.parse_args()
    texts, vecs, questions, qvecs, embedder, digest = seed(args.data_dir, args.qa_data)
    print(f"seed: {len(texts)} passages, {len(questions)} questions; embedding backend {embedder.backend}",
          flush=True)  # fmt: skip
    rows = []
    for size in args.sizes:
        home = args.data_dir / f"lib-{size}"
        build(home, size, texts, vecs, embedder, digest)
        if args.quick:
            from localreason.config import load_settings
            from localreason.library import Library

            row = {"size": size}
            open_costs(home, row)
            lib = Library(settings=load_settings(home), embedder=embedder)
            recall(lib.vectors, qvecs, row)
            lib.close()
            print(json.dumps(row, indent=1), flush=True)
            continue
        row = measure(home, size, questions, qvecs, embedder, args.qa_data, args.grow)
        open_costs(home, row)
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    print("\npassages  index               deep_search p50/p95 ms (every word scored)  found@10 (every word)  "
          "dense chosen/exact ms  recall@10  first query s  its peak RSS MB  disk MB  +1000 docs s")
    for r in rows:
        idx = r["index"]
        kind = f"{idx['kind']}" + (f" {idx['lists']} lists/{idx['probe']}" if idx["kind"] == "ivf" else "")
        print(f"{r['size']:>9,}  {kind:<18}  {r['deep_search_p50_ms']:>6.1f} / {r['deep_search_p95_ms']:<6.1f} "
              f"({r['deep_search_unbounded_p50_ms']:.0f} / {r['deep_search_unbounded_p95_ms']:.0f})        "
              f"{r['found_at_10']:.3f} ({r['found_at_10_unbounded']:.3f})        "
              f"{r['dense_chosen_p50_ms']:>6.2f} / {r['dense_exact_p50_ms']:<7.2f}  {r['recall_at_10']:>9.3f}  "
              f"{r['first_query_s']:>13.2f}  {r['first_rss_mb']:>15.0f}  {r['disk_mb']:>7.0f}  "
              f"{r.get('grow_s', float('nan')):>12.1f}")  # fmt: skip
    print("targets at 1M: deep_search p50 < 100 ms, first query < 3 s, memory < 3 GB, recall@10 >= 0.98")


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
