"""Builders of real files for tests: PDF (written by hand, a valid minimal PDF), DOCX (python-docx)."""

from __future__ import annotations

from pathlib import Path


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF with one page per item of ``pages``, each a list of text lines in Helvetica."""
    objects: list[bytes] = []
    n = len(pages)
    # 1 catalog, 2 pages, 3 font, then (page, content) pairs
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(n))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for i, lines in enumerate(pages):
        ops = ["BT", "/F1 11 Tf", "14 TL", "72 740 Td"]
        for line in lines:
            ops.append(f"({_pdf_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {5 + 2 * i} 0 R "
                       f"/Resources << /Font << /F1 3 0 R >> >> >>".encode())  # fmt: skip
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(bytes(out))
    return path


def make_docx(path: Path, title: str, sections: list[tuple[str, list[str]]]) -> Path:
    """A DOCX with a Title paragraph, then Heading 1 sections of body paragraphs, and a small table."""
    import docx

    document = docx.Document()
    document.add_paragraph(title, style="Title")
    for heading, paragraphs in sections:
        document.add_heading(heading, level=1)
        for text in paragraphs:
            document.add_paragraph(text)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Part", "Warranty"
    table.cell(1, 0).text, table.cell(1, 1).text = "Inverter", "five years"
    document.save(str(path))
    return path


def make_docx_with_body(path: Path, body_xml: bytes) -> Path:
    """A real DOCX (from ``make_docx``) whose document body is replaced by ``body_xml``, deflated.

    The section properties are kept, so the result is what Word writes around any body.
    """
    import io
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(make_docx(path, "Template", []).read_bytes()))
    document = source.read("word/document.xml")
    head, rest = document.split(b"<w:body>", 1)
    tail = rest[rest.index(b"<w:sectPr"):]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            data = head + b"<w:body>" + body_xml + tail if info.filename == "word/document.xml" else source.read(info)
            out.writestr(info.filename, data)
    return path


def text_image(paragraphs: list[str], width: int = 1240, height: int = 1754, size: int = 30, columns: int = 1):
    """A white page (PIL image) with ``paragraphs`` typeset in black, wrapped to the page (or to ``columns``),
    in Pillow's own bundled font: what a scanner or a phone camera gives of a printed page. With ``columns``, the
    paragraphs are shared out in order, the first ones filling the left column."""
    import textwrap

    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=size)
    page = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(page)
    margin, gutter = 80, 60
    col_width = (width - 2 * margin - gutter * (columns - 1)) // columns
    chars = max(10, int(col_width / (size * 0.52)))
    per_column = -(-len(paragraphs) // columns)
    for col in range(columns):  # the first paragraphs fill the left column, the next the one beside it
        x, y = margin + col * (col_width + gutter), margin
        for para in paragraphs[col * per_column:(col + 1) * per_column]:
            for line in textwrap.wrap(para, chars):
                draw.text((x, y), line, fill="black", font=font)
                y += int(size * 1.4)
            y += size
    return page


def make_scanned_pdf(path: Path, images, dpi: int = 150) -> Path:
    """An image-only PDF, one page per image (no text layer), as a scanner writes it."""
    first, *rest = [im.convert("RGB") for im in images]
    first.save(path, save_all=True, append_images=rest, resolution=dpi)
    return path


def join_pdfs(path: Path, parts: list[Path]) -> Path:
    """One PDF of the pages of ``parts`` in order (pdfium)."""
    import pypdfium2 as pdfium

    out = pdfium.PdfDocument.new()
    for part in parts:
        src = pdfium.PdfDocument(str(part))
        out.import_pages(src)
        src.close()
    out.save(str(path))
    out.close()
    return path
