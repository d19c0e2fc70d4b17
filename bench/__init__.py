"""localreason's benchmarks, evaluations and calibrations, run from the checkout (not installed with the
package): ``python -m bench.<part>.<name>`` from the repository root. The index is bench/README.md."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository root (the checkout these benchmarks run from)."""
