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
                "LOCALREASON_CHUNK_OVERLAP", "LOCALREASON_MAX_FILE_MB", "LOCALREASON_MODELS_DIR",
                "LOCALREASON_ANSWER_QUOTES", "LOCALREASON_ANSWER_BUDGET", "LOCALREASON_API_KEY",
                "LOCALREASON_EMBEDDING_BACKEND", "LOCALREASON_VECTOR_INDEX", "LOCALREASON_THREADS",
                "LOCALREASON_HANDOFF", "LOCALREASON_ANSWER_RERANK", "LOCALREASON_READER"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def fake_embedder():
    return FakeEmbedder()


@pytest.fixture
def lib(isolated_home, fake_embedder):
    """A library on the fake embedder; its answers are ranked without the trained reader (tests/test_reader.py
    gives it a fake or the real one)."""
    library = Library(settings=load_settings(isolated_home, reader="off"), embedder=fake_embedder)
    yield library
    library.close()


@pytest.fixture(scope="session")
def real_embedder():
    """The default all-MiniLM-L6-v2 from its pip package on the default backend, loaded once for the whole run."""
    from localreason.config import Settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model

    settings = Settings(home=__import__("pathlib").Path("/nonexistent"))
    emb = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    emb.embed(["warm up"])
    return emb


class FakeGenerator:
    """A generator with scripted replies. By default it quotes the first quotation the grammar offers.

    ``reply`` may be a string or a function (messages, grammar) -> string. Counts its calls.
    """

    name = "fake-gguf"

    def __init__(self, reply=None, context_size: int = 8192, error: Exception | None = None) -> None:
        self.reply = reply
        self.context_size = context_size
        self.error = error
        self.calls = 0
        self.last: tuple | None = None

    def count_tokens(self, text: str) -> int:
        from localreason.tokens import count_tokens

        return count_tokens(text)

    def prompt_tokens(self, messages: list[dict]) -> int:
        return sum(self.count_tokens(m["content"]) + 4 for m in messages)

    def complete(self, messages, grammar, max_output, prefix="", cancel=None):
        from localreason.generate import Completion

        self.calls += 1
        self.last = (messages, grammar, max_output)
        self.last_prefix = prefix
        if self.error is not None:
            raise self.error
        text = self.reply(messages, grammar) if callable(self.reply) else self.reply
        if text is None:  # what an obedient model adds to the forced opening: nothing more
            text = prefix + '],"limitations":[]}' if prefix else grammar_choice(grammar, *grammar_lead(grammar))
        return Completion(text, self.prompt_tokens(messages), self.count_tokens(text), 0.01, 0.01)


def grammar_statements(grammar: str) -> list[dict]:
    """The statement objects a request's grammar allows, in the order offered."""
    import json

    out = []
    for line in grammar.splitlines():
        if line.startswith("stmt") and " ::= " in line and not line.startswith("stmt ::="):
            out.append(json.loads(json.loads(line.split(" ::= ", 1)[1])))
    return out


def grammar_choice(grammar: str, *indices: int, limitations: list[str] | None = None) -> str:
    """A reply made of the offered statements at ``indices`` (what an obedient model could write)."""
    import json

    allowed = grammar_statements(grammar)
    return json.dumps({"statements": [allowed[i] for i in indices], "limitations": limitations or []})


def grammar_lead(grammar: str) -> list[int]:
    """Indices of the statements the grammar's root requires (the lead), in order."""
    import re

    root = next(line for line in grammar.splitlines() if line.startswith("root ::="))
    return [int(i) for i in re.findall(r"\bstmt(\d+)\b", root)]
