"""Every hint names a command that does what it says. Each `localreason CMD [--option ...]` (and each backquoted
`CMD --option`) in the package's text (messages, hints, help) names a command that exists with those options;
and the commands that error messages say list the ids really print them, run on a small library."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import click
import pytest

import localreason
from localreason.cli import cli, main
from localreason.library import Library

from fakes import FakeEmbedder, FakeGenerator

PACKAGE = Path(localreason.__file__).resolve().parent
ROOT_OPTIONS_WITH_VALUE = {"--home"}
OPTION = re.compile(r"^--?[A-Za-z][\w-]*")
PROSE = {"command", "on", "reads", "for", "to", "gives", "sets", "import", "version", "process", "needs", "made"}
"""The words that follow "localreason" in prose ("another localreason process"): any other word there must be a
command."""


def strings(path: Path):
    """(line, text) of every string in the module: implicit concatenations whole, f-strings with {} for values."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
            yield node.lineno, node.value
        elif isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)


def spans(text: str):
    """(words, quoted) of each command line that ``text`` shows: after ``localreason``, up to the closing backquote
    when it is quoted (`...` or ``...``), else up to the end of the clause; and each backquoted span that starts
    with a command and names an option (`sync --prune`). A quoted argument ("...", '*.md') is one word, ARG."""
    for m in re.finditer(r"\blocalreason (?=[a-z-])", text):
        quoted = len(re.findall(r"`+", text[:m.start()])) % 2 == 1
        rest = _arguments(text[m.end():])
        end = re.search(r"`" if quoted else r"[.;,()#`](\s|$)|\n|  ", rest)
        yield rest[:end.start() if end else len(rest)].split(), quoted
    for span in re.findall(r"`+([a-z][^`]*)`+", text):
        words = _arguments(span).split()
        if words and words[0] in cli.commands and any(OPTION.match(w) for w in words[1:]):
            yield words, True


def _arguments(text: str) -> str:
    return re.sub(r"\"[^\"\n]*\"|'[^'\s]*'", "ARG", text)


def _w(span: str) -> list[str]:
    return _arguments(span).split()


def named_command(words: list[str]) -> tuple[click.Command | None, list[str], list[str]]:
    """The command ``words`` name (None: none), its path, and the options given to it."""
    i = 0
    while i < len(words) and words[i].startswith("-"):  # options of `localreason` itself (--home DIR)
        i += 2 if words[i] in ROOT_OPTIONS_WITH_VALUE else 1
    command, path = cli, []
    while isinstance(command, click.Group) and i < len(words) and words[i].rstrip(":,.") in command.commands:
        name = words[i].rstrip(":,.")
        command, path, i = command.commands[name], path + [name], i + 1
    options = [OPTION.match(w).group(0) for w in words[i:] if OPTION.match(w)]
    return (command if path else None), path, options


