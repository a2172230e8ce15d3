"""The retrieval core on the acme fixture corpus: ranking, citations, filters, documents, bad input."""

from __future__ import annotations

from datetime import date

import pytest

from mcp_server.errors import InvalidQueryError, NotFoundError
from mcp_server.models import SearchFilters
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings

MODES = ("vector", "keyword", "hybrid")


def top_ids(retriever: Retriever, query: str, mode: str = "hybrid", k: int = 3, **kwargs: object) -> list[str]:
    return [h.citation.id for h in retriever.searcher.search(query, mode=mode, top_k=k, **kwargs)]  # type: ignore[arg-type]


def test_paraphrased_question_finds_its_section(acme: Retriever) -> None:
    assert top_ids(acme, "how far ahead should I book a train")[0] == "acme:policies/travel#0"
    assert top_ids(acme, "what does a meal allowance cover on a business trip", "vector")[0] == "acme:policies/travel#2"


def test_keyword_search_finds_exact_error_code(acme: Retriever) -> None:
    hits = acme.searcher.search("ACME-E7731", mode="keyword", top_k=5)
    assert hits[0].citation.doc_id == "engineering/deploy-errors"
    has_code = ["E7731" in h.text for h in hits]
    assert has_code[0] and has_code == sorted(has_code, reverse=True)  # every chunk with the code ranks first


def test_keyword_search_finds_literal_log_line_fragment(acme: Retriever) -> None:
    hits = acme.searcher.search('"migration lock held by job 88412"', mode="keyword")
    assert [h.citation.doc_id for h in hits] == ["engineering/deploy-errors"]


def test_quoted_phrase_requires_word_order(acme: Retriever) -> None:
    assert acme.searcher.search('"held lock migration"', mode="keyword") == []


def test_hybrid_search_reads_quoted_words_as_ordinary_words(acme: Retriever) -> None:
    # A quoted title in a question must not filter the keyword candidates down to that phrase.
    _, keyword = acme.searcher.fusion_candidates('"held lock migration"', 10)
    assert keyword and keyword[0][0].startswith("acme:engineering/deploy-errors#")


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_chinese_query_finds_chinese_document(acme: Retriever, mode: str) -> None:
    hits = acme.searcher.search("年假需要提前几天申请", mode=mode, top_k=2)  # type: ignore[arg-type]
    assert {h.citation.doc_id for h in hits} == {"zh/年假制度"}
    assert hits[0].citation.id in {"acme:zh/年假制度#0", "acme:zh/年假制度#1"}


@pytest.mark.parametrize("mode", MODES)
def test_every_hit_carries_a_complete_citation_that_slices_its_text(acme: Retriever, mode: str) -> None:
    hits = acme.searcher.search("travel hotel deploy battery office", mode=mode, top_k=20)  # type: ignore[arg-type]
    assert hits, "expected hits"
    for rank, hit in enumerate(hits, start=1):
        c = hit.citation
        assert hit.rank == rank and hit.retriever == mode
        assert c.id == f"{c.corpus}:{c.doc_id}#{c.chunk}"
        document = acme.documents.get_document(c.doc_id, corpus=c.corpus)
        assert document.text[c.char_start : c.char_end] == hit.text
        assert c.title == document.title and c.source == document.source


def test_citation_records_carry_front_matter_metadata(acme: Retriever) -> None:
    hit = acme.searcher.search("hotel rooms capped per night", mode="hybrid", top_k=1)[0]
    assert hit.citation.id == "acme:policies/travel#1"
    assert hit.citation.section == "Travel Policy > Hotels"
    assert hit.citation.updated == date(2024, 1, 15)
    assert hit.citation.url == "https://wiki.acme.example/policies/travel"
    assert hit.citation.source == "policies/travel.md"


def test_scores_are_ordered(acme: Retriever) -> None:
    for mode in MODES:
        scores = [h.score for h in acme.searcher.search("warranty repairs", mode=mode, top_k=8)]  # type: ignore[arg-type]
        assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    ("filters", "expected_docs"),
    [
        (SearchFilters(category="policy"), {"policies/travel", "policies/remote-work", "zh/年假制度"}),
        (SearchFilters(tags=["travel"]), {"policies/travel"}),
        (SearchFilters(tags=["travel", "remote"]), set()),
        (SearchFilters(date_from=date(2024, 1, 1)), {"policies/travel", "products/widget-faq", "zh/年假制度"}),
        (SearchFilters(date_to=date(2022, 12, 31)), {"policies/remote-work"}),
        (SearchFilters(source_prefix="engineering/"), {"engineering/deploy-errors"}),
        (SearchFilters(category="policy", date_from=date(2023, 1, 1), date_to=date(2024, 2, 1)), {"policies/travel"}),
    ],
)
@pytest.mark.parametrize("mode", MODES)
def test_metadata_filters_restrict_every_retriever(
    acme: Retriever, filters: SearchFilters, expected_docs: set[str], mode: str
) -> None:
    hits = acme.searcher.search("policy travel remote deploy error widget 年假", mode=mode, top_k=50, filters=filters)  # type: ignore[arg-type]
    assert {h.citation.doc_id for h in hits} == expected_docs


