"""The passage reader's view of the text: a window of consecutive sentences read with the question at once.

A reader of format 3 (reader.py) reads the question with a whole window of a chunk's sentences (WINDOW_LENGTH
tokens at most, the way extractive QA readers read a paragraph) and gives, in one pass:
- a logit that the window holds the answer at all (its [CLS] vector and mean token vector);
- start and end logits over every token of the window, [CLS] standing for "no answer here", so that the
  answer may lie in any sentence it reads, not only the one that was ranked;
- a sentence logit per token, averaged over each sentence's tokens: the score the ranking needs.

``window_text`` (reader.py, with the decoding of a window's outputs: it runs the model) is the one place that says
how a window is shown to the model, and ``token_sentences`` which sentence each token belongs to: training
(bench/train/passage_reader.py) and inference both call them, so they cannot drift apart. Here: which windows to
read for a ranked list of sentences (``windows_for``, ``around``).
"""

from __future__ import annotations

from typing import NamedTuple



WINDOW_WORDS = 170
"""A window's sentences stop being added when they would pass this many words (about 230 tokens: a 200-token
chunk fits whole, with the question)."""


class Window(NamedTuple):
    """Consecutive sentences of one chunk to read together: the chunk, and the sentences' (start, text) in it."""

    chunk_id: str
    sentences: list[tuple[int, str]]


def around(spans: list[tuple[int, str]], at: int, words: int = WINDOW_WORDS) -> list[tuple[int, str]]:
    """The run of ``spans`` (a chunk's sentences, in order) around index ``at``: it, then the sentences before and
    after it by turns (two before for one after: a sentence leans on what came before more often than on what
    follows), while the run stays within ``words`` words."""
    lo, hi = at, at + 1
    total = len(spans[at][1].split())
    turn = 0
    while lo > 0 or hi < len(spans):
        take_before = (turn % 3 != 2 and lo > 0) or hi >= len(spans)
        i = lo - 1 if take_before else hi
        n = len(spans[i][1].split())
        if total + n > words:
            break
        total += n
        lo, hi = (lo - 1, hi) if take_before else (lo, hi + 1)
        turn += 1
    return spans[lo:hi]


class Placed(NamedTuple):
    """Where a ranked sentence was read: the window (an index into the windows read) and its sentence there."""

    window: int
    sentence: int


def place(spans: list[tuple[int, str]], text: str, quote) -> int | None:
    """Which of ``spans`` ((start, sentence) of ``text``) is ``quote``'s, or None. A quote that starts at the term
    on the line before its sentence (candidates._with_term: an option quoted with its description) is that
    sentence's, and the span is widened, in place, to start at the term: the term is read with it."""
    end = quote.start + len(quote.text)
    for i, (s, sentence) in enumerate(spans):
        if s == quote.start:
            return i
        if quote.start < s and s + len(sentence) == end:
            spans[i] = (quote.start, text[quote.start:end])
            return i
    return None


def windows_for(quotes, chunks: dict[str, str], words: int = WINDOW_WORDS) -> tuple[list[Window], list[Placed | None]]:
    """The windows to read for ``quotes`` (ranked sentences: candidates.Quote, best first) of ``chunks`` (chunk id:
    text): one around each sentence that no earlier window holds (``around``), so that sentences of one passage
    are read together once; and where each quote lies in them (None for one whose chunk text is not given)."""
    from ..text import sentences

    windows: list[Window] = []
    placed: list[Placed | None] = []
    seen: dict[tuple[str, int], Placed] = {}
    for q in quotes:
        key = (q.chunk_id, q.start)
        if key not in seen:
            text = chunks.get(q.chunk_id)
            spans = [(s, text[s:e]) for s, e in sentences(text)] if text else []
            at = place(spans, text or "", q)
            if at is None:
                placed.append(None)
                continue
            run = around(spans, at, words)
            for j, (s, _) in enumerate(run):
                seen.setdefault((q.chunk_id, s), Placed(len(windows), j))
            windows.append(Window(q.chunk_id, run))
        placed.append(seen[key])
    return windows, placed
