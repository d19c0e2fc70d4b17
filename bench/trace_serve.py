"""Record what the servers and the command line answer for a fixed set of requests, to prove a
refactor changed nothing.

Over a copy of one library (the bundled samples, built once with --build), this starts
`localreason serve` and `localreason mcp` in child processes and runs `localreason` commands, and
writes one JSON line per request: REST (method, path, body -> status, content type, body), MCP
(tools/list, then tool calls -> isError, text, structuredContent) and CLI (arguments -> exit code,
stdout, stderr). Only what changes from run to run is masked: latencies, the server's port, its
pid, the proof of its instance, the process's version line. The code under test is the
`localreason` that `python -m localreason` imports in a folder of its own (PYTHONPATH picks the
checkout; the children never start in this one). Masked too: the copy's folder.

    python -m bench.trace_serve --build /tmp/trace-lib          # once
    PYTHONPATH=<old checkout>:$PWD python -P -m bench.trace_serve --library /tmp/trace-lib --out /tmp/before.jsonl
    python -m bench.trace_serve --library /tmp/trace-lib --out /tmp/after.jsonl
    cmp /tmp/before.jsonl /tmp/after.jsonl && echo identical
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOME: list[str] = ["", "", ""]
"""The traced copy's folder, the folder its processes start in (both named anew each run) and the traced
checkout's models/ folder (where models are looked for)."""
VOLATILE_KEYS = {"latencyMs", "proof", "pid", "uptimeSeconds", "startedAt"}
QUESTIONS = ["Where did the Black Death originate?", "When did Apollo 11 land on the Moon?",
             "What is the capital of Australia?"]  # fmt: skip


def build(home: Path) -> None:
    """The bundled samples, ingested with the real embedding model into ``home``."""
    from localreason.demo import samples_dir
    from localreason.library import Library

    with Library(home) as lib:
        lib.ingest([samples_dir()], "samples", exclude=["LICENSES*"])


def masked(value, port: int | None = None):
    """``value`` with run-to-run details replaced by their key's name."""
    if isinstance(value, dict):
        return {k: (f"<{k}>" if k in VOLATILE_KEYS else masked(v, port)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, port) for v in value]
    if isinstance(value, str):
        value = re.sub(r"\b\d+(\.\d+)? ?(ms|s)\b", "<time>", value)
        if port:
            value = value.replace(str(port), "<port>")
        for path, name in zip(HOME, ("<home>", "<work>", "<checkout>/models")):
            value = value.replace(path, name) if path else value
    return value


def run_cli(home: Path, args, **kwargs) -> subprocess.CompletedProcess:
    """``python -m localreason ARGS`` on ``home``, started beside it (so a checkout's folder is not on its path)."""
    return subprocess.run([sys.executable, "-m", "localreason", *args], env=env_for(home), cwd=home.parent,
                          capture_output=True, text=True, **kwargs)  # fmt: skip


