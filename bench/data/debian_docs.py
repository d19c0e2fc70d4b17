"""The Debian documentation corpus of the ingest benchmarks: the reST sources and HTML pages of python3.11-doc
and the PDF of debian-reference-en, fetched once with `apt-get download` and unpacked with `dpkg-deb -x`
into a data folder (bench.speed.ingest, bench.speed.embed and bench.quality.exact read it; bench.quality.sentences
reads its unpacked folder)."""

from __future__ import annotations

import glob
import subprocess
from pathlib import Path

PACKAGES = ("python3.11-doc", "debian-reference-en")


def fetch_corpus(data_dir: Path) -> tuple[list[Path], Path]:
    """Download and unpack the Debian packages once; return (files to ingest, staging folder)."""
    unpacked = data_dir / "unpacked"
    if not unpacked.is_dir():
        data_dir.mkdir(parents=True, exist_ok=True)
        debs = data_dir / "debs"
        debs.mkdir(exist_ok=True)
        print("Fetching the corpus packages with apt-get download ...", flush=True)
        subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
        tmp = data_dir / "unpacked.tmp"
        tmp.mkdir(exist_ok=True)
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
        tmp.rename(unpacked)
    html_root = unpacked / "usr/share/doc/python3.11/html"
    rst = sorted(Path(p) for p in glob.glob(str(html_root / "_sources/**/*.rst.txt"), recursive=True))
    html = sorted(p for p in html_root.rglob("*.html") if "_sources" not in p.parts)
    pdf = sorted(unpacked.glob("usr/share/debian-reference/debian-reference.en.pdf"))
    return rst + html + pdf, unpacked
