"""Finding the files to ingest: explicit files, and folders walked recursively.

Hidden files and folders (name starting with '.') and editors' and browsers' temporary
files (``is_transient``) are skipped in walks; symbolic links to folders are followed
once, and a link back into a folder already being walked is reported as a loop instead
of being walked forever. Which files are documents, and which reader each gets, is
:func:`judge`'s decision: by the name where it says, else by the file's first bytes.
``admitted`` is the same decision for one path, as the watcher (watch/) asks it of a
changed file.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import IngestFileError
from .formats.kinds import SNIFF_BYTES, not_a_document, not_a_document_reason, sniff, unread_by_name
from .parse import detect_format


@dataclass(frozen=True)
class Candidate:
    path: Path
    """Absolute, with symbolic links as the user named them (the document's identity)."""
    format: str | None
    root: Path | None
    """The folder this file was found under, or None for a file named directly."""


@dataclass(frozen=True)
class Problem:
    path: Path
    status: str
    """``failed`` or ``skipped``."""
    reason: str


TRANSIENT_SUFFIXES = (".swp", ".swo", ".swx", ".swpx", ".tmp", ".temp", ".part", ".partial", ".crdownload",
                      ".download", "~", "___jb_tmp___", "___jb_old___")  # fmt: skip
"""Endings of files that editors and browsers write beside a file while it is saved or downloaded: vim's swap
files, backups (``notes.md~``), temporary copies, unfinished downloads, JetBrains' safe-write copies."""
TRANSIENT_PREFIXES = (".#", "~$", ".~lock.")
"""Lock files: Emacs (``.#notes.md``), Microsoft Office (``~$report.docx``), LibreOffice."""


def is_transient(name: str) -> bool:
    """Whether a file of this name is an editor's or browser's temporary, backup, swap or lock file (never a
    document: vim's ``4913`` write test, Emacs' ``#autosave#`` and ``.#lock``, ``~$`` Office locks, ``.swp``,
    ``~``, ``.tmp``, ``.part``, ``.crdownload`` ...)."""
    lower = name.lower()
    return (lower.endswith(TRANSIENT_SUFFIXES) or name.startswith(TRANSIENT_PREFIXES) or name == "4913"
            or (len(name) > 1 and name.startswith("#") and name.endswith("#")))  # fmt: skip


def _matches(rel: str, name: str, patterns: list[str]) -> bool:
    return any(_hits(rel, name, p) for p in patterns)


def _hits(rel: str, name: str, pattern: str) -> bool:
    """Whether a glob matches the path relative to the folder or the file's name; one starting with "/" is anchored
    at the folder and matches the relative path only (``/notes.txt`` is the folder's own notes.txt, not every one)."""
    if pattern.startswith("/"):
        return fnmatch.fnmatch(rel, pattern[1:])
    return fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern)


def left_out(rel: str) -> str:
    """The exclude glob that leaves out the file at ``rel`` (a path relative to the folder) and no other."""
    return "/" + glob.escape(rel)


_ESCAPED_MAGIC = re.compile(r"\[([*?\[])\]")


def removed_file(pattern: str) -> str | None:
    """The relative path a removal glob (``left_out``'s: anchored, no wildcard) leaves out; None for any other glob
    (``*.tmp``, ``/drafts/*``: a person's own, which an ingest with other globs replaces)."""
    if not pattern.startswith("/"):
        return None
    rel = _ESCAPED_MAGIC.sub(r"\1", pattern[1:])
    return rel if rel and left_out(rel) == pattern else None


def with_removed(exclude: list[str] | None, removed: list[str]) -> list[str]:
    """``exclude`` and the removal globs not in it already."""
    exclude = list(exclude or [])
    return exclude + [g for g in removed if g not in exclude]


def removals_under(folder: str, sources: list[dict]) -> list[str]:
    """The removal globs that apply to ``folder`` (a path as path_text gives it), anchored at it: those of its own
    source and of every source of the collection inside or around it (``sources``: their "path" and "exclude"), so
    that a file removed from a folder stays out of a folder above or below it ingested later."""
    top = fs_path(folder).rstrip(os.sep)
    out: list[str] = []
    for s in sources:
        base = fs_path(s["path"]).rstrip(os.sep)
        for pattern in s["exclude"]:
            rel = removed_file(pattern)
            path = os.path.join(base, rel) if rel else None
            if path and path.startswith(top + os.sep):
                glob_here = left_out(Path(os.path.relpath(path, top)).as_posix())
                if glob_here not in out:
                    out.append(glob_here)
    return out


def _wanted(rel: str, name: str, include: list[str], exclude: list[str]) -> bool:
    """Whether a file found in a folder walk is read: not hidden or transient, and through the globs."""
    if name.startswith(".") or is_transient(name):
        return False
    return (not include or _matches(rel, name, include)) and not (exclude and _matches(rel, name, exclude))


