#!/usr/bin/env python3
"""What changed between two runs of the same questions: the records bench.quality.manuals and bench.quality.reason
write with ``--out``, the code before (``BEFORE``) against the code after (``AFTER``).

Per manual and half (or per domain): the answerable questions whose first statement came to hold a gold answer
(gained) or stopped holding one (lost), the answers whose first quotation, phrase or gaps changed, and those whose
gaps say the evidence budget left passages out, before and after. ``--list`` prints each gained or lost question
with both first quotations.

    env PYTHONPATH=<checkout before> python -P -m bench.quality.manuals --model obedient --out before.jsonl
    python -m bench.quality.manuals --model obedient --out after.jsonl
    python -m bench.quality.changed before.jsonl after.jsonl --list
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path


def key(record: dict) -> tuple:
    """A question's identity in either bench's records (a manual's question id, or a QA domain's question)."""
    return (record.get("manual") or record.get("domain") or "?", record.get("id") or record.get("q") or "?",
            record.get("kind", "?"))  # fmt: skip


def first_holds(record: dict) -> bool:
    """Whether the first statement holds a gold answer (``held`` is per statement)."""
    held = record.get("held") or []
    return bool(held[0]) if isinstance(held, list) and held else False


def says_budget(record: dict) -> bool:
    """Whether the answer's gaps say the evidence budget left gathered passages out."""
    return any("evidence budget" in g for g in record.get("gaps", []))


def load(path: Path) -> dict:
    """The records of ``path`` by ``key``, a question asked twice (the same words) told apart by its turn."""
    out: dict = {}
    turns: Counter = Counter()
    for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
        k = key(r)
        out[(*k, turns[k])] = r
        turns[k] += 1
    return out


def changes(before: dict, after: dict) -> tuple[dict, list]:
    """(group -> counts, [(group, question, before's first quotation, after's) for each gained or lost])."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    moved = []
    for k in sorted(set(before) & set(after)):
        b, a = before[k], after[k]
        group = k[0] + (f", {a['half']}" if a.get("half") else "")
        c = counts[group]
        c["questions"] += 1
        first_b, first_a = (b.get("quotes") or [None])[0], (a.get("quotes") or [None])[0]
        c["first quotation changed"] += first_b != first_a
        c["phrase changed"] += b.get("phrase") != a.get("phrase")
        c["gaps changed"] += b.get("gaps") != a.get("gaps")
        c["budget gap before"] += says_budget(b)
        c["budget gap after"] += says_budget(a)
        if a.get("kind") == "answerable" and first_holds(a) != first_holds(b):
            c["gained" if first_holds(a) else "lost"] += 1
            moved.append((group, a.get("q") or k[1], first_b or "", first_a or "", first_holds(a)))
    return counts, moved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--list", action="store_true", help="print each gained or lost question")
    args = ap.parse_args()
    counts, moved = changes(load(args.before), load(args.after))
    names = ("questions", "gained", "lost", "first quotation changed", "phrase changed", "gaps changed",
             "budget gap before", "budget gap after")
    print(f"{'group':28}" + "".join(f"{n:>24}" for n in names))
    for group, c in counts.items():
        print(f"{group:28}" + "".join(f"{c.get(n, 0):>24}" for n in names))
    if args.list:
        for group, question, b, a, gained in moved:
            print(f"\n{'GAINED' if gained else 'LOST'} {group}: {question}")
            print(f"  before: {b[:200]!r}\n  after:  {a[:200]!r}")


if __name__ == "__main__":
    main()
