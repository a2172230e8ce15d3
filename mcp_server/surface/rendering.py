"""Tool results as text a model reads well: every piece of evidence headed by its citation id.

The structured result carries the same facts as JSON; this rendering is what a host puts
in front of the model, so it leads with what to cite and leaves out scores and offsets.

What comes from inside a document or the database (titles, sections, urls, sheet names, cells,
text) is shown through :func:`~mcp_server.display_text.for_display`: a control, escape or
text-direction character is written as its escape, and a one-line field keeps to its line, so a
title cannot forge a citation id on a line of its own. The structured result keeps the values as
they are.
"""

from __future__ import annotations

from datetime import date

from mcp_server.citation_ids import DocumentRef
from mcp_server.display_text import for_display
from mcp_server.models import Citation, QuoteLocation, SqlResult, describe_location
from mcp_server.surface.answer_check import AnswerCheck
from mcp_server.surface.tools import DocumentResult, SearchResult


def render_search(result: SearchResult) -> str:
    scope = f"corpus {result.corpus}" if result.corpus else "all corpora"
    if not result.hits and result.below_min_score:
        return (
            f"No hits for {result.query!r} in {scope} ({result.retriever} search) at or above min_score: "
            f"{result.below_min_score} scored below it. Lower min_score or try other words."
        )
    if not result.hits:
        return (
            f"No hits for {result.query!r} in {scope} ({result.retriever} search). Try other words, "
            "vector_search for a paraphrase, keyword_search for an exact term, or another corpus."
        )
    count = "1 hit" if len(result.hits) == 1 else f"{len(result.hits)} hits"
    reranked = f", reranked by {result.reranked_by}" if result.reranked_by else ""
    blocks = [f"{count} for {result.query!r} in {scope} ({result.retriever} search{reranked}), best first."]
    for hit in result.hits:
        heading = [for_display(f"[{hit.citation.id}]"), for_display(_provenance(hit.citation))]
        blocks.append("\n".join([*heading, for_display(hit.text.strip(), lines=True)]))
    if result.below_min_score:
        blocks.append(f"({result.below_min_score} more hits scored below min_score and were left out.)")
    if result.omitted:
        blocks.append(
            f"({result.omitted} more hits left out to stay within the size limit; "
            "ask for fewer with top_k or narrow the query.)"
        )
    return "\n\n".join(blocks)


def fit_search(result: SearchResult, max_chars: int) -> SearchResult:
    """``result`` with the fewest of its last hits left out (counted in ``omitted``) for its JSON and its
    rendering to be at most ``max_chars`` characters each, whichever of them a host shows its model; the best
    hit always stays."""

    def cut(count: int) -> SearchResult:
        left_out = len(result.hits) - count
        return result.model_copy(update={"hits": result.hits[:count], "omitted": result.omitted + left_out})

    def fits(candidate: SearchResult) -> bool:
        return len(candidate.model_dump_json()) <= max_chars and len(render_search(candidate)) <= max_chars

    if fits(result):
        return result
    # Once a hit is left out, every further hit kept makes both forms longer: bisect for the most that fit.
    low, high = 1, len(result.hits) - 1
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(cut(middle)) else (low, middle - 1)
    return cut(low)


def render_document(document: DocumentResult) -> str:
    """The text with each chunk's citation id on its own line where the chunk starts.

    Chunks overlap a little; the text between two markers lies inside the earlier chunk,
    so the nearest marker above a sentence is a correct citation for it.
    """
    details = _details(
        document.updated, document.url, f"category {document.category}" if document.category else "",
        "tags " + ", ".join(document.tags) if document.tags else "",
        f"read by OCR: pages {document.metadata['ocr_pages']}" if document.metadata.get("ocr_pages") else "",
    )
    ref = DocumentRef(document.corpus, document.doc_id)
    parts = [for_display(f"{ref} — {document.title} — {document.source}{details}")]
    if document.quote is not None:
        parts.append(render_quote(document.quote))
    text = document.text
    starts = [span.char_start - document.text_offset for span in document.chunks]
    if not starts or starts[0] > 0:
        parts.append(for_display(text[: starts[0] if starts else len(text)].strip(), lines=True))
    for span, start, end in zip(document.chunks, starts, [*starts[1:], len(text)]):
        where = describe_location(span.page, span.page_end, document.page_kind, span.line_start, span.line_end)
        heading = for_display(f"[{span.citation_id}]{f' ({where})' if where else ''}")
        parts.append(f"{heading}\n{for_display(text[start:end].strip(), lines=True)}")
    if document.truncated:
        note = "Cut to stay within the size limit"
        if document.next_chunk is not None:
            chunk = document.next_chunk
            note += f"; it continues at chunk {chunk}: call get_document with chunk={chunk} to read on"
        parts.append(f"({note}.)")
    return "\n\n".join(parts)


def render_quote(quote: QuoteLocation) -> str:
    """Where a located quote is, what to cite, and (for a close match) the document's own words, on one line."""
    where = quote.location()
    line = f"Quote found in [{quote.citation.id}]{f' ({where})' if where else ''}"
    line += f", characters {quote.char_start}–{quote.char_end}"
    if quote.end_citation is not None:
        line += f", running on into [{quote.end_citation.id}]"
    if quote.exact:
        line += ": an exact match (once case, spacing, hyphenation and Unicode forms are normalised)."
    else:
        line += f": a close match (ratio {quote.ratio:.2f}). The document says: {' '.join(quote.text.split())!r}"
    return for_display(line)


def render_sql(result: SqlResult) -> str:
    def cell(value: object) -> str:
        return "NULL" if value is None else for_display(str(value))

    lines = [" | ".join(map(cell, result.columns))] + [" | ".join(cell(v) for v in row) for row in result.rows]
    rows = "1 row" if result.row_count == 1 else f"{result.row_count} rows"
    more = " (truncated: more rows exist; add LIMIT/OFFSET, a narrower WHERE, or aggregate)" if result.truncated else ""
    lines.append(f"{rows}{more}. Cite as [{result.citation_id}]")
    return "\n".join(lines)


def _provenance(citation: Citation) -> str:
    """'Title › Section — source, p. 12 (updated …; url)' for one hit."""
    location = citation.title
    section = citation.section.removeprefix(f"{citation.title} > ")
    if section and section != citation.title:
        location = f"{citation.title} › {section}"
    where = citation.location()
    source = f"{citation.source}, {where}" if where else citation.source
    return f"{location} — {source}{_details(citation.updated, citation.url)}"


def _details(updated: date | None, url: str | None, *more: str) -> str:
    details = [d for d in (f"updated {updated}" if updated else "", url or "", *more) if d]
    return f" ({'; '.join(details)})" if details else ""


def render_check(check: AnswerCheck) -> str:
    """The verdict first, then one line per sentence, with a line saying why it fails or where its evidence is."""
    lines = [check.verdict]
    for number, sentence in enumerate(check.sentences, start=1):
        lines.append(for_display(f"{number}. {sentence.status}: {' '.join(sentence.text.split())}"))
        if sentence.reason:
            lines.append(f"   why: {for_display(sentence.reason)}")
        for span in sentence.evidence:
            lines_of = "" if span.line_start is None else (
                f", line {span.line_start}" if span.line_start == span.line_end else f", lines {span.line_start}–{span.line_end}")
            page = f", {span.citation.location()}" if span.citation.page is not None else ""
            lines.append(for_display(
                f"   evidence: [{span.citation.id}] {span.citation.source}{page}{lines_of}: {' '.join(span.quote.split())!r}"
            ))
    return "\n".join(lines)
