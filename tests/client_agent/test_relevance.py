"""What decides that the offline agent's chosen sentence answers a question (the relevance model of
:mod:`client_agent.offline.relevance`), on hand-written evidence: paraphrases of one question get one verdict,
sentences about something else are not answers; and the meaning cache the Chinese scores go through."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from client_agent.evidence import Evidence, Ledger
from client_agent.offline import meaning
from client_agent.offline.extractive import answering_quote
from client_agent.text import content_terms, numbers


def item(text: str, title: str = "Handbook", chunk: int = 0, doc: str = "doc") -> Evidence:
    """Chunk ``chunk`` of a document whose text there is ``text``; chunks of one document start 1,000 characters apart."""
    cid = f"c:{doc}#{chunk}"
    return Evidence(cid, text, "chunk", {"id": cid, "title": title, "corpus": "c", "doc_id": doc,
                                         "char_start": 1000 * chunk}, "hybrid_search", "q", 1, 1)


def ledger_of(*items: Evidence) -> Ledger:
    ledger = Ledger(10_000)
    ledger.add(items)
    return ledger


SHOP = ledger_of(
    item("Returned bikes are inspected by the workshop. Refunds for returned bikes are paid within 14 days of the "
         "return. Store credit is issued the same day.", title="Returns policy", doc="returns"),
    item("Measure: Revenue, Q1 2026 result: NOK 1.2 million, Q2 2026 result: NOK 1.5 million.",
         title="Quarterly figures", doc="figures"),
    item("Maria Lopez takes over from Anna Berg as head of the workshop in May. The workshop opens at 8:00 on "
         "weekdays.", title="Staff news", doc="news"),
    item("Winter tyres are fitted from November. A tyre change costs NOK 400 per bike.", title="Service prices",
         doc="service"),
)

PARAPHRASES: list[tuple[str | None, list[str]]] = [
    ("Refunds for returned bikes are paid within 14 days of the return.", [
        "How fast are refunds for returned bikes paid?",
        "How rapidly are refunds for returned bikes paid?",
        "How promptly do I get the refund for a bike I returned?",
        "Within how many days is the refund for a returned bike paid?",
        "For a returned bike, how soon is the refund paid?",
    ]),
    (None, [  # the model scores "first quarter" against a row saying "Q1" below its cut: declined, all alike
        "What was the revenue in the first quarter of 2026?",
        "What was the revenue in the 1st quarter of 2026?",
        "In the first quarter of 2026, what was the revenue?",
    ]),
    ("Maria Lopez takes over from Anna Berg as head of the workshop in May.", [
        "Who succeeds Anna Berg as head of the workshop?",
        "Who will replace Anna Berg at the head of the workshop?",
        "Anna Berg leads the workshop until May: who comes after her?",
    ]),
]


@pytest.mark.parametrize(("sentence", "variants"), PARAPHRASES, ids=["how-fast", "first-quarter", "successor"])
def test_paraphrases_of_one_question_get_the_same_verdict(sentence: str | None, variants: list[str]) -> None:
    """Synonyms ("fast", "rapidly", "promptly"), "1st" for "first" and another word order: one state, one sentence."""
    found = {variant: (quote.sentence if (quote := answering_quote(variant, SHOP)) else None) for variant in variants}
    assert found == dict.fromkeys(variants, sentence)


@pytest.mark.parametrize("question", [
    "What is the deposit for renting a bike?",
    "How much does a winter tyre change cost for a car?",
    "What was the revenue in the fourth quarter of 2026?",
    "Who succeeds Maria Lopez as head of sales?",
    "When does the shop open on Sundays?",
])
def test_a_question_the_evidence_shares_words_with_but_does_not_answer_is_not_answered(question: str) -> None:
    assert answering_quote(question, SHOP) is None


def test_a_number_glued_to_a_word_is_a_number_and_a_code_is_not() -> None:
    assert numbers("a 180-minute runtime and 1536-dimensional vectors") == [180, 1536]
    assert numbers("the X3 and CHG-2025-0612-03") == []


def test_irregular_past_forms_meet_their_verb() -> None:
    assert content_terms("paid sold bought") == content_terms("pay sell buy")
    assert content_terms("founded") != content_terms("find")


def test_more_texts_than_the_meaning_cache_holds_are_compared_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(meaning, "CACHE_SIZE", 2)
    monkeypatch.setattr(meaning, "_cache", OrderedDict())
    scores = meaning.similarity("cats", ["pets", "dogs", "tax returns", "cats"])
    assert len(scores) == 4 and scores[3] == pytest.approx(1.0, abs=1e-5) and scores[0] > scores[2]
    assert len(meaning._cache) == 2
