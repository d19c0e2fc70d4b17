"""The Textual front end. ``run()`` opens it over a library; see app.py."""

from __future__ import annotations

from ..logs import stderr_to


def run(service, *, first_turn=None, max_tokens: int | None = None) -> None:
    """Open the TUI over a :class:`~localreason.service.Service` (or a Library), optionally showing an
    answered question first."""
    from .app import LocalReasonApp

    app = LocalReasonApp(service, first_turn=first_turn, max_tokens=max_tokens)
    with stderr_to(app.session.library.home / "logs" / "native-stderr.log"):
        app.run()
