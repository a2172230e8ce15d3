"""The shapes users see: citations, hits, documents, SQL results, corpus summaries.

These pydantic models are the public contract of DESIGN.md. The retrieval library
returns them, the CLI prints them, and the MCP surface publishes their JSON schemas.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Retriever = Literal["vector", "keyword", "hybrid"]
SqlValue = str | int | float | None
PageKind = Literal["page", "slide", "sheet"]
"""What a citation's ``page`` counts: PDF pages and slides by number from 1, spreadsheet sheets by name."""


def citation_id(corpus: str, doc_id: str, chunk: int) -> str:
    """The citation id of one chunk: ``<corpus>:<doc_id>#<chunk>``."""
    return f"{corpus}:{doc_id}#{chunk}"


LOCATION_FIELDS = ("page", "page_end", "page_kind", "line_start", "line_end")
"""The citation record's fields that place a chunk in its source, in :func:`describe_location`'s order."""


def describe_location(
    page: object, page_end: object, page_kind: object, line_start: object, line_end: object
) -> str:
    """A citation's place in its source as a reader checks it: 'p. 12', 'pp. 3–4', 'slide 4',
    'sheet Budget, rows 2–9', 'lines 10–24'; '' when the source has neither pages nor lines.

    Takes the citation record's fields (from a :class:`Citation` or its JSON form).
    """
    parts = []
    if page is not None:
        singular, plural = {"slide": ("slide ", "slides "), "sheet": ("sheet ", "sheets ")}.get(
            str(page_kind), ("p. ", "pp. ")
        )
        parts.append(f"{plural}{page}–{page_end}" if page_end is not None else f"{singular}{page}")
    if line_start is not None:
        unit = "row" if page_kind == "sheet" else "line"
        last = line_end if line_end is not None else line_start
        parts.append(f"{unit}s {line_start}–{last}" if last != line_start else f"{unit} {line_start}")
    return ", ".join(parts)


def _nullable_as_type_lists(schema: dict[str, Any]) -> None:
    """Write each property's ``anyOf`` of bare types as one type list: ``{"type": ["integer", "null"]}``.

    The same constraint as pydantic's ``{"anyOf": [{"type": "integer"}, {"type": "null"}]}``,
    which a host's JSON Schema validator checks about a third faster, on every result it
    receives (the MCP SDK client validates each ``structuredContent`` against ``outputSchema``).
    """
    for field in schema.get("properties", {}).values():
        branches = field.get("anyOf")
        if branches and all(set(branch) == {"type"} for branch in branches):
            del field["anyOf"]
            field["type"] = [branch["type"] for branch in branches]


class PublishedModel(BaseModel):
    """A shape the MCP surface publishes as a tool's ``outputSchema``."""

    model_config = ConfigDict(json_schema_extra=_nullable_as_type_lists)


class Citation(PublishedModel):
    """Where a piece of evidence came from, precisely enough to quote and check it."""

    id: str = Field(description="Citation id, '<corpus>:<doc_id>#<chunk>'; cite it as [id].")
    corpus: str
    doc_id: str = Field(description="Stable document id: its path inside the corpus, without extension.")
    chunk: int = Field(description="Chunk number inside the document, from 0.")
    title: str
    source: str = Field(description="The document's file path inside its corpus.")
    section: str = Field(description="Heading path of the chunk, e.g. 'Annual leave > Entitlement'.")
    char_start: int = Field(description="Offset of the chunk's first character in the document text.")
    char_end: int = Field(description="Offset one past the chunk's last character in the document text.")
    updated: date | None = Field(default=None, description="The document's date, when known.")
    url: str | None = Field(default=None, description="The document's original URL, when known.")
    page: int | str | None = Field(
        default=None,
        description="Where the chunk starts, for paged sources: the PDF page or slide number (from 1), or the "
        "spreadsheet's sheet name; page_kind says which.",
    )
    page_end: int | str | None = Field(
        default=None, description="The page, slide or sheet where the chunk ends, when it runs past `page`."
    )
    page_kind: PageKind | None = Field(default=None, description="What `page` counts: page, slide or sheet.")
    line_start: int | None = Field(
        default=None,
        description="First line of the chunk in the source file (from 1), for text formats and CSV; "
        "a row number in a spreadsheet sheet.",
    )
    line_end: int | None = Field(default=None, description="Last line (or row) of the chunk in the source file.")

    def location(self) -> str:
        """'p. 12', 'slide 4', 'sheet Budget, rows 2–9', 'lines 10–24', or '' (see :func:`describe_location`)."""
        return describe_location(self.page, self.page_end, self.page_kind, self.line_start, self.line_end)


class Hit(PublishedModel):
    """One ranked search result: a chunk of text and its citation."""

    rank: int = Field(description="1 for the best hit.")
    score: float = Field(description="Retriever score: cosine similarity, BM25, or fused RRF score.")
    retriever: Retriever
    text: str
    citation: Citation


MAX_FILTER_TAGS = 20
"""The most tags one search may filter by (a document keeps at most 100)."""
MAX_FILTER_CHARS = 200


class SearchFilters(BaseModel):
    """Conditions on document metadata; every condition given must hold. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    category: str | None = Field(default=None, description="Exact document category.")
    tags: list[Annotated[str, Field(max_length=MAX_FILTER_CHARS)]] = Field(
        default_factory=list, max_length=MAX_FILTER_TAGS,
        description=f"The document must carry all of these tags (at most {MAX_FILTER_TAGS}).",
    )  # fmt: skip
    date_from: date | None = Field(default=None, description="Document date on or after this day.")
    date_to: date | None = Field(default=None, description="Document date on or before this day.")
    source_prefix: str | None = Field(
        default=None, description="Document path inside its corpus starts with this, e.g. 'hr/'."
    )

    def is_empty(self) -> bool:
        return not (self.category or self.tags or self.date_from or self.date_to or self.source_prefix)


class ChunkSpan(PublishedModel):
    """One chunk in a document's chunk map, with its page and lines where the source has them."""

    chunk: int
    citation_id: str
    section: str
    char_start: int
    char_end: int
    page: int | str | None = None
    page_end: int | str | None = None
    line_start: int | None = None
    line_end: int | None = None


