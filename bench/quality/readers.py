#!/usr/bin/env python3
"""Validate the readers as they ship: the OpenVINO models in localreason/models/reader (the sentence reader) and
localreason/models/passage (the passage reader), run through the product's own runtime
(localreason/readers.py: packaged_reader, Reader.read, Reader.read_windows), on exactly the validation
examples the trainers build (bench/train/reader.py and bench/train/passage_reader.py: the articles kept apart by
bench/train/sources.py, a seeded 1% of SQuAD 1.1 train's, and one article's SQuAD 2.0 unanswerable questions),
with the trainers' own figures (their ``validation_figures``): the same numbers a training run prints for its
torch model, for the weights a user runs.

``--reader FOLDER`` / ``--passage FOLDER`` validate other exported weights beside the shipped ones (a new training
run's fp16 export in .cache/qa/reader/sentence and .cache/qa/reader/passage), so that old and new are compared on
the same examples in one run. Each reader's training sets are printed from its reader.json, and whether the
validation articles are new to it.

The shipped weights were trained on the evaluation archive's sets before it was replaced (their model cards,
README.md beside them): new_wiki, SQuAD 1.1 dev's fit half (split by question, not by article), CoQA's Wikipedia
and literature stories, and for the passage reader ROPES. SQuAD 1.1 train was not among them, so its articles
kept apart here are new to them; the SQuAD 2.0 article's paragraphs are SQuAD 1.1 dev's, which they most likely
read (with other, answerable questions).

    python -m bench.quality.readers                                    # the shipped readers (a few minutes)
    python -m bench.quality.readers --reader .cache/qa/reader/sentence --passage .cache/qa/reader/passage

The examples are built once and cached in --data-dir (the trainers' cache: .cache/qa/reader/).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench import ROOT, cpu_name
from bench.data import qa
from bench.train import passage_reader, reader as sentence_trainer, sources

SENTENCE, PASSAGE = 2, 3
"""The readers' input formats (models.READER_FORMATS): the sentence reader's and the passage reader's."""
KIND = {SENTENCE: "sentence reader", PASSAGE: "passage reader"}
TRAINER = {SENTENCE: sentence_trainer, PASSAGE: passage_reader}
SHIPPED = ("Both shipped readers (localreason/models/reader, localreason/models/passage) were trained here on the "
           "shared SQuAD sets and the fit manuals' questions, with the articles validated here kept apart (the "
           "passage reader on a third of SQuAD 1.1 train's batches). Their model cards (README.md beside the "
           "weights) and reader.json's sources say so; each reader's provenance follows.")
BASE = ("Every reader starts from all-MiniLM-L6-v2, whose sentence-embedding training included 87,599 (question, "
        "answer) pairs of SQuAD's training set (its model card): no reader meets these articles' questions wholly "
        "fresh, old and new weights alike.")
LABELS = {
    "pairs": "pairs (question, sentence) read",
    "questions": "questions",
    "auc": "AUC, answering against other sentences",
    "top1": "answering sentence first (an unanswerable question: a miss)",
    "top1_word_overlap": "the same by word overlap alone, no model",
    "mean_p_answer": "mean probability, answering sentences",
    "mean_p_near_miss": "mean probability, near-miss sentences",
    "mean_p_unanswerable": "mean probability, an unanswerable question's sentences",
    "phrase_f1": "answer phrase: token F1",
    "phrase_exact": "answer phrase: exact match",
    "phrase_n": "answering sentences whose phrase is known",
    "margin_auc": "phrase margin as a detector of answering sentences (AUC)",
    "windows": "windows read",
    "answering": "answering windows",
    "window_auc": "AUC, answering windows against others",
    "no_answer_auc": "AUC, no-answer probability, other windows against answering",
    "sentence_top1": "answering sentence first in its window",
    "precision_at_0.3": "phrases of probability >= 0.3: exact match, share",
    "precision_at_0.5": "phrases of probability >= 0.5: exact match, share",
    "precision_at_0.7": "phrases of probability >= 0.7: exact match, share",
    "mean_p_answer_window": "mean probability, answering windows",
    "mean_p_unanswerable_window": "mean probability, an unanswerable question's windows",
}  # fmt: skip
"""What each of the trainers' figures is (their keys, as reader.json's ``validation`` records them)."""


def questions(val: list[dict]) -> list[list[int]]:
    """The indices of ``val``'s examples, grouped by question (in the order the questions first come)."""
    by_q: dict[int, list[int]] = defaultdict(list)
    for i, e in enumerate(val):
        by_q[e["qid"]].append(i)
    return list(by_q.values())


