"""Reflection verdicts: strict JSON in, a Verdict or an error message that says what to fix."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from client_agent.errors import ReflectionError
from client_agent.reflection import (
    MAX_ITEMS,
    REFLECTION_INSTRUCTIONS,
    REFLECTION_SCHEMA,
    Verdict,
    parse_verdict,
)

# Non-empty strings without surrounding whitespace (the parser strips it).
items = st.text(min_size=1, max_size=60).map(str.strip).filter(bool)
verdicts = st.builds(
    lambda sufficient, missing, queries: {"sufficient": sufficient, "missing": missing, "next_queries": queries},
    st.booleans(),
    st.lists(items, max_size=MAX_ITEMS),
    st.lists(items, max_size=MAX_ITEMS),
)


@given(verdicts, st.sampled_from(["{}", "```json\n{}\n```", "```\n{}\n```", "  \n{}\n\t", "```JSON\n{}```"]))
def test_valid_objects_round_trip_with_or_without_a_fence(verdict: dict[str, object], wrapper: str) -> None:
    raw = wrapper.replace("{}", json.dumps(verdict, ensure_ascii=False, indent=1))
    parsed = parse_verdict(raw)
    assert parsed.model_dump() == verdict
    assert parse_verdict(parsed.model_dump_json()) == parsed


@given(verdicts)
def test_the_published_schema_accepts_what_the_parser_accepts(verdict: dict[str, object]) -> None:
    jsonschema.validate(verdict, REFLECTION_SCHEMA)
    parse_verdict(json.dumps(verdict))


@given(verdicts, st.sampled_from(["confidence", "reasoning", "answer"]), st.integers() | st.text())
def test_any_extra_field_is_rejected_by_parser_and_schema(verdict: dict[str, object], key: str, value: object) -> None:
    raw = json.dumps({**verdict, key: value})
    with pytest.raises(ReflectionError, match=f'"{key}" is not an allowed field'):
        parse_verdict(raw)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(raw), REFLECTION_SCHEMA)


@given(verdicts, st.sampled_from(["sufficient", "missing", "next_queries"]))
def test_any_missing_field_is_named(verdict: dict[str, object], field: str) -> None:
    del verdict[field]
    with pytest.raises(ReflectionError, match=f'the required field "{field}" is missing'):
        parse_verdict(json.dumps(verdict))


@given(st.text(max_size=80))
def test_arbitrary_text_either_parses_to_a_verdict_or_raises_reflection_error(raw: str) -> None:
    try:
        verdict = parse_verdict(raw)
    except ReflectionError as exc:
        assert str(exc)
    else:
        assert isinstance(verdict, Verdict)


NOT_BOOLEAN = '"sufficient" must be a JSON boolean true or false,'


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "the reply is empty"),
        ('{"sufficient": true, "missing": [', "not valid JSON: Expecting value"),
        ("{'sufficient': true}", "not valid JSON: Expecting property name enclosed in double quotes"),
        ('Here is my verdict: {"sufficient": true, "missing": [], "next_queries": []}', "starts with 'Here is my"),
        ('{"sufficient": true, "missing": [], "next_queries": []}\nThat is all.', "text after the JSON object"),
        ('{"sufficient": true, "missing": [], "next_queries": []} {"sufficient": false}', "text after the JSON object"),
        ('[{"sufficient": true, "missing": [], "next_queries": []}]', "the reply is a JSON array, not an object"),
        ('"sufficient"', "the reply is a JSON string, not an object"),
        ('{"sufficient": "true", "missing": [], "next_queries": []}', f'{NOT_BOOLEAN} not the string "true"'),
        ('{"sufficient": 1, "missing": [], "next_queries": []}', f"{NOT_BOOLEAN} not the number 1"),
        ('{"sufficient": null, "missing": [], "next_queries": []}', f"{NOT_BOOLEAN} not the null"),
        ('{"sufficient": false, "missing": "bonus", "next_queries": []}', '"missing" must be a JSON array of strings, not'),
        ('{"sufficient": false, "missing": [3], "next_queries": []}', '"missing" item 1 must be a string, not the number 3'),
        ('{"sufficient": false, "missing": ["a", "  "], "next_queries": []}', '"missing" item 2 is an empty string'),
        ('{"sufficient": false, "missing": [], "next_queries": ["q", ""]}', '"next_queries" item 2 is an empty string'),
        ('{"sufficient": true, "sufficient": false, "missing": [], "next_queries": []}', '"sufficient" appears more than'),
        ("```json\n{\"sufficient\": true}\n``` and more", "starts with '```json"),
    ],
)
def test_malformed_replies_fail_with_a_specific_message(raw: str, message: str) -> None:
    with pytest.raises(ReflectionError) as info:
        parse_verdict(raw)
    assert message in str(info.value)


def test_every_problem_of_one_reply_is_reported_together() -> None:
    with pytest.raises(ReflectionError) as info:
        parse_verdict('{"sufficient": "no", "missing": [""], "extra": 1}')
    message = str(info.value)
    for part in ('"sufficient" must be a JSON boolean', '"missing" item 1 is an empty string',
                 'the required field "next_queries" is missing', '"extra" is not an allowed field'):
        assert part in message


def test_lists_are_capped() -> None:
    queries = [f"query {n}" for n in range(MAX_ITEMS + 1)]
    with pytest.raises(ReflectionError, match=f'"next_queries" has more than {MAX_ITEMS} items'):
        parse_verdict(json.dumps({"sufficient": False, "missing": ["x"], "next_queries": queries}))


def test_items_are_stripped() -> None:
    verdict = parse_verdict('{"sufficient": false, "missing": ["  bonus rate  "], "next_queries": ["\\tbonus S rating\\n"]}')
    assert verdict.missing == ["bonus rate"]
    assert verdict.next_queries == ["bonus S rating"]


def test_queries_of_a_sufficient_verdict_are_accepted_but_not_run() -> None:
    sufficient = parse_verdict('{"sufficient": true, "missing": [], "next_queries": ["x3 battery"]}')
    insufficient = parse_verdict('{"sufficient": false, "missing": ["battery"], "next_queries": ["x3 battery"]}')
    assert sufficient.next_queries == ["x3 battery"]
    assert sufficient.queries_to_run == []
    assert insufficient.queries_to_run == ["x3 battery"]


def test_instructions_state_the_contract() -> None:
    assert '"sufficient"' in REFLECTION_INSTRUCTIONS and '"next_queries"' in REFLECTION_INSTRUCTIONS
    assert "every part of the question" in REFLECTION_INSTRUCTIONS
    assert json.dumps(REFLECTION_SCHEMA, separators=(",", ":")) in REFLECTION_INSTRUCTIONS
    assert REFLECTION_SCHEMA["additionalProperties"] is False
    assert sorted(REFLECTION_SCHEMA["required"]) == ["missing", "next_queries", "sufficient"]
