"""The package's shape: every module sits in a layer, imports run only down the layers, no import cycles,
the headless core never imports a front end, and importing it is cheap."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import localreason

PACKAGE = Path(localreason.__file__).resolve().parent

LAYERS = (
    ("vocabulary", ("errors", "ids", "types", "config", "text", "tokens", "stages", "logs", "openvino_runtime",
                    "signals", "textquery")),
    ("models", ("models", "embed", "generate", "readers", "stance")),
    ("store", ("store",)),
    ("ingest", ("ingest",)),
    ("search", ("search",)),
    ("render", ("render",)),
    ("reason", ("reason",)),
    ("library", ("library", "keys")),
    ("service", ("service", "session", "demo", "watch")),
    ("package", ("localreason",)),
    ("front ends", ("serve", "cli", "tui", "__main__")),
)
"""Lowest first (docs/architecture.md, "How the code is laid out"). A module may import modules of its own layer and of
the layers below it, never above. Each entry names a top-level module or package of localreason (``localreason``
is the package's own ``__init__``: the version and the lazy ``Library``)."""
FRONT_ENDS = ("serve", "cli", "tui", "__main__")
"""They never import each other, except the command line, which starts the others (and ``__main__``, which is it)."""
LAUNCHERS = ("cli", "__main__")
HANDOFF_MAY_IMPORT = ("localreason", "localreason.config", "localreason.errors", "localreason.types",
                      "localreason.reason.answer", "localreason.keys")  # fmt: skip
"""The CLI's hand-off to a running server must not load what it saves the command from loading (models, the
store, search): it imports the vocabulary, the version, the answer's values to rebuild a served answer, and what a
collection key looks like (keys.py: the standard library and errors only)."""


# ---------------------------------------------------------------- the import graph


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``), found on disk."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of import nodes under ``if TYPE_CHECKING:`` (never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that module ``name`` imports anywhere in it (lazy imports in functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_only(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    root = name.split(".")[0]  # localreason, or bench
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == root}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            target = ".".join(base + (node.module.split(".") if node.module else []))
            if target.split(".")[0] != root:
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & known  # ``from . import x``: the module x
            found |= subs or {target}
    return (found & known) - {name}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    mods = modules(package)
    return {name: imports_of(name, path, set(mods)) for name, path in mods.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: each strongly connected group of two or more modules, sorted (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def top_part(module: str) -> str:
    """``localreason.search.ranking`` -> ``search``; the package's own ``__init__`` -> ``localreason``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(module: str) -> int | None:
    part = top_part(module)
    return next((i for i, (_, parts) in enumerate(LAYERS) if part in parts), None)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import that reaches a higher layer, or one front end from another (the launchers aside)."""
    broken = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            here, there = layer_of(module), layer_of(target)
            if here is not None and there is not None and there > here:
                broken.append(f"{module} ({LAYERS[here][0]}) imports {target} ({LAYERS[there][0]})")
            mine, theirs = top_part(module), top_part(target)
            if mine in FRONT_ENDS and theirs in FRONT_ENDS and mine != theirs and mine not in LAUNCHERS:
                broken.append(f"front end {module} imports front end {target}")
    return broken


# ---------------------------------------------------------------- the tests


def test_every_module_sits_in_a_layer():
    unplaced = sorted(m for m in modules() if layer_of(m) is None)
    assert unplaced == [], "add these to LAYERS (and to the layout table of docs/architecture.md)"


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_no_import_cycles_in_bench():
    assert cycles(import_graph(PACKAGE.parent / "bench")) == []


HOUSE_LIMITS = {"module": 800, "class": 550, "function": 60}
"""The house's size limits, in lines (DEVELOPERS' guide): a module, a class, a function or method."""


def oversized(package: Path = PACKAGE) -> list[str]:
    """Every module, class and function of ``package`` over HOUSE_LIMITS, as 'path: what N lines'."""
    out = []
    for name, path in modules(package).items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") + 1 > HOUSE_LIMITS["module"]:
            out.append(f"{name}: module {text.count(chr(10)) + 1} lines")
        for node in ast.walk(ast.parse(text)):
            kind = "class" if isinstance(node, ast.ClassDef) else "function" if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None  # fmt: skip
            if kind and node.end_lineno - node.lineno + 1 > HOUSE_LIMITS[kind]:
                out.append(f"{name}: {kind} {node.name} {node.end_lineno - node.lineno + 1} lines")
    return out


def test_the_package_keeps_the_house_limits():
    assert oversized() == []


def test_the_size_check_finds_what_is_too_long(tmp_path):
    pkg = tmp_path / "localreason"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "long.py").write_text("def f():\n" + "    x = 1\n" * 61 + "\n\nclass C:\n    pass\n")
    assert oversized(pkg) == ["localreason.long: function f 62 lines"]


def test_imports_run_only_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_the_checks_catch_a_cycle_and_an_upward_import():
    """The checkers themselves: a graph with a cycle and an import up a layer is refused."""
    graph = {"localreason.text": {"localreason.search.ranking"}, "localreason.search.ranking": {"localreason.text"},
             "localreason.store.db": set()}  # fmt: skip
    assert cycles(graph) == [["localreason.search.ranking", "localreason.text"]]
    assert upward_imports(graph) == ["localreason.text (vocabulary) imports localreason.search.ranking (search)"]
    assert upward_imports({"localreason.tui.app": {"localreason.serve.rest"}}) == [
        "front end localreason.tui.app imports front end localreason.serve.rest"]
    assert upward_imports({"localreason.cli": {"localreason.serve.rest", "localreason.tui.app"}}) == []


def test_relative_imports_resolve_to_modules(tmp_path):
    """``from . import x``, ``from ..y import z`` and lazy imports inside functions are all seen."""
    pkg = tmp_path / "localreason"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "top.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import thing\n")
    (pkg / "sub" / "a.py").write_text("from . import b\nfrom ..top import x\ndef f():\n    from localreason import sub\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n")
    graph = import_graph(pkg)
    assert graph["localreason.sub.a"] == {"localreason.sub.b", "localreason.top", "localreason.sub"}
    assert graph["localreason.sub"] == {"localreason.sub.a"}
    assert graph["localreason.sub.b"] == set()
    assert cycles(graph) == [["localreason.sub", "localreason.sub.a"]]


