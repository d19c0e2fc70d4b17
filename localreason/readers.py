"""The reader's runtime: a small cross-encoder, trained here, that reads a question with one sentence (and the
sentence before it) and estimates the chance that the sentence holds the answer.

It ships inside the package (models.READER_DIR, ``localreason/models/reader/``: an OpenVINO IR, its tokenizer
and ``reader.json``, with a model card in README.md); models.py finds and checks those files,
bench/train/reader.py builds its data, trains it and writes that folder. At ask time it runs on OpenVINO with
the ``tokenizers`` library: no torch. What the reader's estimates decide is read.py's.

``pair_text`` is the one place that says how a candidate is shown to the model: training and
inference both call it, so they cannot drift apart.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import NamedTuple

import numpy as np

from . import models
from .errors import ModelError
from .openvino_runtime import compile_model

MAX_LENGTH = 128
"""Tokens of question + sentence + context read together; the context is cut first."""
CONTEXT_MARK = " [SEP] "
"""Between the sentence and the sentence before it (the tokenizer reads it as its separator token)."""


HEADING_CHARS = 120
"""The longest heading a reader that reads headings sees (``heading_text``), in characters."""


def pair_text(sentence: str, previous: str = "", heading: str = "") -> str:
    """The second segment the reader reads for a candidate: the sentence, then the one before it, then, for a
    reader trained with them (reader.json's ``headings``), the heading it sits under (``heading_text``): context
    last, so that truncation cuts it first, the heading before the sentence before."""
    sentence, previous, heading = (" ".join(x.split()) for x in (sentence, previous, heading))
    if heading:
        return f"{sentence}{CONTEXT_MARK}{previous}{CONTEXT_MARK}{heading}"
    return f"{sentence}{CONTEXT_MARK}{previous}" if previous else sentence


def heading_text(title: str, section_path=()) -> str:
    """What a reader that reads headings is shown of where a sentence sits: its document's title and the
    nearest section heading above it ("mod_rewrite > RewriteRule Flags"), underscores read as spaces (a file's or
    an article's name), at most HEADING_CHARS characters. A name with no letter but its file type ("000.txt",
    "2024-01.md") names nothing and is left out."""
    parts = [" ".join(x.replace("_", " ").split()) for x in (title, *tuple(section_path)[-1:])]
    parts = list(dict.fromkeys(p for p in parts if _names_something(p)))
    text = " > ".join(parts)
    return text if len(text) <= HEADING_CHARS else text[:HEADING_CHARS].rsplit(" ", 1)[0]


MAX_SPAN_TOKENS = 24
"""The longest answer phrase the span head may point at, in tokens."""


def squeezed(text: str) -> tuple[str, list[int]]:
    """``text`` with its whitespace runs made single spaces and its ends stripped (what ``pair_text`` shows the
    model), and, for every character of that, its index in ``text`` (the way back to the original's offsets)."""
    out: list[str] = []
    where: list[int] = []
    gap = False
    for i, ch in enumerate(text):
        if ch.isspace():
            gap = bool(out)
            continue
        if gap:
            out.append(" ")
            where.append(i - 1)
            gap = False
        out.append(ch)
        where.append(i)
    return "".join(out), where


def _names_something(part: str) -> bool:
    stem = re.sub(r"\.[A-Za-z0-9]{1,5}$", "", part)
    return any(ch.isalpha() for ch in stem)


def span_tokens(encoding, sentence_chars: int, context_chars: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Which tokens of a pair's ``encoding`` (from ``pair_text(sentence, previous, heading)``) belong to the
    sentence and which to the previous sentence: two boolean arrays. ``sentence_chars`` is the length of the
    squeezed sentence; the context starts after CONTEXT_MARK and is ``context_chars`` long (the squeezed
    previous sentence; None: to the end, as without a heading)."""
    n = len(encoding.ids)
    seq = encoding.sequence_ids
    offsets = encoding.offsets
    context_from = sentence_chars + len(CONTEXT_MARK)
    context_to = context_from + context_chars if context_chars is not None else None
    in_sentence = np.zeros(n, dtype=bool)
    in_context = np.zeros(n, dtype=bool)
    for t in range(n):
        if seq[t] != 1:
            continue
        s, e = offsets[t]
        if e <= sentence_chars and e > s:
            in_sentence[t] = True
        elif s >= context_from and e > s and (context_to is None or e <= context_to):
            in_context[t] = True
    return in_sentence, in_context


class Phrase(NamedTuple):
    """Where the span head puts the answer inside a sentence: ``start``/``end`` in the sentence as given (not
    squeezed), its score (start + end logit) and the no-phrase score ([CLS]'s start + end logit). ``before`` is
    its best phrase in the sentence before, which it reads as context (offsets in that sentence as given), when
    there is one: the name a sentence that says "he" leans on (offer.points_before decides when it counts)."""

    start: int
    end: int
    score: float
    null: float
    before: "Phrase | None" = None
    mass: float = 0.0
    """The head's belief that the answer starts inside this phrase and ends inside it: the start softmax over
    [CLS] and the sentence's tokens summed over the phrase's tokens, times the end softmax's (a rival phrase
    in the same sentence takes its share; a near-copy of it does not)."""

    @property
    def margin(self) -> float:
        """How much more the head believes in this phrase than in no phrase at all (log-odds-like)."""
        return self.score - self.null


def _best_run(tokens: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[int, int, float]:
    """(first token, last token, score) of the best run of at most MAX_SPAN_TOKENS of ``tokens`` (token indices,
    ascending) by start + end logit."""
    s = np.asarray(starts, dtype=np.float64)[tokens]
    e = np.asarray(ends, dtype=np.float64)[tokens]
    pairs = s[:, None] + e[None, :]
    gap = tokens[None, :] - tokens[:, None]
    pairs[(gap < 0) | (gap >= MAX_SPAN_TOKENS)] = -np.inf
    i, j = np.unravel_index(int(np.argmax(pairs)), pairs.shape)
    return int(tokens[i]), int(tokens[j]), float(pairs[i, j])


def best_phrase(sentence: str, encoding, starts: np.ndarray, ends: np.ndarray, previous: str = "") -> Phrase | None:
    """The best-scoring phrase of at most MAX_SPAN_TOKENS tokens inside ``sentence`` (start token <= end token),
    from the span head's start and end logits over ``encoding``'s tokens (of ``pair_text(sentence, previous)``),
    with the best one inside ``previous`` as its ``before``; None when the sentence has no token."""
    squeezed_text, where = squeezed(sentence)
    _, back = squeezed(previous)
    in_sentence, in_context = span_tokens(encoding, len(squeezed_text), len(back))
    tokens = np.flatnonzero(in_sentence)
    if not len(tokens):
        return None
    null = float(starts[0] + ends[0])
    i, j, score = _best_run(tokens, starts, ends)
    lo, hi = encoding.offsets[i][0], encoding.offsets[j][1]
    mass = _mass(tokens, starts, ends, i, j)
    before = None
    context = np.flatnonzero(in_context)
    if len(context) and back:
        shift = len(squeezed_text) + len(CONTEXT_MARK)
        a, b, prior = _best_run(context, starts, ends)
        ca, cb = encoding.offsets[a][0] - shift, encoding.offsets[b][1] - shift
        if 0 <= ca < cb <= len(back):
            before = Phrase(back[ca], back[cb - 1] + 1, prior, null)
    return Phrase(where[lo], where[hi - 1] + 1, score, null, before, mass)


def _mass(tokens: np.ndarray, starts: np.ndarray, ends: np.ndarray, i: int, j: int) -> float:
    """Phrase.mass of the run of tokens i..j among ``tokens`` (with [CLS], token 0, as the no-phrase choice)."""
    pick = np.concatenate([[0], tokens])
    s = np.asarray(starts, dtype=np.float64)[pick]
    e = np.asarray(ends, dtype=np.float64)[pick]
    ps, pe = np.exp(s - s.max()), np.exp(e - e.max())
    inside = (pick >= i) & (pick <= j) & (pick > 0)
    return float(ps[inside].sum() / ps.sum() * pe[inside].sum() / pe.sum())


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


class Reader:
    """The cross-encoder in ``folder`` (models.READER_DIR by default) on OpenVINO: ``logits(question,
    [(sentence, previous), ...])``. Pairs are read in batches of ``batch_size`` of similar lengths, each padded
    to its longest (most pairs are far shorter than MAX_LENGTH, and padding costs as much as text)."""

    passage: "Reader | None" = None
    """The passage reader beside it (packaged_reader sets it), whose second reading a phrase needs."""
    needs_second_reading = False
    """Whether a phrase needs ``passage``'s agreement (packaged_reader: yes; without it no phrase is shown)."""
    stance = None
    """The stance reader beside it (packaged_reader sets it: localreason/stance.py), or None: opposite stances are
    then not looked for."""

    def __init__(self, folder: Path | None = None, threads: int = 0, batch_size: int = 8,
                 cache: Path | None = None) -> None:  # fmt: skip
        self.info = models.read_reader_info(folder)
        self.threads = threads
        self.batch_size = batch_size
        self.cache = cache
        """Where OpenVINO keeps the compiled model for the next process (openvino_runtime.compile_model), or None."""
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
                    compiled = compile_model(self.info.folder / "model.xml", self.threads, self.cache)
                    tok = load_tokenizer(self.info.folder, int(self.info.meta.get("max_length", MAX_LENGTH)))
                except Exception as exc:
                    raise ModelError(f"Could not load the reader from {self.info.folder}: "
                                     f"{exc.__class__.__name__}: {exc}",
                                     hint="Reinstall localreason, or set reader = \"off\".") from exc  # fmt: skip
                inputs = [i.get_any_name() for i in compiled.inputs]
                self._parts = (compiled, tok, inputs, threading.Lock())
            return self._parts

    @property
    def reads_headings(self) -> bool:
        """Whether it was trained to read the heading a sentence sits under (reader.json's ``headings``)."""
        return bool(self.info.meta.get("headings"))

    def logits(self, question: str, candidates: list[tuple[str, ...]]) -> np.ndarray:
        """One logit per (sentence, previous sentence[, heading]): log-odds that the sentence holds the answer."""
        return self.read(question, candidates, phrases=False)[0]

    def read(self, question: str, candidates: list[tuple[str, ...]], phrases: bool = True
             ) -> tuple[np.ndarray, list[Phrase | None]]:  # fmt: skip
        """(one logit per (sentence, previous sentence[, heading]), the span head's best phrase inside each
        sentence, or None where it has none or ``phrases`` is off). A heading (``heading_text``) is read only by a
        reader trained with headings."""
        if not candidates:
            return np.zeros(0, dtype=np.float64), []
        compiled, tok, inputs, run_lock = self._load()
        q = " ".join(question.split())
        headings = self.reads_headings
        encoded = tok.encode_batch([(q, pair_text(c[0], c[1], c[2] if headings and len(c) > 2 else ""))
                                    for c in candidates])  # fmt: skip
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")
        out = np.zeros(len(candidates), dtype=np.float64)
        found: list[Phrase | None] = [None] * len(candidates)
        spans = phrases and len(compiled.outputs) >= 3
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            feed = batch_arrays([encoded[i] for i in part])
            try:
                with run_lock:
                    result = compiled({name: feed[name] for name in inputs})
            except Exception as exc:  # OpenVINO raises RuntimeError for a graph that cannot run these inputs
                raise ModelError(f"The reader failed to run: {exc.__class__.__name__}: {exc}",
                                 hint="Reinstall localreason, or set reader = \"off\".") from exc
            out[part] = np.asarray(result[compiled.output(0)], dtype=np.float64).reshape(len(part), -1)[:, 0]
            if spans:
                starts, ends = result[compiled.output(1)], result[compiled.output(2)]
                for row, i in enumerate(part):
                    found[i] = best_phrase(candidates[i][0], encoded[i], starts[row], ends[row], candidates[i][1])
        return out, found

    @property
    def format(self) -> int:
        """2: the sentence reader (``read``); 3: the passage reader (``read_windows``)."""
        return int(self.info.meta.get("format", 2))

    def _run(self, feed: dict, compiled, inputs, run_lock) -> dict:
        try:
            with run_lock:
                return compiled({name: feed[name] for name in inputs})
        except Exception as exc:  # OpenVINO raises RuntimeError for a graph that cannot run these inputs
            raise ModelError(f"The reader failed to run: {exc.__class__.__name__}: {exc}",
                             hint="Reinstall localreason, or set reader = \"off\".") from exc

    def read_windows(self, question: str, windows: list[list[str]]) -> list:
        """What a passage reader (format 3) reads in each window of consecutive sentences: passage.WindowRead."""
        if not windows:
            return []
        compiled, tok, inputs, run_lock = self._load()
        q = " ".join(question.split())
        texts = [window_text(w) for w in windows]
        encoded = tok.encode_batch([(q, t[0]) for t in texts])
        order = np.argsort([-len(e.ids) for e in encoded], kind="stable")
        out: list = [None] * len(windows)
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            result = self._run(batch_arrays([encoded[i] for i in part]), compiled, inputs, run_lock)
            logits = np.asarray(result[compiled.output(0)], dtype=np.float64).reshape(len(part), -1)[:, 0]
            starts, ends, marks = (result[compiled.output(k)] for k in (1, 2, 3))
            for row, i in enumerate(part):
                _, ranges, maps = texts[i]
                out[i] = read_window(encoded[i], ranges, maps, logits[row], starts[row], ends[row], marks[row])
        return out

    def probabilities(self, question: str, candidates: list[tuple[str, ...]]) -> np.ndarray:
        return sigmoid(self.logits(question, candidates))


# ---------------------------------------------------------------- the passage reader's windows (format 3)

WINDOW_LENGTH = 320
"""Tokens of question + window read together (the passage is cut at its end when longer)."""
def window_text(sentences: list[str]) -> tuple[str, list[tuple[int, int]], list[list[int]]]:
    """The text the reader reads for a window of ``sentences`` (each squeezed, joined by one space), the
    (start, end) of every sentence in it, and for every sentence the map from its squeezed characters back to
    its own offsets (reader.squeezed)."""
    parts, ranges, maps = [], [], []
    at = 0
    for s in sentences:
        text, where = squeezed(s)
        if parts:
            at += 1
        parts.append(text)
        ranges.append((at, at + len(text)))
        maps.append(where)
        at += len(text)
    return " ".join(parts), ranges, maps


def token_sentences(encoding, ranges: list[tuple[int, int]]) -> np.ndarray:
    """For every token of ``encoding`` (question, window text), the index of the window sentence it lies in,
    or -1 (the question, [CLS], [SEP], padding, a token between sentences)."""
    out = np.full(len(encoding.ids), -1, dtype=np.int64)
    starts = np.array([r[0] for r in ranges])
    for t, (seq, (s, e)) in enumerate(zip(encoding.sequence_ids, encoding.offsets)):
        if seq != 1 or e <= s:
            continue
        i = int(np.searchsorted(starts, s, side="right")) - 1
        if i >= 0 and s < ranges[i][1]:
            out[t] = i
    return out


class Span(NamedTuple):
    """The answer phrase the span head points at: in window sentence ``sentence``, at [start, end) of that
    sentence as given; ``probability`` is its share of the head's belief (start x end softmax over the window's
    tokens and [CLS]), ``margin`` its score over [CLS]'s (log-odds-like, as reader.Phrase.margin)."""

    sentence: int
    start: int
    end: int
    probability: float
    margin: float
    mass: float = 0.0
    """The head's belief that the answer starts inside this phrase and ends inside it (the start softmax summed
    over its tokens, times the end softmax's): near-copies of the phrase ("1961 to 1972", "from 1961 to 1972")
    do not split it the way they split ``probability``."""


class WindowRead(NamedTuple):
    logit: float
    """That the window holds the answer."""
    sentences: np.ndarray
    """One logit per window sentence: that it holds the answer."""
    spans: list[Span | None]
    """The best phrase inside each sentence (None for a sentence with no token read)."""
    null: float
    """The head's probability of no answer in the window ([CLS] as start and end)."""

    @property
    def best(self) -> Span | None:
        """The head's best phrase in the whole window."""
        found = [s for s in self.spans if s is not None]
        return max(found, key=lambda s: s.probability) if found else None


def _softmax(x: np.ndarray) -> np.ndarray:
    p = np.exp(x - x.max())
    return p / p.sum()


def read_window(encoding, ranges, maps, logit: float, starts, ends, marks) -> WindowRead:
    """What one window's outputs say: ``starts``/``ends``/``marks`` are the per-token start, end and sentence
    logits of ``encoding`` (of ``window_text``, whose ``ranges`` and ``maps`` it gave)."""
    where = token_sentences(encoding, ranges)
    allowed = np.flatnonzero(where >= 0)
    s = np.asarray(starts, dtype=np.float64)
    e = np.asarray(ends, dtype=np.float64)
    marks = np.asarray(marks, dtype=np.float64)
    pick = np.concatenate([[0], allowed])
    ps, pe = np.zeros(len(s)), np.zeros(len(e))
    ps[pick], pe[pick] = _softmax(s[pick]), _softmax(e[pick])
    null_score = s[0] + e[0]
    sentence_logits = np.full(len(ranges), -10.0)
    spans: list[Span | None] = [None] * len(ranges)
    for i in range(len(ranges)):
        tokens = np.flatnonzero(where == i)
        if not len(tokens):
            continue
        sentence_logits[i] = float(marks[tokens].mean())
        pairs = s[tokens][:, None] + e[tokens][None, :]
        gap = tokens[None, :] - tokens[:, None]
        pairs[(gap < 0) | (gap >= MAX_SPAN_TOKENS)] = -np.inf
        a, b = np.unravel_index(int(np.argmax(pairs)), pairs.shape)
        ta, tb = int(tokens[a]), int(tokens[b])
        lo, hi = encoding.offsets[ta][0] - ranges[i][0], encoding.offsets[tb][1] - ranges[i][0]
        back = maps[i]
        if 0 <= lo < hi <= len(back):
            mass = float(ps[ta:tb + 1].sum() * pe[ta:tb + 1].sum())
            spans[i] = Span(i, back[lo], back[hi - 1] + 1, float(ps[ta] * pe[tb]), float(pairs[a, b] - null_score),
                            mass)  # fmt: skip
    return WindowRead(float(logit), sentence_logits, spans, float(ps[0] * pe[0]))


_SHARED: dict[tuple[str, int], Reader] = {}
_SHARED_LOCK = threading.Lock()


def packaged_reader(threads: int = 0, cache: Path | None = None) -> Reader:
    """The packaged reader, one per process and thread count (compiled on first use, or loaded from what OpenVINO
    kept in ``cache``), with the packaged passage reader as its ``passage`` (None when that is missing or damaged:
    then no phrase is shown) and the stance reader as its ``stance`` (packaged_stance); ModelError if the reader
    itself cannot be read."""
    folder = models.READER_DIR
    key = (str(folder), threads)
    with _SHARED_LOCK:
        if key not in _SHARED:
            reader = Reader(folder, threads, cache=cache)
            reader.needs_second_reading = True
            if models.reader_shipped(models.PASSAGE_DIR):
                try:
                    reader.passage = Reader(models.PASSAGE_DIR, threads, cache=cache)
                except ModelError:  # a damaged passage reader: answers lead with sentences, never with a phrase
                    reader.passage = None
            reader.stance = packaged_stance(threads, cache)
            _SHARED[key] = reader
        return _SHARED[key]


def packaged_stance(threads: int = 0, cache: Path | None = None):
    """The packaged stance reader (localreason/stance.py), its word embeddings from the pip package that ships the
    default embedding model; None when either is missing (opposite stances are then not looked for; none ships
    yet, docs/history/53). A damaged one raises ModelError when first used: the pipeline warns once and goes on
    without it."""
    from .stance import STANCE_DIR, StanceReader, packaged_embeddings, stance_shipped

    table = packaged_embeddings()
    if not stance_shipped() or table is None:
        return None
    return StanceReader(STANCE_DIR, table, threads, cache)
