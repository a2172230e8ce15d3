"""The reflection verdict: strict JSON saying whether the evidence answers the question, and what to search next.

After evidence arrives, the back-end is asked (:data:`REFLECTION_INSTRUCTIONS`) for exactly one
JSON object ``{"sufficient": bool, "missing": [...], "next_queries": [...]}``, described by
:data:`REFLECTION_SCHEMA`. :func:`parse_verdict` accepts that object alone — optionally inside
one fenced code block (```` ```json ````) and surrounding whitespace — and nothing looser: no
prose around it, no array, no missing or extra fields, no duplicate keys, no strings where
booleans belong (``"true"``), no empty strings, at most :data:`MAX_ITEMS` items per list. A
rejected reply raises :class:`ReflectionError` whose message says exactly what was wrong, so
the retry prompt can quote it.

``sufficient: true`` with non-empty ``next_queries`` is accepted (the model may note what it
would look up next) but the queries are ignored: :attr:`Verdict.queries_to_run` is empty for a
sufficient verdict. ``sufficient: false`` with empty lists is accepted too: it means the model
has nothing further to search for, which the loop treats as insufficient evidence.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError
from pydantic_core import ErrorDetails

from client_agent.errors import ReflectionError

MAX_ITEMS = 8
"""Most entries ``missing`` or ``next_queries`` may hold."""
MAX_ITEM_CHARS = 300

_Item = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_ITEM_CHARS)]


class Verdict(BaseModel):
    """Whether the evidence answers every part of the question; if not, what is missing and where to look."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    sufficient: bool = Field(
        description="true only if every part of the question is answered by citable text in the evidence."
    )
    missing: list[_Item] = Field(
        max_length=MAX_ITEMS, description="Each specific fact still needed to answer the question; [] if none."
    )
    next_queries: list[_Item] = Field(
        max_length=MAX_ITEMS,
        description="Concrete new search queries for the missing facts (not repeats of earlier queries); [] if none.",
    )

    @property
    def queries_to_run(self) -> list[str]:
        """The follow-up queries the loop should run: none when the evidence is sufficient."""
        return [] if self.sufficient else list(self.next_queries)


REFLECTION_SCHEMA: dict[str, Any] = Verdict.model_json_schema()
"""JSON schema of the verdict (for prompts and tool definitions)."""

REFLECTION_INSTRUCTIONS = f"""\
Reflect on the evidence gathered so far before answering. Reply with exactly one JSON object and \
nothing else — no prose, no explanation, no second object:
{{"sufficient": <true|false>, "missing": [<string>, ...], "next_queries": [<string>, ...]}}

- "sufficient": true only if every part of the question is answered by the evidence, with text \
you could cite for each fact. If any part is unanswered, answered only by your own knowledge, or \
contradicted between sources without a clear newer source, it is false.
- "missing": each specific fact that is still needed, one per item (for example "annual leave \
days after 5 years of service", not "more information"). [] when sufficient.
- "next_queries": concrete search queries that would find the missing facts — use the names, \
codes and terms the documents are likely to use. Do not repeat or rephrase slightly a query \
already made. [] when sufficient or when nothing more can be searched for.

All three fields are required; no other fields are allowed. Use JSON booleans (true/false, not \
strings) and non-empty strings; at most {MAX_ITEMS} items per list. The JSON schema:
{json.dumps(REFLECTION_SCHEMA, separators=(",", ":"))}
"""
"""The prompt text asking a model for its verdict."""

_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(?P<body>.*?)\n?```\Z", re.DOTALL | re.IGNORECASE)
_FIELDS = tuple(Verdict.model_fields)


def parse_verdict(raw: str) -> Verdict:
    """The :class:`Verdict` in ``raw``, or :class:`ReflectionError` saying exactly what is wrong with it."""
    body = _unfenced(raw.strip())
    if not body:
        raise ReflectionError(f"the reply is empty; reply with one JSON object with the fields {_field_list()}")
    try:
        value = json.loads(body, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as exc:
        raise ReflectionError(_decode_problem(body, exc)) from None
    if not isinstance(value, dict):
        raise ReflectionError(
            f"the reply is a JSON {_json_type(value)}, not an object; reply with one JSON object with the fields "
            f"{_field_list()}"
        )
    try:
        return Verdict.model_validate(value)
    except ValidationError as exc:
        raise ReflectionError("; ".join(_field_problem(error) for error in exc.errors())) from None


def _unfenced(text: str) -> str:
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ReflectionError(f'the key "{key}" appears more than once; give each field exactly once')
        result[key] = value
    return result


def _decode_problem(body: str, exc: json.JSONDecodeError) -> str:
    if not body.startswith(("{", "[")):
        return (
            f"the reply must be only a JSON object starting with '{{', but it starts with {body[:40]!r}; "
            "send the object alone, without prose or explanations"
        )
    if exc.msg == "Extra data":
        return (
            f"the reply has text after the JSON object (from character {exc.pos}: {body[exc.pos : exc.pos + 40]!r}); "
            "send exactly one object and nothing after it"
        )
    return f"the reply is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"


_PROBLEMS = {
    "missing": "the required field {location} is missing",
    "extra_forbidden": "{location} is not an allowed field (the only fields are {fields})",
    "bool_type": "{location} must be a JSON boolean true or false, not the {type} {value}",
    "list_type": "{location} must be a JSON array of strings, not the {type} {value}",
    "string_type": "{location} must be a string, not the {type} {value}",
    "string_too_short": "{location} is an empty string; remove it or say what is meant",
    "string_too_long": "{location} is longer than {max_chars} characters; keep each item short and specific",
    "too_long": "{location} has more than {max_items} items; keep the {max_items} most important",
}
"""What to tell the model for each kind of pydantic validation error."""


def _field_problem(error: ErrorDetails) -> str:
    location = f'"{error["loc"][0]}"' + "".join(f" item {int(part) + 1}" for part in error["loc"][1:])
    given = error.get("input")
    return _PROBLEMS.get(error["type"], "{location}: {msg}").format(
        location=location, fields=_field_list(), type=_json_type(given), value=_shown(given),
        max_chars=MAX_ITEM_CHARS, max_items=MAX_ITEMS, msg=error["msg"],
    )


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _field_list() -> str:
    return ", ".join(f'"{name}"' for name in _FIELDS)
