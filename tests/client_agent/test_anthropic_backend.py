"""The Anthropic back-end through the real ``anthropic`` SDK, against a local Messages API.

Every test drives :class:`AnthropicBackend` with a real ``AsyncAnthropic`` client whose
``base_url`` points at :class:`FakeAnthropic` (scripted replies over HTTP on 127.0.0.1; the
``fake`` and ``backend`` fixtures of ``conftest.py``, for :data:`API`) and asserts on the
requests the SDK actually sent. What both back-ends do alike (retrying) is tested once, over
both, in ``test_model_backends.py``. The last test runs the whole agent loop over
a real MCP server (in this process) on a small ingested corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from client_agent.backends.anthropic_backend import (
    DEFAULT_MODEL,
    AnthropicBackend,
    AnthropicBackendError,
    APIKeyError,
    from_environment,
)
from client_agent.backends.base import Decision, Exchange, Observation, RunView, ToolRequest
from client_agent.backends.conversation import DROPPED_EVIDENCE, LOOP_EVIDENCE, MUST_ANSWER
from client_agent.errors import ModelBackendError
from client_agent.connection import ToolOutcome, evidence_from
from client_agent.evidence import Ledger
from client_agent.reflection import REFLECTION_INSTRUCTIONS
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.client_agent.fake_anthropic import (
    OVERLOADED,
    UNAUTHORIZED,
    ErrorReply,
    FakeAnthropic,
    cite,
    message,
    text,
    tool_use,
)
from tests.client_agent import scripted
from tests.client_agent.scripted import (
    MODEL_APIS, PARALLEL_CALLS,
    ALPHA, BETA, SEARCH_SCHEMA, SQL_SCHEMA, UNKNOWN_CORPUS, citation, search_outcome, view,
)
from tests.helpers import DEMO_DATABASE_SOURCES

API = "anthropic"
KEY = MODEL_APIS[API].key


async def decide_once(backend: AnthropicBackend) -> Decision:
    """One decision on a fresh run by a back-end made for this call alone (closed afterwards)."""
    try:
        return await backend.decide(view())
    finally:
        await backend.aclose()


def user_turn(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the last (user) message of a request."""
    last = body["messages"][-1]
    assert last["role"] == "user"
    return list(last["content"])


CALLS = message(text("Let me look that up."),
                *(tool_use(f"toolu_0{n}", name, args) for n, (name, args) in enumerate(PARALLEL_CALLS, start=1)))


async def gather_evidence(fake: FakeAnthropic, backend: AnthropicBackend, run: RunView) -> list[ToolOutcome]:
    """One decide that asks for a search, a SQL query and a failing call; their outcomes observed."""
    return await scripted.gather_evidence(fake, backend, run, CALLS)


async def request_after_evidence(fake: FakeAnthropic, backend: AnthropicBackend, run: RunView | None = None,
                                 note: str | None = None, must_answer: bool = False) -> dict[str, Any]:
    return await scripted.request_after_evidence(fake, backend, CALLS, message(text("done")), run, note, must_answer)


# --- configuration and authentication ------------------------------------------------------------


@pytest.mark.anyio
async def test_first_request_offers_the_mcp_tools_with_their_schemas_and_sends_the_key_as_a_bearer_token(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    fake.enqueue(message(text("1024 / 32 = 32.")))
    decision = await backend.decide(view("What is 1024 / 32?"))

    assert decision.answer == "1024 / 32 = 32." and not decision.tool_calls
    (request,) = fake.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"  # anthropic 2.x: api_key goes as a bearer token
    assert "x-api-key" not in request.headers
    assert request.headers["anthropic-version"]
    body = request.body
    assert body["tools"] == [
        {"name": "hybrid_search", "description": "Search the knowledge bases (default).",
         "input_schema": SEARCH_SCHEMA},
        {"name": "keyword_search", "description": "Exact terms and codes.", "input_schema": SEARCH_SCHEMA},
        {"name": "sql_query", "description": "Read-only SQL. Tables: orders(id, status).", "input_schema": SQL_SCHEMA},
    ]
    assert body["tool_choice"] == {"type": "auto"}
    assert body["model"] == "claude-test-model" and body["max_tokens"] == 512
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "What is 1024 / 32?"}]}]
    assert "Reactor notes and team rituals; not for HR questions." in body["system"]
    assert "keyword_search" in body["system"] and "sql_query" in body["system"]


