"""deep_search latency on SQuAD v1.1 dev (the shared sets, bench/data/qa.py) as paragraph retrieval (2,067 paragraphs as documents), and on the
same library grown to 20,000 chunks: p50/p95 with the model loaded, and the search alone, today's against the
previous one, alternating in the same run. bench.quality.retrieval prints the same after its accuracy tables,
on its library; this is that part alone.

    python -m bench.speed.retrieval                         # 300 queries
    python -m bench.speed.retrieval --latency-queries 50
    python -m bench.speed.retrieval --manual sqlite          # on a manual of 11,363 passages
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from bench import cpu_name
from bench.data import qa


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="where the corpus is written")
    qa.add_argument(ap)
    ap.add_argument("--questions", type=int, default=2000, help="draw the queries from a fixed random sample of this "
                    "many questions (0 = all), as bench.quality.retrieval does")  # fmt: skip
    ap.add_argument("--latency-queries", type=int, default=300)
    ap.add_argument("--manual", help="instead: a manual's library of bench.quality.manuals (sqlite: 11,363 different "
                    "passages), its own questions as the queries")
    ap.add_argument("--manuals-dir", type=Path, default=Path(".cache/manuals"))
    args = ap.parse_args()
    if args.manual:
        return manual_latency(args.manual, args.manuals_dir, args.latency_queries)

    from bench.data.squad import squad_library, squad_questions

    print(f"deep_search latency, {cpu_name()}", flush=True)
    lib, embedder, settings, articles, corpus = squad_library(args.data_dir, args.qa_data)
    qs, _, _ = squad_questions(lib, articles, corpus, args.questions)
    latency_part(lib, settings, embedder, [q for q, _ in qs], args.latency_queries)


def manual_latency(manual: str, manuals_dir: Path, n: int) -> None:
    """deep_search latency on a manual's library (passages that are not copies of each other, unlike the grown
    SQuAD library, where re-reading reads a copied passage once)."""
    from bench.data import manuals as M
    from bench.quality.manuals import library
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(manuals_dir / "libs")
    lib = library(manual, manuals_dir, make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path))
    questions = [q.question for q in M.questions(manual)]
    latency(lib, random.Random(7).sample(questions, min(n, len(questions))), f"deep_search latency, {manual}, "
            f"{lib.store.paragraph_count()} passages")  # fmt: skip
    lib.close()


def latency_part(lib, settings, embedder, questions: list[str], n: int) -> None:
    """Latency on ``lib`` (closed after), then on its documents copied until it holds 20,000 chunks."""
    from localreason.library import Library

    sample = random.Random(7).sample(questions, min(n, len(questions)))
    print()
    latency(lib, sample, f"deep_search latency, {lib.store.paragraph_count()} chunks")
    lib.close()
    grow(settings.db_path, target=20_000)
    big = Library(settings=settings, embedder=embedder)
    latency(big, sample, f"deep_search latency, {big.store.paragraph_count()} chunks")
    big.close()


def latency(lib, queries: list[str], label: str) -> None:
    from localreason import search
    from localreason.search.ranking import distinct_search

    lib.deep_search(queries[0])  # warm: index loaded, caches filled
    times = []
    for q in queries:
        t = time.perf_counter()
        lib.deep_search(q, limit=10)
        times.append((time.perf_counter() - t) * 1000)
    q = statistics.quantiles(times, n=20)
    print(f"{label}: p50 {statistics.median(times):.1f} ms, p95 {q[18]:.1f} ms over {len(times)} queries "
          f"(targets: p50 < 50 ms at 20,000 chunks before the re-reading, < 300 ms at 10,000 with it; "
          f"search_reread {lib.settings.search_reread})")  # fmt: skip
    # The search alone (query vectors computed first): the previous deep_search (the 10 best, a lift only for a word in
    # one passage, no folding of copies) and today's, alternating, in the same run.
    scope, vecs = search.ResolvedScope(), lib.embedder.embed(queries)
    ways = {"previous": lambda q, v: lib.store.hits([r.rowid for r in search.hybrid(lib.index, q, 10, scope, qvec=v,
                                                                                     rarity="step")]),
            "today": lambda q, v: distinct_search(lib.index, q, 10, scope, qvec=v)}  # fmt: skip
    spent: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(2):
        for name, fn in ways.items():
            for q, v in zip(queries, vecs):
                t = time.perf_counter()
                fn(q, v)
                spent[name].append((time.perf_counter() - t) * 1000)
    p50 = {name: statistics.median(ts) for name, ts in spent.items()}
    print(f"  search alone, p50: previous {p50['previous']:.1f} ms, today {p50['today']:.1f} ms "
          f"(ratio {p50['today'] / p50['previous']:.2f})")  # fmt: skip


def grow(db_path: Path, target: int) -> None:
    """Copy the library's documents (with their stored vectors, under new ids) until it holds ``target`` chunks.

    Only for timing: the copies are real rows, indexed by FTS5 and FAISS like any other.
    """
    import sqlite3

    from localreason.ids import derived_id

    db = sqlite3.connect(db_path)
    n = db.execute("SELECT COUNT(*) FROM chunks WHERE level = 2").fetchone()[0]
    copies = max(0, -(-target // n) - 1)
    docs = db.execute("SELECT * FROM documents").fetchall()
    cols = [r[1] for r in db.execute("PRAGMA table_info(documents)")]
    ccols = [r[1] for r in db.execute("PRAGMA table_info(chunks)") if r[1] != "rowid"]
    db.execute("BEGIN")
    for c in range(1, copies + 1):
        for doc in docs:
            row = dict(zip(cols, doc))
            new_doc = derived_id("doc", row["id"], str(c))
            new_row = {**row, "id": new_doc, "source_path": f"{row['source_path']}#copy{c}"}
            db.execute(f"INSERT INTO documents ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                       [new_row[k] for k in cols])  # fmt: skip
            chunk_rows = db.execute(f"SELECT {','.join(chr(34) + k + chr(34) for k in ccols)} FROM chunks "
                                    "WHERE document_id = ?", (row["id"],)).fetchall()  # fmt: skip
            ids = {r[0]: derived_id("chk", r[0], str(c)) for r in chunk_rows}
            for r in chunk_rows:
                rec = dict(zip(ccols, r))
                rec["id"] = ids[rec["id"]]
                rec["document_id"] = new_doc
                rec["parent_id"] = ids.get(rec["parent_id"], new_doc)
                db.execute(f"INSERT INTO chunks ({','.join(chr(34) + k + chr(34) for k in ccols)}) "
                           f"VALUES ({','.join('?' * len(ccols))})", [rec[k] for k in ccols])  # fmt: skip
    gen = int((db.execute("SELECT value FROM meta WHERE key='generation'").fetchone() or ["0"])[0]) + 1
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (str(gen),))
    db.execute("COMMIT")
    db.close()


if __name__ == "__main__":
    main()
