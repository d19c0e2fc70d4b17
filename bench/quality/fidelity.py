#!/usr/bin/env python3
"""Ingest fidelity: the text localreason stores, word for word, against an independent rendering of the same file.

For every format localreason reads, real documents from Debian packages (or documents this script makes
from them with pandoc), each read by localreason's reader (``parse_bytes``, exactly what ``ingest`` stores)
and by a renderer that is not ours:

| format   | documents                                                     | reference rendering                 |
|----------|---------------------------------------------------------------|-------------------------------------|
| rst      | python3.11-doc library pages and developers-reference sources | the HTML page Sphinx rendered from the same source (main content, minus header links) |
| html     | the same python3.11-doc pages and developers-reference pages  | pandoc -t plain of the page's main content |
| markdown | nodejs-doc's API pages (.md)                                   | pandoc -f gfm -t plain              |
| docx     | DOCX made by pandoc from nodejs-doc's Markdown                 | pandoc -f docx -t plain             |
| pdf      | debian-reference and developers-reference PDFs (per document, and per page) | pdftotext on the same file |
| text     | developers-reference.txt (Sphinx's text build, wrapped at 70 columns) and python3.11-doc pages rendered by pandoc -t plain at 76 columns | the file itself |

Figures: word recall (with multiplicity: how much of what a reader sees is stored) and word precision
(how much of what is stored a reader sees; markup leaking in as words lowers it), per document and per
format (mean, median, worst 5 with names); markup leaks counted by kind (role and directive names,
``|substitutions|``, HTML entities); for reST, the prose lines of the rendered page (lines of its
paragraphs, list items and definitions with 4+ words) whose words are not stored in that order.

Rules, stated: words are runs of letters and digits, lower-cased. For reST, what Sphinx takes from *other*
pages is not in the source and is left out of the reference: the entries of a table of contents
(``toctree``) and the titles that a cross-reference without its own text (``:ref:`label```, ``:doc:``)
shows; prose lines holding such a title are counted apart, not as missing. A page whose rendered text is
mostly (over half) a table of contents is reported apart and not in the figures. PDF pages whose lines are
mostly table-of-contents entries (dot leaders or a trailing page number) are counted apart in the per-page
figures. Code is kept by every reader (no exclusion).

    python -m bench.quality.fidelity                    # 40 + 10 reST pages, the rest as listed
    python -m bench.quality.fidelity --rst-files 100    # more reST pages
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import re
import statistics
import subprocess
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("python3.11-doc", "debian-reference-en", "developers-reference", "nodejs-doc")
WORD = re.compile(r"\w+")
LEAKS = {
    "role": re.compile(r"(?<![\w`]):[a-z][\w:+.-]*:`"),
    "directive": re.compile(r"(?m)^\s*\.\. [\w:-]+::"),
    "substitution": re.compile(r"(?<![\w|])\|[A-Za-z][\w -]*[\w]\|(?![\w|])"),
    "entity": re.compile(r"&(?:[a-zA-Z]{2,8}|#\d{2,6}|#x[0-9a-fA-F]{2,6});"),
}


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


# ---------------------------------------------------------------- corpus


def stage(data_dir: Path) -> Path:
    """The Debian packages, downloaded and unpacked once into ``data_dir/unpacked``."""
    unpacked = data_dir / "unpacked"
    marker = unpacked / ".fidelity-complete"
    if marker.exists():
        return unpacked
    debs = data_dir / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in PACKAGES if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        print(f"Fetching {', '.join(missing)} with apt-get download ...", flush=True)
        subprocess.run(["apt-get", "download", *missing], cwd=debs, check=True)
    unpacked.mkdir(parents=True, exist_ok=True)
    for deb in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True)
    marker.touch()
    return unpacked


def tool(*cmd: str, data: bytes | None = None) -> str:
    try:
        out = subprocess.run(cmd, input=data, capture_output=True, check=True, timeout=300)
    except FileNotFoundError:
        raise SystemExit(f"{cmd[0]} is not installed: apt-get install pandoc poppler-utils") from None
    return out.stdout.decode("utf-8", errors="replace")


def cached(cache: Path, key: str, make, source: bytes) -> str:
    """``make()``'s text, kept in ``cache`` under ``key`` and a digest of ``source`` (what it renders): a changed
    document is rendered again."""
    digest = hashlib.sha1(source).hexdigest()[:12]
    path = cache / (re.sub(r"[^\w.-]+", "_", key) + f"-{digest}.txt")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make(), encoding="utf-8")
    return path.read_text(encoding="utf-8")


# ---------------------------------------------------------------- references


@dataclass
class Reference:
    text: str
    prose_lines: list[str] = field(default_factory=list)
    """Lines of the rendered page's paragraphs (reST only)."""
    foreign_lines: int = 0
    """Prose lines that hold another page's title (reST only): counted apart."""
    toc_share: float = 0.0


