"""The question-answering data every benchmark, tuning and training run reads: SQuAD-format gzipped files in one
folder, never downloaded.

The folder is, in order: the ``--qa-data`` argument of the command, the ``LOCALREASON_QA_DATA`` environment
variable, or ``../shared/data/qa`` beside the repository when it exists. Its README gives each file's provenance and
licence. A missing folder or file stops the command with one message naming what is missing and where it was
looked for. Nothing under ``localreason/`` reads it.

What each set is for (``ROLES``), written down once:

- train: SQuAD 1.1 train (the readers learn from it; nothing is evaluated on it);
- fit: SQuAD 1.1 dev together with SQuAD 2.0 dev (the same articles: one pool, whose unanswerable questions
  are asked about paragraphs that are in the library), and SQuAD-shifts new_wiki. Each is split by article into a
  fitting half and an evaluation half (``article_half``): a constant is chosen on the fitting half, and reported on
  the evaluation half beside it;
- held out: SQuAD-shifts reddit and Amazon reviews: reported on, never trained or tuned on.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
from pathlib import Path

from bench import ROOT

ENV = "LOCALREASON_QA_DATA"
DEFAULT = ROOT.parent / "shared" / "data" / "qa"
"""Where the shared folder lies beside a checkout of the project."""

FILES = {
    "squad-train": ("squad1.1-train.json.gz", "SQuAD 1.1 train (Wikipedia)"),
    "squad-dev": ("squad1.1-dev.json.gz", "SQuAD 1.1 dev (Wikipedia)"),
    "squad2-dev": ("squad2.0-dev.json.gz", "SQuAD 2.0 dev (Wikipedia, with unanswerable questions)"),
    "new_wiki": ("squadshifts-new_wiki.json.gz", "SQuAD-shifts new_wiki (newer Wikipedia articles)"),
    "reddit": ("squadshifts-reddit.json.gz", "SQuAD-shifts reddit (Reddit posts)"),
    "amazon": ("squadshifts-amazon_reviews.json.gz", "SQuAD-shifts Amazon product reviews"),
}
"""Name -> (file in the folder, what it is)."""

ROLES = {"squad-train": "train", "squad-dev": "fit", "squad2-dev": "fit", "new_wiki": "fit", "reddit": "held out",
         "amazon": "held out"}  # fmt: skip
"""Each set's role: ``train``, ``fit`` (split by article into a fitting and an evaluation half) or ``held out``."""

LICENCES = {"squad-train": "CC BY-SA 4.0", "squad-dev": "CC BY-SA 4.0", "squad2-dev": "CC BY-SA 4.0",
            "new_wiki": "CC BY 4.0", "reddit": "CC BY 4.0", "amazon": "CC BY 4.0"}  # fmt: skip


class MissingData(SystemExit):
    """The QA data folder or one of its files is not where it was looked for (a SystemExit: the message is what
    the user sees, and the command ends with status 1)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def add_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--qa-data`` option every command that reads the sets takes."""
    parser.add_argument("--qa-data", type=Path, default=None, metavar="FOLDER",
                        help=f"the folder of SQuAD-format files (default: ${ENV}, else {DEFAULT})")  # fmt: skip


def folder(given: Path | str | None = None) -> Path:
    """The data folder: ``given``, else $LOCALREASON_QA_DATA, else ../shared/data/qa; MissingData if it is absent."""
    where = given or os.environ.get(ENV) or DEFAULT
    path = Path(where).expanduser()
    if not path.is_dir():
        how = "--qa-data" if given else (ENV if os.environ.get(ENV) else "the default")
        raise MissingData(f"The question-answering data folder {path} ({how}) does not exist. It holds the SQuAD-"
                          f"format files ({', '.join(f for f, _ in FILES.values())}); give its place with --qa-data "
                          f"FOLDER or ${ENV}. In this project it is ../shared/data/qa beside the repository.")
    return path


def path(name: str, data: Path | str | None = None) -> Path:
    """The file of set ``name`` (a key of FILES) in the data folder; MissingData if it is not there."""
    if name not in FILES:
        raise ValueError(f"unknown QA set {name!r}; known: {', '.join(FILES)}")
    base = folder(data)
    file, label = FILES[name]
    found = base / file
    if not found.is_file():
        raise MissingData(f"{label} is missing: expected the file {found}. The folder {base} should hold the shared "
                          f"SQuAD-format files; give another with --qa-data FOLDER or ${ENV}.")  # fmt: skip
    return found


def articles(name: str, data: Path | str | None = None) -> list[dict]:
    """The articles of set ``name``: ``[{"title", "paragraphs": [{"context", "qas": [{"id", "question",
    "answers": [{"text", "answer_start"}], "is_impossible"?}]}]}]``."""
    file = path(name, data)
    try:
        with gzip.open(file, "rt", encoding="utf-8") as f:
            return json.load(f)["data"]
    except (OSError, EOFError, ValueError, KeyError) as exc:
        raise MissingData(f"{file} could not be read as gzipped SQuAD JSON ({exc.__class__.__name__}: {exc}). "
                          "Copy it again from the shared folder.") from exc


def squad_dev_pool(data: Path | str | None = None) -> list[dict]:
    """SQuAD 1.1 dev with SQuAD 2.0 dev's unanswerable questions added to the paragraphs they were written on (2.0
    dev's 35 articles are 1.1 dev's, paragraph for paragraph): 48 articles, the unanswerable questions marked
    ``is_impossible``."""
    pool = articles("squad-dev", data)
    by_context = {p["context"]: p for a in pool for p in a["paragraphs"]}
    for a in articles("squad2-dev", data):
        for p in a["paragraphs"]:
            impossible = [dict(q, answers=[]) for q in p["qas"] if q.get("is_impossible")]
            if impossible:
                by_context[p["context"]].setdefault("qas", []).extend(impossible)
    return pool


def article_half(titles: list[str], seed: str) -> dict[str, str]:
    """Each article's half, ``fit`` or ``eval``: every other article of a seeded shuffle of the sorted titles, so an
    article's questions are all on one side."""
    order = sorted(set(titles))
    random.Random(seed).shuffle(order)
    return {t: ("fit" if i % 2 else "eval") for i, t in enumerate(order)}
