"""The OpenAI-compatible back-end through the real ``openai`` SDK, against a local chat-completions server.

Every test drives :class:`OpenAIBackend` with a real ``AsyncOpenAI`` client whose ``base_url``
points at :class:`FakeOpenAI` (scripted replies over HTTP on 127.0.0.1; the ``fake`` and
``backend`` fixtures of ``conftest.py``, for :data:`API`) and asserts on the requests the SDK
actually sent. What both back-ends do alike (retrying) is tested once, over both, in
``test_model_backends.py``. The last tests run the whole agent loop over a real MCP
server (in this process) on a small ingested corpus.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from client_agent.backends.base import Exchange, RunView, ToolRequest
from client_agent.backends.conversation import DROPPED_EVIDENCE, LOOP_EVIDENCE, MUST_ANSWER
from client_agent.backends.openai_backend import VERDICT_FORMAT, OpenAIBackend, OpenAIBackendError, from_environment
from client_agent.connection import ToolOutcome
from client_agent.evidence import Ledger
from client_agent.reflection import REFLECTION_INSTRUCTIONS, REFLECTION_SCHEMA
from client_agent.trace import read_trace
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.client_agent.fake_openai import UNAUTHORIZED, ErrorReply, FakeOpenAI, completion, tool_call
from tests.client_agent import scripted
from tests.client_agent.scripted import (
    MODEL_APIS, PARALLEL_CALLS,
    ALPHA, BETA, SEARCH_SCHEMA, SQL_SCHEMA, UNKNOWN_CORPUS, search_outcome, view,
)

API = "openai"
KEY = MODEL_APIS[API].key
VERDICT_OK = '{"sufficient": true, "missing": [], "next_queries": []}'


CALLS = completion("Let me look that up.",
                   *(tool_call(f"call_{n}", name, args) for n, (name, args) in enumerate(PARALLEL_CALLS, start=1)))


async def gather_evidence(fake: FakeOpenAI, backend: OpenAIBackend, run: RunView) -> list[ToolOutcome]:
    """One decide that asks, in parallel, for a search, a SQL query and a failing call; outcomes observed."""
    return await scripted.gather_evidence(fake, backend, run, CALLS)


async def request_after_evidence(fake: FakeOpenAI, backend: OpenAIBackend, run: RunView | None = None,
                                 note: str | None = None, must_answer: bool = False) -> dict[str, Any]:
    return await scripted.request_after_evidence(fake, backend, CALLS, completion("done"), run, note, must_answer)


# --- configuration ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_first_request_offers_the_mcp_tools_as_function_tools_and_sends_the_key(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    fake.enqueue(completion("1024 / 32 = 32."))
    decision = await backend.decide(view("What is 1024 / 32?"))

    assert (decision.answer, decision.state, decision.tool_calls) == ("1024 / 32 = 32.", "answered", [])
    (request,) = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert body["tools"] == [
        {"type": "function", "function": {"name": "hybrid_search", "description": "Search the knowledge bases "
                                          "(default).", "parameters": SEARCH_SCHEMA}},
        {"type": "function", "function": {"name": "keyword_search", "description": "Exact terms and codes.",
                                          "parameters": SEARCH_SCHEMA}},
        {"type": "function", "function": {"name": "sql_query", "description": "Read-only SQL. Tables: orders(id, "
                                          "status).", "parameters": SQL_SCHEMA}},
    ]  # fmt: skip
    assert "tool_choice" not in body and "response_format" not in body
    assert (body["model"], body["max_tokens"]) == ("qwen-test", 512)
    system, user = body["messages"]
    assert system["role"] == "system" and "Reactor notes and team rituals; not for HR questions." in system["content"]
    assert user == {"role": "user", "content": "What is 1024 / 32?"}


@pytest.mark.anyio
async def test_usage_latency_and_finish_reason_are_reported(fake: FakeOpenAI, backend: OpenAIBackend) -> None:
    fake.enqueue(completion("Cut", finish_reason="length", prompt_tokens=321, completion_tokens=7, model="qwen-x"))
    call = (await backend.decide(view())).call
    assert call is not None
    assert (call.model, call.input_tokens, call.output_tokens, call.stop_reason) == ("qwen-x", 321, 7, "length")


def test_without_a_base_url_a_key_and_a_model_are_required(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAG_AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(OpenAIBackendError, match="set OPENAI_API_KEY .* or point --base-url"):
        from_environment()
    with pytest.raises(OpenAIBackendError, match="Set --model"):
        from_environment(api_key=KEY)


@pytest.mark.anyio
async def test_a_local_server_needs_no_key_and_its_first_model_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "RAG_AGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    said: list[str] = []
    with FakeOpenAI(models=("llama3.2:3b", "qwen3:8b")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        backend = from_environment(notice=said.append)
        server.enqueue(completion("ok"), completion("ok"))
        try:
            await backend.decide(view())
            await backend.decide(view())
        finally:
            await backend.aclose()
    assert [r.body["model"] for r in server.requests] == ["llama3.2:3b", "llama3.2:3b"]
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"
    assert said == ["model: llama3.2:3b (the first the server lists; --model chooses another)"]


@pytest.mark.anyio
async def test_a_rejected_key_is_a_clear_error_naming_the_server(fake: FakeOpenAI, backend: OpenAIBackend) -> None:
    fake.enqueue(UNAUTHORIZED)
    with pytest.raises(OpenAIBackendError, match="rejected the API key") as raised:
        await backend.decide(view())
    assert fake.base_url in str(raised.value) and "OPENAI_API_KEY" in str(raised.value)
    assert len(fake.requests) == 1


@pytest.mark.anyio
async def test_a_server_that_is_down_is_named_with_a_hint() -> None:
    backend = from_environment(model="m", base_url="http://127.0.0.1:9/v1", max_retries=0)
    try:
        with pytest.raises(OpenAIBackendError, match=r"Could not reach the OpenAI-compatible server at "
                                                     r"http://127\.0\.0\.1:9/v1.*Is it running"):
            await backend.decide(view())
    finally:
        await backend.aclose()


@pytest.mark.anyio
async def test_a_server_without_tool_calling_gets_the_flags_to_turn_it_on(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    fake.enqueue(ErrorReply(400, "BadRequestError",
                            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'))
    with pytest.raises(OpenAIBackendError, match="refused the request \\(400\\).*llama-server needs --jinja"):
        await backend.decide(view())


@pytest.mark.anyio
async def test_a_server_that_wants_max_completion_tokens_gets_it() -> None:
    with FakeOpenAI(wants_max_completion_tokens=True) as server:
        backend = from_environment(model="o9", base_url=server.base_url, api_key=KEY, max_tokens=300)
        server.enqueue(completion("never used"), completion("first"), completion("second"))
        try:
            assert (await backend.decide(view())).answer == "first"
            assert (await backend.decide(view())).answer == "second"
        finally:
            await backend.aclose()
    limits = [(b.get("max_tokens"), b.get("max_completion_tokens")) for b in server.bodies]
    assert limits == [(300, None), (None, 300), (None, 300)]


@pytest.mark.parametrize("content", [
    '{"name": "hybrid_search", "arguments": {"query": "alpha fuel"}}',
    '<tool_call>\n{"name": "hybrid_search", "arguments": {"query": "alpha fuel"}}\n</tool_call>',
])
@pytest.mark.anyio
async def test_a_tool_call_written_as_text_is_not_shipped_as_the_answer(
    fake: FakeOpenAI, backend: OpenAIBackend, content: str
) -> None:
    fake.enqueue(completion(content))
    with pytest.raises(OpenAIBackendError, match="wrote a tool call as text .* llama-server needs --jinja"):
        await backend.decide(view())


@pytest.mark.anyio
async def test_an_answer_that_is_json_about_something_else_is_an_answer(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    fake.enqueue(completion('{"name": "Alpha reactor", "fuel": "zebraword"}'))
    assert (await backend.decide(view())).answer == '{"name": "Alpha reactor", "fuel": "zebraword"}'


# --- tool calls and results ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_tool_calls_come_back_as_requests_with_their_ids(fake: FakeOpenAI, backend: OpenAIBackend) -> None:
    fake.enqueue(completion("Searching the reactor notes.\nMore words.",
                            tool_call("call_9", "hybrid_search", {"query": "alpha fuel", "top_k": 3})))
    decision = await backend.decide(view())
    assert decision.tool_calls == [ToolRequest("call_9", "hybrid_search", {"query": "alpha fuel", "top_k": 3})]
    assert (decision.answer, decision.note) == ("", "Searching the reactor notes.")


@pytest.mark.anyio
async def test_parallel_tool_calls_each_get_their_tool_message_in_order(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    body = await request_after_evidence(fake, backend)

    assistant = body["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] == "Let me look that up."
    assert [(c["id"], c["function"]["name"]) for c in assistant["tool_calls"]] == [
        ("call_1", "hybrid_search"), ("call_2", "sql_query"), ("call_3", "keyword_search"),
    ]  # fmt: skip
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"query": "alpha reactor fuel",
                                                                               "corpus": "tiny"}
    search, sql, failed = body["messages"][3:]
    assert [m["role"] for m in (search, sql, failed)] == ["tool"] * 3
    assert [m["tool_call_id"] for m in (search, sql, failed)] == ["call_1", "call_2", "call_3"]
    assert failed["content"] == UNKNOWN_CORPUS
    assert sql["content"].startswith("[sql:company:0badc0de]\n") and "17" in sql["content"]
    assert search["content"] == (
        "2 hits for 'alpha reactor fuel' in corpus tiny (hybrid search), best first.\n\n"
        f"[tiny:alpha#0] Alpha (updated 2024-05-01)\n{ALPHA[1]}\n\n"
        f"[tiny:beta#0] Beta\n{BETA[1]}"
    )


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"query": "alpha fuel"', r"arguments of this hybrid_search call are not valid JSON \(Expecting"),
        ('["alpha fuel"]', r"arguments of this hybrid_search call are a JSON array, not an object"),
    ],
)
@pytest.mark.anyio
async def test_arguments_that_are_not_a_json_object_make_a_request_the_loop_refuses(
    fake: FakeOpenAI, backend: OpenAIBackend, arguments: str, problem: str
) -> None:
    fake.enqueue(completion(None, tool_call("call_bad", "hybrid_search", arguments),
                            tool_call("call_ok", "hybrid_search", "")))
    bad, empty = (await backend.decide(view())).tool_calls
    assert (bad.id, bad.name, bad.arguments) == ("call_bad", "hybrid_search", {})
    assert bad.problem is not None
    assert re.search(problem, bad.problem) and "call it again" in bad.problem
    assert (empty.arguments, empty.problem) == ({}, None)  # no arguments at all is an empty object


@pytest.mark.anyio
async def test_notes_and_evidence_the_loop_fetched_follow_the_tool_messages_as_one_user_message(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    run = view()
    await gather_evidence(fake, backend, run)
    gamma = ("gamma", "Gamma notes say the alpha reactor runs at 460 kelvin.", None)
    run.ledger.add(search_outcome("alpha kelvin", gamma).evidence)
    backend.note("Reflection verdict: not sufficient. Missing: the roadmap day.")
    fake.enqueue(completion("first"), completion("second"))
    await backend.decide(run)
    await backend.decide(run)

    last = fake.requests[1].body["messages"][-1]
    assert last == {"role": "user", "content": (
        "Reflection verdict: not sufficient. Missing: the roadmap day.\n\n"
        f"{LOOP_EVIDENCE}\n\n[tiny:gamma#0] Gamma\n{gamma[1]}"
    )}  # fmt: skip
    # shown once: the next request adds nothing after the model's answer
    assert fake.requests[2].body["messages"][-1] == {"role": "assistant", "content": "first"}


@pytest.mark.anyio
async def test_evidence_the_ledger_dropped_is_replaced_by_a_placeholder(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    run = view(ledger=Ledger(token_budget=20))  # room for the best hit only
    search = (await request_after_evidence(fake, backend, run))["messages"][3]
    assert "tiny:beta#0" in [e.citation_id for e in run.ledger.dropped()]
    assert f"[tiny:alpha#0] Alpha (updated 2024-05-01)\n{ALPHA[1]}" in search["content"]
    assert search["content"].endswith(f"[tiny:beta#0] Beta\n{DROPPED_EVIDENCE}")


@pytest.mark.anyio
async def test_must_answer_sends_no_tools_and_ignores_tool_calls_anyway(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    run = view()
    await gather_evidence(fake, backend, run)
    run.must_answer = True
    fake.enqueue(completion("Alpha runs on zebraword fuel [tiny:alpha#0].",
                            tool_call("call_late", "hybrid_search", {"query": "more"})),
                 completion("next"))
    decision = await backend.decide(run)
    run.must_answer = False
    await backend.decide(run)

    final = fake.requests[1].body
    assert "tools" not in final and final["messages"][-1] == {"role": "user", "content": MUST_ANSWER}
    assert (decision.answer, decision.tool_calls) == ("Alpha runs on zebraword fuel [tiny:alpha#0].", [])
    replayed = fake.requests[2].body["messages"][-1]  # accepted by the fake: no unanswered tool call
    assert replayed == {"role": "assistant", "content": "Alpha runs on zebraword fuel [tiny:alpha#0]."}


# --- reflection and revision ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_reflection_asks_for_structured_output_and_leaves_the_conversation_as_it_was(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    run = view()
    await gather_evidence(fake, backend, run)
    fake.enqueue(completion('{"sufficient": false, "missing": ["x"], "next_queries": []}'), completion("done"))
    reply = await backend.reflect(run)
    backend.note("Reflection verdict: not sufficient.")
    await backend.decide(run)

    assert reply.text == '{"sufficient": false, "missing": ["x"], "next_queries": []}'
    reflect, decide = fake.bodies[1:]
    assert reflect["response_format"] == VERDICT_FORMAT and "tools" not in reflect
    assert reflect["messages"][-1] == {"role": "user", "content": REFLECTION_INSTRUCTIONS}
    assert reflect["messages"][:-1] == decide["messages"][:-1]
    assert decide["messages"][-1] == {"role": "user", "content": "Reflection verdict: not sufficient."}
    assert "response_format" not in decide


def test_the_structured_output_schema_is_the_verdicts_fields_in_strict_form() -> None:
    schema = VERDICT_FORMAT["json_schema"]["schema"]
    assert VERDICT_FORMAT["json_schema"]["strict"] is True
    assert set(schema["properties"]) == set(REFLECTION_SCHEMA["properties"]) == set(schema["required"])
    assert schema["additionalProperties"] is False
    assert {name: p["type"] for name, p in schema["properties"].items()} == {
        "sufficient": "boolean", "missing": "array", "next_queries": "array"}


@pytest.mark.anyio
async def test_a_server_without_structured_output_is_asked_again_without_it_and_not_offered_it_again() -> None:
    with FakeOpenAI(rejects_response_format=True) as server:
        backend = from_environment(model="m", base_url=server.base_url, api_key=KEY)
        server.enqueue(completion("never used"), completion(VERDICT_OK), completion("nope {"),
                       completion(VERDICT_OK))
        try:
            first = await backend.reflect(view())
            second = await backend.reflect(view(), retry_feedback="not valid JSON")
            third = await backend.reflect(view())
        finally:
            await backend.aclose()
    assert (first.text, second.text, third.text) == (VERDICT_OK, "nope {", VERDICT_OK)
    assert ["response_format" in body for body in server.bodies] == [True, False, False, False]
    assert "Your previous reflection could not be used: not valid JSON" in server.bodies[2]["messages"][-1]["content"]


@pytest.mark.anyio
async def test_revision_sends_the_feedback_after_the_failed_answer(fake: FakeOpenAI, backend: OpenAIBackend) -> None:
    run = view()
    fake.enqueue(completion("Alpha runs at 451 kelvin [tiny:alpha#7]."), completion("Alpha runs at 451 kelvin."))
    answer = (await backend.decide(run)).answer
    revised = await backend.revise(run, answer, "[tiny:alpha#7] was not returned by any tool in this run.")

    body = fake.requests[1].body
    assert "tools" not in body
    assert body["messages"][-2] == {"role": "assistant", "content": answer}
    assert body["messages"][-1] == {"role": "user",
                                    "content": "[tiny:alpha#7] was not returned by any tool in this run."}
    assert revised.answer == "Alpha runs at 451 kelvin."


@pytest.mark.anyio
async def test_the_answer_state_is_read_from_the_reply(fake: FakeOpenAI, backend: OpenAIBackend) -> None:
    fake.enqueue(completion("Insufficient evidence: no document gives the X9's battery life."))
    assert (await backend.decide(view())).state == "insufficient"


@pytest.mark.anyio
async def test_each_run_starts_a_new_conversation_after_the_chat_history(
    fake: FakeOpenAI, backend: OpenAIBackend
) -> None:
    fake.enqueue(completion("first answer"), completion("second answer"))
    await backend.decide(view("Where is the alpha reactor?"))
    await backend.decide(view("What fuel does it use?",
                              history=[Exchange("Where is the alpha reactor?", "In hall 3 [tiny:alpha#0].")]))
    assert fake.requests[1].body["messages"][1:] == [
        {"role": "user", "content": "Where is the alpha reactor?"},
        {"role": "assistant", "content": "In hall 3 [tiny:alpha#0]."},
        {"role": "user", "content": "What fuel does it use?"},
    ]


def test_the_fake_refuses_unanswered_tool_calls_like_the_api() -> None:
    """The pairing rule the fake enforces is what gives the pairing assertions above their teeth."""
    from tests.client_agent.fake_openai import conversation_problem

    calls = [tool_call("a", "t", {}), tool_call("b", "t", {})]
    unanswered = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": calls},
                               {"role": "tool", "tool_call_id": "a", "content": "x"},
                               {"role": "user", "content": "next"}]}
    assert "did not have response messages: b" in (conversation_problem(unanswered) or "")
    answered = json.loads(json.dumps(unanswered))
    answered["messages"].insert(3, {"role": "tool", "tool_call_id": "b", "content": "y"})
    assert conversation_problem(answered) is None
    stray = {"messages": [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "z", "content": "x"}]}
    assert "must be a response to a preceding message" in (conversation_problem(stray) or "")


# --- end to end: the agent loop over a real MCP server (in this process) --------------------------


@pytest.fixture
def tiny_index(tiny_settings: Settings) -> Settings:
    ingest(tiny_settings)
    return tiny_settings


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_run_survives_malformed_calls_and_verdicts_and_revises_a_bad_citation(
    fake: FakeOpenAI, backend: OpenAIBackend, tiny_index: Settings, tmp_path: Path
) -> None:
    fake.enqueue(
        completion("I'll search the reactor notes.",
                   tool_call("call_a", "hybrid_search", {"query": "alpha reactor fuel", "corpus": "tiny"}),
                   tool_call("call_b", "hybrid_search", '{"query": "alpha'),
                   tool_call("call_c", "web_search", {"query": "alpha reactor"})),
        completion("The evidence looks sufficient to me."),  # a malformed verdict ...
        completion(VERDICT_OK),  # ... retried once
        completion("The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#9]."),
        completion("The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#0]."),
    )  # fmt: skip
    trace = tmp_path / "trace.jsonl"
    result, specs = await scripted.revised_run(backend, tiny_index, trace)

    decide, reflect, retry, answer, revise = fake.bodies
    assert [t["function"]["name"] for t in decide["tools"]] == [s.name for s in specs]
    assert all(t["function"]["parameters"] == s.input_schema for t, s in zip(decide["tools"], specs))
    # every call got its tool message, the malformed ones a refusal saying what was wrong
    good, bad_json, unknown = reflect["messages"][3:6]
    assert [m["tool_call_id"] for m in (good, bad_json, unknown)] == ["call_a", "call_b", "call_c"]
    assert "[tiny:alpha#0] Alpha\n" in good["content"] and "zebraword fuel at 451 kelvin" in good["content"]
    assert bad_json["content"].startswith("Refused: the arguments of this hybrid_search call are not valid JSON")
    assert unknown["content"].startswith("Refused: there is no tool 'web_search'")
    # the malformed verdict was retried with the parse error; neither reflection stayed in the conversation
    assert "Your previous reflection could not be used: the reply must be only a JSON object" in (
        retry["messages"][-1]["content"])
    assert answer["messages"][-1]["content"].startswith("Reflection verdict: the evidence is sufficient")
    assert REFLECTION_INSTRUCTIONS not in json.dumps(answer)
    # the revision follows the failed answer and names the bad id
    assert revise["messages"][-2] == {"role": "assistant", "content": (
        "The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#9].")}  # fmt: skip
    assert "tiny:alpha#9" in revise["messages"][-1]["content"] and "tools" not in revise
    events = read_trace(trace)
    refused = [e["refused"] for e in events if e["event"] == "tool_call" and e.get("refused")]
    assert len(refused) == 2
    calls = [e for e in events if e["event"] == "model_call"]
    assert [c["purpose"] for c in calls] == ["decide", "reflect", "reflect", "decide", "revise"]
    assert result.totals.input_tokens == sum(c["input_tokens"] for c in calls) == 500
    assert result.totals.tool_calls == 1
