"""The reader: a small cross-encoder, trained here, that reads a question with one sentence (and the
sentence before it) and estimates the chance that the sentence holds the answer.

It ships inside the package (``localreason/models/reader/``: an OpenVINO IR, its tokenizer and
``reader.json``, with a model card in README.md); scripts/train_reader.py builds its data, trains it
and writes that folder. At ask time it runs on OpenVINO with the ``tokenizers`` library: no torch.

``pair_text`` is the one place that says how a candidate is shown to the model: training and
inference both call it, so they cannot drift apart.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ModelError
from .openvino_runtime import load_openvino

PACKAGED = Path(__file__).resolve().parent / "models" / "reader"
"""Where the trained reader ships."""
READER_MODES = ("auto", "off")
"""The ``reader`` setting: ``auto`` uses the packaged reader when it loads (today's ranking, with a notice,
when it does not); ``off`` never loads it."""
FORMAT = 1
"""The input format (``pair_text``) and output (one logit) a reader folder must declare in reader.json."""
MAX_LENGTH = 128
"""Tokens of question + sentence + context read together; the context is cut first."""
CONTEXT_MARK = " [SEP] "
"""Between the sentence and the sentence before it (the tokenizer reads it as its separator token)."""


def pair_text(sentence: str, previous: str = "") -> str:
    """The second segment the reader reads for a candidate: the sentence, then the one before it (the
    context is last, so that truncation cuts it first)."""
    sentence, previous = " ".join(sentence.split()), " ".join(previous.split())
    return f"{sentence}{CONTEXT_MARK}{previous}" if previous else sentence


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(np.asarray(x, dtype=np.float64), -60, 60)))


def load_tokenizer(folder: Path, max_length: int = MAX_LENGTH):
    """The reader's tokenizer (tokenizers' fast tokenizer), padding off, pairs cut to ``max_length``."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length, strategy="longest_first")
    return tok


def batch_arrays(encoded: list) -> dict[str, np.ndarray]:
    """input_ids, attention_mask and token_type_ids of ``encoded`` (tokenizers Encodings), padded to the longest."""
    width = max(len(e.ids) for e in encoded)
    ids = np.zeros((len(encoded), width), dtype=np.int64)
    mask = np.zeros((len(encoded), width), dtype=np.int64)
    types = np.zeros((len(encoded), width), dtype=np.int64)
    for row, e in enumerate(encoded):
        n = len(e.ids)
        ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@dataclass(frozen=True)
class ReaderInfo:
    folder: Path
    meta: dict

    @property
    def name(self) -> str:
        return str(self.meta.get("name", "localreason-reader"))


def shipped(folder: Path | None = None) -> bool:
    """Whether a reader is in ``folder`` (the package's by default) at all. The weights are committed only once
    they meet the targets of their issue; until then a build has the model card and no weights, and answers are
    ranked without a reader (scripts/train_reader.py makes one locally)."""
    return ((folder or PACKAGED) / "reader.json").is_file()


def read_info(folder: Path = PACKAGED) -> ReaderInfo:
    """The reader folder's description (reader.json), checked; ModelError when it is missing or not ours."""
    meta_path = folder / "reader.json"
    missing = [p.name for p in (meta_path, folder / "model.xml", folder / "model.bin", folder / "tokenizer.json")
               if not p.is_file()]  # fmt: skip
    if missing:
        raise ModelError(f"The reader in {folder} is incomplete ({', '.join(missing)} missing).",
                         hint="Reinstall localreason, or set reader = \"off\" to rank sentences without it.")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"The reader's description {meta_path} cannot be read: {exc}.",
                         hint="Reinstall localreason, or set reader = \"off\".") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ModelError(f"The reader in {folder} has input format {meta.get('format') if isinstance(meta, dict) else '?'};"
                         f" this version reads format {FORMAT}.", hint="Reinstall localreason, or set reader = \"off\".")
    return ReaderInfo(folder, meta)


class Reader:
    """The packaged cross-encoder on OpenVINO: ``logits(question, [(sentence, previous), ...])``. Pairs are read
    in batches of ``batch_size`` of similar lengths, each padded to its longest (most pairs are far shorter than
    MAX_LENGTH, and padding costs as much as text)."""

    def __init__(self, folder: Path = PACKAGED, threads: int = 0, batch_size: int = 8) -> None:
        self.info = read_info(folder)
        self.threads = threads
        self.batch_size = batch_size
        self._parts = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def loaded(self) -> bool:
        return self._parts is not None

    def _load(self):
        with self._lock:
            if self._parts is None:
                try:
                    ov = load_openvino()
                    config = {"INFERENCE_NUM_THREADS": self.threads} if self.threads > 0 else {}
                    compiled = ov.Core().compile_model(str(self.info.folder / "model.xml"), "CPU", config)
                    tok = load_tokenizer(self.info.folder, int(self.info.meta.get("max_length", MAX_LENGTH)))
                except Exception as exc:
                    raise ModelError(f"Could not load the reader from {self.info.folder}: "
                                     f"{exc.__class__.__name__}: {exc}",
                                     hint="Reinstall localreason, or set reader = \"off\".") from exc  # fmt: skip
                inputs = [i.get_any_name() for i in compiled.inputs]
                self._parts = (compiled, tok, inputs, threading.Lock())
            return self._parts

    def logits(self, question: str, candidates: list[tuple[str, str]]) -> np.ndarray:
        """One logit per (sentence, previous sentence): log-odds that the sentence holds the answer."""
        if not candidates:
            return np.zeros(0, dtype=np.float64)
        compiled, tok, inputs, run_lock = self._load()
        q = " ".join(question.split())
        encoded = tok.encode_batch([(q, pair_text(s, p)) for s, p in candidates])
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")
        out = np.zeros(len(candidates), dtype=np.float64)
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            feed = batch_arrays([encoded[i] for i in part])
            try:
                with run_lock:
                    result = compiled({name: feed[name] for name in inputs})[compiled.output(0)]
            except Exception as exc:  # OpenVINO raises RuntimeError for a graph that cannot run these inputs
                raise ModelError(f"The reader failed to run: {exc.__class__.__name__}: {exc}",
                                 hint="Reinstall localreason, or set reader = \"off\".") from exc
            out[part] = np.asarray(result, dtype=np.float64).reshape(len(part), -1)[:, 0]
        return out

    def probabilities(self, question: str, candidates: list[tuple[str, str]]) -> np.ndarray:
        return sigmoid(self.logits(question, candidates))


_SHARED: dict[tuple[str, int], Reader] = {}
_SHARED_LOCK = threading.Lock()


def packaged_reader(threads: int = 0) -> Reader:
    """The packaged reader, one per process and thread count (compiled on first use); ModelError if it cannot
    be read."""
    key = (str(PACKAGED), threads)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = Reader(PACKAGED, threads)
        return _SHARED[key]
