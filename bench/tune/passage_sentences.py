#!/usr/bin/env python3
"""The passage reader's sentence logits beside the sentence reader's, measured and not shipped.

Search's re-reading (search/rerank.py) reads each of its first ten passages whole with the passage reader, which
gives, in the same pass, a logit for every sentence of the passage (its sentence-mark head). Reused, that reading
would cost nothing. So: could it help the sentence reader choose which of the 8 sentences it reads leads?

For every answerable question of our manuals (bench/data/manuals.py): reason's own evidence and ranking, the
sentence reader's reading of the best ``read_candidates`` sentences (read.reader_reads, as shipped), and the
passage reader's reading of each of their passages whole (as search reads them). The combined score is
read.read's (reader_weight x the reader's logit + feature_weight x the ranking's score) plus ``w`` x the passage
reader's logit of the sentence (or ``w`` x its window's logit: the passage's). Printed: the share of questions
whose best sentence holds a gold answer, for each ``w`` of GRID, for the fit manuals' fit halves (where ``w``
would be chosen), their evaluation halves and the Apache manual (held out). docs/history/51-answers-from-manuals.md,
"The passage reader's sentence logits beside the sentence reader's: not kept".

    python -m bench.tune.passage_sentences --data-dir .cache/manuals
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from bench import ROOT
from bench.data import manuals as M

GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def rows_of(manual: str, data_dir: Path) -> list[dict]:
    """One row per answerable question of ``manual`` that reason reads: the question, its page's half, and for each
    sentence read: the sentence reader's logit, the ranking's score, the passage reader's sentence and window
    logits, and whether it holds a gold answer."""
    from localreason.config import load_settings
    from localreason.library import Library
    from localreason.reason import pipeline as P
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.passage import place
    from localreason.reason.read import reader_reads
    from localreason.text import sentences

    lib = Library(settings=load_settings(data_dir / "libs" / manual))
    rows = []
    asked = [q for q in M.questions(manual) if q.kind != "unanswerable"]
    for n, q in enumerate(asked, 1):
        if n % 25 == 0:
            print(f"  {manual}: {n} of {len(asked)} questions", flush=True)
        evidence, packet = P.evidence_of(lib, q.question, scope={}, limit=None, max_tokens=None)
        if not packet.chunks:
            continue
        req = P.check_request(lib, q.question, None, {}, None, None, "extract", None, calibration=DEFAULT)
        chunks = {c.chunk_id: c.content for c in packet.chunks}
        read, _ = reader_reads(lib.reader, q.question, evidence, P.rank_sentences(req, packet, evidence), chunks=chunks)
        head = read[:DEFAULT.read_candidates]
        ids = list(dict.fromkeys(x.chunk_id for x in head))
        spans = {i: [(a, chunks[i][a:b]) for a, b in sentences(chunks[i])] or [(0, chunks[i])] for i in ids}
        windows = dict(zip(ids, lib.rereader.read_windows(q.question, [[t for _, t in spans[i]] for i in ids])))
        sentence_rows = []
        for x in head:
            r, at = windows[x.chunk_id], place(spans[x.chunk_id], chunks[x.chunk_id], x)
            p = min(max(x.reader or 0.5, 1e-6), 1 - 1e-6)
            sentence_rows.append((float(np.log(p / (1 - p))), x.score,
                                  float(r.sentences[at]) if at is not None and at < len(r.sentences) else np.nan,
                                  r.logit, q.held_by(x.text), x.text))  # fmt: skip
        rows.append({"q": q.question, "half": M.page_half(manual, q.page), "sentences": sentence_rows})
    lib.close()
    return rows


def holds_first(row: dict, w: float, column: int) -> bool:
    """Whether the best sentence, with ``w`` x the passage reader's ``column`` (2: sentence, 3: window) added to
    read.read's combined score, holds a gold answer (a sentence the passage reader did not place gets the mean)."""
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.ranking import sink_echoes

    s = row["sentences"]
    extra = np.array([x[column] for x in s], dtype=np.float64)
    extra = np.where(np.isnan(extra), np.nanmean(extra) if not np.isnan(extra).all() else 0.0, extra)
    reader, ranking = (np.array([x[i] for x in s]) for i in (0, 1))
    combined = DEFAULT.reader_weight * reader + DEFAULT.feature_weight * ranking + w * extra
    sink_echoes(row["q"], [x[5] for x in s], combined)
    return bool(s[int(np.argmax(combined))][4])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "manuals")
    args = ap.parse_args()
    parts = M.by_part(lambda manual: rows_of(manual, args.data_dir))
    for column, what in ((2, "the passage reader's sentence logit"), (3, "its window's logit")):
        print(f"\nfirst sentence holds the answer, with w x {what} added; w = {', '.join(map(str, GRID))}")
        for name, rows in parts.items():
            cells = " ".join(f"{np.mean([holds_first(r, w, column) for r in rows]):.3f}" for w in GRID)
            print(f"{name:<28} {len(rows):>4}  {cells}")


if __name__ == "__main__":
    main()
