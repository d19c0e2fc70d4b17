"""Generators: chat messages + a GBNF grammar -> one constrained completion.

The protocol has one method so tests can queue replies; the real backend is a
llama.cpp GGUF model (llama-cpp-python), loaded once per process, lazily, with
the settings that make prompt evaluation fast on a CPU (flash attention and a
large batch: ~225 vs ~87 prompt tokens/s measured for SmolLM2-135M on 2 cores).
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .errors import Cancelled, LocalReasonError, ModelError


class GenerationError(LocalReasonError):
    """The model failed while generating, or its output broke the contract."""

    title = "Generation failed"
    exit_code = 6


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    prompt_seconds: float
    """Time to evaluate the prompt (up to the first generated token)."""
    generate_seconds: float


class Generator(Protocol):
    name: str
    context_size: int

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own tokenizer."""
        ...

    def prompt_tokens(self, messages: list[dict]) -> int:
        """Tokens of the chat prompt built from ``messages`` (template included)."""
        ...

    def complete(self, messages: list[dict], grammar: str, max_output: int, prefix: str = "",
                 cancel=None) -> Completion:  # fmt: skip
        """One completion: the reply starts with ``prefix``; what follows is constrained by ``grammar``.

        At most ``max_output`` tokens are generated after the prefix. ``Completion.text`` is the
        whole reply, prefix included. When ``cancel`` (an Event) is set,
        the call stops as soon as it can and raises :class:`~localreason.errors.Cancelled`.
        """
        ...


