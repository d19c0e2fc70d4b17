"""The headless core never imports a front end, and importing it is cheap."""

from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys

import localreason

FRONT_END = re.compile(r"localreason\.(tui|cli|__main__|demo|mcp\w*|rest|rest_\w+|restapi\w*|server\w*)(\.|$)")
"""Front ends and their subpackages (the TUI, the CLI, the demo, and MCP, REST or other servers)."""


def core_modules() -> list[str]:
    """Every module of the package except the front ends, found on disk (nothing is imported to list them)."""
    found: list[str] = []

    def walk(paths: list[str], prefix: str) -> None:
        for info in pkgutil.iter_modules(paths, prefix):
            if FRONT_END.match(info.name):
                continue
            found.append(info.name)
            if info.ispkg:
                walk([os.path.join(p, info.name.rpartition(".")[2]) for p in paths], info.name + ".")

    walk(list(localreason.__path__), "localreason.")
    return sorted(found)


CORE = core_modules()


def test_core_imports_no_front_end_and_no_heavy_model_libraries():
    assert {"localreason.library", "localreason.search.ranking", "localreason.store.db"} <= set(CORE)
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
