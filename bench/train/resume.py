"""Training that can stop and go on (--resume): on 2 cores a run takes an hour or more, and a machine that is
needed back, a reboot or Ctrl+C must not cost all of it.

Every EVERY steps the trainer saves the model, the optimiser, the schedule, the step and the run's length (the
steps its schedule spans) to one file in its checkpoint folder, atomically. A run started again with --resume and
the same configuration (``key``: the options and the examples) takes that file and goes on from the step after it,
with the same schedule; the batches are the same, as they come from a fixed seed. A file of another configuration
is not used: the run says so and starts from the beginning.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

EVERY = 100


def run_key(args, examples: int) -> str:
    """What makes two runs the same run: every option but the ones that only say where or how long, and the number
    of examples."""
    skip = {"minutes", "resume", "out", "data_dir", "qa_data", "manuals_dir", "threads", "export_only", "device"}
    options = {k: str(v) for k, v in sorted(vars(args).items()) if k not in skip}
    return hashlib.sha256(json.dumps([options, examples]).encode()).hexdigest()[:16]


class Resume:
    """The run's saved state in ``folder`` (``resume.pt``), for one run ``key``."""

    def __init__(self, folder: Path, key: str, enabled: bool, torch) -> None:
        self.path, self.key, self.enabled, self.torch = folder / "resume.pt", key, enabled, torch

    def start(self, model, opt, sched) -> tuple[int, int | None]:
        """(the first step to take, the run's length as saved or None): the saved state loaded into ``model``,
        ``opt`` and ``sched`` when --resume finds one of this run; else (0, None)."""
        if not self.enabled or not self.path.is_file():
            if self.enabled:
                print("--resume: no saved state; starting from the beginning", flush=True)
            return 0, None
        state = self.torch.load(self.path, map_location="cpu", weights_only=False)
        if state.get("key") != self.key:
            print(f"--resume: {self.path} is of another run (other options or examples); starting from the "
                  "beginning", flush=True)  # fmt: skip
            return 0, None
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sched.load_state_dict(state["sched"])
        print(f"--resume: going on from step {state['step']} of {state['total']}", flush=True)
        return int(state["step"]), int(state["total"])

    def save(self, model, opt, sched, step: int, total: int) -> None:
        """The state after ``step`` of ``total``, written atomically (a run killed while saving keeps the last)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        self.torch.save({"key": self.key, "step": step, "total": total, "model": model.state_dict(),
                         "opt": opt.state_dict(), "sched": sched.state_dict()}, tmp)  # fmt: skip
        os.replace(tmp, self.path)

    def finished(self) -> None:
        """The run is over: its saved state is not needed any more."""
        self.path.unlink(missing_ok=True)


def load_checkpoint(path: Path, torch) -> dict:
    """A model's weights from ``path``: a trainer's checkpoint (the weights alone), or the state a run saved for
    --resume, so that a run stopped early can still be validated and exported (--export-only)."""
    state = torch.load(path, map_location="cpu", weights_only=False)
    if isinstance(state, dict) and "key" in state and "model" in state:
        print(f"{path}: the saved state of a run, at step {state['step']} of {state['total']}", flush=True)
        return state["model"]
    return state
