"""What is watched: the roots (folders and files ingested before, or named), their filters, and the paths
that are never looked at (hidden, or an editor's temporary file)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ValidationError
from ..ingest.walk import admitted, is_transient, path_text, removals_under, with_removed



@dataclass(frozen=True)
class Root:
    """A folder or file the library ingested (a source), as the watcher follows it."""

    collection: str
    path: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    folder: bool = True
    """False for a file ingested by name (its folder is watched, not recursively)."""

    def holds(self, path: str) -> bool:
        return path == self.path or (self.folder and path.startswith(self.path + os.sep))

    def admits(self, path: str) -> bool:
        """Whether an ingest of this root reads the file ``path`` (the walk's decision: hidden, temporary, globs, and
        whether it is a document, by its name or its first bytes)."""
        if not self.folder:
            return path == self.path
        return admitted(Path(path), Path(self.path), list(self.include), list(self.exclude))

    @property
    def watched(self) -> str:
        """What watchfiles watches for it: the folder itself, or the folder holding the file."""
        return self.path if self.folder else os.path.dirname(self.path)

    def identity(self) -> tuple[int, int] | None:
        """(device, inode) of the watched folder, None when it is not there: a folder renamed away and another made
        in its place, or a drive mounted or unmounted on it, is another folder."""
        try:
            st = os.stat(self.watched)
        except OSError:
            return None
        return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def roots_of(service, collection: str | None = None) -> list[Root]:
    """Every folder and file ingested before (into ``collection``, or into any)."""
    with service.reading() as lib:
        return [Root(s["collection"], s["path"], tuple(s["include"]), tuple(s["exclude"]), s["folder"])
                for s in lib.sources(collection)]  # fmt: skip


def roots_for(service, paths: list[str], collection: str | None = None, include: tuple[str, ...] = (),
              exclude: tuple[str, ...] = ()) -> list[Root]:  # fmt: skip
    """The roots `localreason watch PATHS` follows: a path ingested before keeps its collection and globs unless
    others are given; any other is ingested into ``collection`` (default: "default") when the watch starts."""
    from ..library import DEFAULT_COLLECTION

    known = roots_of(service)
    roots: list[Root] = []
    for raw in paths:
        path = path_text(os.path.abspath(os.path.expanduser(str(raw))))
        same = [r for r in known if r.path == path]
        if same and collection is None and not include and not exclude:
            roots += same
        elif os.path.isdir(path) or os.path.isfile(path):
            roots.append(Root(collection or DEFAULT_COLLECTION, path, tuple(include), tuple(exclude),
                              os.path.isdir(path)))  # fmt: skip
        else:
            raise ValidationError(f"{raw} is not a folder or file, and was not ingested before.",
                                  hint="Name a folder or file that exists, or one ingested before (`localreason "
                                  "watch` with no paths follows every one of those).")  # fmt: skip
    return list(dict.fromkeys(roots))


def with_removals(service, roots: list[Root]) -> list[Root]:
    """The roots `localreason watch PATHS` named, each with the files removed from it since (Library.remove's
    globs, walk.removals_under): a file removed while it is watched is left out when it changes, as sync leaves it."""
    with service.reading() as lib:
        sources = lib.sources()
    out = []
    for root in roots:
        removed = removals_under(root.path, [s for s in sources if s["collection"] == root.collection])
        out.append(replace(root, exclude=tuple(with_removed(list(root.exclude), removed))) if root.folder else root)
    return out


def stat_key(path: str) -> tuple[int, int, int, int] | None:
    """What tells that a path changed: size, modification time (ns), inode and kind; None when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino, stat.S_IFMT(st.st_mode))


def hidden_or_transient(root: Root, path: str) -> bool:
    """Whether a change at ``path`` is not worth looking at: under a hidden folder, hidden, or an editor's file."""
    rel = path[len(root.path) + 1:] if root.folder else os.path.basename(path)
    parts = rel.split(os.sep) if rel else []
    return any(p.startswith(".") for p in parts) or (bool(parts) and is_transient(parts[-1]))



def outermost(folders: list[str]) -> list[str]:
    """The folders not inside another of them (watching one watches what it holds)."""
    unique = sorted(set(folders))
    return [f for f in unique if not any(f != g and f.startswith(g.rstrip(os.sep) + os.sep) for g in unique)]
