"""Evaluate `reason` on facts written as fields and table rows, not as sentences.

Manuals, data sheets, notes and reference pages state many facts as ``Label: value`` lines or table
rows ("Weight: 11 kg", "smallint | 2 bytes | small-range integer"). bench/quality/reason.py's sets
(SQuAD, CoQA) are all prose, so they cannot see whether such a fact can be quoted. Two real sources,
neither written for this project, each its own library:

- **debian**: package records of this machine's dpkg database (``/var/lib/dpkg/status``), one text
  file per package, as ``apt show`` prints them (``Maintainer: ...``, ``Installed-Size: ...``, then
  the description in prose). Questions ask for one field in words of their own ("Who maintains
  libssl3?"); an answer holds it when a quotation contains the field's value and comes from that
  package's file. Near-miss questions ask for a field that was removed from that package's file
  (the other fields and the description stay): the answer should stop or say it is not answered.
- **postgres**: the HTML manual of PostgreSQL 15 (Debian's postgresql-doc-15, fetched with
  ``apt-get download`` once), the pages with data tables, through localreason's own HTML parser. A
  question asks for a cell by its row's first cell and its column's header ("What is the storage
  size of smallint?", asked only for a first cell found in one row of all the tables); an answer
  holds it when one quotation contains both the first cell and the asked cell, from that page.

The questions are made by templates, so they are more regular than a person's; they are fixed by a
seed, and nothing in localreason was fitted on them. Reported per source: support, first statement,
refused, marked (answered with a gap saying it is not answered), near-miss handled, words per answer.
Run it on two checkouts to compare them (from this checkout's root: PYTHONPATH=<other checkout>:$PWD
python -P -m bench.quality.fields, as bench/trace.py explains); the libraries are built once and shared, as
ingestion is the same.

    python -m bench.quality.fields --data-dir /tmp/fields-cache --model obedient
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.quality.reason import unanswered
from bench.trace import ObedientModel

DEBIAN_FIELDS = {
    "Maintainer": ["Who maintains {p}?", "Who is the maintainer of the {p} package?"],
    "Version": ["Which version of {p} is installed?", "What is the version of {p}?"],
    "Installed-Size": ["How much disk space does {p} take once installed?", "What is the installed size of {p}?"],
    "Section": ["Which archive section is {p} filed under?", "What section does {p} belong to?"],
    "Homepage": ["Where is the homepage of {p}?", "What is the website of the {p} project?"],
    "Architecture": ["Which architecture is {p} built for?"],
    "Priority": ["What priority does the {p} package have?"],
    "Source": ["Which source package is {p} built from?"],
}  # fmt: skip
PG_PACKAGE = "postgresql-doc-15"
PER_TABLE = 2


@dataclass
class Question:
    text: str
    kind: str  # answerable or near-miss
    source_file: str  # the file (its name) that holds the answer, or held it before the field was removed
    needles: tuple[str, ...]  # what one quotation must contain, all of it (normalised)


def norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w<>@.:/+-]+", " ", text.lower()).split())


# ---------------------------------------------------------------- debian package records


def debian_records(status: Path) -> list[dict[str, str]]:
    """The package records of a dpkg status file: field name -> value (continuation lines joined)."""
    records = []
    for block in status.read_text(encoding="utf-8", errors="replace").split("\n\n"):
        rec: dict[str, str] = {}
        last = None
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and last:
                rec[last] += "\n" + line
            elif ":" in line:
                last, _, value = line.partition(":")
                rec[last] = value.strip()
        if rec.get("Package") and rec.get("Description"):
            records.append(rec)
    return records


def debian_set(status: Path, n_packages: int, seed: int) -> tuple[dict[str, str], list[Question]]:
    """Files (name -> text) and questions: one answerable question per package, and near-miss questions
    for a third more packages whose asked field is removed from their file."""
    rng = random.Random(f"debian-{seed}")
    records = [r for r in debian_records(status) if sum(f in r for f in DEBIAN_FIELDS) >= 5]
    rng.shuffle(records)
    n_near = n_packages // 3
    files, questions = {}, []
    for i, rec in enumerate(records[:n_packages + n_near]):
        pkg = rec["Package"]
        near = i >= n_packages
        fields = [f for f in DEBIAN_FIELDS if f in rec and len(rec[f]) <= 120]
        if near:  # a removed field must not be stated elsewhere (nor implied: no Source means the package's name)
            fields = [f for f in fields if f != "Source"
                      and not any(norm(rec[f]) in norm(rec[g]) for g in rec if g != f)]  # fmt: skip
            if not fields:
                continue
        asked = rng.choice(fields)
        fname = f"{pkg}.txt"
        keep = [f for f in rec if f not in ("Status", "Conffiles") and not (near and f == asked)]
        files[fname] = "\n".join(f"{f}: {rec[f]}" for f in keep) + "\n"
        text = rng.choice(DEBIAN_FIELDS[asked]).format(p=pkg)
        questions.append(Question(text, "near-miss" if near else "answerable", fname, (norm(rec[asked]),)))
    return files, questions


# ---------------------------------------------------------------- postgres manual tables


def postgres_pages(data_dir: Path) -> Path:
    """The unpacked HTML manual (apt-get download, once)."""
    html = data_dir / "pg" / "usr/share/doc" / PG_PACKAGE / "html"
    done = data_dir / "pg" / ".complete"  # an interrupted unpacking is not trusted
    if done.is_file():
        return html
    debs = data_dir / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", PG_PACKAGE], cwd=debs, check=True)
    deb = next(debs.glob(f"{PG_PACKAGE}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(data_dir / "pg")], check=True)
    done.write_text(deb.name)
    return html


def _cell(el) -> str:
    return " ".join(el.text_content().split())


def postgres_set(html: Path, n_questions: int, seed: int) -> tuple[dict[Path, str], list[Question]]:
    """Pages with data tables (path -> file name) and cell questions on rows with a unique first cell."""
    from lxml import html as lxml_html

    rows = []  # (page, table number, header, cells)
    for page in sorted(html.glob("*.html")):
        tree = lxml_html.parse(str(page))
        for t, table in enumerate(tree.xpath('//div[@class="table"]//table')):
            header = [_cell(th) for th in table.xpath(".//thead/tr[1]/th")]
            if len(header) < 2:
                continue
            for tr in table.xpath(".//tbody/tr"):
                cells = [_cell(td) for td in tr.xpath("./td")]
                if len(cells) == len(header):
                    rows.append((page, t, header, cells))
    counts: dict[str, int] = {}
    for *_, cells in rows:
        counts[norm(cells[0])] = counts.get(norm(cells[0]), 0) + 1
    rng = random.Random(f"postgres-{seed}")
    by_table: dict[tuple, list[Question]] = {}
    for page, t, header, cells in rows:
        key = cells[0]
        if counts[norm(key)] != 1 or not 2 <= len(key) <= 40 or not re.search(r"[A-Za-z]", key):
            continue
        options = [j for j in range(1, len(cells)) if 1 <= len(cells[j]) <= 60 and norm(cells[j]) != norm(key)
                   and norm(cells[j]) and header[j]]  # fmt: skip
        if options:
            j = rng.choice(options)
            by_table.setdefault((page.name, t), []).append(
                Question(f"What is the {header[j].lower()} of {key}?", "answerable", page.name,
                         (norm(key), norm(cells[j]))))  # fmt: skip
    tables = sorted(by_table)
    rng.shuffle(tables)
    asked = []  # at most PER_TABLE questions of one table, so that a few long tables do not make the set
    for table in tables:
        asked += rng.sample(by_table[table], min(PER_TABLE, len(by_table[table])))
    asked = asked[:n_questions]
    pages = {page: page.name for page in sorted({html / q.source_file for q in asked})}
    return pages, asked


# ---------------------------------------------------------------- library, answers, scores


def build_library(home: Path, files: dict, embedder):
    """A library of ``files`` (name -> text, or path -> name), ingested once; a fingerprint of the files and of
    how localreason reads and cuts them (its chunking key) checks the cache."""
    from localreason.config import load_settings
    from localreason.library import Library

    from localreason.ingest import pipeline
    from localreason.ingest.chunk import ChunkParams

    params = ChunkParams.from_settings(load_settings(home))
    keys = pipeline.chunking_keys(params) if hasattr(pipeline, "chunking_keys") else pipeline.chunking_key(params)
    digest = hashlib.sha256(str(keys).encode())  # how localreason reads and cuts them
    for k, v in sorted((str(k), str(v)) for k, v in files.items()):
        digest.update(f"{k}\0{v}\0".encode())
    mark = home / ".complete"
    folder = home.parent / f"{home.name}-files"
    if mark.is_file():
        if mark.read_text() != digest.hexdigest():
            raise SystemExit(f"{home} holds another selection of documents; delete it and run again.")
        return Library(settings=load_settings(home), embedder=embedder)
    shutil.rmtree(home, ignore_errors=True)  # an interrupted build: start again
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    lib = Library(settings=load_settings(home), embedder=embedder)
    for k, v in files.items():
        if isinstance(k, Path):
            (folder / v).write_bytes(k.read_bytes())
        else:
            (folder / k).write_text(v, encoding="utf-8")
    report = lib.ingest([folder], home.name)
    if not report.ok:
        raise SystemExit(f"{home.name}: ingesting failed ({report.stopped or report.by_status('failed')[:3]}).")
    mark.write_text(digest.hexdigest())
    return lib


def score(q: Question, ans, files_of: dict[str, str]) -> dict:
    held = []
    for s in ans.statements:
        ok = False
        for r in s.references:
            quote = norm(r.quotation)
            ok |= files_of.get(r.document_id) == q.source_file and all(n in quote for n in q.needles)
        held.append(ok)
    return {"q": q.text, "kind": q.kind, "noEvidence": ans.no_evidence, "unanswered": unanswered(ans),
            "held": held, "quotes": [" | ".join(r.quotation for r in s.references) for s in ans.statements],
            "words": sum(len(r.quotation.split()) for s in ans.statements for r in s.references)}  # fmt: skip


def summary(records: list[dict]) -> dict:
    a = [r for r in records if r["kind"] == "answerable"]
    near = [r for r in records if r["kind"] == "near-miss"]
    answered = [r for r in a if not r["noEvidence"]]

    def share(xs, f):
        return sum(map(f, xs)) / len(xs) if xs else float("nan")

    return {"n": f"{len(a)}/{len(near)}", "support": share(a, lambda r: any(r["held"])),
            "first": share(a, lambda r: bool(r["held"]) and r["held"][0]),
            "refused": share(a, lambda r: r["noEvidence"]),
            "marked": share(a, lambda r: r["unanswered"] and not r["noEvidence"]),
            "near-miss": share(near, lambda r: r["unanswered"]),
            "near-miss quoted": share(near, lambda r: not r["unanswered"]),
            "words": share(answered, lambda r: r["words"])}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/fields"))
    ap.add_argument("--sources", nargs="*", default=["debian", "postgres"])
    ap.add_argument("--status", type=Path, default=Path("/var/lib/dpkg/status"), help="a dpkg status file")
    ap.add_argument("--questions", type=int, default=150, help="answerable questions per source")
    ap.add_argument("--model", default="obedient", choices=("obedient", "real"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="one JSON line per question")
    args = ap.parse_args()

    import localreason
    from localreason.config import Settings, load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.generate import LlamaGenerator
    from localreason.models import resolve_embedding_model, resolve_gguf
    from localreason.reason import reason

    print(f"localreason from {Path(localreason.__file__).parent}")
    settings = load_settings(args.data_dir / "libs")
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(settings))
    real = LlamaGenerator(resolve_gguf(settings))
    model = ObedientModel(real) if args.model == "obedient" else real
    out = args.out.open("w") if args.out else None
    rows = {}
    t0 = time.perf_counter()
    for source in args.sources:
        if source == "debian":
            files, questions = debian_set(args.status, args.questions, args.seed)
        elif source == "postgres":
            files, questions = postgres_set(postgres_pages(args.data_dir), args.questions, args.seed)
        else:
            raise SystemExit(f"unknown source {source!r}: debian or postgres")
        lib = build_library(args.data_dir / "libs" / source, files, embedder)
        files_of = {d.id: Path(d.source_path).name for d in lib.documents()}
        records = []
        for q in questions:
            ans = reason(lib, q.text, generator=model, max_tokens=Settings.answer_budget)
            rec = score(q, ans, files_of)
            records.append(rec)
            if out:
                out.write(json.dumps({"source": source, **rec}) + "\n")
        lib.close()
        rows[source] = summary(records)
        print(f"  {source}: {len(files)} files, {len(questions)} questions, {time.perf_counter() - t0:.0f} s so far",
              flush=True)  # fmt: skip
    cols = ("support", "first", "refused", "marked", "near-miss", "near-miss quoted", "words")
    print(f"\nreason, default settings (answer budget {Settings.answer_budget}), model: {args.model}")
    print(f"{'source':<10} {'n (a/nm)':>9} " + " ".join(f"{c:>16}" for c in cols))
    for name, s in rows.items():
        print(f"{name:<10} {s['n']:>9} " + " ".join(f"{s[c]:>16.3f}" if c != "words" else f"{s[c]:>16.1f}"
                                                    for c in cols))  # fmt: skip


if __name__ == "__main__":
    main()
