#!/usr/bin/env python3
"""Scanned pages: what text recognition reads, against an independent reading of the same pages; its cost.

The pages are real: a seeded sample of body pages of the Debian Reference PDF (debian-reference-en, 261 pages
with a text layer), its most tabular page (the page holding a "Table N.N" caption whose lines, as
``pdftotext -layout`` shows them, most often hold three cells or more), and a two-column page this script
sets from the same document's prose (DejaVu Serif 10 pt, a title across both columns, a text layer of its
own, drawn with pdfium). Together they are the "original", a PDF with a text layer.

Its **scanned copies**: each page rendered by pdfium at 150 and 300 dpi (``--dpi``) and saved by Pillow as a
PDF of images only (JPEG, Pillow's default quality 75): no text layer. Each copy is read through localreason's
own functions, in a process of this benchmark (a fresh one per dpi): ``parse_bytes`` (the first pass must ask
for every page: the usable-text decision on a scan), then per page ``ocr.render_pdf_page`` at the scan's
resolution and ``ocr.recognise`` (timed), then ``parse_bytes`` again with the readings; the stored text of a
page is its blocks' (``Block.page``). The ingest's own path (the recognition worker) is the search part's.

Parts (``--parts``, all by default, in this order):

- ``scans``: per page and dpi, word recall and precision of the stored text against ``pdftotext -f P -l P`` of
  the original page (bench.quality.fidelity's rules: words are runs of letters and digits, lower-cased,
  counted with multiplicity; both sides NFKC-normalised), "in order" (the share of the word 4-grams of the
  page as ``pdftotext -layout`` reads it, rows across, found in the recognised text: lines or table cells out
  of order lower it), seconds per page (rendering and recognition apart; p50 and mean), and peak memory: the
  RSS high-water mark (VmHWM) of the process that recognised them, a fresh one per dpi (multiprocessing's
  spawn) that loads the recogniser and nothing else of this run. The table page adds its rows (lines of
  ``pdftotext -layout`` with 3+ cells) found whole, cell after cell; the two-column page its reading order
  against the text as it was laid out; both beside the text layer read by localreason, by ``pdftotext`` and by
  ``pdftotext -layout`` (which reads across the columns: what interleaving scores).
- ``decision``: ``pdf.needs_recognition`` over every page of the whole Debian Reference PDF (pages flagged and
  what recognition reads on them, the time it adds to text extraction per page), over the scanned copies, and
  over a mixed PDF: text pages, scanned pages, scanned pages under a text layer (as OCR software saves them),
  scanned pages under a junk layer (letters mapped to signs, as a font without a usable character map leaves):
  the confusion counts.
- ``textpdf`` (issue #33, part 5): the text PDF through the real ingest (``Library.ingest``, the packaged
  embedding model), ``ocr = auto`` against ``ocr = off`` in the same run, alternating. The first ingest of a
  PDF embeds everything (its time is shown); the timed ones ingest copies of the same bytes under new names,
  which reuse those vectors, so they time what recognition could change (parse, decision, chunking, store).
  Twice: Debian Reference pages 2-261 (no page needs recognition: no recognition worker may start: the
  worker registry and this process's children are checked, and the parse worker's memory maps for
  OpenCV/OpenVINO libraries) and the whole PDF (its page 1, the cover, is an image without a text layer).
- ``parse``: ``parse_bytes`` of the whole text PDF, timed; run it on the checkout before the change as well
  (``PYTHONPATH=<checkout>:$PWD python -P -m bench.quality.ocr --parts parse``) for "a text PDF costs no more".
- ``scripts``: one printed line in each of five scripts (German, French, Polish and Turkish, Cyrillic, Greek),
  recognised: which the packaged model reads (word recall) and how confident it is when it cannot.
- ``search``: two libraries made by the real ingest (temporary homes, ``ocr_dpi`` = ``--search-dpi``): the
  original and its scanned copy at that dpi (recognised by the recognition worker, ``ingest/worker.py``). Two
  sentences (8+ words, seeded) from each page's pdftotext are searched (``deep_search(limit=3)``) in both; a hit
  is a returned chunk whose pages cover the sentence's page. Also the worker's peak RSS (VmHWM).

Goals (the issue): recall >= 0.95 at 300 dpi, >= 0.90 at 150 dpi; search top-3 on the scans as often as on text.

    python -m bench.quality.ocr                          # 12 body pages, a table, two columns (10-12 min, 2 cores)
    python -m bench.quality.ocr --pages 2 --parts scans  # a quick look (2 min)
"""