def test_corpus_argument_restricts_and_unknown_corpus_names_the_available_ones(acme: Retriever) -> None:
    assert {h.citation.corpus for h in acme.searcher.search("travel", corpus="acme")} == {"acme"}
    with pytest.raises(NotFoundError, match="unknown corpus 'hr'; available: acme"):
        acme.searcher.search("travel", corpus="hr")


@pytest.mark.parametrize(
    ("query", "top_k", "message"),
    [
        ("", 5, "the query is empty"),
        ("   ", 5, "the query is empty"),
        ("x" * 100_000, 5, "the limit is 2000"),
        ("travel", 0, "top_k must be between 1 and 50"),
        ("travel", 10_000, "top_k must be between 1 and 50"),
    ],
)
def test_bad_search_input_is_refused_with_a_useful_message(acme: Retriever, query: str, top_k: int, message: str) -> None:
    for mode in MODES:
        with pytest.raises(InvalidQueryError, match=message):
            acme.searcher.search(query, mode=mode, top_k=top_k)  # type: ignore[arg-type]


def test_stop_word_only_query_is_refused_by_keyword_but_served_by_hybrid(acme: Retriever) -> None:
    with pytest.raises(InvalidQueryError, match="use vector or hybrid search"):
        acme.searcher.search("is it the", mode="keyword")
    assert acme.searcher.search("is it the", mode="hybrid")


def test_get_document_returns_text_metadata_and_chunk_map(acme: Retriever) -> None:
    document = acme.documents.get_document("policies/travel")
    assert document.corpus == "acme" and document.title == "Travel Policy"
    assert document.category == "policy" and document.tags == ["travel", "expenses"]
    assert document.char_count == len(document.text) and document.text_offset == 0
    assert [s.citation_id for s in document.chunks] == [f"acme:policies/travel#{i}" for i in range(4)]
    for span in document.chunks:
        hit_text = document.text[span.char_start : span.char_end]
        assert hit_text.strip() == hit_text and hit_text
    assert acme.documents.get_document("acme:policies/travel").text == document.text


def test_get_document_by_citation_id_returns_a_window(acme: Retriever) -> None:
    full = acme.documents.get_document("acme:policies/travel")
    window = acme.documents.get_document("acme:policies/travel#2", window=1)
    assert [s.chunk for s in window.chunks] == [1, 2, 3]
    assert window.citation.id == "acme:policies/travel#1"
    assert window.text == full.text[window.text_offset : window.text_offset + len(window.text)]
    assert window.text.startswith(full.text[full.chunks[1].char_start : full.chunks[1].char_end])
    only = acme.documents.get_document("acme:policies/travel#0")
    assert only.text == full.text[full.chunks[0].char_start : full.chunks[0].char_end]


@pytest.mark.parametrize(
    ("ref", "error", "message"),
    [
        ("policies/nope", NotFoundError, "Similar ids: acme:policies/remote-work, acme:policies/travel"),
        ("../../etc/passwd", NotFoundError, "no document '../../etc/passwd'"),
        ("/etc/passwd", NotFoundError, "no document"),
        ("acme:policies/travel#99", NotFoundError, "has no chunk #99; it has chunks 0 to 3"),
        ("", InvalidQueryError, "the document id is empty"),
    ],
)
def test_get_document_refuses_unknown_ids(acme: Retriever, ref: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        acme.documents.get_document(ref)


@pytest.mark.parametrize("fusion", ["convex", "rrf"])
def test_hybrid_search_works_with_either_fusion(acme_index: Settings, fusion: str) -> None:
    retriever = Retriever.open(acme_index.updated(**{"hybrid_fusion": fusion}))
    try:
        assert top_ids(retriever, "how far ahead should I book a train")[0] == "acme:policies/travel#0"
        assert top_ids(retriever, "ACME-E7731")[0].startswith("acme:engineering/deploy-errors#")
        assert top_ids(retriever, "年假需要提前几天申请", k=1)[0].startswith("acme:zh/年假制度#")
    finally:
        retriever.close()


def test_convex_hybrid_scores_are_the_weighted_sum_of_cosine_and_normalised_bm25(acme_index: Settings) -> None:
    retriever = Retriever.open(acme_index.updated(**{"convex_keyword_weight": 1.0}))
    try:
        query = "hotel rooms capped per night"
        hybrid = [(h.citation.id, h.score) for h in retriever.searcher.search(query, mode="hybrid", top_k=3)]
        keyword = retriever.searcher.search(query, mode="keyword", top_k=3)
        assert [i for i, _ in hybrid] == [h.citation.id for h in keyword]  # weight 1: keyword order
        assert 0 < hybrid[0][1] <= 2.2 and hybrid[0][1] < keyword[0].score  # BM25 divided by the query's IDF mass
    finally:
        retriever.close()
