"""The text a host model reads about this server: instructions, tool and parameter descriptions.

These words decide whether a model retrieves at all, which tool and corpus it picks and
how it cites, so they say what each tool is for, when to use it and when not to, and
state the limits with their numbers. The corpus list and the SQL schema are filled in
from the opened index and database when the server is built.
"""

from __future__ import annotations

from mcp_server.grounding.quotes import MAX_QUOTE_CHARS, MIN_RATIO
from mcp_server.models import CorpusInfo
from mcp_server.settings import Settings
from mcp_server.surface.tools import HIT_CHARS

_SIZE = (
    "Each hit's text is at most {hit_chars:,} characters and one result at most {max_chars:,} characters "
    "in all; hits beyond that are left out and counted in `omitted`."
)
_RETURNS = (
    "Returns up to top_k hits (default 5, at most {max_top_k}), best first. Each hit is headed by its citation "
    "id [corpus:doc_id#chunk] (cite it), then title, section and source, then the chunk text. "
    + _SIZE
    + " To read around a hit, call get_document with its citation id."
)

SEARCH_DESCRIPTIONS = {
    "hybrid": (
        "Search the document corpora for passages that answer a question. This is the default search: it fuses "
        "semantic and keyword rankings, so it works for natural questions and for specific terms alike.\n\n"
        "Use it first for any question about what the documents say (policies, procedures, guides, FAQs). "
        "Quoted words count as ordinary words here. "
        "Prefer keyword_search when the question hinges on an exact identifier, error code or quoted phrase, and "
        "vector_search when the documents probably use different words than the question. Do not use it for "
        "counts, sums, prices or other facts about individual records (use sql_query), and use no tool at all "
        "for general knowledge or arithmetic. Split a multi-part question into one search per part.\n\n"
        + _RETURNS
        + '\n\nExample: {{"query": "how far ahead must annual leave be requested"}}'
    ),
    "vector": (
        "Search the document corpora by meaning (embedding similarity), ignoring exact wording.\n\n"
        "Use it when the question paraphrases the documents or asks about a concept in other words "
        "('time off for a new baby' for a parental leave policy), or when hybrid_search found nothing useful. "
        "Do not use it for exact identifiers, error codes, names or numbers (use keyword_search), for figures "
        "about records (use sql_query), or for general knowledge (no tool needed).\n\n"
        + _RETURNS
        + '\n\nExample: {{"query": "what happens if I cannot connect to the company network from home"}}'
    ),
    "keyword": (
        "Search the document corpora for exact words (BM25): identifiers, error codes, error messages, product "
        "names, numbers. Put a phrase in double quotes to require it verbatim.\n\n"
        "Use it when the exact string matters ('ERR_VPN_AUTH_4012', '\"migration lock held\"'). Do not use it for "
        "general questions in natural language (use hybrid_search or vector_search): every word counts, so "
        "a long question matches poorly. Not for figures about records (sql_query) or general knowledge (no "
        "tool).\n\n"
        + _RETURNS
        + '\n\nExample: {{"query": "ERR_VPN_AUTH_4012"}}'
    ),
}

CORPORA_LISTING = "the ragmcp://corpora resource"  # where each corpus's unreadable files are listed, with why
SEARCH_TITLES = {"hybrid": "Hybrid search", "vector": "Semantic search", "keyword": "Keyword search"}

QUERY = "What to search for: a question or key terms, 1 to {max_query_chars:,} characters."
TOP_K = "How many hits to return, 1 to {max_top_k} (default 5). Ask for more only when the first hits fall short."
MIN_SCORES = {
    "vector": "Optional floor: leave out hits whose score, the cosine similarity of query and chunk (-1 to 1; "
    "related text is usually above 0.3), is below it. The result counts what it left out.",
    "keyword": "Optional floor: leave out hits whose score, BM25 (0 and up, unbounded: it grows with rare query "
    "words and depends on the corpus, so compare scores within one result), is below it. The result counts what "
    "it left out.",
    "hybrid": "Optional floor: leave out hits whose score is below it. The score is 0.7 x the cosine similarity "
    "plus 0.3 x the BM25 share (BM25 divided by the query's term weight: about 1 for a chunk holding every query "
    "word; Chinese, Japanese and Korean queries weigh keywords 0.7), about 0 to 1. "
    "The result counts what it left out.",
}
MIN_SCORE_RERANKED = (
    "Optional floor: leave out hits whose score is below it. This server reranks hybrid hits with the model "
    "{model}: the score is that model's relevance score for query and chunk (for bge-reranker models served by "
    "vLLM, TEI or Infinity about 0 to 1, higher is more relevant; llama.cpp gives raw scores that can be "
    "negative). Should the rerank server fail, the hits come in fused order with fused scores (0.7 x cosine "
    "similarity + 0.3 x BM25 share, about 0 to 1) and the result's reranked_by is null. "
    "The result counts what it left out."
)


