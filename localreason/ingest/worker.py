"""Parsing and chunking in a child process, with a time and memory limit per file.

A hostile or broken file (a PDF that makes the parser spin, a decompression bomb, a
parser crash in native code) must cost one file, not the ingest. The parent sends a
file's bytes to a long-lived child (``python -m localreason.ingest.worker``); the
child parses and chunks them under an address-space limit (``RLIMIT_AS``) and sends
the result back. If no answer comes within the time limit, or the child dies, the
parent kills it, reports that file as failed with the reason, and starts a fresh
child for the next file.

The child is a plain new interpreter that imports only the parsers: no fork of a
process holding model threads, and no re-run of the caller's script (as
multiprocessing's spawn would do). One child serves every ingest of a process.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection

from ..errors import IngestFileError
from ..types import Chunk
from .chunk import ChunkParams, chunk_document
from .parse import parse_bytes


STARTUP_SECONDS = 60.0
"""How long a new parsing process may take to import its parsers (not counted against any file)."""


@dataclass(frozen=True)
class Limits:
    """What one file may cost to parse and chunk."""

    seconds: float = 120.0
    memory_mb: int = 2048
    """Address space one file may add to the parsing process's own; 0 for no limit."""
    unpacked_bytes: int = 200 * 2**20
    """Most bytes a compressed container (DOCX) may unpack to."""


@dataclass(frozen=True)
class Job:
    name: str
    """The file's path as text (for the parser's title and messages)."""
    data: bytes
    format: str
    doc_id: str
    params: ChunkParams
    unpacked_bytes: int


@dataclass(frozen=True)
class Parsed:
    """What the parent needs of a parsed and chunked file."""

    title: str
    text: str
    format: str
    notes: list[str]
    chunks: list[Chunk]


def run_job(job: Job) -> Parsed:
    """Parse and chunk one file; raises IngestFileError for a file that cannot be read."""
    from pathlib import Path

    try:
        parsed = parse_bytes(job.data, Path(job.name), job.format, max_unpacked_bytes=job.unpacked_bytes)
        chunks = chunk_document(parsed, job.doc_id, job.params)
    except IngestFileError:
        raise
    except RecursionError:
        raise IngestFileError("the file is nested too deeply to parse") from None
    except MemoryError:
        raise IngestFileError("parsing it needed more memory than the limit allows (max_parse_memory_mb)") from None
    except Exception as exc:  # a parser bug or a file no parser expected: report it, keep going
        raise IngestFileError(f"could not be parsed ({exc.__class__.__name__}: {exc})") from None
    return Parsed(parsed.title, parsed.text, parsed.format, list(parsed.notes), chunks)


def _warm_up() -> None:
    """Import every parser and load the tokenizer, so that neither a file's clock nor its memory pays for them."""
    import importlib

    from ..tokens import encoding

    for name in ("charset_normalizer", "docx", "lxml.html", "markdown_it", "pypdfium2"):
        importlib.import_module(name)

    encoding()


def _address_space() -> int:
    """This process's virtual memory size in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _serve(inbox: Connection, outbox: Connection, memory_mb: int) -> None:
    """The child's loop: a Job in, ("ok", Parsed) or ("error", status, message) out, until None or EOF.

    The memory limit is what one file may add to the warmed-up parser's own footprint.
    """
    _warm_up()
    if memory_mb > 0:
        import resource

        limit = _address_space() + memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    outbox.send(("ready",))
    while True:
        try:
            job = inbox.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            reply = ("ok", run_job(job))
        except IngestFileError as exc:
            reply = ("error", exc.status, exc.message)
        except MemoryError:
            reply = ("error", "failed", "parsing it needed more memory than the limit allows (max_parse_memory_mb)")
        try:
            outbox.send(reply)
        except MemoryError:
            outbox.send(("error", "failed", "the parsed text is larger than the memory limit allows (max_parse_memory_mb)"))


class ParseWorker:
    """One parsing child process, started on first use and replaced after a timeout or crash."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._lock = threading.Lock()
        """One file at a time: ingests on several threads of a process share the child."""

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        cmd = [sys.executable, "-m", "localreason.ingest.worker", str(to_child_r), str(from_child_w),
               str(self.limits.memory_mb)]  # fmt: skip
        try:
            self._proc = subprocess.Popen(cmd, pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._send, self._recv = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
        try:
            ready = self._recv.poll(STARTUP_SECONDS) and self._recv.recv() == ("ready",)
        except (EOFError, OSError):
            ready = False
        if not ready:
            self.kill()
            raise IngestFileError(f"the parsing process did not start within {STARTUP_SECONDS:g} s "
                                  "(see the error printed above)")

    def parse(self, job: Job) -> Parsed:
        """Parse and chunk ``job`` within the limits, or raise IngestFileError saying which limit or fault."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self.kill()
                self._start()
            try:
                self._send.send(job)
                if not self._recv.poll(self.limits.seconds):
                    self.kill()
                    raise IngestFileError(f"parsing took longer than {self.limits.seconds:g} s, the limit per "
                                          "file (max_parse_seconds); the file was skipped")  # fmt: skip
                reply = self._recv.recv()
            except (EOFError, OSError, TypeError):  # TypeError: the connection was closed under us (kill)
                raise IngestFileError(self._death()) from None
        if reply[0] == "ok":
            return reply[1]
        raise IngestFileError(reply[2], status=reply[1])

    def _death(self) -> str:
        """Why the child died, for the failed file's reason; the child is cleared for a restart."""
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            if name == "SIGKILL":
                return "the parser was stopped (out of memory, or the ingest was cancelled)"
            if self.limits.memory_mb > 0 and name in ("SIGABRT", "SIGSEGV", "SIGBUS"):
                return (f"the parser crashed on this file ({name}), most likely because it needed more memory "
                        f"than the limit of {self.limits.memory_mb} MB (max_parse_memory_mb)")  # fmt: skip
            return f"the parser crashed on this file ({name})"
        return f"the parser stopped unexpectedly on this file (exit code {code})"

    def kill(self) -> None:
        """Stop the child now (a timeout, a crash, or a cancelled ingest); the next parse starts a new one."""
        proc, conns = self._proc, (self._send, self._recv)
        self._proc = self._send = self._recv = None
        if proc is not None and proc.poll() is None:
            proc.kill()
        for conn in conns:
            if conn is not None:
                conn.close()
        if proc is not None:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        """Let the child finish and exit."""
        with self._lock:
            if self._send is not None and self._proc is not None and self._proc.poll() is None:
                try:
                    self._send.send(None)
                    self._proc.wait(2)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self.kill()


_shared: dict[Limits, ParseWorker] = {}
_shared_lock = threading.Lock()


def shared_worker(limits: Limits) -> ParseWorker:
    """The process's parsing child for these limits (started lazily, stopped at exit)."""
    with _shared_lock:
        if limits not in _shared:
            if not _shared:
                atexit.register(_close_all)
            _shared[limits] = ParseWorker(limits)
        return _shared[limits]


def _close_all() -> None:
    for worker in list(_shared.values()):
        worker.close()


def main(argv: list[str]) -> None:
    """Child entry point: serve jobs on the two descriptors the parent passed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal is the parent's to handle
    recv_fd, send_fd, memory_mb = int(argv[0]), int(argv[1]), int(argv[2])
    _serve(Connection(recv_fd, writable=False), Connection(send_fd, readable=False), memory_mb)


if __name__ == "__main__":
    # Run the imported module's main, so the values sent back pickle under their real module name.
    from localreason.ingest.worker import main as _main

    _main(sys.argv[1:])
