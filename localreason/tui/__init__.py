"""The Textual front end. ``run()`` opens it over a library; see app.py."""

from __future__ import annotations

from ..logs import stderr_to


def run(service, *, first_turn=None, max_tokens: int | None = None, watch: bool = False) -> None:
    """Open the TUI over a :class:`~localreason.service.Service` (or a Library), optionally showing an
    answered question first; with ``watch``, following the library's folders while it runs."""
    from .app import LocalReasonApp

    app = LocalReasonApp(service, first_turn=first_turn, max_tokens=max_tokens, watch=watch)
    with stderr_to(app.session.library.home / "logs" / "native-stderr.log"):
        try:
            app.run()
        finally:
            app.stop_watching()
