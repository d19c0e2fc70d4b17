#!/usr/bin/env bash
# Static checks of the benchmark package: no tests, no models, no data, a few seconds.
#
#   bench/check.sh
#
# Every module compiles and imports; none changes the import path (modules import each other as bench.*,
# run as python -m bench.<part>.<name> from the repository root); none imports the tests; no function is
# over 60 lines; the evaluation sets keep their rules (python -m bench.data.qa_sets --check).
set -euo pipefail
cd "$(dirname "$0")/.."

python -m compileall -q bench
if grep -rn --include='*.py' 'sys\.path' bench/; then
    echo "bench/ must not change the import path: import bench.* and run with python -m" >&2
    exit 1
fi
if grep -rnE --include='*.py' '^\s*(from|import) (tests|conftest|lib_proc|fake_cli|files|test_\w+)\b' bench/; then
    echo "benchmarks do not import tests" >&2
    exit 1
fi
python - <<'PY'
import ast
import importlib
import pathlib
import sys

long = []
for path in sorted(pathlib.Path("bench").rglob("*.py")):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60:
            long.append(f"{path}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines")
    name = ".".join(path.with_suffix("").parts).removesuffix(".__init__")
    if not name.endswith(".__main__"):  # importing a __main__ runs the command
        importlib.import_module(name)
if long:
    sys.exit("functions over 60 lines:\n  " + "\n  ".join(long))
print("bench: compiles, imports, no import-path changes, no test imports, no function over 60 lines")
PY
python -m bench.data.qa_sets --check
