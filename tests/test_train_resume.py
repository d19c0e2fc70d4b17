"""A training run stopped part way goes on where it stopped (bench/train/resume.py): the model, the optimiser and
the schedule as they were at the last saved step; a saved state of another run is not used."""

from __future__ import annotations

import argparse

import pytest

torch = pytest.importorskip("torch")

from bench.train.resume import Resume, load_checkpoint, run_key  # noqa: E402


def _parts(seed: int):
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step))
    return model, opt, sched


def _step(model, opt, sched) -> None:
    loss = model(torch.ones(2, 4)).pow(2).sum()
    loss.backward()
    opt.step()
    sched.step()
    opt.zero_grad()


def test_a_stopped_run_goes_on_from_its_last_saved_step(tmp_path):
    args = argparse.Namespace(lr=0.1, batch=8, steps=10, minutes=5.0, resume=True, out=tmp_path)
    key = run_key(args, 100)
    model, opt, sched = _parts(1)
    for _ in range(3):
        _step(model, opt, sched)
    Resume(tmp_path, key, True, torch).save(model, opt, sched, 3, 10)
    fresh, fresh_opt, fresh_sched = _parts(2)
    assert Resume(tmp_path, key, True, torch).start(fresh, fresh_opt, fresh_sched) == (3, 10)
    assert torch.equal(fresh.weight, model.weight) and fresh_sched.last_epoch == sched.last_epoch
    _step(model, opt, sched)
    _step(fresh, fresh_opt, fresh_sched)
    assert torch.allclose(fresh.weight, model.weight), "the optimiser's moments came back too"
    args.minutes = 60.0  # how long a run may take does not make it another run
    assert run_key(args, 100) == key and run_key(args, 101) != key
    other = argparse.Namespace(**{**vars(args), "lr": 0.2})
    assert Resume(tmp_path, run_key(other, 100), True, torch).start(*_parts(3)) == (0, None)
    assert Resume(tmp_path, key, False, torch).start(*_parts(3)) == (0, None), "only with --resume"
    Resume(tmp_path, key, True, torch).finished()
    assert not (tmp_path / "resume.pt").exists()


def test_a_run_stopped_early_can_be_exported_from_its_saved_state(tmp_path):
    """--export-only takes a trainer's checkpoint (the weights alone) or the state saved for --resume."""
    model, opt, sched = _parts(3)
    _step(model, opt, sched)
    Resume(tmp_path, "k", True, torch).save(model, opt, sched, 1, 10)
    torch.save(model.state_dict(), tmp_path / "plain.pt")
    for path in (tmp_path / "resume.pt", tmp_path / "plain.pt"):
        other, _, _ = _parts(4)
        other.load_state_dict(load_checkpoint(path, torch))
        assert torch.equal(other.weight, model.weight)


def test_a_run_that_goes_on_from_an_earlier_ones_batches_needs_the_same_order(tmp_path, capsys):
    """--init with --from-batch N takes the batches an earlier run left only when both followed one seeded order,
    that is, had the same windows: the earlier run's order is written beside its weights, and other windows stop
    the run with a message (16 more windows gave the passage reader's later runs another order unnoticed)."""
    from bench.train.passage_reader import check_order, order_key, write_order

    windows = [{"qid": i, "text": f"window {i}", "y": i % 2} for i in range(40)]
    ckpt = tmp_path / "passage_reader.pt"
    first = argparse.Namespace(init=None, from_batch=0)
    write_order(ckpt, check_order(first, windows), len(windows), first, 12)
    later = argparse.Namespace(init=ckpt, from_batch=12)
    assert check_order(later, windows) == order_key(windows)
    more = windows + [{"qid": 99, "text": "one window more", "y": 1}]
    with pytest.raises(SystemExit, match="trained on other windows"):
        check_order(later, more)
    assert check_order(argparse.Namespace(init=ckpt, from_batch=0), more) == order_key(more), "a run of its own"
    check_order(argparse.Namespace(init=tmp_path / "older.pt", from_batch=5), windows)
    assert "cannot check" in capsys.readouterr().out
