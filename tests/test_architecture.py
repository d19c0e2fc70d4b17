"""The headless core never imports a front end, and importing it is cheap."""

from __future__ import annotations

import subprocess
import sys

CORE = ["localreason.library", "localreason.ingest.parse", "localreason.ingest.chunk", "localreason.store.db",
        "localreason.store.vectors", "localreason.models", "localreason.config", "localreason.embed",
        "localreason.reason", "localreason.session", "localreason.generate", "localreason.quotes"]  # fmt: skip


def test_core_imports_no_front_end_and_no_heavy_model_libraries():
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE)
        + "bad = [m for m in ('textual', 'click', 'torch', 'sentence_transformers', 'llama_cpp') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_only_the_store_runs_sql():
    """Every SQL statement lives in localreason/store/ as a named method; nothing else calls execute."""
    import re
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "localreason"
    offenders = [f"{path.relative_to(package)}:{n}" for path in package.rglob("*.py") if "store" not in path.parts
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"\.execute(many|script)?\(", line)]  # fmt: skip
    assert offenders == []
