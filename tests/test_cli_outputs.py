"""The command line's help and outputs stay byte for byte what they were when the CLI became a package (issue
#41): every command's --help, and the output of the commands a person runs on a small library (fake models,
no reader), with ids, folders and timings masked. Recorded by ``python tests/test_cli_outputs.py --record``
from the code before the split; a change to what the CLI prints shows here first and is recorded on purpose."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
RECORDED = HERE / "cli_outputs"
DOCS = {"router.md": "# Router manual\n\n## Reset\n\nPress the reset button for ten seconds. The lights blink "
                     "twice.\n\n## Warranty\n\nThe router warranty lasts two years from purchase.\n",
        "notes.txt": "Meeting notes.\n\nThe warranty claim was sent on Monday.\n"}  # fmt: skip
_MASKS = [
    (re.compile(r"\b(col|doc|chk)_[a-z0-9]{16}\b"), r"\1_<id>"),
    (re.compile(r"(\"(?:latencyMs|seconds|[a-z]+Ms)\": )[0-9.e-]+"), r"\1<n>"),
    (re.compile(r"(\"stagesMs\": )\{[^}]*\}"), r"\1{<stages>}"),
    (re.compile(r"\b\d+(?:\.\d+)? (s|ms)\b"), r"<n> \1"),
    (re.compile(r"\b\d+\.\d files/s"), "<n> files/s"),
    (re.compile(r"\b\d+/(\d+) tokens"), r"<n>/\1 tokens"),  # a packet's tokens count its random chunk ids
    (re.compile(r"(\"tokens\": )\d+"), r"\1<n>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?"), "<time>"),
]


def commands() -> list[tuple[str, list[str]]]:
    """(name, argv) of what is run, in order; {docs}, {col}, {doc} and {chk} stand for what earlier ones made."""
    from localreason.cli import cli

    helps = [("help", ["--help"])] + [(f"help-{name}", [name, "--help"]) for name in sorted(cli.commands)]
    return helps + [
        ("ingest", ["ingest", "{docs}", "-c", "work"]),
        ("ingest-again-json", ["ingest", "{docs}", "-c", "work", "--json"]),
        ("library", ["library"]), ("library-documents", ["library", "-d"]), ("library-work", ["library", "-c", "work"]),
        ("show-collection", ["show", "{col}"]), ("show-document", ["show", "{doc}"]),
        ("find", ["find", "router"]), ("find-json", ["find", "router", "--json"]),
        ("search", ["search", "reset button", "--local"]), ("search-json", ["search", "warranty", "--local", "--json"]),
        ("search-scoped", ["search", "warranty", "-c", "work", "--local"]),
        ("show-chunk", ["show", "{chk}"]),
        ("read", ["read", "{chk}"]), ("read-json", ["read", "{chk}", "--json"]),
        ("expand", ["expand", "{chk}", "--direction", "next"]),
        ("expand-up", ["expand", "{chk}", "--direction", "up"]),
        ("evidence", ["evidence", "reset button"]), ("evidence-json", ["evidence", "reset", "--json", "--explain"]),
        ("ask", ["ask", "How long should the reset button be pressed?", "--local"]),
        ("ask-json", ["ask", "How long does the router warranty last?", "--local", "--json"]),
        ("ask-blank", ["ask", "   ", "--local"]), ("ask-none", ["ask", "--local"]),
        ("search-bad-limit", ["search", "x", "-n", "0", "--local"]),
        ("show-malformed", ["show", "doc_!!"]), ("show-missing", ["show", "doc_aaaaaaaaaaaaaaaa"]),
        ("sync", ["sync"]), ("config-markdown", ["config", "--markdown"]),
        ("remove", ["remove", "{doc}", "--yes"]), ("library-after", ["library", "-d"]),
        ("unknown", ["frobnicate"]),
    ]  # fmt: skip


def masked(text: str, root: Path) -> str:
    text = text.replace(str(root), "<root>")
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return text


def run_all(root: Path, monkeypatch, capsys) -> dict[str, str]:
    """Every command's exit code, stdout and stderr, masked, by name."""
    from fakes import FakeEmbedder, FakeGenerator

    from localreason.cli import main
    from localreason.library import Library

    made = Library.__init__

    def init(self, home=None, *, settings=None, embedder=None, generator=None) -> None:
        made(self, home, settings=settings, embedder=embedder or FakeEmbedder(), generator=generator or FakeGenerator())

    monkeypatch.setattr(Library, "__init__", init)
    for var in ("LOCALREASON_API_KEY", "LOCALREASON_CI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LOCALREASON_HOME", str(root / "home"))
    monkeypatch.setenv("LOCALREASON_READER", "off")
    monkeypatch.setenv("LOCALREASON_HANDOFF", "0")
    monkeypatch.setenv("COLUMNS", "100")
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    out: dict[str, str] = {}
    ids: dict[str, str] = {}
    for name, argv in commands():
        argv = [a.format(docs=docs, col=ids.get("col", "col_x"), doc=ids.get("doc", "doc_x"), chk=ids.get("chk", "chk_x"))
                for a in argv]
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code
        stdout, stderr = capsys.readouterr()
        out[name] = masked(f"exit {code}\n--- stdout\n{stdout}--- stderr\n{stderr}", root)
        if name == "ingest-again-json":
            data = json.loads(stdout)["data"]
            ids["col"] = data["collectionId"]
        if name == "library-work":
            ids["doc"] = re.search(r"doc_[a-z0-9]{16}", stdout).group(0)
        if name == "search-json":
            ids["chk"] = json.loads(stdout)["data"][0]["chunkId"]
    return out


@pytest.fixture
def outputs(tmp_path, monkeypatch, capsys):
    return run_all(tmp_path, monkeypatch, capsys)


def test_every_help_and_output_is_as_recorded(outputs):
    recorded = {p.stem: p.read_text(encoding="utf-8") for p in RECORDED.glob("*.txt")}
    assert sorted(outputs) == sorted(recorded), "a command was added or lost: record on purpose"
    differ = [name for name in outputs if outputs[name] != recorded[name]]
    assert differ == [], "\n".join(f"{n}:\n{outputs[n]}\n--- recorded:\n{recorded[n]}" for n in differ[:2])


if __name__ == "__main__" and "--record" in sys.argv:
    import tempfile

    sys.path.insert(0, str(HERE))
    mp = pytest.MonkeyPatch()

    class _Capture:
        """capsys's readouterr for a run outside pytest."""

        def __init__(self) -> None:
            import io

            self.io = io
            self._swap()

        def _swap(self) -> None:
            self.out, self.err = self.io.StringIO(), self.io.StringIO()
            sys.stdout, sys.stderr = self.out, self.err

        def readouterr(self):
            got = (self.out.getvalue(), self.err.getvalue())
            self._swap()
            return got

    real = (sys.stdout, sys.stderr)
    cap = _Capture()
    try:
        found = run_all(Path(tempfile.mkdtemp()), mp, cap)
    finally:
        sys.stdout, sys.stderr = real
        mp.undo()
    for old in RECORDED.glob("*.txt"):
        old.unlink()
    for name, text in found.items():
        (RECORDED / f"{name}.txt").write_text(text, encoding="utf-8")
    print(f"recorded {len(found)} outputs in {RECORDED}")
