"""The files the library holds no document for (skipped: an unsupported type, an empty file; failed: a parse error),
as the reports of the watch, an add and a re-sync tell, for the library tree; and which failures are news.

A skipped file is not a change, so it is shown where a person looks for it (under its collection in the tree),
never as a notification. A failure is worth one warning per change of its file, not one on every start: the
failures said are kept in the library's home (``FAILURES_SAID``) with the file's size, modification time and the
reason, and a failure is said again only when one of them is different.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ..types import FileResult, IngestReport

FAILURES_SAID = Path("logs") / "failures-said.json"
"""Where, under the library's home, the failures already said are kept (path -> [size, mtime_ns, reason])."""
NOT_READ = ("skipped", "failed")


def _signature(result: FileResult) -> list:
    """What tells that a failure is another one: the file's size and modification time (none: it is gone), why."""
    try:
        st = os.stat(result.path)
    except OSError:
        return [None, None, result.reason]
    return [st.st_size, st.st_mtime_ns, result.reason]


class Unread:
    """The files not read, by collection id, kept as reports come (from any thread); ``take`` a report,
    ``snapshot`` for the tree. ``home`` None: failures said are remembered for this run only."""

    def __init__(self, home: Path | None = None) -> None:
        self.memory = home / FAILURES_SAID if home is not None else None
        self.files: dict[str, dict[str, FileResult]] = {}
        self._said: dict[str, list] | None = None
        self._lock = threading.Lock()

    def take(self, report: IngestReport) -> tuple[list[FileResult], bool]:
        """Follow ``report``: returns its failures not said before (this version of the file, this reason), and
        whether the files not read of its collection changed (the tree is shown again)."""
        with self._lock:
            said = self._load()
            before = dict(self.files.get(report.collection_id, {}))
            files = self.files.setdefault(report.collection_id, {})
            news, remembered = [], dict(said)
            for result in report.files:
                if result.status in NOT_READ:
                    files[result.path] = result
                else:
                    files.pop(result.path, None)
                if result.status == "failed":
                    signature = _signature(result)
                    if said.get(result.path) != signature:
                        said[result.path] = signature
                        news.append(result)
                else:
                    said.pop(result.path, None)
            for path in [p for p in files if not os.path.lexists(p)]:  # deleted (a deletion reports no result)
                del files[path]
                said.pop(path, None)
            if said != remembered:
                fresh = {r.path for r in news}
                self._said = {p: s for p, s in said.items() if p in fresh or os.path.lexists(p)}
                self._save(self._said)
            return news, files != before

    def snapshot(self) -> dict[str, list[FileResult]]:
        """{collection id: its files not read, by path}."""
        with self._lock:
            return {col: [files[p] for p in sorted(files)] for col, files in self.files.items() if files}

    def _load(self) -> dict[str, list]:
        if self._said is None:
            self._said = {}
            if self.memory is not None:
                try:
                    loaded = json.loads(self.memory.read_text(encoding="utf-8"))
                    self._said = {str(k): list(v) for k, v in loaded.items() if isinstance(v, list)}
                except (OSError, ValueError, AttributeError):  # none yet, or unreadable: each failure is said again
                    pass
        return self._said

    def _save(self, said: dict[str, list]) -> None:
        """Best effort: a home that cannot be written to only means that a failure may be said again next time."""
        if self.memory is None:
            return
        temporary = self.memory.with_name(self.memory.name + ".tmp")
        try:
            self.memory.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps(said, ensure_ascii=False), encoding="utf-8")
            os.replace(temporary, self.memory)
        except OSError:
            pass
