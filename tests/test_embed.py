"""The embedding backends: OpenVINO agrees with torch, is chosen by the setting, and fails over honestly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from localreason.config import Settings, load_settings
from localreason.embed import (OpenVINOEmbedder, Pipeline, SentenceTransformerEmbedder, NotExportable, make_embedder,
                               openvino_available)  # fmt: skip
from localreason.errors import ModelError, ValidationError
from localreason.models import EmbeddingModelInfo, resolve_embedding_model

pytestmark = pytest.mark.skipif(not openvino_available(), reason="OpenVINO is not installed")

TEXTS = [
    "Where did the Black Death originate?",
    "a",
    "",
    "The inverter's warranty lasts ten years; lightning damage voids it. " * 40,  # beyond the 256-token limit
    "Ünïcödé, emoji 🚀 and code: shutil.copytree(src, dst)",
    "RFC 7231 section 6.5.1 says 400 Bad Request.",
]


@pytest.fixture(scope="module")
def info() -> EmbeddingModelInfo:
    return resolve_embedding_model(Settings(home=Path("/nonexistent")))


@pytest.fixture(scope="module")
def cache_root() -> Path:
    return Settings(home=Path("/nonexistent")).cache_path


@pytest.mark.real_model
def test_openvino_vectors_agree_with_torch_including_padding_and_truncation(info, cache_root):
    torch_vecs = SentenceTransformerEmbedder(info).embed(TEXTS)
    ov = OpenVINOEmbedder(info, batch_size=4, cache_root=cache_root)  # batches mix lengths: padding is exercised
    ov_vecs = ov.embed(TEXTS)
    assert ov_vecs.shape == torch_vecs.shape == (len(TEXTS), 384) and ov_vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(ov_vecs, axis=1), 1.0, atol=1e-5)
    cos = np.sum(ov_vecs * torch_vecs, axis=1)
    assert cos.min() > 0.9995, cos
    # Batching must not change a text's vector (order, padding): one at a time gives the same.
    alone = np.stack([ov.embed([t])[0] for t in TEXTS])
    assert np.sum(alone * ov_vecs, axis=1).min() > 0.9995
    assert ov.embed([]).shape == (0, 384)


@pytest.mark.real_model
def test_the_export_is_made_once_and_reused(info, tmp_path):
    told = []
    first = OpenVINOEmbedder(info, cache_root=tmp_path, notice=told.append)
    first.embed(["x"])
    exported = list((tmp_path / "openvino").iterdir())
    assert len(exported) == 1 and (exported[0] / "model.xml").is_file() and len(told) == 1
    record = json.loads((exported[0] / "export.json").read_text())
    assert record["fingerprint"] == info.fingerprint and record["agreement"] > 0.999
    stamp = (exported[0] / "model.xml").stat().st_mtime_ns
    again = OpenVINOEmbedder(info, cache_root=tmp_path, notice=told.append)
    again.embed(["x"])
    assert len(told) == 1 and (exported[0] / "model.xml").stat().st_mtime_ns == stamp
    assert not [p for p in (tmp_path / "openvino").iterdir() if p.name.startswith(".")], "a temporary folder was left"


@pytest.mark.real_model
def test_a_search_process_with_the_export_imports_no_torch(info, cache_root, tmp_path):
    OpenVINOEmbedder(info, cache_root=cache_root).embed(["x"])  # the export exists
    code = (
        "import sys\n"
        "from localreason.library import Library\n"
        f"lib = Library({str(tmp_path / 'home')!r})\n"
        "v = lib.embedder.embed(['hello world'])\n"
        "assert v.shape == (1, 384)\n"
        "print(lib.embedder.backend, sorted(m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules))\n"
        "print(sys.modules.get('openvino_telemetry') is None, 'openvino.tools.ovc.telemetry_stub' in sys.modules)\n"
    )
    env = {**__import__("os").environ, "LOCALREASON_CACHE_DIR": str(cache_root)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["openvino", "[]", "True", "True"]  # and OpenVINO's telemetry is the no-op stub


def _folder(tmp_path: Path, modules: list[dict], pooling: dict | None = None, tokenizer: bool = True) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"hidden_size": 8}))
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling or {"pooling_mode_mean_tokens": True,
                                                                            "word_embedding_dimension": 8}))
    if tokenizer:
        (folder / "tokenizer.json").write_text("{}")
    return folder


ST = "sentence_transformers.models."


@pytest.mark.parametrize("modules, pooling, tokenizer, reason", [
    ([{"type": ST + "Transformer", "path": ""}, {"type": ST + "Pooling", "path": "1_Pooling"},
      {"type": ST + "Dense", "path": "2_Dense"}], None, True, "modules"),
    ([{"type": ST + "Transformer", "path": ""}, {"type": ST + "Pooling", "path": "1_Pooling"}],
     {"pooling_mode_mean_sqrt_len_tokens": True}, True, "pooling"),
    ([{"type": ST + "Transformer", "path": ""}, {"type": ST + "Pooling", "path": "1_Pooling"}], None, False,
     "tokenizer.json"),
])  # fmt: skip
def test_models_of_another_shape_run_on_torch_under_auto_and_are_refused_under_openvino(
        tmp_path, modules, pooling, tokenizer, reason):  # fmt: skip
    folder = _folder(tmp_path, modules, pooling, tokenizer)
    with pytest.raises(NotExportable, match=reason):
        Pipeline(folder)
    info = EmbeddingModelInfo("custom", folder, "f" * 24)
    assert make_embedder(info, "auto", cache_root=tmp_path).backend == "torch"
    assert make_embedder(info, "torch", cache_root=tmp_path).backend == "torch"
    with pytest.raises(ModelError, match="cannot run on OpenVINO") as err:
        make_embedder(info, "openvino", cache_root=tmp_path)
    assert "embedding_backend" in err.value.hint


def test_a_supported_folder_is_read_like_sentence_transformers_would(tmp_path):
    folder = _folder(tmp_path, [{"type": ST + "Transformer", "path": ""}, {"type": ST + "Pooling", "path": "1_Pooling"},
                                {"type": ST + "Normalize", "path": "2_Normalize"}])  # fmt: skip
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": True}))
    p = Pipeline(folder)
    assert (p.pooling, p.max_length, p.lower, p.dim) == ("mean", 128, True, 8)


@pytest.mark.real_model
def test_an_export_that_cannot_be_saved_falls_back_to_torch_with_a_notice_under_auto(info, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    told = []
    emb = make_embedder(info, "auto", cache_root=blocker, notice=told.append)
    vecs = emb.embed(["hello"])
    assert emb.backend == "torch" and vecs.shape == (1, 384)
    assert any("using torch instead" in t for t in told)
    strict = make_embedder(info, "openvino", cache_root=blocker)
    with pytest.raises(ModelError, match="Could not save the OpenVINO export") as err:
        strict.embed(["hello"])
    assert "cache_dir" in err.value.hint


def test_backend_and_index_settings_are_checked(isolated_home, monkeypatch):
    monkeypatch.setenv("LOCALREASON_EMBEDDING_BACKEND", "cuda")
    with pytest.raises(ValidationError, match="embedding_backend must be one of auto, openvino, torch"):
        load_settings()
    monkeypatch.setenv("LOCALREASON_EMBEDDING_BACKEND", "torch")
    monkeypatch.setenv("LOCALREASON_VECTOR_INDEX", "hnsw")
    with pytest.raises(ValidationError, match="vector_index must be one of"):
        load_settings()
    monkeypatch.setenv("LOCALREASON_VECTOR_INDEX", "ivf")
    monkeypatch.setenv("LOCALREASON_CACHE_DIR", str(isolated_home / "cache"))
    s = load_settings()
    assert (s.embedding_backend, s.vector_index, s.cache_path) == ("torch", "ivf", isolated_home / "cache")


def test_threads_setting_reaches_both_models(isolated_home, monkeypatch):
    from localreason.library import Library

    monkeypatch.setenv("LOCALREASON_THREADS", "-1")
    with pytest.raises(ValidationError, match="threads must be 0"):
        load_settings()
    monkeypatch.setenv("LOCALREASON_THREADS", "0")
    assert load_settings().cpu_threads >= 1
    monkeypatch.setenv("LOCALREASON_THREADS", "1")
    lib = Library()
    assert lib.generator.threads == 1 and not lib.generator.loaded  # read from the setting, nothing loaded
    assert getattr(lib.embedder, "_inner", lib.embedder).threads == 1
    lib.close()


@pytest.mark.real_model
def test_an_export_that_disagrees_with_torch_is_refused_remembered_and_auto_falls_back(info, tmp_path, monkeypatch):
    import localreason.embed as embed_mod

    monkeypatch.setattr(embed_mod, "EXPORT_AGREEMENT", 1.01)  # no export can agree this well
    told = []
    auto = make_embedder(info, "auto", cache_root=tmp_path, notice=told.append)
    assert auto.embed(["hello"]).shape == (1, 384) and auto.backend == "torch"
    assert any("agree with torch's only to cosine" in t and "using torch instead" in t for t in told)
    failed = list((tmp_path / "openvino").glob("*.failed"))
    assert len(failed) == 1 and not [p for p in (tmp_path / "openvino").iterdir() if p.is_dir()]
    monkeypatch.setattr(embed_mod, "export_openvino", lambda *a: pytest.fail("a remembered failure was retried"))
    strict = make_embedder(info, "openvino", cache_root=tmp_path)
    with pytest.raises(ModelError, match="could not be exported to OpenVINO before") as err:
        strict.embed(["hello"])
    assert str(failed[0]) in err.value.hint
