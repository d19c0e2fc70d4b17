"""Finding the files to ingest: explicit files, and folders walked recursively.

Hidden files and folders (name starting with '.') are skipped in walks;
symbolic links to folders are followed once, and a link back into a folder
already being walked is reported as a loop instead of being walked forever.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

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


def _matches(rel: str, name: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in patterns)


def discover(paths: list[str | Path], include: list[str] | None = None, exclude: list[str] | None = None,
             ) -> tuple[list[Candidate], list[Problem], list[Path]]:  # fmt: skip
    """Expand ``paths`` into files to read.

    Returns (candidates, problems, folder roots). Include/exclude globs match a
    file's path relative to its folder root or its bare name; they apply to
    files found in folders, not to files named directly.
    """
    include = list(include or [])
    exclude = list(exclude or [])
    found: dict[Path, Candidate] = {}
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
            _walk(path, include, exclude, found, problems)
        elif path.is_file():
            found.setdefault(path, Candidate(path, detect_format(path), None))
        else:
            problems.append(Problem(path, "failed", f"not a regular file or folder (mode {oct(st.st_mode)})"))
    return list(found.values()), problems, roots


def _walk(root: Path, include: list[str], exclude: list[str], found: dict, problems: list[Problem]) -> None:
    visited: set[tuple[int, int]] = set()

    def onerror(exc: OSError) -> None:
        problems.append(Problem(Path(exc.filename or root), "failed", os_reason(exc, Path(exc.filename or root))))

    for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=onerror):
        here = Path(dirpath)
        st = here.stat()
        key = (st.st_dev, st.st_ino)
        if key in visited:
            problems.append(Problem(here, "skipped", "symbolic link loop: this folder was already walked"))
            dirnames[:] = []
            continue
        visited.add(key)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = here / name
            rel = path.relative_to(root).as_posix()
            if include and not _matches(rel, name, include):
                continue
            if exclude and _matches(rel, name, exclude):
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
            found.setdefault(path, Candidate(path, detect_format(path), root))


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
