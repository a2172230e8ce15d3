"""What one check_answer or quote call may cost a shared server: limits with clear refusals, bounded work, a deadline.

Issue 35, finding 4. The limits of ``check_answer`` refuse an answer saying what to do; an answer
within them, citing chunks crafted to be costly, costs a small multiple of an ordinary answer as
long (CPU time of this process, compared in the same run); a quote is looked for in a bounded
stretch of a long document, and a quote that normalises to more than the limit is refused; and a
call that runs out of time stops its worker thread soon after, where it used to run to the end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from mcp_server.errors import CallTimeoutError, InvalidQueryError, NotFoundError
from mcp_server.grounding.verdict import check_answer
from mcp_server.models import Citation
from mcp_server.retrieval.quote_location import QUOTE_SCOPE_CHARS, check_quote, locate_quote
from mcp_server.settings import Settings
from mcp_server.stores.docstore import DocumentStore, StoredChunk, StoredDocument
from mcp_server.surface import answer_check
from mcp_server.surface.answer_check import (
    MAX_CITATIONS, MAX_CITED_IDS, MAX_SENTENCE_IDS, MAX_SENTENCES, check_cited_answer,
)  # fmt: skip
from mcp_server.surface.server import CallRunner
from tests.mcp_server.grounding.test_cpu_bounds import ORDINARY_EVIDENCE, cpu_seconds, ordinary_answer

TOOL_BUDGET = 10
"""A crafted answer within the limits costs at most this many times an ordinary answer as long (about 5 here)."""


def _citation(cid: str) -> Citation:
    return Citation(
        id=cid, corpus="t", doc_id="d", chunk=0, title="T", source="d.md", section="", char_start=0, char_end=1,
        line_start=1,
    )  # fmt: skip


def _check(answer: str, chunks: dict[str, str]) -> Callable[[], object]:
    def work() -> object:
        answer_check._evidence_sentences.cache_clear()
        return check_cited_answer(answer, None, lambda cid: (_citation(cid), chunks[cid]) if cid in chunks else None)

    return work


def _ids(count: int) -> list[str]:
    return [f"t:d#{i}" for i in range(count)]


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        pytest.param("Leave is granted. " * (MAX_SENTENCES + 1), f"check at most {MAX_SENTENCES} at a time", id="sentences"),
        pytest.param(
            f"Leave is granted [{', '.join(_ids(MAX_SENTENCE_IDS + 1))}].", f"cite at most {MAX_SENTENCE_IDS} per sentence",
            id="ids-in-a-sentence",
        ),
        pytest.param(
            " ".join(f"Leave is granted [{cid}]." for cid in _ids(MAX_CITED_IDS + 1)),
            f"cites {MAX_CITED_IDS + 1} different ids; check at most {MAX_CITED_IDS}", id="distinct-ids",
        ),
        pytest.param(
            " ".join([f"Leave is granted [{', '.join(_ids(MAX_SENTENCE_IDS))}]."] * (MAX_CITATIONS // MAX_SENTENCE_IDS + 1)),
            f"check at most {MAX_CITATIONS} at a time", id="citations",
        ),
    ],
)  # fmt: skip
def test_an_answer_over_a_limit_is_refused_saying_what_to_do(answer: str, refusal: str) -> None:
    with pytest.raises(InvalidQueryError, match="split it in parts|per sentence") as refused:
        _check(answer, {})()
    assert refusal in str(refused.value)


def test_crafted_chunks_within_the_limits_cost_about_an_ordinary_answer() -> None:
    """Every sentence cites as many ids as it may, each chunk holding its words in dozens of short sentences:
    finding each sentence's evidence used to read every chunk sentence again for every citation."""
    ids = _ids(MAX_CITED_IDS)
    chunks = {cid: "Alpha beta gamma delta. " * 70 for cid in ids}
    sentences = MAX_CITATIONS // MAX_SENTENCE_IDS
    answer = " ".join(
        f"Alpha beta gamma delta [{', '.join(ids[(k * 3 + j) % len(ids)] for j in range(MAX_SENTENCE_IDS))}]."
        for k in range(sentences)
    )
    ordinary = ordinary_answer(len(answer))
    crafted, baseline = cpu_seconds(_check(answer, chunks)), cpu_seconds(_check(ordinary, ORDINARY_EVIDENCE))
    assert crafted <= TOOL_BUDGET * baseline, (crafted, baseline)


