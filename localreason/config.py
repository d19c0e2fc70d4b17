"""Settings: defaults, then ``config.toml`` in the data home, then ``LOCALREASON_*`` variables.

Nothing here touches the disk at import; directories are created when first needed.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

from .errors import ValidationError

ANSWER_RERANK_MODES = ("likelihood", "off")
"""``answer_rerank``'s values (reason/rerank.py)."""

HOME_ENV = "LOCALREASON_HOME"
"""Moves all of a user's data (the library, its settings file, caches, logs)."""
API_KEY_ENV = "LOCALREASON_API_KEY"
"""The REST server's API key (a client sends it as ``Authorization: API-Key ...``); unset: loopback only."""
HANDOFF_ENV = "LOCALREASON_HANDOFF"
"""``0``/``off`` stops the CLI from handing a question to a running ``localreason serve`` of the same library."""
DEBUG_ENV = "LOCALREASON_DEBUG"
"""Set: the CLI shows the traceback of an unexpected error."""
TUI_TRACE_ENV = "LOCALREASON_TUI_TRACE"
"""A file the TUI appends its timing trace to (scripts' TUI benchmark reads it)."""

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
DEFAULT_GENERATION_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def default_home() -> Path:
    """The per-user data directory (``LOCALREASON_HOME`` overrides it)."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("localreason", appauthor=False))


@dataclass(frozen=True)
class Settings:
    home: Path
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    """A sentence-transformers folder: a path, a folder name under a models directory, or the default name."""
    generation_model: str = DEFAULT_GENERATION_MODEL
    """A GGUF file: a path, a file name under a models directory, or the default name."""
    models_dir: Path | None = None
    """An extra directory searched first for model names."""
    chunk_tokens: int = 200
    """Target size of a paragraph-level chunk, in cl100k_base tokens."""
    chunk_overlap: int = 30
    """Tokens shared by consecutive chunks of one section."""
    section_max_tokens: int = 2000
    """Sections longer than this (or documents without headings) are split into parts at block boundaries."""
    max_file_mb: float = 50.0
    """Files larger than this are rejected with a message instead of being read."""
    max_parse_seconds: float = 120.0
    """Parsing and chunking one file may take this long; a file that takes longer is skipped as failed."""
    max_parse_memory_mb: int = 2048
    """Memory one file may take while it is parsed, beyond the parser's own (0: no limit); a file that needs
    more fails alone."""
    max_unpacked_mb: float = 200.0
    """A compressed document (DOCX) may unpack to at most this much: a decompression bomb fails alone."""
    embed_batch_size: int = 32
    embedding_backend: str = "auto"
    """How the embedding model runs: ``openvino`` (the same model exported once to OpenVINO, about 2-3x faster
    on CPU, no torch import), ``torch`` (sentence-transformers), or ``auto`` (OpenVINO when it is installed and
    the model can be exported, else torch). Both make interchangeable vectors (docs/benchmarks.md)."""
    threads: int = 0
    """CPU threads for the models (llama.cpp and OpenVINO); 0: every core this process may use. On a machine
    shared with other busy programs, fewer threads than cores is faster (docs/benchmarks.md, "Threads")."""
    cache_dir: Path | None = None
    """Where derived files are kept (the exported OpenVINO model); default: the per-user cache folder."""
    vector_index: str = "auto"
    """The vector index: ``flat`` (exact search), ``ivf`` (inverted lists: approximate, for large libraries),
    or ``auto`` (flat below IVF_FROM paragraph chunks, ivf from there; see store/vectors.py)."""
    answer_budget: int = 1000
    """Tokens of evidence gathered for one answer (the spec's ``maxTokens``), unless a request gives its own.
    Its sentences are ranked; the model reads the few it may quote. Larger ranks more passages."""
    answer_style: str = "extract"
    """``extract``: statement text is a run of words of its quotation (right for tiny models); ``free``: bounded free text."""
    answer_quotes: str = "auto"
    """How many best-ranked quotations lead every answer: ``auto`` (the best one, and the next ones, up to
    3, only while the ranking rates them close to it; see quotes.lead_count) or a fixed number 1-5. An
    answer the gate finds on the topic but not clearly answering quotes only the closest sentence."""

    answer_rerank: str = "off"
    """``likelihood``: before it writes, the model reads the four best-ranked sentences with the question and
    re-orders them by how likely it finds the question after each (reason/rerank.py; 1.7 s more at p50 on 2
    cores); ``off`` (default): the retrieval ranking's order stands. With the packaged 135M model the
    re-ordering gained too little to pay for its time (docs/benchmarks.md); a larger GGUF may do better."""

    reader: str = "auto"
    """``auto``: the reader trained for this project (localreason/models/reader, a small cross-encoder on
    OpenVINO) re-orders the best-ranked sentences and tells the relevance gate whether the best one answers;
    when it cannot load, today's ranking is used with a notice. ``off``: the ranking of retrieval features
    alone (quotes.WEIGHTS) and its gate."""

    @property
    def lead_quotes(self) -> int | None:
        """``answer_quotes`` as a number, None for auto (reason's ``lead_quotes``)."""
        return None if self.answer_quotes == "auto" else int(self.answer_quotes)

    @property
    def cpu_threads(self) -> int:
        """``threads``, or the cores this process may run on."""
        if self.threads > 0:
            return self.threads
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except (AttributeError, OSError):
            return max(1, os.cpu_count() or 1)

    @property
    def cache_path(self) -> Path:
        """``cache_dir`` or the per-user cache folder (``LOCALREASON_CACHE_DIR`` overrides it)."""
        if self.cache_dir is not None:
            return self.cache_dir
        from platformdirs import user_cache_dir

        return Path(user_cache_dir("localreason", appauthor=False))

    @property
    def db_path(self) -> Path:
        return self.home / "library.sqlite3"

    @property
    def vectors_path(self) -> Path:
        return self.home / "vectors.faiss"

    @property
    def lock_path(self) -> Path:
        """The writer lock: one ingest, sync, remove or reindex at a time across processes."""
        return self.home / "write.lock"

    @property
    def config_path(self) -> Path:
        return self.home / "config.toml"

    def validate(self) -> "Settings":
        if self.chunk_tokens < 16:
            raise ValidationError(f"chunk_tokens must be at least 16 (got {self.chunk_tokens}).")
        if not 0 <= self.chunk_overlap < self.chunk_tokens // 2:
            raise ValidationError(
                f"chunk_overlap must be between 0 and half of chunk_tokens (got {self.chunk_overlap})."
            )
        if self.section_max_tokens < self.chunk_tokens:
            raise ValidationError("section_max_tokens must be at least chunk_tokens.")
        if self.answer_quotes != "auto" and self.answer_quotes not in ("1", "2", "3", "4", "5"):
            raise ValidationError(f"answer_quotes must be 'auto' or a number from 1 to 5 (got {self.answer_quotes!r}).",
                                  hint="Fix answer_quotes in config.toml or LOCALREASON_ANSWER_QUOTES.")
        if self.answer_style not in ("extract", "free"):
            raise ValidationError(f"answer_style must be 'extract' or 'free' (got {self.answer_style!r}).")
        for name in ("max_file_mb", "max_parse_seconds", "max_unpacked_mb"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValidationError(f"{name} must be a positive number (got {value!r}).",
                                      hint=f"Fix {name} in config.toml or LOCALREASON_{name.upper()}.")
        if self.max_parse_memory_mb < 0:
            raise ValidationError(f"max_parse_memory_mb must be 0 (no limit) or a positive number of MB "
                                  f"(got {self.max_parse_memory_mb}).", hint="Fix it in config.toml or the environment.")
        if self.answer_budget < 0:
            raise ValidationError(f"answer_budget must be 0 or a positive number of tokens (got {self.answer_budget}).",
                                  hint="Fix answer_budget in config.toml or LOCALREASON_ANSWER_BUDGET.")
        for name, allowed in (("embedding_backend", ("auto", "openvino", "torch")),
                              ("answer_rerank", ANSWER_RERANK_MODES), ("reader", ("auto", "off")),
                              ("vector_index", ("auto", "flat", "ivf"))):  # fmt: skip
            if getattr(self, name) not in allowed:
                raise ValidationError(f"{name} must be one of {', '.join(allowed)} (got {getattr(self, name)!r}).",
                                      hint=f"Fix {name} in config.toml or LOCALREASON_{name.upper()}.")
        if self.threads < 0:
            raise ValidationError(f"threads must be 0 (every core) or a positive number (got {self.threads}).",
                                  hint="Fix threads in config.toml or LOCALREASON_THREADS.")
        if self.embed_batch_size < 1:
            raise ValidationError(f"embed_batch_size must be at least 1 (got {self.embed_batch_size}).",
                                  hint="Fix embed_batch_size in config.toml or LOCALREASON_EMBED_BATCH_SIZE.")
        return self


def load_settings(home: Path | str | None = None, **overrides) -> Settings:
    """Build the settings: defaults < config.toml < environment < explicit ``overrides``."""
    home_path = Path(home).expanduser() if home is not None else default_home()
    values: dict[str, object] = {}
    cfg = home_path / "config.toml"
    if cfg.is_file():
        try:
            values.update(tomllib.loads(cfg.read_text(encoding="utf-8")))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValidationError(
                f"The configuration file {cfg} is not valid TOML: {exc}",
                hint="Fix or delete the file; `localreason config` shows the settings in force.",
            ) from exc
    known = {f.name: f for f in fields(Settings) if f.name != "home"}
    unknown = set(values) - set(known)
    if unknown:
        raise ValidationError(
            f"Unknown setting(s) in {cfg}: {', '.join(sorted(unknown))}.",
            hint=f"Known settings: {', '.join(sorted(known))}.",
        )
    for name in known:
        env = os.environ.get(f"LOCALREASON_{name.upper()}")
        if env not in (None, ""):
            values[name] = env
    values.update({k: v for k, v in overrides.items() if v is not None})
    settings = Settings(home=home_path)
    typed = {}
    for name, value in values.items():
        typed[name] = _coerce(name, value, known[name].type)
    return replace(settings, **typed).validate()


def _coerce(name: str, value: object, annotation: object):
    text = str(annotation)
    try:
        if "Path" in text:
            return Path(str(value)).expanduser()
        if text.startswith("int"):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return int(value)
        if text.startswith("float"):
            return float(value)
        return str(value)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"Setting {name} has the value {value!r}, which is not a valid {text}.",
            hint=f"Check LOCALREASON_{name.upper()} and the config file.",
        ) from exc