def read_sentences(reader, val: list[dict]) -> tuple[np.ndarray, list]:
    """Each example's sentence logit and the span head's best phrase in it, read through the runtime
    (Reader.read: one call per question, with its candidates and their headings, as an answer reads them)."""
    logits = np.zeros(len(val))
    phrases: list = [None] * len(val)
    for ix in questions(val):
        got, found = reader.read(val[ix[0]]["q"], [(val[i]["s"], val[i]["p"], val[i].get("h", "")) for i in ix])
        logits[ix] = got
        for i, phrase in zip(ix, found):
            phrases[i] = phrase
    return logits, phrases


def read_passages(reader, val: list[dict]) -> list:
    """What the runtime reads in each example's window (Reader.read_windows: one call per question)."""
    reads: list = [None] * len(val)
    for ix in questions(val):
        for i, read in zip(ix, reader.read_windows(val[ix[0]]["q"], [val[i]["s"] for i in ix])):
            reads[i] = read
    return reads


def validate(reader, examples: list[dict]) -> dict:
    """The trainer's validation figures for ``reader`` (a localreason Reader of either format) on the held-apart
    examples of ``examples`` (that trainer's build_examples), with the seconds the reading took."""
    val = sources.held_apart(examples)
    if not val:
        return {}
    start = time.perf_counter()
    if reader.format == SENTENCE:
        figures = sentence_trainer.validation_figures(val, *read_sentences(reader, val))
    else:
        figures = passage_reader.validation_figures(val, read_passages(reader, val))
    return {**figures, "seconds": round(time.perf_counter() - start, 1)}


def load(folder: Path, fmt: int, threads: int):
    """The reader in ``folder`` through the runtime; a message that says why, when it cannot be read or is the
    other kind of reader."""
    from localreason.errors import ModelError
    from localreason.readers import Reader

    try:
        reader = Reader(folder, threads)
    except ModelError as exc:
        raise SystemExit(f"{exc.message} Give the folder of a reader a trainer exported (model.xml, model.bin, "
                         "tokenizer.json, reader.json).") from exc
    if reader.format != fmt:
        other = "--passage" if fmt == SENTENCE else "--reader"
        raise SystemExit(f"{folder} holds a {KIND.get(reader.format, 'format ' + str(reader.format))} (format "
                         f"{reader.format}), not a {KIND[fmt]} (format {fmt}); give it with {other}.")
    return reader


def chosen_readers(args) -> list[tuple[str, object]]:
    """(label, Reader) of every reader to validate: the shipped pair (packaged_reader and its passage reader),
    then --reader and --passage."""
    from localreason.readers import packaged_reader

    shipped = packaged_reader(args.threads)
    out: list[tuple[str, object]] = [("shipped", shipped)]
    if shipped.passage is not None:
        out.append(("shipped", shipped.passage))
    else:
        print("The shipped passage reader is missing or damaged: only the sentence reader is validated.")
    for folder, fmt in ((args.reader, SENTENCE), (args.passage, PASSAGE)):
        if folder is not None:
            out.append((str(folder), load(folder, fmt, args.threads)))
    return out


def validate_all(qa_data, data_dir: Path, readers: list[tuple[str, object]]) -> list[tuple[int, list, list]]:
    """Per kind of reader among ``readers``: (format, its trainer's held-apart examples, [(label, reader,
    figures)]), the examples built (or read from ``data_dir``'s cache) once per kind."""
    out = []
    for fmt in (SENTENCE, PASSAGE):
        mine = [(label, r) for label, r in readers if r.format == fmt]
        if mine:
            print(f"\nThe {KIND[fmt]}'s examples ({TRAINER[fmt].__name__}.build_examples):")
            examples = TRAINER[fmt].build_examples(qa_data, data_dir)
            out.append((fmt, sources.held_apart(examples), [(label, r, validate(r, examples)) for label, r in mine]))
    return out


def articles_apart(qa_data) -> tuple[list[str], list[str]]:
    """The titles of the articles kept apart for validation: SQuAD 1.1 train's, and the SQuAD 2.0 dev ones whose
    unanswerable questions are asked (sources.kept_apart, as the trainers call it)."""
    train = sorted(sources.kept_apart([a["title"] for a in qa.articles("squad-train", qa_data)]))
    unanswerable = sorted(sources.kept_apart([title for title, _, _ in sources.unanswerable(qa_data)]))
    return train, unanswerable


