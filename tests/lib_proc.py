"""A library in a separate process, for crash and concurrency tests (fake embedder: fast and deterministic).

    python tests/lib_proc.py HOME [--stall-in POINT | --pause-in POINT] ingest PATH COLLECTION [--prune]
    python tests/lib_proc.py HOME [--stall-in POINT] remove TARGET
    python tests/lib_proc.py HOME [--stall-in POINT] sync
    python tests/lib_proc.py HOME [--stall-in POINT] reindex
    python tests/lib_proc.py HOME [--stall-in POINT] watch     # follows every source, through a Service, until killed
    python tests/lib_proc.py HOME search QUERY
    python tests/lib_proc.py HOME serve        # reads "search Q" / "ask Q" lines, answers one JSON line each
    python tests/lib_proc.py HOME [--stall-in POINT] cli ARGS ...   # the real `localreason ARGS` (real models)

Progress is printed one line per finished file (``file STATUS PATH``) and flushed. With ``--stall-in``,
the process announces itself from inside the chosen write and then waits there to be killed (stall_in),
so a test kills it while that write is in progress and can check from outside that it is. ``--pause-in``
(with the same POINT) announces ``paused ...`` there instead and goes on when a line comes on stdin (or
stdin closes): a test does what it must while that write is held, however fast or slow the machine.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from fakes import FakeEmbedder, FakeGenerator  # noqa: E402

import localreason.ingest.pipeline as pipeline  # noqa: E402
from localreason.config import load_settings  # noqa: E402
from localreason.errors import LocalReasonError  # noqa: E402
from localreason.library import Library  # noqa: E402
from localreason.store.db import Store  # noqa: E402

pipeline.EMBED_GROUP = 8  # commit often, so kills land between and inside many transactions


STALL_SECONDS = 300
"""How long a stalled write waits to be killed before the process gives up (the test failed to kill it)."""


def say(*parts) -> None:
    print(*parts, flush=True)


def _stall(*announcement) -> None:
    """Announce where this process stands, then wait there to be killed."""
    say("stalled", *announcement)
    time.sleep(STALL_SECONDS)
    raise SystemExit(f"stalled for {STALL_SECONDS} s and nobody killed this process")


def _pause(*announcement) -> None:
    """Announce where this process stands, then wait there for a line on stdin (or its end) and go on."""
    say("paused", *announcement)
    sys.stdin.readline()


def stall_in(point: str, wait=_stall) -> None:
    """Make this process stop inside its ``N``-th write of a kind (``POINT`` is ``KIND:N``) until it is killed.

    ``write:N``: the N-th database write that changes chunks or vectors (a document written, documents or a
    collection deleted, a reindex), inside its transaction after its last statement, which is where
    Store.bump_generation runs; it announces ``stalled write N GENERATION`` with the committed generation
    the write started from. ``publish:N``: the N-th vector index file written for other processes, after the
    file is on disk and before vectors.json names it; it announces ``stalled publish N FILE_NAME``. The
    package has no hook for this: the two methods are wrapped here, in the process the test started.
    ``wait`` is what it does there: ``_stall`` (wait to be killed) or ``_pause`` (wait to be told to go on).
    """
    kind, _, nth = point.partition(":")
    target, seen = int(nth), 0
    if kind == "write":
        bump = Store.bump_generation

        def bump_then_stall(self):
            nonlocal seen
            before, after = bump(self)
            seen += 1
            if seen == target and self.db.in_transaction:
                wait("write", seen, before)
            return before, after

        Store.bump_generation = bump_then_stall
        from localreason.store.postgres.store import PgStore

        pg_bump = PgStore.bump_generation

        def pg_bump_then_stall(self):  # the same, for a library in PostgreSQL (LOCALREASON_STORE)
            nonlocal seen
            before, after = pg_bump(self)
            seen += 1
            if seen == target and self.db.info.transaction_status.name == "INTRANS":
                wait("write", seen, before)
            return before, after

        PgStore.bump_generation = pg_bump_then_stall
    elif kind == "publish":
        import faiss

        write_index = faiss.write_index

        def write_then_stall(index, path):
            nonlocal seen
            write_index(index, path)
            seen += 1
            if seen == target:
                wait("publish", seen, Path(path).name)

        faiss.write_index = write_then_stall
    else:
        raise SystemExit(f"unknown stall point {point}")


def open_library(home: str) -> Library:
    return Library(settings=load_settings(home), embedder=FakeEmbedder(), generator=FakeGenerator())


def search(lib: Library, query: str) -> dict:
    hits = lib.deep_search(query, limit=5)
    return {"hits": [{"chunkId": h.chunk_id, "documentId": h.document_id, "content": h.content} for h in hits]}


def serve(lib: Library) -> None:
    """Answer commands from stdin until it closes: a long-lived reader, like the TUI or a server."""
    say("ready")
    for line in sys.stdin:
        verb, _, arg = line.strip().partition(" ")
        try:
            if verb == "search":
                reply = search(lib, arg)
            elif verb == "vectors":  # what the index holds now, without catching up first
                held = lib._vectors.ids() if lib._vectors is not None else []
                reply = {"held": len(held), "agrees": bool(np.array_equal(held, lib.store.paragraph_rowids()))}
            elif verb == "ask":
                answer = lib.ask(arg, max_tokens=1000)
                reply = {"answer": answer.answer, "citations": [c.chunk_id for c in answer.citations]}
            else:
                reply = {"error": f"unknown command {verb}"}
        except LocalReasonError as exc:
            reply = {"error": exc.message}
        except Exception as exc:  # noqa: BLE001 - the test reads it
            reply = {"crash": f"{exc.__class__.__name__}: {exc}"}
        say(json.dumps(reply))


def watch(lib: Library) -> None:
    """Follow every source as `localreason watch` does (through a Service), saying each change; until killed."""
    from localreason.service import Service
    from localreason.watch import Listener, Watcher

    def report(report, catch_up) -> None:
        for f in report.files:
            if f.status != "unchanged":
                say("file", f.status, f.path)

    Watcher(Service(lib), None, Listener(notice=lambda message: say("notice", message), report=report),
            settle=0.2).run()


def main(argv: list[str]) -> int:
    home, *rest = argv
    if rest[0] in ("--stall-in", "--pause-in"):
        stall_in(rest[1], _stall if rest[0] == "--stall-in" else _pause)
        rest = rest[2:]
    command, *args = rest
    if command == "cli":
        from localreason import cli

        cli.main(["--home", home, *args])  # exits with the command's code
    lib = open_library(home)
    lib.notice = lambda message: say("notice", message)
    progress = lambda p: say("file", p.status, p.path)  # noqa: E731
    try:
        if command == "ingest":
            report = lib.ingest([args[0]], args[1], prune="--prune" in args, progress=progress)
            say("done", json.dumps(report.counts), json.dumps(report.stopped))
        elif command == "remove":
            say("done", json.dumps(lib.remove(args[0])))
        elif command == "sync":
            reports = lib.sync(progress=progress)
            say("done", json.dumps([r.counts for r in reports]))
        elif command == "reindex":
            say("done", lib.reindex())
        elif command == "search":
            say(json.dumps(search(lib, args[0])))
        elif command == "serve":
            serve(lib)
        elif command == "watch":
            watch(lib)
        else:
            raise SystemExit(f"unknown command {command}")
    finally:
        lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
