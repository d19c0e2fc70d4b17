"""Shared fixtures: every test gets its own LOCALREASON_HOME; fakes for speed, real models where it matters."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from localreason.config import load_settings
from localreason.library import Library


class FakeEmbedder:
    """Deterministic bag-of-words vectors: texts sharing words get similar vectors. Counts its work."""

    name = "fake-words"
    fingerprint = "fake-words-v1"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
            out[i, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """No test touches the real per-user library or another test's."""
    home = tmp_path / "home"
    monkeypatch.setenv("LOCALREASON_HOME", str(home))
    for var in ("LOCALREASON_EMBEDDING_MODEL", "LOCALREASON_GENERATION_MODEL", "LOCALREASON_CHUNK_TOKENS",
                "LOCALREASON_CHUNK_OVERLAP", "LOCALREASON_MAX_FILE_MB", "LOCALREASON_MODELS_DIR"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def fake_embedder():
    return FakeEmbedder()


@pytest.fixture
def lib(isolated_home, fake_embedder):
    library = Library(settings=load_settings(isolated_home), embedder=fake_embedder)
    yield library
    library.close()


@pytest.fixture(scope="session")
def real_embedder():
    """The default all-MiniLM-L6-v2 from its pip package, loaded once for the whole run."""
    from localreason.config import Settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.models import resolve_embedding_model

    info = resolve_embedding_model(Settings(home=__import__("pathlib").Path("/nonexistent")))
    emb = SentenceTransformerEmbedder(info)
    emb.embed(["warm up"])
    return emb
