#!/usr/bin/env python3
"""Where reason's quotable sentences start and end in hard-wrapped text: reST sources, and Markdown and plain
text wrapped at 72-80 columns.

Corpus: the reST sources of the Debian package python3.11-doc (DATA/usr/share/doc/python3.11/html/_sources,
staged as bench/data/debian_docs.py does), and the same pages' rendered HTML turned by pandoc into Markdown and into
plain text wrapped at 76 columns (``pandoc -t gfm|plain --columns=76``, cached beside the data), so the
three formats carry the same prose. Each file is read by localreason's reader for its format, and its text
blocks cut into quotable sentences (quotes.candidates) as reason does.

Printed per format and rule: quotable sentences of prose, and apart those that are lines of code (see _CODE); the share that start in the middle of a sentence (a
lower-case first letter, inside a block, after text that does not end a sentence: the cut was made where no
sentence ends); the share of all quotable sentences with a lower-case first letter (the figure this script printed before: it
also counts C signatures, code lines and identifiers that start a block, as in "int PyCell_Set(...)" or
"args must not be NULL."); the share that do not end like a sentence; their mean length in words. The
rules: "every line break ends one" (text._soft_wrap off, the oldest behaviour) and "now".
Target: mid-sentence starts <= 0.02 on every format.

    python -m bench.quality.sentences --data .cache/bench-ingest/unpacked --files 200
"""

from __future__ import annotations

import argparse
import hashlib
import re
import statistics
import subprocess
from pathlib import Path
from unittest import mock


def quotable(files: list[tuple[Path, bytes]], fmt: str) -> list[tuple[str, str]]:
    """(sentence, the text of its block before it) for every quotable sentence of ``files``."""
    from localreason.ingest.parse import parse_bytes
    from localreason.reason.candidates import candidates

    out = []
    for path, data in files:
        parsed = parse_bytes(data, path, fmt)
        for b in parsed.blocks:
            if b.kind == "text":
                block = parsed.text[b.start:b.end]
                out += [(c.text, block[:c.start]) for c in candidates([("x", block)])]
    return out


_CODE = re.compile(r"[{}]|;$|\s=\s|\w\(.*\)$|^\s*(?:def|class|import|from \S+ import|#include|>>>|\.\.\.)\s")
"""A line of code, not prose (a code block is cut at its lines, as it should be): braces, a ``;`` ending
the line, an assignment, a call ending the line, or a Python or C statement opener. Counted apart."""


def is_code(sentence: str) -> bool:
    return any(_CODE.search(line) for line in sentence.split("\n"))


def mid_sentence(sentence: str, before: str) -> bool:
    """Starts in lower case, inside a block, after text that does not end a sentence: cut where no sentence
    ends. (A lower-case start at a block's start is a signature, a code line or an identifier: not counted.)"""
    first = sentence.lstrip("\"'([*`")[:1]
    tail = before.rstrip().rstrip("\"')]*`")
    return first.islower() and bool(tail) and not tail.endswith((".", "!", "?", ":", ";"))


def describe(label: str, sents: list[tuple[str, str]]) -> float:
    lower = sum(s.lstrip("\"'([*`")[:1].islower() for s, _ in sents) / len(sents)  # all, as printed before
    code = sum(is_code(s) for s, _ in sents)
    sents = [(s, before) for s, before in sents if not is_code(s)]
    n = len(sents)
    mid = sum(mid_sentence(s, before) for s, before in sents) / n
    open_end = sum(not s.rstrip().endswith((".", "!", "?", ":", ";", '"', ")")) for s, _ in sents) / n
    words = statistics.fmean(len(s.split()) for s, _ in sents)
    print(f"{label:<40} {n:>9,} {code:>7,} {mid:>12.3f} {lower:>12.3f} {open_end:>12.3f} {words:>7.1f}", flush=True)
    return mid


def wrapped(page: Path, to: str, cache: Path) -> bytes:
    """``page`` (Sphinx HTML) as pandoc writes it in format ``to``, wrapped at 76 columns; cached under a digest
    of the page, so a changed page is written again."""
    digest = hashlib.sha1(page.read_bytes()).hexdigest()[:12]
    out = cache / f"{page.stem}-{digest}.{to}76"
    if not out.exists():
        import lxml.html

        root = lxml.html.parse(str(page)).getroot()
        main = (root.xpath('//*[@role="main"]') or [root])[0]
        for a in main.xpath('.//a[contains(@class, "headerlink")]'):
            a.drop_tree()
        cache.mkdir(parents=True, exist_ok=True)
        try:
            made = subprocess.run(["pandoc", "-f", "html", "-t", to, "--columns=76"], input=lxml.html.tostring(main),
                                  capture_output=True, check=True).stdout  # fmt: skip
        except FileNotFoundError:
            raise SystemExit("pandoc is not installed: apt-get install pandoc") from None
        out.write_bytes(made)
    return out.read_bytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path(".cache/bench-ingest/unpacked"))
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--formats", default="rst,markdown,text")
    args = ap.parse_args()
    html = args.data / "usr/share/doc/python3.11/html"
    sources = sorted((html / "_sources").rglob("*.rst.txt"))[: args.files]
    if not sources:
        raise SystemExit(f"No reST sources under {html / '_sources'}: stage python3.11-doc as "
                         "bench/data/debian_docs.py does.")
    pages = [p for p in (html / s.relative_to(html / "_sources").with_suffix("").with_suffix(".html")
                         for s in sources) if p.exists()]  # fmt: skip
    cache = args.data.parent / "wrapped76"
    print(f"{len(sources)} reST sources of python3.11-doc; {len(pages)} of their pages as Markdown and text "
          "wrapped at 76 columns\n")
    print(f"{'format / rule':<40} {'sentences':>9} {'code':>7} {'mid-sentence':>12} {'lower-case':>12} {'open end':>12} "
          f"{'words':>7}")  # fmt: skip
    for fmt in args.formats.split(","):
        if fmt == "rst":
            files = [(p, p.read_bytes()) for p in sources]
        else:
            to = "gfm" if fmt == "markdown" else "plain"
            files = [(p.with_suffix(".md" if fmt == "markdown" else ".txt"), wrapped(p, to, cache)) for p in pages]
        with mock.patch("localreason.text._soft_wrap", return_value=False):
            describe(f"{fmt}: every line break ends one", quotable(files, fmt))
        describe(f"{fmt}: now", quotable(files, fmt))
    print("\nTarget: 'now' starts mid-sentence <= 0.02 for every format.")


if __name__ == "__main__":
    main()
