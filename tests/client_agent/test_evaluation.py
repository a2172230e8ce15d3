"""``rag-agent eval``'s answer-sentence scores: labelled sentences found, padding and whole tables not on point."""

from __future__ import annotations

from pathlib import Path

from client_agent.evaluation import EvalQuestion, Outcome, answer_sentences, summarise
from client_agent.loop import RunResult, RunState
from client_agent.trace import Totals

TABLE = ("Item: City bike, Daily rate (NOK): 250. Item: E-bike, Daily rate (NOK): 650. "
         "Item: Snowboard, Daily rate (NOK): 450.")
RULES = "A late return costs NOK 100 per started hour. The shop is closed on Sundays."
QUESTION = EvalQuestion(question="What is the daily rate for an e-bike?", answer_sentences=[["E-bike", "650"]],
                        answer_excludes=["City bike", "Snowboard"])


def result(answer: str, state: RunState = "answered") -> RunResult:
    return RunResult(question="q", answer=answer, state=state, citations=[], verification={}, totals=Totals(),
                     trace=Path("unused.jsonl"), cited_texts={"shop:prices#0": TABLE, "shop:rules#0": RULES})


def test_the_row_alone_is_found_and_on_point() -> None:
    scored = answer_sentences(QUESTION, result("Item: E-bike, Daily rate (NOK): 650. [shop:prices#0]"))
    assert scored.to_dict() == {"labelled": 1, "found": 1, "quoted": 1, "on_point": 1}


def test_a_padding_sentence_lowers_precision_not_recall() -> None:
    scored = answer_sentences(QUESTION, result(
        "Item: E-bike, Daily rate (NOK): 650. [shop:prices#0]\nThe shop is closed on Sundays. [shop:rules#0]"))
    assert (scored.found, scored.quoted, scored.on_point) == (1, 2, 1)


def test_the_whole_table_for_one_row_is_neither_found_nor_on_point() -> None:
    scored = answer_sentences(QUESTION, result(
        "Item: City bike, Daily rate (NOK): 250, Item: E-bike, Daily rate (NOK): 650, Item: Snowboard, "
        "Daily rate (NOK): 450. [shop:prices#0]"))
    assert (scored.found, scored.quoted, scored.on_point) == (0, 1, 0)


def test_an_insufficient_run_quotes_nothing_and_an_answered_unanswerable_is_a_wrong_answer() -> None:
    assert answer_sentences(QUESTION, result("Item: E-bike [shop:prices#0]", "insufficient")).quoted == 0
    unanswerable = EvalQuestion(question="What is the monthly rent?", expected_state="insufficient")
    outcomes = [Outcome(unanswerable, result("A late return costs NOK 100 per started hour. [shop:rules#0]", state),
                        None, None, None, None, None) for state in ("answered", "insufficient")]
    assert summarise(outcomes)["quality"]["wrong_answer_rate"] == 0.5


def test_a_matching_answer_stated_as_not_found_is_not_answered_and_matched() -> None:
    rate = EvalQuestion(question="What is the daily rate for an e-bike?", expected_answer="650")
    quoted = "I could not find this in the sources. The closest passages say:\nItem: E-bike, 650. [shop:prices#0]"
    outcomes = [Outcome(rate, result(quoted, state), True, None, None, None, None)
                for state in ("answered", "insufficient")]
    quality = summarise(outcomes)["quality"]
    assert quality["answer_match"] == 1.0 and quality["answered_and_matched"] == 0.5