def min_score(mode: str, rerank_model: str) -> str:
    """The ``min_score`` description of ``mode``'s search; hybrid hits carry rerank scores when a
    ``rerank_model`` (not empty) reranks them."""
    return MIN_SCORE_RERANKED.format(model=rerank_model) if mode == "hybrid" and rerank_model else MIN_SCORES[mode]


FILTERS = "Optional conditions on document metadata; every condition given must hold. Omit to search everything."

GET_DOCUMENT = (
    "Read a document, or the chunks around a search hit, with its citation ids.\n\n"
    "Use it after a search when a hit is cut off mid-thought, when you need the surrounding context "
    "(window chunks on each side), or to read a short document whole. Pass the hit's citation id "
    "('handbook:hr/leave-policy#2') to read that chunk and its neighbours. Do not use it to find documents "
    "(search first: ids come from hits) and do not guess ids.\n\n"
    "Returns the text with each chunk's citation id marked where the chunk starts (cite the nearest marker "
    "above a sentence), the document's metadata and its chunk map with character offsets. The text is at "
    "most {max_chars:,} characters, cut after the last whole chunk that fits; `truncated` and "
    "`next_chunk` then say where to read on.\n\n"
    "With `quote`, it locates a passage: to give a citation its exact page and lines, or to check that words "
    "you quote are really in the document. The whole document is searched, through differences of case, "
    "spacing, line-break hyphenation, curly quotes and dashes and small misquotes (a match needs a similarity "
    "of {min_quote_ratio:g}); `quote` in the result gives the citation id of the chunk holding it, the page or "
    "slide, lines and offsets, the document's own wording (`text`), `exact`, and `ratio` (0 to 1). The text "
    "returned is then the chunks around it. A quote that is not there is an error: then search instead. Do not "
    "use quote to find documents (search first) or with a paraphrase.\n\n"
    'Example: {{"doc_id": "handbook:hr/leave-policy#2", "window": 1}} or '
    '{{"doc_id": "handbook:hr/leave-policy", "quote": "New staff get 20 days of annual leave", "window": 0}}'
)
CHECK_ANSWER = (
    "Check a draft answer's citations before you give it: does the text of each cited chunk support its sentence?\n\n"
    "Use it on your draft once it is written, with every factual sentence ending in the citation ids of its "
    "evidence in square brackets, exactly as the tools returned them. Each sentence comes back supported "
    "(with the citation and the matching span of the cited chunk: page, lines, offsets), unsupported (a "
    "number, code or key term of the sentence is missing from the cited text), uncited (a factual claim "
    "with no citation), unknown_id (the id does not exist or is not readable here), or not_factual. Fix or "
    "drop every sentence that fails, then answer. The check is lexical: it cannot see a wrong relation "
    "between words that all occur in the cited text. It does not search; SQL citations count as unknown.\n\n"
    'Example: {{"answer": "New staff get 20 days of annual leave [handbook:hr/leave-policy#2]."}}'
).replace("{{", "{").replace("}}", "}")
ANSWER = "The draft answer: sentences ending in their [citation ids], as the search tools returned them."
QUESTION = "The question the answer is for (optional; echoed in the result)."

DOC_ID = (
    "The document: a doc_id ('hr/leave-policy'), '<corpus>:<doc_id>', or a citation id from a hit "
    "('handbook:hr/leave-policy#2', which also selects that chunk)."
)
DOC_CORPUS = "The document's corpus; needed only when a bare doc_id exists in several corpora."
CHUNK = "Return only this chunk (counted from 0) and `window` chunks on each side; omit for the whole document."
WINDOW = "Chunks to include on each side of `chunk` (default 1; 0 for the chunk alone)."
QUOTE = (
    "Optional: words to locate in the document, copied from it (one sentence or a short passage, at most "
    "{max_quote_chars:,} characters). The result says where they are; an exact quote found several times is "
    "taken in the chunk a citation id names."
)

SQL_QUERY = (
    "Run one read-only SQL query (SQLite dialect) on the {database} database and get rows back with a "
    "citation.\n\n"
    "Use it for facts about specific records and anything numeric or tabular: counts, sums, averages, "
    "latest prices, balances, who works where, lists of customers or invoices. Do not use it for what a "
    "policy or document says (search the corpora), and do not try to change data: only a single SELECT "
    "(or WITH ... SELECT) is accepted.\n\n"
    "Pass values as params with ? placeholders rather than pasting them into the SQL. Returns columns, rows "
    "(at most max_rows, default and ceiling {max_rows}; `truncated` says more rows exist, so page with "
    "LIMIT/OFFSET or aggregate), row_count and a citation id [sql:{database}:<hash>] to cite. Cells over "
    "{cell_chars:,} characters are cut, one result holds at most {max_chars:,} characters of cells, and a query is "
    "stopped after {timeout:g} s.\n\n"
    "Schema, one line per table: name(column TYPE, ...; PK = primary key, -> = foreign key) — what a row "
    "holds [row count]\n{schema}\n\n"
    'Example: {{"sql": "SELECT name, title FROM employees WHERE department_id = ?", "params": [1]}}'
)
SQL = "One SELECT statement (SQLite); no semicolon-separated batches."
PARAMS = "Values for ? placeholders, in order (strings, numbers, booleans or null)."
MAX_ROWS = "Most rows to return, 1 to {max_rows} (default {max_rows})."

