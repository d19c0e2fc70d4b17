"""What is a document: a text file is read whatever its name (Debian's ``copyright``, a ``.1`` manual page source),
a binary or compressed one is skipped with why, and the stylesheets, scripts, source maps and lock files of a
documentation folder are skipped unless the user asks for them (an ``--include`` glob that picks them, or the file
named). The watcher decides as the walk does."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from localreason.ingest.walk import discover
from localreason.service import Service
from localreason.watch import Root

from test_watch import FAKE_CLI, Clock, Watch

COPYRIGHT = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: quasar
Source: https://example.org/quasar

Files: *
Copyright: 2019-2024 Marguerite Okonkwo
License: GPL-3+
 The quasar scheduler may be redistributed under the terms of the GNU General Public License.
"""
MANPAGE = """.TH QUASAR 1 "March 2024"
.SH NAME
quasar \\- schedules the nightly pelican backups
.SH DESCRIPTION
The pelican backups start at midnight and finish before dawn.
"""
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8


def statuses(report) -> dict[str, tuple[str, str]]:
    return {Path(f.path).name: (f.status, f.reason) for f in report.files}


def found(lib, words: str) -> list[str]:
    return [h.content for h in lib.deep_search(words, limit=10) if all(w in h.content for w in words.split())]


@pytest.fixture
def debian_doc(tmp_path):
    """A folder like /usr/share/doc/quasar: text files whose names say nothing, and a compressed changelog."""
    root = tmp_path / "doc" / "quasar"
    root.mkdir(parents=True)
    (root / "copyright").write_text(COPYRIGHT)
    (root / "README").write_text("Quasar\n======\n\nQuasar keeps the lighthouse logbook in order.\n")
    (root / "NEWS.Debian").write_text("quasar (2.0-1) unstable; urgency=low\n\n  * The tangerine option is gone.\n")
    (root / "quasar.1").write_text(MANPAGE)
    (root / "quasar.conf").write_text("# where the nightly archive goes\narchive_dir = /srv/walrus\n")
    (root / "changes").write_bytes("Le caf\u00e9 du p\u00eacheur ferme \u00e0 minuit.\n".encode("cp1252") * 30)
    (root / "THANKS").write_text("---" + "Merci \u00e0 Ren\u00e9e et \u00e0 Zo\u00e9. " * 400)  # UTF-8 cut at 8 KB
    (root / "LISEZMOI").write_text("Le phare ouvre \u00e0 l'aube.\n", encoding="utf-16")
    (root / "changelog.Debian.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)))
    return root


def test_text_files_whose_names_say_nothing_are_read_and_found(lib, debian_doc):
    got = statuses(lib.ingest([debian_doc], "docs"))
    for name in ("copyright", "README", "NEWS.Debian", "quasar.1", "quasar.conf", "changes", "THANKS", "LISEZMOI"):
        assert got[name][0] == "added", (name, got[name])
    assert "not UTF-8: decoded as" in got["changes"][1], "an encoding found by charset-normalizer"
    assert got["changelog.Debian.gz"][0] == "skipped" and "compressed" in got["changelog.Debian.gz"][1]
    assert "unpack it" in got["changelog.Debian.gz"][1]
    assert found(lib, "Marguerite Okonkwo") and found(lib, "pelican backups") and found(lib, "tangerine option")
    formats = {Path(d.source_path).name: d.format for d in lib.documents()}
    assert formats["copyright"] == formats["quasar.1"] == "text"


def test_binary_files_whose_names_say_nothing_are_skipped_with_why(lib, tmp_path):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nThe ferry leaves at nine.\n")
    (folder / "quasard").write_bytes(ELF)
    (folder / "blob").write_bytes(random.Random(7).randbytes(20_000))
    (folder / "state.dat").write_bytes(b"counter=" + b"\x00\x01\x02" * 100)
    got = statuses(lib.ingest([folder], "bin"))
    assert got["notes.md"][0] == "added"
    assert got["quasard"] == ("skipped", "binary file (an ELF program or library)")
    assert got["blob"][0] == "skipped" and got["blob"][1].startswith("binary file (")
    assert got["state.dat"] == ("skipped", "binary file (it holds NUL bytes)")
    assert [Path(d.source_path).name for d in lib.documents()] == ["notes.md"]


@pytest.fixture
def site(tmp_path):
    """A built documentation site: its pages, and what the pages need (styles, scripts, maps, a lock file)."""
    root = tmp_path / "site"
    (root / "_static").mkdir(parents=True)
    (root / "index.html").write_text("<html><body><h1>Guide</h1><p>The lighthouse opens at dawn.</p></body></html>")
    (root / "_static" / "docbook-xsl.css").write_text("body { font-family: serif; }\n\n.note { color: teal; }\n")
    (root / "_static" / "doctools.js").write_text("function highlight(words) {\n  return words.length;\n}\n")
    (root / "_static" / "jquery.min.css").write_text(".a{color:red}")
    (root / "_static" / "doctools.js.map").write_text('{"version": 3, "sources": ["doctools.ts"]}\n')
    (root / "package-lock.json").write_text('{"name": "site", "lockfileVersion": 3}\n')
    (root / "build.py").write_text("def build():\n    \"\"\"Render the lighthouse guide.\"\"\"\n")
    return root


def test_stylesheets_scripts_maps_and_lock_files_are_not_documents(lib, site):
    got = statuses(lib.ingest([site], "site"))
    assert got["index.html"][0] == got["build.py"][0] == "added", "pages and source code are read"
    assert got["docbook-xsl.css"] == ("skipped", "a stylesheet, not a document (ingest the file by name to have "
                                                 "it read)")  # fmt: skip
    assert got["doctools.js"][0] == "skipped" and got["doctools.js"][1].startswith("a script (JavaScript), not a")
    assert got["jquery.min.css"][0] == "skipped" and "a minified file" in got["jquery.min.css"][1]
    assert got["doctools.js.map"][0] == "skipped" and "a source map" in got["doctools.js.map"][1]
    assert got["package-lock.json"][0] == "skipped" and "a lock file" in got["package-lock.json"][1]
    assert sorted(Path(d.source_path).name for d in lib.documents()) == ["build.py", "index.html"]


def test_a_glob_that_picks_them_or_naming_the_file_reads_them(lib, site):
    got = statuses(lib.ingest([site], "styles", include=["*.css"]))
    assert got == {"docbook-xsl.css": ("added", ""), "jquery.min.css": ("added", "")}, "*.css asks for stylesheets"
    got = statuses(lib.ingest([site], "everything", include=["*"]))
    assert got["docbook-xsl.css"][0] == "skipped", "a glob that picks any file does not ask for stylesheets"
    got = statuses(lib.ingest([site / "_static" / "doctools.js"], "named"))
    assert got == {"doctools.js": ("added", "")}
    assert found(lib, "highlight words") or found(lib, "words.length")


def test_the_command_line_reads_a_named_stylesheet_and_an_include_glob(tmp_path, site):
    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, str(FAKE_CLI), "--home", str(tmp_path / "home"), *args],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        return done.stdout + done.stderr

    out = " ".join(cli("ingest", str(site), "-c", "site", "--verbose").split())
    assert "2 added" in out and "a stylesheet, not a document" in out, out
    out = " ".join(cli("ingest", str(site / "_static" / "docbook-xsl.css"), "-c", "site").split())
    assert "1 added" in out, out
    out = " ".join(cli("ingest", str(site), "-c", "scripts", "--include", "*.js").split())
    assert "1 added" in out, out


