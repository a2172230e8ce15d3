"""OCR quality and speed on generated scans of known text: character error rate and seconds per page.

Pages of known text - English (the bundled leave policy) and Chinese (the bundled expense policy) -
are drawn at 150 dpi on A4 (1240 x 1754 px) in WenQuanYi Micro Hei (the test extra's font), then read
back exactly as ingestion reads a picture (``mcp_server.documents.ocr.load_image``). The character
error rate is the edit distance between the known and the read text over the known text's length,
both with whitespace removed (OCR's line breaks are not errors).

    python bench/documents/ocr.py            # writes bench/documents/results-ocr.json
"""

from __future__ import annotations

import io
import json
import re
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from mcp_server.documents.limits import FileInput  # noqa: E402
from mcp_server.documents.ocr import load_image  # noqa: E402
from tests.document_fixtures import CJK_FONT  # noqa: E402

SOURCES = {"English": REPO / "corpora/handbook/hr/leave-policy.md", "Chinese": REPO / "corpora/handbook/zh/expense-policy.md"}
WIDTH, HEIGHT, MARGIN, SIZE = 1240, 1754, 90, 26  # A4 at 150 dpi, 12.5 pt text


def body(path: Path) -> str:
    text = path.read_text(encoding="utf-8").split("---", 2)[2]
    return "\n".join(line.lstrip("#-* ").strip() for line in text.splitlines() if line.strip())


def pages(text: str, language: str) -> list[list[str]]:
    """The text wrapped to the page width and cut into pages."""
    per_line = 78 if language == "English" else 40
    lines = [piece for line in text.split("\n") for piece in textwrap.wrap(line, per_line) or [""]]
    per_page = (HEIGHT - 2 * MARGIN) // int(SIZE * 1.6)
    return [lines[i : i + per_page] for i in range(0, len(lines), per_page)]


def draw(lines: list[str], degraded: bool = False) -> bytes:
    """The page as a PNG; ``degraded``: as a photocopy comes out of a cheap scanner - turned by 0.7°,
    blurred, speckled with noise and saved as a JPEG of quality 50."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    font = ImageFont.truetype(str(CJK_FONT), SIZE)
    picture = Image.new("L", (WIDTH, HEIGHT), 255)
    pen = ImageDraw.Draw(picture)
    for number, line in enumerate(lines):
        pen.text((MARGIN, MARGIN + number * int(SIZE * 1.6)), line, fill=0, font=font)
    out = io.BytesIO()
    if not degraded:
        picture.save(out, format="PNG")
        return out.getvalue()
    picture = picture.rotate(0.7, fillcolor=255, resample=Image.Resampling.BICUBIC).filter(ImageFilter.GaussianBlur(0.8))
    noise = Image.effect_noise(picture.size, 40)
    picture = Image.blend(picture, noise, 0.15)
    picture.save(out, format="JPEG", quality=50)
    return out.getvalue()


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def main() -> None:
    load_image(FileInput(draw(["warm up"]), Path("warm.png")))  # the engine loads once per process
    results = {}
    for (language, source), degraded in [(item, d) for d in (False, True) for item in SOURCES.items()]:
        errors = chars = 0
        seconds: list[float] = []
        for page in pages(body(source), language):
            known = re.sub(r"\s+", "", "".join(page))
            picture = draw(page, degraded)
            started = time.perf_counter()
            read = load_image(FileInput(picture, Path("page.jpg" if degraded else "page.png"))).text
            seconds.append(time.perf_counter() - started)
            errors += edit_distance(known, re.sub(r"\s+", "", read))
            chars += len(known)
        language = f"{language}, degraded scan" if degraded else f"{language}, clean"
        results[language] = {
            "pages": len(seconds), "characters": chars, "cer": round(errors / chars, 4),
            "seconds_per_page": round(sum(seconds) / len(seconds), 2), "slowest_page_s": round(max(seconds), 2),
        }  # fmt: skip
        print(language, results[language], flush=True)
    (Path(__file__).parent / "results-ocr.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
