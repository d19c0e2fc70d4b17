"""Settings are described once (config.SETTINGS, config.ENVIRONMENT): loading, validation and
`localreason config` follow that description, and every variable the package reads is in it."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from localreason import config
from localreason.cli import main
from localreason.config import BY_NAME, ENVIRONMENT, SETTINGS, Settings, load_settings
from localreason.errors import ValidationError

PACKAGE = Path(config.__file__).resolve().parent

BAD = {
    "chunk_tokens": ("10", "chunk_tokens must be at least 16 (got 10)."),
    "chunk_overlap": ("150", "chunk_overlap must be between 0 and half of chunk_tokens (got 150)."),
    "section_max_tokens": ("100", "section_max_tokens must be at least chunk_tokens (got 100)."),
    "max_file_mb": ("0", "max_file_mb must be a positive number (got 0.0)."),
    "max_parse_seconds": ("nan", "max_parse_seconds must be a positive number (got nan)."),
    "max_parse_memory_mb": ("-1", "max_parse_memory_mb must be 0 (no limit) or a positive number of MB (got -1)."),
    "max_unpacked_mb": ("inf", "max_unpacked_mb must be a positive number (got inf)."),
    "embed_batch_size": ("0", "embed_batch_size must be at least 1 (got 0)."),
    "embedding_backend": ("cuda", "embedding_backend must be one of auto, openvino, torch (got 'cuda')."),
    "threads": ("-2", "threads must be 0 (every core) or a positive number (got -2)."),
    "store": ("mysql://db/library", "store must be 'local' or a postgresql:// URL (got 'mysql://db/library')."),
    "vector_index": ("hnsw", "vector_index must be one of auto, flat, ivf (got 'hnsw')."),
    "answer_budget": ("-1", "answer_budget must be 0 or a positive number of tokens (got -1)."),
    "answer_style": ("poetry", "answer_style must be 'extract' or 'free' (got 'poetry')."),
    "answer_quotes": ("6", "answer_quotes must be 'auto' or a number from 1 to 5 (got '6')."),
    "answer_rerank": ("yes", "answer_rerank must be one of likelihood, off (got 'yes')."),
    "reader": ("on", "reader must be one of auto, off (got 'on')."),
    "search_reread": ("yes", "search_reread must be one of auto, off (got 'yes')."),
    "tui_watch": ("yes", "tui_watch must be one of on, off (got 'yes')."),
    "watch_mode": ("inotify", "watch_mode must be one of auto, poll (got 'inotify')."),
    "ocr": ("tesseract", "ocr must be one of auto, off (got 'tesseract')."),
    "ocr_dpi": ("1200", "ocr_dpi must be between 72 and 600 (got 1200.0)."),
    "ocr_page_seconds": ("0", "ocr_page_seconds must be a positive number (got 0.0)."),
    "ocr_memory_mb": ("-5", "ocr_memory_mb must be 0 (no limit) or a positive number of MB (got -5)."),
    "ocr_min_confidence": ("1.5", "ocr_min_confidence must be between 0 and 1 (got 1.5)."),
    "max_image_megapixels": ("-1", "max_image_megapixels must be a positive number (got -1.0)."),
}
"""A value each checked setting refuses, and the message it is refused with."""


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_every_settings_field_is_described_once_with_its_variable_default_and_help():
    names = [f.name for f in dataclasses.fields(Settings)]
    assert names[0] == "home" and [s.name for s in SETTINGS] == names[1:]
    defaults = Settings(home=Path("/x"))
    for s in SETTINGS:
        assert s.env == "LOCALREASON_" + s.name.upper()
        assert s.default == getattr(defaults, s.name)
        assert s.help and "\n" not in s.help and s.allowed_words
        assert s.kind in (int, float, str, Path)
    assert defaults.validate() is defaults, "every default is allowed by its own description"


def test_every_checked_setting_has_a_refused_value_here():
    assert {s.name for s in SETTINGS if s.allowed is not None} == set(BAD)


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_refused_value_names_the_setting_and_where_to_fix_it(isolated_home, monkeypatch, name):
    value, message = BAD[name]
    monkeypatch.setenv(BY_NAME[name].env, value)
    with pytest.raises(ValidationError) as err:
        load_settings()
    assert err.value.message == message
    assert err.value.hint == f"Fix {name} in config.toml or {BY_NAME[name].env}."


def test_a_value_of_the_wrong_type_is_refused_with_its_type(isolated_home, monkeypatch):
    monkeypatch.setenv("LOCALREASON_MAX_FILE_MB", "lots")
    with pytest.raises(ValidationError, match="Setting max_file_mb has the value 'lots', which is not a valid "
                                              "float") as err:  # fmt: skip
        load_settings()
    assert "LOCALREASON_MAX_FILE_MB" in err.value.hint
    monkeypatch.delenv("LOCALREASON_MAX_FILE_MB")
    with pytest.raises(ValidationError, match="not a valid int"):
        load_settings(chunk_tokens=2.5)


def test_sources_say_where_each_value_came_from(isolated_home, monkeypatch):
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text('chunk_tokens = 300\nreader = "off"\n')
    monkeypatch.setenv("LOCALREASON_READER", "auto")
    settings, sources = config.settings_and_sources(threads=2)
    assert (settings.chunk_tokens, settings.reader, settings.threads) == (300, "auto", 2)
    assert sources == {**{s.name: "default" for s in SETTINGS}, "chunk_tokens": "config.toml",
                       "reader": "LOCALREASON_READER", "threads": "override"}  # fmt: skip
    assert load_settings() == config.settings_and_sources()[0]


def _variables_named_in_the_package() -> set[str]:
    """Every environment variable the package's source reads by a literal name, or names as LOCALREASON_*."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"environ(?:\.get|\.setdefault)?[(\[]\s*[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']", source))
        found |= set(re.findall(r"getenv\(\s*[\"']([A-Za-z_][A-Za-z0-9_]*)[\"']", source))
        found |= set(re.findall(r"\bLOCALREASON_[A-Z][A-Z0-9_]*\b", source))
    return found


