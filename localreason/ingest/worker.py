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
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection

from ..errors import IngestFileError
from ..types import Chunk
from .chunk import ChunkParams, chunk_document, chunk_terms
from .parse import parse_bytes
from .recognised import NeedsRecognition, PageReading, Recognition, RecognizedPage


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
    threads: int = 0
    """For recognition: the CPU threads the recogniser may use (the ``threads`` setting); 0 for every core."""


@dataclass(frozen=True)
class Job:
    name: str
    """The file's path as text (for the parser's title and messages)."""
    data: bytes
    format: str
    doc_id: str
    params: ChunkParams
    unpacked_bytes: int
    recognition: Recognition | None = None
    """How pages without a usable text layer are read; None: they are not (``ocr = off``)."""
    readings: tuple[PageReading, ...] | None = None
    """The second pass of a file with such pages: what recognition read on each (see ``Survey``)."""


@dataclass(frozen=True)
class Survey:
    """The first pass's answer for a file with pages that need text recognition: which (1-based), of how many.
    The parent has them recognised (``OcrJob``, page by page) and sends the Job again with the readings."""

    pages: tuple[int, ...]
    page_count: int


@dataclass(frozen=True)
class OcrJob:
    """Recognise one page of a PDF or one frame of an image file (the recognition worker's job)."""

    key: str
    """The file's content hash: the worker keeps the last file's bytes, so they are sent once per file."""
    data: bytes | None
    """The file's bytes, or None when the worker already holds them (it says "resend" when it does not)."""
    format: str
    page: int
    """1-based page (or frame) number."""
    dpi: float
    max_pixels: int


@dataclass(frozen=True)
class Parsed:
    """What the parent needs of a parsed and chunked file."""

    title: str
    text: str
    format: str
    notes: list[str]
    chunks: list[Chunk]
    recognized: list[RecognizedPage] = field(default_factory=list)
    """The pages read by text recognition (failed ones too), in page order."""
    terms: dict[str, str] = field(default_factory=dict)
    """chunk id -> the full names a passage is also found by (chunk.chunk_terms)."""


def run_job(job: Job) -> Parsed | Survey:
    """Parse and chunk one file, or say which of its pages need text recognition first (``Survey``); raises
    IngestFileError for a file that cannot be read."""
    from pathlib import Path

    try:
        parsed = parse_bytes(job.data, Path(job.name), job.format, max_unpacked_bytes=job.unpacked_bytes,
                             recognition=job.recognition, readings=job.readings)  # fmt: skip
        chunks = chunk_document(parsed, job.doc_id, job.params)
    except NeedsRecognition as need:
        return Survey(need.pages, need.page_count)
    except IngestFileError:
        raise
    except RecursionError:
        raise IngestFileError("the file is nested too deeply to parse") from None
    except MemoryError:
        raise IngestFileError("parsing it needed more memory than the limit allows (max_parse_memory_mb)") from None
    except Exception as exc:  # a parser bug or a file no parser expected: report it, keep going
        raise IngestFileError(f"could not be parsed ({exc.__class__.__name__}: {exc})") from None
    recognized = [RecognizedPage(r.page, r.confidence, r.lines, r.failed) for r in parsed.recognized]
    return Parsed(parsed.title, parsed.text, parsed.format, list(parsed.notes), chunks, recognized,
                  chunk_terms(chunks, parsed.index_terms))  # fmt: skip


def _warm_up(kind: str, threads: int = 0) -> None:
    """Import every parser and load the tokenizer (or, for recognition, load the recogniser), so that neither a
    file's clock nor its memory pays for them."""
    import importlib

    if kind == "ocr":
        from . import ocr

        ocr.engine(threads)
        return
    from ..tokens import encoding

    for name in ("charset_normalizer", "docx", "lxml.html", "markdown_it", "pypdfium2"):
        importlib.import_module(name)

    encoding()


_held: dict[str, bytes] = {}
"""The recognition worker's copy of the file it is reading (by content hash), so its bytes cross once."""


