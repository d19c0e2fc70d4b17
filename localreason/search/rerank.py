"""Re-reading search's first candidates (issue #52): a cross-encoder, the packaged passage reader, reads the
question with each of the hybrid ranking's first candidates, and its reading orders them.

bench.quality.rerank measures what it adds on every kind of text and what it costs.
"""

from __future__ import annotations

import numpy as np


def reread(reader, question: str, texts: list[str]) -> np.ndarray:
    """The passage reader's logit (reader.WindowRead.logit) that each passage of ``texts`` holds the answer to
    ``question``; each passage read whole, as one window (cut at the reader's WINDOW_LENGTH tokens)."""
    if not texts:
        return np.zeros(0, dtype=np.float64)
    reads = reader.read_windows(question, [[t] for t in texts])
    return np.array([r.logit for r in reads], dtype=np.float64)
