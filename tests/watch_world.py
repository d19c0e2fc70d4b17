"""The world tests/test_watch.py and tests/test_watch_limits.py watch: a real Watcher on its own thread over a real
library and real folders (``Watch``), its clock moved by the test (``Clock``), their fixtures, and the CLI run as a
process (``start_cli``, ``read_until``, ``stop_with_ctrl_c``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.library import Library
from localreason.service import Service
from localreason.watch import Listener, Watcher, stat_key

from fakes import FakeEmbedder
from waiting import PATIENCE, finished, wait_until

SETTLE = 0.5
"""The settling period the test's watchers use, on the test's clock."""
FAKE_CLI = Path(__file__).parent / "fake_cli.py"


class Clock:
    """The watcher's clock, moved by the test: a change settles only when the test says time has passed."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Watch:
    """A real Watcher on its own thread over a real library and real folders; keeps all it said."""

    def __init__(self, service: Service, clock: Clock, roots=None, **kwargs) -> None:
        self.service, self.clock = service, clock
        self.notices: list[str] = []
        self.reports: list[tuple] = []
        self.progress: list = []
        listener = Listener(notice=self.notices.append, report=lambda r, catch_up: self.reports.append((r, catch_up)),
                            progress=self.progress.append)  # fmt: skip
        self.watcher = Watcher(service, roots, listener, settle=SETTLE, recheck=0.2, clock=clock, **kwargs)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.watcher.ticks > 0 or self.error, "the watch to start")
        assert self.error is None, self.error

    def _run(self) -> None:
        try:
            self.watcher.run(self.stop)
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            self.error = exc

    def close(self) -> None:
        self.stop.set()
        self.watcher.wake()
        finished(self.thread, "the watch, told to stop")
        assert self.error is None, self.error

    def turns(self, n: int = 2) -> None:
        """Wake the loop and wait until it has gone round, ``n`` times (each turn applies what has settled; the
        first may have been half done when the clock moved)."""
        for _ in range(n):
            start = self.watcher.ticks
            self.watcher.wake()
            wait_until(lambda: self.watcher.ticks > start or self.error, "a turn of the watch")
            assert self.error is None, self.error

    def seen(self, *paths) -> None:
        """Wait until the watcher holds each path, as it is on disk now, among the changes waiting to settle."""

        def unseen() -> list[str]:
            waiting = self.watcher.pending.snapshot()
            return [str(p) for p in paths if waiting.get(str(p), "absent") != stat_key(str(p))]

        wait_until(lambda: not unseen(), "the watcher to see the changes")


    def settle(self) -> None:
        """Move time past the settling period and let the watcher act on it."""
        self.clock.advance(SETTLE + 0.01)
        self.turns()

    def drain(self, rounds: int = 8) -> None:
        """Settle until nothing waits (a folder moved in takes two rounds: the folder, then its files)."""
        for _ in range(rounds):
            self.settle()
            if not len(self.watcher.pending) and not self.watcher.gone and not self.watcher.applying:
                return
        raise AssertionError(f"changes still waiting: {self.watcher.pending.snapshot()} {self.watcher.gone}")

    def changes(self) -> list[tuple[str, str]]:
        """(status, file name) of each file a change wrote, in order (what stayed the same left out)."""
        return [(f.status, Path(f.path).name) for r, catch_up in self.reports if not catch_up
                for f in r.files if f.status != "unchanged"]  # fmt: skip


def documents(service: Service) -> dict[str, object]:
    with service.reading() as lib:
        return {d.source_path: d for d in lib.documents()}


def text_of(service: Service, path: Path) -> str:
    with service.reading() as lib:
        return lib.document_text(documents(service)[str(path)].id)


def found(service: Service, words: str) -> list[str]:
    """The texts of the passages a search for ``words`` finds that hold all of them."""
    return [h.content for h in service.deep_search(words, limit=10)
            if all(w.lower() in h.content.lower() for w in words.split())]  # fmt: skip


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "notes"
    root.mkdir()
    (root / "pump.md").write_text("# Pump\n\nThe pump runs on twelve volts.\n")
    (root / "valve.md").write_text("# Valve\n\nThe valve closes at noon.\n")
    return root


@pytest.fixture
def service(lib, folder):
    lib.ingest([folder], "work")
    return Service(lib)


@pytest.fixture
def watch(service):
    """``watch(**kwargs)``: a Watch over ``service`` (every source of the library unless ``roots`` is given)."""
    made: list[Watch] = []
    clock = Clock()

    def start(**kwargs) -> Watch:
        made.append(Watch(service, clock, **kwargs))
        return made[-1]

    yield start
    for w in made:
        w.close()


def ingested(tmp_path: Path, folder: Path) -> Path:
    """A home with ``folder`` ingested into 'work' (in this process: the fake embedder is the CLI's too)."""
    home = tmp_path / "home"
    with Library(settings=load_settings(home), embedder=FakeEmbedder()) as lib:
        lib.ingest([folder], "work")
    return home


def start_cli(home: Path, *args: str, limit: int | None = None, env: dict | None = None) -> subprocess.Popen:
    """`localreason ARGS` with the fake models; with ``limit``, in a user namespace whose inotify watch limit is
    ``limit`` (the kernel keeps that limit per user namespace)."""
    command = [sys.executable, str(FAKE_CLI), "--home", str(home), *args]
    if limit is not None:
        quoted = " ".join(f"'{c}'" for c in command)
        command = ["unshare", "-U", "-r", "sh", "-c", f"echo {limit} > /proc/sys/user/max_inotify_watches && "
                                                       f"exec {quoted}"]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})  # fmt: skip


def read_until(proc: subprocess.Popen, pattern: str, seen: list[str], timeout: float = PATIENCE) -> str:
    """The first line of ``proc``'s output matching ``pattern`` (every line read goes to ``seen``)."""
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        for line in proc.stdout:
            seen.append(line)
            if re.search(pattern, line):
                return line
    finally:
        timer.cancel()
    raise AssertionError(f"no line matched {pattern!r}: {''.join(seen)[-3000:]}")


def stop_with_ctrl_c(proc: subprocess.Popen, seen: list[str]) -> int:
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=PATIENCE)
    seen.append(rest)
    return proc.returncode
