"""Output that is not a terminal (a pipe, a file, a script's capture; click's CliRunner is one): a table never
breaks a word across lines, and with no COLUMNS a row stays on one line; names and titles print as written.
The demo says when it prepares the embedding model, as every command does; `--help` names the TUI."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner

from localreason.cli import cli

LONG_TITLES = ["The extraordinarily comprehensive documentation of internationalization",
               "Quarterly reconciliation of intercontinental telecommunications infrastructure",
               "Notes [draft] on the router"]  # fmt: skip


@pytest.fixture
def fake_models(monkeypatch):
    """Every library the CLI opens runs on the fake embedder and generator, without the trained reader."""
    from fakes import FakeEmbedder, FakeGenerator

    from localreason.library import Library

    made = Library.__init__

    def init(self, home=None, *, settings=None, embedder=None, generator=None) -> None:
        made(self, home, settings=settings, embedder=embedder or FakeEmbedder(), generator=generator or FakeGenerator())

    monkeypatch.setattr(Library, "__init__", init)
    monkeypatch.setenv("LOCALREASON_READER", "off")
    monkeypatch.setenv("LOCALREASON_HANDOFF", "0")


def invoke(*args: str, columns: str | None = None):
    """The CLI in this process, its stdout not a terminal; COLUMNS set to ``columns`` or unset."""
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": columns}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def broken_words(output: str, titles: list[str]) -> list[str]:
    """The words of ``titles`` that do not appear whole in ``output`` (split at spaces and the table's rules)."""
    tokens = set(re.split(r"[\s│┃]+", output))
    return [w for title in titles for w in title.split() if w not in tokens]


@pytest.fixture
def long_titles(tmp_path, fake_models):
    """A library whose documents have long titles of long words."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for n, title in enumerate(LONG_TITLES):
        (docs / f"doc{n}.md").write_text(f"# {title}\n\nThe warranty lasts two years from purchase.\n")
    invoke("ingest", str(docs), "-c", "work [old]")
    return LONG_TITLES


def test_piped_library_keeps_each_document_on_one_line(long_titles):
    out = invoke("library", "-d").stdout
    lines = out.splitlines()
    for title in long_titles:
        row = [line for line in lines if title in line]
        assert len(row) == 1 and "doc_" in row[0] and "work [old]" in row[0], out
    assert "│ work [old] │" in out, "a name is printed as written, never read as markup"


def test_find_show_read_and_expand_print_titles_names_and_paths_as_written(tmp_path, fake_models):
    """A title, collection name or folder with square brackets was read as Rich markup by these commands: words
    vanished ("Plan  v2"), a path came out wrong ("docs//plan.md"), and "[/b]" ended the command as a bug."""
    docs = tmp_path / "docs" / "[old]"
    docs.mkdir(parents=True)
    (docs / "plan.md").write_text("# Plan [draft] v2\n\n## Use [/b] to stop bold\n\nThe plan ships in May.\n")
    invoke("ingest", str(tmp_path / "docs"), "-c", "work [old]")
    found = json.loads(invoke("find", "plan", "--json").stdout)["data"]
    doc = next(i["id"] for i in found if i["type"] == "document")
    assert "Plan [draft] v2" in invoke("find", "plan").stdout
    shown = invoke("show", doc).stdout
    assert str(docs / "plan.md") in shown and "Plan [draft] v2" in shown, shown
    col = next(i["id"] for i in found if i["type"] == "collection") if any(i["type"] == "collection" for i in found) \
        else json.loads(invoke("library", "--json").stdout)["data"]["collections"][0]["id"]
    assert "work [old]" in invoke("show", col).stdout
    [hit] = json.loads(invoke("search", "plan ships in May", "-n", "1", "--json").stdout)["data"]
    for out in (invoke("read", hit["chunkId"]).stdout, invoke("show", hit["chunkId"]).stdout):
        assert "Plan [draft] v2" in out and "Use [/b] to stop bold" in out, out
    chunk = hit["chunkId"]
    while (parent := json.loads(invoke("read", chunk, "--json").stdout)["data"]["parentId"] or "").startswith("chk_"):
        chunk = parent  # up to the top section: "Up from a section is the document itself: ..."
    assert "document itself: Plan [draft] v2" in " ".join(invoke("expand", chunk, "--direction", "up").stdout.split())


@pytest.mark.parametrize("columns", ["40", "80"])
def test_a_narrow_columns_wraps_titles_between_words_only(long_titles, columns):
    out = invoke("library", "-d", columns=columns).stdout
    assert broken_words(out, long_titles) == [], out
    assert not any("…" in line for line in out.splitlines()), "nothing is cut short either"


def test_columns_is_honoured_where_the_words_fit(long_titles):
    out = invoke("library", "-d", columns="100").stdout
    table = [line for line in out.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 100, out
    assert not any(title in out for title in long_titles[:2]), "the long titles wrap inside 100 columns"
    assert broken_words(out, long_titles) == [], out


def test_the_demo_piped_breaks_no_title_word(isolated_home, fake_models):
    out = invoke("demo", "--no-tui", columns="80").stdout
    docs = json.loads(invoke("--home", str(isolated_home / "demo"), "library", "-d", "--json").stdout)
    titles = [d["title"] for d in docs["data"]["documents"]]
    assert any(len(t) > 40 for t in titles), "a sample's title is long enough to wrap"
    assert broken_words(out, titles) == [], out
    out = invoke("demo", "--no-tui").stdout
    assert all(any(t in line for line in out.splitlines()) for t in titles), out


def test_the_ingest_report_prints_names_and_paths_as_written(tmp_path, fake_models):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "plan [draft].md").write_text("# Plan\n\nThe warranty lasts two years.\n")
    (docs / "empty [draft].txt").write_text("")
    out = invoke("ingest", str(docs), "-c", "work [old]").stdout
    assert out.startswith("Collection work [old] (col_"), out
    assert "empty [draft].txt: empty file" in out, out


def test_help_starts_a_newcomer_with_the_tui():
    out = invoke("--help", columns="100").stdout
    start = out.split("Start with:")[1].split("Options:")[0]
    assert "localreason tui " in start and "localreason demo " in start and "COMMAND --help" in start


@pytest.mark.real_model
def test_the_demo_says_when_it_prepares_the_embedding_model(isolated_home, tmp_path, monkeypatch):
    """A fresh cache folder makes the export happen (copied from the one made for the tests: the notice comes
    before it, and the real OpenVINO embedder then loads it)."""
    import localreason.embed as embed_mod
    from localreason.config import Settings
    from localreason.models import resolve_embedding_model

    if not embed_mod.openvino_available():
        pytest.skip("OpenVINO is not installed")
    settings = Settings(home=isolated_home)
    made = embed_mod.OpenVINOEmbedder(resolve_embedding_model(settings), cache_root=settings.cache_path).prepare()
    exported = []
    monkeypatch.setattr(embed_mod, "export_openvino", lambda info, target: exported.append(target) or
                        shutil.copytree(made, target))  # fmt: skip
    monkeypatch.setenv("LOCALREASON_CACHE_DIR", str(tmp_path / "fresh-cache"))
    monkeypatch.setenv("LOCALREASON_READER", "off")
    result = invoke("demo", "--no-tui")
    assert len(exported) == 1 and exported[0].is_relative_to(tmp_path / "fresh-cache")
    assert "Preparing the embedding model all-MiniLM-L6-v2 for OpenVINO" in result.stderr, result.stderr
    assert "Embeddings run on openvino" in result.stdout
    again = invoke("demo", "--no-tui")
    assert "Preparing" not in again.stderr and len(exported) == 1, "once per machine and model"
