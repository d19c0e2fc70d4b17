#!/usr/bin/env python3
"""Latency of `reason` with the default models, against the pure llama.cpp cost in the same run.

For a fixed sample of SQuAD v1.1 dev questions (the shared sets, bench/data/qa.py; library: all 48 articles,
built here once, or given with --library), at each evidence budget (maxTokens 1000, 2000, 4000,
8000) this reports p50/p95 of the end-to-end latency split into search, packet
(packet + quotation ranking + grammar), prompt evaluation, generation and
verification; and, for the same prompt and output token counts, the pure llama.cpp
cost (evaluate that many prompt tokens, then greedily decode that many tokens, no
grammar, KV cache cleared). The ratio end-to-end / pure is the pipeline's overhead.
It also reports answer support at each budget: the curve the CLI default comes from.

The reader (localreaders.py, ``reader = auto``) is what ``reason`` runs by default; ``--reader`` compares,
at the default budget and question by question in alternating order, ``reason`` without it (today's ranking
of retrieval features) and with it: the p50 of each, the reader's own time, and the ratio.

    python -m bench.speed.reason                     # 20 questions x 4 budgets (~25 minutes)
    python -m bench.speed.reason --questions 8 --budgets 1000 2000
    python -m bench.speed.reason --questions 30 --budgets --reader      # the reader's cost alone
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from bench import cpu_name
from bench.data import qa
from bench.data.squad import folder_name, load_squad, write_corpus


def build(home: Path, corpus: Path, titles: list[str], embedder):
    """The SQuAD dev library (one collection per article), ingested once into ``home``."""
    from localreason.config import load_settings
    from localreason.library import Library

    lib = Library(settings=load_settings(home), embedder=embedder)
    if not (home / ".complete").is_file():
        for t in titles:
            lib.ingest([corpus / folder_name(t)], folder_name(t))
        (home / ".complete").write_text("ok")
    return lib


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def pct(xs: list[float], p: int) -> float:
    if len(xs) == 1:
        return xs[0]
    return statistics.quantiles(xs, n=100, method="inclusive")[p - 1]


def pure_cost(llm, n_prompt: int, n_out: int) -> tuple[float, float]:
    """Seconds to evaluate ``n_prompt`` tokens and then decode ``n_out`` tokens greedily, no grammar."""
    tokens = llm.tokenize(b"The quick brown fox jumps over the lazy dog. " * (n_prompt // 10 + 2))[:n_prompt]
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(tokens)
    t1 = time.perf_counter()
    for _ in range(n_out):
        tok = llm.sample(temp=0.0)
        llm.eval([tok])
    t2 = time.perf_counter()
    llm.reset()
    return t1 - t0, t2 - t1


def reader_cost(lib, gen, reader, qs, budget: int) -> None:
    """reason without and with the reader, question by question (alternating which goes first)."""
    from localreason.reason import reason

    without, with_reader, read_ms, support = [], [], [], [0, 0]
    for i, (q, golds) in enumerate(qs):
        runs = [(None, without, 0), (reader, with_reader, 1)]
        for r, into, k in (runs if i % 2 == 0 else runs[::-1]):
            t = time.perf_counter()
            a = reason(lib, q, generator=gen, max_tokens=budget, reader=r)
            into.append(time.perf_counter() - t)
            quotes = [x.quotation for s in a.statements for x in s.references]
            support[k] += any(norm(g) in norm(x) for g in golds for x in quotes)
            if r is not None and a.timings.read_ms:
                read_ms.append(a.timings.read_ms)
    cpu = cpu_name()
    p_without, p_with = statistics.median(without), statistics.median(with_reader)
    print(f"\nreader cost at budget {budget} on {cpu}, {len(qs)} questions, alternating order:")
    print(f"  ask p50 without the reader {p_without:.2f} s, with it {p_with:.2f} s: +{p_with - p_without:.2f} s "
          f"({p_with / p_without:.2f}x); the reader itself p50 {statistics.median(read_ms or [0]):.0f} ms "
          f"(p95 {pct(read_ms or [0], 95):.0f} ms) on {len(read_ms)} questions it read")  # fmt: skip
    print(f"  support {support[0] / len(qs):.3f} without, {support[1] / len(qs):.3f} with (SQuAD dev; the shipped reader "
          f"was trained on questions of its paragraphs, so this is not a held-out figure)")  # fmt: skip


TODAY = {"read_weak": 0.02, "read_answers": 0.5, "read_lead_ratio": 0.1, "feature_weight": 0.5, "phrase_margin": 4.0,
         "headline_margin": 4.0, "type_veto": False}
"""The calibration shipped with the sentence reader (format 2), before the passage reader: ``--today``'s run."""


