"""The CLI's hand-off to a running `localreason serve` (localreason/serve/handoff.py).

End to end with real processes: `serve` on an ephemeral loopback port and the command itself, both with
the fake models (tests/fake_cli.py), over the bundled samples. A handed-off `search` / `ask` prints what
the same command prints in its own process (--local), the server really answered it (its access log) and
the command imported no model library; a stale discovery file is ignored; bad input gets the same message
and exit code; the server takes its file away when it stops. The server proves it holds the file's token
without ever showing it, a forged server gets neither the request nor the API key, a server of other code
(version, modules) or a pid of another user is not asked, and a busy server is waited for once.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from localreason import __version__
from localreason.config import API_KEY_ENV, load_settings
from localreason.demo import samples_dir
from localreason.library import Library
from localreason.serve import handoff

from fakes import FakeEmbedder
from waiting import PATIENCE, wait_until

slow = pytest.mark.slow  # starts `localreason serve` and the command as processes (fake models: a few seconds)

FAKE_CLI = str(Path(__file__).parent / "fake_cli.py")
QUESTION = "Where did the Black Death originate?"
HEAVY = ("torch", "sentence_transformers", "faiss", "llama_cpp", "openvino", "fastapi", "uvicorn", "starlette",
         "localreason.library", "localreason.service", "localreason.store")  # fmt: skip


@pytest.fixture(autouse=True)
def no_settings_in_env(monkeypatch):
    """The settings of this process (handoff.connect called here) agree with the server's (clean_env)."""
    for name in [k for k in os.environ if k.startswith("LOCALREASON_") and k != "LOCALREASON_HOME"]:
        monkeypatch.delenv(name)


