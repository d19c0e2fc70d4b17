"""Questions written by reading real manuals, the measure of answers on technical documentation (issue #51).

Each manual is a Debian package, fetched with `apt-get download` and unpacked once into ``--data-dir``; its pages
are read by localreason's own readers, as a user's library would hold them. The questions are ours, written by
reading the pages, one JSON line each in ``bench/data/manuals/<manual>.jsonl``:

    {"id": "sqlite-017", "page": "lang_createtable.html", "kind": "default",
     "question": "What is the default conflict resolution algorithm?", "answers": ["ABORT"],
     "evidence": "The default conflict resolution algorithm is ABORT."}

- ``page``: the file the answer is on, relative to the manual's root (ROOT below);
- ``kind``: ``fact``, ``howto``, ``which`` (which option, command, file, function ...), ``why``, ``default`` (a default
  value) or ``unanswerable`` (a question a reader of this manual could ask that it does not answer; ``page`` is
  empty, ``answers`` and ``evidence`` too);
- ``answers``: short gold answers, each occurring word for word in the page's stored text; ``evidence``: the
  sentence (or option line with its description) that answers, word for word in the stored text, holding every
  answer. ``python -m bench.data.manuals --check`` checks all of it against the pages as localreason reads them.

Roles: the apache manual (``HELD_OUT``) is kept out of every fit, calibration and training; the others may be fit
on, one half of each by page (``page_half``), and are reported on their other half beside.

Reserved for the project's own checks and never used here (DEVELOPERS.md): postgresql-doc-*, debian-policy,
developers-reference, git-doc, the FAQ pages of python3.*-doc.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

QUESTIONS = Path(__file__).resolve().parent / "manuals"

MANUALS = {
    # name: (Debian package, the manual's root inside the unpacked package, which of its files are pages, licence)
    "sqlite": ("sqlite3-doc", "usr/share/doc/sqlite3", r"^(?!releaselog/).*\.html$", "public domain"),
    "debian-reference": ("debian-reference-en", "usr/share/debian-reference", r"^[^/]*\.en\.html$", "GPL-2+"),
    "debian-handbook": ("debian-handbook", "usr/share/doc/debian-handbook/html/en-US", r"^[^/]*\.html$",
                        "GPL-2+ or CC BY-SA 3.0"),
    "apache": ("apache2-doc", "usr/share/doc/apache2-doc/manual/en", r"\.html$", "Apache-2.0"),
}
# The package version each manual's questions were last checked against (``--check``): another version's pages may
# word things otherwise (apache2-doc 2.4.68 rewrote eleven of the sentences our questions quote), so the bench says so.
CHECKED_VERSION = {
    "sqlite": "3.40.1-2+deb12u2",
    "debian-reference": "2.100",
    "debian-handbook": "11.20220922",
    "apache": "2.4.68-1~deb12u1",
}
HELD_OUT = ("apache",)
KINDS = ("fact", "howto", "which", "why", "default", "unanswerable")


@dataclass
class ManualQuestion:
    id: str
    manual: str
    page: str
    kind: str
    question: str
    answers: list[str] = field(default_factory=list)
    evidence: str = ""

    def held_by(self, quotation: str) -> bool:
        """Does ``quotation`` hold a gold answer (whitespace and case aside)?"""
        quote = squeeze(quotation).lower()
        return any(squeeze(a).lower() in quote for a in self.answers if a.strip())


def squeeze(text: str) -> str:
    return " ".join(text.split())


def questions(manual: str) -> list[ManualQuestion]:
    """The questions written for ``manual``, in file order."""
    path = QUESTIONS / f"{manual}.jsonl"
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(ManualQuestion(manual=manual, **json.loads(line)))
            except (ValueError, TypeError) as exc:
                raise SystemExit(f"{path}:{n}: not a question line ({exc})") from exc
    return out


def page_half(manual: str, page: str) -> str:
    """``fit`` or ``eval``: the half of a fit manual a page is on (every other page of a seeded order); all of a
    held-out manual is ``eval``."""
    if manual in HELD_OUT or not page:
        return "eval"
    return "fit" if random.Random(f"{manual}:{page}").random() < 0.5 else "eval"


def by_part(rows_of) -> dict[str, list[dict]]:
    """Every manual's rows (``rows_of(manual)``: dicts with the page's ``half``) by the part of a report they belong
    to: the held-out manual, or the fit manuals' fit or evaluation halves (bench/tune's grids choose on the fit
    halves only)."""
    parts: dict[str, list[dict]] = {}
    for manual in MANUALS:
        for row in rows_of(manual):
            name = "Apache (held out)" if manual in HELD_OUT else f"fit manuals, {row['half']} halves"
            parts.setdefault(name, []).append(row)
    return parts


def version(manual: str, data_dir: Path) -> str:
    """The version of ``manual``'s package in ``data_dir`` (from its file name, as apt-get download writes it)."""
    fetch(manual, data_dir)
    package = MANUALS[manual][0]
    deb = next((data_dir / "debs").glob(f"{package}_*.deb"))
    return unquote(deb.name.split("_")[1])


