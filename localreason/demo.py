"""The bundled sample documents and the demo library they are ingested into."""

from __future__ import annotations

from pathlib import Path

from .config import default_home, load_settings


def samples_dir() -> Path:
    """The folder of sample documents shipped inside the package."""
    return Path(__file__).resolve().parent / "samples"


def demo_library(home: str | Path | None = None):
    """A library kept apart from the user's own, under ``<home>/demo``."""
    from .library import Library

    base = Path(home).expanduser() if home else default_home()
    return Library(settings=load_settings(base / "demo"))
