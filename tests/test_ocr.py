"""Scanned pages and photos: the usable-text decision, reading order, limits, and the real recogniser end to end.

The fast tests build their inputs (PDFs written by hand or by Pillow, image headers) and fake only what
recognition read; the ``real_model`` ones run rapidocr's packaged models in the recognition worker, the real
store, FAISS index and embedding model, and the real GGUF model and reader for an answer.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from localreason.config import load_settings
from localreason.errors import IngestFileError
from localreason.ingest.chunk import ChunkParams, chunk_document
from localreason.ingest.formats.pdf import junk, needs_recognition
from localreason.ingest.layout import Line, Paragraph, reading_order
from localreason.ingest.parse import parse_bytes
from localreason.ingest.recognised import NeedsRecognition, PageReading, Recognition
from localreason.library import Library

from files import join_pdfs, make_pdf, make_scanned_pdf, text_image

WARRANTY = "The solar inverter is covered by a warranty of seven years from the day it was installed."
RESET = "To reset the water pump, hold the red button for ten seconds until the lamp blinks twice."


def _line(text, x0, y0, x1, y1):
    return Line(text, x0, y0, x1, y1, 0.99)


# ---------------------------------------------------------------- reading order (layout.py), made-up boxes


def test_two_columns_are_read_one_after_the_other():
    left = [_line(f"left line {i} of the first column", 50, 100 + 30 * i, 480, 120 + 30 * i) for i in range(6)]
    right = [_line(f"right line {i} of the second column", 540, 100 + 30 * i, 970, 120 + 30 * i) for i in range(6)]
    title = _line("A title across the page", 50, 20, 970, 60)
    paras = reading_order(right + left + [title], 1000)
    text = "\n".join(p.text for p in paras)
    assert text.index("A title") < text.index("left line 0") < text.index("left line 5") < text.index("right line 0")
    assert paras[0].heading == 1, "taller letters on a line of its own: a heading"


def test_a_table_is_read_row_by_row():
    rows = [("Pump", "2 bar", "yearly"), ("Valve", "6 bar", "monthly"), ("Tank", "none", "never")]
    for pitch, expected in ((25, ["Pump 2 bar yearly\nValve 6 bar monthly\nTank none never"]),
                            (40, ["Pump 2 bar yearly", "Valve 6 bar monthly", "Tank none never"])):  # fmt: skip
        boxes = [_line(cell, 50 + 300 * c, 100 + pitch * r, 130 + 300 * c, 120 + pitch * r)
                 for r, cells in enumerate(rows) for c, cell in enumerate(cells)]  # fmt: skip
        assert [p.text for p in reading_order(list(reversed(boxes)), 1000)] == expected, pitch


def test_paragraphs_split_at_blank_space_and_broken_words_join():
    lines = [_line("The pump is checked every", 50, 100, 600, 120), _line("year by the in-", 50, 125, 400, 145),
             _line("staller.", 50, 150, 200, 170), _line("A new paragraph starts here.", 50, 220, 600, 240)]  # fmt: skip
    assert [p.text for p in reading_order(lines, 1000)] == \
        ["The pump is checked every\nyear by the installer.", "A new paragraph starts here."]  # fmt: skip
    assert reading_order([], 1000) == []


# ---------------------------------------------------------------- which PDF pages are scans


def test_junk_text_layers_are_told_from_text():
    assert not junk("The pump starts at two bar. (See page 4.)")
    assert junk("ÿþ⌐¬ ¼½¾ ╔╗╚╝ ▓▒░ ┤┐└┴")
    assert not junk("")


def _scan(tmp_path, name, paragraphs, **kw):
    return make_scanned_pdf(tmp_path / name, [text_image(paragraphs, **kw)])


def test_only_pages_without_a_usable_text_layer_are_recognised(tmp_path):
    import pypdfium2 as pdfium

    text = make_pdf(tmp_path / "text.pdf", [["The pump manual, page one."] * 3])
    blank = make_pdf(tmp_path / "blank.pdf", [[]])
    scan = _scan(tmp_path, "scan.pdf", [WARRANTY])
    mixed = join_pdfs(tmp_path / "mixed.pdf", [text, scan, text])
    pdf = pdfium.PdfDocument(str(mixed))
    flags = [needs_recognition(pdf[i], pdf[i].get_textpage().get_text_range()) for i in range(len(pdf))]
    assert flags == [False, True, False]
    with pdfium.PdfDocument(str(blank)) as b:
        assert not needs_recognition(b[0], ""), "a blank page holds nothing to recognise"
    with pytest.raises(NeedsRecognition) as need:
        parse_bytes(mixed.read_bytes(), mixed, "pdf", recognition=Recognition())
    assert (need.value.pages, need.value.page_count) == ((2,), 3)
    parsed = parse_bytes(text.read_bytes(), text, "pdf", recognition=Recognition())
    assert "page one" in parsed.text and not parsed.recognized, "a text PDF is read in one pass"


def test_recognised_pages_are_marked_on_their_blocks_and_chunks(tmp_path):
    text = make_pdf(tmp_path / "text.pdf", [["The pump manual, page one."] * 3])
    mixed = join_pdfs(tmp_path / "mixed.pdf", [text, _scan(tmp_path, "scan.pdf", [WARRANTY])])
    reading = PageReading(2, (Paragraph("Warranty", 1), Paragraph(WARRANTY)), 0.97, lines=3)
    parsed = parse_bytes(mixed.read_bytes(), mixed, "pdf", recognition=Recognition(), readings=(reading,))
    assert [(b.page, b.recognized) for b in parsed.blocks] == [(1, False), (2, True), (2, True)]
    assert [r.page for r in parsed.recognized] == [2]
    chunks = chunk_document(parsed, "doc_x", ChunkParams(200, 30, 2000))
    marks = {(c.level, c.page_start): c.recognized for c in chunks}
    assert marks == {(1, 1): False, (2, 1): False, (1, 2): True, (2, 2): True}


def test_a_scan_whose_every_page_failed_fails_with_the_reason(tmp_path):
    scan = _scan(tmp_path, "scan.pdf", [WARRANTY])
    failed = PageReading(1, failed="recognising it took longer than 60 s, the limit per page (ocr_page_seconds)")
    with pytest.raises(IngestFileError, match="no page could be read by text recognition: recognising it took") as e:
        parse_bytes(scan.read_bytes(), scan, "pdf", recognition=Recognition(), readings=(failed,))
    assert e.value.status == "failed"
    with pytest.raises(IngestFileError, match="recognition found no text") as e:
        parse_bytes(scan.read_bytes(), scan, "pdf", recognition=Recognition(), readings=(PageReading(1),))
    assert e.value.status == "skipped"


def test_with_recognition_off_scans_are_named_and_how_to_turn_it_on(tmp_path):
    scan = _scan(tmp_path, "scan.pdf", [WARRANTY])
    with pytest.raises(IngestFileError, match="ocr = auto"):
        parse_bytes(scan.read_bytes(), scan, "pdf")
    text = make_pdf(tmp_path / "text.pdf", [["The pump manual, page one."] * 3])
    mixed = join_pdfs(tmp_path / "mixed.pdf", [text, scan])
    parsed = parse_bytes(mixed.read_bytes(), mixed, "pdf")
    assert "page one" in parsed.text and any("page 2 is scanned" in n and "ocr = auto" in n for n in parsed.notes)
    png = tmp_path / "photo.png"
    text_image([RESET], 600, 300).save(png)
    with pytest.raises(IngestFileError, match="ocr = auto") as exc:
        parse_bytes(png.read_bytes(), png, "image")
    assert exc.value.status == "skipped"


# ---------------------------------------------------------------- limits


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` pixels (a decompression bomb's shape): nothing decodes."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    idat = b"IDAT" + zlib.compress(b"\x00" * 64)
    return (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
            + struct.pack(">I", len(idat) - 4) + idat + struct.pack(">I", zlib.crc32(idat))
            + struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND")))  # fmt: skip


def test_an_image_over_the_pixel_limit_is_refused_before_decoding(lib, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "bomb.png").write_bytes(_png_header(100_000, 100_000))
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (folder / "icon.png").write_bytes(_png_header(16, 16))
    (folder / "notes.md").write_text("# Notes\n\nThe pump is checked every spring.\n")
    report = lib.ingest([folder], "in")
    by_name = {Path(f.path).name: f for f in report.files}
    assert by_name["bomb.png"].status == "failed"
    assert "10000 megapixels" in by_name["bomb.png"].reason and "max_image_megapixels" in by_name["bomb.png"].reason
    assert by_name["broken.jpg"].status == "failed" and "not a readable image" in by_name["broken.jpg"].reason
    assert by_name["icon.png"].status == "skipped" and "too small" in by_name["icon.png"].reason
    assert by_name["notes.md"].status == "added" and [d.title for d in lib.documents()] == ["Notes"]
    assert "recognized" not in by_name["notes.md"].to_dict(), "only a file with recognised pages lists them"


@pytest.mark.parametrize("suffix", ["png", "jpeg", "tiff", "webp", "bmp"])
def test_every_image_format_is_read_frame_by_frame(tmp_path, suffix):
    from localreason.ingest import ocr

    frames = [text_image([RESET], 400, 200), text_image([WARRANTY], 400, 200)]
    path = tmp_path / f"page.{suffix}"
    many = suffix in ("tiff", "webp")
    frames[0].save(path, save_all=many, append_images=frames[1:] if many else [])
    with pytest.raises(NeedsRecognition) as need:
        parse_bytes(path.read_bytes(), path, "image", recognition=Recognition())
    assert need.value.pages == ((1, 2) if many else (1,))
    image = ocr.image_frame(path.read_bytes(), len(need.value.pages) - 1, 10_000_000)
    assert image.shape == (200, 400, 3) and image.dtype.name == "uint8"


def test_a_page_too_large_to_render_is_rendered_at_the_resolution_that_fits(tmp_path):
    from localreason.ingest import ocr

    pdf = make_pdf(tmp_path / "a.pdf", [["one line"]])
    image, dpi = ocr.render_pdf_page(pdf.read_bytes(), 0, 300, 1_000_000)
    assert image.shape[0] * image.shape[1] <= 1_000_000 and 100 < dpi < 300 and image.shape[2] == 3


# ---------------------------------------------------------------- the real recogniser


pytest_real = pytest.mark.real_model


@pytest.fixture(scope="module")
def paper(tmp_path_factory):
    """A folder of paper: a photo (PNG), a two-page scan, a PDF of a text page and a scanned one, a two-page TIFF."""
    folder = tmp_path_factory.mktemp("paper")
    small = {"width": 1000, "height": 700, "size": 30}
    text_image([WARRANTY], **small).save(folder / "warranty.png")
    make_scanned_pdf(folder / "scan.pdf", [text_image([RESET], **small),
                                           text_image(["The filter is cleaned every month with warm water."], **small)])
    text = make_pdf(folder / "text-part.pdf", [["The boiler manual starts here with a page of plain text."] * 2])
    join_pdfs(folder / "boiler.pdf", [text, make_scanned_pdf(folder / "p2.pdf", [
        text_image(["The boiler pressure must stay between one and two bar."], **small)])])
    (folder / "text-part.pdf").unlink()
    (folder / "p2.pdf").unlink()
    frames = [text_image(["Chapter one: the garden shed has a green door."], **small),
              text_image(["Chapter two: the key hangs under the third stone."], **small)]
    frames[0].save(folder / "book.tiff", save_all=True, append_images=frames[1:])
    return folder


@pytest.fixture(scope="module")
def read_paper(paper, tmp_path_factory, real_embedder):
    home = tmp_path_factory.mktemp("ocr-home")
    lib = Library(settings=load_settings(home), embedder=real_embedder)
    steps = []
    report = lib.ingest([paper], "paper", progress=steps.append)
    yield lib, report, steps
    lib.close()


@pytest_real
def test_scans_photos_and_tiff_pages_are_read_and_marked(read_paper):
    lib, report, steps = read_paper
    assert report.ok and report.counts["added"] == 4, report.to_dict()
    docs = {Path(d.source_path).name: d for d in lib.documents()}
    assert docs["warranty.png"].format == "image" and docs["book.tiff"].format == "image"
    assert [p.page for p in docs["scan.pdf"].recognized] == [1, 2]
    assert [p.page for p in docs["boiler.pdf"].recognized] == [2], "the text page keeps its text layer"
    assert [p.page for p in docs["book.tiff"].recognized] == [1, 2], "every page of a multi-page TIFF"
    assert all(p.confidence > 0.8 and p.lines >= 1 and not p.failed for d in docs.values() for p in d.recognized)
    assert "warranty of seven years" in " ".join(lib.document_text(docs["warranty.png"].id).split())
    assert "under the third stone" in " ".join(lib.document_text(docs["book.tiff"].id).split())
    boiler = {c.page_start: c.recognized for c in lib.chunks(docs["boiler.pdf"].id, 2)}
    assert boiler == {1: False, 2: True}
    notes = {Path(f.path).name: f.reason for f in report.files}
    assert "2 pages read by text recognition" in notes["scan.pdf"]
    as_json = {Path(f["path"]).name: f for f in report.to_dict()["files"]}
    assert [p["page"] for p in as_json["scan.pdf"]["recognized"]] == [1, 2]
    from localreason.ingest import worker

    assert all(w._proc is None for (_, kind), w in worker._shared.items() if kind == "ocr"), \
        "the recogniser's process does not outlive the ingest (its models hold a gigabyte)"  # fmt: skip
    pages = [(s.path, s.page, s.pages) for s in steps if s.status == "recognizing"]
    assert [(p, n) for path, p, n in pages if path.endswith("scan.pdf")] == [(0, 2), (1, 2), (2, 2)], "per page"


@pytest_real
def test_a_search_finds_recognised_text_and_says_it_was_recognised(read_paper):
    lib, _, _ = read_paper
    hits = lib.deep_search("How do I reset the water pump?", limit=3)
    assert Path(lib.document(hits[0].document_id).source_path).name == "scan.pdf"
    assert hits[0].recognized and hits[0].to_dict()["recognized"] is True and hits[0].page_start == 1


@pytest_real
def test_an_answer_from_recognised_text_cites_it_and_says_a_letter_may_be_misread(read_paper):
    lib, _, _ = read_paper
    a = lib.ask("How long is the solar inverter warranty?", max_tokens=1000)
    refs = [r for s in a.statements for r in s.references]
    assert refs and all(r.recognized for r in refs if "warranty" in r.quotation.lower()), a.to_dict()
    for r in refs:
        assert lib.document_text(r.document_id)[r.start:r.end] == r.quotation, "verified against the stored text"
    assert any("recognised in a scanned image" in g and "warranty.png" in g for g in a.gaps), a.gaps
    assert a.to_dict()["statements"][0]["references"][0]["recognized"] is True


@pytest_real
def test_show_names_the_recognised_pages(read_paper, capsys):
    from test_cli import run

    lib, _, _ = read_paper
    scan = next(d for d in lib.documents() if d.source_path.endswith("scan.pdf"))
    code, out, _ = run(capsys, "--home", str(lib.home), "show", scan.id)
    assert code == 0 and "pages 1-2 read by text recognition (mean confidence" in out, out
    code, out, _ = run(capsys, "--home", str(lib.home), "show", scan.id, "--json")
    assert [p["page"] for p in json.loads(out)["data"]["recognized"]] == [1, 2]
    chunk = lib.chunks(scan.id, 2)[0]
    code, out, _ = run(capsys, "--home", str(lib.home), "show", chunk.id)
    assert "Read by text recognition" in out


@pytest_real
def test_a_page_over_its_time_limit_is_left_out_and_named_and_the_rest_is_kept(tmp_path, fake_embedder):
    text = make_pdf(tmp_path / "text.pdf", [["The boiler manual starts here with a page of plain text."] * 2])
    (tmp_path / "docs").mkdir()
    # A scan stored at 20 dpi is a page of 62 x 88 inches: at 600 dpi it is rendered at the pixel limit, 60 million
    # pixels (240 MB of bitmap), then scaled and recognised; no CPU does all that in 0.1 s.
    scan = make_scanned_pdf(tmp_path / "p2.pdf", [text_image([WARRANTY])], dpi=20)
    join_pdfs(tmp_path / "docs" / "boiler.pdf", [text, scan])
    settings = load_settings(tmp_path / "home", ocr_page_seconds=0.1, ocr_dpi=600, reader="off")
    with Library(settings=settings, embedder=fake_embedder) as lib:
        report = lib.ingest([tmp_path / "docs"])
        [f] = report.files
        assert f.status == "added" and "page 2 was not read: recognising it took longer than 0.1 s" in f.reason
        [doc] = lib.documents()
        assert "plain text" in lib.document_text(doc.id) and [p.page for p in doc.recognized] == [2]
        assert doc.recognized[0].failed.startswith("recognising it took longer")
        assert "read again at the next sync" in f.reason
        [again] = lib.ingest([tmp_path / "docs"]).files  # unchanged, but a page ran out of time: read again
        assert again.status == "updated" and "page 2 was not read" in again.reason, again


@pytest_real
def test_recognition_runs_with_the_network_off(tmp_path):
    """The models come from the wheel: recognition in a process whose every socket call fails (and, where the
    kernel allows it, in a network namespace of its own with no interface but loopback)."""
    text_image([RESET], 1000, 400).save(tmp_path / "p.png")
    script = textwrap.dedent(f"""
        import socket
        def refuse(*a, **k):
            raise OSError("network access attempted")
        socket.socket.connect = socket.socket.connect_ex = refuse
        socket.create_connection = socket.getaddrinfo = refuse
        import numpy as np
        from PIL import Image
        from localreason.ingest import ocr
        image = np.asarray(Image.open({str(tmp_path / "p.png")!r}).convert("RGB"))[:, :, ::-1].copy()
        reading = ocr.recognise(image, 1)
        import sys
        assert sys.modules["openvino_telemetry"] is None, "OpenVINO's usage telemetry is off"
        print(" ".join(p.text for p in reading.paragraphs).replace("\\n", " "))
    """)
    command = [sys.executable, "-c", script]
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        command = ["unshare", "-rn"] + command
    out = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "red button for ten seconds" in out.stdout


def test_a_text_pdf_loads_no_renderer_and_no_recognition_model(tmp_path):
    """Ingest of a text PDF in a fresh process: no recognition worker is started, and neither rapidocr, OpenCV nor
    Pillow is imported."""
    make_pdf(tmp_path / "manual.pdf", [["The pump manual, page one."] * 3, ["Page two of the manual."]])
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from fakes import FakeEmbedder
        from localreason.config import load_settings
        from localreason.ingest import worker
        from localreason.library import Library
        with Library(settings=load_settings({str(tmp_path / "home")!r}), embedder=FakeEmbedder()) as lib:
            report = lib.ingest([{str(tmp_path / "manual.pdf")!r}])
            assert report.counts["added"] == 1, report.to_dict()
        kinds = [kind for (_, kind) in worker._shared]
        print(kinds, [m for m in ("rapidocr", "cv2", "PIL") if m in sys.modules])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "['parse'] []"


def test_the_command_line_shows_a_bar_of_pages_under_the_files_bar():
    from localreason.cli.common import progress_callback
    from localreason.ingest.pipeline import Progress

    bar, update = progress_callback(True)
    update(Progress(0, 2, 0, "/x/scan.pdf", "recognizing", 0, 3))
    update(Progress(0, 2, 0, "/x/scan.pdf", "recognizing", 2, 3))
    assert [(t.description, t.completed, t.total) for t in bar.tasks] == [("Ingesting", 0, 2), ("  recognising", 2, 3)]
    update(Progress(0, 2, 0, "/x/scan.pdf", "recognizing", 3, 3))
    update(Progress(1, 2, 5, "/x/scan.pdf", "added"))
    assert [(t.description, t.completed) for t in bar.tasks] == [("Ingesting", 1)], "the pages bar goes with its file"


@pytest_real
def test_with_recognition_off_nothing_is_recognised_and_turning_it_on_reads_the_scans_on_sync(tmp_path, fake_embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    _scan(docs, "scan.pdf", [RESET], width=1000, height=600)
    text = make_pdf(tmp_path / "text.pdf", [["The boiler manual starts here with a page of plain text."] * 2])
    join_pdfs(docs / "boiler.pdf", [text, _scan(tmp_path, "p2.pdf", [WARRANTY], width=1000, height=600)])
    text_image([WARRANTY], 1000, 600).save(docs / "photo.png")
    with Library(settings=load_settings(tmp_path / "home", ocr="off", reader="off"), embedder=fake_embedder) as lib:
        report = lib.ingest([docs])
        by_name = {Path(f.path).name: f for f in report.files}
        assert by_name["scan.pdf"].status == "failed" and "set ocr = auto" in by_name["scan.pdf"].reason
        assert by_name["photo.png"].status == "skipped" and "set ocr = auto" in by_name["photo.png"].reason
        assert by_name["boiler.pdf"].status == "added" and "page 2 is scanned" in by_name["boiler.pdf"].reason
        assert not any(d.recognized for d in lib.documents())
    with Library(settings=load_settings(tmp_path / "home", reader="off"), embedder=fake_embedder) as lib:
        [report] = lib.sync()
        by_name = {Path(f.path).name: f.status for f in report.files}
        assert by_name == {"scan.pdf": "added", "photo.png": "added", "boiler.pdf": "updated"}, report.to_dict()
        boiler = next(d for d in lib.documents() if d.source_path.endswith("boiler.pdf"))
        assert [p.page for p in boiler.recognized] == [2] and "seven" in lib.document_text(boiler.id)


def test_the_report_names_each_uncertain_page_and_each_page_not_read():
    from localreason.ingest.pipeline import _Recognizer
    from localreason.ingest.worker import Limits

    readings = [PageReading(1, (Paragraph("fine"),), 0.98, lines=30), PageReading(2, (Paragraph("smudged"),), 0.62,
                lines=12, low_lines=3), PageReading(3, failed="recognising it took longer than 60 s"),
                PageReading(4), PageReading(5, failed="recognising it took longer than 60 s")]  # fmt: skip
    notes = _Recognizer(Recognition(), Limits(), 0.9, None).notes(readings)
    assert notes == [
        "2 pages read by text recognition (mean confidence 0.88)",
        "low recognition confidence, under 0.9 (the text may hold misread words): page 2 (0.62)",
        "recognition found no text on page 4",
        "pages 3, 5 were not read: recognising it took longer than 60 s",
        "3 lines recognised with confidence under 0.5 left out (page 2)",
    ]