PROBE = "\x00"
"""A file name no glob that picks a kind of file matches (``*.css`` does not; ``*`` does)."""


def asked_for(rel: str, name: str, include: list[str]) -> bool:
    """Whether an ``include`` glob asks for this kind of file, not only for any file in a place: ``*.css`` and
    ``_static/site.css`` ask for ``_static/site.css``; ``*`` and ``_static/*`` do not."""
    probe = rel[: len(rel) - len(name)] + PROBE
    return any(_hits(rel, name, p) and not _hits(probe, PROBE, p) for p in include)


def judge(path: Path, rel: str | None = None, include: list[str] | None = None,
          read_before: bool = False) -> tuple[str | None, str]:  # fmt: skip
    """Whether the file ``path`` is read, and by which reader: (format, "") or (None, why not).

    A file that is not a document by its name (a stylesheet, a script, a lock file ...: ``not_a_document``) is
    skipped in a folder walk (``rel``, its path there) unless an ``include`` glob asks for it, or the library
    already holds it (``read_before``: read by an earlier version or asked for before; it is never dropped by a
    sync for a rule it predates); a file named by itself (``rel`` None) is asked for. A name the readers know
    decides the reader; any other file is text, or not read, by its name (archives, binaries) or its first
    ``SNIFF_BYTES`` bytes (``sniff``). Raises OSError, or IngestFileError when it is not a regular file.
    """
    other = not_a_document(path.name)
    if other and rel is not None and not read_before and not asked_for(rel, path.name, list(include or [])):
        return None, not_a_document_reason(*other)
    fmt = detect_format(path)
    if fmt is not None:
        return fmt, ""
    why = unread_by_name(path.name) or sniff(read_head(path))
    if why:
        return None, why
    return ("code" if other else "text"), ""


def admitted(path: Path, root: Path, include: list[str] | None = None, exclude: list[str] | None = None) -> bool:
    """Whether a walk of the folder ``root`` reads the file ``path``: no hidden folder on the way, the file passes
    the walk's names and globs (``_wanted``), and :func:`judge` finds it a document (only a file whose name says
    nothing is looked into). A file that cannot be looked into is admitted: the ingest then says why."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    if not rel.parts or any(part.startswith(".") for part in rel.parts[:-1]):
        return False
    if not _wanted(rel.as_posix(), rel.parts[-1], list(include or []), list(exclude or [])):
        return False
    try:
        return judge(path, rel.as_posix(), list(include or []))[0] is not None
    except (OSError, IngestFileError):
        return True


def discover(paths: list[str | Path], include: list[str] | None = None, exclude: list[str] | None = None,
             read_before: frozenset[str] = frozenset(), removed: dict[str, list[str]] | None = None,
             ) -> tuple[list[Candidate], list[Problem], list[Path]]:  # fmt: skip
    """Expand ``paths`` into files to read.

    Returns (candidates, problems, folder roots). Include/exclude globs match a
    file's path relative to its folder root or its bare name; they apply to
    files found in folders, not to files named directly. ``read_before``: the paths (as path_text gives them) the
    library already holds documents of, which stay read (``judge``). ``removed``: per folder (as path_text gives
    it), the globs of the files removed from it (pipeline.kept_removed), left out of that folder's walk alone.
    """
    include = list(include or [])
    exclude = list(exclude or [])
    found = _Found(read_before)
    problems: list[Problem] = []
    roots: list[Path] = []
    for raw in paths:
        path = Path(os.path.abspath(os.path.expanduser(str(raw))))
        try:
            st = path.stat()
        except OSError as exc:
            problems.append(Problem(path, "failed", os_reason(exc, path)))
            continue
        if path.is_dir():
            roots.append(path)
            _walk(path, include, with_removed(exclude, (removed or {}).get(path_text(path), [])), found, problems)
        elif path.is_file():
            _take(path, None, None, include, found, problems)
        else:
            problems.append(Problem(path, "failed", f"not a regular file or folder (mode {oct(st.st_mode)})"))
    return list(found.values()), problems, roots


class _Found(dict):
    """The candidates found so far, by path, and the paths the library already holds documents of."""

    def __init__(self, read_before: frozenset[str]) -> None:
        super().__init__()
        self.read_before = read_before


def _walk(root: Path, include: list[str], exclude: list[str], found: "_Found", problems: list[Problem]) -> None:
    visited: set[tuple[int, int]] = set()

    def onerror(exc: OSError) -> None:
        problems.append(Problem(Path(exc.filename or root), "failed", os_reason(exc, Path(exc.filename or root))))

    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=onerror):
        here = Path(dirpath)
        try:
            st = here.stat()
        except OSError as exc:  # the folder vanished or changed while being walked
            problems.append(Problem(here, "failed", os_reason(exc, here)))
            dirnames[:] = []
            continue
        key = (st.st_dev, st.st_ino)
        if key in visited:
            problems.append(Problem(here, "skipped", "symbolic link loop: this folder was already walked"))
            dirnames[:] = []
            continue
        visited.add(key)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = here / name
            if not _wanted(path.relative_to(root).as_posix(), name, include, exclude):
                continue
            try:
                fst = path.stat()
            except OSError as exc:
                # A dangling or looping link inside a folder is noise, not a failure of the ingest.
                status = "skipped" if exc.errno in (errno.ELOOP, errno.ENOENT) else "failed"
                problems.append(Problem(path, status, os_reason(exc, path)))
                continue
            if not path.is_file():
                problems.append(Problem(path, "skipped", f"not a regular file (mode {oct(fst.st_mode)})"))
                continue
            _take(path, root, path.relative_to(root).as_posix(), include, found, problems)


def _take(path: Path, root: Path | None, rel: str | None, include: list[str], found: "_Found",
          problems: list[Problem]) -> None:  # fmt: skip
    """A file found (in the folder ``root`` at ``rel``, or named: None) becomes a candidate, or a problem saying
    why it is not read."""
    if path in found:
        return
    try:
        fmt, why = judge(path, rel, include, path_text(path) in found.read_before)
    except IngestFileError as exc:
        problems.append(Problem(path, exc.status, exc.message))
        return
    except OSError as exc:
        status = "skipped" if exc.errno in (errno.ELOOP, errno.ENOENT) else "failed"
        problems.append(Problem(path, status, os_reason(exc, path)))
        return
    if fmt is None:
        problems.append(Problem(path, "skipped", why))
    else:
        found[path] = Candidate(path, fmt, root)


def os_reason(exc: OSError, path: Path) -> str:
    if exc.errno == errno.ELOOP:
        return "symbolic link loop: the link points back to itself"
    if exc.errno == errno.ENOENT:
        if path.is_symlink():
            return f"broken symbolic link (points to {os.readlink(path)}, which does not exist)"
        return "no such file or folder"
    if exc.errno == errno.EACCES:
        return "permission denied: the file cannot be read"
    return f"{exc.strerror or exc.__class__.__name__}"


def path_text(path: Path | str) -> str:
    """A path as text that can be stored and printed: bytes that are not UTF-8 become ``\\xNN`` escapes.

    File names are bytes on Linux; Python keeps undecodable bytes as lone surrogates,
    which neither SQLite nor a terminal accepts.
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


