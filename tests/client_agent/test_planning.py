"""How the offline back-end reads questions: arithmetic, relevance, parts, follow-ups, routing, text units."""

from __future__ import annotations

import pytest

from client_agent.offline.calculation import arithmetic
from client_agent.connection import Catalog, CorpusSummary
from client_agent.offline.planning import (
    about_the_knowledge,
    database_tables,
    resolve_follow_up,
    route,
    split_question,
)
from client_agent.queries import QueryLog
from client_agent.text import content_terms, identifiers, numbers, sentences

HR = CorpusSummary("handbook", "Employee handbook: annual leave, bonus and expense rules. Use it for policies. "
                   "Do not use it for product prices.", 5, 30)
PRODUCTS = CorpusSummary("products", "Product specifications and prices of the X3 and X5 robot vacuums.", 8, 40)
CATALOG = Catalog([], [HR, PRODUCTS], '[{"name": "refunds", "description": "One row per refund."}]')


@pytest.mark.parametrize(("question", "expression", "value"), [
    ("1024 / 32", "1024 / 32", 32), ("What is 2^10 + 3*(4-1)?", "2^10 + 3*(4-1)", 1033),
    ("calculate 7 × 6", "7 × 6", 42), ("what is 1,000 * 3", "1,000 * 3", 3000),
])
def test_arithmetic_is_computed_exactly(question: str, expression: str, value: float) -> None:
    assert arithmetic(question) == (expression, value)


@pytest.mark.parametrize("question", [
    "How many days of leave after 3 years?", "Is 2024-05-01 a holiday?", "what is 10 / 0", "what is 9 ** 9999",
])
def test_questions_with_numbers_are_not_mistaken_for_arithmetic(question: str) -> None:
    assert arithmetic(question) is None


def test_relevance_needs_shared_vocabulary_or_a_code() -> None:
    assert about_the_knowledge("How much annual leave do I get?", CATALOG)
    assert about_the_knowledge("How many refunds were there?", CATALOG)  # the schema counts
    assert about_the_knowledge("What is the X9's battery life?", CATALOG)  # a model name only search can rule out
    assert not about_the_knowledge("What is the capital of France?", CATALOG)


def test_multi_part_questions_split_and_later_parts_get_the_subject() -> None:
    assert split_question("How many days of annual leave do I get, and how far ahead must I request it?") == [
        "How many days of annual leave do I get", "how far ahead must I request it (days annual leave)"]
    assert split_question("What is the leave policy for interns and contractors?") == [
        "What is the leave policy for interns and contractors?"]


@pytest.mark.parametrize("question", [
    "At the 2011 census, what was the population of the city where Kerry Saxby-Junna was born?",  # a lead-in
    "Who was the writer of the song, who died in 2007?",  # a relative clause describes, it does not ask
    "Which musician, Ciaran Gribbin or Brett Scallions, is a member of the band Fuel?",  # an apposition
])
def test_one_question_with_commas_is_not_split(question: str) -> None:
    assert split_question(question) == [question]


def test_an_encyclopedia_corpus_takes_general_knowledge_questions() -> None:
    wiki = CorpusSummary("wiki", "Encyclopedia: Wikipedia paragraphs about people and places.", 10, 10)
    assert about_the_knowledge("What is the capital of France?", Catalog([], [wiki], ""))
    assert not about_the_knowledge("What is the capital of France?", CATALOG)


def test_follow_ups_borrow_the_previous_subject_only_when_they_refer_back() -> None:
    assert resolve_follow_up("How do I fix it?", ["What does error E1042 mean?"]) == "How do I fix it (error E1042)"
    assert resolve_follow_up("What is the bonus for an A rating?", ["What does E1042 mean?"]) == (
        "What is the bonus for an A rating?")


def test_routing_ignores_what_a_description_says_not_to_use_it_for() -> None:
    assert route("What are the prices of the X5 vacuum?", [HR, PRODUCTS]) == "products"
    assert route("How much annual leave do I get?", [HR, PRODUCTS]) == "handbook"
    assert route("Tell me about Wonderlab", [HR, PRODUCTS]) is None


def test_numbers_ignore_digits_inside_codes_and_read_separators() -> None:
    assert numbers("¥1,999/month, 2.8 million, 10%, X3, CHG-2025-0612-03, 8GB") == [1999, 2.8, 10, 8]
    assert identifiers("the X3 and ERR_VPN_AUTH_4012 after CHG-2025-0612-03") == [
        "X3", "ERR_VPN_AUTH_4012", "CHG-2025-0612-03"]


def test_content_terms_stem_english_and_pair_chinese_characters() -> None:
    assert content_terms("Who approves requests?") == content_terms("approval of the request")
    assert "报销" in content_terms("报销需要在费用发生后多少天内提交") and "多少" not in content_terms("多少天")


def test_sentences_join_wrapped_lines_and_read_table_rows_with_their_headers() -> None:
    text = "Request leave at least\n**5 working days** ahead. Late requests need a reason.\n\n" \
           "| Rating | Bonus |\n|---|---|\n| A | 3 months |\n\n```\nlog line 42\n```\n- Item one"
    assert sentences(text) == ["Request leave at least **5 working days** ahead.", "Late requests need a reason.",
                               "Rating: A, Bonus: 3 months.", "Item one"]


def test_query_log_refuses_near_duplicates_per_corpus_but_not_new_searches() -> None:
    log = QueryLog()
    log.record("hybrid_search", {"query": "annual leave days after three years"})
    assert log.repeat_of("keyword_search", {"query": "days of annual leave after three years"})
    assert log.repeat_of("hybrid_search", {"query": "days of annual leave after three years", "corpus": "hr"}) is None
    assert log.repeat_of("hybrid_search", {"query": "who approves annual leave"}) is None
    log.record("sql_query", {"sql": "SELECT 1"})
    assert log.repeat_of("sql_query", {"sql": "SELECT 1"}) and not log.repeat_of("sql_query", {"sql": "SELECT 2"})


def test_record_counting_and_current_prices_are_questions_for_the_database() -> None:
    catalog = Catalog([], [], '[{"name": "refunds"}, {"name": "support_tickets"}, {"name": "products"}]')
    assert database_tables("How many refunds were issued in September 2025?", catalog) == ["refunds"]
    assert database_tables("How many support tickets are open right now?", catalog) == ["support_tickets"]
    assert database_tables("What is the current price of the X3?", catalog) == ["products"]
    assert database_tables("How many days of leave do I get after 3 years?", catalog) == []
    assert database_tables("How many API keys can one account have?", catalog) == []
