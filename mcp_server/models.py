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


_ONE_TYPE_KEYWORDS = {"format", "minimum", "maximum", "minLength", "maxLength", "items"}
"""Keywords that constrain only values of their own type: beside "null" in a type list they mean what they did."""


def _as_type_list(field: dict[str, Any]) -> None:
    """Write ``field``'s ``anyOf`` of bare types, or of one type and null, as a type list that accepts the same:
    ``{"type": ["integer", "null"]}`` for pydantic's ``{"anyOf": [{"type": "integer"}, {"type": "null"}]}``,
    keeping a format, range or length (and an ``enum``, which then holds null too).

    Shorter, and a host's JSON Schema validator checks it about a third faster on every result
    (the MCP SDK client validates each ``structuredContent`` against ``outputSchema``).
    """
    branches = field.get("anyOf")
    if branches and all(set(branch) == {"type"} for branch in branches):
        del field["anyOf"]
        field["type"] = [branch["type"] for branch in branches]
    elif (
        branches and len(branches) == 2 and branches[1] == {"type": "null"}
        and isinstance(branches[0].get("type"), str) and set(branches[0]) - {"type", "enum"} <= _ONE_TYPE_KEYWORDS
    ):  # fmt: skip
        typed = field.pop("anyOf")[0]
        field |= typed | {"type": [typed["type"], "null"]}
        if "enum" in typed:
            field["enum"] = [*typed["enum"], None]


def _untitled(schema: dict[str, Any]) -> None:
    """Leave out of a model's JSON schema what only repeats: pydantic's title of each property ('Char Start'
    for ``char_start``) and its default (every field is in every result; a filter left out sets no condition).

    Hosts put the tools' schemas into the model's context on every turn.
    """
    for field in schema.get("properties", {}).values():
        field.pop("title", None)
        field.pop("default", None)


def _compact_schema(schema: dict[str, Any]) -> None:
    """A result's JSON schema :func:`_untitled`, its nullable types as type lists (see :func:`_as_type_list`),
    without the model's docstring: the tool's description says what its result is, the fields what they hold."""
    _untitled(schema)
    schema.pop("description", None)
    for field in schema.get("properties", {}).values():
        _as_type_list(field)


class PublishedModel(BaseModel):
    """A shape the MCP surface publishes as a tool's ``outputSchema``."""

    model_config = ConfigDict(json_schema_extra=_compact_schema)


def _bare_schema(schema: dict[str, Any]) -> None:
    """A small model's schema :func:`_compact_schema`, without its title: it is named where it is used."""
    _compact_schema(schema)
    schema.pop("title", None)


class Box(BaseModel):
    """Where one line of a cited span is on its page: points from the page's top-left corner, y downward
    (pixels of the picture for image files), rounded to 0.1."""

    model_config = ConfigDict(json_schema_extra=_bare_schema)

    page: int | str
    x0: float
    y0: float
    x1: float
    y1: float


class Citation(PublishedModel):
    """Where a piece of evidence came from, precisely enough to quote and check it."""

    id: str = Field(description="'<corpus>:<doc_id>#<chunk>'; cite it as [id].")
    corpus: str
    doc_id: str = Field(description="The document's path inside the corpus, without extension.")
    chunk: int = Field(description="Chunk number in the document, from 0.")
    title: str
    source: str = Field(description="File path inside the corpus.")
    section: str = Field(description="Heading path, e.g. 'Annual leave > Entitlement'.")
    char_start: int = Field(description="Offset in the document text; char_end is one past the chunk's end.")
    char_end: int
    updated: date | None = Field(default=None, description="The document's date.")
    url: str | None = None
    page: int | str | None = Field(
        default=None, description="Page or slide (from 1) or sheet where the chunk starts; page_end: where it ends."
    )
    page_end: int | str | None = None
    page_kind: PageKind | None = None
    line_start: int | None = Field(
        default=None,
        description="Lines from 1 of the source file, or of the page as shown (rows of a sheet); line_end included.",
    )
    line_end: int | None = None
    boxes: list[Box] | None = Field(
        default=None,
        description="One per line: top-left x0,y0, bottom-right x1,y1 on the page (points; pixels in a picture).",
    )

    def location(self) -> str:
        """'p. 12', 'slide 4', 'sheet Budget, rows 2–9', 'lines 10–24', or '' (see :func:`describe_location`)."""
        return describe_location(self.page, self.page_end, self.page_kind, self.line_start, self.line_end)


