"""How a long-running command stops: SIGINT and SIGTERM end it through its ``finally`` blocks."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


@contextmanager
def stop_signals():
    """SIGINT and SIGTERM end what runs inside (a server, a watch) through its ``finally`` blocks: SIGINT as
    KeyboardInterrupt, SIGTERM as SystemExit(143).

    uvicorn shuts down gracefully on either signal, then raises it again to the handler that was in place
    before it. For SIGINT that handler is Python's own here (KeyboardInterrupt: 130) even when the process was
    started with SIGINT ignored, as a background job of a shell script is: the signal raised again would be
    dropped and the server, stopped by it, would exit 0. For SIGTERM the default handler would end the process
    at once, leaving the discovery file and the library open; here it raises SystemExit(143).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
                signal.SIGTERM: signal.signal(signal.SIGTERM, stop)}  # fmt: skip
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
