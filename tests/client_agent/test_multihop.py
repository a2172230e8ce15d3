"""Multi-hop planning: names in text, compared names, anchors, bridge searches, the chain, and the evidence kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from client_agent.evidence import Evidence, Ledger
from client_agent.loop import RunResult
from client_agent.offline.multihop import (
    Document,
    HopPlan,
    anchors,
    best_chain,
    bridge_entities,
    bridge_queries,
    compared_entities,
    comparison_queries,
    documents,
    named_phrases,
)
from client_agent.trace import Totals

KISS_QUESTION = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
KISS = Document("wiki:kiss", "Kiss and Tell (1945 film)", (
    "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as Corliss Archer. "
    "In the film, two teenage girls cause their respective parents much concern when they start to become "
    "interested in boys. The parents' bickering about which girl is the worse influence causes more problems "
    "than it solves. It was directed by Richard Wallace."), 1)
TEMPLE = Document("wiki:temple", "Shirley Temple", (
    "Shirley Temple Black was an American actress, singer, dancer, businesswoman, and diplomat. As an adult, she "
    "was named United States ambassador to Ghana and to Czechoslovakia and also served as Chief of Protocol of "
    "the United States."), 4)
RADIO = Document("wiki:radio", "Meet Corliss Archer", (
    "Meet Corliss Archer, a program from radio's Golden Age, ran from January 7, 1943 to September 30, 1956."), 2)
TREASURER = Document("wiki:treasurer", "Lord High Treasurer", (
    "The post of Lord High Treasurer was an English government position held by a woman only once."), 3)


def test_named_phrases_are_titles_and_capitalised_runs_without_modifiers_dates_or_leading_numbers() -> None:
    text = ('The film "Kiss and Tell" starred Shirley Temple, an American actress, in the University of Kansas '
            "on 7 January 1943; J. B. Handelsman drew it in 1945. Guests included 17-year-old Sally Field.")
    assert named_phrases(text) == [
        "Kiss and Tell", "Shirley Temple", "University of Kansas", "J. B. Handelsman", "Guests", "Sally Field"]


@pytest.mark.parametrize(("question", "names"), [
    ("Who is older, Annie Morton or Terry Richardson?", ["Annie Morton", "Terry Richardson"]),
    ("Which plant is larger, the Pterocarya or the Cotula?", ["Pterocarya", "Cotula"]),
    ("Are Nantong and Jingdezhen situated in the same province?", ["Nantong", "Jingdezhen"]),
    ("Which robot vacuum suits a home with cats, the X3 or the X5?", ["X3", "X5"]),
    (KISS_QUESTION, []),  # "Kiss and Tell" joins two words of one title; nothing is compared
    ("How many days of annual leave do I get, and how far ahead must I request it?", []),
    ("Is tea or coffee older?", []),  # not names
])
def test_compared_entities_are_two_names_joined_by_or_or_by_and_with_a_comparing_word(
        question: str, names: list[str]) -> None:
    assert compared_entities(question) == names


def test_each_compared_name_is_searched_with_the_question_terms_outside_the_names() -> None:
    assert comparison_queries("Who is older, Annie Morton or Terry Richardson?", ["Annie Morton", "Terry Richardson"]) == [
        "Annie Morton older", "Terry Richardson older"]


def test_a_comparison_search_that_would_repeat_the_question_searches_the_name_alone() -> None:
    question = "Which magazine was started first, Arthur's Magazine or First for Women Magazine?"
    queries = comparison_queries(question, ["Arthur's Magazine", "First for Women Magazine"])
    assert queries[0] == "Arthur's Magazine started"
    assert queries[1] == "First for Women Magazine"  # with "started" it nearly repeats the question


def test_anchors_are_top_documents_titled_by_a_question_name_else_the_first_if_it_mentions_one() -> None:
    archer = Document("wiki:ca", "Corliss Archer (character)", "Corliss Archer is a fictional teenager.", 3)
    assert anchors(KISS_QUESTION, [RADIO, KISS, archer]) == [KISS, archer]  # titles named in the question
    assert anchors(KISS_QUESTION, [TREASURER, TEMPLE, KISS, RADIO]) == [KISS]  # third place still counts
    assert anchors(KISS_QUESTION, [TEMPLE, TREASURER, Document("wiki:x", "X", "y", 3), RADIO]) == []
    mentions = Document("wiki:m", "Comedy films of 1945", "Kiss and Tell was a hit for Columbia Pictures.", 1)
    assert anchors(KISS_QUESTION, [mentions, TREASURER]) == [mentions]


def test_bridge_entities_skip_the_subject_and_the_question_names_and_put_relevant_sentences_first() -> None:
    names = bridge_entities(KISS, KISS_QUESTION)
    assert names[0] == "Shirley Temple"  # from the sentence that shares "film", "Corliss", "Archer"
    assert "Richard Wallace" in names and "Corliss Archer" not in names and "Kiss and Tell" not in names
    opening = Document("wiki:sw", "Sally Wood", "Sally Anne Wood (born 1950) is a painter. She studied under Ann Hart.", 1)
    assert bridge_entities(opening, "Who taught Sally Wood?") == ["Ann Hart"]  # the opening longer name is the subject


def test_bridge_queries_carry_the_question_words_the_anchor_does_not_cover() -> None:
    queries = bridge_queries(KISS_QUESTION, [KISS], limit=2)
    assert queries[0] == "Shirley Temple government position held woman portrayed"
    assert len(queries) == 2
    covering = Document("wiki:c", "Kiss and Tell", KISS.text + " Temple held a government position as a woman who "
                        "portrayed many.", 1)
    assert bridge_queries(KISS_QUESTION, [covering]) == []  # nothing left to find


def test_the_chain_prefers_linked_documents_that_cover_the_question_together() -> None:
    chain = best_chain(KISS_QUESTION, [KISS, RADIO, TREASURER, TEMPLE])
    assert {d.key for d in chain} == {"wiki:kiss", "wiki:temple"}  # linked by "Shirley Temple", despite rank 4


def test_a_comparison_chain_takes_the_best_titled_document_for_each_name() -> None:
    morton = Document("wiki:am", "Annie Morton", "Annie Morton (born October 8, 1970) is a model.", 3)
    richardson = Document("wiki:tr", "Terry Richardson", "Terrence Richardson (born 1965) is a photographer.", 2)
    other = Document("wiki:mr", "Morton Richardson Ltd", "A firm.", 1)
    names = ["Annie Morton", "Terry Richardson"]
    assert best_chain("Who is older, Annie Morton or Terry Richardson?", [other, richardson, morton], names) == [
        morton, richardson]


def evidence(doc: str, chunk: int, rank: int, step: int = 1, text: str = "text", title: str = "") -> Evidence:
    citation = {"id": f"wiki:{doc}#{chunk}", "corpus": "wiki", "doc_id": doc, "title": title or doc}
    return Evidence(f"wiki:{doc}#{chunk}", text, "chunk", citation, "hybrid_search", "q", rank, step)


def test_ledger_sources_put_cited_documents_first_then_fuse_the_result_lists() -> None:
    ledger = Ledger()
    ledger.add([evidence("a", 0, 1), evidence("b", 0, 2), evidence("b", 1, 3), evidence("c", 0, 4)])
    ledger.add([evidence("c", 0, 1, step=2), evidence("d", 0, 2, step=2)])
    assert ledger.best_ranks() == {"wiki:a": 1, "wiki:b": 2, "wiki:c": 1, "wiki:d": 2}
    # c: 1/63 + 1/61 beats a: 1/61; the two chunks of b count once, at b's first place
    assert ledger.sources() == ["wiki:c", "wiki:a", "wiki:b", "wiki:d"]
    assert ledger.sources(["wiki:d#0", "wiki:b#1", "wiki:unknown#0"]) == ["wiki:d", "wiki:b", "wiki:c", "wiki:a"]


def test_documents_join_chunks_and_carry_their_best_rank() -> None:
    ledger = Ledger()
    ledger.add([evidence("a", 0, 1, text="first", title="A"), evidence("a", 1, 2, text="second", title="A")])
    ledger.add([evidence("b", 0, 1, step=2), evidence("a", 0, 2, step=2)])
    assert [(d.key, d.title, d.text, d.rank) for d in documents(ledger)] == [
        ("wiki:a", "A", "first\nsecond", 1), ("wiki:b", "b", "text", 1)]


def test_a_hop_plan_bridges_once_and_never_after_comparing() -> None:
    ledger = Ledger()
    ledger.add([evidence("kiss", 0, 1, text=KISS.text, title=KISS.title)])
    plan = HopPlan.for_question(KISS_QUESTION)
    assert plan.first_queries() == [] and not plan.active
    assert plan.next_queries(ledger)[0].startswith("Shirley Temple") and plan.active
    assert plan.next_queries(ledger) == []
    comparing = HopPlan.for_question("Who is older, Annie Morton or Terry Richardson?")
    assert len(comparing.first_queries()) == 2 and comparing.active
    assert comparing.next_queries(ledger) == []


def test_run_evidence_is_the_first_sources_up_to_the_budget(tmp_path: Path) -> None:
    result = RunResult("q", "a", "answered", [], {}, Totals(), tmp_path / "t.jsonl", sources=["x:1", "x:2", "x:3"])
    assert result.evidence(2) == ["x:1", "x:2"] and result.evidence(10) == ["x:1", "x:2", "x:3"]
    with pytest.raises(ValueError, match="at least 1"):
        result.evidence(0)
