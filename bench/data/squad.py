"""SQuAD v1.1 dev for benchmarks: fetched once from the bigbench source archive on PyPI, cached.

The file (CC BY-SA 4.0) is inside `bigbench==1.0.0`'s sdist at
bigbench/benchmark_tasks/squad_shifts/squaddev_v1.1.json.
"""

from __future__ import annotations

import json
from pathlib import Path


def squad_path(data_dir: Path) -> Path:
    """The cached SQuAD dev JSON, downloading and extracting it the first time."""
    from bench.data.qa_sets import member

    return member(data_dir, "squaddev_v1.1.json")


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
