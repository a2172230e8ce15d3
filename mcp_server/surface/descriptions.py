"""The text a host model reads about this server: instructions, tool and parameter descriptions.

These words decide whether a model retrieves at all, which tool and corpus it picks and
how it cites, so they say what each tool is for, when to use it and when not to, and
state the limits with their numbers. Hosts put them into the model's context on every turn,
so each is a few lines and each thing is said once: the corpora and what each holds are
listed under hybrid_search's corpus parameter only, and sql_query names the tables and their
columns, leaving types, keys and what a row holds to the SQL schema resource (or
``sqlite_master``). The corpus list and the tables are filled in from the opened index and
database when the server is built.
"""

from __future__ import annotations

from mcp_server.grounding.quotes import MAX_QUOTE_CHARS, MIN_RATIO
from mcp_server.models import CorpusInfo
from mcp_server.retrieval.quote_location import QUOTE_SCOPE_CHARS
from mcp_server.settings import Settings
from mcp_server.surface.answer_check import (
    MAX_ANSWER_CHARS, MAX_CITATIONS, MAX_CITED_IDS, MAX_SENTENCE_IDS, MAX_SENTENCES,
)  # fmt: skip
from mcp_server.surface.tools import HIT_CHARS

_RETURNS = (
    "Returns up to top_k hits, best first, each headed by its citation id [corpus:doc_id#chunk] to cite. A hit's "
    "text is cut at {hit_chars:,} characters; one result is at most {max_chars:,} characters, as text and as "
    "JSON (hits that do not fit are counted in `omitted`). get_document reads around a hit."
)

SEARCH_DESCRIPTIONS = {
    "hybrid": (
        "Search the documents for passages that answer a question: the default search, meaning and keywords fused. "
        "Use it first for what the documents say; keyword_search for an exact code, name or quoted phrase, "
        "vector_search for a paraphrase. Do not use it for figures about records (sql_query), nor at all for general "
        "knowledge or arithmetic. One search per part of a multi-part question.\n\n" + _RETURNS
    ),
    "vector": (
        "Search the documents by meaning, whatever their wording: for a paraphrase or a concept in other words "
        "('time off for a new baby'), or when hybrid_search found nothing useful. Do not use it for exact codes, "
        "names or numbers (keyword_search), figures about records (sql_query) or general knowledge.\n\n" + _RETURNS
    ),
    "keyword": (
        "Search the documents for exact words (BM25): identifiers, error codes and messages, names, numbers; "
        '"double quotes" require a phrase verbatim. Do not use it for questions in natural language (every word '
        "counts: use hybrid_search), figures about records (sql_query) or general knowledge.\n\n" + _RETURNS
    ),
}

CORPORA_LISTING = "the ragmcp://corpora resource"  # where each corpus's unreadable files are listed, with why
SEARCH_TITLES = {"hybrid": "Hybrid search", "vector": "Semantic search", "keyword": "Keyword search"}

QUERY = "A question or key terms."
TOP_K = "Hits to return (default 5); ask for more only when the first fall short."
SEARCH_CORPUS = "Search only this corpus; omit to search all."
OTHER_CORPUS = "Search only this corpus (hybrid_search's corpus parameter says what each holds); omit to search all."
MIN_SCORES = {
    "vector": "Leave out hits below this cosine similarity (-1 to 1; related text is usually above 0.3).",
    "keyword": "Leave out hits below this BM25 score (0 and up; it depends on query and corpus, so compare scores "
    "within one result).",
    "hybrid": "Leave out hits below this score: 0.7 x cosine similarity + 0.3 x BM25 share (about 1 when a chunk "
    "holds every query word; Chinese, Japanese and Korean queries 0.3 and 0.7), about 0 to 1.",
}
MIN_SCORE_RERANKED = (
    "Leave out hits below this score: this server reranks hybrid hits with the model {model}, and the score is "
    "its relevance score (about 0 to 1 from vLLM, TEI or Infinity; raw, maybe negative, from llama.cpp). When the "
    "rerank server fails, hits keep the fused order and scores (about 0 to 1) and reranked_by is null."
)


def min_score(mode: str, rerank_model: str) -> str:
    """The ``min_score`` description of ``mode``'s search; hybrid hits carry rerank scores when a
    ``rerank_model`` (not empty) reranks them."""
    return MIN_SCORE_RERANKED.format(model=rerank_model) if mode == "hybrid" and rerank_model else MIN_SCORES[mode]


FILTERS = "Omit to search everything."  # what filters are is said by SearchFilters, the parameter's schema

