"""Time to draw a cited page's picture: per page of a 120-page PDF, as the page:// resource draws it.

A reportlab PDF of 120 Letter pages, each with 40 lines of text, is indexed; then the picture of
every page is asked for with its first chunk highlighted (:func:`mcp_server.retrieval.page_pictures.page_picture`:
the docstore lookups, the fingerprint check of the file's bytes, the boxes, the drawing in the reading
process and the PNG at the default 1600 px and 2 MB caps). Reported: the median and 90th percentile
per page, the median of the drawing alone in this process (PDFium render, highlight, PNG encoding),
and the PNG sizes. The reading process is started once before timing (it is kept between pictures).

    python bench/documents/page_pictures.py     # writes bench/documents/results-page-pictures.json
"""

from __future__ import annotations

import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from mcp_server.documents.limits import FileInput  # noqa: E402
from mcp_server.documents.page_drawing import PageDrawing, draw_page  # noqa: E402
from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.retrieval.page_pictures import page_picture  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402

PAGES, LINES = 120, 40
WORDS = "leave allowance payroll office travel budget approval manager policy request".split()


def write_pdf(path: Path) -> None:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=letter)
    for page in range(PAGES):
        pdf.setFont("Helvetica", 11)
        for line in range(LINES):
            words = [WORDS[(page * 7 + line * 3 + i) % len(WORDS)] for i in range(12)]
            pdf.drawString(54, 740 - line * 17, f"{page + 1}.{line + 1} " + " ".join(words))
        pdf.showPage()
    pdf.save()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        corpus = root / "manuals"
        corpus.mkdir()
        (corpus / "corpus.toml").write_text('name = "manuals"\ndescription = "Manuals."\n', encoding="utf-8")
        write_pdf(corpus / "manual.pdf")
        settings = Settings.from_names(data_dir=root / "data", corpora=[corpus], database="none", ocr="off")
        ingest(settings)
        retriever = Retriever.open(settings)
        try:
            chunks = retriever.documents.get_document("manuals:manual", window=0).chunks
            first_chunk = {}
            for span in chunks:
                first_chunk.setdefault(span.page, span.chunk)
            page_picture(retriever, f"manuals:manual#{first_chunk[1]}")  # starts the reading process
            seconds, sizes = [], []
            for page in range(1, PAGES + 1):
                started = time.perf_counter()
                shown = page_picture(retriever, f"manuals:manual#{first_chunk[page]}")
                seconds.append(time.perf_counter() - started)
                sizes.append(len(shown.png))
        finally:
            retriever.close()
        data = (corpus / "manual.pdf").read_bytes()
        drawing_only = []
        for page in range(1, PAGES + 1, 4):
            started = time.perf_counter()
            draw_page(FileInput(data, Path("manual.pdf")), PageDrawing(page, ((54, 40, 500, 60),), 1600, 2_000_000))
            drawing_only.append(time.perf_counter() - started)
    result = {
        "pdf": f"{PAGES} Letter pages, {LINES} lines of 11 pt text each ({len(data):,} bytes)",
        "pictures": len(seconds),
        "median_ms_per_page": round(statistics.median(seconds) * 1000, 1),
        "p90_ms_per_page": round(percentile(seconds, 0.9) * 1000, 1),
        "median_ms_drawing_only_in_process": round(statistics.median(drawing_only) * 1000, 1),
        "median_png_bytes": int(statistics.median(sizes)),
        "max_png_bytes": max(sizes),
        "size_px": "{} x {} (RAGMCP_PAGE_IMAGE_MAX_SIDE=1600)".format(*Image.open(io.BytesIO(shown.png)).size),
    }
    print(json.dumps(result, indent=2))
    (Path(__file__).parent / "results-page-pictures.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
