"""Fault figures: kills survived, hostile files tried, fuzz examples run, concurrent requests held.

    python -m bench.speed.faults                    # everything (a few minutes on two cores)
    python -m bench.speed.faults --kills 40         # more kill points

Each part uses the real store, FAISS index and parsing process with a fake
embedder, in real processes (bench/speed/fake_library.py: this benchmark's copy of
the test suite's fake embedder, tests/conftest.py, and process, tests/lib_proc.py),
so a figure here is the same check the tests make, repeated; the fuzz part runs two
of the test files with pytest.
It prints one table per part and exits non-zero if any check failed.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from bench import ROOT
from bench.speed.fake_library import check_after_crash, corpus, folder_of, kill_after_lines, open_lib, run, start


def kills(work: Path, n: int, seed: int) -> tuple[int, int]:
    """Kill ingest, sync, remove and reindex at random points; check the library after each; finish cleanly."""
    rng = random.Random(seed)
    root = corpus(work, 30)
    home = work / "kill-home"
    survived = 0
    for i in range(n):
        action = rng.choice(["ingest", "ingest", "sync", "remove", "reindex"])
        if action == "ingest":
            kill_after_lines(start(home, "ingest", str(root), "work"), rng.randint(0, 29))
        else:
            args = {"sync": ("sync",), "remove": ("remove", "work"), "reindex": ("reindex",)}[action]
            proc = start(home, *args)
            time.sleep(rng.uniform(0.0, 1.5))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
        try:
            check_after_crash(home)
            survived += 1
        except AssertionError as exc:
            print(f"  kill {i + 1} ({action}) left the library inconsistent: {exc}")
    code, _, err = run(home, "ingest", str(root), "work")
    clean = work / "clean"
    clean.mkdir()
    run(clean, "ingest", str(root), "work")
    a, b = open_lib(home), open_lib(clean)
    same = (len(a.documents()), a.store.paragraph_count()) == (len(b.documents()), b.store.paragraph_count())
    a.close(), b.close()
    print(f"| kills | {n} ({seed=}) | survived {survived} | re-run to the clean counts: {'yes' if same else 'NO'} |")
    return survived + same, n + 1


def make_docx(path: Path, title: str, sections: list[tuple[str, list[str]]]) -> Path:
    """A DOCX with a Title paragraph, then Heading 1 sections of body paragraphs, and a small table (as
    tests/files.py's)."""
    import docx

    document = docx.Document()
    document.add_paragraph(title, style="Title")
    for heading, paragraphs in sections:
        document.add_heading(heading, level=1)
        for text in paragraphs:
            document.add_paragraph(text)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Part", "Warranty"
    table.cell(1, 0).text, table.cell(1, 1).text = "Inverter", "five years"
    document.save(str(path))
    return path


def _docx_bomb(path: Path, paragraphs: int) -> None:
    body = "".join(f"<w:p><w:r><w:t>p{i}</w:t></w:r></w:p>" for i in range(paragraphs))
    xml = ('<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/'
           f'wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>')  # fmt: skip
    make_docx(path.with_suffix(".seed.docx"), "Seed", [("One", ["text"])])
    buf = io.BytesIO()
    with zipfile.ZipFile(path.with_suffix(".seed.docx")) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            data = xml.encode() if item.filename == "word/document.xml" else src.read(item)
            out.writestr(item, data, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    path.write_bytes(buf.getvalue())
    path.with_suffix(".seed.docx").unlink()


def hostile(work: Path) -> tuple[int, int]:
    """A folder of hostile files beside good ones: every file named, none hangs, the good ones ingested."""
    root = folder_of(work / "hostile", 3, "good", "pumps")
    os.mkfifo(root / "pipe.txt")
    (root / "zero.txt").symlink_to("/dev/zero")
    (root / "loop.md").symlink_to(root / "loop.md")
    (root / "dangling.md").symlink_to(root / "missing.md")
    Path(os.fsdecode(bytes(root) + b"/caf\xe9 name.txt")).write_text("A file whose name is Latin-1.\n")
    _docx_bomb(root / "bomb.docx", 2_000_000)
    (root / "deep.html").write_text("<div>" * 100_000 + "<p>deep text</p>" + "</div>" * 100_000 + "<p>after</p>")
    (root / "line.txt").write_text("word " * 4_000_000)  # a 20 MB line
    (root / "blob.txt").write_text("QUJD" * 5_000_000)  # 20 MB without a space
    rng = random.Random(7)
    for ext in ("txt", "md", "rst", "html", "pdf", "docx", "py"):
        (root / f"random.{ext}").write_bytes(bytes(rng.randrange(256) for _ in range(20_000)))
    lib = open_lib(work / "hostile-home")
    t0 = time.perf_counter()
    report = lib.ingest([root], "hostile")
    seconds = time.perf_counter() - t0
    lib.close()
    print("| file | status | reason |")
    print("|---|---|---|")
    for f in sorted(report.files, key=lambda f: f.path):
        print(f"| {Path(f.path).name} | {f.status} | {f.reason[:160]} |")
    given = sum(1 for _ in os.scandir(root))
    good = all(any(Path(f.path).name == f"good{i:02d}.md" and f.status == "added" for f in report.files)
               for i in range(3))  # fmt: skip
    print(f"\n{given} files tried, {len(report.files)} reported, good files ingested: {'yes' if good else 'NO'}, "
          f"{seconds:.1f} s in all")  # fmt: skip
    return int(good) + int(len(report.files) == given), 2


def concurrency(work: Path, rounds: int) -> tuple[int, int]:
    """A long-lived reader answering searches while a writer ingests and removes, ``rounds`` times."""
    home = work / "conc-home"
    run(home, "ingest", str(folder_of(work / "base", 5, "base", "pumps")), "base")
    reader = start(home, "serve", stdin=subprocess.PIPE)
    reader.stdout.readline()
    latencies, errors = [], 0
    big = corpus(work / "conc", 20)
    for _ in range(rounds):
        writer = start(home, "ingest", str(big), "big")
        while writer.poll() is None:
            t0 = time.perf_counter()
            reader.stdin.write("search pumps\n")
            reader.stdin.flush()
            reply = reader.stdout.readline()
            latencies.append(time.perf_counter() - t0)
            errors += '"hits"' not in reply
        run(home, "remove", "big")
    reader.stdin.close()
    reader.wait(30)
    p50 = statistics.median(latencies) * 1000
    print(f"| concurrent reads | {len(latencies)} searches during {rounds} ingests + removes | errors {errors} | "
          f"p50 {p50:.0f} ms, max {max(latencies) * 1000:.0f} ms |")  # fmt: skip
    return int(errors == 0), 1


def fuzz() -> tuple[int, int]:
    """Run the Hypothesis tests and count the examples they ran."""
    tests = ["tests/test_fuzz_inputs.py", "tests/test_hostile_parse.py"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--hypothesis-show-statistics", *[t for t in tests if (ROOT / t).exists()]],
                          cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    examples = sum(int(n) for n in re.findall(r"(\d+) passing examples?", done.stdout))
    tests_run = len(re.findall(r"^tests/\S+::\S+:$", done.stdout, re.M))
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    print(f"| fuzz | {tests_run} property tests | {examples} examples | {last} |")
    return int(done.returncode == 0), 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="ingest + remove rounds beside the reader")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ok = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("k", "h", "c", "c/conc"):
            (work / name).mkdir()
        for part in (lambda: kills(work / "k", args.kills, args.seed), lambda: hostile(work / "h"),
                     lambda: concurrency(work / "c", args.rounds), fuzz):  # fmt: skip
            good, checks = part()
            ok, total = ok + good, total + checks
            print()
    print(f"{ok}/{total} checks held")
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(main())
