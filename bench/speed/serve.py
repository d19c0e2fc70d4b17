#!/usr/bin/env python3
"""What the servers cost: warm `reason` latency and deep_search throughput, in process vs REST vs MCP.

One run, one library, models loaded everywhere before timing:

- **reason latency.** The same questions, each asked in process (Service.reason), through REST
  (`localreason serve`, POST /v1/reason) and through MCP (`localreason mcp` over stdio, driven by the
  official SDK's client), interleaved question by question (so load on the machine hits all three
  alike), after one untimed warm-up call each. The evidence budget is the same everywhere: MCP does
  not expose maxTokens and uses the answer_budget setting, so REST and in-process are given it too.
  Reported: p50 and p95 per interface, and the overhead ratio (p50 / in-process p50; also the median
  of per-question ratios).
- **retrieval throughput.** deep_search calls per second for ``--seconds`` with ``--clients``
  concurrent clients: threads in process, threads with one keep-alive HTTP connection each for REST,
  concurrent tool calls on the one stdio session for MCP (that is how MCP clients call).

    python -m bench.speed.serve                            # a temporary library of the bundled samples
    python -m bench.speed.serve --home ~/lib --questions 20 --ask "What is the warranty?"
    python -m bench.speed.serve --questions 2 --seconds 3     # a smoke run

Run it on an otherwise idle machine: the three interfaces share its cores.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import anyio.to_thread

QUESTIONS = [
    "Where did the Black Death originate?",
    "When did Apollo 11 land on the Moon?",
    "How large is the Amazon rainforest?",
    "What happens when an exception is not handled in Python?",
    "How many people died in the Black Death?",
    "Who was the first person to walk on the Moon?",
    "How many tree species grow in the Amazon?",
    "What is the difference between a syntax error and an exception?",
    "Why is the language called Python?",
    "What went wrong on Apollo 13?",
]


# ---------------------------------------------------------------- library and servers


def sample_library() -> Path:
    """A temporary library of the bundled samples (the real embedding model)."""
    from localreason.demo import samples_dir
    from localreason.library import Library

    home = Path(tempfile.mkdtemp(prefix="lr-bench-serve-"))
    t = time.perf_counter()
    with Library(home) as lib:
        lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])
    print(f"library: {home} (samples ingested in {time.perf_counter() - t:.1f} s)")
    return home


class RestServer:
    """`localreason serve --port 0` in a child process; its log in the library's folder."""

    def __init__(self, home: Path) -> None:
        self.log = Path(tempfile.mkdtemp(prefix="lr-bench-rest-")) / "serve.log"
        env = {**os.environ, "LOCALREASON_HOME": str(home)}
        env.pop("LOCALREASON_API_KEY", None)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "localreason", "serve", "--port", "0"], env=env,
                                         stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        end = time.monotonic() + 120
        while not (m := re.search(r"on http://127\.0\.0\.1:(\d+)", self.log.read_text())):
            if self.proc.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"localreason serve did not start:\n{self.log.read_text()}")
            time.sleep(0.2)
        self.port = int(m.group(1))

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class RestClient:
    """One keep-alive HTTP connection (one per thread)."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)

    def post(self, path: str, body: dict) -> dict:
        try:
            response = self._send(path, body)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            self.conn.close()  # the server closed the idle connection (uvicorn: after 5 s); open another
            response = self._send(path, body)
        data = json.loads(response.read())
        if response.status != 200:
            raise RuntimeError(f"POST {path}: {response.status} {data}")
        return data["data"]

    def _send(self, path: str, body: dict) -> http.client.HTTPResponse:
        self.conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        return self.conn.getresponse()

    def close(self) -> None:
        self.conn.close()


def mcp_params(home: Path):
    """How to start `localreason mcp`; None (with the reason) when the MCP server is not there."""
    import importlib.util

    from mcp.client.stdio import StdioServerParameters

    if importlib.util.find_spec("localreason.serve.mcp") is None:  # TODO(mcp): measure once it exists
        print("MCP: not measured (localreason/serve/mcp.py is missing)")
        return None
    env = {k: v for k, v in os.environ.items() if k.startswith("LOCALREASON_") or k in ("PATH", "HOME")}
    env["LOCALREASON_HOME"] = str(home)
    return StdioServerParameters(command=sys.executable, args=["-m", "localreason", "mcp"], env=env)


async def mcp_call(session, tool: str, arguments: dict) -> dict:
    result = await session.call_tool(tool, arguments)
    if getattr(result, "is_error", False):
        raise RuntimeError(f"MCP {tool}: {result.content}")
    return result.structured_content["data"]


# ---------------------------------------------------------------- measurements


async def timed(work) -> tuple[float, object]:
    t = time.perf_counter()
    out = await work()
    return (time.perf_counter() - t) * 1000, out


async def reason_latency(svc, rest: RestClient, session, questions: list[str], budget: int) -> dict:
    """ms per question per interface, interleaved (the order rotates), after one warm-up call each."""
    calls = {
        "in-process": lambda q: anyio.to_thread.run_sync(lambda: svc.reason(q, max_tokens=budget).to_dict()),
        "REST": lambda q: anyio.to_thread.run_sync(lambda: rest.post("/v1/reason", {"query": q, "maxTokens": budget})),
    }  # fmt: skip
    if session is not None:
        calls["MCP"] = lambda q: mcp_call(session, "reason", {"query": q})
    for name, call in calls.items():  # warm-up: first-call costs (allocations, caches) are not what we measure
        await call(questions[0])
    times: dict[str, list[float]] = {name: [] for name in calls}
    answers: dict[str, list[str]] = {name: [] for name in calls}
    names = list(calls)
    for i, q in enumerate(questions):
        for name in names[i % len(names):] + names[:i % len(names)]:
            ms, data = await timed(lambda: calls[name](q))
            times[name].append(ms)
            answers[name].append(data["answer"])
    same = sum(len({answers[n][i] for n in names}) == 1 for i in range(len(questions)))
    return {"times": times, "same": same}


def threads_throughput(make_call, clients: int, seconds: float) -> float:
    """Calls per second of ``clients`` threads, each looping make_call()() until the deadline."""
    deadline = time.perf_counter() + seconds
    counts = [0] * clients

    def loop(i: int) -> None:
        call = make_call()
        for q in itertools.cycle(QUESTIONS):
            if time.perf_counter() >= deadline:
                break
            call(q)
            counts[i] += 1

    t = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(loop, range(clients)))
    return sum(counts) / (time.perf_counter() - t)


async def mcp_throughput(session, clients: int, seconds: float) -> float:
    deadline = time.perf_counter() + seconds
    counts = [0] * clients

    async def loop(i: int) -> None:
        for q in itertools.cycle(QUESTIONS):
            if time.perf_counter() >= deadline:
                break
            await mcp_call(session, "deep_search", {"query": q})
            counts[i] += 1

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(loop, i)
    return sum(counts) / (time.perf_counter() - t)


async def search_throughput(svc, port: int, session, clients: int, seconds: float) -> dict[str, float]:
    def rest_client():
        client = RestClient(port)
        return lambda q: client.post("/v1/deep_search", {"query": q})

    out = {"in-process": await anyio.to_thread.run_sync(
        threads_throughput, lambda: (lambda q: svc.deep_search(q)), clients, seconds)}  # fmt: skip
    out["REST"] = await anyio.to_thread.run_sync(threads_throughput, rest_client, clients, seconds)
    if session is not None:
        out["MCP"] = await mcp_throughput(session, clients, seconds)
    return out


# ---------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(latency: dict, throughput: dict[str, float], n: int, budget: int, clients: int, seconds: float) -> None:
    times = latency["times"]
    base = times["in-process"]
    print(f"\nreason, warm: {n} question(s), maxTokens {budget}, interleaved; same answer text on all interfaces: "
          f"{latency['same']}/{n}")  # fmt: skip
    print(f"{'interface':<12}{'p50 ms':>10}{'p95 ms':>10}{'p50 ratio':>11}{'median ratio':>14}")
    for name, ms in times.items():
        ratios = [a / b for a, b in zip(ms, base)]
        print(f"{name:<12}{statistics.median(ms):>10.0f}{pct(ms, 0.95):>10.0f}"
              f"{statistics.median(ms) / statistics.median(base):>11.3f}{statistics.median(ratios):>14.3f}")  # fmt: skip
    print(f"\ndeep_search, {clients} concurrent clients, {seconds:g} s each")
    print(f"{'interface':<12}{'calls/s':>10}{'ratio':>10}")
    for name, rate in throughput.items():
        print(f"{name:<12}{rate:>10.1f}{rate / throughput['in-process']:>10.3f}")


async def bench(args, home: Path) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    from localreason.service import Service

    questions = list(itertools.islice(itertools.cycle(args.ask or QUESTIONS), args.questions))
    svc = Service.open(home)
    svc.warm(background=False)
    budget = svc.settings.answer_budget
    server = RestServer(home)
    rest = RestClient(server.port)
    params = mcp_params(home)
    try:
        if params is None:
            latency = await reason_latency(svc, rest, None, questions, budget)
            throughput = await search_throughput(svc, server.port, None, args.clients, args.seconds)
        else:
            with open(Path(tempfile.gettempdir()) / "lr-bench-mcp-stderr.log", "w") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                    await session.initialize()
                    latency = await reason_latency(svc, rest, session, questions, budget)
                    throughput = await search_throughput(svc, server.port, session, args.clients, args.seconds)
    finally:
        rest.close()
        server.close()
        svc.close()
    report(latency, throughput, len(questions), budget, args.clients, args.seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, default=None, help="a library (default: a temporary one of the samples)")
    ap.add_argument("--questions", type=int, default=10, help="reason calls per interface (the questions cycle)")
    ap.add_argument("--ask", action="append", help="a question to use instead of the samples' (repeatable)")
    ap.add_argument("--clients", type=int, default=4, help="concurrent deep_search clients")
    ap.add_argument("--seconds", type=float, default=10.0, help="duration of each throughput measurement")
    args = ap.parse_args()
    if args.questions < 1 or args.clients < 1 or args.seconds <= 0:
        ap.error("--questions and --clients must be at least 1, --seconds positive")
    home = args.home.expanduser() if args.home else sample_library()
    anyio.run(bench, args, home)


if __name__ == "__main__":
    main()
