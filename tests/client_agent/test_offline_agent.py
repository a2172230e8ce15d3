"""The offline agent end to end: a real stdio server on the bundled demo knowledge, no model."""

from __future__ import annotations

import re

import pytest

from client_agent.trace import read_trace
from tests.client_agent.conftest import AskFn

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_two_part_hr_question_gets_both_facts_with_distinct_citations(ask_offline: AskFn) -> None:
    result = await ask_offline(
        "How many days of annual leave do I get after 3 years of service, and how far ahead must I request it?"
    )
    assert result.state == "answered", result.answer
    assert "15" in result.answer and "5 working days" in result.answer
    ids = {c["id"] for c in result.citations}
    assert len(ids) >= 2 and all(i.startswith("handbook:hr/leave-policy#") for i in ids)
    assert result.verification["passed"] is True


async def test_arithmetic_is_computed_without_any_tool_call(ask_offline: AskFn) -> None:
    result = await ask_offline("1024 / 32")
    assert result.state == "answered" and "= 32" in result.answer
    assert result.totals.tool_calls == 0 and result.citations == []
    assert not [e for e in read_trace(result.trace) if e["event"] == "tool_call"]


async def test_general_knowledge_is_declined_without_retrieving(ask_offline: AskFn) -> None:
    result = await ask_offline("What is the capital of France?")
    assert result.state == "insufficient" and result.totals.tool_calls == 0
    assert "Paris" not in result.answer and "general-knowledge" in result.answer


async def test_fact_missing_from_every_corpus_ends_insufficient_without_fabrication(ask_offline: AskFn) -> None:
    result = await ask_offline("What is the X9's battery life?")
    assert result.state == "insufficient"
    assert result.citations == [] and not re.search(r"\d+\s*(min|minutes|hours|h)\b", result.answer)
    assert "X9" in result.answer or "x9" in result.answer
    assert result.totals.tool_calls >= 2  # it looked again, more broadly, before giving up


async def test_trace_records_every_tool_call_and_the_totals(ask_offline: AskFn) -> None:
    result = await ask_offline("What does the VPN error ERR_VPN_AUTH_4012 mean?")
    events = read_trace(result.trace)
    calls = [e for e in events if e["event"] == "tool_call" and not e.get("refused")]
    assert len(calls) == result.totals.tool_calls
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    assert events[-1]["totals"] == result.totals.to_dict() and events[-1]["state"] == result.state
    assert any(e["event"] == "reflection" and "verdict" in e for e in events)
    assert "ERR_VPN_AUTH_4012" in result.answer and result.citations
