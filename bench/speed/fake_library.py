"""A library on a fake embedder (fast, deterministic), in this process or in a separate one, for
bench.speed.faults: the real store, FAISS index and parsing process, real processes to kill.

    python -m bench.speed.fake_library HOME ingest PATH COLLECTION [--prune]
    python -m bench.speed.fake_library HOME remove TARGET
    python -m bench.speed.fake_library HOME sync
    python -m bench.speed.fake_library HOME reindex
    python -m bench.speed.fake_library HOME search QUERY
    python -m bench.speed.fake_library HOME serve     # reads "search Q" lines, answers one JSON line each

Progress is printed one line per finished file (``file STATUS PATH``) and flushed, so the benchmark can
kill the process at a chosen point.

The benchmark's own copy of what the test suite uses for the same checks (tests/conftest.py's FakeEmbedder,
tests/lib_proc.py, the checks of tests/test_reliability.py and tests/test_crash_concurrency.py): benchmarks
do not import tests. Only what bench.speed.faults uses is here (no fake generator: it never asks).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from bench import ROOT


class FakeEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words get similar vectors (as tests/conftest.py's)."""

    name = "fake-words"
    fingerprint = "fake-words-v1"
    dim = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
            out[i, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def open_lib(home: Path):
    from localreason.config import load_settings
    from localreason.library import Library

    return Library(settings=load_settings(home), embedder=FakeEmbedder())


# ---------------------------------------------------------------- folders to ingest


def folder_of(root: Path, n: int, prefix: str = "note", words: str = "inverter warranty") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"{prefix}{i:02d}.md").write_text(f"# {prefix} {i}\n\n{words} paragraph {i} about topic{i}.\n")
    return root


def corpus(tmp_path: Path, n: int = 30) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(n):
        body = "\n\n".join(f"Paragraph {j} of note {i} about pump{i} and valve{j}. " * 12 for j in range(6))
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\n{body}\n")
    return root


# ---------------------------------------------------------------- the library in another process


def start(home: Path, *args: str, stdin=None) -> subprocess.Popen:
    """This module as a process on library ``home`` (from the checkout's root, so ``bench`` imports)."""
    return subprocess.Popen([sys.executable, "-m", "bench.speed.fake_library", str(home), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin, text=True,
                            cwd=ROOT)  # fmt: skip


def run(home: Path, *args: str) -> tuple[int, str, str]:
    proc = start(home, *args)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def kill_after_lines(proc: subprocess.Popen, lines: int) -> None:
    """SIGKILL ``proc`` once it has printed ``lines`` progress lines (or at once if 0)."""
    import signal

    for _ in range(lines):
        if not proc.stdout.readline():
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)


# ---------------------------------------------------------------- checks after a crash


def published_ids(home: Path) -> tuple[int, np.ndarray] | None:
    """(generation, rowids) of the vector index file other processes would load, or None."""
    import faiss

    meta_path = home / "vectors.json"
    if not meta_path.exists():
        return None
    meta = json.loads(meta_path.read_text())
    index = faiss.read_index(str(home / meta["file"]))
    return meta["generation"], np.sort(faiss.vector_to_array(index.id_map).astype(np.int64))


def assert_consistent(lib) -> None:
    """SQLite is sound, the in-memory index and any published index file hold exactly SQLite's chunks."""
    store = lib.store
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store.db.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('integrity-check')")
    wanted = store.paragraph_rowids()
    assert np.array_equal(lib.vectors.ids(), wanted)
    published = published_ids(lib.home)
    if published is not None and published[0] == store.generation():
        assert np.array_equal(published[1], wanted), "a published index is labelled current but holds other chunks"


def check_after_crash(home: Path) -> None:
    """The library opens, is consistent, and searches (AssertionError if not)."""
    lib = open_lib(home)
    assert_consistent(lib)
    if lib.store.paragraph_count():
        assert lib.deep_search("pump3 valve2", limit=3)
    lib.close()


# ---------------------------------------------------------------- the process


def say(*parts) -> None:
    print(*parts, flush=True)


def search(lib, query: str) -> dict:
    hits = lib.deep_search(query, limit=5)
    return {"hits": [{"chunkId": h.chunk_id, "documentId": h.document_id, "content": h.content} for h in hits]}


def serve(lib) -> None:
    """Answer "search Q" lines from stdin until it closes: a long-lived reader, like the TUI or a server."""
    from localreason.errors import LocalReasonError

    say("ready")
    for line in sys.stdin:
        verb, _, arg = line.strip().partition(" ")
        try:
            reply = search(lib, arg) if verb == "search" else {"error": f"unknown command {verb}"}
        except LocalReasonError as exc:
            reply = {"error": exc.message}
        except Exception as exc:  # noqa: BLE001 - the benchmark reads it
            reply = {"crash": f"{exc.__class__.__name__}: {exc}"}
        say(json.dumps(reply))


def main(argv: list[str]) -> int:
    import localreason.ingest.pipeline as pipeline

    if len(argv) < 2 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    pipeline.EMBED_GROUP = 8  # commit often, so kills land between and inside many transactions
    home, command, *args = argv
    lib = open_lib(Path(home))
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
