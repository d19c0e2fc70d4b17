"""The TUI's library actions: add files (F6), re-sync (F5), remove a document or collection (from the tree), and
forget the documents of folders that are gone. One runs at a time, in a thread worker of the app (group
"library"), with the progress bar and the status line showing it and a report screen at its end; Escape stops it
after the current file (what was finished is kept)."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path

from textual.widgets import ProgressBar

from ..errors import Interrupted
from ..text import counted
from .screens import AddScreen, ConfirmScreen, ReportScreen


class LibraryWork:
    """The library actions of one app (module doc). ``busy`` while one runs; ``cancel`` stops it."""

    def __init__(self, app) -> None:
        self.app = app
        self.busy = False
        self.cancel = threading.Event()
        """Set by Escape (when no question runs) to stop an ingest or re-sync after the current file."""
        self.label = ""
        self.elsewhere = ""
        """A re-sync that found nothing of this machine's: what other machines ingested (a shared library)."""

    def _run(self, fn, *args) -> None:
        """``fn(*args)`` in a thread worker of the library group (its failure shown by the app's catch-all)."""
        self.app.run_worker(partial(fn, *args), name=fn.__name__, group="library", thread=True, exit_on_error=False)

    def refused(self) -> bool:
        """Whether another library action still runs (then the person is told to wait)."""
        if self.busy:
            self.app.notify("The library is already being changed; wait for it to finish.", severity="warning")
            return True
        return False

    def add(self) -> None:
        if self.refused():
            return
        scope = self.app.session.scope
        default = scope.label if scope.kind == "collection" else "default"
        self.app.push_screen(AddScreen(default), self.add_chosen)

    def add_chosen(self, choice) -> None:
        """What the add dialog chose: (path, collection), or nothing."""
        if choice:
            path, collection = choice
            self.start(f"Adding {path}")
            self._run(self.ingest, path, collection, self.cancel)

    def sync(self) -> None:
        if self.refused():
            return
        scope = self.app.session.scope
        collection = scope.label if scope.kind == "collection" else None
        self.start(f"Re-syncing {collection or 'every collection'}")
        self._run(self.resync, collection, self.cancel)

    def start(self, label: str) -> None:
        self.label = label
        self.busy = True
        self.cancel = threading.Event()
        bar = self.app.main("#progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.remove_class("hidden")
        self.app.set_status(f"{label}…")

    def _progress(self, cancel: threading.Event):
        def callback(p) -> None:
            if cancel.is_set():
                raise KeyboardInterrupt  # the library stops after the current file and reports what it did
            self.app.ui(self._show_progress, p)
        return callback

    def _show_progress(self, p) -> None:
        bar = self.app.main("#progress", ProgressBar)
        bar.update(total=max(p.total, 1), progress=p.done)
        name = Path(p.path).name if p.path else ""
        pages = f", recognising page {min(p.page + 1, p.pages)}/{p.pages}" if p.status == "recognizing" else ""
        self.app.set_status(f"{self.label}: {p.done}/{counted(p.total, 'file')}, {counted(p.chunks, 'passage')}{pages}  {name}")

    def ingest(self, path: str, collection: str, cancel: threading.Event) -> None:
        def job():
            return [self.app.session.service.ingest([path], collection, progress=self._progress(cancel))]
        self._job(job, f"Added to {collection}")

    def resync(self, collection: str | None, cancel: threading.Event) -> None:
        def job():
            reports = self.app.session.service.sync(collection, progress=self._progress(cancel))
            self.elsewhere = "" if reports else self._elsewhere(collection)
            return reports
        self._job(job, "Re-sync", then=lambda: self._run(self.look_for_vanished, collection))

    def _elsewhere(self, collection: str | None) -> str:
        """What to say when this machine had nothing to re-sync in a shared library other machines filled."""
        from ..library import elsewhere_note, sources_elsewhere

        with self.app.session.service.reading() as lib:
            others = sources_elsewhere(lib, collection)
        return elsewhere_note(others) if others else ""

    def _job(self, job, title: str, then=None) -> None:
        """Run ``job`` (a worker's), then show its reports; ``then`` runs once they are closed. The files not read
        go to the tree, and its failures count as said (the report shows them)."""
        try:
            reports = job()
        except Interrupted as stop:
            self._noted(stop.reports)
            self.app.ui(self.done, title + " (cancelled)", stop.reports,
                        "Cancelled: what was finished is kept. Run it again to continue.", None)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - the progress bar and busy flag must be reset
            self.app.ui(self.done, title, [], "", exc)
        else:
            self._noted(reports)
            self.app.ui(self.done, title, reports, "", None, then)

    def _noted(self, reports) -> None:
        for report in reports:
            self.app.unread.take(report)

    def done(self, title: str, reports, note: str, error, then=None) -> None:
        app = self.app
        self.busy = False
        app.main("#progress", ProgressBar).add_class("hidden")
        if not app.busy:
            app.show_ready()
        app.load_tree()
        if error is not None:
            app.show_error(error)
        elif not reports:
            app.notify("There was nothing to re-sync: " + (self.elsewhere or "no folders or files were added yet."))
        else:
            failed = sum(r.counts.get("failed", 0) for r in reports)
            app.push_screen(ReportScreen(title + (f" — {failed} failed" if failed else ""), reports, note),
                            lambda _: then() if then is not None else None)  # fmt: skip

    def confirm_remove(self, kind: str, id_: str, label: str) -> None:
        if self.refused():
            return
        what = (f"the document “{label}”" if kind == "document"
                else f"the collection “{label}” and all its documents")  # fmt: skip
        self.app.push_screen(ConfirmScreen(f"Remove {what} from the library?\nThe files on disk are not touched."),
                             lambda yes: yes and self._run(self.remove, kind, id_, label))  # fmt: skip

    def remove(self, kind: str, id_: str, label: str) -> None:
        try:
            result = self.app.session.service.remove(id_)
        except Exception as exc:  # noqa: BLE001
            self.app.ui(self.app.show_error, exc)
            return
        self.app.ui(self._removed, id_, label, result.get("keptOut"))

    def _removed(self, id_: str, label: str, kept: list | None = None) -> None:
        if self.app.session.scope.id == id_:
            self.app.action_clear_scope()
        if kept is None:
            self.app.notify(f"Removed {label}.")
        else:
            from ..library import kept_out

            self.app.notify(f"Removed {label}. {kept_out(kept)}", severity="warning", timeout=12)
        self.app.load_tree()

    def look_for_vanished(self, collection: str | None) -> None:
        """After a re-sync: folders that are gone keep their documents until the user says to remove them."""
        with self.app.session.service.reading() as lib:
            vanished = lib.vanished_folders(collection)
        if vanished:
            self.app.ui(self.confirm_forget, collection, vanished)

    def confirm_forget(self, collection: str | None, vanished) -> None:
        folders = "\n".join(f"  {folder} ({counted(count, 'document')} in {name})"
                            for name, folder, count in vanished)  # fmt: skip
        question = (f"{'These folders are' if len(vanished) > 1 else 'This folder is'} gone (an unmounted drive, or "
                    f"renamed or deleted):\n{folders}\nRemove {'their' if len(vanished) > 1 else 'its'} documents "
                    "from the library? Keep them if it will be back.")  # fmt: skip
        self.app.push_screen(ConfirmScreen(question), lambda yes: yes and self._forget_vanished(collection))

    def _forget_vanished(self, collection: str | None) -> None:
        if self.refused():
            return
        self.start("Removing the documents of vanished folders")
        self._run(self.forget, collection)

    def forget(self, collection: str | None) -> None:
        self._job(lambda: self.app.session.service.forget_vanished(collection), "Vanished folders removed")