def _main_div(html_path: Path):
    import lxml.html

    root = lxml.html.parse(str(html_path)).getroot()
    main = root.xpath('//*[@role="main"]') or root.xpath("//body")
    top = main[0]
    for a in top.xpath('.//a[contains(concat(" ", @class, " "), " headerlink ")]'):
        a.drop_tree()
    return top


def sphinx_reference(html_path: Path, source: str = "") -> Reference:
    """The main text of a Sphinx page, minus what comes from other pages or the build (toctree entries,
    cross-page titles that ``source`` does not hold, section numbers)."""
    top = _main_div(html_path)
    for span in top.xpath('.//span[contains(@class, "section-number")]'):
        span.drop_tree()
    total = len(words(top.text_content()))
    toc = 0
    for el in top.xpath('.//div[contains(@class, "toctree-wrapper")]'):
        toc += len(words(el.text_content()))
        el.drop_tree()
    foreign = 0
    lines: list[str] = []
    for el in top.xpath(".//p | .//li[not(p)] | .//dd[not(p)] | .//td[not(p)] | .//th[not(p)]"):
        if el.xpath("ancestor::pre"):
            continue
        # A title shown for a reference to another page: the source holds only its label.
        alien = [s.text_content() for s in el.xpath('.//a[not(starts-with(@href, "#"))]'
                                                    '/span[contains(@class, "std-ref") or contains(@class, "doc")]')
                 if s.text_content().strip() not in source]
        for line in el.text_content().split("\n"):
            if len(words(line)) < 4:
                continue
            if any(a.strip() and a.strip() in line for a in alien):
                foreign += 1
            else:
                lines.append(line)
    for span in top.xpath('.//a[not(starts-with(@href, "#"))]/span[contains(@class, "std-ref") or '
                          'contains(@class, "doc")]'):
        if span.text_content().strip() in source:
            continue  # a title of the source's own (an explicit title)
        span.text = ""  # its words are another page's title
        for child in list(span):
            span.remove(child)
    return Reference(top.text_content(), lines, foreign, toc / max(total, 1))


def pandoc_html_reference(html_path: Path, cache: Path) -> Reference:
    import lxml.html

    def make() -> str:
        return tool("pandoc", "-f", "html", "-t", "plain", "--wrap=none", data=lxml.html.tostring(_main_div(html_path)))

    return Reference(cached(cache, f"html-{html_path.parent.name}-{html_path.name}", make, html_path.read_bytes()))


# ---------------------------------------------------------------- scoring


@dataclass
class Score:
    name: str
    recall: float
    precision: float
    leaks: Counter
    lines: int = 0
    lines_missing: int = 0
    foreign_lines: int = 0
    included_lines: int = 0
    missing_examples: list[str] = field(default_factory=list)


_REF_LABEL = re.compile(r":(?:std:)?(?:ref|doc):`([^`<>]+)`")
_OWN_LABEL = re.compile(r"(?m)^\.\. _([^:]+):\s*$")
_INCLUDE = re.compile(r"(?m)^\s*\.\. (?:include|literalinclude):: (\S+)")


def foreign_labels(source: str) -> Counter:
    """Words of ``:ref:`label``` / ``:doc:`path``` targets that are not this source's own sections (the reader
    shows another page's title there, which no reader of this file can know; they are set apart)."""
    own = {m.group(1).lower() for m in _OWN_LABEL.finditer(source)}
    return Counter(w for m in _REF_LABEL.finditer(source) if m.group(1).lower() not in own for w in words(m.group(1)))


