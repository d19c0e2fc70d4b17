"""localreason: ask questions of your own documents, offline, with quotations checked word for word."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Library", "__version__"]


def __getattr__(name: str):
    # Lazy, so `import localreason` stays cheap and touches no disk.
    if name == "Library":
        from .library import Library

        return Library
    raise AttributeError(name)