def test_every_variable_the_package_reads_is_a_setting_or_listed_beside_them():
    listed = {s.env for s in SETTINGS} | {v.name for v in ENVIRONMENT}
    named = _variables_named_in_the_package()
    assert {"LOCALREASON_HOME", "LOCALREASON_API_KEY", "LOCALREASON_CACHE_DIR"} <= named, "the scan finds names"
    assert named - listed == set()
    assert len(listed) == len(SETTINGS) + len(ENVIRONMENT), "no variable is described twice"
    for name in ("HOME_ENV", "API_KEY_ENV", "HANDOFF_ENV", "DEBUG_ENV", "TUI_TRACE_ENV"):
        assert getattr(config, name) in {v.name for v in ENVIRONMENT if v.sets is None}


def test_the_vector_index_help_gives_the_size_ivf_starts_at():
    from localreason.store.vectors import IVF_FROM

    assert f"{IVF_FROM:,} paragraph chunks" in BY_NAME["vector_index"].help


def test_config_prints_each_setting_its_source_and_the_environment(capsys, isolated_home, monkeypatch):
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text("chunk_tokens = 300\n")
    monkeypatch.setenv("LOCALREASON_THREADS", "2")
    monkeypatch.setenv("LOCALREASON_API_KEY", "a-secret-that-is-never-shown")
    monkeypatch.setenv("LOCALREASON_HANDOFF", "off")
    code, out, err = run(capsys, "config")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"Settings (file: {isolated_home / 'config.toml'}; environment: LOCALREASON_<NAME>):"
    assert lines[1] == f"  home = {isolated_home}"
    assert "  chunk_tokens = 300  (config.toml)" in lines and "  threads = 2  (LOCALREASON_THREADS)" in lines
    assert "  answer_style = extract" in lines and "  max_file_mb = 50.0" in lines and "  models_dir = None" in lines
    assert all(any(line.startswith(f"  {s.name} = ") for line in lines) for s in SETTINGS)
    assert f"  LOCALREASON_HOME = {isolated_home}" in lines and "  LOCALREASON_HANDOFF = off" in lines
    assert "  LOCALREASON_API_KEY: set (value not shown)" in lines and "  LOCALREASON_DEBUG: not set" in lines
    assert "a-secret" not in out and "HF_HUB_OFFLINE=1" in out


def test_config_json_has_the_values_their_sources_and_the_environment_without_secrets(capsys, isolated_home,
                                                                                     monkeypatch):  # fmt: skip
    monkeypatch.setenv("LOCALREASON_API_KEY", "a-secret-that-is-never-shown")
    monkeypatch.setenv("LOCALREASON_ANSWER_QUOTES", "2")
    code, out, err = run(capsys, "config", "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert list(data["settings"]) == [f.name for f in dataclasses.fields(Settings)]
    assert data["settings"]["home"] == str(isolated_home) and data["settings"]["answer_quotes"] == "2"
    assert data["configFile"] == str(isolated_home / "config.toml")
    assert data["sources"]["answer_quotes"] == "LOCALREASON_ANSWER_QUOTES" and data["sources"]["reader"] == "default"
    env = {row["name"]: row for row in data["environment"]}
    assert env["LOCALREASON_API_KEY"] == {"name": "LOCALREASON_API_KEY", "set": True}
    assert env["LOCALREASON_HOME"]["value"] == str(isolated_home) and env["CI"]["set"] in (True, False)
    assert "a-secret" not in out


def test_config_markdown_describes_every_setting_and_variable_even_with_a_broken_file(capsys, isolated_home):
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text("chunk_tokens = [\n")
    assert run(capsys, "config")[0] != 0, "the settings in force cannot be loaded"
    code, out, err = run(capsys, "config", "--markdown")
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("| `")]
    assert [r.split(" | ")[0] for r in rows] == [f"| `{s.name}`" for s in SETTINGS] + \
        [f"| `{v.name}`" for v in ENVIRONMENT]  # fmt: skip
    assert "| `chunk_tokens` | `LOCALREASON_CHUNK_TOKENS` | 200 | at least 16 |" in out
    assert "| `max_file_mb` | `LOCALREASON_MAX_FILE_MB` | 50 | a positive number |" in out
    assert all(r.count(" | ") == (4 if i < len(SETTINGS) else 1) for i, r in enumerate(rows)), "no cell breaks a row"


def test_the_configuration_page_shows_the_settings_as_they_are_described():
    """docs/configuration.md's tables are what ``localreason config --markdown`` prints, so they cannot drift."""
    from pathlib import Path

    from localreason.config import markdown_reference

    readme = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    start = readme.index("<!-- generated: localreason config --markdown -->\n") + len(
        "<!-- generated: localreason config --markdown -->\n")
    shown = readme[start:readme.index("<!-- end generated -->", start)]
    assert shown.strip() == markdown_reference().strip(), \
        "run `localreason config --markdown` into docs/configuration.md"