def included_words(src: Path, source: str) -> str:
    """The text of the files ``src`` includes (not followed by the reader, by design)."""
    out = []
    for m in _INCLUDE.finditer(source):
        base = src.parent
        while m.group(1).startswith("/") and base.name != "_sources" and base != base.parent:
            base = base.parent  # a path from the top of the documentation's sources
        for candidate in (base / m.group(1).lstrip("/"), base / (m.group(1).lstrip("/") + ".txt")):
            if candidate.is_file():
                out.append(candidate.read_text(encoding="utf-8", errors="replace"))
    return " " + " ".join(words(" ".join(out))) + " "


def score(name: str, stored: str, ref: Reference, apart: Counter | None = None, included: str = "") -> Score:
    s, r = Counter(words(stored)) - (apart or Counter()), Counter(words(ref.text))
    common = sum((s & r).values())
    leaks = Counter({k: len(p.findall(stored)) for k, p in LEAKS.items()})
    out = Score(name, common / max(sum(r.values()), 1), common / max(sum(s.values()), 1), leaks)
    if ref.prose_lines:
        flat = " " + " ".join(words(stored)) + " "
        out.lines = len(ref.prose_lines)
        out.foreign_lines = ref.foreign_lines
        for line in ref.prose_lines:
            seq = " " + " ".join(words(line)) + " "
            if seq not in flat and seq in included:
                out.included_lines += 1
            elif seq not in flat:
                out.lines_missing += 1
                out.missing_examples.append(" ".join(line.split()))
    return out


def parse(path: Path, fmt: str, data: bytes | None = None) -> str:
    from localreason.ingest.parse import parse_bytes

    return parse_bytes(path.read_bytes() if data is None else data, path, fmt).text


# ---------------------------------------------------------------- per format


