"""The passage reader's trainer (bench/train/passage_reader.py) runs its steps, its evaluation and its device
handling on a few synthetic windows, on the CPU: the real training data is not on every machine (it lies in the
shared QA folder), so without this the trainer could break unseen between runs. Not a measure of anything.
tests/test_train_data.py builds both trainers' examples from a small SQuAD-format folder and runs their pilots."""

from __future__ import annotations

import argparse

import pytest

pytestmark = pytest.mark.real_model


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_the_passage_reader_trainer_takes_steps_and_reads_windows_where_its_weights_are(tmp_path, bf16):
    torch = pytest.importorskip("torch")
    from bench.train import passage_reader as pr
    from localreason.config import load_settings
    from localreason.models import resolve_embedding_model

    base = resolve_embedding_model(load_settings(tmp_path / "home")).path
    model = pr.frozen_model(torch, base, per_token=3)
    tok = pr.load_tokenizer(base, pr.WINDOW_LENGTH)
    examples = []
    for i in range(8):
        answers = i % 4 != 0
        examples.append({"q": f"Who fixed pump {i}?", "y": int(answers), "l": [0, int(answers), 0],
                         "s": [f"The pump {i} is red.", f"Anna Berg fixed pump {i} in {1990 + i}.", "The valve is blue."],
                         "a": (1, 0, 9) if answers else None, "split": "train", "qid": i})  # fmt: skip
    rows = pr.encode(tok, examples)
    assert sum(r[3][0] > 0 for r in rows) == 6, "the span of each answering window is located"
    before = [p.detach().clone() for p in model.parameters() if p.requires_grad]
    args = argparse.Namespace(batch=4, lr=8e-5, pilot=True, pilot_steps=2, minutes=1, data_dir=tmp_path, resume=False,
                              bf16=bf16)  # fmt: skip
    steps = pr.train_model(args, model, rows, examples, torch)
    assert steps == 2
    args.from_batch = 1  # --from-batch: a run that goes on where an earlier one of 1 step stopped
    assert pr.train_model(args, model, rows, examples, torch) == 1, "one batch of the two is left to take"
    assert any(not torch.equal(a, b) for a, b in zip(before, [p for p in model.parameters() if p.requires_grad]))
    reads = pr.run_model(model, rows, examples, torch)
    assert len(reads) == 8 and all(r.sentences.shape == (3,) for r in reads)
    batch = pr.batch_tensors(torch, rows[:2], examples[:2], pr.device_of(model))
    assert batch["feed"]["input_ids"].device == batch["span"].device == pr.device_of(model)
