#!/usr/bin/env python3
"""TUI responsiveness: process start -> first paint, and Enter -> first visible progress update.

Each run starts `python -m localreason tui` in a pseudo-terminal (80x24) over a library of the
bundled samples, with LOCALREASON_TUI_TRACE pointing at a file where the app writes, after the
screen was refreshed, when it first painted, when Enter reached it and when the progress line
for that question had been drawn. The script then asks a question twice: the first Enter is cold
(the models load lazily, on that first question), the second warm.

Baseline in the same run: a minimal Textual app (one Static, no localreason) started the same way,
so "first paint" is also reported as a ratio to what Textual itself costs on this machine.

    python -m bench.speed.tui --runs 5
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MINIMAL_APP = """
import os, time
from textual.app import App
from textual.widgets import Static
class Hello(App):
    def compose(self):
        yield Static("hello")
    def on_mount(self):
        self.call_after_refresh(self.painted)
    def painted(self):
        with open(os.environ["LOCALREASON_TUI_TRACE"], "a") as fh:
            fh.write(f"first-paint {time.time():.6f}\\n")
        self.exit()
Hello().run()
"""


def spawn(argv: list[str], env: dict) -> tuple[subprocess.Popen, int]:
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                            start_new_session=True)  # fmt: skip
    os.close(slave)
    return proc, master


def drain(master: int) -> None:
    while True:
        r, _, _ = select.select([master], [], [], 0)
        if not r:
            return
        try:
            if not os.read(master, 65536):
                return
        except OSError:
            return


def wait_for(trace: Path, event: str, count: int, master: int, timeout: float) -> float:
    """Wall-clock time of the ``count``-th ``event`` line in the trace file."""
    end = time.time() + timeout
    while time.time() < end:
        drain(master)
        if trace.exists():
            stamps = [float(line.split()[1]) for line in trace.read_text().splitlines() if line.split()[0] == event]
            if len(stamps) >= count:
                return stamps[count - 1]
        time.sleep(0.005)
    raise TimeoutError(f"no {event} #{count} within {timeout} s")


def finish(proc: subprocess.Popen, master: int) -> None:
    try:
        os.write(master, b"\x11")  # ctrl+q
    except OSError:
        pass
    end = time.time() + 30
    while proc.poll() is None and time.time() < end:
        drain(master)
        time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
    os.close(master)


def pct(xs: list[float], p: int) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[p - 1] if len(xs) > 1 else xs[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--question", default="Where did the Black Death originate?")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="lr-bench-tui-"))
    home = work / "home"
    from localreason.demo import samples_dir
    from localreason.library import Library

    with Library(home) as lib:
        lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    trace = work / "trace.txt"
    paint, base_paint, cold, warm, cold_send, warm_send = [], [], [], [], [], []
    for run in range(args.runs):
        # baseline: a minimal Textual app
        trace.unlink(missing_ok=True)
        t0 = time.time()
        proc, master = spawn([sys.executable, "-c", MINIMAL_APP], {**env, "LOCALREASON_TUI_TRACE": str(trace)})
        base_paint.append(wait_for(trace, "first-paint", 1, master, 60) - t0)
        finish(proc, master)
        # localreason
        trace.unlink(missing_ok=True)
        t0 = time.time()
        proc, master = spawn([sys.executable, "-m", "localreason", "--home", str(home), "tui"],
                             {**env, "LOCALREASON_TUI_TRACE": str(trace)})  # fmt: skip
        try:
            paint.append(wait_for(trace, "first-paint", 1, master, 60) - t0)
            time.sleep(0.5)
            for n, (into, sent_into) in enumerate([(cold, cold_send), (warm, warm_send)], 1):
                os.write(master, args.question.encode())
                time.sleep(0.3)
                sent = time.time()
                os.write(master, b"\r")
                enter = wait_for(trace, "enter", n, master, 30)
                progress = wait_for(trace, "progress", n, master, 30)
                into.append(progress - enter)
                sent_into.append(progress - sent)
                wait_for(trace, "done", n, master, 300)
                time.sleep(0.3)
        finally:
            finish(proc, master)
        print(f"run {run + 1}: first paint {paint[-1]:.3f} s (minimal Textual app {base_paint[-1]:.3f} s); "
              f"Enter -> progress drawn: cold {cold[-1] * 1000:.1f} ms, warm {warm[-1] * 1000:.1f} ms "
              f"(from the key write: {cold_send[-1] * 1000:.1f} / {warm_send[-1] * 1000:.1f} ms)", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    p50 = statistics.median
    print(f"\n{args.runs} runs, 80x24 pseudo-terminal")
    print(f"first paint            p50 {p50(paint):.3f} s  p95 {pct(paint, 95):.3f} s   target < 1.5 s")
    print(f"minimal Textual app    p50 {p50(base_paint):.3f} s   ratio {p50(paint) / p50(base_paint):.2f}")
    print(f"Enter -> progress      cold p50 {p50(cold) * 1000:.1f} ms  warm p50 {p50(warm) * 1000:.1f} ms   "
          "target < 100 ms")
    print(f"  from writing the key cold p50 {p50(cold_send) * 1000:.1f} ms  warm p50 {p50(warm_send) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