def version_problem(manual: str, data_dir: Path) -> str | None:
    """A sentence saying the unpacked package is not the version the questions were checked against, or None."""
    have, checked = version(manual, data_dir), CHECKED_VERSION[manual]
    if have == checked:
        return None
    return (f"{manual}: the questions were checked against {MANUALS[manual][0]} {checked}, and {data_dir} holds "
            f"{have}; its pages may word the answers otherwise. Run `python -m bench.data.manuals --check {manual}` "
            f"and mend the questions it names (then CHECKED_VERSION), or fetch {checked} into {data_dir / 'debs'}")


def fetch(manual: str, data_dir: Path) -> Path:
    """The manual's root folder, its package downloaded and unpacked into ``data_dir`` once."""
    package, root, _, _ = MANUALS[manual]
    unpacked = data_dir / "unpacked" / package
    if not unpacked.is_dir():
        debs = data_dir / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        if not list(debs.glob(f"{package}_*.deb")):
            print(f"Fetching {package} with apt-get download ...", flush=True)
            wanted = f"{package}={CHECKED_VERSION[manual]}"
            if subprocess.run(["apt-get", "download", wanted], cwd=debs).returncode:
                print(f"{wanted} cannot be had; fetching the version apt offers", flush=True)
                subprocess.run(["apt-get", "download", package], cwd=debs, check=True)
        tmp = unpacked.with_name(unpacked.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        subprocess.run(["dpkg-deb", "-x", str(next(debs.glob(f"{package}_*.deb"))), str(tmp)], check=True)
        tmp.rename(unpacked)
    return unpacked / root


def pages(manual: str, data_dir: Path) -> list[Path]:
    """The manual's pages (the files its library holds)."""
    root = fetch(manual, data_dir)
    keep = re.compile(MANUALS[manual][2])
    return sorted(p for p in root.rglob("*") if p.is_file() and keep.search(p.relative_to(root).as_posix()))


def stored_text(path: Path) -> str:
    """The text localreason stores for the page at ``path`` (its own reader for the format)."""
    from localreason.ingest.parse import detect_format, parse_bytes

    return parse_bytes(path.read_bytes(), path, detect_format(path)).text


def check(manual: str, data_dir: Path) -> list[str]:
    """Every problem with ``manual``'s questions: a bad field, a page that is not one of the manual's, an answer or
    evidence not found word for word in the page as stored, an answer not inside its evidence."""
    root = fetch(manual, data_dir)
    problems = [p for p in [version_problem(manual, data_dir)] if p]
    known = {p.relative_to(root).as_posix() for p in pages(manual, data_dir)}
    texts: dict[str, str] = {}
    seen = set()
    for q in questions(manual):
        where = f"{manual} {q.id}"
        if q.id in seen:
            problems.append(f"{where}: the id is used twice")
        seen.add(q.id)
        if q.kind not in KINDS or not q.question.strip().endswith("?"):
            problems.append(f"{where}: kind {q.kind!r} or a question that does not end in '?'")
        if q.kind == "unanswerable":
            if q.answers or q.evidence or q.page:
                problems.append(f"{where}: an unanswerable question has no page, answers or evidence")
            continue
        if q.page not in known:
            problems.append(f"{where}: {q.page!r} is not a page of the manual")
            continue
        if q.page not in texts:
            texts[q.page] = squeeze(stored_text(root / q.page))
        text, evidence = texts[q.page], squeeze(q.evidence)
        if not q.answers or not evidence:
            problems.append(f"{where}: no answers or no evidence")
        elif evidence not in text:
            problems.append(f"{where}: the evidence is not in the page's stored text: {evidence[:80]!r}")
        for a in q.answers:
            if squeeze(a) not in text:
                problems.append(f"{where}: the answer {a!r} is not in the page's stored text")
            elif squeeze(a) not in evidence:
                problems.append(f"{where}: the answer {a!r} is not inside its evidence")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/manuals"), help="where the packages are unpacked")
    ap.add_argument("--check", action="store_true", help="check every question against its page")
    ap.add_argument("manuals", nargs="*", default=[m for m in MANUALS if (QUESTIONS / f"{m}.jsonl").is_file()])
    args = ap.parse_args()
    if not args.check:
        ap.print_help()
        return 2
    failed = 0
    for manual in args.manuals:
        qs = questions(manual)
        problems = check(manual, args.data_dir)
        kinds = Counter(q.kind for q in qs)
        halves = Counter(page_half(manual, q.page) for q in qs if q.kind != "unanswerable")
        print(f"{manual}: {len(qs)} questions ({', '.join(f'{k} {kinds[k]}' for k in KINDS)}); pages "
              f"{len({q.page for q in qs if q.page})}; halves {dict(halves)}; "
              f"{'held out' if manual in HELD_OUT else 'fit'}; {len(problems)} problem(s)")  # fmt: skip
        for p in problems:
            print(f"  {p}")
        failed += bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
