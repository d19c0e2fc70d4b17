#!/usr/bin/env python3
"""How reason's quotable sentences come out of hard-wrapped text (reST, Markdown and plain text wrapped at
70-80 columns), with the line-break rule (text._soft_wrap) and without it (every line break ends a
sentence, as before).

Corpus: the reST sources of the Debian package python3.11-doc (the same staging as bench_ingest.py:
DATA/usr/share/doc/python3.11/html/_sources/**.rst.txt). Printed for each rule: quotable sentences,
the share that start in the middle of a sentence (a lower-case first letter), the share that do not end
like a sentence, and their mean length in words.

    python scripts/bench_sentences.py --data .cache/bench-ingest/unpacked --files 200
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from unittest import mock


def quotable(paths: list[Path]) -> list[str]:
    from localreason.ingest.parse import parse_rst
    from localreason.quotes import candidates

    out = []
    for path in paths:
        parsed = parse_rst(path.read_bytes(), path)
        for b in parsed.blocks:
            if b.kind == "text":
                out += [c.text for c in candidates([("x", parsed.text[b.start:b.end])])]
    return out


def describe(label: str, sents: list[str]) -> None:
    first = [s.lstrip("\"'([*`") for s in sents]
    lower = sum(bool(f) and f[0].islower() for f in first) / len(sents)
    open_end = sum(not s.rstrip().endswith((".", "!", "?", ":", ";", '"', ")")) for s in sents) / len(sents)
    words = statistics.fmean(len(s.split()) for s in sents)
    print(f"{label:<36} {len(sents):>9,} {lower:>16.3f} {open_end:>18.3f} {words:>11.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(".cache/bench-ingest/unpacked"))
    ap.add_argument("--files", type=int, default=200)
    args = ap.parse_args()
    root = args.data / "usr/share/doc/python3.11/html/_sources"
    paths = sorted(root.rglob("*.rst.txt"))[: args.files]
    if not paths:
        raise SystemExit(f"No reST sources under {root}: stage python3.11-doc as bench_ingest.py does.")
    print(f"{len(paths)} reST files of python3.11-doc\n")
    print(f"{'rule':<36} {'sentences':>9} {'start mid-sentence':>16} {'end mid-sentence':>18} {'mean words':>11}")
    with mock.patch("localreason.text._soft_wrap", return_value=False):
        describe("every line break ends one (before)", quotable(paths))
    describe("wrapped lines joined (now)", quotable(paths))


if __name__ == "__main__":
    main()
