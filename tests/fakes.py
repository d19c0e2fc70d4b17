"""The fakes tests run the library with: a bag-of-words embedder, a scripted generator, a generator that
waits to be cancelled, and the helpers that read a request's grammar as an obedient model would.

conftest.py makes fixtures of them; test modules and the helper programs tests start (lib_proc.py,
fake_cli.py) import them from here.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time

import numpy as np


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


class WaitsForCancel(FakeGenerator):
    """Writes until the request is cancelled, as llama.cpp on a long answer checks between tokens.

    ``started`` is set when the model call begins, ``cancelled`` when it saw the cancel Event (it then raises
    Cancelled). Not cancelled within ``hold`` seconds, it answers as FakeGenerator does.
    """

    def __init__(self, hold: float = 10.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hold = hold
        self.started, self.cancelled = threading.Event(), threading.Event()

    def complete(self, messages, grammar, max_output, prefix="", cancel=None):
        from localreason.errors import Cancelled

        self.started.set()
        if cancel is None:
            time.sleep(self.hold)
        elif cancel.wait(self.hold):
            self.cancelled.set()
            raise Cancelled()
        return super().complete(messages, grammar, max_output, prefix, cancel)


def grammar_statements(grammar: str) -> list[dict]:
    """The statement objects a request's grammar allows, in the order offered."""
    out = []
    for line in grammar.splitlines():
        if line.startswith("stmt") and " ::= " in line and not line.startswith("stmt ::="):
            out.append(json.loads(json.loads(line.split(" ::= ", 1)[1])))
    return out


def grammar_choice(grammar: str, *indices: int, limitations: list[str] | None = None) -> str:
    """A reply made of the offered statements at ``indices`` (what an obedient model could write)."""
    allowed = grammar_statements(grammar)
    return json.dumps({"statements": [allowed[i] for i in indices], "limitations": limitations or []})


def grammar_lead(grammar: str) -> list[int]:
    """Indices of the statements the grammar's root requires (the lead), in order."""
    root = next(line for line in grammar.splitlines() if line.startswith("root ::="))
    return [int(i) for i in re.findall(r"\bstmt(\d+)\b", root)]