def clean_env(home: Path, **extra: str) -> dict:
    """This environment without any LOCALREASON_* setting but the home (the server's and the commands' agree)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALREASON_")}
    return {**env, "LOCALREASON_HOME": str(home), "OMP_NUM_THREADS": "1", "PYTHONIOENCODING": "utf-8", **extra}


def run(home: Path, *args: str, python_flags: tuple = (), **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *python_flags, FAKE_CLI, *args], env=clean_env(home, **env),
                          capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip


def patched(prelude: str) -> list[str]:
    """The command line of FAKE_CLI run after ``prelude`` (Python) has changed something in its process."""
    return [sys.executable, "-c", f"{prelude}\nimport runpy, sys\nsys.argv = [{FAKE_CLI!r}, *sys.argv[1:]]\n"
            f"runpy.run_path({FAKE_CLI!r}, run_name='__main__')"]  # fmt: skip


def start_server(home: Path, log: Path, prelude: str = "", **env: str) -> subprocess.Popen:
    """`localreason serve --port 0` on ``home`` (after ``prelude``), returned once its discovery file names it
    and it answers."""
    command = patched(prelude) if prelude else [sys.executable, FAKE_CLI]
    with open(log, "wb") as out:
        proc = subprocess.Popen([*command, "serve", "--port", "0"], env=clean_env(home, **env), stdout=out,
                                stderr=subprocess.STDOUT)  # fmt: skip
    end = time.monotonic() + PATIENCE
    while not ((record := handoff._read(handoff.discovery_path(home))) and record.get("pid") == proc.pid
               and "Application startup complete" in log.read_text()):  # fmt: skip
        assert proc.poll() is None and time.monotonic() < end, log.read_text()
        time.sleep(0.1)
    return proc


def stop_server(proc: subprocess.Popen, how: int = signal.SIGINT) -> int:
    proc.send_signal(how)
    try:
        return proc.wait(PATIENCE)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    """(served, quiet): the bundled samples ingested once with the fake embedder, and a copy no server serves."""
    root = tmp_path_factory.mktemp("handoff")
    served, quiet = root / "served", root / "quiet"
    with Library(settings=load_settings(served), embedder=FakeEmbedder()) as lib:
        lib.ingest([samples_dir()], "samples", exclude=["LICENSES*", "README*"])
    shutil.copytree(served, quiet)
    return served, quiet


class Server:
    """A running `localreason serve`: its home, its access log and its discovery record."""

    def __init__(self, home: Path, log: Path, record: dict) -> None:
        self.home, self.log, self.record = home, log, record

    def _lines(self, endpoint: str) -> int:
        request = rf'"(?:GET|POST) {re.escape(endpoint)}(?:\?[^ "]*)? HTTP/1\.1" \d+'  # a query string or none
        return len(re.findall(request, self.log.read_text()))

    def served(self, endpoint: str) -> int:
        """How many requests to ``endpoint`` it has answered so far (its access log, once up to date).

        The log is up to date when the answer to a request sent now (GET /v1/health) is in it: the
        server logs each answer after sending it, and the commands before got theirs.
        """
        marks = self._lines("/v1/health")
        try:
            urllib.request.urlopen(self.record["url"] + "/v1/health", timeout=PATIENCE).read()
        except urllib.error.HTTPError:
            pass  # 401 from a server that wants a key: logged all the same
        wait_until(lambda: self._lines("/v1/health") > marks, "the server's access log to show the health check")
        return self._lines(endpoint)


@pytest.fixture(scope="module")
def server(homes):
    """The running server of the served home."""
    home = homes[0]
    log = home.parent / "server.log"
    proc = start_server(home, log)
    try:
        yield Server(home, log, handoff._read(handoff.discovery_path(home)))
    finally:
        stop_server(proc)


def same_answers(text: str) -> str:
    """Output with latencies blanked: the one thing two runs of the same question may print differently."""
    text = re.sub(r'"latencyMs": \d+', '"latencyMs": 0', text)
    text = re.sub(r'"stagesMs": \{[^}]*\}', '"stagesMs": {}', text)
    return re.sub(r"(dropped · )\d+(?:\.\d)? m?s", r"\g<1>0 s", text)


def a_document_id(home: Path) -> str:
    out = run(home, "library", "-d", "--json")
    return next(d["id"] for d in json.loads(out.stdout)["data"]["documents"] if d["title"] == "Black Death")


# ---------------------------------------------------------------- (1) and (2): the same output, from the server


@slow
@pytest.mark.parametrize("args, endpoint", [
    (["search", "origin of the Black Death", "--json"], "/v1/deep_search"),
    (["search", "origin of the Black Death", "-n", "3"], "/v1/deep_search"),
    (["search", "rain forest", "-c", "samples", "--limit", "0004", "--json"], "/v1/deep_search"),
    (["ask", QUESTION, "--json"], "/v1/reason"),
    (["ask", QUESTION], "/v1/reason"),
    (["ask", QUESTION, "-c", "samples", "-n", "8", "--max-tokens", "400", "--json"], "/v1/reason"),
])  # fmt: skip
def test_a_handed_off_command_prints_what_it_prints_in_its_own_process(server, args, endpoint):
    home = server.home
    before = server.served(endpoint)
    here = run(home, *args, "--local")
    assert here.returncode == 0, here.stderr
    assert server.served(endpoint) == before, "--local must not ask the server"
    there = run(home, *args)
    assert there.returncode == 0, there.stderr
    assert server.served(endpoint) == before + 1, "the server did not answer it"
    assert same_answers(there.stdout) == same_answers(here.stdout) and there.stdout.strip()
    assert there.stderr == here.stderr == ""


@slow
def test_scoped_by_document_and_the_collection_name_resolved_by_the_server(server):
    home = server.home
    doc = a_document_id(home)
    for args in (["search", "plague", "-d", doc, "--json"], ["ask", QUESTION, "-d", doc, "--json"]):
        before = server.served("/v1/collections")
        there = run(home, *args, "-c", "samples")
        here = run(home, *args, "-c", "samples", "--local")
        assert here.returncode == there.returncode == 0, (here.stderr, there.stderr)
        assert same_answers(there.stdout) == same_answers(here.stdout)
        assert server.served("/v1/collections") == before + 1  # the name was looked up there
        hits = json.loads(there.stdout)["data"]
        assert all(h["documentId"] == doc for h in hits) if args[0] == "search" else hits["citations"]


@slow
def test_files_of_queries_and_questions(server, tmp_path):
    home = server.home
    queries = tmp_path / "q.txt"
    queries.write_text(f"origin of the Black Death\n\n   \n{'x' * 2001}\nrain forest\n", encoding="utf-8")
    for command, option, endpoint in (("search", "--queries-file", "/v1/deep_search"),
                                      ("ask", "--questions-file", "/v1/reason")):  # fmt: skip
        before = server.served(endpoint)
        here = run(home, command, option, str(queries), "--local")
        there = run(home, command, option, str(queries))
        assert here.returncode == there.returncode == 2  # one line refused: the query is too long
        assert same_answers(there.stdout) == same_answers(here.stdout)
        assert [json.loads(line).get("error", "") for line in there.stdout.splitlines()] == \
            ["", "The query is 2,001 characters long; the limit is 2,000.", ""]  # fmt: skip
        assert server.served(endpoint) == before + 3


@slow
def test_a_handed_off_command_loads_no_model_library(server):
    home = server.home

    def imported(*args: str) -> set[str]:
        out = run(home, *args, python_flags=("-X", "importtime"))
        assert out.returncode == 0, out.stderr[-2000:]
        return {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}

    def heavy(modules: set[str]) -> set[str]:
        return {m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)}

    search = imported("search", "origin of the Black Death", "--json")
    assert heavy(search) == set() and "numpy" not in search and "localreason.serve.handoff" in search
    ask = imported("ask", QUESTION)
    assert heavy(ask) == set()
    assert {"localreason.library", "faiss"} <= heavy(imported("search", "origin of the Black Death", "--local"))


# ---------------------------------------------------------------- (3) a stale or foreign discovery file


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def stale_records(live: dict, quiet: Path) -> dict[str, dict]:
    """Discovery files in the quiet home that must be ignored; most point at the live server of the other home."""
    mine = {**live, "home": str(quiet.resolve())}
    return {
        "dead pid": {**mine, "pid": dead_pid()},
        "refused port": {**mine, "url": f"http://127.0.0.1:{free_port()}"},
        "other home": live,  # the served home's own file, copied: its server serves another folder
        "wrong token": {**mine, "token": "not-" + live["token"]},
        "other machine": {**mine, "machine": live["machine"] + "-elsewhere"},
        "other settings": {**mine, "settings": {**live["settings"], "answer_budget": "1234"}},
        "key needed": {**mine, "apiKey": True},
        "other protocol": {**mine, "protocol": handoff.PROTOCOL + 1},
        "other version": {**mine, "version": __version__ + ".post1"},
        "other code": {**mine, "code": "0" * 32},
        "not json": "{not json",
    }


def write_record(home: Path, record) -> None:
    handoff.discovery_path(home).write_text(record if isinstance(record, str) else json.dumps(record))


@slow
def test_a_stale_or_foreign_file_is_ignored_quickly(server, homes, monkeypatch):
    """Quickly: without waiting out CONNECT_TIMEOUT, made PATIENCE here, so that a wait is told from a busy
    machine's slowness."""
    live, quiet = server.record, homes[1]
    monkeypatch.setattr(handoff, "CONNECT_TIMEOUT", PATIENCE)
    before = {e: server.served(e) for e in ("/v1/instance", "/v1/deep_search")}
    checked = 0
    for name, record in stale_records(live, quiet).items():
        write_record(quiet, record)
        started = time.monotonic()
        assert handoff.connect(str(quiet)) is None, name
        assert time.monotonic() - started < PATIENCE, f"{name}: waited out the connect timeout"
        checked += name in ("wrong token",)  # the only one that gets as far as asking the server
    write_record(quiet, {**live, "home": str(quiet.resolve())})
    handoff.discovery_path(quiet).chmod(0o666)
    assert handoff.connect(str(quiet)) is None, "a file others may write is not trusted"
    handoff.discovery_path(quiet).chmod(0o600)
    assert handoff.connect(str(quiet)) is not None, "the same record with the right token is trusted"
    assert server.served("/v1/instance") == before["/v1/instance"] + checked + 1
    assert server.served("/v1/deep_search") == before["/v1/deep_search"]
    handoff.discovery_path(quiet).unlink()