def mentions() -> list[tuple[str, str, list[str], bool]]:
    """(where, the line as shown, its words, whether quoted) for every command line in the package's text."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in strings(path):
            for words, quoted in spans(text):
                found.append((f"{path.relative_to(PACKAGE)}:{line}", " ".join(words), words, quoted))
    return found


def test_every_command_named_exists_with_the_options_named():
    wrong = []
    checked = 0
    for where, shown, words, quoted in mentions():
        command, path, options = named_command(words)
        if command is None:
            if quoted or not words or words[0].rstrip(":,.") not in PROSE:
                wrong.append(f"{where}: `localreason {shown}` names no command (prose? add the word to PROSE)")
            continue
        checked += 1
        own = {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
        wrong += [f"{where}: `localreason {' '.join(path)}` has no option {o} ({shown!r})" for o in options
                  if o not in own]  # fmt: skip
    assert checked >= 60, f"only {checked} command lines were found: the collector lost its way"
    assert wrong == [], "\n".join(wrong)


def test_the_checker_sees_a_wrong_command_and_a_wrong_option():
    """The check itself: a hint naming a command that does not exist, or an option the command lacks, is seen."""
    assert named_command(_w("library --documents"))[2] == ["--documents"]
    assert named_command(_w("--home {} ask \"...\""))[1] == ["ask"]
    assert named_command(_w("store copy --to URL"))[1:] == (["store", "copy"], ["--to"])
    assert named_command(_w("libary"))[0] is None
    [(words, quoted)] = spans("it is in ``localreason libary``; see it")
    assert quoted and words == ["libary"] and named_command(words)[0] is None
    [(words, quoted)] = spans("Run `localreason sync --purge` to remove them.")
    assert quoted and named_command(words)[2] == ["--purge"]
    assert [w for w, _ in spans("see `serve --watch` and `ingest`")] == [["serve", "--watch"]]
    [(words, _)] = spans("Name one: localreason watch ~/notes -c notes")
    assert words == ["watch", "~/notes", "-c", "notes"]


# ---------------------------------------------------------------- the id hints, run for real


@pytest.fixture
def cli_run(tmp_path, monkeypatch, capsys):
    """``cli_run(*argv)`` -> (exit code, stdout, stderr) of the real command line on a small library of two notes,
    with the fake models."""
    made = Library.__init__

    def init(self, home=None, *, settings=None, embedder=None, generator=None, reader=None) -> None:
        made(self, home, settings=settings, embedder=embedder or FakeEmbedder(), generator=generator or FakeGenerator(),
             reader=reader)  # fmt: skip

    monkeypatch.setattr(Library, "__init__", init)
    monkeypatch.setenv("LOCALREASON_READER", "off")
    monkeypatch.setenv("LOCALREASON_HANDOFF", "0")
    monkeypatch.setenv("COLUMNS", "200")

    def run(*argv: str) -> tuple[int, str, str]:
        try:
            main(list(argv))
            code = 0
        except SystemExit as exc:
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "router.md").write_text("# Router manual\n\n## Reset\n\nPress the reset button for ten seconds.\n")
    (docs / "notes.txt").write_text("Meeting notes.\n\nThe router warranty claim was sent on Monday.\n")
    assert run("ingest", str(docs), "-c", "work")[0] == 0
    return run


def _hinted(cli_run, argv: list[str]) -> list[str]:
    """The words of the command the hint of ``argv``'s error names (its "..." as one word, ARG)."""
    code, out, err = cli_run(*argv)
    assert code != 0 and "Error:" in err
    [(words, _)] = [s for s in spans(err.split("\n", 1)[1])]
    return words


@pytest.mark.parametrize("kind, prefix, argv", [("chunk", "chk", ["read", "chk_123"]),
                                                ("document", "doc", ["show", "doc_!!"]),
                                                ("collection", "col", ["show", "col_1"]),
                                                ("chunk", "chk", ["show", "chk_aaaaaaaaaaaaaaaa"])])  # fmt: skip
def test_the_command_a_bad_id_hint_names_prints_such_ids(cli_run, kind, prefix, argv):
    """`localreason read chk_123` said that `localreason library` lists chunk ids; it lists none."""
    words = _hinted(cli_run, argv)
    assert named_command(words)[0] is not None
    code, out, _ = cli_run(*["router warranty" if w == "ARG" else w for w in words])
    assert code == 0
    shown = set(re.findall(rf"\b{prefix}_[a-z2-7]{{16}}\b", out))
    assert shown, f"`localreason {' '.join(words)}` printed no {kind} id:\n{out}"
    for found in shown:
        assert cli_run("show", found)[0] == 0, f"{found}, printed by `localreason {' '.join(words)}`, is no {kind}"


def test_an_unknown_id_of_any_kind_is_answered_with_where_ids_are_listed(cli_run):
    code, _, err = cli_run("show", "xyz_1")
    assert code != 0
    hint = " ".join(err.split())
    assert "`localreason library --documents` lists those of collections and documents" in hint
    assert '`localreason search "..."` shows the chunk id of each passage it finds' in hint
