"""One exception hierarchy for everything a user can cause or meet.

Every error carries a short ``title`` and a ``message`` that says what happened
and what to do. Front ends print them (CLI) or show them in a modal (TUI); they
never need a traceback to be understood.
"""

from __future__ import annotations


class LocalReasonError(Exception):
    """Base class: an error with a human title, message and CLI exit code."""

    title = "Error"
    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n{self.hint}" if self.hint else self.message


class ValidationError(LocalReasonError):
    """The request itself is malformed (bad id, blank query, bad option)."""

    title = "Invalid input"
    exit_code = 2


class NotFoundError(LocalReasonError):
    """A well-formed id or name that the library does not hold."""

    title = "Not found"
    exit_code = 3


class ModelError(LocalReasonError):
    """A model file is missing, unreadable or not what it claims to be."""

    title = "Model problem"
    exit_code = 4


class LibraryError(LocalReasonError):
    """The library on disk cannot be used as it is (wrong model, newer schema, damage)."""

    title = "Library problem"
    exit_code = 5


class StoreUnavailable(LibraryError):
    """The library's database server cannot be reached, or the connection to it was cut: a passing state (a
    restart, a network cut) that a later try may not meet. Servers answer it with 503."""


class IngestFileError(LocalReasonError):
    """One file could not be ingested; the ingest goes on with the others.

    ``status`` is ``failed`` for a file that should have worked (corrupt, unreadable)
    and ``skipped`` for one with nothing to ingest (empty, binary).
    """

    title = "File not ingested"

    def __init__(self, message: str, *, status: str = "failed", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a long operation; carries what was finished before it (``report``, and the reports of the
    parts of it done before that one: ``earlier``, a sync's other folders)."""

    def __init__(self, report, earlier=()) -> None:
        super().__init__()
        self.report = report
        self.earlier = list(earlier)

    @property
    def reports(self) -> list:
        """Every report of what was done, in order."""
        return [*self.earlier, *([self.report] if self.report is not None else [])]


class Cancelled(LocalReasonError):
    """The user cancelled a running request (Escape in the TUI). Nothing was written."""

    title = "Cancelled"
    exit_code = 130

    def __init__(self, message: str = "The request was cancelled.") -> None:
        super().__init__(message)


class StorageFull(LibraryError):
    """The disk holding the library is full; what was committed before is kept."""

    title = "Disk full"