_SEARCH_ROUTING = (
    "- hybrid_search is the default for what documents say; keyword_search for exact identifiers, error "
    "strings and quoted phrases; vector_search for paraphrases; get_document to read around a hit.\n"
    "- Pick the corpus whose description fits (see the corpus parameter), or omit it to search all."
)
_SQL_ROUTING = "- sql_query for counts, sums, prices and other facts about records."


def instructions(corpora: list[str], database: str | None) -> str:
    """The server's instructions for a client that may search ``corpora`` and, given a ``database``, query it.

    What the client may not use is not mentioned, so the text never points at a missing tool.
    """
    places = (["corpora"] if corpora else []) + (["database"] if database is not None else [])
    if not places:
        return "This client may read no corpus and no database here; ask the server's operator for a grant."
    sources = [f"Corpora: {', '.join(corpora)}."] if corpora else []
    if database is not None:
        sources.append(f"There is {'also ' if corpora else ''}a SQL database ({database}) with business records.")
    ids = (["[corpus:doc_id#chunk] for text"] if corpora else []) + (
        ["[sql:database:hash] for query results"] if database is not None else []
    )
    lines = [
        "This server answers questions from local knowledge, with citations. " + " ".join(sources),
        "",
        "- Answer general knowledge and arithmetic yourself; use the tools only for facts that live in the "
        f"{' or the '.join(places)}.",
        *([_SEARCH_ROUTING] if corpora else []),
        *([_SQL_ROUTING] if database is not None else []),
        "- Split multi-part questions into one search per part; when hits miss a fact you need, search again "
        "with other words instead of guessing.",
        "- Cite every factual sentence with the id of its evidence in square brackets, exactly as returned: "
        f"{', '.join(ids)}. Cite only ids these tools returned. If the evidence does not contain the answer, say so.",
        *(["- Before answering, call check_answer on your draft and fix or drop every sentence it reports as "
           "not supported."] if corpora else []),
    ]
    return "\n".join(lines)


def research_prompt(question: str, *, searchable: bool, sql: bool) -> str:
    """The research prompt for ``question``, naming only the tools this client has (searches, ``sql_query``)."""
    if searchable:
        tools = "hybrid_search by default, keyword_search for exact codes or names"
        tools += ", sql_query for figures about records" if sql else ""
        gather = f"2. Search for each fact ({tools}); read around promising hits with get_document.\n"
    elif sql:
        gather = "2. Query the database for each fact with sql_query.\n"
    else:
        gather = "2. This client may read no corpus and no database here: say so, and answer only general knowledge.\n"
    return (
        "Research this question using the retrieval tools, then answer it with citations.\n\n"
        f"Question: {question}\n\n"
        "1. Decide what facts the answer needs; if it is general knowledge, answer directly.\n"
        f"{gather}"
        "3. Before answering, check that every fact is covered; look again for what is missing.\n"
        "4. Answer concisely. End every factual sentence with its citation id in square brackets, e.g. "
        f"[{'corpus:doc_id#chunk' if searchable else 'sql:database:hash'}]. Say plainly what the sources do not cover.\n"
        "5. Call check_answer on the draft and fix or drop what it reports as not supported."
    )


def limits(settings: Settings) -> dict[str, int | float | str]:
    """The numbers the descriptions state, from the settings that enforce them, and the rerank model
    that orders hybrid hits ('' when none does)."""
    return {
        "rerank_model": (settings.rerank_model or "") if settings.rerank_url else "",
        "hit_chars": HIT_CHARS,
        "max_quote_chars": MAX_QUOTE_CHARS,
        "min_quote_ratio": MIN_RATIO,
        "max_chars": settings.max_result_chars,
        "max_top_k": settings.max_top_k,
        "max_query_chars": settings.max_query_chars,
        "max_rows": settings.sql_max_rows,
        "timeout": settings.sql_timeout_s,
    }


def unreadable(count: int) -> str:
    """How many of a corpus's files could not be read, as a clause."""
    return "1 file could not be read" if count == 1 else f"{count:,} files could not be read"


def corpus_parameter(corpora: list[CorpusInfo], purpose: str) -> str:
    """The description of a ``corpus`` parameter: ``purpose``, then each corpus and what it is for."""
    lines = [purpose, "Available corpora:"]
    lines += [
        f"- {c.name} ({f'{c.documents} documents' if c.indexed else 'being indexed'}"
        + (f"; {unreadable(c.skipped_count)}, listed in {CORPORA_LISTING}" if c.skipped_count else "")
        + f"): {' '.join(c.description.split())}"
        for c in corpora
    ]
    return "\n".join(lines)