def test_the_watcher_reads_what_an_ingest_of_the_folder_reads(lib, debian_doc, site, tmp_path):
    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nThe ferry leaves at nine.\n")
    lib.ingest([folder], "work")
    w = Watch(Service(lib), Clock())
    try:
        new = {"copyright": COPYRIGHT.encode(), "quasar.1": MANPAGE.encode(), "site.css": b"body { color: teal }\n",
               "app.js": b"let x = 1;\n", "quasard": ELF, "changelog.gz": b"\x1f\x8b\x08\x00\x00"}  # fmt: skip
        for name, data in new.items():
            (folder / name).write_bytes(data)
        w.seen(*(folder / name for name in new))
        w.drain()
        assert sorted(w.changes()) == [("added", "copyright"), ("added", "quasar.1")]
    finally:
        w.close()
    assert found(lib, "Marguerite Okonkwo"), "the watcher's copy is searchable"
    for root_folder, include in ((folder, ()), (debian_doc, ()), (site, ()), (site, ("*.css",)), (site, ("*",))):
        candidates, _, _ = discover([root_folder], list(include))
        read = {str(c.path) for c in candidates}
        root = Root("work", str(root_folder), include)
        for path in root_folder.rglob("*"):
            if path.is_file():
                assert root.admits(str(path)) == (str(path) in read), (path, include)


def test_a_file_the_library_holds_stays_read_and_a_glob_that_leaves_it_out_says_so(tmp_path, isolated_home,
                                                                                    monkeypatch):  # fmt: skip
    """A script or stylesheet read before the rule that skips them (an earlier version read .js and .css as code)
    is not dropped by the next sync: the library holds it, so it stays read. One the user leaves out with a glob is
    removed with that reason, not "the file no longer exists"; one the user named stays, sync after sync."""
    from fakes import FakeEmbedder

    from localreason.config import load_settings
    from localreason.ingest import walk
    from localreason.library import Library

    site = tmp_path / "site"
    site.mkdir()
    (site / "guide.md").write_text("# Guide\n\nTurn the dial to reset the boiler.\n", encoding="utf-8")
    (site / "app.js").write_text("function reset() { return dial.turn(0); }\n", encoding="utf-8")
    (site / "theme.css").write_text("body { color: #222; }\n", encoding="utf-8")
    (site / "print.css").write_text("@media print { body { margin: 0 } }\n", encoding="utf-8")
    with Library(settings=load_settings(isolated_home, reader="off"), embedder=FakeEmbedder()) as lib:
        with monkeypatch.context() as before_the_rule:
            before_the_rule.setattr(walk, "not_a_document", lambda name: None)
            assert lib.ingest([site], "web").counts["added"] == 4  # as an earlier version read the folder
        lib.ingest([site / "print.css"], "web")  # and one stylesheet named by itself
        for _ in range(2):
            for r in lib.sync("web"):
                assert not r.by_status("removed") and not r.by_status("added"), r.files
        names = {Path(d.source_path).name for d in lib.documents("web")}
        assert names == {"guide.md", "app.js", "theme.css", "print.css"}, "an upgrade drops nothing"
        report = lib.ingest([site], "web", exclude=["*.css"], prune=True)
        removed = {Path(f.path).name: f.reason for f in report.by_status("removed")}
        assert removed == {"theme.css": "no longer read: the --include/--exclude globs leave it out"}, removed
        assert {Path(d.source_path).name for d in lib.documents("web")} == {"guide.md", "app.js", "print.css"}
