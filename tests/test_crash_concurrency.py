"""Real processes: kill -9 inside writes, writers side by side, readers while a writer works.

These start Python subprocesses (tests/lib_proc.py, with the fake embedder, and the real CLI),
so they take a while; they are marked ``slow`` and CI runs them.

A kill is aimed at a write, not at a moment: the process stops inside the write it was told to
(lib_proc.py --stall-in: inside a database transaction, or after a vector index file is written and
before it is published) and says so; the test checks from outside that the write is in progress (the
database's write lock is held and its change not committed; the index file exists but is not named),
kills it there, and then checks that the write left no trace and the library works.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from test_reliability import assert_consistent, folder_of, open_lib
from waiting import PATIENCE

pytestmark = pytest.mark.slow

PROC = Path(__file__).parent / "lib_proc.py"
PROCESS_PATIENCE = 300.0
"""Seconds a whole command of another process (an ingest of 30 notes) may take before a test gives up on it:
a safety deadline for a broken build, never reached by a working one however busy the machine."""


def start(home: Path, *args: str, stdin=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(PROC), str(home), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=stdin, text=True)  # fmt: skip


def run(home: Path, *args: str) -> tuple[int, str, str]:
    proc = start(home, *args)
    out, err = proc.communicate(timeout=PROCESS_PATIENCE)
    return proc.returncode, out, err


def first_line(proc: subprocess.Popen, prefix: str, patience: float = PROCESS_PATIENCE) -> str | None:
    """The first line ``proc`` prints that starts with ``prefix``; None if it ended first (or was killed after
    ``patience`` seconds: a safety deadline, so a broken build fails instead of hanging)."""
    timer = threading.Timer(patience, proc.kill)
    timer.start()
    try:
        return next((line for line in proc.stdout if line.startswith(prefix)), None)
    finally:
        timer.cancel()


def save(path: Path, text: str) -> None:
    """Write ``path`` whole at once, as an editor saving by rename does: a watch (which reads a file once it has
    held still for its settling time) never sees it half written, however long the writing process is held up."""
    staging = path.parent.parent / f".{path.parent.name}-staging"
    staging.mkdir(exist_ok=True)
    (staging / path.name).write_text(text)
    os.replace(staging / path.name, path)


def corpus(tmp_path: Path, n: int = 30) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(n):
        body = "\n\n".join(f"Paragraph {j} of note {i} about pump{i} and valve{j}. " * 12 for j in range(6))
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{body}\n")
    return root


def committed_generation(home: Path) -> int:
    """The database generation other processes see (every committed write that changes chunks bumps it)."""
    db = sqlite3.connect(home / "library.sqlite3", timeout=0, isolation_level=None)
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0
    finally:
        db.close()


def assert_writing(home: Path, before: int) -> None:
    """A process is inside a write transaction: the write lock is held and its change is not committed."""
    assert committed_generation(home) == before, "the stalled write is not committed"
    db = sqlite3.connect(home / "library.sqlite3", timeout=0, isolation_level=None)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            db.execute("BEGIN IMMEDIATE")
    finally:
        db.close()


def assert_publishing(home: Path, name: str) -> None:
    """A process has written the vector index file ``name`` and not yet published it in vectors.json."""
    assert (home / name).is_file()
    meta = home / "vectors.json"
    assert not meta.exists() or json.loads(meta.read_text())["file"] != name


def kill_in_write(proc: subprocess.Popen, home: Path) -> tuple[str, int, str]:
    """SIGKILL ``proc`` (started with --stall-in) once it says it stands inside its write and the library shows
    that write in progress; returns what it announced: (kind, which one, generation or file name)."""
    try:
        line = first_line(proc, "stalled ")
        assert line is not None, f"the process ended (or was stopped) before the write: {proc.stderr.read()[-3000:]}"
        _, kind, nth, what = line.split()
        if kind == "write":
            assert_writing(home, int(what))
        else:
            assert_publishing(home, what)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(PATIENCE)
    assert proc.returncode == -signal.SIGKILL, "killed, not ended of its own accord"
    return kind, int(nth), what


def assert_undone(home: Path, killed: tuple[str, int, str]) -> None:
    """The killed write left no trace: a database write rolled back to the generation it started from."""
    kind, _, what = killed
    if kind == "write":
        assert committed_generation(home) == int(what)


def clean_counts(tmp_path: Path, root: Path) -> tuple[int, int]:
    home = tmp_path / "clean-home"
    code, out, err = run(home, "ingest", str(root), "work")
    assert code == 0, err
    lib = open_lib(home)
    counts = (len(lib.documents()), lib.store.paragraph_count())
    lib.close()
    return counts


def check_after_crash(home: Path, expect: tuple[int, int] | None = None) -> None:
    lib = open_lib(home)
    assert_consistent(lib)
    if lib.store.paragraph_count():
        assert lib.deep_search("pump3 valve2", limit=3)
    if expect is not None:
        assert (len(lib.documents()), lib.store.paragraph_count()) == expect
        ids = [r[0] for r in lib.store.db.execute("SELECT id FROM chunks")]
        assert len(ids) == len(set(ids))
    lib.close()


KILLS = {"first document": "write:1", "middle": "write:13", "last document": "write:30", "publishing": "publish:2"}
"""Where an ingest of 30 notes into a new library is killed: inside the transaction writing its 1st, 13th or
30th document, or while it publishes the vector index after them (the 1st publication is the empty index
the new library opens with)."""


@pytest.mark.parametrize("when", KILLS)
def test_ingest_killed_in_a_write_reruns_to_the_clean_counts(tmp_path, when):
    root = corpus(tmp_path)
    expect = clean_counts(tmp_path, root)
    home = tmp_path / "home"
    killed = kill_in_write(start(home, "--stall-in", KILLS[when], "ingest", str(root), "work"), home)
    check_after_crash(home)
    assert_undone(home, killed)
    lib = open_lib(home)
    written = len(lib.documents())
    lib.close()
    assert written == (expect[0] if killed[0] == "publish" else killed[1] - 1), "the writes before it stand"
    code, out, err = run(home, "ingest", str(root), "work")
    assert code == 0, err
    check_after_crash(home, expect)


@pytest.mark.parametrize("point", ["write:1", "publish:1"])
def test_remove_sync_and_reindex_killed_in_a_write_leave_a_working_library(tmp_path, point):
    root = corpus(tmp_path, 20)
    home = tmp_path / "home"
    assert run(home, "ingest", str(root), "work")[0] == 0
    expect = (20, open_lib(home).store.paragraph_count())
    for args in (("reindex",), ("remove", "work")):
        killed = kill_in_write(start(home, "--stall-in", point, *args), home)
        check_after_crash(home)
        assert_undone(home, killed)
        if killed[0] == "write":
            check_after_crash(home, expect)
    assert run(home, "ingest", str(root), "work")[0] == 0
    check_after_crash(home, expect)
    for f in sorted(root.iterdir())[:5]:
        f.unlink()
    killed = kill_in_write(start(home, "--stall-in", point, "sync"), home)
    check_after_crash(home)
    assert_undone(home, killed)
    if killed[0] == "write":
        check_after_crash(home, expect)
    code, out, err = run(home, "sync")
    assert code == 0, err
    lib = open_lib(home)
    assert len(lib.documents()) == 15
    lib.close()
    check_after_crash(home)


def test_a_watch_killed_in_a_write_it_started_leaves_a_consistent_library(tmp_path):
    """A watch (lib_proc.py watch: the Watcher through a Service) applies six saved files and is killed inside
    the transaction of the 3rd document it writes; the next sync (as the next watch's catch-up) finishes."""
    root = corpus(tmp_path, 12)
    home = tmp_path / "home"
    lib = open_lib(home)
    lib.ingest([root], "work")
    lib.close()
    proc = start(home, "--stall-in", "write:3", "watch")
    ready = first_line(proc, "notice Watching")
    assert ready is not None, proc.stderr.read()[-3000:]
    for f in sorted(root.iterdir())[:6]:
        save(f, f.read_text().replace("Paragraph", "Changed paragraph"))
    killed = kill_in_write(proc, home)
    check_after_crash(home)
    assert_undone(home, killed)

    def changed() -> int:
        with open_lib(home) as lib:
            return sum("Changed paragraph" in lib.document_text(d.id) for d in lib.documents())

    assert changed() == 2, "the two writes before it stand, the killed one left nothing"
    code, out, err = run(home, "sync")
    assert code == 0, err
    with open_lib(tmp_path / "clean-home") as clean:
        clean.ingest([root], "work")
        expect = (len(clean.documents()), clean.store.paragraph_count())
    check_after_crash(home, expect)
    assert changed() == 6


def test_two_ingests_at_once_take_turns_and_leave_a_consistent_library(tmp_path):
    """The first ingest is held inside its first write (lib_proc.py --pause-in) until the second has said it
    waits for it: they meet whichever process the machine runs first."""
    root = corpus(tmp_path, 24)
    other = folder_of(tmp_path / "other", 10, "other")
    home = tmp_path / "home"
    assert run(home, "ingest", str(other), "x")[0] == 0  # the home exists, so both start at once
    one = start(home, "--pause-in", "write:1", "ingest", str(root), "same", stdin=subprocess.PIPE)
    assert first_line(one, "paused ") is not None, one.stderr.read()[-3000:]
    two = start(home, "ingest", str(other), "same")
    waited = first_line(two, "notice ")
    out1, err1 = one.communicate("go\n", timeout=PROCESS_PATIENCE)  # its first write goes on, then the rest
    out2, err2 = two.communicate(timeout=PROCESS_PATIENCE)
    assert one.returncode == two.returncode == 0, (err1, err2)
    assert waited and "waiting for it to finish" in waited, (waited, out2)
    lib = open_lib(home)
    assert lib.collection("same").document_count == 34
    assert_consistent(lib)
    lib.close()


def test_readers_keep_working_while_a_writer_ingests_and_removes_and_see_its_documents(tmp_path):
    home = tmp_path / "home"
    assert run(home, "ingest", str(folder_of(tmp_path / "base", 5, "base", "pumps")), "base")[0] == 0
    reader = start(home, "serve", stdin=subprocess.PIPE)
    assert first_line(reader, "ready", PATIENCE) is not None, reader.stderr.read()[-3000:]

    def ask(line: str) -> dict:
        reader.stdin.write(line + "\n")
        reader.stdin.flush()
        timer = threading.Timer(PATIENCE, reader.kill)  # a safety deadline: a reader that hangs fails the test
        timer.start()
        try:
            answer = reader.stdout.readline()
        finally:
            timer.cancel()
        assert answer, f"the reader did not answer {line!r} (stopped after {PATIENCE:g} s, or it died)"
        return json.loads(answer)

    writer = start(home, "--pause-in", "write:3", "ingest", str(corpus(tmp_path, 30)), "big", stdin=subprocess.PIPE)
    paused = first_line(writer, "paused ")
    assert paused is not None, writer.stderr.read()[-3000:]
    assert_writing(home, int(paused.split()[3]))
    # The writer is held inside its third write (the lock taken, the transaction open): a reader that waited
    # for writes would not answer until the test lets it go on, which it does only after these answers.
    assert "hits" in ask("search pumps") and "hits" in ask("search pump0 valve1")
    writer.stdin.close()
    served, slowest = 2, 0.0
    while writer.poll() is None:  # and while it writes the rest
        t0 = time.perf_counter()
        reply = ask("search pumps")
        slowest = max(slowest, time.perf_counter() - t0)
        assert "hits" in reply, reply
        served += 1
    assert writer.returncode == 0
    reply = ask("search pump7 valve3")
    assert any("pump7" in h["content"] for h in reply["hits"]), "the new documents were not seen"
    assert ask("vectors") == {"held": 5 + 30 * 6, "agrees": True}, "the reader's vector index did not catch up"
    assert run(home, "remove", "big")[0] == 0
    reply = ask("search pump7 valve3")
    assert all("pump7" not in h["content"] for h in reply["hits"])
    assert ask("vectors") == {"held": 5, "agrees": True}
    assert "answer" in ask("ask What about pumps?")
    reader.stdin.close()
    reader.wait(PATIENCE)
    print(f"reader served {served} searches while the writer ingested; slowest {slowest:.2f} s")


def test_many_processes_searching_a_stale_cache_at_once(tmp_path):
    home = tmp_path / "home"
    assert run(home, "ingest", str(corpus(tmp_path, 10)), "work")[0] == 0
    (home / "vectors.json").unlink()
    procs = [start(home, "search", "pump3 valve1") for _ in range(6)]
    for p in procs:
        out, err = p.communicate(timeout=PROCESS_PATIENCE)
        assert p.returncode == 0, err
        assert json.loads(out.splitlines()[-1])["hits"]


def test_a_new_home_opened_by_several_commands_at_once(tmp_path):
    for attempt in range(3):
        home = tmp_path / f"fresh{attempt}"
        procs = [subprocess.Popen([sys.executable, "-m", "localreason", "--home", str(home), "library"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for p in procs:
            out, err = p.communicate(timeout=PROCESS_PATIENCE)
            assert p.returncode == 0, err


@pytest.mark.real_model
def test_the_real_cli_killed_mid_ingest_reruns_cleanly(tmp_path):
    from localreason.demo import samples_dir

    home = tmp_path / "home"
    args = ["ingest", str(samples_dir()), "-c", "samples", "--exclude", "LICENSES*", "--exclude", "README*"]
    killed = kill_in_write(start(home, "--stall-in", "write:3", "cli", *args), home)  # the real models, 3rd document
    assert_undone(home, killed)
    lib = open_lib(home)
    assert len(lib.documents()) == 2, "the two documents written before it stand"
    lib.close()
    env = {**os.environ, "LOCALREASON_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "localreason", *args], env=env, capture_output=True, text=True,
                          timeout=PROCESS_PATIENCE)  # fmt: skip
    assert done.returncode == 0, done.stderr
    from localreason.library import Library

    lib = Library(home)
    names = {Path(d.source_path).name for d in lib.documents()}
    assert len(names) == len(lib.documents()) == 5
    assert lib.store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert lib.deep_search("Black Death origin", limit=1)
    lib.close()