def hole_record(quiet: Path, port: int, pid: int) -> dict:
    """A discovery record for the quiet home that agrees with this process in all but the server it names."""
    return {"protocol": handoff.PROTOCOL, "url": f"http://127.0.0.1:{port}", "pid": pid,
            "machine": socket.gethostname(), "home": str(quiet.resolve()), "token": "t" * 24, "apiKey": False,
            "settings": handoff.settings_view(load_settings(quiet)), "version": __version__,
            "code": handoff.code_id()}  # fmt: skip


def test_a_server_that_does_not_answer_is_waited_for_at_most_connect_timeout(homes, monkeypatch):
    """A live server is given CONNECT_TIMEOUT (seconds: a busy machine is not mistaken for a hung server), and
    not longer: the hole below never answers and stays open, so only the timeout ends the wait."""
    quiet = homes[1]
    default = handoff.CONNECT_TIMEOUT
    monkeypatch.setattr(handoff, "CONNECT_TIMEOUT", 0.25)
    with socket.socket() as hole:  # listens, never accepts: connections queue and nothing answers
        hole.bind(("127.0.0.1", 0))
        hole.listen(1)
        write_record(quiet, hole_record(quiet, hole.getsockname()[1], os.getpid()))
        try:
            started = time.monotonic()
            assert handoff.connect(str(quiet)) is None
            waited = time.monotonic() - started
        finally:
            handoff.discovery_path(quiet).unlink()
    assert waited >= 0.25, "gave up before the timeout"
    # Nor the default timeout instead, nor no timeout at all: the 2.75 s between are for a busy machine (the rest
    # of connect is reading one small file and stat calls); a clock bound, but ten times what it measures.
    assert waited < default, f"waited {waited:.2f} s for a server given 0.25 s"


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/stat"), reason="process states are read in /proc")
def test_a_stopped_server_is_not_asked(homes, monkeypatch):
    """A server stopped with Ctrl-Z (SIGSTOP) is alive to os.kill but cannot answer: not asked, not waited for."""
    quiet = homes[1]
    monkeypatch.setattr(handoff, "CONNECT_TIMEOUT", PATIENCE)  # asked, it would cost all of this
    listener = subprocess.Popen([sys.executable, "-c", "import socket, sys, time\ns = socket.socket()\n"
                                 "s.bind(('127.0.0.1', 0)); s.listen(1); print(s.getsockname()[1], flush=True)\n"
                                 "time.sleep(1000)"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        port = int(listener.stdout.readline())
        listener.send_signal(signal.SIGSTOP)
        wait_until(lambda: handoff._stopped(listener.pid), "the listener to stop")  # sent is not yet acted on
        write_record(quiet, hole_record(quiet, port, listener.pid))
        started = time.monotonic()
        assert handoff.connect(str(quiet)) is None
        assert time.monotonic() - started < handoff.CONNECT_TIMEOUT, "the stopped server was asked (and waited for)"
        listener.send_signal(signal.SIGCONT)
        wait_until(lambda: not handoff._stopped(listener.pid), "the listener to run again")  # as a live server is
    finally:
        handoff.discovery_path(quiet).unlink(missing_ok=True)
        listener.kill()
        listener.wait()


@slow
@pytest.mark.parametrize("stale", ["dead pid", "refused port", "other home", "wrong token", "other version"])
def test_the_command_still_succeeds_beside_a_stale_file(server, homes, stale):
    live, quiet = server.record, homes[1]
    write_record(quiet, stale_records(live, quiet)[stale])
    try:
        before = server.served("/v1/deep_search")
        out = run(quiet, "search", "origin of the Black Death", "--json")
        reference = run(quiet, "search", "origin of the Black Death", "--json", "--local")
    finally:
        handoff.discovery_path(quiet).unlink()
    assert out.returncode == 0 and out.stdout == reference.stdout and out.stderr == "", out.stderr
    assert server.served("/v1/deep_search") == before


@slow
def test_settings_that_differ_from_the_servers_keep_the_command_here(server):
    home = server.home
    before = server.served("/v1/reason")
    out = run(home, "ask", QUESTION, "--json", LOCALREASON_ANSWER_BUDGET="300")
    assert out.returncode == 0, out.stderr
    assert server.served("/v1/reason") == before  # the server would have used 1000 tokens, not 300
    assert run(home, "ask", QUESTION, "--json", LOCALREASON_HANDOFF="0").returncode == 0
    assert server.served("/v1/reason") == before


@slow
def test_a_server_that_wants_a_key_is_asked_only_with_one(homes, tmp_path):
    key = "a-long-enough-test-key"
    home = tmp_path / "keyed"
    shutil.copytree(homes[1], home, ignore=shutil.ignore_patterns(handoff.FILE_NAME))
    proc = start_server(home, tmp_path / "keyed.log", LOCALREASON_API_KEY=key)
    try:
        server = Server(home, tmp_path / "keyed.log", handoff._read(handoff.discovery_path(home)))
        assert server.record["apiKey"] is True
        reference = run(home, "search", "origin of the Black Death", "--json", "--local")
        for given, asked in ((None, 0), ("not-" + key, 0), ("lrk_" + key, 0), (key, 1)):  # lrk_: a collection key
            before = server.served("/v1/deep_search")
            out = run(home, "search", "origin of the Black Death", "--json", **({"LOCALREASON_API_KEY": given}
                                                                               if given else {}))  # fmt: skip
            assert out.returncode == 0 and out.stdout == reference.stdout, out.stderr
            assert server.served("/v1/deep_search") == before + asked, given
    finally:
        stop_server(proc)


# ---------------------------------------------------------------- (4) bad input


SERVER, HERE, CLI = "the server", "the library here", "the command line"
BAD = [  # (arguments, exit code, who refuses it when a server runs)
    (["search", "   ", "--json"], 2, SERVER),
    (["search", "x" * 2001], 2, SERVER),
    (["search", "plague", "-d", "doc_bad"], 2, SERVER),
    (["search", "plague", "-d", "chk_aaaaaaaaaaaaaaaa"], 2, SERVER),
    (["search", "plague", "-c", "col_bad", "--json"], 2, SERVER),
    (["ask", " \t ", "--json"], 2, SERVER),
    (["ask", QUESTION, "-d", "doc_2bad"], 2, SERVER),
    (["search", "plague", "-n", "-3"], 2, HERE),  # a limit not written as digits is judged here
    (["search", "plague", "--limit", "ten"], 2, HERE),
    (["ask", QUESTION, "--max-tokens", "lots"], 2, HERE),
    (["search", "plague", "-d", ""], 2, HERE),
    (["search", "plague", "-c", "no such collection"], 3, HERE),
    (["search"], 2, CLI),
]


@slow
@pytest.mark.parametrize("args, code, judge", BAD, ids=[" ".join(a)[:40] for a, _, _ in BAD])
def test_bad_input_gets_the_same_message_and_exit_code(server, args, code, judge):
    home = server.home
    endpoint = "/v1/deep_search" if args[0] == "search" else "/v1/reason"
    before = server.served(endpoint)
    there = run(home, *args, python_flags=("-X", "importtime"))
    lines = there.stderr.splitlines(keepends=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    stderr = "".join(line for line in lines if not line.startswith("import time:"))
    here = run(home, *args, "--local")
    assert (there.returncode, there.stdout, stderr) == (here.returncode, here.stdout, here.stderr)
    assert there.returncode == code and stderr.startswith("Error: "), stderr
    assert server.served(endpoint) == before + (judge == SERVER)
    assert ("localreason.library" in imported) == (judge == HERE)


# ---------------------------------------------------------------- (5) the file goes when the server does


IGNORES_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)"
"""As a process started by a shell script in the background begins: SIGINT ignored (inherited as SIG_IGN)."""


@slow
@pytest.mark.parametrize("how, code, prelude", [(signal.SIGINT, 130, ""), (signal.SIGTERM, 143, ""),
                                                (signal.SIGINT, 130, IGNORES_SIGINT)],
                         ids=["SIGINT", "SIGTERM", "SIGINT, started with SIGINT ignored"])  # fmt: skip
def test_the_server_publishes_its_file_and_removes_it_when_it_stops(tmp_path, how, code, prelude):
    """Stopped by a signal, the server exits with 128 + the signal, whatever SIGINT's handling it began with: it
    stops on SIGINT either way (uvicorn's handler), and an inherited SIG_IGN must not turn that into exit 0."""
    home, log = tmp_path / "empty-home", tmp_path / "serve.log"
    proc = start_server(home, log, prelude)
    path = handoff.discovery_path(home)
    try:
        record = handoff._read(path)
        assert record["home"] == str(home.resolve()) and record["apiKey"] is False
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", record["url"]) and f":{record['url'].rsplit(':', 1)[1]}" \
            in log.read_text()  # fmt: skip
        assert handoff.connect(str(home)) is not None
        assert [p.name for p in home.iterdir() if p.name.endswith(".tmp")] == []
    finally:
        stopped = stop_server(proc, how)
    assert stopped == code and not path.exists(), log.read_text()
    assert handoff.connect(str(home)) is None


def test_a_server_leaves_a_file_that_names_another(tmp_path):
    """Two servers of one library: the one that stops first must not take away the other's file."""
    settings = load_settings(tmp_path / "home")
    path = handoff.publish(settings, "http://127.0.0.1:1", "first", False, "0")
    assert handoff._read(path)["token"] == "first"
    assert handoff.publish(settings, "http://127.0.0.1:2", "second", False, "0") == path
    handoff.withdraw(path, "first")
    assert handoff._read(path)["token"] == "second"
    handoff.withdraw(path, "second")
    assert not path.exists()


@slow
def test_switched_off_by_the_environment(server, monkeypatch):
    home = server.home
    assert handoff.connect(str(home)) is not None
    monkeypatch.setenv("LOCALREASON_HANDOFF", "0")
    assert handoff.connect(str(home)) is None


# ---------------------------------------------------------------- (6) whom the command trusts, and with what


class Forged:
    """A little HTTP server on loopback that is not localreason: it records every request (method, path,
    headers) and answers each with ``answer(method, path)`` -> (status, JSON body)."""

    def __init__(self, answer) -> None:
        self.requests: list[tuple[str, str, dict]] = []
        forged = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                forged.reply(self)

            do_POST = do_GET

            def log_message(self, *args) -> None:
                """Quiet: the test reads ``requests`` instead of a log."""

        self.answer = answer
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def reply(self, h: http.server.BaseHTTPRequestHandler) -> None:
        self.requests.append((h.command, h.path, dict(h.headers)))
        h.rfile.read(int(h.headers.get("Content-Length") or 0))
        status, body = self.answer(h.command, h.path)
        raw = json.dumps(body).encode("utf-8")
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)

    def __enter__(self) -> "Forged":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def get(url: str) -> tuple[int, str, str]:
    """(status, body, headers) of GET ``url``, whatever the status."""
    try:
        with urllib.request.urlopen(url, timeout=PATIENCE) as r:
            return r.status, r.read().decode("utf-8"), str(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8"), str(e.headers)


def run_patched(home: Path, prelude: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The command as ``run`` runs it, after ``prelude`` (Python) has changed something in its process."""
    return subprocess.run([*patched(prelude), *args], env=clean_env(home, **env), capture_output=True, text=True,
                          timeout=PATIENCE)  # fmt: skip


@slow
def test_the_token_cannot_be_had_from_the_server(server):
    """/v1/instance answers a proof of the token for the asker's nonce, never the token; nothing else shows it."""
    token, url, pid = server.record["token"], server.record["url"], server.record["pid"]
    nonce = handoff.new_nonce()
    answers = {path: get(url + path) for path in (
        "/v1/instance", f"/v1/instance?nonce={nonce}", f"/v1/instance?nonce={'a' * 16}", "/v1/instance?nonce=x",
        "/v1/health", "/v1/collections", "/openapi.json")}  # fmt: skip
    for path, (status, body, headers) in answers.items():
        assert token not in body and token not in headers, path
    assert [status for status, _, _ in answers.values()] == [400, 200, 200, 400, 200, 200, 200]
    data = json.loads(answers[f"/v1/instance?nonce={nonce}"][1])["data"]
    assert data == {"proof": handoff.proof(token, nonce, pid, handoff.PROTOCOL, __version__), "pid": pid,
                    "protocol": handoff.PROTOCOL, "version": __version__}  # fmt: skip


@slow
@pytest.mark.parametrize("forgery", ["made-up proof", "replayed proof", "no proof", "odd proof"])
def test_a_forged_server_gets_neither_the_request_nor_the_key(server, homes, forgery, monkeypatch):
    """A program listening where serve.json points (the server gone, its port taken) does not know the token."""
    key = "a-long-enough-test-key"
    live, quiet = server.record, homes[1]
    seen = json.loads(get(f"{live['url']}/v1/instance?nonce={'r' * 22}")[1])["data"]  # a real proof, for another nonce
    fields = {"pid": live["pid"], "protocol": handoff.PROTOCOL, "version": __version__}
    instance = {"made-up proof": {**fields, "proof": "0" * 64, "token": "guessed"},
                "replayed proof": seen, "no proof": fields, "odd proof": {**fields, "proof": "\ud800" * 64}}[forgery]

    def answer(method: str, path: str) -> tuple[int, dict]:
        return (200, {"data": instance}) if path.startswith("/v1/instance") else (200, {"data": []})

    reference = run(quiet, "search", "origin of the Black Death", "--json", "--local")
    with Forged(answer) as forged:
        write_record(quiet, {**live, "home": str(quiet.resolve()), "url": forged.url, "apiKey": True})
        try:
            monkeypatch.setenv(API_KEY_ENV, key)
            assert handoff.connect(str(quiet)) is None
            out = run(quiet, "search", "origin of the Black Death", "--json", LOCALREASON_API_KEY=key)
        finally:
            handoff.discovery_path(quiet).unlink()
    assert out.returncode == 0 and out.stdout == reference.stdout and out.stderr == "", out.stderr
    assert len(forged.requests) == 2, forged.requests  # asked once by connect here, once by the command
    for method, path, headers in forged.requests:
        assert method == "GET" and re.fullmatch(r"/v1/instance\?nonce=[A-Za-z0-9_-]{16,}", path), path
        assert "authorization" not in {h.lower() for h in headers} and not any(key in v for v in headers.values())
    assert forged.requests[0][1] != forged.requests[1][1], "the nonce is fresh each time"


@slow
def test_a_server_of_other_code_is_not_asked(server, homes, monkeypatch):
    """After an upgrade (another version) or an edit (other modules) the old server's code is not what answers."""
    home, quiet = server.home, homes[1]
    assert handoff.connect(str(home)) is not None
    before = {e: server.served(e) for e in ("/v1/instance", "/v1/deep_search")}
    newer = __version__ + ".post1"
    monkeypatch.setattr(handoff, "__version__", newer)  # this process was upgraded after the server started
    assert handoff.connect(str(home)) is None
    monkeypatch.setattr(handoff, "__version__", __version__)
    code_id = handoff.code_id
    monkeypatch.setattr(handoff, "code_id", lambda: "f" * 32)  # the same version, its modules changed on disk
    assert handoff.connect(str(home)) is None
    assert server.served("/v1/instance") == before["/v1/instance"]  # both refused by the file alone
    monkeypatch.setattr(handoff, "code_id", code_id)
    # a file that claims this process's version is not believed either: the server answers its own, proven
    monkeypatch.setattr(handoff, "__version__", newer)
    write_record(quiet, {**server.record, "home": str(quiet.resolve()), "version": newer})
    try:
        assert handoff.connect(str(quiet)) is None
    finally:
        handoff.discovery_path(quiet).unlink()
    assert server.served("/v1/instance") == before["/v1/instance"] + 1
    # the command itself, upgraded: it runs here, with the same output
    reference = run(home, "search", "origin of the Black Death", "--json", "--local")
    out = run_patched(home, f"import localreason; localreason.__version__ = {newer!r}",
                      "search", "origin of the Black Death", "--json")  # fmt: skip
    assert out.returncode == 0 and out.stdout == reference.stdout and out.stderr == "", out.stderr
    assert server.served("/v1/deep_search") == before["/v1/deep_search"]


@slow
def test_a_pid_of_another_user_is_not_the_server(server, monkeypatch):
    """serve.json is this user's, so its server was: a pid only another user's process has (reused) is stale."""
    home, pid = server.home, server.record["pid"]
    assert handoff.connect(str(home)) is not None
    before = {e: server.served(e) for e in ("/v1/instance", "/v1/deep_search")}
    kill = os.kill

    def as_if_another_users(target: int, sig: int) -> None:
        if target == pid:
            raise PermissionError(1, "Operation not permitted")
        kill(target, sig)

    monkeypatch.setattr(os, "kill", as_if_another_users)
    assert handoff.connect(str(home)) is None
    monkeypatch.setattr(os, "kill", kill)
    prelude = f"""import os
kill = os.kill
def as_if_another_users(target, sig):
    if target == {pid}:
        raise PermissionError(1, "Operation not permitted")
    kill(target, sig)
os.kill = as_if_another_users"""
    out = run_patched(home, prelude, "search", "origin of the Black Death", "--json")
    reference = run(home, "search", "origin of the Black Death", "--json", "--local")
    assert out.returncode == 0 and out.stdout == reference.stdout and out.stderr == "", out.stderr
    assert server.served("/v1/instance") == before["/v1/instance"]
    assert server.served("/v1/deep_search") == before["/v1/deep_search"]


def test_a_busy_server_is_waited_for_once(monkeypatch):
    """429: wait as long as the server says (capped), ask again; a second 429 runs the question here."""
    busy = {"error": {"code": "busy", "message": "5 questions are already being answered or waiting for the model.",
                      "details": {"hint": "Retry in about 1 s.", "retryAfter": 1}}}  # fmt: skip
    replies: list[tuple[int, dict]] = []

    def answer(method: str, path: str) -> tuple[int, dict]:
        return replies.pop(0)

    waits: list[tuple[float, int]] = []  # (seconds waited, requests the server had by then): no clock involved
    monkeypatch.setattr(handoff, "time", SimpleNamespace(monotonic=time.monotonic,
                                                         sleep=lambda s: waits.append((s, len(forged.requests)))))
    with Forged(answer) as forged:
        remote = handoff.Remote(forged.url, None, 1000)
        replies[:] = [(429, busy), (200, {"data": {"answer": "x"}})]
        assert remote._data("/v1/reason", {"query": "q"}) == {"data": {"answer": "x"}}["data"]
        assert waits == [(1.0, 1)] and len(forged.requests) == 2, "waited the server's Retry-After, then asked again"
        replies[:] = [(429, busy), (429, busy)]
        with pytest.raises(handoff.Fallback):
            remote._data("/v1/reason", {"query": "q"})
        assert len(forged.requests) == 4 and waits[1:] == [(1.0, 3)]
        monkeypatch.setattr(handoff, "BUSY_WAIT_MAX", 0.2)  # a long Retry-After is not waited out in full
        long = {"error": {**busy["error"], "details": {"retryAfter": 300}}}
        replies[:] = [(429, long), (200, {"data": []})]
        assert remote._data("/v1/deep_search", {"query": "q"}) == []
        assert waits[2:] == [(0.2, 5)]


def test_values_come_back_whole_from_their_json():
    """What the command prints from a server's answer is what it would print from its own values."""
    from localreason.reason import Answer, Citation, Reference, Statement
    from localreason.types import Collection, SearchHit

    hit = SearchHit("chk_aaaaaaaaaaaaaaaa", "doc_aaaaaaaaaaaaaaaa", "Title", 2, 3, "chk_bbbbbbbbbbbbbbbb",
                    ("Part", "Section"), "Text.", 10, 15, 4, 5)  # fmt: skip
    assert SearchHit.from_dict(json.loads(json.dumps(hit.to_dict()))) == hit
    collection = Collection("col_aaaaaaaaaaaaaaaa", "work", "2026-01-01T00:00:00Z", 2, 9)
    assert Collection.from_dict(collection.to_dict()) == collection
    ref = Reference("chk_aaaaaaaaaaaaaaaa", "A quoted sentence.", "doc_aaaaaaaaaaaaaaaa", 3, 21)
    answer = Answer("q?", "A quoted sentence. [[chk_aaaaaaaaaaaaaaaa]]",
                    (Citation("chk_aaaaaaaaaaaaaaaa", "doc_aaaaaaaaaaaaaaaa", "Title"),), ("A gap.",), 7, 1, 1234,
                    (Statement("A quoted sentence.", (ref,)),))  # fmt: skip
    assert Answer.from_dict(json.loads(json.dumps(answer.to_dict())), query="q?") == answer
