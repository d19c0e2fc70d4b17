#!/usr/bin/env python3
"""Evaluate `reason` with its default settings on several kinds of text (bench/data/qa_sets.py).

Every domain is its own library, read from the shared SQuAD-format sets (bench/data/qa.py, ``--qa-data``). Its
questions come in four kinds: answerable, near-miss (the library keeps the article but not the passage that states
the answer), off-topic (the whole article is left out) and, on squad-dev, unanswerable (SQuAD 2.0's questions
written against a paragraph that is in the library and does not answer them). Fit domains (squad-dev, new_wiki)
are reported on their evaluation half of articles, which no fit used; held-out domains (reddit, Amazon reviews)
were kept out of every fit.

Reported per domain and per group (fit / held out, the mean over domains):
- support: the share of answerable questions with a verified quotation that holds the answer;
- first: the first statement holds it; precision: the share of an answer's statements that hold it
  (mean over answered questions); words: words per answer (its quotations);
- shown / right / wrong: the answer is led by a phrase (shares of answerable questions), and that phrase is
  right (token F1 >= 0.5 with a gold answer, in a first statement that holds the answer) or not; phrase
  precision: right / shown;
- refused: answerable questions given the no-evidence answer; marked: answerable questions answered
  with a gap saying the question is not (clearly) answered;
- near-miss handled: the no-evidence answer, or a gap saying the question is not answered;
- off-topic stopped: the no-evidence answer; off+marked: stopped, or answered with a gap saying the
  question is not (clearly) answered; unanswerable stopped / +marked: the same for SQuAD 2.0's questions;
- citationsDropped: total over all questions;
- with the real model: p50 latency, and the ratio of the request's time to the pure llama.cpp cost
  of what the model reads and writes (prompt tokens at the bare prompt rate, output tokens at the
  bare generation rate, both measured in this run).

``--model obedient`` replaces the model's reply by the forced statements alone (the real tokenizer and
context still fit the prompt, and the real model still re-orders the best sentences, reason/rerank.py):
the answer as the ranking and the re-ordering decide it, in a fraction of the time.
``--model ablate`` runs both the real model and the obedient reply on each question, to show what the
model's own writing changes. ``--rerank both`` asks every question without and with the model's
re-ordering (``answer_rerank = likelihood``, off by default), in the same run: what that decision changes.

    python -m bench.quality.reason --data-dir .cache/qa                    # real model
    python -m bench.quality.reason --data-dir .cache/qa --model obedient --answerable 150
    python -m bench.quality.reason --model obedient --reader both     # with and without the trained reader
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path

from bench import cpu_name
from bench.data import qa, qa_sets
from bench.trace import ObedientModel


def unanswered(ans) -> bool:
    """The answer says the question was not answered: no evidence, or a gap that says so (reason's own
    "does not clearly answer" or weak-scope gap, or the model's limitation that the evidence does not answer)."""
    from localreason.reason import LIMITATION_CHOICES, NOT_ANSWERED_GAP, WEAK_SCOPE_GAP

    return ans.no_evidence or bool({NOT_ANSWERED_GAP, WEAK_SCOPE_GAP, LIMITATION_CHOICES[0]} & set(ans.gaps))


def phrase_right(question, ans, held: list[bool]) -> bool | None:
    """None when no phrase leads the answer; else whether it is right: token F1 >= 0.5 with a gold answer, in a
    first statement that holds the answer (as bench.tune.passage judges it)."""
    phrase = ans.statements[0].phrase if ans.statements else None
    if phrase is None:
        return None
    f1 = max((qa_sets.token_f1(phrase.text, g) for g in question.golds), default=0.0)
    return bool(held and held[0] and f1 >= 0.5)


def score(question, ans) -> dict:
    """One question's record: what the answer did and whether it holds the answer."""
    quotes = [" ".join(r.quotation for r in s.references) for s in ans.statements]
    held = [question.held_by(x) for x in quotes]
    t = ans.timings
    phrase = ans.statements[0].phrase.text if ans.statements and ans.statements[0].phrase else None
    return {"q": question.text, "kind": question.kind, "noEvidence": ans.no_evidence, "unanswered": unanswered(ans),
            "phrase": phrase, "phraseRight": phrase_right(question, ans, held),
            "held": held, "words": sum(len(x.split()) for x in quotes), "dropped": ans.citations_dropped,
            "latencyMs": ans.latency_ms, "promptTokens": t.prompt_tokens, "completionTokens": t.completion_tokens,
            "modelMs": t.prompt_ms + t.generate_ms + t.rerank_ms, "rerankTokens": t.rerank_tokens,
            "rerankMs": t.rerank_ms, "readMs": t.read_ms, "gaps": list(ans.gaps), "quotes": quotes}  # fmt: skip


def summary(records: list[dict]) -> dict:
    a = [r for r in records if r["kind"] == "answerable"]
    answered = [r for r in a if not r["noEvidence"]]
    near = [r for r in records if r["kind"] == "near-miss"]
    off = [r for r in records if r["kind"] == "off-topic"]
    unanswerable = [r for r in records if r["kind"] == "unanswerable"]
    shown = [r for r in a if r.get("phraseRight") is not None]

    def share(xs, f):
        return sum(map(f, xs)) / len(xs) if xs else float("nan")

    return {
        "support": share(a, lambda r: any(r["held"])),
        "first": share(a, lambda r: bool(r["held"]) and r["held"][0]),
        "precision": share(answered, lambda r: sum(r["held"]) / max(1, len(r["held"]))),
        "shown": share(a, lambda r: r.get("phraseRight") is not None),
        "right": share(a, lambda r: r.get("phraseRight") is True),
        "wrong": share(a, lambda r: r.get("phraseRight") is False),
        "phrase prec": share(shown, lambda r: r["phraseRight"]),
        "statements": share(answered, lambda r: len(r["held"])),
        "words": share(answered, lambda r: r["words"]),
        "refused": share(a, lambda r: r["noEvidence"]),
        "marked": share(a, lambda r: r["unanswered"] and not r["noEvidence"]),
        "near-miss": share(near, lambda r: r["unanswered"]),
        "off-topic": share(off, lambda r: r["noEvidence"]),
        "off+marked": share(off, lambda r: r["unanswered"]),
        "unanswerable": share(unanswerable, lambda r: r["noEvidence"]),
        "unans+marked": share(unanswerable, lambda r: r["unanswered"]),
        "dropped": sum(r["dropped"] for r in records),
        "n": f"{len(a)}/{len(near)}/{len(off)}/{len(unanswerable)}",
    }


COLUMNS = ("support", "first", "precision", "statements", "words", "shown", "right", "wrong", "phrase prec", "refused",
           "marked", "near-miss", "off-topic", "off+marked", "unanswerable", "unans+marked", "dropped")  # fmt: skip
TARGETS = {"support": ">=0.90", "first": ">=0.80", "precision": ">=0.60", "refused": "<=0.05", "near-miss": ">=0.60",
           "off-topic": ">=0.85", "wrong": "<=0.03", "phrase prec": ">=0.90", "dropped": "0"}  # fmt: skip


def print_table(rows: dict[str, dict]) -> None:
    print(f"{'domain':<16} {'n (a/nm/off/un)':>17} " + " ".join(f"{c:>12}" for c in COLUMNS))
    for name, s in rows.items():
        cells = [f"{s[c]:>12}" if c == "dropped" else f"{s[c]:>12.2f}" if c in ("statements", "words")
                 else f"{s[c]:>12.3f}" for c in COLUMNS]  # fmt: skip
        print(f"{name:<16} {s['n']:>17} " + " ".join(cells))
    print(f"{'target':<16} {'':>17} " + " ".join(f"{TARGETS.get(c, ''):>12}" for c in COLUMNS))


def group_mean(rows: list[dict]) -> dict:
    def mean(xs):
        xs = [x for x in xs if x == x]  # a domain without questions of a kind has nan there
        return statistics.fmean(xs) if xs else float("nan")

    out = {c: mean(r[c] for r in rows) for c in COLUMNS if c != "dropped"}
    out["dropped"] = sum(r["dropped"] for r in rows)
    out["n"] = "/".join(str(sum(int(r["n"].split("/")[i]) for r in rows)) for i in range(4))
    return out


def bare_rates(model) -> tuple[float, float]:
    """llama.cpp alone on this machine, now: prompt tokens/s and output tokens/s (no grammar, no library)."""
    llm = model.llm
    text = " ".join(["The river flows past the old mill and the village square in the early morning."] * 40)
    tokens = llm.tokenize(text.encode())[:600]
    llm.reset()
    t = time.perf_counter()
    llm.eval(tokens)
    prompt_rate = len(tokens) / (time.perf_counter() - t)
    llm.reset()
    llm.eval(tokens[:50])
    t = time.perf_counter()
    n = 0
    for _ in llm.generate(tokens[:50], temp=0.0, reset=False):
        n += 1
        if n >= 60:
            break
    return prompt_rate, n / (time.perf_counter() - t)


def main() -> None:
    args = arguments()

    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_embedding_model, resolve_gguf

    settings = load_settings(args.data_dir / "libs")
    from localreason.embed import make_embedder

    info = resolve_embedding_model(settings)
    embedder = SentenceTransformerEmbedder(info) if args.backend == "torch" else make_embedder(info, cache_root=settings.cache_path)
    real = LlamaGenerator(resolve_gguf(settings))
    models = {"real": [("real", real)], "obedient": [("obedient", ObedientModel(real))],
              "ablate": [("real", real), ("obedient", ObedientModel(real))]}[args.model]  # fmt: skip
    from localreason.models import reader_shipped as shipped
    from localreason.readers import packaged_reader

    modes = ["off", "likelihood"] if args.rerank == "both" else [args.rerank]
    if args.reader != "off" and not shipped():
        raise SystemExit("This build has no reader weights: run python -m bench.train.reader first, or use --reader off.")
    readers = {"auto": [("", "reader")], "off": [(", no reader", None)],
               "both": [(", no reader", None), ("", "reader")]}[args.reader]  # fmt: skip
    packaged = packaged_reader() if args.reader != "off" else None  # as a library has it (the passage reader beside)
    readers = [(label, packaged if r else None) for label, r in readers]
    models = [((label if mode == "off" else f"{label}, reranked") + rlabel, model, mode, reader)
              for label, model in models for mode in modes for rlabel, reader in readers]  # fmt: skip
    rates = bare_rates(real) if args.model != "obedient" else None
    results = ask_all(args, embedder, models)
    report(results, args, rates)
    ablations(results)


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="where the libraries are kept")
    qa.add_argument(ap)
    ap.add_argument("--domains", nargs="*", default=list(qa_sets.DOMAINS))
    ap.add_argument("--answerable", type=int, default=40, help="answerable questions per domain")
    ap.add_argument("--near-miss", type=int, default=20, help="near-miss questions per domain")
    ap.add_argument("--off-topic", type=int, default=20, help="off-topic questions per domain")
    ap.add_argument("--unanswerable", type=int, default=20, help="unanswerable questions per domain (squad-dev)")
    ap.add_argument("--half", default="eval", choices=("eval", "fit"), help="which half of the fit domains to ask")
    ap.add_argument("--model", default="real", choices=("real", "obedient", "ablate"))
    ap.add_argument("--rerank", default="off", choices=("likelihood", "off", "both"),
                    help="the model's re-ordering of the best sentences (answer_rerank, off by default); both: each "
                    "question twice")  # fmt: skip
    ap.add_argument("--reader", default="auto", choices=("auto", "off", "both"),
                    help="the trained reader (the reader setting, auto by default); both: each question twice")
    ap.add_argument("--backend", default="auto", choices=("torch", "auto"),
                    help="how questions are embedded: the default backend (OpenVINO, as users run it) or torch (as the "
                    "runs before 2026-12-06; the vectors are interchangeable)")
    ap.add_argument("--out", type=Path, default=None, help="write one JSON line per question here")
    return ap.parse_args()


