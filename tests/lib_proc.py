"""A library in a separate process, for crash and concurrency tests (fake embedder: fast and deterministic).

    python tests/lib_proc.py HOME ingest PATH COLLECTION [--prune]
    python tests/lib_proc.py HOME remove TARGET
    python tests/lib_proc.py HOME sync
    python tests/lib_proc.py HOME reindex
    python tests/lib_proc.py HOME search QUERY
    python tests/lib_proc.py HOME serve        # reads "search Q" / "ask Q" lines, answers one JSON line each

Progress is printed one line per finished file (``file STATUS PATH``) and flushed,
so a test can kill the process at a chosen point.
"""

from __future__ import annotations

import json
import sys

import numpy as np
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from fakes import FakeEmbedder, FakeGenerator  # noqa: E402

import localreason.ingest.pipeline as pipeline  # noqa: E402
from localreason.config import load_settings  # noqa: E402
from localreason.errors import LocalReasonError  # noqa: E402
from localreason.library import Library  # noqa: E402

pipeline.EMBED_GROUP = 8  # commit often, so kills land between and inside many transactions


def say(*parts) -> None:
    print(*parts, flush=True)


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


def main(argv: list[str]) -> int:
    home, command, *args = argv
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
        else:
            raise SystemExit(f"unknown command {command}")
    finally:
        lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