def env_for(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALREASON_")}
    env.update({"LOCALREASON_HOME": str(home), "LOCALREASON_HANDOFF": "0", **extra})
    return env


# ---------------------------------------------------------------- ids of the library


def ids_of(home: Path) -> dict:
    """A collection, document and chunk id of the library (from the CLI's own JSON)."""
    def cli_json(*args):
        return json.loads(run_cli(home, args, check=True).stdout)

    hits = cli_json("search", "Black Death origin", "--json")["data"]
    col = cli_json("library", "--json")["data"]["collections"][0]["id"]
    return {"chunk": hits[0]["chunkId"], "document": hits[0]["documentId"], "collection": col}


# ---------------------------------------------------------------- REST


def rest_requests(ids: dict) -> list[tuple[str, str, object, dict]]:
    """(method, path, body, headers): good requests and every kind of bad one."""
    chk, doc, col = ids["chunk"], ids["document"], ids["collection"]
    js = {"Content-Type": "application/json"}
    reqs = [("GET", "/v1/health", None, {}), ("GET", "/v1/collections", None, {}), ("GET", "/openapi.json", None, {}),
            ("GET", "/nowhere", None, {}), ("DELETE", "/v1/deep_search", None, {})]
    good = [("/v1/find_items", {"query": "plague"}), ("/v1/find_items", {"query": "python", "limit": 2}),
            ("/v1/deep_search", {"query": "Black Death origin"}),
            ("/v1/deep_search", {"query": "exceptions", "limit": 3, "documentId": doc}),
            ("/v1/deep_search", {"query": "moon landing", "collectionId": col}),
            ("/v1/deep_search", {"query": "rainforest", "limit": 500}),
            ("/v1/deep_read", {"chunkId": chk}),
            *[("/v1/deep_expand", {"chunkId": chk, "direction": d}) for d in
              ("up", "down", "previous", "next", "surrounding")],
            ("/v1/deep_expand", {"chunkId": chk, "direction": "surrounding", "window": 2})]
    bad = [("/v1/deep_search", {"query": "   "}), ("/v1/deep_search", {"query": ""}), ("/v1/deep_search", {}),
           ("/v1/deep_search", {"query": "x" * 2001}), ("/v1/deep_search", {"query": "x", "documentId": None}),
           ("/v1/deep_search", {"query": "x", "documentId": ""}), ("/v1/deep_search", {"query": "x", "documentId": "doc_1"}),
           ("/v1/deep_search", {"query": "x", "documentId": col}), ("/v1/deep_search", {"query": "x", "extra": 1}),
           ("/v1/deep_search", {"query": "x", "limit": "ten"}), ("/v1/deep_search", {"query": "x", "limit": True}),
           ("/v1/deep_search", {"query": 5}), ("/v1/deep_search", ["query"]),
           ("/v1/deep_search", {"query": "x", "documentId": "doc_" + "a" * 16}),
           ("/v1/deep_read", {"chunkId": "chk_" + "a" * 16}), ("/v1/deep_read", {"chunkId": doc}),
           ("/v1/deep_expand", {"chunkId": chk, "direction": "sideways"}),
           ("/v1/deep_expand", {"chunkId": chk, "direction": "up", "window": -1}),
           ("/v1/reason", {"query": " "}), ("/v1/reason", {"query": "x", "maxTokens": "a"}),
           ("/v1/reason", {"query": "x", "collectionId": col, "documentId": "doc_" + "b" * 16}),
           ("/v1/reason", {"query": "Where did the Black Death originate?", "maxTokens": -5}),
           ("/v1/reason", {"query": "Where did the Black Death originate?", "maxTokens": 3})]
    reqs += [("POST", p, b, js) for p, b in good + bad]
    reqs += [("POST", "/v1/deep_search", b'{"query": "x", "limit": NaN}', js),
             ("POST", "/v1/deep_search", b'{"query": "x",}', js), ("POST", "/v1/deep_search", b"\xff\xfe", js),
             ("POST", "/v1/deep_search", b'{"query": "x"}', {"Content-Type": "text/plain"}),
             ("POST", "/v1/deep_search", b'{"query": "x", "query": "y"}', js),
             ("POST", "/v1/deep_search", b'{"query": "' + b"a" * 1_100_000 + b'"}', js),
             ("POST", "/v1/deep_search", b'{"query": "x"}', {**js, "Host": "evil.example"})]
    reqs += [("POST", "/v1/reason", {"query": q, "maxTokens": 1000}, js) for q in QUESTIONS]
    reqs += [("POST", "/v1/reason", {"query": QUESTIONS[1], "documentId": doc, "limit": 3}, js)]
    return reqs


def rest_trace(home: Path, out, log: Path) -> None:
    with open(log, "wb") as errs:
        proc = subprocess.Popen([sys.executable, "-m", "localreason", "serve", "--port", "0"], env=env_for(home),
                                cwd=home.parent, stdout=errs, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        end = time.monotonic() + 300
        while not (m := re.search(r"on http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))):
            if proc.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"localreason serve did not start:\n{log.read_text()}")
            time.sleep(0.2)
        port = int(m.group(1))
        wait_ready(port)
        for method, path, body, headers in rest_requests(ids_of(home)):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
            raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
            conn.request(method, path, raw, headers)
            r = conn.getresponse()
            data = r.read()
            conn.close()
            try:
                shown = json.loads(data)
            except ValueError:
                shown = data.decode("utf-8", "replace")
            sent = body if not isinstance(body, bytes) else body[:200].decode("utf-8", "replace")
            record = {"rest": [method, path, sent, headers], "status": r.status,
                      "type": r.getheader("content-type"), "retryAfter": r.getheader("retry-after"),
                      "auth": r.getheader("www-authenticate"), "body": masked(shown, port)}  # fmt: skip
            out.write(json.dumps(record, sort_keys=True) + "\n")
    finally:
        proc.terminate()
        proc.wait(60)


def wait_ready(port: int) -> None:
    """Until /v1/health says the models are loaded (the first reason would otherwise time the load)."""
    end = time.monotonic() + 300
    while time.monotonic() < end:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/v1/health")
        status = json.loads(conn.getresponse().read())["data"]["status"]
        conn.close()
        if status != "loading":
            return
        time.sleep(0.5)


# ---------------------------------------------------------------- MCP


def mcp_calls(ids: dict) -> list[tuple[str, dict]]:
    chk, doc, col = ids["chunk"], ids["document"], ids["collection"]
    return [("find_items", {"query": "plague"}), ("find_items", {"query": "python", "limit": 2}),
            ("deep_search", {"query": "Black Death origin"}),
            ("deep_search", {"query": "exceptions", "limit": 3, "documentId": doc}),
            ("deep_search", {"query": "moon landing", "collectionId": col}),
            ("deep_read", {"chunkId": chk}),
            *[("deep_expand", {"chunkId": chk, "direction": d}) for d in ("up", "down", "previous", "next",
                                                                         "surrounding")],
            ("deep_search", {"query": "  "}), ("deep_search", {"query": "x", "documentId": "doc_1"}),
            ("deep_search", {"query": "x", "documentId": col}), ("deep_search", {"query": "x", "bogus": 1}),
            ("deep_search", {"query": "x", "limit": "ten"}), ("deep_read", {"chunkId": "chk_" + "a" * 16}),
            ("deep_expand", {"chunkId": chk, "direction": "sideways"}), ("no_such_tool", {}),
            ("reason", {"query": " "}),
            *[("reason", {"query": q}) for q in QUESTIONS[:2]],
            ("reason", {"query": QUESTIONS[1], "documentId": doc, "limit": 3})]  # fmt: skip


def mcp_trace(home: Path, out, errlog: Path) -> None:
    import anyio

    async def go():
        from mcp import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(command=sys.executable, args=["-m", "localreason", "mcp"], env=env_for(home),
                                        cwd=home.parent)
        with open(errlog, "w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                init = await session.initialize()
                info = init.model_dump(mode="json", exclude_none=True)
                out.write(json.dumps({"mcp": "initialize", "result": masked(info)}, sort_keys=True) + "\n")
                tools = (await session.list_tools()).model_dump(mode="json", exclude_none=True)
                out.write(json.dumps({"mcp": "tools/list", "result": tools}, sort_keys=True) + "\n")
                for name, args in mcp_calls(ids_of(home)):
                    try:
                        r = (await session.call_tool(name, args)).model_dump(mode="json", exclude_none=True)
                    except Exception as exc:  # a JSON-RPC error is an answer too
                        r = {"error": f"{type(exc).__name__}: {exc}"}
                    out.write(json.dumps({"mcp": [name, args], "result": masked(r)}, sort_keys=True) + "\n")

    anyio.run(go)


# ---------------------------------------------------------------- CLI


def cli_commands(ids: dict) -> list[list[str]]:
    chk, doc = ids["chunk"], ids["document"]
    return [["search", "Black Death origin"], ["search", "Black Death origin", "--json"], ["search", "  "],
            ["search", "x", "--document", "doc_1"], ["find", "plague"], ["find", "plague", "--json"],
            ["read", chk], ["read", chk, "--json"], ["read", "chk_" + "a" * 16], ["read", "nonsense"],
            ["expand", chk, "--direction", "surrounding"], ["expand", chk, "--direction", "sideways"], ["show", doc], ["show", doc, "--json"],
            ["library"], ["library", "--documents", "--json"], ["evidence", "Where did the Black Death originate?"],
            ["evidence", "Where did the Black Death originate?", "--json"], ["ask", "   "],
            ["ask", QUESTIONS[0], "--json"], ["ask", QUESTIONS[2]], ["models", "--json"], ["nosuchcommand"],
            ["search", "x", "--limit", "zero"]]  # fmt: skip


def cli_trace(home: Path, out) -> None:
    for args in cli_commands(ids_of(home)):
        r = run_cli(home, args, timeout=900)
        stdout = r.stdout
        try:
            stdout = masked(json.loads(stdout))
        except ValueError:
            stdout = masked(stdout)
        out.write(json.dumps({"cli": args, "code": r.returncode, "stdout": stdout, "stderr": masked(r.stderr)},
                             sort_keys=True) + "\n")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, help="build the samples library in this folder, then stop")
    ap.add_argument("--library", type=Path, help="the library to trace (it is copied; the copy is traced)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--part", choices=("rest", "mcp", "cli", "all"), default="all")
    args = ap.parse_args()
    if args.build:
        build(args.build)
        return
    if not args.library or not args.out:
        ap.error("--library and --out are needed (or --build)")
    work = Path(tempfile.mkdtemp(prefix="lr-trace-"))
    home = work / "home"
    HOME[0] = str(home)
    which = subprocess.run([sys.executable, "-c", "import localreason; print(localreason.__file__)"], env=env_for(home),
                           cwd=work, capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    print(f"tracing the localreason of {which}", flush=True)
    HOME[1:] = [str(work), str(Path(which).parent.parent / "models")]
    shutil.copytree(args.library, home)
    with args.out.open("w") as out:
        for part, run in (("cli", lambda: cli_trace(home, out)), ("rest", lambda: rest_trace(home, out, work / "serve.log")),
                          ("mcp", lambda: mcp_trace(home, out, work / "mcp.err"))):  # fmt: skip
            if args.part in (part, "all"):
                t = time.perf_counter()
                run()
                print(f"{part}: traced in {time.perf_counter() - t:.0f} s", flush=True)


if __name__ == "__main__":
    main()
