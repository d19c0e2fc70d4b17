#!/usr/bin/env python3
"""Evaluate `reason` on SQuAD v1.1 dev with the default models.

Answerable: a library of all 48 articles (every paragraph a document, one collection
per article); a fixed random sample of questions. Unanswerable: a second library
without HELD_OUT_COUNT articles (fixed by seed), asked those articles' questions.

Reported: answer support (share of answerable questions where a verified citation's
quotation contains a gold answer), citations per answer, citationsDropped total,
share of answerable questions answered with the no-evidence message (refused), and
the share of unanswerable questions that end with no evidence or an explicit gap
(handled). Also, from the same run, the relevance gate's input for every question of
both sets (passage relevance + a weighted score of the best quotable sentence; the
gate was calibrated on other questions in tune_reason.py), and the retrieval-only
baseline of quoting the top-ranked sentence.

    python scripts/eval_reason.py                       # 200 + 100 questions (~40 minutes)
    python scripts/eval_reason.py --answerable 40 --unanswerable 20
    python scripts/eval_reason.py --calibrate-only      # just the gate's input distributions
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from squad import load_squad, write_corpus  # noqa: E402

HELD_OUT_COUNT = 8


def build(home: Path, corpus: Path, titles: list[str], embedder):
    from localreason.config import load_settings
    from localreason.library import Library

    lib = Library(settings=load_settings(home), embedder=embedder)
    if not (home / ".complete").is_file():
        for t in titles:
            lib.ingest([corpus / t], t[:80])
        (home / ".complete").write_text("ok")
    return lib


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def miss_reason(lib, q: str, golds: list[str], ans, max_tokens: int) -> str:
    """Why an answerable question went unsupported: refused, the gold answer outside the packet
    (further down the evidence, or not retrieved), or in the packet but not among the quotations."""
    from localreason import search

    if ans.no_evidence:
        return "refused"

    def has_gold(text: str) -> bool:
        return any(norm(g) in norm(text) for g in golds)

    evidence = search.progressive_search(lib.index, q)
    if any(has_gold(c.content) for c in search.build_packet(evidence, max_tokens).chunks):
        return "in the packet, not quoted"
    if any(has_gold(h.content) for h in evidence.hits):
        return "beyond the packet"
    return "not retrieved"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/squad"))
    ap.add_argument("--answerable", type=int, default=200)
    ap.add_argument("--unanswerable", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=None, help="evidence budget (default: the answer_budget setting's default)")
    ap.add_argument("--calibrate-only", action="store_true")
    ap.add_argument("--out", type=Path, default=None, help="write one JSON line per question here")
    args = ap.parse_args()

    from localreason import search
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.models import resolve_embedding_model
    from localreason.reason import NO_EVIDENCE_ANSWER, reason
    from localreason.quotes import rank_quotes
    from localreason.config import Settings

    max_tokens = args.max_tokens or Settings.answer_budget  # the default answer_budget setting
    articles = load_squad(args.data_dir)
    corpus = args.data_dir / "corpus"
    write_corpus(articles, corpus)
    titles = [a["title"] for a in articles]
    rng = random.Random(2026)
    held_out = sorted(rng.sample(titles, HELD_OUT_COUNT))
    settings = load_settings(args.data_dir / "lib-all")
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(settings))
    t = time.perf_counter()
    lib_all = build(args.data_dir / "lib-all", corpus, titles, embedder)
    lib_part = build(args.data_dir / f"lib-without-{HELD_OUT_COUNT}", corpus,
                     [t for t in titles if t not in held_out], embedder)  # fmt: skip
    print(f"libraries ready in {time.perf_counter() - t:.0f} s; held out: {', '.join(held_out)}", flush=True)

    answerable = [(qa["question"], [a["text"] for a in qa["answers"]], p["context"])
                  for a in articles if a["title"] not in held_out for p in a["paragraphs"] for qa in p["qas"]]  # fmt: skip
    unanswerable = [qa["question"] for a in articles if a["title"] in held_out for p in a["paragraphs"]
                    for qa in p["qas"]]  # fmt: skip
    answerable = random.Random(1).sample(answerable, args.answerable)
    unanswerable = random.Random(2).sample(unanswerable, args.unanswerable)

    from localreason.reason import ANSWER_GUARD, SENTENCE_GUARD_WEIGHT, gate_score

    def strength(lib, q):
        """reason's gate score: progressive search's relevance + weight x the best quotable sentence's score."""
        evidence = search.progressive_search(lib.index, q)
        packet = search.build_packet(evidence, max_tokens)
        best = rank_quotes(q, [(c.chunk_id, c.content) for c in packet.chunks], embedder.embed, 1)
        return gate_score(evidence.relevance, best[0].score if best else 0.0)

    cos_a = [strength(lib_all, q) for q, _, _ in answerable]
    cos_u = [strength(lib_part, q) for q in unanswerable]
    print(f"\nRelevance gate input (progressive search's relevance + {SENTENCE_GUARD_WEIGHT} x the best sentence's "
          "ranking score):")  # fmt: skip
    for name, xs in (("answerable", cos_a), ("unanswerable", cos_u)):
        qs = statistics.quantiles(xs, n=20)
        print(f"  {name:<13} p5 {qs[0]:.3f}  p10 {qs[1]:.3f}  p25 {qs[4]:.3f}  median {statistics.median(xs):.3f}  "
              f"p75 {qs[14]:.3f}  p95 {qs[18]:.3f}")  # fmt: skip
    for guard in (2.0, 2.1, 2.2, ANSWER_GUARD, 2.3, 2.4):
        refused = sum(c < guard for c in cos_a) / len(cos_a)
        caught = sum(c < guard for c in cos_u) / len(cos_u)
        mark = "  <- reason/gate.py" if guard == ANSWER_GUARD else ""
        print(f"  guard {guard:.2f}: answerable refused {refused:.3f}, unanswerable stopped {caught:.3f}{mark}")
    if args.calibrate_only:
        return

    # Retrieval-only baseline: quote the top-ranked sentence (no model).
    base_hits = 0
    for q, golds, _ in answerable:
        ev = search.progressive_search(lib_all.index, q)
        packet = search.build_packet(ev, max_tokens)
        top = rank_quotes(q, [(c.chunk_id, c.content) for c in packet.chunks], embedder.embed, 1)
        base_hits += bool(top) and any(norm(g) in norm(top[0].text) for g in golds)

    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_gguf

    generator = LlamaGenerator(resolve_gguf(settings))
    out = args.out.open("w") if args.out else None
    supported = refused = dropped = cites = answered = 0
    lengths: Counter[int] = Counter()  # statements per answered question
    misses: Counter[str] = Counter()  # why an answerable question went unsupported
    t0 = time.perf_counter()
    for i, (q, golds, _) in enumerate(answerable):
        ans = reason(lib_all, q, generator=generator, max_tokens=max_tokens)
        quotes = [r.quotation for s in ans.statements for r in s.references]
        ok = any(norm(g) in norm(x) for g in golds for x in quotes)
        supported += ok
        refused += ans.answer == NO_EVIDENCE_ANSWER
        if not ans.no_evidence:
            lengths[len(ans.statements)] += 1
        if not ok:
            misses[miss_reason(lib_all, q, golds, ans, max_tokens)] += 1
        dropped += ans.citations_dropped
        cites += len(ans.citations)
        answered += not ans.no_evidence
        if out:
            out.write(json.dumps({"set": "answerable", "q": q, "gold": golds, "supported": ok, **ans.to_dict()}) + "\n")
        if (i + 1) % 20 == 0:
            print(f"  {i + 1}/{len(answerable)} answerable, support so far {supported / (i + 1):.3f}, "
                  f"{(time.perf_counter() - t0) / (i + 1):.1f} s/question", flush=True)  # fmt: skip
    handled = 0
    for q in unanswerable:
        ans = reason(lib_part, q, generator=generator, max_tokens=max_tokens)
        ok = ans.no_evidence or bool(ans.gaps and any("does not answer" in g or "only weakly" in g for g in ans.gaps))
        handled += ok
        dropped += ans.citations_dropped
        if out:
            out.write(json.dumps({"set": "unanswerable", "q": q, "handled": ok, **ans.to_dict()}) + "\n")
    n, m = len(answerable), len(unanswerable)
    print(f"\nreason on SQuAD v1.1 dev, default models, maxTokens {max_tokens}")
    print(f"answer support: {supported / n:.3f} ({supported}/{n})   [target >= 0.90]")
    print(f"  retrieval-only baseline, top-ranked sentence quoted: {base_hits / n:.3f}")
    print(f"citations per answer: {cites / max(1, answered):.2f}")
    print(f"statements per answer: {sum(k * v for k, v in lengths.items()) / max(1, answered):.2f} "
          f"({', '.join(f'{k}: {v}' for k, v in sorted(lengths.items()))})")
    print(f"unsupported answerable questions, by cause: {', '.join(f'{k} {v}' for k, v in misses.most_common())}")
    print(f"citationsDropped total: {dropped}   [target 0]")
    print(f"answerable refused (no-evidence answer): {refused / n:.3f}   [target <= 0.05]")
    print(f"unanswerable handled (no evidence or explicit gap): {handled / m:.3f} ({handled}/{m})   [target >= 0.70]")


if __name__ == "__main__":
    main()
