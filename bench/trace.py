"""Record exactly what `reason` sends to the model for a fixed set of SQuAD questions, to prove a
refactor changed nothing.

For each of 300 questions of SQuAD 1.1 dev (read from the shared SQuAD-format files: ``--qa-data``,
bench/data/qa.py, through bench/data/squad.py; the samples, libraries and evidence budget of bench/quality/reason.py
before it covered several kinds of text; the libraries trace-all and trace-without-8 in --data-dir, one collection
per article, are built on first use) this writes one JSON line: the chat messages, the grammar and the forced
prefix handed to the model, and the answer built from an obedient reply (the forced statements and nothing more).
The real model's tokenizer and context size are used, so the packet fitting runs as in a real request; only the
completion is replaced. llama.cpp at temperature 0 is a function of
(messages, grammar, prefix), so two code versions whose traces are identical give identical real
answers, support and refusals, at a small fraction of bench/quality/reason.py's cost.

    python -m bench.trace --data-dir /tmp/squad-cache --out /tmp/after.jsonl [--qa-data FOLDER]
    PYTHONPATH=/path/to/old/checkout:$PWD python -P -m bench.trace --data-dir ... --out /tmp/before.jsonl
    cmp /tmp/before.jsonl /tmp/after.jsonl && echo identical

(From the repository root. ``-P`` keeps the current folder off the import path, so localreason is imported
from the old checkout, the first entry of PYTHONPATH, and bench from this one; a plain ``python -m`` would put
this checkout's localreason first. The first line printed names the localreason that runs.)

Run against copies of the libraries when comparing versions with different schemas (a newer
version migrates the library on open, and an older one then refuses it): --lib-all / --lib-part.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from bench.data import qa
from bench.data.squad import load_squad, write_corpus

HELD_OUT_COUNT = 8
LIBRARIES = 2
"""The libraries' format, written in their stamp: a library built otherwise (from the archive's file, or by an
earlier version of this script) is refused, not trusted."""


class ObedientModel:
    """The real model's tokenizer, context size and question likelihood (reason/rerank.py); a completion that
    adds nothing to the forced prefix."""

    def __init__(self, real) -> None:
        self.real = real
        self.name = real.name
        self.calls: list[dict] = []

    @property
    def context_size(self) -> int:
        return self.real.context_size

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def prompt_tokens(self, messages: list[dict]) -> int:
        return self.real.prompt_tokens(messages)

    def continuation_logprobs(self, contexts, continuation, cancel=None):
        """The real model's question likelihood (scores, question tokens, tokens read): its decision before
        writing (reason/rerank.py) is kept."""
        return self.real.continuation_logprobs(contexts, continuation, cancel=cancel)

    def complete(self, messages, grammar, max_output, prefix="", cancel=None):
        from localreason.generate import Completion

        self.calls.append({"messages": messages, "grammar": grammar, "prefix": prefix, "maxOutput": max_output})
        text = prefix + '],"limitations":[]}' if prefix else '{"statements":[],"limitations":[]}'
        return Completion(text, self.prompt_tokens(messages), self.count_tokens(text), 0.0, 0.0)


def held_out_titles(articles: list[dict]) -> list[str]:
    """The HELD_OUT_COUNT articles the partial library leaves out (their questions are the unanswerable set)."""
    return sorted(random.Random(2026).sample([a["title"] for a in articles], HELD_OUT_COUNT))


def questions(articles: list[dict], answerable: int, unanswerable: int):
    """bench/quality/reason.py's samples: (set, question) pairs in its order."""
    held_out = held_out_titles(articles)
    ans = [(qa["question"], [a["text"] for a in qa["answers"]], p["context"])
           for a in articles if a["title"] not in held_out for p in a["paragraphs"] for qa in p["qas"]]  # fmt: skip
    una = [qa["question"] for a in articles if a["title"] in held_out for p in a["paragraphs"] for qa in p["qas"]]
    return ([("answerable", q) for q, _, _ in random.Random(1).sample(ans, answerable)]
            + [("unanswerable", q) for q in random.Random(2).sample(una, unanswerable)])  # fmt: skip


def build(home: Path, corpus: Path, articles: list[dict]):
    """A library of ``articles`` in ``home`` (their corpus written into ``corpus``, one collection per article
    folder), ingested once; a library stamped otherwise stops the run."""
    from localreason.config import load_settings
    from localreason.library import Library

    stamp, want = home / ".complete", f"trace {LIBRARIES} " + "|".join(a["title"] for a in articles)
    if stamp.is_file() and stamp.read_text() != want:
        raise SystemExit(f"{home} was built otherwise than this version of bench.trace builds it; delete it (or "
                         "give another --data-dir) and run again.")  # fmt: skip
    write_corpus(articles, corpus)
    lib = Library(settings=load_settings(home), embedder=None)
    if not stamp.is_file():
        for folder in sorted(p for p in corpus.iterdir() if p.is_dir()):
            lib.ingest([folder], folder.name[:80])
        stamp.write_text(want)
    return lib


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/qa"), help="cache folder: the corpora and "
                    "libraries built when --lib-all / --lib-part are not given")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--lib-all", type=Path, default=None, help="default: DATA_DIR/trace-all (built here)")
    ap.add_argument("--lib-part", type=Path, default=None, help=f"default: DATA_DIR/trace-without-{HELD_OUT_COUNT}")
    ap.add_argument("--answerable", type=int, default=200)
    ap.add_argument("--unanswerable", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=1000, help="evidence budget (bench/quality/reason.py's default)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    import localreason
    from localreason.config import load_settings
    from localreason.generate import LlamaGenerator
    from localreason.library import Library
    from localreason.models import resolve_gguf
    from localreason.reason import reason

    print(f"localreason from {Path(localreason.__file__).parent}", flush=True)
    articles = load_squad(args.qa_data)
    part = f"trace-without-{HELD_OUT_COUNT}"
    if args.lib_all is None:  # the default libraries, built once
        build(args.data_dir / "trace-all", args.data_dir / "trace-corpus" / "all", articles).close()
    if args.lib_part is None:
        held_out = held_out_titles(articles)
        build(args.data_dir / part, args.data_dir / "trace-corpus" / part,
              [a for a in articles if a["title"] not in held_out]).close()  # fmt: skip
    lib_all = Library(args.lib_all or args.data_dir / "trace-all")
    lib_part = Library(args.lib_part or args.data_dir / part)
    model = ObedientModel(LlamaGenerator(resolve_gguf(load_settings(lib_all.home))))
    with args.out.open("w") as out:
        for i, (kind, q) in enumerate(questions(articles, args.answerable, args.unanswerable)):
            model.calls.clear()
            ans = reason(lib_all if kind == "answerable" else lib_part, q, generator=model, max_tokens=args.max_tokens)
            record = ans.to_dict()
            record["meta"] = {k: v for k, v in record["meta"].items() if k != "latencyMs"}
            out.write(json.dumps({"set": kind, "q": q, "model": model.calls, "answer": record}, sort_keys=True) + "\n")
            if (i + 1) % 50 == 0:
                print(f"{i + 1} questions traced", flush=True)


if __name__ == "__main__":
    main()