def provenance(meta: dict, apart: tuple[list[str], list[str]]) -> list[str]:
    """What a reader was trained on (its reader.json), and whether the validation articles are new to it."""
    trained = meta.get("sources") or {}
    train, unanswerable = apart
    lines = [f"trained on (reader.json): {', '.join(trained) or 'not recorded'}"]
    if sources.TRAIN not in trained:
        lines.append(f"SQuAD 1.1 train is not among them: none of its articles validated here ({', '.join(train)}) "
                     "was in its training data")  # fmt: skip
        if "squad-fit" in trained:
            lines.append(f"but the unanswerable questions are asked on {', '.join(unanswerable)}, a SQuAD 1.1 dev "
                         "article too: trained on half of SQuAD 1.1 dev's answerable questions drawn by question, it "
                         "has most likely read those paragraphs (not these questions)")  # fmt: skip
    elif meta.get("seed") == sources.SEED:
        lines.append(f"trained by bench/train with these articles kept apart (seed {sources.SEED})")
    else:
        lines.append(f"WARNING: trained with seed {meta.get('seed')}, not {sources.SEED}: other articles were kept "
                     "apart, so some of those validated here may be in its training data")  # fmt: skip
    return lines


def cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return " / ".join(cell(v) for v in value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.4f}".rstrip("0").rstrip(".")


def report(fmt: int, val: list[dict], results: list[tuple[str, object, dict]], apart) -> None:
    """One kind of reader's figures: a column per reader, a row per figure, then each one's JSON line as its
    trainer prints it."""
    n_q = len(questions(val))
    unanswerable = len({e["qid"] for e in val if e["kind"] == "unanswerable"})
    unit = "pairs" if fmt == SENTENCE else "windows"
    print(f"\n== The {KIND[fmt]}: {n_q} questions ({n_q - unanswerable} answerable, {unanswerable} unanswerable), "
          f"{len(val)} {unit}, on {cpu_name()}")  # fmt: skip
    for label, reader, figures in results:
        took = figures.get("seconds", 0)
        print(f"  {label} ({reader.info.folder}): read in {took:.0f} s ({len(val) / max(took, 0.1):.0f} {unit}/s)")
        for line in provenance(reader.info.meta, apart):
            print(f"    {line}")
    keys = [k for k in results[0][2] if k != "seconds"]
    width = max(len(LABELS.get(k, k)) for k in keys)
    print(f"  {'':<{width}}  " + "  ".join(f"{'[' + str(i + 1) + '] ' + label[-14:]:>18}"
                                           for i, (label, _, _) in enumerate(results)))  # fmt: skip
    for k in keys:
        print(f"  {LABELS.get(k, k):<{width}}  " + "  ".join(f"{cell(f.get(k)):>18}" for _, _, f in results))
    for i, (_, _, figures) in enumerate(results):
        shown = {k: v for k, v in figures.items() if k != "seconds"}
        print(f"  [{i + 1}] validation ({TRAINER[fmt].HELD_APART}): {json.dumps(shown)}")


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "qa",
                    help="the cache of built examples (the trainers': DATA_DIR/reader/)")
    qa.add_argument(ap)
    ap.add_argument("--reader", type=Path, metavar="FOLDER", help="also validate the sentence reader in FOLDER (a "
                    "training run's export, .cache/qa/reader/sentence)")
    ap.add_argument("--passage", type=Path, metavar="FOLDER", help="also validate the passage reader in FOLDER "
                    "(.cache/qa/reader/passage)")
    ap.add_argument("--threads", type=int, default=0, help="OpenVINO threads per reader (0: its choice)")
    return ap.parse_args()


def main() -> None:
    args = arguments()
    readers = chosen_readers(args)  # a folder that cannot be read stops the run before the examples are built
    apart = articles_apart(args.qa_data)
    print(SHIPPED)
    print(f"This validation: the articles the trainers keep apart: SQuAD 1.1 train's {', '.join(apart[0])}, and "
          f"SQuAD 2.0 dev's unanswerable questions on {', '.join(apart[1])}.")  # fmt: skip
    print(BASE)
    start = time.perf_counter()
    for fmt, val, results in validate_all(args.qa_data, args.data_dir, readers):
        report(fmt, val, results, apart)
    print(f"\n{time.perf_counter() - start:.0f} s in all on {cpu_name()}")


if __name__ == "__main__":
    main()
