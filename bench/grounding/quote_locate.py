"""get_document with a quote: latency and the page found, for quotes in a 300-page PDF.

A 300-page PDF is generated (40 lines of about 85 characters a page, sentences drawn at random
from the words of the bundled corpora, so common stretches recur often) and indexed. From 60
pages chosen at random, one sentence each is quoted five ways:

* ``exact``: verbatim (across its line break when it wraps);
* ``variant``: upper case, doubled spaces, the line break a space;
* ``one_word``: one word of the sentence replaced by another (a close match when the ratio
  stays at or above the threshold; short sentences may fall below it and be not found);
* ``long``: 1,000 characters (the longest quote taken) starting at the sentence, with one word
  changed near its end;
* ``absent``: a sentence of the same words that the document does not hold (an error).

Each quote is located with ``RetrievalTools.get_document(doc, quote=...)`` (the tool's work
without the transport: document read, matching, chunk map, result bounded); the results give
median and p95 milliseconds per kind after one warm-up, and how often the page found is the
sentence's page.

    .venv/bin/python bench/grounding/quote_locate.py
"""

from __future__ import annotations

import json
import random
import re
import statistics
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import CACHE, REPO  # noqa: E402

sys.path.insert(0, str(REPO))
from mcp_server.errors import NotFoundError  # noqa: E402
from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402
from mcp_server.surface.tools import RetrievalTools  # noqa: E402
from scripts.text_pdf import write_text_pdf  # noqa: E402

PAGES = 300
LINES_PER_PAGE = 40
QUOTED_PAGES = 60
RESULTS = Path(__file__).with_name("results-quote-locate.json")
WORD = re.compile(r"[A-Za-z]{2,14}")


def vocabulary() -> list[str]:
    words = sorted({w.lower() for p in (REPO / "corpora").rglob("*.md") for w in WORD.findall(p.read_text("utf-8"))})
    return words


def sentence(rng: random.Random, words: list[str]) -> str:
    return " ".join(rng.choice(words) for _ in range(rng.randint(10, 22))).capitalize() + "."


def build(root: Path, rng: random.Random, words: list[str]) -> tuple[Settings, list[list[str]]]:
    """The corpus folder with the PDF, and each page's sentences."""
    corpus = root / "long"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "corpus.toml").write_text('name = "long"\ndescription = "One long report."\n', encoding="utf-8")
    pages: list[list[str]] = []
    texts = []
    for _ in range(PAGES):
        sentences: list[str] = []
        while len(textwrap.wrap(" ".join(sentences), 85)) < LINES_PER_PAGE:
            sentences.append(sentence(rng, words))
        pages.append(sentences[:-1])
        texts.append("\n".join(textwrap.wrap(" ".join(sentences[:-1]), 85)))
    write_text_pdf(corpus / "report.pdf", "Long report", texts)
    return Settings(data_dir=root / "data", corpora=[corpus]), pages


def quotes(rng: random.Random, words: list[str], pages: list[list[str]], text: str) -> dict[str, list[tuple[str, int]]]:
    """kind -> (quote, page it is on) for the chosen pages."""
    kinds: dict[str, list[tuple[str, int]]] = {"exact": [], "variant": [], "one_word": [], "long": [], "absent": []}
    flat = " ".join(text.split())
    for page in rng.sample(range(PAGES), QUOTED_PAGES):
        chosen = rng.choice(pages[page][1:-1])
        kinds["exact"].append((chosen, page + 1))
        kinds["variant"].append((chosen.upper().replace(" ", "  "), page + 1))
        replaced = chosen.split()
        replaced[len(replaced) // 2] = rng.choice(words)
        kinds["one_word"].append((" ".join(replaced), page + 1))
        start = flat.find(chosen)
        long = flat[start : start + 1000].split()
        long[-3] = rng.choice(words)
        kinds["long"].append((" ".join(long)[:1000], page + 1))
        absent = sentence(rng, words)
        while absent in flat:
            absent = sentence(rng, words)
        kinds["absent"].append((absent, 0))
    return kinds


def main() -> None:
    rng = random.Random(26)
    words = vocabulary()
    settings, pages = build(CACHE / "quote-locate", rng, words)
    ingest(settings)
    tools = RetrievalTools.open(settings)
    document = tools.retriever.documents.get_document("long:report")
    cases = quotes(rng, words, pages, document.text)
    tools.get_document("long:report", corpus=None, chunk=None, window=0, quote=cases["exact"][0][0])  # warm-up
    summary = {}
    for kind, items in cases.items():
        times, on_page, matched, ratios = [], 0, 0, []
        for quote, page in items:
            start = time.perf_counter()
            try:
                located = tools.get_document("long:report", corpus=None, chunk=None, window=0, quote=quote).quote
            except NotFoundError:
                located = None
            times.append((time.perf_counter() - start) * 1000)
            if located is not None:
                matched += 1
                ratios.append(located.ratio)
                on_page += located.page == page
        summary[kind] = {
            "quotes": len(items), "located": matched, "on_the_right_page": on_page,
            "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
            "latency_ms": {"median": round(statistics.median(times), 2),
                           "p95": round(sorted(times)[int(0.95 * len(times)) - 1], 2),
                           "max": round(max(times), 2)},
        }  # fmt: skip
    tools.close()
    result = {"pages": PAGES, "document_chars": len(document.text), "chunks": len(document.chunks), "kinds": summary}
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
