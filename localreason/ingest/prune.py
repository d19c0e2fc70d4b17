"""What pruning removes and what it keeps (``Ingestor._prune``): the documents whose files have left the folders
given, or a file given by name that is gone, are removed; a document whose file only *seems* gone is kept, and
the report says why (``IngestReport.kept``).

A file seems gone, and is not, when what holds it cannot be seen now: a folder that could not be read (permission
denied, an I/O error: a failure is never a reason to forget), a link to a place that is gone (a drive unplugged),
the empty mount point of a drive not mounted (a folder /etc/fstab mounts), or, for a file given by name, its folder
gone with it. ``sync --prune`` (``prune_emptied``) removes those but the unreadable: it is the user's word that the
drive will not come back. A folder deleted or emptied under a folder given, or a file deleted from a folder that
still holds others, is removed as before. (The folder given itself, empty now, keeps its documents: ``emptied``.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .walk import path_text

NO_SUCH = "no such file or folder"
"""walk.os_reason's words for ENOENT: a file given by name that is not there."""
PRUNE_REMOVES = "`localreason sync --prune` removes them"
EMPTY_NOW = f"the folder is empty now (a drive not mounted?); {PRUNE_REMOVES}"
NOT_MOUNTED = f"the folder is where a drive is mounted (/etc/fstab), and it is not mounted now; {PRUNE_REMOVES}"
LINK_GONE = f"the folder is a link to a place that is gone (a drive not mounted?); {PRUNE_REMOVES}"
FOLDER_GONE = f"the folder is gone (a drive not mounted?); {PRUNE_REMOVES}"


@dataclass
class Verdict:
    doomed: list[tuple[str, str]] = field(default_factory=list)
    """(path, document id) to remove."""
    kept: dict[tuple[str, str], int] = field(default_factory=dict)
    """(folder or file, why) -> the documents kept for that reason."""
    forget: list[str] = field(default_factory=list)
    """Files given by name that are gone, whose documents are removed: sync stops looking for them."""


def judge(known: dict, seen: set[str], roots: list[str], problems, prune_emptied: bool) -> Verdict:
    """Which of the ``known`` documents (path -> (document id, hash)) to remove after an ingest that found the files
    ``seen`` under the folders ``roots`` and met ``problems`` (walk.Problem)."""
    failed = {path_text(p.path): p.reason for p in problems if p.status == "failed" and p.reason != NO_SUCH}
    missing = {path_text(p.path) for p in problems if p.reason == NO_SUCH}
    emptied = set() if prune_emptied else {r for r in roots if not any(s.startswith(r + os.sep) for s in seen)}
    verdict, mounts = Verdict(), fstab_mount_points()
    for path, (doc_id, _) in known.items():
        root = next((r for r in roots if path.startswith(r + os.sep)), None)
        if path in seen or (root is None and path not in missing):
            continue
        hold = held_by_failure(path, failed)
        if hold is None and root in emptied and path not in missing:
            hold = (root, EMPTY_NOW)
        if hold is None and not prune_emptied:
            hold = held_by_absence(path, root, mounts)
        if hold is not None:
            verdict.kept[hold] = verdict.kept.get(hold, 0) + 1
        else:
            verdict.doomed.append((path, doc_id))
    gone = {path for path, _ in verdict.doomed}
    verdict.forget = sorted(p for p in missing if p in gone)
    return verdict


def held_by_failure(path: str, failed: dict[str, str]) -> tuple[str, str] | None:
    """The file, or the folder above it, that could not be read this time: its documents stay."""
    for where, reason in failed.items():
        if path == where or path.startswith(where.rstrip(os.sep) + os.sep):
            return where, f"it could not be read ({reason}); kept until it can be"
    return None


def held_by_absence(path: str, root: str | None, mount_points: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """Why a file that is not there may only seem gone: a folder above it (below ``root``, the folder given; for a
    file given by name, ``root`` is None) is a link to nowhere, or the nearest one there is an empty folder of
    ``mount_points`` (a drive not mounted), or a named file's folder is gone too. None: it is gone."""
    if os.path.lexists(path):
        return None  # there, and not read: the reading rules or the globs leave it out now
    folder = os.path.dirname(path)
    while folder != root and not os.path.isdir(folder):
        if os.path.islink(folder):
            return folder, LINK_GONE
        if root is None:
            return folder, FOLDER_GONE
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up
    if folder != root and folder in mount_points and not os.path.ismount(folder) and not has_entries(folder):
        return folder, NOT_MOUNTED
    return None


def fstab_mount_points(fstab: str = "/etc/fstab") -> frozenset[str]:
    """The folders ``fstab`` mounts drives on (an empty one is a drive not mounted, not a folder emptied)."""
    try:
        with open(fstab, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return frozenset()
    points = set()
    for line in lines:
        fields = line.split()
        if len(fields) >= 2 and not fields[0].startswith("#") and fields[1].startswith("/"):
            points.add(os.path.normpath(fields[1].replace("\\040", " ").replace("\\011", "\t")))
    return frozenset(points)


def has_entries(folder: str) -> bool:
    """Whether ``folder`` lists anything (a folder that cannot be listed counts as not empty: its failure, if the
    walk met it, holds its documents by itself)."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return True


def removal_reason(path: str, problem: str | None, globs: bool = False) -> str:
    """Why pruning removed the document of ``path``: its file is gone, or is there and no longer read (a file the
    reading rules now skip, one the --include/--exclude globs leave out, or a path that is no file now)."""
    if problem == NO_SUCH or (problem is None and not os.path.lexists(path)):
        return "the file no longer exists"
    if problem is None:
        return ("no longer read: the --include/--exclude globs leave it out" if globs
                else "no longer read: it is not a file the ingest reads now")  # fmt: skip
    return f"no longer read: {problem}"
