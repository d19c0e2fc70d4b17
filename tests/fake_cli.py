"""`localreason` with the fake models of conftest.py (fast, deterministic), for tests that run it as a process.

    python tests/fake_cli.py [--home DIR] COMMAND [ARGS ...]     # as `localreason ...`

The fakes go in only when the command makes a Library: `serve` at once, any other command when it opens
its own service. So a `search` or `ask` handed to a running server imports exactly what the real command
would (the test of the hand-off checks that), and one run in its own process loads fakes, not real models.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from localreason import cli  # noqa: E402
from localreason.cli.common import Ctx  # noqa: E402
from localreason.serve import handoff  # noqa: E402 - standard library only: a handed-off command imports it anyway
from waiting import PATIENCE  # noqa: E402

handoff.CONNECT_TIMEOUT = PATIENCE
"""A running server is given PATIENCE, not 3 s, to prove itself: on a loaded machine the tests' server may well
answer later than a user's, and a command that ran here instead would fail a test that the server answers. The
timeout itself is tested in process (test_handoff.py: a server that does not answer, a stopped one)."""

_installed = False


def use_fake_models() -> None:
    """Every Library made from now on gets conftest's FakeEmbedder and FakeGenerator unless given others."""
    global _installed
    if _installed:
        return
    from fakes import FakeEmbedder, FakeGenerator

    from localreason.library import Library

    made = Library.__init__

    def init(self, home=None, *, settings=None, embedder=None, generator=None) -> None:
        made(self, home, settings=settings, embedder=embedder or FakeEmbedder(),
             generator=generator or FakeGenerator())  # fmt: skip

    Library.__init__ = init
    _installed = True


_service = Ctx.service


def _fake_service(self, library=None):
    use_fake_models()
    return _service(self, library)


Ctx.service = _fake_service

if __name__ == "__main__":
    if "serve" in sys.argv[1:]:
        use_fake_models()
    cli.main(sys.argv[1:])
