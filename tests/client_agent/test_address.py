"""What decides that the offline agent's chosen sentence answers a question (``address``), on hand-written
evidence: frame words, words its passage says, quarters written as Q1, numbers glued to a word; and the
meaning cache those comparisons go through."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from client_agent.evidence import Evidence
from client_agent.offline import meaning
from client_agent.offline.extractive import Quote, address
from client_agent.text import numbers


def quote(sentence: str, passage: str = "", title: str = "Handbook") -> Quote:
    """``sentence`` quoted from an evidence item whose text is ``passage`` (the sentence alone by default)."""
    evidence = Evidence("c:doc#0", passage or sentence, "chunk", {"id": "c:doc#0", "title": title, "corpus": "c",
                                                                 "doc_id": "doc"}, "hybrid_search", "q", 1, 1)
    return Quote(sentence, evidence, 1.0)


@pytest.mark.parametrize(("question", "sentence"), [
    ("How fast must the on-call engineer acknowledge a page at night?",
     "On-call engineers acknowledge a page within 5 minutes during the day and within 15 minutes at night."),
    ("For how many days can I be off sick without a doctor's note?",
     "You do not need a doctor's note for up to 3 consecutive days of sick leave."),
    ("What was the Net Promoter Score in the first quarter of 2025?",
     "Measure: Net Promoter Score (NPS), Q1 2025 result: 68, +3 points quarter on quarter."),
    ("How many dimensions do the embedding vectors have?",
     "Embedding model: text-embedding-3-small, producing 1536-dimensional vectors."),
])
def test_a_sentence_saying_the_question_in_its_frame_or_its_shorthand_answers(question: str, sentence: str) -> None:
    assert address(question, quote(sentence)).answers


def test_one_word_its_passage_says_may_be_left_to_the_passage() -> None:
    row = "Rating: S, Meaning: Outstanding, Bonus: 4 months' salary."
    passage = f"The rating comes from the annual performance review.\n\n{row}"
    assert address("What bonus do I get if my performance is rated outstanding?", quote(row, passage)).answers
    assert not address("What bonus do I get if my performance is rated outstanding?", quote(row)).answers


def test_two_words_left_to_the_passage_are_too_many() -> None:
    budget = "The fit-out budget for the Oslo shop is NOK 1.2 million."
    passage = f"The monthly rent is not agreed yet; the landlord answers in May. {budget}"
    found = address("What is the monthly rent of the Oslo shop?", quote(budget, passage))
    assert not found.answers and set(found.around) == {"month", "rent"}


@pytest.mark.parametrize(("question", "sentence"), [
    ("What are the opening hours of the Oslo shop?", "A second shop in Oslo, opening in April 2027."),
    ("What is the daily rate for a kayak?", "Item: Touring skis, Daily rate (NOK): 350, Deposit (NOK): 1500."),
    ("What was the Net Promoter Score in the fourth quarter of 2025?",
     "Measure: Net Promoter Score (NPS), Q1 2025 result: 68, +3 points quarter on quarter."),
])
def test_a_sentence_about_something_else_does_not_answer(question: str, sentence: str) -> None:
    assert not address(question, quote(sentence)).answers


def test_a_number_glued_to_a_word_is_a_number_and_a_code_is_not() -> None:
    assert numbers("a 180-minute runtime and 1536-dimensional vectors") == [180, 1536]
    assert numbers("the X3 and CHG-2025-0612-03") == []


def test_more_texts_than_the_meaning_cache_holds_are_compared_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(meaning, "CACHE_SIZE", 2)
    monkeypatch.setattr(meaning, "_cache", OrderedDict())
    scores = meaning.similarity("cats", ["pets", "dogs", "tax returns", "cats"])
    assert len(scores) == 4 and scores[3] == pytest.approx(1.0, abs=1e-5) and scores[0] > scores[2]
    assert len(meaning._cache) == 2
