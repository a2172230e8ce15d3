"""The offline agent's readers of question shapes, on hand-written evidence: worded arithmetic, tiers,
numbered steps, extreme table rows and renamed products."""

from __future__ import annotations

import pytest

from client_agent.offline import aliases, shapes, tiers
from client_agent.offline.calculation import arithmetic
from client_agent.connection import Catalog, CorpusSummary
from client_agent.evidence import Evidence, Ledger
from client_agent.offline.planning import about_records, undescribed

LEAVE = """Annual leave grows with your length of service:

- After 1 year of service: **10 days** of paid annual leave per calendar year.
- After 3 years of service: **15 days** per calendar year.
- After 5 years of service: **20 days** per calendar year.

Part-time employees receive the same days in proportion; after 3 years of service, four days a week gives 12 days."""
REFUNDS = """| Time since the payment | Refund |
|---|---|
| Within 7 days | full refund |
| From day 7 to day 30 | pro rata refund |
| After 30 days | no refund |"""
PLANS = """| Plan | Price | Seats |
|---|---|---|
| Basic | ¥1,999/month | 5 seats |
| Professional | ¥4,999/month | 20 seats |
| Enterprise | ¥9,999/month | unlimited |"""
FIX = """To renew yours:

1. Open the self-service portal.
2. Choose **Devices > Renew VPN certificate**.
3. Restart the client and sign in again.

The client log shows the error code."""


def _ledger(*texts: str) -> Ledger:
    ledger = Ledger()
    ledger.add(Evidence(f"c:doc{n}#0", text, "chunk", {"id": f"c:doc{n}#0", "title": f"Doc {n}", "corpus": "c",
                                                     "doc_id": f"doc{n}"}, "hybrid_search", "q", n, 1)
               for n, text in enumerate(texts, start=1))
    return ledger


@pytest.mark.parametrize(("question", "shown", "value"), [
    ("How much is 15 percent of 240?", "15% of 240", 36), ("What is 125 times 8?", "125 × 8", 1000),
    ("What's 81 divided by 9?", "81 ÷ 9", 9), ("What is 12 squared?", "12²", 144),
    ("What is 17 plus 25 minus 4?", "17 + 25 - 4", 38), ("What is 2 to the power of 10?", "2^10", 1024),
])
def test_arithmetic_in_words_is_computed(question: str, shown: str, value: float) -> None:
    assert arithmetic(question) == (shown, value)


@pytest.mark.parametrize("question", ["How much is 3 times the Pro price?", "What is 20 percent of the seats?"])
def test_worded_operators_beside_other_words_are_not_arithmetic(question: str) -> None:
    assert arithmetic(question) is None


@pytest.mark.parametrize(("question", "tier"), [
    ("I started seven years ago. How many paid leave days do I get?", "After 5 years of service: 20 days"),
    ("I joined two years ago; how many days of annual leave do I get?", "After 1 year of service: 10 days"),
    ("After 4 years of service, how many days of paid leave do I get?", "After 3 years of service: 15 days"),
])
def test_the_tier_the_questions_amount_falls_in_is_chosen(question: str, tier: str) -> None:
    resolution = tiers.resolve(question, _ledger(LEAVE))
    assert resolution is not None and resolution.tier.sentence.startswith(tier)
    intro, quoted = resolution.lines()
    assert intro.endswith("this tier applies:") and not any(ch.isdigit() for ch in intro)  # needs no citation
    assert quoted.endswith("[c:doc1#0]")


def test_an_upper_bound_tier_applies_below_it() -> None:
    resolution = tiers.resolve("I paid five days ago and want a refund. Can I get my payment back?", _ledger(REFUNDS))
    assert resolution is not None and "Within 7 days" in resolution.tier.sentence


def test_no_tier_without_an_amount_in_the_question() -> None:
    assert tiers.resolve("How many days of paid leave do I get?", _ledger(LEAVE)) is None


def test_numbered_steps_are_quoted_each_with_its_citation() -> None:
    steps = shapes.procedure("How do I renew my VPN certificate?", _ledger(FIX))
    assert steps is not None and steps.cited() == [
        "1. Open the self-service portal. [c:doc1#0]", "2. Choose Devices > Renew VPN certificate. [c:doc1#0]",
        "3. Restart the client and sign in again. [c:doc1#0]"]
    assert shapes.procedure("How long is the certificate valid?", _ledger(FIX)) is None  # not a "how do I"


@pytest.mark.parametrize(("question", "row"), [("the most expensive plan price", 2), ("the cheapest plan price", 0)])
def test_the_extreme_row_of_the_named_column(question: str, row: int) -> None:
    item = next(iter(_ledger(PLANS)))
    rows = [("Plan: Basic, Price: ¥1,999/month, Seats: 5 seats.", item),
            ("Plan: Professional, Price: ¥4,999/month, Seats: 20 seats.", item),
            ("Plan: Enterprise, Price: ¥9,999/month, Seats: unlimited.", item)]
    assert shapes.extreme_row(question, rows) == row
    assert shapes.extreme_row("the price of the Basic plan", rows) is None


def test_a_definition_in_the_evidence_renames_what_the_question_describes() -> None:
    ledger = _ledger("Wonderlab Service Cloud is an omnichannel help desk for customer-service teams.")
    question = "What is the monthly price of the most expensive plan of the help-desk software?"
    assert aliases.uncovered_runs(question, ["expens", "help-desk", "softwar"]) == ["expensive", "help-desk software"]
    assert aliases.resolve(question, ["help-desk", "softwar"], ledger) == (
        "What is the monthly price of the most expensive plan of the Wonderlab Service Cloud?")
    assert aliases.resolve("What does the X5 vacuum cost?", ["vacuum"], ledger) is None


def test_undescribed_corpora_and_record_questions_are_told_apart() -> None:
    adhoc = CorpusSummary("town", "Documents from the local folder 'town', indexed ad hoc without a corpus.toml, so "
                          "what they cover is not described. Search it when the question may concern those "
                          "documents and no better-described corpus fits.", 3, 3)
    hr = CorpusSummary("handbook", "Employee handbook: annual leave and bonus rules.", 5, 30)
    assert undescribed(Catalog([], [adhoc, hr], "")) == ["town"]
    assert about_records("How many refunds were issued in September?")
    assert not about_records("What is the monthly price of the most expensive plan?")