def test_a_quote_that_normalises_past_the_limit_is_refused() -> None:
    with pytest.raises(InvalidQueryError, match="the quote is 1800 characters long; locate at most 1000"):
        check_quote("\ufdfa" * 100)  # each one spells out an 18-character blessing


def _document(text: str, chunk_chars: int) -> tuple[StoredDocument, list[StoredChunk]]:
    document = StoredDocument(
        corpus="t", doc_id="d", source="d.md", title="D", category=None, tags=(), date=None, url=None, extra={},
        fingerprint="f", text=text,
    )  # fmt: skip
    spans = [
        StoredChunk(chunk=n, char_start=start, char_end=min(start + chunk_chars, len(text)), section="")
        for n, start in enumerate(range(0, len(text), chunk_chars))
    ]
    return document, spans


def test_a_long_document_is_searched_around_the_chunk_named_and_the_refusal_says_so(tmp_path: Path) -> None:
    filler = "The pump is grey. " * (3 * QUOTE_SCOPE_CHARS // 18)
    quote = "Replace the filter cartridge every 400 operating hours."
    document, spans = _document(filler + quote + " " + filler, 1_000)
    chunk = next(span.chunk for span in spans if span.char_start <= len(filler) < span.char_end)
    docstore = DocumentStore(tmp_path / "docstore.sqlite")  # the document has no pages: no geometry stored
    location, first, _ = locate_quote(quote, document, spans, chunk, docstore)
    assert location.text == quote and first == chunk
    with pytest.raises(NotFoundError) as not_found:
        locate_quote(quote, document, spans, None, docstore)
    assert f"the {QUOTE_SCOPE_CHARS:,} from its start were searched: pass the citation id" in str(not_found.value)


def test_a_quote_in_a_long_line_of_cjk_text_costs_about_one_in_ordinary_text(tmp_path: Path) -> None:
    """The red team's case: a quote against a document of one line of 300,000 CJK characters (it took 25 s
    for a line of a million)."""
    cjk = "".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(300_000))
    crafted_document, crafted_spans = _document(cjk, 1_000)
    ordinary_document, ordinary_spans = _document("The pump is grey and needs a new filter. " * 7_500, 1_000)
    docstore = DocumentStore(tmp_path / "docstore.sqlite")

    def locate(document: StoredDocument, spans: list[StoredChunk], quote: str) -> Callable[[], object]:
        def work() -> object:
            try:
                return locate_quote(quote, document, spans, None, docstore)
            except NotFoundError as e:
                return e

        return work

    crafted = cpu_seconds(locate(crafted_document, crafted_spans, cjk[-300:]))
    baseline = cpu_seconds(locate(ordinary_document, ordinary_spans, "the pump is blue and needs a new filter"))
    assert crafted <= 4 * baseline, (crafted, baseline)


def test_a_timed_out_check_stops_its_worker_thread_soon_after(tmp_path: Path) -> None:
    """A thread cannot be killed: the check looks at the call's deadline between sentences, so it stops
    within a small part of the time it would have taken, where it used to run to the end.

    The whole check is timed before and after the timed-out one and the slower of the two is the
    yardstick, so a machine that gets busier during the test does not make the worker look late."""
    answer = ordinary_answer(800_000)

    def whole_check() -> float:
        started = time.monotonic()
        check_answer(answer, ORDINARY_EVIDENCE)
        return time.monotonic() - started

    whole_check()  # warm: the first check of a process pays for loading what it uses
    whole = whole_check()
    timeout = whole / 10
    ended = threading.Event()
    ended_at: list[float] = []

    def work() -> None:
        try:
            check_answer(answer, ORDINARY_EVIDENCE)
        finally:
            ended_at.append(time.monotonic())
            ended.set()

    runner = CallRunner(Settings.from_names(data_dir=tmp_path, call_timeout_s=timeout))
    started = time.monotonic()
    with pytest.raises(CallTimeoutError):
        anyio.run(runner.run, work)
    assert ended.wait(10 * whole)
    stopped_after = ended_at[0] - started
    yardstick = max(whole, whole_check())
    assert stopped_after < yardstick / 2, (stopped_after, timeout, yardstick)
