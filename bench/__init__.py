"""localreason's benchmarks, evaluations and calibrations, run from the checkout (not installed with the
package): ``python -m bench.<part>.<name>`` from the repository root. The index is bench/README.md."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (the checkout these benchmarks run from)."""


def cpu_name() -> str:
    """The CPU's model name and core count, for the figures a benchmark prints ("AMD EPYC, 2 cores")."""
    import os

    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "unknown CPU")
    except OSError:
        model = "unknown CPU"
    return f"{model}, {os.cpu_count()} cores"
