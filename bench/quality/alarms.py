#!/usr/bin/env python3
"""False alarms of disagreement (issue #53, "no false alarms"): the share of ordinary answers that claim their
sources disagree, read from the records bench.quality.reason and bench.quality.manuals write with ``--out``.

Their libraries hold one source per answer or several that agree (a SQuAD paragraph, a manual's pages), so an
answer whose gaps say the sources disagree is a false alarm unless the sources really do (each one is printed to be
read). Grouped by domain (or manual) and kind of question.

    python -m bench.quality.reason --model obedient --out reason.jsonl ...
    python -m bench.quality.manuals --model obedient --out manuals.jsonl
    python -m bench.quality.alarms reason.jsonl manuals.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def claims_disagreement(record: dict) -> bool:
    """Whether a recorded answer says its sources disagree (bench.quality.conflicts.claims_disagreement's gap test)."""
    return any("disagree" in g.lower() for g in record.get("gaps", []))


def alarms(records: list[dict]) -> dict[tuple[str, str], tuple[int, int]]:
    """(domain or manual, kind) -> (answers claiming a disagreement, answers)."""
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in records:
        key = (r.get("domain") or r.get("manual") or "?", r.get("kind", "?"))
        out[key][0] += claims_disagreement(r)
        out[key][1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="+", type=Path, help="JSON lines written by bench.quality.reason/manuals --out")
    args = ap.parse_args()
    records = [json.loads(line) for path in args.records for line in path.open(encoding="utf-8") if line.strip()]
    print(f"{'domain':<20} {'kind':<14} {'alarms':>7} {'answers':>8} {'share':>7}")
    for (domain, kind), (n, total) in alarms(records).items():
        print(f"{domain:<20} {kind:<14} {n:>7} {total:>8} {n / total:>7.3f}")
    flagged = [r for r in records if claims_disagreement(r)]
    print(f"{'all':<20} {'':<14} {len(flagged):>7} {len(records):>8} {len(flagged) / max(1, len(records)):>7.3f}")
    for r in flagged:
        print(f"\n{r.get('domain') or r.get('manual')}: {r['q']}\n  " + "\n  ".join(g for g in r["gaps"] if "disagree" in g))


if __name__ == "__main__":
    main()