_ESCAPED_BYTE = re.compile(rb"\\x([0-9a-f]{2})")


def fs_path(text: str, look: bool = True) -> str:
    """The file name that :func:`path_text` showed as ``text``: its ``\\xNN`` escapes the bytes they stand for, where
    the file is found only under those (a name that holds a real backslash and x stays as it is); with ``look``
    False (a file on a drive not mounted, or on another machine), wherever the escapes are path_text's."""
    if "\\x" not in text or (look and os.path.lexists(text)):
        return text
    raw = os.fsdecode(_ESCAPED_BYTE.sub(lambda m: bytes([int(m[1], 16)]), text.encode("utf-8", "surrogateescape")))
    return raw if path_text(raw) == text and (not look or os.path.lexists(raw)) else text


def name_is_text(path: Path | str) -> bool:
    """Whether the path is valid UTF-8 (so :func:`path_text` shows it unchanged)."""
    return path_text(path) == os.fspath(path)


def read_regular(path: Path, max_bytes: int) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file of at most ``max_bytes``, and its status when opened.

    Opened without blocking (a file replaced by a named pipe must not hang the ingest),
    checked to be a regular file on the open descriptor (not a device or pipe found
    under the file's name), and read no further than the limit (a file that grew).
    Raises IngestFileError with the reason; OSError for the operating system's ones.
    """
    fd, st = _open_regular(path)
    try:
        if st.st_size > max_bytes:
            raise IngestFileError(too_large(st.st_size, max_bytes))
        chunks, size = [], 0
        while size <= max_bytes:
            block = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not block:
                break
            chunks.append(block)
            size += len(block)
        if size > max_bytes:
            raise IngestFileError(too_large(size, max_bytes) + " (it grew while being read)")
        return b"".join(chunks), st
    finally:
        os.close(fd)


def too_large(size: int, max_bytes: int) -> str:
    return (f"too large ({size / 2**20:.1f} MB; the limit is {max_bytes / 2**20:g} MB, set by max_file_mb / "
            "LOCALREASON_MAX_FILE_MB)")


def read_head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file, opened as :func:`read_regular` opens it (a named pipe found
    under the file's name does not hang the walk). Raises IngestFileError or OSError as it does."""
    fd, _ = _open_regular(path)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def _open_regular(path: Path) -> tuple[int, os.stat_result]:
    """A descriptor for reading ``path`` without blocking, and its status; IngestFileError if not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IngestFileError(f"not a regular file (mode {oct(st.st_mode)})", status="skipped")
    except BaseException:
        os.close(fd)
        raise
    return fd, st
