#!/usr/bin/env python3
"""Cold starts: `localreason search` and `localreason ask` from a new process, as a shell user runs them.

On a library of the bundled sample documents, each figure is the median of --runs new processes,
wall time from spawn to exit (the page cache is warm: the files were read before):

- ``search``: `localreason search QUESTION --json`, with the default embedding backend (OpenVINO)
  and, as the baseline in the same run, with ``embedding_backend = torch`` (sentence-transformers,
  what every search loaded before); then handed to a running `localreason serve` for the same
  library. Target: < 2 s.
- ``ask``: a new process that imports localreason, opens the library, loads both models and answers
  once; "overhead" is everything but the answer itself (the answer's own time, measured inside the
  same process, is subtracted). Target: overhead < 3 s. The CLI's `localreason ask` wall time is shown
  beside it, and the time with a running `serve`.

- ``--part search --against CHECKOUT``: `localreason search` from a new process, this checkout against another
  (the code before a change), alternating, on the same library; then where a search's time goes in each, phase by
  phase, in a child that times itself (importing the CLI, opening the library, loading the embedding model,
  embedding the question, searching, printing). Python writes its bytecode caches in these runs (as on a user's
  machine), whatever PYTHONDONTWRITEBYTECODE says here. Target: the median under 0.6 s.

    python -m bench.speed.cold
    python -m bench.speed.cold --runs 7
    python -m bench.speed.cold --part search --against /tmp/base --runs 15
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import ROOT

QUESTION = "Where did the Black Death originate?"

ASK_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from localreason.library import Library
t_import = time.perf_counter()
lib = Library(sys.argv[1])
lib.vectors
lib.embedder.embed(["warm"])
t_embedder = time.perf_counter()
lib.generator.llm
t_models = time.perf_counter()
answer = lib.ask(sys.argv[2])
t_answer = time.perf_counter()
print(json.dumps({"import": t_import - t0, "library_and_embedder": t_embedder - t_import,
                  "generator": t_models - t_embedder, "answer": t_answer - t_models, "in_process": t_answer - t0,
                  "statements": len(answer.statements)}))
"""


SEARCH_CHILD = """
import json, sys, time
t0 = time.perf_counter()
from localreason.cli import main
t_cli = time.perf_counter()
from localreason.library import Library
lib = Library(sys.argv[1])
t_open = time.perf_counter()
embedder = lib.embedder
embedder.embed([])  # the model loaded, nothing embedded
t_model = time.perf_counter()
vec = embedder.embed([sys.argv[2]])
t_embed = time.perf_counter()
hits = lib.deep_search(sys.argv[2])
t_search = time.perf_counter()
json.dumps([h.to_dict() for h in hits])
lib.close()
t_end = time.perf_counter()
print(json.dumps({"import the CLI": t_cli - t0, "open the library": t_open - t_cli, "load the embedding model":
                  t_model - t_open, "embed the question": t_embed - t_model, "search": t_search - t_embed,
                  "print and close": t_end - t_search}))
"""
"""Where a search's time goes, measured inside a new process (its interpreter's own start is not in it). Runs on
both checkouts: it uses only what both have."""


