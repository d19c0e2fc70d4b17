"""The ``scans`` part: recall, precision, order, seconds and memory of the recognised pages at each dpi."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from .common import Page, in_order, recall_precision, rows_found, words
from .pages import Reading, in_child, page_texts, read_scan


def summary(values: list[float]) -> str:
    return f"mean {statistics.fmean(values):.3f}  median {statistics.median(values):.3f}"


def worst(pages: list[Page], values: list[float]) -> str:
    value, label = min(zip(values, (p.label for p in pages)))
    return f"worst {value:.3f} ({label})"


def report_scan(pages: list[Page], r: Reading, size: int) -> dict:
    print(f"\n### scanned at {r.dpi:g} dpi: {len(pages)} pages, {size / 1e6:.1f} MB of images (no text layer); "
          f"the first pass asked for {len(r.asked)} of {r.page_count} pages; rendered for recognition at {r.dpi:g} dpi")
    print("| page | words | recall | precision | in order | table rows | render s | recognise s | confidence |")
    print("|---|---|---|---|---|---|---|---|---|")
    scores = []
    for number, page in enumerate(pages, start=1):
        text = r.texts.get(number, "")
        recall, precision = recall_precision(text, page.ref)
        order = in_order(text, page.order)
        rows = f"{rows_found(text, page.rows):.3f} of {len(page.rows)}" if page.rows else ""
        i = r.asked.index(number) if number in r.asked else None
        timing = f"{r.render_s[i]:.2f} | {r.recognise_s[i]:.2f} | {r.confidence[i]:.3f}" if i is not None else "| |"
        print(f"| {page.label} | {len(words(page.ref))} | {recall:.3f} | {precision:.3f} | {order:.3f} | {rows} | "
              f"{timing} |")
        scores.append((page, recall, precision, order))
    body = [s for s in scores if s[0].kind == "body"]
    out = {"recall": [s[1] for s in body], "precision": [s[2] for s in body], "order": [s[3] for s in body]}
    named = [s[0] for s in body]
    print(f"body pages ({len(body)}): recall {summary(out['recall'])}  {worst(named, out['recall'])}")
    print(f"                precision {summary(out['precision'])}  {worst(named, out['precision'])}")
    print(f"                in order {summary(out['order'])}  {worst(named, out['order'])}")
    total = [a + b for a, b in zip(r.render_s, r.recognise_s)]
    if total:
        print(f"seconds per page ({len(total)} pages): render p50 {statistics.median(r.render_s):.2f} mean "
              f"{statistics.fmean(r.render_s):.2f}; recognise p50 {statistics.median(r.recognise_s):.2f} mean "
              f"{statistics.fmean(r.recognise_s):.2f}; both p50 {statistics.median(total):.2f} mean "
              f"{statistics.fmean(total):.2f}, worst {max(total):.2f}")
    if r.read_dpi and min(r.read_dpi) < r.dpi - 0.5:
        low, high = round(min(r.read_dpi)), round(max(r.read_dpi))
        print("the recogniser scaled the page images down (ocr.MAX_SIDE, rapidocr's Global.max_side_len): it read "
              "them at "
              f"{low if low == high else f'{low}-{high}'} dpi")
    print(f"recogniser loaded in {r.load_s:.1f} s (with a first run on a blank image: the models compile then); peak "
          f"memory {r.peak_mb:.0f} MB: the RSS high-water mark (VmHWM) of the process that recognised these pages (a "
          f"fresh one per dpi; {r.rss_loaded_mb:.0f} MB once it had loaded the recogniser)")
    goal = {300: 0.95, 150: 0.90}.get(int(r.dpi))
    if goal is not None and out["recall"]:
        met = statistics.fmean(out["recall"]) >= goal
        under = [f"{p.label} {v:.3f}" for p, v in zip(named, out["recall"]) if v < goal]
        print(f"goal: recall >= {goal} at {r.dpi:g} dpi: mean {'met' if met else 'NOT met'}; pages under it: "
              f"{', '.join(under) or 'none'}")
    page, _, _, _ = min(body, key=lambda s: s[1], default=(None,) * 4)
    if page is not None:
        text = r.texts.get(pages.index(page) + 1, "")
        missed = Counter(words(page.ref)) - Counter(words(text))
        extra = Counter(words(text)) - Counter(words(page.ref))
        print(f"{page.label}, the lowest recall: not read {sum(missed.values())} words, most often "
              f"{', '.join(f'{w} {c}' for w, c in missed.most_common(8))}; read and not in the reference "
              f"{sum(extra.values())}, most often {', '.join(f'{w} {c}' for w, c in extra.most_common(8))}")
    out["texts"] = r.texts
    return out


def report_layout(pages: list[Page], orig: bytes, layout: list[str], results: dict) -> None:
    """The table and two-column pages against what the text layer gives, read three ways."""
    from localreason.ingest.parse import parse_bytes

    ours = page_texts(parse_bytes(orig, Path("original.pdf"), "pdf"))
    print("\n### the table and the two-column page: recognised against their text layer")
    for number, page in enumerate(pages, start=1):
        if page.kind == "body":
            continue
        readers = {"text layer read by localreason": ours.get(number, ""), "pdftotext": page.ref,
                   "pdftotext -layout": layout[number - 1]}  # fmt: skip
        readers.update({f"recognised at {dpi:g} dpi": r["texts"].get(number, "") for dpi, r in results.items()})
        if page.kind == "table":
            what = f"{page.label}: table rows ({len(page.rows)} lines of pdftotext -layout with 3+ cells) found whole"
            values = {name: rows_found(text, page.rows) for name, text in readers.items()}
        else:
            what = f"{page.label}: reading order (the share of the laid-out text's word 4-grams found in order)"
            values = {name: in_order(text, page.order) for name, text in readers.items()}
        print(what + ": " + ", ".join(f"{name} {v:.3f}" for name, v in values.items()))


def run_scans(pages: list[Page], orig: bytes, layout: list[str], scans: dict[float, bytes], max_pixels: int,
              max_side: int | None = None) -> dict:  # fmt: skip
    results = {dpi: report_scan(pages, in_child(read_scan, data, dpi, max_pixels, max_side), len(data))
               for dpi, data in scans.items()}  # fmt: skip
    report_layout(pages, orig, layout, results)
    return results
