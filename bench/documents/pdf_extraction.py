"""PDF reading on public manuals: pages per second (pypdf, our PDFium reader, poppler's pdftotext) and how
often a citation names the page a phrase is on.

The PDFs are the LaTeX package manuals of Debian's ``texlive-latex-recommended-doc`` (155 PDFs; fetched
by the script with ``apt-get download``, unpacked with ``dpkg-deb -x`` into ``bench/.cache/documents``,
never committed). ``--files N`` takes the first N by path: a fixed set.

- **pages/s**: pypdf's ``extract_text`` per page (the reader before), ``mcp_server.documents.pdf.load_pdf``
  (ours: PDFium plus layout - headings, running lines, hyphenation; OCR off, so text layers only) and
  ``pdftotext`` (one process per file), each over the same files, one after the other.
- **page-exact rate**: ``--phrases`` phrases of 8 words, each taken from one page of ``pdftotext``'s
  output (an independent extractor; pages split at form feeds), looked up in the text our reader makes;
  for each one found, whether the page our citation gives - the page mark the chunk holding it starts
  at, which a chunk never leaves - is the page pdftotext had it on.

    apt-get install -y poppler-utils                 # pdftotext
    pip install -e ".[bench]"                        # pypdf, for the comparison only
    python bench/documents/pdf_extraction.py --files 25 --phrases 400
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from mcp_server.documents.chunking import ChunkingOptions  # noqa: E402
from mcp_server.documents.extract import extract  # noqa: E402
from mcp_server.documents.limits import FileInput, ReadingLimits  # noqa: E402
from mcp_server.documents.pdf import load_pdf  # noqa: E402
from mcp_server.errors import IngestError  # noqa: E402

CACHE = REPO / "bench" / ".cache" / "documents"
PACKAGE = "texlive-latex-recommended-doc"
NO_OCR = ReadingLimits(ocr=False)


def fetch() -> list[Path]:
    extracted = CACHE / "extracted"
    if not extracted.is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", PACKAGE], cwd=CACHE, check=True, capture_output=True)
        deb = next(CACHE.glob(f"{PACKAGE}_*.deb"))
        subprocess.run(["dpkg-deb", "-x", str(deb), str(extracted)], check=True)
    return sorted(extracted.rglob("*.pdf"))


def pypdf_pages(path: Path) -> int:
    from pypdf import PdfReader

    reader = PdfReader(path)
    for page in reader.pages:
        page.extract_text()
    return len(reader.pages)


def ours_pages(path: Path) -> int:
    document = load_pdf(FileInput(path.read_bytes(), path, NO_OCR))
    return len(document.pages)


def pdftotext_pages(path: Path) -> list[str]:
    out = subprocess.run(["pdftotext", "-q", "-enc", "UTF-8", str(path), "-"], capture_output=True, check=False)
    return out.stdout.decode("utf-8", "replace").split("\f")


def timed(label: str, files: list[Path], read: object) -> dict[str, float]:
    pages = 0
    started = time.perf_counter()
    for path in files:
        try:
            result = read(path)  # type: ignore[operator]
        except Exception as error:  # noqa: BLE001 - a reader failing on a file is reported, not fatal
            print(f"  {label}: {path.name}: {type(error).__name__}", flush=True)
            continue
        pages += result if isinstance(result, int) else len(result)
    seconds = time.perf_counter() - started
    print(f"{label}: {pages} pages in {seconds:.1f} s ({pages / seconds:.1f} pages/s)", flush=True)
    return {"pages": pages, "seconds": round(seconds, 2), "pages_per_s": round(pages / seconds, 1)}


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{3,}", text)


def page_exact(files: list[Path], phrases: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    found = exact = tried = 0
    per_file = max(1, phrases // len(files))
    for path in files:
        reference = pdftotext_pages(path)
        try:
            extracted = extract(FileInput(path.read_bytes(), path, NO_OCR), ChunkingOptions())
        except IngestError:  # a logo or a picture-only PDF: no text to look in
            continue
        text = extracted.document.text
        flat = " ".join(_words(text))
        # Where each word of ``flat`` is in ``text``, to map a hit back to a chunk.
        offsets = [m.start() for m in re.finditer(r"[A-Za-z]{3,}", text)]
        starts = [c.char_start for c in extracted.chunks]
        candidates = [(number, words) for number, page in enumerate(reference, 1) if len(words := _words(page)) >= 20]
        for _ in range(per_file):
            if not candidates:
                break
            number, words = rng.choice(candidates)
            at = rng.randrange(len(words) - 8)
            phrase = " ".join(words[at : at + 8])
            tried += 1
            hits = [m.start() for m in re.finditer(re.escape(phrase), flat)]
            if len(hits) != 1:  # absent, or repeated (a running header, a repeated table): no single answer
                continue
            found += 1
            word_index = flat.count(" ", 0, hits[0])
            chunk = extracted.chunks[max(0, bisect.bisect_right(starts, offsets[word_index]) - 1)]
            exact += chunk.location.page == number
    return {"phrases": tried, "found_once": found, "page_exact": exact, "rate": round(exact / max(found, 1), 4)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=25)
    parser.add_argument("--phrases", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    files = fetch()[: args.files]
    print(f"{len(files)} PDFs, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB", flush=True)
    result = {
        "files": len(files),
        "pypdf": timed("pypdf", files, pypdf_pages),
        "ours (PDFium + layout)": timed("ours", files, ours_pages),
        "pdftotext": timed("pdftotext", files, pdftotext_pages),
        "page_exact": page_exact(files, args.phrases, args.seed),
    }
    print(json.dumps(result["page_exact"]), flush=True)
    (Path(__file__).parent / "results-pdf.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