class Hit(PublishedModel):
    """One ranked search result: a chunk of text and its citation."""

    rank: int = Field(description="1 for the best hit.")
    score: float = Field(description="The score min_score compares: cosine similarity, BM25, fused or rerank score.")
    retriever: Retriever
    text: str
    citation: Citation


MAX_FILTER_TAGS = 20
"""The most tags one search may filter by (a document keeps at most 100)."""
MAX_FILTER_CHARS = 200


class SearchFilters(BaseModel):
    """Conditions on document metadata; every condition given must hold. Unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_untitled)

    category: str | None = Field(default=None, description="Exact category.")
    tags: list[Annotated[str, Field(max_length=MAX_FILTER_CHARS)]] = Field(
        default_factory=list, max_length=MAX_FILTER_TAGS, description="Tags the document must all carry.",
    )  # fmt: skip
    date_from: date | None = Field(default=None, description="Document date on or after this day.")
    date_to: date | None = Field(default=None, description="Document date on or before this day.")
    source_prefix: str | None = Field(default=None, description="Start of the path inside the corpus, e.g. 'hr/'.")

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

    quote: str = Field(description="The quote as asked for.")
    text: str = Field(description="The document's own words at the match: what to quote and cite.")
    exact: bool = Field(
        description="True when text is the quote once both are normalised (case, spacing, hyphenation, Unicode "
        "forms, quote marks and dashes)."
    )
    ratio: float = Field(description="Similarity of quote and text, 0 to 1 (1 when exact).")
    char_start: int = Field(description="Offset in the document text; char_end is one past the match's end.")
    char_end: int
    citation: Citation = Field(description="The chunk where the match starts: cite its id.")
    end_citation: Citation | None = Field(default=None, description="The chunk where it ends, when another.")
    page: int | str | None = Field(default=None, description="Page, slide or sheet of its start; page_end: of its end.")
    page_end: int | str | None = None
    page_kind: PageKind | None = None
    line_start: int = Field(description="Its first and last line (from 1), as `lines` counts them.")
    line_end: int
    lines: QuoteLines = Field(
        description="'file': lines of the source file (rows of a sheet); 'page': lines the page shows (PDF, picture, "
        "slide); 'text': lines of the document text."
    )
    boxes: list[Box] | None = None

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
    page_kind: PageKind | None = Field(default=None, description="What the chunks' page counts.")
    metadata: dict[str, str] = Field(
        default_factory=dict, description="Other metadata, e.g. ocr_pages: the pages read by OCR."
    )
    text: str = Field(description="The document text (or the window asked for) that chunk offsets count in.")
    text_offset: int = Field(default=0, description="Offset of text in the whole document text.")
    char_count: int = Field(description="Length of the whole document text.")
    chunks: list[ChunkSpan]
    citation: Citation = Field(description="Citation of the first chunk returned.")
    quote: QuoteLocation | None = Field(default=None, description="Where the quote asked for is.")


class SqlResult(PublishedModel):
    """Rows from one read-only SQL query, with a citation for the query."""

    columns: list[str]
    rows: list[list[SqlValue]]
    row_count: int = Field(description="Rows returned.")
    truncated: bool = Field(description="True when more rows exist than were returned.")
    citation_id: str = Field(description="'sql:<database>:<hash>'; cite it as [citation_id].")
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
