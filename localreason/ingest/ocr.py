"""Text recognition of scanned pages and photos, on this machine, with the models inside the rapidocr wheel.

One page at a time: a PDF page rendered by pdfium, or one frame of an image file, is recognised by
RapidOCR (PP-OCRv6 small detection and recognition models, ONNX, run on OpenVINO like the embedder)
and its line boxes are put in reading order (layout.py). Only ever imported in the recognition worker
process (worker.py, ``kind = "ocr"``), so that a text PDF never loads a renderer or a model, and a
page that runs too long or too large costs that page only.

The model files are named by path inside the installed wheel: RapidOCR is never left to find (or
fetch) a model itself.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

from ..errors import IngestFileError
from ..models import RECOGNITION_MODEL_FILES, missing_recognition_models, recognition_model_dir
from .layout import Line, reading_order
from .recognised import LINE_MIN_SCORE, PageReading


MAX_SIDE = 2000
"""The recogniser reads a page scaled to at most this many pixels on its longer side (RapidOCR's own default):
about 170 dpi for an A4 page. Reading 300-dpi pages at full size took 1.3-1.8x as long for no gain in word
recall (bench/quality/ocr/, "--max-side"; docs/benchmarks.md, "Scanned pages")."""
WARM_UP_SIDE = 64
"""The blank image recognised once when the engine loads: OpenVINO compiles the models on their first run (about
2 s), which would otherwise count against the first page's time limit."""

_engine = None


def engine(threads: int = 0):
    """The recogniser, loaded once per process (the first call's ``threads`` CPU threads, 0: every core), from the
    wheel's own model files."""
    global _engine
    if _engine is None:
        import numpy as np

        _engine = _load(threads)
        _engine(np.full((WARM_UP_SIDE, WARM_UP_SIDE * 4, 3), 255, np.uint8))
    return _engine


def _load(threads: int):
    missing = missing_recognition_models()
    if missing:
        raise IngestFileError(f"text recognition is not installed ({', '.join(missing)} missing): reinstall "
                              "localreason (pip install --force-reinstall rapidocr==3.10.0), or set ocr = off")  # fmt: skip
    import logging

    from ..openvino_runtime import load_openvino

    load_openvino()  # before rapidocr imports it: with its usage telemetry off (nothing may leave the machine)
    from rapidocr import EngineType, RapidOCR

    logging.getLogger("RapidOCR").setLevel(logging.ERROR)
    folder = recognition_model_dir()
    params = {"Global.log_level": "error", "Global.use_cls": False, "Global.text_score": 0.0,
              "Global.max_side_len": MAX_SIDE,
              "EngineConfig.openvino.inference_num_threads": threads if threads > 0 else -1}  # fmt: skip
    for part, name in RECOGNITION_MODEL_FILES.items():
        params[f"{part}.engine_type"] = EngineType.OPENVINO
        params[f"{part}.model_path"] = str(folder / name)
    return RapidOCR(params=params)


def recognise(image, page: int) -> PageReading:
    """Recognise one page image (an H x W x 3 array, BGR) into paragraphs in reading order."""
    result = engine()(image)
    boxes = getattr(result, "boxes", None)
    lines: list[Line] = []
    low = 0
    if boxes is not None:
        for box, text, score in zip(boxes, result.txts, result.scores):
            if not text.strip():
                continue
            if score < LINE_MIN_SCORE:
                low += 1
                continue
            xs, ys = [float(p[0]) for p in box], [float(p[1]) for p in box]
            lines.append(Line(text, min(xs), min(ys), max(xs), max(ys), float(score)))
    weight = sum(len(ln.text) for ln in lines)
    confidence = sum(ln.score * len(ln.text) for ln in lines) / weight if weight else 0.0
    return PageReading(page, tuple(reading_order(lines, float(image.shape[1]))), round(confidence, 4), len(lines), low)


# ---------------------------------------------------------------- what a page image is made from


def render_pdf_page(data: bytes, index: int, dpi: float, max_pixels: int):
    """Page ``index`` (0-based) of the PDF in ``data`` as a BGR array, at ``dpi`` or less: a page that would
    exceed ``max_pixels`` is rendered at the resolution that fits. Returns (array, dpi used)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        page = pdf[index]
        try:
            width, height = page.get_size()  # points, 1/72 inch
            pixels = (width * dpi / 72) * (height * dpi / 72)
            if pixels > max_pixels:
                dpi = dpi * (max_pixels / pixels) ** 0.5
                while math.ceil(width * dpi / 72) * math.ceil(height * dpi / 72) > max_pixels:
                    dpi *= 0.99  # pdfium rounds a bitmap's sides up
            if width * dpi / 72 < 1 or height * dpi / 72 < 1:
                raise IngestFileError(f"page {index + 1} is too small to render")
            import numpy as np

            bitmap = page.render(scale=dpi / 72)
            array = np.ascontiguousarray(bitmap.to_numpy()[:, :, :3])  # BGR(A) as pdfium draws it; one copy, 3 channels
            bitmap.close()
        finally:
            page.close()
    finally:
        pdf.close()
    return array, dpi


def _pil():
    from PIL import Image

    return Image


def image_frames(data: bytes, max_pixels: int) -> list[tuple[int, int]]:
    """The (width, height) of every frame of the image in ``data``, read from its headers only; raises
    IngestFileError for an image that cannot be read, or one frame over ``max_pixels`` (a decompression bomb
    is refused before it is decoded)."""
    Image = _pil()
    Image.MAX_IMAGE_PIXELS = None  # our own limit is checked below, before anything is decoded
    try:
        with Image.open(io.BytesIO(data)) as im:
            sizes = []
            for i in range(getattr(im, "n_frames", 1)):
                im.seek(i)
                sizes.append(im.size)
    except (OSError, SyntaxError, ValueError, EOFError) as exc:  # PIL's UnidentifiedImageError is an OSError
        raise IngestFileError(f"not a readable image ({exc})") from None
    for i, (w, h) in enumerate(sizes):
        if w * h > max_pixels:
            which = f"frame {i + 1} of the image" if len(sizes) > 1 else "the image"
            raise IngestFileError(f"{which} is {w}x{h} pixels ({w * h / 1e6:.0f} megapixels), more than the limit of "
                                  f"{max_pixels / 1e6:.0f} (max_image_megapixels); it was not read")  # fmt: skip
    return sizes


def image_frame(data: bytes, index: int, max_pixels: int):
    """Frame ``index`` of the image in ``data`` as a BGR array, turned upright by its EXIF orientation."""
    import numpy as np

    Image = _pil()
    from PIL import ImageOps

    Image.MAX_IMAGE_PIXELS = max_pixels  # PIL refuses anything over twice this itself, as a second guard
    with Image.open(io.BytesIO(data)) as im:
        im.seek(index)
        if im.size[0] * im.size[1] > max_pixels:
            raise IngestFileError(f"frame {index + 1} is larger than max_image_megapixels")
        frame = ImageOps.exif_transpose(im) if index == 0 else im
        rgb = np.asarray(frame.convert("RGB"))
    return np.ascontiguousarray(rgb[:, :, ::-1])
