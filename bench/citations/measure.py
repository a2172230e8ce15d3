"""Located quotes against poppler: are get_document's page, visible lines and boxes where the words are?

Public PDF manuals from Debian documentation packages (:mod:`debian_pdfs`) are indexed
through the product (the indexing API, into a fresh data dir). From each, quotes are sampled
from poppler's own reading of the file (:mod:`poppler`), seeded: a word chosen uniformly among
the manual's words, then a run of 5 to 15 words from it on the same page. A run that holds an
unreadable glyph, or whose words occur more than once in the manual (the product could rightly
find the other place; a word hyphenated at a line's end counts joined, ``cur- rent`` as ``current``,
as the product's text joins it), is drawn again.

Each quote is located as an agent locates one it read in a search hit: ``keyword_search`` for
the quote within the manual gives the chunk (its top hit's citation id), then
``Retriever.documents.get_document(citation_id, quote=...)`` (get_document's work without the transport)
finds it (a quote without its chunk is searched for in a document's first 50,000 characters
only). The location is compared with the words poppler read:

- **page**: the located page is the quote's page;
- **lines**: the located ``line_start``/``line_end`` are the visible lines (rows, from 1, top to
  bottom, running header included: :mod:`poppler`) of the quote's first and last word; also
  counted on the pages whose rows are clear (not ``staggered``, :mod:`poppler`) alone;
- **boxes**: the truth is one box per visible line the quote is on, the union of its words'
  boxes there; the located boxes match when there are as many, on the same pages, and each
  pair (in page and top-to-bottom order) overlaps by IoU >= 0.9. ``x-only`` is the same with
  the boxes' horizontal extents alone (it tells a box of the right words from a line height
  measured otherwise: poppler's boxes span the font's ascent to its descent). ``tall`` counts the
  quotes with a located box over 1.5 times as tall as poppler's tallest line of the quote: two
  rows the product took for one line.

Located quotes are the denominator of the shares; the others are counted apart. The picture
of the located quote's page is drawn for the first quotes of each manual through
:func:`mcp_server.retrieval.page_pictures.page_picture` (locate the quote, read and fingerprint
the file, draw the page in the reading process), timed (median, p95).

    .venv/bin/python bench/citations/measure.py            # writes bench/citations/results.md
    .venv/bin/python bench/citations/measure.py --quotes 100 --pictures 10 --out /tmp/r.md
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from common import REPO, log, seed_embedding_cache  # noqa: E402
from debian_pdfs import MANUALS, fetch  # noqa: E402
from poppler import UNREADABLE, Page, Rect, Word, read_pdf  # noqa: E402

sys.path.insert(0, str(REPO))
from mcp_server.errors import RetrievalError  # noqa: E402
from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.models import QuoteLocation, SearchFilters  # noqa: E402
from mcp_server.retrieval.page_pictures import page_picture  # noqa: E402
from mcp_server.retrieval.retriever import Retriever  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402

CORPUS = "manuals"
IOU_THRESHOLD = 0.9
TALL = 1.5
MIN_WORDS, MAX_WORDS = 5, 15
_HYPHENATED_RE = re.compile(r"(?<=[a-z])- (?=[a-z])")


@dataclass(frozen=True)
class Quote:
    """A run of words poppler read on one page (``staggered``: that page's rows are unclear)."""

    page: int
    words: tuple[Word, ...]
    staggered: bool

    @property
    def text(self) -> str:
        return " ".join(word.text for word in self.words)

    def truth_boxes(self) -> list[tuple[int, Rect]]:
        """One box per visible line the quote is on: the union of its words' boxes there, top to bottom."""
        rows: dict[int, Rect] = {}
        for word in self.words:
            rows[word.row] = union(rows[word.row], word.box) if word.row in rows else word.box
        return [(self.page, rows[row]) for row in sorted(rows)]


@dataclass
class Tally:
    """What became of one manual's quotes."""

    quotes: int = 0
    located: int = 0
    exact: int = 0
    page: int = 0
    lines: int = 0
    clear: int = 0
    clear_lines: int = 0
    boxed: int = 0
    boxes: int = 0
    boxes_x: int = 0
    tall: int = 0
    ious: list[float] = field(default_factory=list)
    picture_ms: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)


def union(a: Rect, b: Rect) -> Rect:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def iou(a: Rect, b: Rect) -> float:
    """Intersection over union of two boxes (0 when they do not overlap)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def x_iou(a: Rect, b: Rect) -> float:
    """:func:`iou` of the boxes' horizontal extents alone."""
    return iou((a[0], 0.0, a[2], 1.0), (b[0], 0.0, b[2], 1.0))