def against_today(lib, gen, today_reader: Path, qs, budget: int) -> None:
    """``reason`` as shipped now (the packaged reader, every sentence embedded once by the ranking) against today's
    checkout's work in the same process (the sentence reader in ``today_reader``, its calibration TODAY, and the
    ranking embedding every sentence again with its context: ranking.rank_quotes(read_twice=True)), question
    by question in alternating order: ask p50 of each, their ratio and each reader's own time."""
    from dataclasses import replace
    from functools import partial

    from localreason.reason import pipeline, reason
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.ranking import rank_quotes
    from localreason.readers import Reader, packaged_reader

    old = (Reader(today_reader), replace(DEFAULT, **TODAY), partial(rank_quotes, read_twice=True))
    new = (packaged_reader(), DEFAULT, rank_quotes)  # with its passage reader, as the library runs it
    times, read_ms, before_model = ({"today": [], "now": []} for _ in range(3))
    for i, (q, _) in enumerate(qs):
        runs = [("today", old), ("now", new)]
        for name, (reader, calibration, ranking) in (runs if i % 2 == 0 else runs[::-1]):
            pipeline.rank_quotes = ranking
            gen.llm.reset()  # no run reuses the other's prompt from llama.cpp's cache
            try:
                t = time.perf_counter()
                a = reason(lib, q, generator=gen, max_tokens=budget, reader=reader, calibration=calibration)
                times[name].append(time.perf_counter() - t)
            finally:
                pipeline.rank_quotes = rank_quotes
            if a.timings.read_ms:
                read_ms[name].append(a.timings.read_ms)
            before_model[name].append(a.timings.packet_ms + a.timings.read_ms)
    cpu = cpu_name()
    p_old, p_new = statistics.median(times["today"]), statistics.median(times["now"])
    print(f"\nagainst today's checkout at budget {budget} on {cpu} ({len(qs)} questions, alternating order):")
    print(f"  ask p50 today {p_old:.2f} s, now {p_new:.2f} s ({p_new / p_old:.2f}x); p95 today "
          f"{pct(times['today'], 95):.2f} s, now {pct(times['now'], 95):.2f} s; the reader itself p50 today "
          f"{statistics.median(read_ms['today'] or [0]):.0f} ms, now {statistics.median(read_ms['now'] or [0]):.0f} ms")  # fmt: skip
    print(f"  packet + ranking + reading p50 today {statistics.median(before_model['today']):.0f} ms, now "
          f"{statistics.median(before_model['now']):.0f} ms")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="where the corpus and library are kept")
    qa.add_argument(ap)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--budgets", type=int, nargs="*", default=[1000, 2000, 4000, 8000])
    ap.add_argument("--reader", action="store_true", help="also: the reader's cost at the default budget")
    ap.add_argument("--today", type=Path, metavar="SENTENCE_READER", help="compare with today's checkout's work: the "
                    "sentence reader in this folder (format 2, e.g. .cache/qa/reader/sentence), its calibration, "
                    "the ranking embedding every sentence twice")
    ap.add_argument("--library", type=Path, default=None,
                    help="an existing library of all SQuAD dev articles, one collection each, instead of building "
                    "lib-all")  # fmt: skip
    args = ap.parse_args()

    from localreason.config import load_settings
    from localreason.embed import make_embedder
    from localreason.library import Library
    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_embedding_model, resolve_gguf
    from localreason.reason import reason

    articles = load_squad(args.qa_data)
    corpus = (args.data_dir / "corpus" / "squad-dev").resolve()
    write_corpus(articles, corpus)
    home = args.library or args.data_dir / "lib-all"
    settings = load_settings(home)
    info = resolve_embedding_model(settings)
    embedder = make_embedder(info, cache_root=settings.cache_path)  # what users get (OpenVINO by default)
    if args.library is None and not (home / ".complete").is_file():
        build(home, corpus, [a["title"] for a in articles], embedder).close()
    lib = Library(settings=settings, embedder=embedder)
    qs = [(qa["question"], [a["text"] for a in qa["answers"]]) for a in articles for p in a["paragraphs"]
          for qa in p["qas"]]  # fmt: skip
    qs = random.Random(99).sample(qs, args.questions)
    gen = LlamaGenerator(resolve_gguf(settings))
    t = time.perf_counter()
    gen.llm
    print(f"{cpu_name()}; model load {time.perf_counter() - t:.2f} s; {args.questions} questions; "
          f"n_ctx {gen.context_size}")  # fmt: skip
    from localreason.models import reader_shipped as shipped
    from localreason.readers import packaged_reader

    if args.reader and not shipped():
        raise SystemExit("This build has no reader weights: run python -m bench.train.reader first, or leave out --reader.")
    reader = packaged_reader() if shipped() else None  # what reason uses by default when the package has one
    reason(lib, qs[0][0], generator=gen, max_tokens=500, reader=reader)  # warm up the models
    if args.today:
        against_today(lib, gen, args.today, qs, settings.answer_budget)
    if args.reader:
        reader_cost(lib, gen, reader, qs, settings.answer_budget)
    budget_table(lib, gen, reader, qs, args.budgets)


