"""What decides that the offline agent's chosen sentence answers a question (``address``), on hand-written
evidence: frame words, words its passage says, quarters written as Q1, numbers glued to a word; and the
meaning cache those comparisons go through."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from client_agent.evidence import Evidence, Ledger
from client_agent.offline import meaning
from client_agent.offline.extractive import Quote, address, answering_quote, linked
from client_agent.text import content_terms, numbers


def quote(sentence: str, passage: str = "", title: str = "Handbook", chunk: int = 0, doc: str = "doc") -> Quote:
    """``sentence`` quoted from chunk ``chunk`` of a document whose text there is ``passage`` (the sentence alone
    by default); chunks of one document start 1,000 characters apart."""
    cid = f"c:{doc}#{chunk}"
    evidence = Evidence(cid, passage or sentence, "chunk", {"id": cid, "title": title, "corpus": "c", "doc_id": doc,
                                                            "char_start": 1000 * chunk}, "hybrid_search", "q", 1, 1)
    return Quote(sentence, evidence, 1.0)


def ledger_of(*quotes: Quote) -> Ledger:
    ledger = Ledger(10_000)
    ledger.add(q.evidence for q in quotes)
    return ledger


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


BONUS_INTRO = "Wonderlab pays a year-end bonus that depends on your performance rating for the year."
BONUS_ROW = "Rating: S, Meaning: Outstanding, Bonus: 4 months' salary."


def test_a_word_an_earlier_passage_of_the_document_says_may_be_left_to_it_but_not_one_a_later_passage_says() -> None:
    question = "What bonus do I get if my performance is rated outstanding?"
    intro, row = quote(BONUS_INTRO, chunk=0), quote(BONUS_ROW, chunk=1)
    ledger = ledger_of(intro, row)
    found = address(question, row, ledger=ledger)
    assert found.answers and found.earlier == ["perform"]
    assert not address(question, row).answers  # without the page's opening, "performance" is not said
    assert not address(question, intro, ledger=ledger).answers  # the opening does not lean on the table below it
    assert (found_quote := answering_quote(question, ledger)) is not None and found_quote.sentence == row.sentence


@pytest.mark.parametrize(("question", "sentence"), [
    ("How many agents can work on the Professional plan of Service Cloud?",
     "Plan: Professional, Price: ¥4,999/month, Seats included: 20 agent seats."),
    ("Who decides my performance rating, and in which month?",
     "Ratings are confirmed each December by your line manager together with HR, after the annual performance review."),
    ("In which month's pay does the year-end bonus show up?", "The year-end bonus is paid with February's salary."),
])
def test_the_predicate_verb_and_the_kind_of_time_asked_for_need_not_be_said(question: str, sentence: str) -> None:
    assert address(question, quote(sentence, title="Service Cloud pricing")).answers


@pytest.mark.parametrize(("question", "sentence"), [
    ("In which month is the year-end bonus paid?", BONUS_INTRO),  # "for the year" names no month
    ("When is the year-end bonus paid?", BONUS_INTRO),  # nor a time
    ("What year did Wonderlab open its Singapore office?", "Wonderlab opened its Singapore office in May."),
    ("How long can I try Service Cloud for free?", "Service Cloud ships to all SaaS workspaces every two weeks."),
])
def test_a_sentence_without_the_time_asked_for_or_saying_only_the_names_does_not_answer(question: str,
                                                                                         sentence: str) -> None:
    assert not address(question, quote(sentence)).answers


def test_the_predicate_verb_is_what_is_asked_when_little_else_is() -> None:
    assert not address("What can I expense?", quote("Taxis can be booked through the travel desk.")).answers


def test_irregular_past_forms_meet_their_verb() -> None:
    assert content_terms("paid sold bought") == content_terms("pay sell buy")
    assert content_terms("founded") != content_terms("find")


def test_a_definition_in_the_evidence_lets_a_thing_described_be_answered_under_its_name() -> None:
    definition = quote("WonderBot Pro is Wonderlab's platform for building AI assistants and chatbots.", doc="overview")
    row = quote("Resource: Memory, Minimum: at least 8 GB RAM.", title="WonderBot Pro self-hosting guide",
                doc="guide")
    question = "How much memory does a server need to run the chatbot platform?"
    assert not address(question, row).answers
    assert (answer := answering_quote(question, ledger_of(definition, row))) is not None and answer.sentence == row.sentence


def test_a_chain_sentence_sharing_one_word_with_the_question_is_not_part_of_its_answer() -> None:
    question = "How long can I try Service Cloud for free?"
    names = quote("Service Cloud offers two public APIs.", title="Service Cloud overview", doc="sc")
    chance = quote("Alert: DiskSpaceLow, Fires when: less than 10% free space on the data volume.",
                   title="Monitoring and alerts", doc="alerts")
    assert address(question, names, chance).answers  # together they say every word...
    assert linked(question, [names, chance]) == [names]  # ...but "free" is the disk's, by chance
    assert not address(question, *linked(question, [names, chance])).answers