def ask_all(args, embedder, models) -> dict[str, dict[str, list]]:
    """{model label: {domain: one record per question}}, written as JSON lines to --out too."""
    from localreason.config import Settings
    from localreason.reason import reason

    out = args.out.open("w") if args.out else None
    results: dict[str, dict[str, list]] = defaultdict(dict)
    t0 = time.perf_counter()
    for name in args.domains:
        domain = qa_sets.load(name, args.qa_data)
        lib = qa_sets.build_library(domain, args.data_dir, embedder)
        asked = [q for kind in qa_sets.KINDS
                 for q in qa_sets.sample(domain, kind, getattr(args, kind.replace("-", "_")), args.half)]
        for label, model, mode, reader in models:
            records = []
            for q in asked:
                rec = score(q, reason(lib, q.text, generator=model, max_tokens=Settings.answer_budget, rerank=mode,
                                      reader=reader))  # fmt: skip
                records.append(rec)
                if out:
                    out.write(json.dumps({"domain": name, "model": label, **rec}) + "\n")
            results[label][name] = records
        print(f"  {name}: {len(asked)} questions, {time.perf_counter() - t0:.0f} s so far", flush=True)
    return results


def report(results: dict, args, rates) -> None:
    """Per model: the table per domain and group; with the real model, its latency against bare llama.cpp."""
    from localreason.config import Settings

    for label, by_domain in results.items():
        print(f"\nreason, default settings (answer budget {Settings.answer_budget}), model: {label}, "
              f"fit domains' {args.half} half, {cpu_name()}")  # fmt: skip
        rows = {name: summary(recs) for name, recs in by_domain.items()}
        for role in ("fit", "held out"):
            members = [n for n in rows if n in qa_sets.DOMAINS and qa_sets.DOMAINS[n][2] == role]
            if members:
                rows[f"[{role}]"] = group_mean([rows[n] for n in members])
        print_table(rows)
        if label.startswith("real"):
            latency_lines(by_domain, rates)