def test_the_handoff_loads_nothing_heavy():
    graph = import_graph()
    assert graph["localreason.serve.handoff"] <= set(HANDOFF_MAY_IMPORT)


def test_core_imports_no_front_end_and_no_heavy_model_libraries():
    core = sorted(m for m in modules() if top_part(m) not in FRONT_ENDS)
    assert {"localreason.library", "localreason.search.ranking", "localreason.store.db"} <= set(core)
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in core)
        + "bad = [m for m in ('textual', 'click', 'torch', 'sentence_transformers', 'llama_cpp') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_only_the_store_runs_sql():
    """Every SQL statement lives in localreason/store/ as a named method; nothing else calls execute."""
    offenders = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py") if "store" not in path.parts
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                 if re.search(r"\.execute(many|script)?\(", line)]  # fmt: skip
    assert offenders == []


# Inside reason/ (see its __init__): the stages' modules in layers, so that none imports one above it.
REASON_LAYERS = [
    {"calibration", "answer", "answer_type"},  # leaves: nothing of reason/
    {"candidates", "passage", "polarity"},
    {"ranking", "gate", "grammar", "prompt", "verify", "disagree", "compare"},
    {"read", "likelihood", "offer"},
    {"phrase"},
    {"pipeline"},
]
DECISIONS = {"calibration", "candidates", "ranking", "read", "likelihood", "gate", "offer", "phrase",
             "pipeline", "answer_type", "passage", "disagree", "compare", "polarity"}
"""The modules that decide what an answer says: no one outside reason/ imports their private names."""


def _reason_imports(path) -> list[tuple[str, list[str]]]:
    """(sibling module, names) for each ``from .sibling import names`` of a module of reason/ (anywhere in it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.append((node.module.split(".")[0], [a.name for a in node.names]))
            else:
                found += [(a.name, []) for a in node.names]
    return found


def test_reasons_modules_import_only_the_layers_below_and_no_privates():
    folder = PACKAGE / "reason"
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
    root = PACKAGE.parent
    broken = []
    paths = [p for folder in ("localreason", "tests", "bench") for p in (root / folder).rglob("*.py")]
    for path in paths:
        if path.relative_to(root).parts[:2] == ("localreason", "reason"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("localreason.reason."):
                if node.module.split(".")[2] in DECISIONS:
                    broken += [f"{path.relative_to(root)}: {node.module}.{a.name}" for a in node.names
                               if a.name.startswith("_")]  # fmt: skip
    assert broken == []