def run_ocr(job: OcrJob) -> PageReading | None:
    """Render (PDF) or decode (image) one page and recognise it; None when the file's bytes must be sent."""
    from . import ocr

    if job.data is not None:
        _held.clear()
        _held[job.key] = job.data
    data = _held.get(job.key)
    if data is None:
        return None
    try:
        if job.format == "pdf":
            image, _ = ocr.render_pdf_page(data, job.page - 1, job.dpi, job.max_pixels)
        else:
            image = ocr.image_frame(data, job.page - 1, job.max_pixels)
        return ocr.recognise(image, job.page)
    except (IngestFileError, MemoryError):
        raise
    except Exception as exc:  # a renderer, decoder or model fault on this page: report it, keep going
        raise IngestFileError(f"recognition failed ({exc.__class__.__name__}: {str(exc)[:300]})") from None


def _address_space() -> int:
    """This process's virtual memory size in bytes."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _serve(inbox: Connection, outbox: Connection, memory_mb: int, kind: str = "parse", threads: int = 0) -> None:
    """The child's loop: a Job (or OcrJob) in, ("ok", Parsed, Survey or PageReading), ("resend",) or
    ("error", status, message) out, until None or EOF.

    The memory limit is what one file (or page) may add to the warmed-up worker's own footprint.
    """
    try:
        _warm_up(kind, threads)
    except IngestFileError as exc:
        outbox.send(("error", exc.status, exc.message))
        return
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
            if isinstance(job, OcrJob):
                reading = run_ocr(job)
                reply = ("ok", reading) if reading is not None else ("resend",)
            else:
                reply = ("ok", run_job(job))
        except IngestFileError as exc:
            reply = ("error", exc.status, exc.message)
        except MemoryError:
            reply = ("over", "failed", "recognising it needed more memory than the limit allows (ocr_memory_mb)"
                     if kind == "ocr" else "parsing it needed more memory than the limit allows (max_parse_memory_mb)")
        try:
            outbox.send(reply)
        except MemoryError:
            outbox.send(("over", "failed", "the parsed text is larger than the memory limit allows (max_parse_memory_mb)"))


class OverLimit(IngestFileError):
    """A file or page ran past a limit of its own (time, memory) or its process was killed: another try, with the
    limit raised or on a less busy machine, may read it."""


class TimedOut(OverLimit):
    """A file or page ran past its time limit: another try, on a less busy machine, may read it."""


_TIMEOUT = {
    "parse": "parsing took longer than {s:g} s, the limit per file (max_parse_seconds); the file was skipped",
    "ocr": "recognising it took longer than {s:g} s, the limit per page (ocr_page_seconds); the page was left out",
}
_WHO = {"parse": ("parser", "file", "max_parse_memory_mb"), "ocr": ("recogniser", "page", "ocr_memory_mb")}


class ParseWorker:
    """One parsing (or recognition) child process, started on first use and replaced after a timeout or crash."""

    def __init__(self, limits: Limits, kind: str = "parse") -> None:
        self.limits = limits
        self.kind = kind
        """``parse`` (Job: parse and chunk a file) or ``ocr`` (OcrJob: recognise a page)."""
        self.holds: str | None = None
        """For ``ocr``: the content hash of the file whose bytes the running child holds."""
        self._proc: subprocess.Popen | None = None
        self._send: Connection | None = None
        self._recv: Connection | None = None
        self._lock = threading.Lock()
        """One file at a time: ingests on several threads of a process share the child."""

    def _start(self) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        cmd = [sys.executable, "-m", "localreason.ingest.worker", str(to_child_r), str(from_child_w),
               str(self.limits.memory_mb), self.kind, str(self.limits.threads)]  # fmt: skip
        self.holds = None
        try:
            self._proc = subprocess.Popen(cmd, pass_fds=(to_child_r, from_child_w), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._send, self._recv = Connection(to_child_w, readable=False), Connection(from_child_r, writable=False)
        try:
            ready = self._recv.recv() if self._recv.poll(STARTUP_SECONDS) else None
        except (EOFError, OSError):
            ready = None
        if ready != ("ready",):
            self.kill()
            if ready and ready[0] == "error":
                raise IngestFileError(ready[2], status=ready[1])
            what = "recognition" if self.kind == "ocr" else "parsing"
            raise IngestFileError(f"the {what} process did not start within {STARTUP_SECONDS:g} s "
                                  "(see the error printed above)")

    def parse(self, job: Job) -> Parsed | Survey:
        """Parse and chunk ``job`` within the limits, or raise IngestFileError saying which limit or fault."""
        with self._lock:
            reply = self._ask(job)
        if reply[0] == "ok":
            return reply[1]
        raise (OverLimit if reply[0] == "over" else IngestFileError)(reply[2], status=reply[1])

    def recognise(self, job: OcrJob) -> PageReading:
        """Recognise one page within the limits (its bytes sent only if this child does not hold them yet), or
        raise IngestFileError saying which limit or fault."""
        with self._lock:
            held = self.holds == job.key and self._proc is not None and self._proc.poll() is None
            reply = self._ask(replace(job, data=None) if held else job)
            if reply[0] == "resend":
                reply = self._ask(job)
            if reply[0] == "ok":
                self.holds = job.key
                return reply[1]
        raise (OverLimit if reply[0] == "over" else IngestFileError)(reply[2], status=reply[1])

    def _ask(self, job) -> tuple:
        if self._proc is None or self._proc.poll() is not None:
            self.kill()
            self._start()
        try:
            self._send.send(job)
            if not self._recv.poll(self.limits.seconds):
                self.kill()
                raise TimedOut(_TIMEOUT[self.kind].format(s=self.limits.seconds))
            return self._recv.recv()
        except (EOFError, OSError, TypeError):  # TypeError: the connection was closed under us (kill)
            raise self._death() from None

    def _death(self) -> IngestFileError:
        """Why the child died, for the failed file's reason (OverLimit when memory may be why); the child is cleared
        for a restart."""
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(2)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        who, unit, setting = _WHO[self.kind]
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            if name == "SIGKILL":
                return OverLimit(f"the {who} was stopped (out of memory, or the ingest was cancelled)")
            if self.limits.memory_mb > 0 and name in ("SIGABRT", "SIGSEGV", "SIGBUS"):  # (not OverLimit: a crash
                # that may be the parser's own would be tried again, whole file, at every sync)
                return IngestFileError(f"the {who} crashed on this {unit} ({name}), most likely because it needed "
                                       f"more memory than the limit of {self.limits.memory_mb} MB ({setting})")
            return IngestFileError(f"the {who} crashed on this {unit} ({name})")
        return IngestFileError(f"the {who} stopped unexpectedly on this {unit} (exit code {code})")

    def kill(self) -> None:
        """Stop the child now (a timeout, a crash, or a cancelled ingest); the next parse starts a new one."""
        proc, conns = self._proc, (self._send, self._recv)
        self._proc = self._send = self._recv = None
        self.holds = None
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


_shared: dict[tuple[Limits, str], ParseWorker] = {}
_shared_lock = threading.Lock()


def shared_worker(limits: Limits, kind: str = "parse") -> ParseWorker:
    """The process's parsing (or recognition) child for these limits (started lazily, stopped at exit)."""
    with _shared_lock:
        if (limits, kind) not in _shared:
            if not _shared:
                atexit.register(_close_all)
            _shared[(limits, kind)] = ParseWorker(limits, kind)
        return _shared[(limits, kind)]


def existing_worker(limits: Limits, kind: str = "parse") -> ParseWorker | None:
    """The process's child for these limits if one was made (``shared_worker``), else None."""
    with _shared_lock:
        return _shared.get((limits, kind))


def _close_all() -> None:
    for worker in list(_shared.values()):
        worker.close()


def main(argv: list[str]) -> None:
    """Child entry point: serve jobs on the two descriptors the parent passed."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal is the parent's to handle
    recv_fd, send_fd, memory_mb = int(argv[0]), int(argv[1]), int(argv[2])
    kind = argv[3] if len(argv) > 3 else "parse"
    threads = int(argv[4]) if len(argv) > 4 else 0
    _serve(Connection(recv_fd, writable=False), Connection(send_fd, readable=False), memory_mb, kind, threads)


if __name__ == "__main__":
    # Run the imported module's main, so the values sent back pickle under their real module name.
    from localreason.ingest.worker import main as _main

    _main(sys.argv[1:])
