"""Keep the machine's cores busy while a command runs: the suite, or a benchmark, under load.

A laptop with a browser open, or CI beside other jobs, gives a test less CPU than an idle machine does; a
test that passes only when it gets the CPU at once is a test that fails now and then. This runs one spinning
process per core (``--cores``, default: every core) at the command's own priority, runs the command ``--runs``
times, prints each run's exit status and time, and stops the spinners whatever happens.

    python -m bench.busy --runs 3 -- python -m pytest -q      # the suite three times, both cores kept busy
    python -m bench.busy --cores 2                            # just burn, until Ctrl+C

The exit status is the first failing run's, or 0.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time

from bench import cpu_name


def _spin(stop) -> None:
    """Spin until told to stop: integer work that never sleeps, so it takes a whole core when it can."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 1103515245 + 12345) & 0x7FFFFFFF


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="spinning processes (default: every core)")
    parser.add_argument("--runs", type=int, default=1, help="how many times to run the command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    stop = mp.Event()
    spinners = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.cores)]
    for p in spinners:
        p.start()
    print(f"{args.cores} spinning process(es) on {cpu_name()}", flush=True)
    try:
        if not command:
            while True:
                time.sleep(3600)
        return _run(command, args.runs)
    except KeyboardInterrupt:
        return 130
    finally:
        stop.set()
        for p in spinners:
            p.join(5)
            if p.is_alive():
                p.kill()


def _run(command: list[str], runs: int) -> int:
    first_failure = 0
    for i in range(1, runs + 1):
        start = time.monotonic()
        code = subprocess.call(command)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        print(f"run {i}/{runs}: exit {code} in {time.monotonic() - start:.0f} s (load average {load:.1f})",
              flush=True)  # fmt: skip
        first_failure = first_failure or code
    return first_failure


if __name__ == "__main__":
    sys.exit(main())
