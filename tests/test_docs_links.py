"""The README is a front page and docs/ holds the rest: every relative link between them must lead somewhere.

A link to a file that moved, or to a heading that was renamed, fails here with the file, the link and what is
missing, instead of sending a reader to a page that is not there. Anchors follow GitHub's rule for heading ids
(lowercase, spaces to '-', punctuation other than '-' and '_' dropped, a repeated heading numbered -1, -2, ...).
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 260

_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"``.+?``|`[^`\n]+`", re.S)
_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.M)
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.M)
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def pages(root: Path = ROOT) -> list[Path]:
    """The pages this check covers: the README, the pages under docs/ (the history too), bench/README.md and the
    model cards."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md")), *sorted((root / "bench").glob("README.md")),
            *sorted((root / "localreason" / "models").glob("*/README.md"))]


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are code, not links."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's id for a heading: its rendered words, lowercase, punctuation but '-' and '_' dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading shows its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a page offers: its headings' ids (repeats numbered as GitHub does) and explicit anchors."""
    text = path.read_text(encoding="utf-8")
    found: set[str] = set(_HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The link targets of a page, inline and reference-style, outside code."""
    prose = _prose(path.read_text(encoding="utf-8"))
    return _INLINE_LINK.findall(prose) + _REFERENCE.findall(prose)


def broken_links(page: Path) -> list[str]:
    """Each relative link of the page whose file, or whose heading in that file, does not exist."""
    problems = []
    for target in links(page):
        if _SCHEME.match(target) or target.startswith("//"):
            continue  # a web address: not this check's business
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            problems.append(f"{page.name}: {target} -> no file {dest}")
        elif anchor and dest.is_file() and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{page.name}: {target} -> no heading #{anchor} in {dest.name}")
    return problems


def undefined_references(page: Path) -> list[str]:
    """Each reference-style link (``[text][name]``) of the page whose name no ``[name]: target`` line defines
    (it would show as plain text); a number in brackets after another (``[1][2]``) is an example's citation."""
    prose = _prose(page.read_text(encoding="utf-8"))
    defined = set(re.findall(r"^\[([^\]]+)\]:\s", prose, re.M))
    used = set(re.findall(r"\]\[([^\]]+)\]", prose))
    return [f"{page.name}: [{name}] is not defined" for name in sorted(used - defined) if not name.isdigit()]


def test_every_reference_link_is_defined():
    problems = [problem for page in pages() for problem in undefined_references(page)]
    assert problems == [], "\n".join(problems)


def test_every_relative_link_of_the_readme_and_docs_leads_somewhere():
    problems = [problem for page in pages() for problem in broken_links(page)]
    assert problems == [], "fix these links (a moved page or a renamed heading):\n" + "\n".join(problems)


def test_the_readme_stays_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move the detail to a page under docs/ "
        "and link it from the README's 'Where to read more'")


def test_the_check_finds_a_missing_page_and_a_missing_heading(tmp_path):
    """The checker itself: a link to a page that is not there, and to a heading a page does not have, are caught;
    headings with code, punctuation and repeats, code blocks and web addresses are not mistaken for either."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "usage.md").write_text(
        "# Usage\n\n## Faster commands while `serve` runs\n\n## OCR (scanned pages)\n\n## Notes\n\n## Notes\n",
        encoding="utf-8")
    (tmp_path / "README.md").write_text(
        "[ok](docs/usage.md#faster-commands-while-serve-runs) [ok](docs/usage.md#ocr-scanned-pages)\n"
        "[second](docs/usage.md#notes-1) [web](https://example.org/x#y) [here](#intro)\n\n## Intro\n\n"
        "```\n[not a link](docs/nowhere.md)\n```\n`[code](docs/nowhere.md)`\n\n"
        "[gone](docs/servers.md) [renamed](docs/usage.md#faster-commands)\n[ref]: docs/usage.md#no-such\n",
        encoding="utf-8")
    problems = [problem for page in pages(tmp_path) for problem in broken_links(page)]
    assert len(problems) == 3, problems
    assert "docs/servers.md -> no file" in problems[0]
    assert "no heading #faster-commands in usage.md" in problems[1]
    assert "no heading #no-such in usage.md" in problems[2]
