"""What every transport must deliver, checked through the real SDK client.

The in-memory, stdio and HTTP tests run the same checks, so one listing and one set of
calls prove the public contract (DESIGN.md) wherever the server runs.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from mcp import Client
from mcp.types import CallToolResult, TextContent, Tool

TOOL_NAMES = {"hybrid_search", "vector_search", "keyword_search", "sql_query", "get_document", "check_answer"}

# One meaningful call per tool on the acme fixture corpus and the demo database.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("hybrid_search", {"query": "how many days ahead should flights be booked", "top_k": 3}),
    ("vector_search", {"query": "money for meals while travelling", "corpus": "acme"}),
    ("keyword_search", {"query": "ACME-E7731", "top_k": 2}),
    ("get_document", {"doc_id": "acme:policies/travel#1", "window": 1}),
    ("check_answer", {"answer": "Employees may work remotely up to 3 days per week [acme:policies/remote-work#0]."}),
    ("sql_query", {"sql": "SELECT name, title FROM employees WHERE department_id = ? ORDER BY id", "params": [1]}),
]


async def list_checked_tools(client: Client, names: frozenset[str] | set[str] = TOOL_NAMES) -> dict[str, Tool]:
    """The tools by name, after checking ``names``, annotations and that each publishes an output schema."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == set(names)
    for tool in tools.values():
        annotations = tool.annotations
        assert tool.title and annotations is not None
        assert annotations.read_only_hint is True and annotations.idempotent_hint is True
        assert annotations.destructive_hint is False and annotations.open_world_hint is False
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    return tools


async def call_checked(client: Client, tools: dict[str, Tool], name: str, arguments: dict[str, Any]) -> CallToolResult:
    """Call a tool expecting success; its structured result must validate against its output schema."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, text_of(result)
    assert tools[name].output_schema is not None
    jsonschema.validate(result.structured_content, tools[name].output_schema)
    assert text_of(result)
    return result


async def exercise_every_tool(client: Client) -> dict[str, CallToolResult]:
    """List the tools and call each one; every hit is headed by its citation id in the text."""
    tools = await list_checked_tools(client)
    results = {name: await call_checked(client, tools, name, arguments) for name, arguments in CALLS}
    for name in ("hybrid_search", "vector_search", "keyword_search"):
        result = results[name]
        assert result.structured_content is not None and result.structured_content["hits"]
        for hit in result.structured_content["hits"]:
            assert f"[{hit['citation']['id']}]\n" in text_of(result)
    (first, *_) = results["keyword_search"].structured_content["hits"]  # type: ignore[index]
    assert first["citation"]["doc_id"] == "engineering/deploy-errors"
    assert "[acme:policies/travel#1]" in text_of(results["get_document"])
    assert "Cite as [sql:company:" in text_of(results["sql_query"])
    return results


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))