class LlamaGenerator:
    """A GGUF model through llama-cpp-python. The chat template comes from the file's metadata."""

    def __init__(self, path: Path, *, threads: int | None = None, context_size: int | None = None,
                 batch: int = 1024) -> None:  # fmt: skip
        self.path = path
        self.name = path.name
        self.threads = threads or max(1, os.cpu_count() or 1)
        self._requested_ctx = context_size
        self.batch = batch
        self._llm = None
        self._lock = threading.Lock()
        self._cancel = None

    @property
    def llm(self):
        with self._lock:
            if self._llm is None:
                self._llm = self._load()
            return self._llm

    def _load(self):
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - installation problem
            raise ModelError("llama-cpp-python is not installed.", hint="Run `pip install -e .`.") from exc
        try:
            # n_ctx=0 asks llama.cpp for the context length the model was trained with.
            with _plain_weight_buffers(cpu_has_amx()):
                llm = Llama(
                    model_path=str(self.path), n_ctx=self._requested_ctx or 0, n_batch=self.batch,
                    n_ubatch=self.batch, n_threads=self.threads, n_threads_batch=self.threads, flash_attn=True,
                    verbose=False,
                )  # fmt: skip
        except Exception as exc:  # llama.cpp reports a bad file as a ValueError or RuntimeError
            raise ModelError(
                f"Could not load the GGUF model {self.path}: {exc}",
                hint="The file may be truncated or corrupt, or not a llama.cpp model. Replace it, or set "
                "LOCALREASON_GENERATION_MODEL to another .gguf file (`localreason models` checks it).",
            ) from exc
        # Let a cancelled request stop llama.cpp between graph nodes, even in the middle of the prompt.
        import llama_cpp

        self._abort = llama_cpp.ggml_abort_callback(lambda _data: bool(self._cancel is not None
                                                                      and self._cancel.is_set()))  # fmt: skip
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, self._abort, None)
        return llm

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def context_size(self) -> int:
        return int(self.llm.n_ctx())

    def count_tokens(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def prompt_tokens(self, messages: list[dict]) -> int:
        return len(self._prompt(messages, "")[0])  # exactly what complete() sends

    def _formatter(self):
        """The chat template from the GGUF metadata, as llama-cpp-python applies it (cached)."""
        if not hasattr(self, "_fmt"):
            self._fmt = None
            template = self.llm.metadata.get("tokenizer.chat_template")
            if template:
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter

                def text(token: int) -> str:
                    return self.llm.detokenize([token], special=True).decode("utf-8", errors="ignore")

                self._fmt = Jinja2ChatFormatter(template=template, eos_token=text(self.llm.token_eos()),
                                                bos_token=text(self.llm.token_bos()), add_generation_prompt=True)  # fmt: skip
        return self._fmt

    def _prompt(self, messages: list[dict], prefix: str) -> tuple[list[int], list[str]]:
        """Token ids of the chat prompt with the reply's ``prefix`` already in place, and stop strings."""
        llm = self.llm
        formatter = self._formatter()
        if formatter is None:  # no template in the file: a plain transcript
            text = "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant: "
            tokens, stop = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False), []
        else:
            result = formatter(messages=messages)
            tokens = llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
            stop = [] if result.stop is None else [result.stop] if isinstance(result.stop, str) else list(result.stop)
        if prefix:  # the reply's opening is evidence text: never read it as special tokens
            tokens += llm.tokenize(prefix.encode("utf-8"), add_bos=False, special=False)
        return tokens, stop

    def complete(self, messages: list[dict], grammar: str, max_output: int, prefix: str = "",
                 cancel=None) -> Completion:  # fmt: skip
        from llama_cpp import LlamaGrammar

        llm = self.llm
        try:
            compiled = LlamaGrammar.from_string(grammar, verbose=False)
            accepted = _grammar_accepted(llm, compiled)
        except Exception as exc:
            raise GenerationError(f"The output grammar could not be compiled: {exc}",
                                  hint="This is a bug in localreason; please report it.") from exc  # fmt: skip
        if not accepted:
            raise GenerationError("llama.cpp rejected the output grammar of this request.",
                                  hint="This is a bug in localreason; please report it with the question.")  # fmt: skip
        start = time.perf_counter()
        first: float | None = None
        pieces: list[str] = [prefix]
        self._cancel = cancel
        try:
            tokens, stop = self._prompt(messages, prefix)
            stream = llm.create_completion(prompt=tokens, grammar=compiled, max_tokens=max_output, temperature=0.0,
                                           stop=stop, stream=True)  # fmt: skip
            for chunk in stream:
                if first is None:
                    first = time.perf_counter()
                pieces.append(chunk["choices"][0].get("text") or "")
                if cancel is not None and cancel.is_set():
                    raise Cancelled()
        except Cancelled:
            raise
        except Exception as exc:
            if cancel is not None and cancel.is_set():  # llama.cpp stopped mid-batch at our request
                raise Cancelled() from exc
            raise GenerationError(f"The model failed while generating: {exc.__class__.__name__}: {exc}") from exc
        finally:
            self._cancel = None
        end = time.perf_counter()
        text = "".join(pieces)
        return Completion(text, len(tokens), self.count_tokens(text[len(prefix):]), (first or end) - start,
                          end - (first or end))  # fmt: skip

    def continuation_logprobs(self, contexts: list[str], continuation: str, cancel=None) -> tuple[list[float], int, int]:
        """log P(``continuation`` | context) for each of ``contexts`` as plain text (no chat template), the
        continuation's length in tokens, and the tokens read in all. One llama_decode per context; the
        model's cached prompt is discarded (the next completion reads its prompt afresh)."""
        llm = self.llm
        cont = llm.tokenize((" " + continuation.strip()).encode("utf-8"), add_bos=False, special=False)
        out: list[float] = []
        read = 0
        self._cancel = cancel
        try:
            for context in contexts:
                tokens, first = self._scored_tokens(context, cont)
                read += len(tokens)
                out.append(self._logprob(tokens, first, cancel))
                if cancel is not None and cancel.is_set():
                    raise Cancelled()
        except (Cancelled, GenerationError):
            raise
        except Exception as exc:
            if cancel is not None and cancel.is_set():
                raise Cancelled() from exc
            raise GenerationError(f"The model failed while scoring: {exc.__class__.__name__}: {exc}") from exc
        finally:
            self._cancel = None
            llm.reset()
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        return out, len(cont), read

    def _scored_tokens(self, context: str, cont: list[int]) -> tuple[list[int], int]:
        """The tokens of ``context`` then ``cont`` (the context cut from the front to fit one batch), and the
        position whose logits predict the continuation's first token."""
        ctx_tokens = self.llm.tokenize(context.encode("utf-8"), add_bos=True, special=False)
        room = min(self.batch, self.context_size) - len(cont)
        if room < 2:
            raise GenerationError(f"The question ({len(cont)} tokens) is too long to score against a passage.",
                                  hint="Ask a shorter question, or set answer_rerank = off.")  # fmt: skip
        if len(ctx_tokens) > room:  # keep the start token and the end of the context (the template's cue)
            ctx_tokens = ctx_tokens[:1] + ctx_tokens[len(ctx_tokens) - (room - 1):]
        return ctx_tokens + cont, len(ctx_tokens) - 1

    def _logprob(self, tokens: list[int], first: int, cancel) -> float:
        """The summed log-probability of ``tokens[first + 1:]`` given what precedes each, in one llama_decode."""
        import llama_cpp
        import numpy as np

        llm = self.llm
        llm.reset()
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        batch = llama_cpp.llama_batch_init(len(tokens), 0, 1)
        try:
            for i, tok in enumerate(tokens):
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, i, 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = first <= i < len(tokens) - 1
            batch.n_tokens = len(tokens)
            if llama_cpp.llama_decode(llm._ctx.ctx, batch) != 0:
                if cancel is not None and cancel.is_set():  # stopped mid-batch at our request
                    raise Cancelled()
                raise GenerationError("The model failed while scoring a question against a passage.")
            n_vocab = llm.n_vocab()
            total = 0.0
            for i in range(first, len(tokens) - 1):
                logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm._ctx.ctx, i), shape=(n_vocab,))
                peak = float(logits.max())
                total += float(logits[tokens[i + 1]]) - peak - float(np.log(np.exp(logits - peak).sum()))
            return total
        finally:
            llama_cpp.llama_batch_free(batch)


