"""The headless core never imports a front end, and importing it is cheap."""

from __future__ import annotations

import os
import pkgutil
import re
import subprocess
import sys

import localreason

FRONT_END = re.compile(r"localreason\.(tui|cli|__main__|demo|mcp\w*|rest|rest_\w+|restapi\w*|serve|server\w*)(\.|$)")
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


# Who may import whom (the README's "How the code is laid out"): a layer never reaches up.
LAYERS = {
    "store": {"ingest", "search", "reason", "render", "library", "service", "session", "embed",
              "generate"},
    "ingest": {"search", "reason", "render", "library", "service", "session", "generate"},
    "search": {"ingest", "reason", "render", "library", "service", "session", "generate"},
    "reason": {"ingest", "library", "service", "session"},  # an Answer renders itself in a notebook via render
    "render": {"ingest", "search", "library", "service", "session", "generate"},
    "library": {"service", "session", "render"},
    "service": {"session", "render"},
    "session": set(),
    "models": {"ingest", "search", "reason", "render", "library", "service", "session", "generate"},
    # the CLI's hand-off to a running server: it must not load what it saves the command from loading
    "handoff": {"store", "ingest", "search", "render", "library", "service", "session", "embed",
                "generate", "models"},
}
FRONT_ENDS = {"cli", "tui", "mcp_server", "rest", "demo", "__main__"}


def _imported_parts(path, package) -> set[str]:
    """The top-level localreason parts a module imports anywhere in it (lazy imports in functions too)."""
    import ast

    rel = path.relative_to(package)
    depth = len(rel.parts) - 1  # how many packages deep the module sits
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").startswith("localreason."):
                found.add(node.module.split(".")[1])
            elif node.level:
                up = node.level - 1  # levels above the module's own package
                base = list(rel.parts[:depth][:max(0, depth - up)]) if up <= depth else None
                if base is None:
                    continue
                names = (node.module.split(".") if node.module else []) or [a.name for a in node.names]
                top = (base + names)[0] if (base + names) else ""
                found.add(top)
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("localreason.")}
    return {f.removesuffix(".py") for f in found}


def test_each_layer_imports_only_what_is_below_it():
    from pathlib import Path

    package = Path(localreason.__file__).parent
    broken = []
    for path in package.rglob("*.py"):
        part = path.relative_to(package).parts[0].removesuffix(".py")
        forbidden = LAYERS.get(part, set()) | (FRONT_ENDS if part not in FRONT_ENDS else set())
        if part in FRONT_ENDS and part not in ("cli", "__main__"):
            forbidden = FRONT_ENDS - {part, "demo"}  # front ends never import each other (the CLI launches them)
        bad = _imported_parts(path, package) & forbidden
        if bad:
            broken.append(f"{path.relative_to(package)} imports {sorted(bad)}")
    assert broken == []


# Inside reason/ (see its __init__): the stages' modules in layers, so that none imports one above it.
REASON_LAYERS = [
    {"calibration", "answer", "reader"},  # leaves: nothing of reason/
    {"candidates"},
    {"ranking", "gate", "grammar", "prompt", "verify"},
    {"read", "likelihood", "offer"},
    {"pipeline"},
]
DECISIONS = {"calibration", "candidates", "ranking", "reader", "read", "likelihood", "gate", "offer", "pipeline"}
"""The modules that decide what an answer says: no one outside reason/ imports their private names."""


def _reason_imports(path) -> list[tuple[str, list[str]]]:
    """(sibling module, names) for each ``from .sibling import names`` of a module of reason/ (anywhere in it)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.append((node.module.split(".")[0], [a.name for a in node.names]))
            else:
                found += [(a.name, []) for a in node.names]
    return found


def test_reasons_modules_import_only_the_layers_below_and_no_privates():
    from pathlib import Path

    folder = Path(localreason.__file__).parent / "reason"
    rank = {m: i for i, layer in enumerate(REASON_LAYERS) for m in layer}
    assert rank.keys() == {p.stem for p in folder.glob("*.py")} - {"__init__"}, "every module has its layer"
    broken = []
    for path in folder.glob("*.py"):
        if path.stem == "__init__":
            continue
        for module, names in _reason_imports(path):
            if rank[module] >= rank[path.stem]:
                broken.append(f"{path.stem} imports {module} (not a layer below)")
            broken += [f"{path.stem} imports {module}.{n} (private)" for n in names if n.startswith("_")]
    assert broken == []


def test_nothing_outside_reason_imports_a_private_name_of_its_decisions():
    import ast
    from pathlib import Path

    root = Path(localreason.__file__).parent.parent
    broken = []
    paths = [p for folder in ("localreason", "tests", "scripts", "bench") for p in (root / folder).rglob("*.py")]
    for path in paths:
        if path.relative_to(root).parts[:2] == ("localreason", "reason"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("localreason.reason."):
                if node.module.split(".")[2] in DECISIONS:
                    broken += [f"{path.relative_to(root)}: {node.module}.{a.name}" for a in node.names
                               if a.name.startswith("_")]  # fmt: skip
    assert broken == []