def run(args: list[str], env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed ({out.returncode}): {out.stderr[-2000:]}")
    return wall, out.stdout


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def start_server(env: dict) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "localreason", "serve", "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stdout.readline()
        if "http://" in line:
            url = line[line.index("http://"):].split()[0]
            return proc, url
        if proc.poll() is not None:
            break
    proc.kill()
    raise SystemExit("localreason serve did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--part", choices=("all", "search"), default="all")
    ap.add_argument("--against", type=Path, default=None, metavar="CHECKOUT",
                    help="--part search: another checkout of localreason to compare with (the code before a change)")
    args = ap.parse_args()
    if args.part == "search":
        return search_against(args.against, args.runs)
    samples = ROOT / "localreason" / "samples"
    home = Path(tempfile.mkdtemp(prefix="lr-cold-"))
    base = {**os.environ, "LOCALREASON_HOME": str(home), "TOKENIZERS_PARALLELISM": "false"}
    local = {**base, "LOCALREASON_HANDOFF": "0"}
    cli = [sys.executable, "-m", "localreason"]
    run([*cli, "ingest", str(samples), "-q"], local)
    run([*cli, "search", QUESTION, "--json"], local)  # files in the page cache, OpenVINO export made
    run([*cli, "search", QUESTION, "--json"], {**local, "LOCALREASON_EMBEDDING_BACKEND": "torch"})

    search, ask, cli_ask = measure_alone(cli, local, home, args.runs)
    handed, handed_ask = measure_handed(cli, base, args.runs)
    report_search(search, handed, args.runs)
    report_ask(ask, cli_ask, handed_ask, args.runs)
    shutil.rmtree(home, ignore_errors=True)


def measure_alone(cli: list[str], local: dict, home: Path, runs: int) -> tuple[dict, dict, list]:
    """New processes with no server: searches on each backend, asks on each backend, the CLI's ask."""
    search = {"openvino (default)": [], "torch (before)": []}
    for _ in range(runs):  # interleaved, so both meet the same machine
        search["openvino (default)"].append(run([*cli, "search", QUESTION, "--json"], local)[0])
        search["torch (before)"].append(
            run([*cli, "search", QUESTION, "--json"], {**local, "LOCALREASON_EMBEDDING_BACKEND": "torch"})[0])
    ask = {"openvino (default)": [], "torch (before)": []}
    cli_ask = []
    for _ in range(runs):
        for name, env in (("openvino (default)", local), ("torch (before)",
                                                          {**local, "LOCALREASON_EMBEDDING_BACKEND": "torch"})):
            wall, out = run([sys.executable, "-c", ASK_CHILD, str(home), QUESTION], env)
            ask[name].append({**json.loads(out.strip().splitlines()[-1]), "wall": wall})
        wall, out = run([*cli, "ask", QUESTION, "--json"], local)
        cli_ask.append((wall, json.loads(out)["data"]["meta"]["latencyMs"] / 1000))
    return search, ask, cli_ask


def measure_handed(cli: list[str], base: dict, runs: int) -> tuple[list, list]:
    """Searches and asks handed to a running `localreason serve` of the same library."""
    server, url = start_server(base)
    try:
        run([*cli, "ask", QUESTION, "--json"], base)  # the server's models are loaded
        handed = [run([*cli, "search", QUESTION, "--json"], base)[0] for _ in range(runs)]
        handed_ask = []
        for _ in range(runs):
            wall, out = run([*cli, "ask", QUESTION, "--json"], base)
            handed_ask.append((wall, json.loads(out)["data"]["meta"]["latencyMs"] / 1000))
    finally:
        server.terminate()
        server.wait(timeout=30)
    return handed, handed_ask


def report_search(search: dict, handed: list, runs: int) -> None:
    print(f"\nCold `localreason search --json`, median of {runs} new processes (target < 2 s)")
    for name, xs in search.items():
        print(f"  {name:<22} {median(xs):5.2f} s   runs: {', '.join(f'{x:.2f}' for x in xs)}")
    print(f"  {'handed to serve':<22} {median(handed):5.2f} s   runs: {', '.join(f'{x:.2f}' for x in handed)}")
    ratio = median(search["torch (before)"]) / median(search["openvino (default)"])
    print(f"  torch / openvino: {ratio:.1f}x; torch / handed off: {median(search['torch (before)']) / median(handed):.1f}x")


def report_ask(ask: dict, cli_ask: list, handed_ask: list, runs: int) -> None:
    print(f"\nCold ask, median of {runs} (overhead = wall from spawn minus the answer itself; target < 3 s)")
    for name, rows in ask.items():
        over = [r["wall"] - r["answer"] for r in rows]
        parts = {k: median([r[k] for r in rows]) for k in ("import", "library_and_embedder", "generator", "answer")}
        print(f"  {name:<22} overhead {median(over):5.2f} s (import {parts['import']:.2f}, library + embedder "
              f"{parts['library_and_embedder']:.2f}, generator {parts['generator']:.2f}); "
              f"answer {parts['answer']:.2f} s")  # fmt: skip
    over = [w - a for w, a in cli_ask]
    print(f"  {'CLI `localreason ask`':<22} wall {median([w for w, _ in cli_ask]):5.2f} s, answer (latencyMs) "
          f"{median([a for _, a in cli_ask]):.2f} s, the rest {median(over):.2f} s (includes the model loads, "
          "which the CLI's answer time partly counts)")  # fmt: skip
    over = [w - a for w, a in handed_ask]
    print(f"  {'handed to serve':<22} wall {median([w for w, _ in handed_ask]):5.2f} s, answer "
          f"{median([a for _, a in handed_ask]):.2f} s, the rest {median(over):.2f} s")  # fmt: skip


def search_against(other: Path | None, runs: int) -> None:
    """`localreason search` from new processes, this checkout against ``other`` (alternating), then each one's phases."""
    from bench import cpu_name

    home = Path(tempfile.mkdtemp(prefix="lr-cold-"))
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**base, "LOCALREASON_HOME": str(home), "LOCALREASON_HANDOFF": "0", "TOKENIZERS_PARALLELISM": "false"}
    sides = {"this checkout": (ROOT, env)}
    if other is not None:
        sides[f"{other}"] = (other.resolve(), {**env, "PYTHONPATH": str(other.resolve())})
    cli = [sys.executable, "-P", "-m", "localreason"]
    run([*cli, "ingest", str(ROOT / "localreason" / "samples"), "-q"], {**env, "PYTHONPATH": str(ROOT)})
    for _, (root, side_env) in sides.items():  # bytecode written, the OpenVINO export and its compiled model kept
        for _ in range(2):
            run([*cli, "search", QUESTION, "--json"], {**side_env, "PYTHONPATH": str(root)})
    walls: dict[str, list[float]] = {name: [] for name in sides}
    phases: dict[str, list[dict]] = {name: [] for name in sides}
    for _ in range(runs):
        for name, (root, side_env) in sides.items():
            side_env = {**side_env, "PYTHONPATH": str(root)}
            walls[name].append(run([*cli, "search", QUESTION, "--json"], side_env)[0])
            out = run([sys.executable, "-P", "-c", SEARCH_CHILD, str(home), QUESTION], side_env)[1]
            phases[name].append(json.loads(out.strip().splitlines()[-1]))
    print(f"\nCold `localreason search --json` on the bundled samples, {runs} new processes each, alternating "
          f"({cpu_name()}); target: median < 0.6 s")
    for name, xs in walls.items():
        print(f"  {name:<40} median {median(xs):5.2f} s  min {min(xs):.2f}  max {max(xs):.2f}")
    if other is not None:
        first, second = list(walls)
        print(f"  ratio, this checkout / the other: {median(walls[first]) / median(walls[second]):.2f}")
    print("\nWhere the time goes (median seconds in the child; the interpreter's start is not counted):")
    names = list(next(iter(phases.values()))[0])
    print(f"  {'phase':<26}" + "".join(f"{n[-30:]:>32}" for n in phases))
    for key in names:
        print(f"  {key:<26}" + "".join(f"{median([p[key] for p in rows]):>32.3f}" for rows in phases.values()))
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