def rst_pairs(root: Path, n_python: int) -> list[tuple[Path, Path]]:
    html = root / "usr/share/doc/python3.11/html"
    lib = sorted((html / "_sources/library").glob("*.rst.txt"))
    step = max(1, len(lib) // n_python)
    pairs = [(p, html / "library" / p.name.replace(".rst.txt", ".html")) for p in lib[::step][:n_python]]
    dev = root / "usr/share/developers-reference"
    pairs += [(p, dev / p.name.replace(".rst.txt", ".html")) for p in sorted((dev / "_sources").glob("*.rst.txt"))]
    return [(s, h) for s, h in pairs if h.exists()]


def run_rst(root: Path, n: int, cache: Path) -> tuple[list[Score], list[str]]:
    scores, apart = [], []
    for src, page in rst_pairs(root, n):
        source = src.read_text(encoding="utf-8")
        ref = sphinx_reference(page, source)
        name = f"{src.parent.parent.parent.name}/{src.name}" if "developers" in str(src) else src.name
        if ref.toc_share > 0.5:
            apart.append(f"{name} (table of contents: {ref.toc_share:.0%} of its words)")
            continue
        if _INCLUDE.search(source):
            name += " (includes)"
        scores.append(score(name, parse(src, "rst"), ref, foreign_labels(source), included_words(src, source)))
    return scores, apart


def run_html(root: Path, n: int, cache: Path) -> tuple[list[Score], list[str]]:
    scores, apart = [], []
    for _, page in rst_pairs(root, n):
        ref = pandoc_html_reference(page, cache)
        if sphinx_reference(page).toc_share > 0.5:
            apart.append(f"{page.name} (table of contents)")
            continue
        scores.append(score(page.name, parse(page, "html"), ref))
    return scores, apart


def node_markdown(root: Path, n: int, cache: Path) -> list[tuple[str, bytes]]:
    pages = sorted((root / "usr/share/doc/nodejs/api").glob("*.md.gz"))
    pages = [p for p in pages if p.name not in ("all.md.gz", "index.md.gz")]
    step = max(1, len(pages) // n)
    return [(p.name.removesuffix(".gz"), gzip.decompress(p.read_bytes())) for p in pages[::step][:n]]


def run_markdown(root: Path, n: int, cache: Path) -> tuple[list[Score], list[str]]:
    scores = []
    for name, data in node_markdown(root, n, cache):
        def render() -> str:  # through HTML, so raw HTML blocks (a <pre> of pseudo-code) show as a browser shows them
            page = tool("pandoc", "-f", "gfm", "-t", "html", data=data)
            return tool("pandoc", "-f", "html", "-t", "plain", "--wrap=none", data=page.encode())

        ref = once_per_note(cached(cache, f"md-html-{name}", render, data))
        scores.append(score(name, parse(Path(name), "markdown", data), Reference(ref)))
    return scores, []


_NOTE = re.compile(r"^(?:\[\d+\]|\d+\.)\s+(?=.*↩︎\s*$)|^\[\d+\]\s+", re.DOTALL)


def once_per_note(text: str) -> str:
    """pandoc copies a footnote's text to every place that cites it; the source holds it once, so does this."""
    seen: set[str] = set()
    kept = []
    for para in re.split(r"\n\s*\n", text):
        if _NOTE.match(para):
            body = " ".join(_NOTE.sub("", para).split())
            if body in seen:
                continue
            seen.add(body)
        kept.append(para)
    return "\n\n".join(kept)


def run_docx(root: Path, n: int, cache: Path) -> tuple[list[Score], list[str]]:
    scores = []
    for name, data in node_markdown(root, n, cache):
        docx = cache / f"{name}.docx"
        if not docx.exists():
            cache.mkdir(parents=True, exist_ok=True)
            subprocess.run(["pandoc", "-f", "gfm", "-o", str(docx)], input=data, check=True, capture_output=True)
        ref = cached(cache, f"docx-{name}", lambda: tool("pandoc", "-f", "docx", "-t", "plain", "--wrap=none",
                                                        str(docx)), docx.read_bytes())  # fmt: skip
        scores.append(score(docx.name, parse(docx, "docx"), Reference(ref)))
    return scores, []


PDFS = ("usr/share/debian-reference/debian-reference.en.pdf", "usr/share/developers-reference/developers-reference.pdf")
_TOC_LINE = re.compile(r"(?:\.\s?){3,}\s*\d+\s*$|\s\d{1,4}\s*$")


def run_pdf(root: Path, n: int, cache: Path) -> tuple[list[Score], list[str], list[Score], int]:
    from localreason.ingest.parse import parse_bytes

    scores, pages, toc_pages = [], [], 0
    for rel in PDFS:
        path = root / rel
        doc = parse_bytes(path.read_bytes(), path, "pdf")
        ref = cached(cache, f"pdf-{path.name}", lambda: tool("pdftotext", str(path), "-"), path.read_bytes())
        scores.append(score(path.name, doc.text, Reference(ref)))
        by_page: dict[int, list[str]] = defaultdict(list)
        for b in doc.blocks:
            by_page[b.page or 0].append(doc.text[b.start:b.end])
        for number, page_ref in enumerate(ref.split("\f"), start=1):
            lines = [ln for ln in page_ref.split("\n") if ln.strip()]
            if not lines:
                continue
            if sum(bool(_TOC_LINE.search(ln)) for ln in lines) > len(lines) / 2:
                toc_pages += 1
                continue
            pages.append(score(f"{path.name} p.{number}", "\n".join(by_page.get(number, [])), Reference(page_ref)))
    return scores, [], pages, toc_pages


def run_text(root: Path, n: int, cache: Path) -> tuple[list[Score], list[str]]:
    import lxml.html

    scores = []
    dev = root / "usr/share/developers-reference/developers-reference.txt.gz"
    files = [("developers-reference.txt", gzip.decompress(dev.read_bytes()))]
    for _, page in rst_pairs(root, n)[: max(1, n // 2)]:
        made = cached(cache, f"txt76-{page.name}", lambda: tool(
            "pandoc", "-f", "html", "-t", "plain", "--columns=76", data=lxml.html.tostring(_main_div(page))),
            page.read_bytes())  # fmt: skip
        files.append((page.name.replace(".html", ".txt"), made.encode()))
    for name, data in files:
        scores.append(score(name, parse(Path(name), "text", data), Reference(data.decode("utf-8", "replace"))))
    return scores, []


# ---------------------------------------------------------------- report


def summary(fmt: str, scores: list[Score], apart: list[str], worst: int = 5) -> dict:
    rec = [s.recall for s in scores]
    prec = [s.precision for s in scores]
    leaks = sum((s.leaks for s in scores), Counter())
    print(f"\n### {fmt}: {len(scores)} documents" + (f" ({len(apart)} apart: {'; '.join(apart)})" if apart else ""))
    print(f"recall    mean {statistics.fmean(rec):.3f}  median {statistics.median(rec):.3f}  worst {min(rec):.3f}")
    print(f"precision mean {statistics.fmean(prec):.3f}  median {statistics.median(prec):.3f}  worst {min(prec):.3f}")
    print("worst recall:    " + ", ".join(f"{s.name} {s.recall:.3f}" for s in sorted(scores, key=lambda s: s.recall)[:worst]))
    print("worst precision: " + ", ".join(f"{s.name} {s.precision:.3f}" for s in sorted(scores, key=lambda s: s.precision)[:worst]))
    print("markup leaks:    " + ", ".join(f"{k} {leaks[k]}" for k in LEAKS))
    out = {"n": len(scores), "recall_mean": statistics.fmean(rec), "recall_median": statistics.median(rec),
           "recall_worst": min(rec), "precision_mean": statistics.fmean(prec),
           "precision_median": statistics.median(prec), "precision_worst": min(prec), "leaks": sum(leaks.values())}  # fmt: skip
    plain = [s.recall for s in scores if not s.name.endswith("(includes)")]
    if len(plain) < len(scores):
        print(f"without the {len(scores) - len(plain)} documents that include other files (not followed): recall "
              f"mean {statistics.fmean(plain):.3f}  median {statistics.median(plain):.3f}  worst {min(plain):.3f}")
        out["recall_worst_no_includes"] = min(plain)
    if any(s.lines for s in scores):
        lines = sum(s.lines for s in scores)
        missing = sum(s.lines_missing for s in scores)
        foreign = sum(s.foreign_lines for s in scores)
        included = sum(s.included_lines for s in scores)
        print(f"prose lines of the rendered pages: {lines:,}; not stored in order: {missing:,}; apart: holding "
              f"another page's title {foreign:,}, from an included file (not followed) {included:,}")
        out["lines_missing"] = missing
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/bench-fidelity"))
    ap.add_argument("--rst-files", type=int, default=40, help="python3.11-doc library pages (reST and HTML)")
    ap.add_argument("--md-files", type=int, default=30, help="nodejs-doc Markdown pages (and DOCX made from them)")
    ap.add_argument("--formats", default="rst,html,markdown,docx,pdf,text")
    ap.add_argument("--missing", type=int, default=0, help="print up to N reST prose lines not stored")
    args = ap.parse_args()
    root = stage(args.data_dir)
    cache = args.data_dir / "rendered"
    results = {}
    for fmt in args.formats.split(","):
        t = time.perf_counter()
        if fmt == "pdf":
            scores, apart, pages, toc = run_pdf(root, args.rst_files, cache)
            results[fmt] = summary(fmt, scores, apart)
            summary(f"pdf pages ({toc} table-of-contents pages apart)", pages, [])
        else:
            n = args.md_files if fmt in ("markdown", "docx") else args.rst_files
            scores, apart = globals()[f"run_{fmt}"](root, n, cache)
            results[fmt] = summary(fmt, scores, apart)
            if fmt == "rst" and args.missing:
                shown = [(s.name, line) for s in scores for line in s.missing_examples][: args.missing]
                for name, line in shown:
                    print(f"  missing [{name}] {line[:150]}")
        print(f"({time.perf_counter() - t:.1f} s)", flush=True)
    print("\n| format | docs | recall mean | median | worst | precision mean | median | worst | leaks |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fmt, r in results.items():
        worst = f"{r['recall_worst']:.3f}" + (f" ({r['recall_worst_no_includes']:.3f} without includes)"
                                              if "recall_worst_no_includes" in r else "")
        print(f"| {fmt} | {r['n']} | {r['recall_mean']:.3f} | {r['recall_median']:.3f} | {worst} | "
              f"{r['precision_mean']:.3f} | {r['precision_median']:.3f} | {r['precision_worst']:.3f} | {r['leaks']} |")
    print("\nTargets per format: recall median >= 0.99, worst >= 0.97; precision >= 0.98; "
          "reST: no rendered prose line missing.")


if __name__ == "__main__":
    main()