def latency_lines(by_domain: dict, rates) -> None:
    """p50 latency and tokens, and the answered requests' time against the pure llama.cpp cost of their tokens."""
    answered = [r for recs in by_domain.values() for r in recs if not r["noEvidence"]]
    every = [r for recs in by_domain.values() for r in recs]
    if answered and rates:
        pure = [(r["promptTokens"] + r["rerankTokens"]) / rates[0] + r["completionTokens"] / rates[1]
                for r in answered]  # fmt: skip
        print(f"\nlatency p50 {statistics.median(r['latencyMs'] for r in every) / 1000:.2f} s over all "
              f"questions, {statistics.median(r['latencyMs'] for r in answered) / 1000:.2f} s over answered "
              f"ones; the model reads p50 {statistics.median(r['promptTokens'] for r in answered):.0f} tokens "
              f"to write and {statistics.median(r['rerankTokens'] for r in answered):.0f} to re-order "
              f"({statistics.median(r['rerankMs'] for r in answered) / 1000:.2f} s), and writes "
              f"{statistics.median(r['completionTokens'] for r in answered):.0f}")  # fmt: skip
        print(f"bare llama.cpp here, now: {rates[0]:.0f} prompt tokens/s, {rates[1]:.0f} output tokens/s; "
              f"answered request / pure llama.cpp cost of its tokens: p50 "
              f"{statistics.median(r['latencyMs'] / 1000 / p for r, p in zip(answered, pure)):.2f}x")  # fmt: skip


def ablations(results: dict) -> None:
    """How many answers changed between two models run on the same questions (--model ablate, --rerank both)."""
    for one, other, what in (("real", "obedient", "the model's own writing"),
                             ("real, reranked", "real", "the model's re-ordering"),
                             ("obedient, reranked", "obedient", "the model's re-ordering")):  # fmt: skip
        if one in results and other in results:
            changed = sum(a["quotes"] != b["quotes"] or a["unanswered"] != b["unanswered"]
                          for n in results[one] for a, b in zip(results[one][n], results[other][n]))  # fmt: skip
            total = sum(len(v) for v in results[one].values())
            print(f"\nablation ({one} against {other}): {what} changed {changed} of {total} answers")


if __name__ == "__main__":
    main()