def budget_table(lib, gen, reader, qs, budgets: list[int]) -> None:
    """At each evidence budget: support, end-to-end latency split by stage, against the pure llama.cpp cost."""
    from localreason.reason import reason

    print(f"\n{'budget':>6} {'support':>8} {'e2e p50':>8} {'e2e p95':>8} {'search':>7} {'packet':>7} {'read':>6} "
          f"{'prompt':>7} {'gen':>6} {'verify':>7} {'phrase':>7} {'pure':>7} {'ratio':>6} {'prompt tok':>10} "
          f"{'out tok':>7}")  # fmt: skip
    for budget in budgets:
        rows = []
        support = 0
        for q, golds in qs:
            t = time.perf_counter()
            a = reason(lib, q, generator=gen, max_tokens=budget, reader=reader)
            total = time.perf_counter() - t
            quotes = [r.quotation for s in a.statements for r in s.references]
            support += any(norm(g) in norm(x) for g in golds for x in quotes)
            tm = a.timings
            if a.no_evidence:
                continue
            p_s, g_s = pure_cost(gen.llm, tm.prompt_tokens, tm.completion_tokens)
            rows.append((total, tm.search_ms / 1000, tm.packet_ms / 1000, tm.prompt_ms / 1000,
                         tm.generate_ms / 1000, tm.verify_ms / 1000, p_s + g_s, tm.prompt_tokens,
                         tm.completion_tokens, tm.read_ms / 1000, tm.phrase_ms / 1000))  # fmt: skip
        cols = list(zip(*rows))
        med = [statistics.median(c) for c in cols]
        ratio = statistics.median([r[0] / r[6] for r in rows])
        print(f"{budget:>6} {support / len(qs):>8.3f} {med[0]:>7.2f}s {pct(list(cols[0]), 95):>7.2f}s "
              f"{med[1]:>6.2f}s {med[2]:>6.2f}s {med[9]:>5.2f}s {med[3]:>6.2f}s {med[4]:>5.2f}s {med[5]:>6.3f}s "
              f"{med[10]:>6.3f}s {med[6]:>6.2f}s {ratio:>6.2f} {med[7]:>10.0f} {med[8]:>7.0f}", flush=True)  # fmt: skip
    print("\nColumns are medians over answered questions (e2e p95 too); ratio = median of e2e / pure per question.")
    print("Targets: ratio <= 1.15; p50 under 8 s at the CLI default budget.")


if __name__ == "__main__":
    main()
