"""Checks bench/data/opposing.json (#53): yes/no questions, each with two passages from different documents taking
opposite sides, ``written`` (a real paragraph against a short document written for the set) or ``natural`` (two real
paragraphs, referenced by domain, article title and paragraph index, never copied). Run as
``python -m bench.data.check_opposing --qa-data FOLDER``. Part rule: "fit" when a real paragraph is in SQuAD 1.1 dev's
fitting half (qa.article_half, seed "squad-dev-halves") or in new_wiki (the readers were trained on it), else "held
out". Prints counts; exits 1 on any problem.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from bench.data import qa

FILE = Path(__file__).with_name("opposing.json")


def side_problems(c: dict, side: str, arts: dict) -> list[str]:
    """What is wrong with side ``side`` of case ``c`` (a referenced paragraph, or a written case's own b)."""
    ref, where = c[side], f"{c.get('id')}.{side}"
    if "domain" not in ref:
        if side == "a" or c.get("kind") != "written" or not ref.get("text") or not ref.get("title"):
            return [f"{where}: a written document (title, text) is only allowed as b of a written case"]
        if not ref.get("quote") or ref["quote"] not in ref["text"]:
            return [f"{where}: quote {ref.get('quote')!r} is not in the written text"]
        return [f"{where}: the written text copies a's quote"] if c["a"].get("quote", "\0") in ref["text"] else []
    if c.get("kind") == "written" and side == "b":
        return [f"{where}: a written case's b must be a written document (title, text)"]
    where += f" ({ref['domain']} {ref.get('title')!r} #{ref.get('paragraph')})"
    paragraphs = arts.get(ref["domain"], {}).get(ref.get("title"))
    if paragraphs is None:
        return [f"{where}: no such domain or article (domains: {', '.join(qa.FILES)})"]
    if not isinstance(ref.get("paragraph"), int) or not 0 <= ref["paragraph"] < len(paragraphs):
        return [f"{where}: no such paragraph (the article has {len(paragraphs)})"]
    if not ref.get("quote") or ref["quote"] not in paragraphs[ref["paragraph"]]["context"]:
        return [f"{where}: quote {ref.get('quote')!r} is not in the paragraph"]
    return []


def check(cases: list[dict], data: Path | None) -> list[str]:
    """Every problem found in ``cases``, one line each (empty when the set is sound)."""
    used = {r["domain"] for c in cases for r in (c["a"], c["b"]) if r.get("domain") in qa.FILES} | {"squad-dev"}
    arts = {d: {a["title"]: a["paragraphs"] for a in qa.articles(d, data)} for d in sorted(used)}
    half = qa.article_half(sorted(arts["squad-dev"]), "squad-dev-halves")
    problems = [] if len(cases) >= 40 else [f"only {len(cases)} cases; at least 40 are needed"]
    problems += [f"id {i!r} is used {n} times" for i, n in Counter(c.get("id") for c in cases).items() if n > 1]
    for c in cases:
        cid, says = c.get("id"), [c["a"].get("says"), c["b"].get("says")]
        rules = {f"kind {c.get('kind')!r} is not 'written' or 'natural'": c.get("kind") not in ("written", "natural"),
                 "the question does not end with '?'": not str(c.get("question", "")).endswith("?"),
                 f"the sides say {says}, not one 'yes' and one 'no'": sorted(map(str, says)) != ["no", "yes"]}
        problems += [f"{cid}: {why}" for why, bad in rules.items() if bad]
        problems += side_problems(c, "a", arts) + side_problems(c, "b", arts)
        refs = (c["a"], c["b"])
        fit = any(r.get("domain") == "new_wiki" or (r.get("domain") == "squad-dev"
                                                     and half.get(r.get("title")) == "fit") for r in refs)  # fmt: skip
        if c.get("part") != ("fit" if fit else "held out"):
            problems.append(f"{cid}: part is {c.get('part')!r}; the rule gives {'fit' if fit else 'held out'!r}")
    return problems


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Check bench/data/opposing.json against the shared QA files.")
    qa.add_argument(ap)
    ap.add_argument("--file", type=Path, default=FILE, help=f"the cases (default: {FILE})")
    args = ap.parse_args(argv)
    cases = json.loads(args.file.read_text(encoding="utf-8"))
    problems = check(cases, args.qa_data)
    for (kind, part), n in sorted(Counter((c.get("kind"), c.get("part")) for c in cases).items()):
        print(f"{kind:8} {part:9} {n}")
    no = sum(c.get("kind") == "written" and c["a"].get("says") == "no" for c in cases)
    print(f"total {len(cases)}; written cases whose real paragraph says 'no': {no}")
    if problems:
        sys.exit(f"{args.file}: {len(problems)} problem(s):\n  " + "\n  ".join(problems))
    print(f"{args.file}: OK")


if __name__ == "__main__":
    main()