def _grammar_accepted(llm, compiled) -> bool:
    """Whether llama.cpp parses the grammar: LlamaGrammar only stores its text, and a rejected one
    would otherwise reach the sampler chain as a null sampler."""
    import llama_cpp

    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, compiled._grammar.encode("utf-8"), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def cpu_has_amx() -> bool:
    """Whether this processor has Intel AMX (the ``amx_tile`` flag)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            return any(line.startswith("flags") and " amx_tile" in line for line in f)
    except OSError:
        return False


_PARAMS_LOCK = threading.Lock()


@contextmanager
def _plain_weight_buffers(enabled: bool):
    """Load the model's weights into plain CPU buffers, not llama.cpp's "extra" ones, while ``enabled``.

    On Intel processors with AMX, llama.cpp 0.3.36's AMX weight buffers crash the process
    (SIGSEGV in ggml_backend_amx_mul_mat on the first evaluation; seen on these machines).
    llama-cpp-python offers no argument for ``use_extra_bufts``, so the default model
    parameters it starts from are adjusted for the duration of the load.
    """
    if not enabled:
        yield
        return
    import llama_cpp.llama_cpp as native

    with _PARAMS_LOCK:
        default = native.llama_model_default_params

        def without_extra_buffers():
            params = default()
            params.use_extra_bufts = False
            return params

        native.llama_model_default_params = without_extra_buffers
        try:
            yield
        finally:
            native.llama_model_default_params = default


_SHARED: dict[str, LlamaGenerator] = {}
_SHARED_LOCK = threading.Lock()


def shared_generator(path: Path, threads: int | None = None) -> LlamaGenerator:
    """One generator per model file and thread count per process: the model is loaded once and reused."""
    key = f"{path.resolve()}|{threads or 0}"
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = LlamaGenerator(path, threads=threads)
        return _SHARED[key]
