"""The command line, run in-process with the real default embedding model on real files."""

from __future__ import annotations

import json

import pytest

from localreason.cli import main

pytestmark = pytest.mark.real_model


def run(capsys, *args) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "router.md").write_text("# Router manual\n\n## Reset\n\nPress the reset button for ten seconds.\n")
    (root / "notes.txt").write_text("Meeting notes.\n\nThe warranty claim was sent on Monday.\n")
    return root


def test_ingest_library_show_and_json(capsys, folder):
    code, out, err = run(capsys, "ingest", str(folder), "--collection", "work")
    assert code == 0, err
    assert "2 added" in out and "work" in out
    code, out, _ = run(capsys, "library", "--json")
    data = json.loads(out)["data"]
    assert [(c["name"], c["documentCount"]) for c in data["collections"]] == [("work", 2)]
    code, out, _ = run(capsys, "library", "-c", "work", "--json")
    docs = json.loads(out)["data"]["documents"]
    router = next(d for d in docs if d["title"] == "Router manual")
    code, out, _ = run(capsys, "show", router["id"])
    assert code == 0 and "Router manual" in out and "router.md" in out
    code, out, _ = run(capsys, "ingest", str(folder), "-c", "work", "--json")
    assert json.loads(out)["data"]["counts"]["unchanged"] == 2
    code, out, _ = run(capsys, "library")
    assert "work" in out and "Router manual" not in out
    from localreason.embed import openvino_available

    backend = "openvino" if openvino_available() else "torch"
    assert "Vector index: exact" in " ".join(out.split()) and f"Embeddings run on {backend}" in " ".join(out.split())


def test_library_says_which_vector_index_is_in_use(capsys, folder, monkeypatch):
    run(capsys, "ingest", str(folder), "--collection", "work")
    code, out, _ = run(capsys, "library", "--json")
    index = json.loads(out)["data"]["index"]
    assert (index["kind"], index["exact"], index["setting"]) == ("flat", True, "auto")
    monkeypatch.setenv("LOCALREASON_VECTOR_INDEX", "ivf")
    run(capsys, "search", "reset button", "--local")  # opening the index converts and publishes it
    code, out, _ = run(capsys, "library")
    text = " ".join(out.split())
    assert code == 0 and "Vector index: IVF, approximate" in text and "set by vector_index = ivf" in text
    index = json.loads(run(capsys, "library", "--json")[1])["data"]["index"]
    assert (index["kind"], index["exact"], index["lists"]) == ("ivf", False, 256)


def test_failures_give_exit_code_1_and_reasons_on_stdout(capsys, folder):
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    code, out, _ = run(capsys, "ingest", str(folder), str(folder / "nope.md"))
    assert code == 1
    assert "broken.pdf: corrupt or unreadable PDF" in out
    assert "nope.md: no such file or folder" in out


@pytest.mark.parametrize("args, code, words", [
    (["show", "doc_bad"], 2, "not a valid document id"),
    (["show", "doc_aaaaaaaaaaaaaaaa"], 3, "No document"),
    (["show", "hello"], 2, "not a valid id"),
    (["remove", "nosuchcollection", "--yes"], 3, "No collection"),
    (["library", "-c", "missing"], 3, "No collection"),
    (["ingest"], 2, "Missing argument"),
    (["ingest", ".", "-c", "   "], 2, "collection name is empty"),
])  # fmt: skip
def test_errors_go_to_stderr_with_exit_codes(capsys, args, code, words):
    got, out, err = run(capsys, *args)
    assert got == code
    assert words in err and out == ""


def test_remove_and_sync(capsys, folder):
    run(capsys, "ingest", str(folder), "-c", "work")
    (folder / "notes.txt").unlink()
    code, out, _ = run(capsys, "sync", "--json")
    assert json.loads(out)["data"]["counts"]["removed"] == 1
    code, out, _ = run(capsys, "library", "-c", "work", "--json")
    [doc] = json.loads(out)["data"]["documents"]
    code, out, err = run(capsys, "remove", doc["id"], "--yes")
    assert code == 0 and "Removed document Router manual" in out
    said = " ".join(err.split())
    assert "left out from now on" in said and f"/router.md in {folder}" in said and "ingest the file by name" in said
    code, out, _ = run(capsys, "sync", "--json")
    assert json.loads(out)["data"]["counts"]["added"] == 0, "the removed document does not come back"
    code, out, _ = run(capsys, "remove", "work", "--yes", "--json")
    assert json.loads(out)["data"]["removed"] == "collection"


def test_remove_asks_on_stderr_so_that_json_stays_json(capsys, folder, monkeypatch):
    """`localreason remove work --json | jq .` in a terminal: the question went to stdout, into the pipe (the
    command seemed to hang), and the JSON after it did not parse."""
    import io
    import types

    import localreason.cli.library as cli_library

    run(capsys, "ingest", str(folder), "-c", "work")
    monkeypatch.setattr(cli_library, "sys", types.SimpleNamespace(stdin=types.SimpleNamespace(isatty=lambda: True)))
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, err = run(capsys, "remove", "work", "--json")
    assert code == 0 and json.loads(out)["data"]["removed"] == "collection"
    assert "Remove 'work'" in err


def test_models_command_reports_a_corrupt_gguf(capsys, tmp_path, monkeypatch):
    code, out, _ = run(capsys, "models")
    assert code == 0 and "all-MiniLM-L6-v2" in out and "SmolLM2" in out
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a model at all" * 100)
    monkeypatch.setenv("LOCALREASON_GENERATION_MODEL", str(bad))
    code, out, _ = run(capsys, "models")
    assert code == 4 and "not a GGUF model file" in out and str(bad) in out


def test_missing_embedding_model_is_a_clear_error(capsys, folder, monkeypatch):
    monkeypatch.setenv("LOCALREASON_EMBEDDING_MODEL", "no-such-model")
    code, out, err = run(capsys, "ingest", str(folder))
    assert code == 4
    assert "Embedding model 'no-such-model' not found" in err and "models" in err


def test_demo_ingests_the_samples(capsys, isolated_home):
    code, out, err = run(capsys, "demo", "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    titles = {d["title"] for d in data["documents"]}
    assert {"Amazon rainforest", "Apollo program", "Black Death", "Errors and Exceptions"} <= titles
    assert any(t.startswith("General Python FAQ") for t in titles)
    assert data["ingest"]["counts"]["failed"] == 0
    assert (isolated_home / "demo" / "library.sqlite3").is_file()
    assert not (isolated_home / "library.sqlite3").exists(), "the demo never touches the user's library"
    code, out, _ = run(capsys, "demo", "--json")
    assert json.loads(out)["data"]["ingest"]["counts"]["unchanged"] == 5