def sample_quotes(pages: Sequence[Page], count: int, rng: random.Random) -> list[Quote]:
    """``count`` distinct, unambiguous runs of 5-15 words on one page (see the module docstring)."""
    words = [(page.number, index) for page in pages for index in range(len(page.words))]
    everything = _joined(" " + " ".join(w.text for page in pages for w in page.words) + " ")
    by_number = {page.number: page for page in pages}
    quotes: dict[str, Quote] = {}
    for _ in range(count * 50):
        if len(quotes) == count:
            break
        number, start = rng.choice(words)
        page_words = by_number[number].words
        length = rng.randint(MIN_WORDS, MAX_WORDS)
        if len(page_words) < length:
            continue
        start = min(start, len(page_words) - length)
        quote = Quote(number, page_words[start : start + length], by_number[number].staggered)
        if UNREADABLE in quote.text or everything.count(f" {_joined(quote.text)} ") != 1:
            continue
        quotes.setdefault(quote.text, quote)
    return list(quotes.values())


def _joined(text: str) -> str:
    """``text`` with its words hyphenated at a line's end joined (``cur- rent``: ``current``)."""
    return _HYPHENATED_RE.sub("", text)


def judge(quote: Quote, located: QuoteLocation, tally: Tally) -> None:
    """Count what of ``located`` matches ``quote`` into ``tally``."""
    tally.located += 1
    tally.exact += located.exact
    tally.page += located.page == quote.page
    numbers = (located.line_start, located.line_end) if located.lines == "page" else None
    lines_ok = numbers == (quote.words[0].row, quote.words[-1].row)
    tally.lines += lines_ok
    tally.clear += not quote.staggered
    tally.clear_lines += lines_ok and not quote.staggered
    found = located.boxes
    if found is None:
        tally.misses.append(_miss(quote, located, "no boxes", lines_ok))
        return
    tally.boxed += 1
    truth = quote.truth_boxes()
    boxes = sorted(((box.page, (box.x0, box.y0, box.x1, box.y1)) for box in found), key=lambda b: (str(b[0]), b[1][1]))
    paired = len(boxes) == len(truth) and all(str(p) == str(q) for (p, _), (q, _) in zip(boxes, truth))
    overlap = min((iou(a, b) for (_, a), (_, b) in zip(boxes, truth)), default=0.0) if paired else 0.0
    overlap_x = min((x_iou(a, b) for (_, a), (_, b) in zip(boxes, truth)), default=0.0) if paired else 0.0
    tally.ious.append(overlap)
    tally.boxes += overlap >= IOU_THRESHOLD
    tally.boxes_x += overlap_x >= IOU_THRESHOLD
    tallest = max(rect[3] - rect[1] for _, rect in truth)
    tally.tall += any(rect[3] - rect[1] > TALL * tallest for _, rect in boxes)
    if overlap < IOU_THRESHOLD or not lines_ok:
        tally.misses.append(_miss(quote, located, f"IoU {overlap:.2f} (x-only {overlap_x:.2f}), {len(boxes)} boxes "
                                  f"for {len(truth)}: located {_boxes(boxes)}, poppler {_boxes(truth)}", lines_ok))  # fmt: skip


def _boxes(boxes: Sequence[tuple[object, Rect]]) -> str:
    return "; ".join(f"p{page} " + ",".join(f"{v:.1f}" for v in rect) for page, rect in boxes)


def _miss(quote: Quote, located: QuoteLocation, what: str, lines_ok: bool) -> str:
    rows = f"{quote.words[0].row}-{quote.words[-1].row}"
    lines = "" if lines_ok else f"; lines {located.line_start}-{located.line_end} ({located.lines}) for rows {rows}"
    return f"p. {quote.page} “{quote.text}”: located p. {located.page}{lines}; {what}"


def measure(retriever: Retriever, doc_id: str, quotes: list[Quote], pictures: int) -> Tally:
    """Locate each quote and judge it; draw the pictures of the first ``pictures`` located ones, timed."""
    tally = Tally(quotes=len(quotes))
    drawn = 0
    for quote in quotes:
        try:
            hits = retriever.searcher.search(quote.text, mode="keyword", top_k=1, filters=SearchFilters(source_prefix=f"{doc_id}.pdf"))
        except RetrievalError:  # a quote of punctuation alone, say
            hits = []
        ref = hits[0].citation.id if hits else f"{CORPUS}:{doc_id}"
        try:
            located = retriever.documents.get_document(ref, quote=quote.text).quote
        except RetrievalError as error:
            tally.misses.append(f"p. {quote.page} “{quote.text}”: not located ({error})")
            continue
        assert located is not None
        judge(quote, located, tally)
        if drawn < pictures:
            started = time.perf_counter()
            page_picture(retriever, ref, quote=quote.text)
            tally.picture_ms.append((time.perf_counter() - started) * 1000)
            drawn += 1
    return tally