GET_DOCUMENT = (
    "Read a document, or the chunks around a search hit, with each chunk's citation id marked where it starts "
    "(cite the nearest marker above a sentence). Use it when a hit is cut off or needs its context, or to read a "
    "short document whole: pass the hit's citation id for that chunk and `window` chunks on each side. Do not use "
    "it to find documents (search first) or with guessed ids. The document's `text` is at most {max_chars:,} "
    "characters, cut after the last whole chunk that fits (`truncated` and `next_chunk` say where to read on).\n\n"
    "With `quote`, words copied from the document, it finds where they are: to give a citation its page and lines, "
    "or to check a quotation. The document is searched whole up to {quote_scope_chars:,} characters, else "
    "around the chunk a citation id names (or from its start), through differences of case, spacing, hyphenation, "
    "quote marks and dashes and small misquotes (similarity at least {min_quote_ratio:g}). The result's `quote` "
    "gives the chunk to cite, page, lines, offsets and the document's own words; the text is the chunks around it. "
    "A quote not found is an error: search instead. Not for paraphrases."
)
CHECK_ANSWER = (
    "Check a draft answer's citations before giving it: does each cited chunk support its sentence? Pass the draft "
    "with every factual sentence ending in its [citation ids], as the tools returned them. Each sentence comes back "
    "supported (with where: page, lines, offsets), unsupported (a number, code or key term is missing from the "
    "cited text), uncited, unknown_id (no such id here) or not_factual; fix or drop what fails. The check is "
    "lexical (it cannot see a wrong relation between words that all occur) and does not search; SQL citations "
    "count as unknown.\n\n"
    f"One call checks at most {MAX_ANSWER_CHARS:,} characters, {MAX_SENTENCES} sentences, {MAX_CITED_IDS} ids "
    f"({MAX_SENTENCE_IDS} per sentence, {MAX_CITATIONS} citations): check a longer answer in parts."
)
ANSWER = "The draft: sentences ending in their [citation ids], as the tools returned them."
QUESTION = "The question answered (optional; echoed in the result)."

DOC_ID = "A hit's citation id ('handbook:hr/leave-policy#2': that chunk), '<corpus>:<doc_id>' or a doc_id."
DOC_CORPUS = "Needed only when a bare doc_id is in several corpora."
CHUNK = "Only this chunk (from 0) and `window` chunks on each side; omit for the whole document."
WINDOW = "Chunks on each side of `chunk` (0: the chunk alone)."
QUOTE = (
    "Words to find, copied from the document (a sentence or short passage, at most {max_quote_chars:,} "
    "characters); found more than once, the one in the chunk a citation id names is taken."
)

SQL_QUERY = (
    "Run one read-only SQL query (SQLite) on the {database} database; rows come back with a citation id "
    "[sql:{database}:<hash>] to cite. Use it for facts about records: counts, sums, averages, prices, balances, who "
    "works where, lists. Not for what documents say (search them); only one SELECT (or WITH ... SELECT) runs. At "
    "most max_rows rows (`truncated`: more exist, so aggregate or page with LIMIT/OFFSET), cells cut at "
    "{cell_chars:,} characters, {max_chars:,} characters of cells in all, stopped after {timeout:g} s.\n\n"
    "Tables:\n{tables}\n"
    "Column types, keys and what a row holds: the {schema_uri} resource, or SELECT sql FROM sqlite_master WHERE "
    "name = '<table>'."
)
SQL = "One SELECT statement (SQLite); values as ? placeholders."
PARAMS = "Values for the ? placeholders, in order."
MAX_ROWS = "Most rows to return (default {max_rows})."

_SEARCH_ROUTING = (
    "- hybrid_search is the default for what documents say; keyword_search for exact identifiers, error "
    "strings and quoted phrases; vector_search for paraphrases; get_document to read around a hit.\n"
    "- Pick the corpus whose description fits (see hybrid_search's corpus parameter), or omit it to search all."
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
        "rerank_model": (settings.rerank.model or "") if settings.rerank.url else "",
        "hit_chars": HIT_CHARS,
        "max_quote_chars": MAX_QUOTE_CHARS,
        "quote_scope_chars": QUOTE_SCOPE_CHARS,
        "min_quote_ratio": MIN_RATIO,
        "max_chars": settings.calls.max_result_chars,
        "max_top_k": settings.calls.max_top_k,
        "max_query_chars": settings.calls.max_query_chars,
        "max_rows": settings.sql.max_rows,
        "timeout": settings.sql.timeout_s,
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
