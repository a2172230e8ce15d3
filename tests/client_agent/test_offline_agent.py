"""The offline agent end to end: a real MCP server on the bundled demo knowledge (in this process; over stdio for
the first and the trace test, as ``rag-agent ask`` runs it), no model."""

from __future__ import annotations

import re

import pytest

from client_agent.trace import read_trace
from tests.client_agent.conftest import AskFn

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_two_part_hr_question_gets_both_facts_with_distinct_citations(ask_offline_stdio: AskFn) -> None:
    result = await ask_offline_stdio(
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


async def test_trace_records_every_tool_call_and_the_totals(ask_offline_stdio: AskFn) -> None:
    result = await ask_offline_stdio("What does the VPN error ERR_VPN_AUTH_4012 mean?")
    events = read_trace(result.trace)
    calls = [e for e in events if e["event"] == "tool_call" and not e.get("refused")]
    assert len(calls) == result.totals.tool_calls
    assert events[0]["event"] == "run_start" and events[-1]["event"] == "run_end"
    assert events[-1]["totals"] == result.totals.to_dict() and events[-1]["state"] == result.state
    assert any(e["event"] == "reflection" and "verdict" in e for e in events)
    assert "ERR_VPN_AUTH_4012" in result.answer and result.citations


INCIDENT_DOCUMENTS = {
    "engineering:incidents/2025-06-12-lb-no-healthy-backend-alert",  # the symptom and the timeline
    "engineering:changes/CHG-2025-0612-03",  # the change that blocked the health checks
    "engineering:manuals/load-balancer-configuration",  # why no healthy backend means refused connections
}


async def test_incident_question_retrieves_all_three_documents_of_the_cause(ask_offline: AskFn) -> None:
    result = await ask_offline("Why did production Nginx suddenly refuse connections?")
    events = read_trace(result.trace)
    retrieved = {i.split("#")[0] for e in events if e["event"] == "tool_call" for i in e.get("evidence") or []}
    assert INCIDENT_DOCUMENTS <= retrieved
    answer_at = next(i for i, e in enumerate(events) if e["event"] == "citation_check")
    last_call = max(i for i, e in enumerate(events) if e["event"] == "tool_call")
    assert last_call < answer_at  # all of it was gathered before the answer was written
    assert "connection" in result.answer and result.verification["passed"] is True
    assert {c["id"].split("#")[0] for c in result.citations} & INCIDENT_DOCUMENTS


async def test_x3_battery_conflict_is_surfaced_with_both_dated_sources(ask_offline: AskFn) -> None:
    result = await ask_offline("What is the battery life of the X3?")
    assert "120 minutes" in result.answer and "150 minutes" in result.answer
    cited = {c["id"].split("#")[0] for c in result.citations}
    assert {"products:wonderclean/x3-user-manual-v1.0", "products:wonderclean/x3-user-manual-v2.0"} <= cited
    assert "newer source is WonderClean X3 User Manual (version 2.0), dated 2025-01-15" in result.answer
    assert result.conflicts and any(e["event"] == "conflict" for e in read_trace(result.trace))