def percentile(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(round(share * len(ordered))) - 1)]


def share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "–"


def report(tallies: dict[str, Tally], sources: dict[str, str], pages: dict[str, int], args: argparse.Namespace,
           seconds: float) -> str:  # fmt: skip
    total = Tally()
    for tally in tallies.values():
        for name in ("quotes", "located", "exact", "page", "lines", "clear", "clear_lines", "boxed", "boxes", "boxes_x", "tall"):
            setattr(total, name, getattr(total, name) + getattr(tally, name))
        total.ious += tally.ious
        total.picture_ms += tally.picture_ms
    rows = [*tallies.items(), ("all", total)]
    command = "python bench/citations/measure.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    lines = [
        "# Citations: located quotes against poppler's word boxes",
        "",
        f"Command: `{command.strip()}` (seed {args.seed}, {args.quotes} quotes a manual; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {seconds:.0f} s in all, "
        f"{platform.machine()} Python {platform.python_version()}). See measure.py for what is compared.",
        "",
        "| manual (Debian package file) | pages | quotes | located | exact | page right | lines right "
        f"| lines right, clear rows | boxes IoU ≥ {IOU_THRESHOLD} | same, x only | median IoU | tall |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tally in rows:
        source = f"{name} (`{sources[name]}`)" if name in sources else "**all**"
        median = f"{statistics.median(tally.ious):.3f}" if tally.ious else "–"
        lines.append(
            f"| {source} | {pages.get(name, sum(pages.values()))} | {tally.quotes} | {share(tally.located, tally.quotes)} "
            f"| {share(tally.exact, tally.located)} | {share(tally.page, tally.located)} "
            f"| {share(tally.lines, tally.located)} | {share(tally.clear_lines, tally.clear)} "
            f"| {share(tally.boxes, tally.boxed)} "
            f"| {share(tally.boxes_x, tally.boxed)} | {median} | {tally.tall} |"
        )
    lines.append("")
    if total.boxed < total.located:
        lines.append(f"{total.located - total.boxed} located quotes came without boxes (the boxes API was not in).")
    if total.picture_ms:
        lines.append(
            f"Picture of the quote's page (`page_picture`, {len(total.picture_ms)} pictures): median "
            f"{statistics.median(total.picture_ms):.0f} ms, p95 {percentile(total.picture_ms, 0.95):.0f} ms."
        )
    lines += ["", "## First misses per manual", ""]
    for name, tally in tallies.items():
        lines += [f"- {name}: {miss}" for miss in tally.misses[: args.misses]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "ragmcp-bench" / "citations",
                        help="where the .deb files and PDFs are kept (outside the repository)")  # fmt: skip
    parser.add_argument("--quotes", type=int, default=150, help="quotes sampled from each manual")
    parser.add_argument("--pictures", type=int, default=20, help="pictures drawn and timed from each manual")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--misses", type=int, default=5, help="misses listed per manual")
    parser.add_argument("--out", type=Path, default=HERE / "results.md")
    args = parser.parse_args()
    started = time.perf_counter()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="citations-") as work:
        corpus = Path(work) / CORPUS
        corpus.mkdir()
        sources, readings = {}, {}
        for manual in MANUALS:
            pdf, sources[manual.name] = fetch(manual, args.cache)
            (corpus / f"{manual.name}.pdf").write_bytes(pdf.read_bytes())
            readings[manual.name] = read_pdf(pdf)
        settings = Settings(data_dir=Path(work) / "data", corpora=[corpus])
        embeddings = args.cache / "embedding-cache.sqlite"  # the manuals' chunks, embedded by an earlier run
        seed_embedding_cache(settings.embedding_cache_path, embeddings)
        log(f"indexing {len(MANUALS)} manuals")
        ingest(settings)
        shutil.copyfile(settings.embedding_cache_path, embeddings)
        retriever = Retriever.open(settings)
        try:
            tallies = {}
            for name, pages in readings.items():
                log(f"{name}: locating {args.quotes} quotes")
                tallies[name] = measure(retriever, name, sample_quotes(pages, args.quotes, rng), args.pictures)
        finally:
            retriever.close()
    text = report(tallies, sources, {name: len(pages) for name, pages in readings.items()}, args,
                  time.perf_counter() - started)  # fmt: skip
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