QuoteLines = Literal["file", "page", "text"]
"""What a quote's line numbers count: source-file lines (rows of a sheet), lines on its page, or lines of the text."""


class QuoteLocation(PublishedModel):
    """Where a quote is in a document: its chunk's citation, page, lines and offsets, and how well it matches."""

    quote: str = Field(description="The quote as it was asked for.")
    text: str = Field(description="The document's own text at the match, verbatim: what to quote and cite.")
    exact: bool = Field(
        description="True when the text is the quote once both are normalised (case, whitespace, hyphenation at "
        "line breaks, Unicode forms, curly quotes and dashes); false for a close match."
    )
    ratio: float = Field(
        description="Similarity of the normalised quote and text, 0 to 1 (1 when exact): 2 x matching characters / "
        "(quote length + text length). A match needs at least the documented minimum."
    )
    char_start: int = Field(description="Offset of the match in the document text (as chunk offsets count).")
    char_end: int = Field(description="Offset one past the match's end in the document text.")
    citation: Citation = Field(description="The chunk holding the match (or where it starts): cite its id.")
    end_citation: Citation | None = Field(
        default=None, description="When the match runs on past that chunk: the chunk where it ends."
    )
    page: int | str | None = Field(default=None, description="The page, slide or sheet of the match's start.")
    page_end: int | str | None = Field(default=None, description="Its last page, slide or sheet, when another.")
    page_kind: PageKind | None = None
    line_start: int = Field(description="First line of the match, counted as `lines` says (from 1).")
    line_end: int = Field(description="Last line of the match.")
    lines: QuoteLines = Field(
        description="What the line numbers count: 'file', lines of the source file (rows of a sheet); 'page', "
        "lines of the page's extracted text (PDF pages, slides); 'text', lines of the document text."
    )

    def location(self) -> str:
        """'p. 2, lines 3–4', 'lines 10–12' (see :func:`describe_location`)."""
        return describe_location(self.page, self.page_end, self.page_kind, self.line_start, self.line_end)


class DocumentView(PublishedModel):
    """A whole document (or a window of its chunks) with metadata and chunk map."""

    corpus: str
    doc_id: str
    title: str
    source: str
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    updated: date | None = None
    url: str | None = None
    page_kind: PageKind | None = Field(
        default=None, description="What the chunks' `page` counts: page, slide or sheet."
    )
    metadata: dict[str, str] = Field(
        default_factory=dict,
        description="The document's other metadata fields, e.g. `ocr_pages`: the pages whose text was read by OCR.",
    )
    text: str = Field(description="The document text the chunk offsets refer to (or the requested window of it).")
    text_offset: int = Field(default=0, description="Offset of `text` in the full document text.")
    char_count: int = Field(description="Length of the full document text.")
    chunks: list[ChunkSpan]
    citation: Citation = Field(description="Citation of the first chunk returned.")
    quote: QuoteLocation | None = Field(
        default=None, description="With `quote` asked for: where it is; the chunks returned are those around it."
    )


class SqlResult(PublishedModel):
    """Rows from one read-only SQL query, with a citation for the query."""

    columns: list[str]
    rows: list[list[SqlValue]]
    row_count: int = Field(description="Number of rows returned (after the row cap).")
    truncated: bool = Field(description="True when more rows existed than were returned.")
    citation_id: str = Field(description="'sql:<database>:<8-hex hash>'; cite it as [id].")
    sql: str = Field(description="The normalised SQL that ran.")


MAX_LISTED_SKIPS = 100  # skipped files a corpus listing names; skipped_count counts them all


class SkippedFileInfo(PublishedModel):
    """A file in a corpus's folder that is not in the index."""

    source: str = Field(description="The file's path inside the corpus folder.")
    reason: str = Field(description="Why it is not in the index, and what its owner can do about it.")


class CorpusInfo(PublishedModel):
    """A corpus in the index, with the description that tells a model when to use it."""

    name: str
    description: str
    language: str | None = None
    documents: int
    chunks: int
    indexed: bool = Field(
        default=True, description="False while the corpus is still being indexed: it cannot be searched yet."
    )
    skipped_count: int = Field(
        default=0,
        description="Files in the corpus folder that could not be indexed (unreadable, too large, ...): nothing in "
        "them can be found. When a question may be about one, tell the user it could not be read.",
    )
    skipped: list[SkippedFileInfo] = Field(
        default_factory=list, description=f"The first {MAX_LISTED_SKIPS} of those files by path, each with why."
    )


class ColumnInfo(PublishedModel):
    """One column of a table in the SQL database."""

    name: str
    type: str = Field(description="Declared SQLite type, e.g. 'INTEGER', 'TEXT'; empty when undeclared.")
    primary_key: bool = Field(description="True when the column is (part of) the table's primary key.")
    references: str | None = Field(
        default=None, description="Foreign key target as 'table.column', when the column is one."
    )


class TableInfo(PublishedModel):
    """A table in the SQL database, with the description that tells a model what it holds."""

    name: str
    description: str = Field(description="What one row means; empty when the schema gives none.")
    columns: list[ColumnInfo]
    row_count: int