@pytest.mark.anyio
async def test_usage_latency_and_stop_reason_are_reported(fake: FakeAnthropic, backend: AnthropicBackend) -> None:
    fake.enqueue(message(text("Cut"), stop_reason="max_tokens", input_tokens=321, output_tokens=7, model="claude-x"))
    call = (await backend.decide(view())).call
    assert call is not None
    assert (call.model, call.input_tokens, call.output_tokens, call.stop_reason) == ("claude-x", 321, 7, "max_tokens")
    assert 0 < call.seconds < 5


def test_a_missing_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(APIKeyError, match="set ANTHROPIC_API_KEY"):
        from_environment()


@pytest.mark.anyio
async def test_the_environment_configures_key_base_url_model_and_max_tokens(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.delenv("RAG_AGENT_MODEL", raising=False)
    monkeypatch.setenv("RAG_AGENT_MAX_TOKENS", "777")
    fake.enqueue(message(text("ok")), message(text("ok")))
    await decide_once(from_environment())
    monkeypatch.setenv("RAG_AGENT_MODEL", "claude-from-env")
    await decide_once(from_environment(max_tokens=99))

    first, second = fake.requests
    assert first.headers["authorization"] == "Bearer sk-from-env"
    assert (first.body["model"], first.body["max_tokens"]) == (DEFAULT_MODEL, 777)
    assert (second.body["model"], second.body["max_tokens"]) == ("claude-from-env", 99)


@pytest.mark.parametrize("value", ["lots", "0", "-5"])
def test_a_bad_max_tokens_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("RAG_AGENT_MAX_TOKENS", value)
    with pytest.raises(ModelBackendError, match="RAG_AGENT_MAX_TOKENS must be a positive whole number"):
        from_environment(api_key=KEY)


@pytest.mark.anyio
async def test_a_rejected_key_is_a_clear_error_and_is_not_retried(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    fake.enqueue(UNAUTHORIZED)
    with pytest.raises(APIKeyError, match="rejected the API key") as raised:
        await backend.decide(view())
    assert "ANTHROPIC_API_KEY" in str(raised.value)
    assert len(fake.requests) == 1


# --- retries -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_retries_are_configurable(fake: FakeAnthropic) -> None:
    fake.enqueue(OVERLOADED, message(text("never reached")))
    with pytest.raises(AnthropicBackendError, match=r"overloaded or failing: it answered 529 \(Overloaded\)"):
        await decide_once(from_environment(base_url=fake.url, api_key=KEY, max_retries=0))
    assert len(fake.requests) == 1


# --- tool calls and results ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_every_tool_use_gets_its_tool_result_in_order(fake: FakeAnthropic, backend: AnthropicBackend) -> None:
    body = await request_after_evidence(fake, backend)

    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["id"] for b in assistant["content"] if b["type"] == "tool_use"] == ["toolu_01", "toolu_02", "toolu_03"]
    results = user_turn(body)
    assert [(b["type"], b["tool_use_id"]) for b in results] == [
        ("tool_result", "toolu_01"), ("tool_result", "toolu_02"), ("tool_result", "toolu_03"),
    ]  # fmt: skip
    assert [b.get("is_error", False) for b in results] == [False, False, True]
    assert results[2]["content"] == UNKNOWN_CORPUS


@pytest.mark.anyio
async def test_tool_calls_come_back_as_requests_with_the_tool_use_ids(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    fake.enqueue(message(text("Searching the reactor notes.\nMore words."),
                         tool_use("toolu_9", "hybrid_search", {"query": "alpha fuel", "top_k": 3})))
    decision = await backend.decide(view())
    assert decision.tool_calls == [ToolRequest("toolu_9", "hybrid_search", {"query": "alpha fuel", "top_k": 3})]
    assert decision.answer == ""
    assert decision.note == "Searching the reactor notes."


@pytest.mark.anyio
async def test_search_hits_go_back_as_search_result_blocks_and_sql_as_cited_text(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    search, sql, _ = user_turn(await request_after_evidence(fake, backend))
    header, *blocks = search["content"]
    assert header["text"] == "2 hits for 'alpha reactor fuel' in corpus tiny (hybrid search), best first."
    assert blocks == [
        {"type": "search_result", "source": "tiny:alpha#0", "title": "Alpha (updated 2024-05-01)",
         "content": [{"type": "text", "text": ALPHA[1]}], "citations": {"enabled": True}},
        {"type": "search_result", "source": "tiny:beta#0", "title": "Beta",
         "content": [{"type": "text", "text": BETA[1]}], "citations": {"enabled": True}},
    ]  # fmt: skip
    assert sql["content"].startswith("[sql:company:0badc0de]\n")
    assert "17" in sql["content"]


@pytest.mark.anyio
async def test_a_document_window_goes_back_as_one_search_result_per_chunk(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    body = "Alpha intro.\nThe alpha reactor runs on zebraword fuel."
    structured = {
        "corpus": "tiny", "doc_id": "alpha", "title": "Alpha", "source": "alpha.md", "text": body, "text_offset": 0,
        "char_count": len(body), "citation": citation("alpha"),
        "chunks": [{"chunk": 0, "citation_id": "tiny:alpha#0", "section": "Alpha", "char_start": 0, "char_end": 12},
                   {"chunk": 1, "citation_id": "tiny:alpha#1", "section": "Alpha", "char_start": 13,
                    "char_end": len(body)}],
    }  # fmt: skip
    arguments = {"doc_id": "tiny:alpha"}
    outcome = ToolOutcome("get_document", arguments, False, "tiny:alpha — Alpha — alpha.md\n\n[tiny:alpha#0]\n...",
                          structured, 0.01, evidence_from("get_document", arguments, structured, step=1))
    fake.enqueue(message(tool_use("toolu_doc", "get_document", arguments)), message(text("done")))
    run = view()
    decision = await backend.decide(run)
    backend.observe([Observation(decision.tool_calls[0], outcome)])
    await backend.decide(run)

    (result,) = user_turn(fake.requests[1].body)
    assert result["content"][0] == {"type": "text", "text": "tiny:alpha — Alpha — alpha.md"}
    assert [(b["source"], b["content"][0]["text"]) for b in result["content"][1:]] == [
        ("tiny:alpha#0", "Alpha intro."), ("tiny:alpha#1", "The alpha reactor runs on zebraword fuel."),
    ]  # fmt: skip


@pytest.mark.anyio
async def test_notes_follow_the_tool_results_in_the_next_user_turn(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    note = "Reflection verdict: not sufficient. Missing: the roadmap day."
    blocks = user_turn(await request_after_evidence(fake, backend, note=note))
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "tool_result", "text"]
    assert blocks[-1]["text"] == "Reflection verdict: not sufficient. Missing: the roadmap day."


@pytest.mark.anyio
async def test_evidence_the_loop_fetched_itself_is_shown_once(fake: FakeAnthropic, backend: AnthropicBackend) -> None:
    run = view()
    await gather_evidence(fake, backend, run)
    gamma = ("gamma", "Gamma notes say the alpha reactor runs at 460 kelvin.", None)
    confirming = search_outcome("alpha kelvin", gamma)
    run.ledger.add(confirming.evidence)
    fake.enqueue(message(text("first")), message(text("second")))
    await backend.decide(run)
    backend.note("Thanks.")
    await backend.decide(run)

    blocks = user_turn(fake.requests[1].body)
    assert blocks[3] == {"type": "text", "text": LOOP_EVIDENCE}
    assert blocks[4]["type"] == "search_result" and blocks[4]["source"] == "tiny:gamma#0"
    assert [b["type"] for b in user_turn(fake.requests[2].body)] == ["text"]


@pytest.mark.anyio
async def test_evidence_the_ledger_dropped_is_replaced_by_a_placeholder(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    run = view(ledger=Ledger(token_budget=20))  # room for the best hit only
    search = user_turn(await request_after_evidence(fake, backend, run))[0]

    dropped_ids = [e.citation_id for e in run.ledger.dropped()]
    assert "tiny:beta#0" in dropped_ids and "tiny:alpha#0" not in dropped_ids
    kept, dropped = search["content"][1:]
    assert kept["content"] == [{"type": "text", "text": ALPHA[1]}]
    assert (dropped["source"], dropped["content"]) == ("tiny:beta#0", [{"type": "text", "text": DROPPED_EVIDENCE}])


# --- Anthropic-compatible servers: native citations or cited text ---------------------------------


def _sent_search_results(body: dict[str, Any]) -> bool:
    return '"search_result"' in json.dumps(body)


@pytest.mark.anyio
async def test_a_server_that_rejects_search_results_gets_cited_text_for_the_rest_of_the_run() -> None:
    said: list[str] = []
    with FakeAnthropic(rejects_search_results=True) as server:
        backend = from_environment(model="qwen3", base_url=server.url, api_key=KEY, notice=said.append)
        run = view()
        try:
            await gather_evidence(server, backend, run)
            server.enqueue(message(text("never used: refused")), message(text("first")), message(text("second")))
            assert (await backend.decide(run)).answer == "first"
            backend.note("Reflection verdict: not sufficient.")
            assert (await backend.decide(run)).answer == "second"
        finally:
            await backend.aclose()

    assert backend.citations == "text"
    assert said == [f"The Messages API at {server.url} does not accept search_result blocks (Claude's native "
                    "citations): sending search hits as cited text for the rest of this run (--citations text "
                    "skips this first try)."]
    first, refused, resent, later = server.bodies
    assert _sent_search_results(refused) and not _sent_search_results(resent) and not _sent_search_results(later)
    assert resent["messages"] == [_on_text_wire(m) for m in refused["messages"]]
    search = user_turn(resent)[0]
    assert search["tool_use_id"] == "toolu_01"
    assert search["content"] == (
        "2 hits for 'alpha reactor fuel' in corpus tiny (hybrid search), best first.\n\n"
        f"[tiny:alpha#0] Alpha (updated 2024-05-01)\n{ALPHA[1]}\n\n[tiny:beta#0] Beta\n{BETA[1]}"
    )
    assert later["messages"][2] == resent["messages"][2]  # the run's history stays in text form


def _on_text_wire(message_param: dict[str, Any]) -> dict[str, Any]:
    """What a message should look like with hits as cited text: the refused request's, minus search_result
    blocks (checked independently of the back-end's converter: the search tool result is the only change)."""
    content = message_param["content"]
    if isinstance(content, str) or not any(b.get("type") == "tool_result" and isinstance(b.get("content"), list)
                                           for b in content):
        return message_param
    converted = []
    for block in content:
        if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            parts = [p["text"] if p["type"] == "text" else f"[{p['source']}] {p['title']}\n{p['content'][0]['text']}"
                     for p in block["content"]]
            block = {**block, "content": "\n\n".join(parts)}
        converted.append(block)
    return {**message_param, "content": converted}


@pytest.mark.anyio
async def test_citations_text_never_sends_search_results_and_a_gateway_keeps_native_ones(
    fake: FakeAnthropic
) -> None:
    forced = from_environment(base_url=fake.url, api_key=KEY, citations="text")
    gateway = from_environment(base_url=fake.url, api_key=KEY)  # auto, at a URL that is not Anthropic's
    try:
        await request_after_evidence(fake, forced)
        text_body = fake.bodies[-1]
        await request_after_evidence(fake, gateway)
        native_body = fake.bodies[-1]
    finally:
        await forced.aclose()
        await gateway.aclose()
    assert not _sent_search_results(text_body)
    assert user_turn(text_body)[0]["content"].startswith("2 hits for 'alpha reactor fuel'")
    assert [b["type"] for b in user_turn(native_body)[0]["content"]] == ["text", "search_result", "search_result"]
    assert gateway.citations == "auto"


@pytest.mark.anyio
async def test_citations_native_on_a_server_that_rejects_them_is_a_clear_error() -> None:
    with FakeAnthropic(rejects_search_results=True) as server:
        backend = from_environment(base_url=server.url, api_key=KEY, citations="native")
        try:
            with pytest.raises(AnthropicBackendError, match="does not take search_result blocks: use --citations text"):
                await request_after_evidence(server, backend)
        finally:
            await backend.aclose()
    assert len(server.requests) == 2  # no second try as text


@pytest.mark.anyio
async def test_another_bad_request_is_not_mistaken_for_a_search_result_refusal(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    fake.enqueue(ErrorReply(400, "invalid_request_error", "max_tokens: must be at most 8192"))
    with pytest.raises(AnthropicBackendError, match=r"refused the request \(400\): max_tokens: must be at most 8192$"):
        await backend.decide(view())
    assert len(fake.requests) == 1 and backend.citations == "auto"


def test_a_local_messages_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    backend = from_environment(base_url="http://127.0.0.1:11434")
    assert backend.client.api_key == "not-needed"


# --- answers, citations, reflection, revision ---------------------------------------------------


@pytest.mark.anyio
async def test_native_citations_become_inline_citation_ids(fake: FakeAnthropic, backend: AnthropicBackend) -> None:
    run = view()
    await gather_evidence(fake, backend, run)
    fake.enqueue(message(
        text("The alpha reactor runs on "),
        text("zebraword fuel at 451 kelvin", [cite("tiny:alpha#0", ALPHA[1], 0, "Alpha")]),
        text(". Beta teams meet "),
        text("every Tuesday.", [cite("tiny:beta#0", BETA[1], 1), cite("tiny:beta#0", BETA[1], 1)]),
        text(" There are 17 open orders [sql:company:0badc0de].",
             [cite("tiny:alpha#0", ALPHA[1], 0)]),
        text(" Already marked [tiny:beta#0]", [cite("tiny:beta#0", BETA[1], 1)]),
    ))  # fmt: skip
    decision = await backend.decide(run)

    assert decision.answer == (
        "The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#0]. Beta teams meet every Tuesday"
        " [tiny:beta#0]. There are 17 open orders [sql:company:0badc0de] [tiny:alpha#0]. Already marked [tiny:beta#0]"
    )
    assert decision.state == "answered"
    fake.enqueue(message(text("revised")))
    await backend.revise(run, decision.answer, "fine")
    replayed = fake.requests[2].body["messages"][-2]
    assert replayed["role"] == "assistant"
    assert "".join(b["text"] for b in replayed["content"]) == decision.answer


@pytest.mark.parametrize(
    ("reply", "state"),
    [
        ("Insufficient evidence: no document gives the X9's battery life.", "insufficient"),
        ("Clarifying question: which environment do you mean, staging or production?", "clarify"),
        ("The X3 battery lasts 10 hours [products:x3#1].", "answered"),
    ],
)
@pytest.mark.anyio
async def test_the_answer_state_is_read_from_the_reply(
    fake: FakeAnthropic, backend: AnthropicBackend, reply: str, state: str
) -> None:
    fake.enqueue(message(text(reply)))
    decision = await backend.decide(view())
    assert (decision.answer, decision.state) == (reply, state)


@pytest.mark.anyio
async def test_must_answer_forbids_tools_and_asks_for_the_final_answer(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    body = await request_after_evidence(fake, backend, must_answer=True)

    assert body["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in body["tools"]] == ["hybrid_search", "keyword_search", "sql_query"]
    assert user_turn(body)[-1] == {"type": "text", "text": MUST_ANSWER}


@pytest.mark.anyio
async def test_reflection_is_a_side_call_that_leaves_the_conversation_as_it_was(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    run = view()
    await gather_evidence(fake, backend, run)
    fake.enqueue(
        message(text("Sure! {not json")),
        message(text('{"sufficient": false, "missing": ["open orders"], "next_queries": []}')),
        message(text("done")),
    )
    first = await backend.reflect(run)
    second = await backend.reflect(run, retry_feedback="not valid JSON: expecting property name")
    backend.note("Reflection verdict: not sufficient.")
    await backend.decide(run)

    assert first.text == "Sure! {not json"
    assert second.text == '{"sufficient": false, "missing": ["open orders"], "next_queries": []}'
    assert second.call is not None and second.call.output_tokens == 20
    reflect_one, reflect_two, decide = (r.body for r in fake.requests[1:])
    assert reflect_one["tool_choice"] == {"type": "none"}
    assert user_turn(reflect_one)[-1] == {"type": "text", "text": REFLECTION_INSTRUCTIONS}
    retry = user_turn(reflect_two)[-1]["text"]
    assert "not valid JSON: expecting property name" in retry
    assert reflect_one["messages"][:-1] == decide["messages"][:-1]
    texts = [b["text"] for b in user_turn(decide) if b["type"] == "text"]
    assert texts == ["Reflection verdict: not sufficient."]


@pytest.mark.anyio
async def test_revision_sends_the_feedback_after_the_failed_answer(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    run = view()
    fake.enqueue(message(text("Alpha runs at 451 kelvin [tiny:alpha#7].")), message(text("Alpha runs at 451 kelvin.")))
    answer = (await backend.decide(run)).answer
    revised = await backend.revise(run, answer, "[tiny:alpha#7] was not returned by any tool in this run.")

    body = fake.requests[1].body
    assert body["tool_choice"] == {"type": "none"}
    assert body["messages"][-2] == {"role": "assistant", "content": [{"type": "text", "text": answer}]}
    assert "[tiny:alpha#7] was not returned by any tool in this run." in user_turn(body)[-1]["text"]
    assert revised.answer == "Alpha runs at 451 kelvin."


@pytest.mark.anyio
async def test_each_run_starts_a_new_conversation_after_the_chat_history(
    fake: FakeAnthropic, backend: AnthropicBackend
) -> None:
    fake.enqueue(message(text("first answer")), message(text("second answer")))
    await backend.decide(view("Where is the alpha reactor?"))
    history = [Exchange("Where is the alpha reactor?", "In hall 3 [tiny:alpha#0].")]
    await backend.decide(view("What fuel does it use?", history=history))

    assert fake.requests[1].body["messages"] == [
        {"role": "user", "content": "Where is the alpha reactor?"},
        {"role": "assistant", "content": "In hall 3 [tiny:alpha#0]."},
        {"role": "user", "content": [{"type": "text", "text": "What fuel does it use?"}]},
    ]


def test_the_fake_refuses_unpaired_tool_use_like_the_api() -> None:
    """The pairing rule the fake enforces is what gives the pairing assertions above their teeth."""
    from tests.client_agent.fake_anthropic import conversation_problem

    unpaired = {"tools": [{}], "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}},
                                          {"type": "tool_use", "id": "b", "name": "t", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"},
                                     {"type": "tool_result", "tool_use_id": "a"}]},
    ]}  # fmt: skip
    assert "without `tool_result` blocks" in (conversation_problem(unpaired) or "")
    paired = json.loads(json.dumps(unpaired))
    paired["messages"][2]["content"].reverse()
    assert conversation_problem(paired) is None
    assert "must define tools" in (conversation_problem({**paired, "tools": []}) or "")



# --- end to end: the agent loop over a real MCP server (in this process) --------------------------


@pytest.fixture
def tiny_index(tiny_settings: Settings) -> Settings:
    """The tiny corpus, ingested, with the demo database configured (a user corpus alone has no SQL)."""
    ingest(tiny_settings)
    return Settings(data_dir=tiny_settings.data_dir, corpora=tiny_settings.corpora, database=DEMO_DATABASE_SOURCES)


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_run_revises_an_answer_that_cites_an_id_never_retrieved(
    fake: FakeAnthropic, backend: AnthropicBackend, tiny_index: Settings, tmp_path: Path
) -> None:
    fake.enqueue(
        message(text("I'll search the reactor notes."),
                tool_use("toolu_e2e_1", "hybrid_search", {"query": "alpha reactor fuel", "corpus": "tiny"})),
        message(text('{"sufficient": true, "missing": [], "next_queries": []}')),
        message(text("The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#9].")),
        message(text("The alpha reactor runs on zebraword fuel at 451 kelvin",
                     [cite("tiny:alpha#0", "The alpha reactor runs on zebraword fuel at 451 kelvin.")]), text(".")),
    )  # fmt: skip
    trace = tmp_path / "trace.jsonl"
    result, specs = await scripted.revised_run(backend, tiny_index, trace)

    decide, reflect, answer, revise = (r.body for r in fake.requests)
    # tool definitions: the server's MCP tools, schemas untouched
    names = {"hybrid_search", "vector_search", "keyword_search", "sql_query", "get_document"}
    assert {t["name"] for t in decide["tools"]} >= names
    assert decide["tools"] == [
        {"name": s.name, "description": s.description, "input_schema": s.input_schema} for s in specs
    ]
    assert "A tiny test corpus." in decide["system"]
    # the tool_result pairs with the tool_use, carrying the hits as search_result blocks
    tool_result, *rest = user_turn(reflect)
    assert (tool_result["type"], tool_result["tool_use_id"]) == ("tool_result", "toolu_e2e_1")
    assert "is_error" not in tool_result
    hits = {b["source"]: b for b in tool_result["content"] if b["type"] == "search_result"}
    assert hits["tiny:alpha#0"]["title"] == "Alpha"
    assert hits["tiny:alpha#0"]["citations"] == {"enabled": True}
    assert "zebraword fuel at 451 kelvin" in hits["tiny:alpha#0"]["content"][0]["text"]
    assert rest == [{"type": "text", "text": REFLECTION_INSTRUCTIONS}]
    assert reflect["tool_choice"] == {"type": "none"}
    # the reflection stayed out of the conversation; its verdict came back as a note
    assert user_turn(answer)[0] == tool_result
    (verdict,) = user_turn(answer)[1:]
    assert verdict["type"] == "text" and "verdict: the evidence is sufficient" in verdict["text"]
    assert REFLECTION_INSTRUCTIONS not in json.dumps(answer)
    # the revision request follows the failed answer and names the bad id
    assert revise["messages"][-2]["content"] == [
        {"type": "text", "text": "The alpha reactor runs on zebraword fuel at 451 kelvin [tiny:alpha#9]."}
    ]
    assert "tiny:alpha#9" in user_turn(revise)[-1]["text"]
    assert revise["tool_choice"] == {"type": "none"}
    # the trace accounts for the four model calls
    calls = [e for e in map(json.loads, trace.read_text().splitlines()) if e["event"] == "model_call"]
    assert [c["purpose"] for c in calls] == ["decide", "reflect", "decide", "revise"]
    assert result.totals.input_tokens == sum(c["input_tokens"] for c in calls) == 400
