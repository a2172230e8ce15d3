"""Tool arguments checked before a call: one clear line per bad argument instead of a validation dump.

:class:`ArgumentCheck` is server middleware. For a ``tools/call`` it validates the arguments
against the tool function's signature (as the SDK would, JSON-in-a-string included) and, when
they do not fit, answers with a tool error such as::

    Invalid arguments for hybrid_search:
    - top_k: expected an integer, got 'many'
    - filters: unknown key 'tagz'; the keys are category, tags, date_from, date_to, source_prefix

Unknown argument names are refused the same way, naming the ones the tool takes. The check
is strict, as the published JSON schemas are: a number or a boolean must be one, not a string
that reads as one (``"top_k": "5"`` is refused, ``- top_k: expected an integer, got '5'``,
where pydantic alone would coerce it), and ``true`` is not an integer. As in JSON Schema,
``5.0`` is an integer; dates are ISO strings, as JSON has no dates. Valid arguments go on to
the SDK, which validates them again and calls the tool.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from mcp_server.surface.sdk import (
    CallNext,
    CallToolResult,
    FuncMetadata,
    HandlerResult,
    ServerRequestContext,
    TextContent,
    func_metadata,
)

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
VALUE_CHARS = 60
"""Longest rendering of a rejected value quoted back."""
_SCALARS: dict[Any, str] = {
    str: "a string", int: "an integer", float: "a number", bool: "true or false", date: "a date (YYYY-MM-DD)",
    type(None): "null",
}  # fmt: skip
_PLURALS: dict[Any, str] = {
    str: "strings", int: "integers", float: "numbers", bool: "booleans", date: "dates (YYYY-MM-DD)",
    type(None): "nulls",
}  # fmt: skip


class ArgumentCheck:
    """Server middleware refusing a tool call whose arguments do not fit the tool, saying what each expects."""

    def __init__(self) -> None:
        self._tools: dict[str, FuncMetadata] = {}

    def add(self, name: str, function: Callable[..., Any]) -> None:
        """Check the calls of tool ``name``, whose function is ``function``."""
        self._tools[name] = func_metadata(function)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        params = ctx.params or {} if ctx.method == "tools/call" else {}
        metadata = self._tools.get(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments") or {}
        if metadata is not None and isinstance(arguments, dict):
            problems = argument_problems(metadata, arguments)
            if problems:
                text = f"Invalid arguments for {params['name']}:\n" + "\n".join(f"- {line}" for line in problems)
                return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return await call_next(ctx)


def argument_problems(metadata: FuncMetadata, arguments: dict[str, Any]) -> list[str]:
    """One line per argument that does not fit the signature behind ``metadata``; empty when all fit."""
    fields = metadata.arg_model.model_fields
    problems = [
        f"unknown argument {name!r}; this tool takes {', '.join(fields)}" for name in arguments if name not in fields
    ]
    parsed = metadata.pre_parse_json(arguments)  # JSON in a string, as some hosts send a list or an object
    known = {name: _as_json(value) for name, value in parsed.items() if name in fields}
    try:  # validated as the JSON it came as, strictly: no string is taken for a number or a boolean
        metadata.arg_model.model_validate_json(to_json(known), strict=True)
    except ValidationError as exc:
        seen: set[str] = set()
        for error in exc.errors(include_url=False):
            line = _describe(error, fields[str(error["loc"][0])].annotation, parsed)
            if line.split(":")[0] not in seen:  # a union reports once per member: keep the first
                seen.add(line.split(":")[0])
                problems.append(line)
    return problems


def _as_json(value: Any) -> Any:
    """``value`` as its strict check should see it: a float that is a whole number (``5.0``) as an int, since JSON
    Schema counts it an integer, and a lone surrogate, which no UTF-8 JSON text holds, as U+FFFD (a string's
    length stays the same; what the tool receives is the value as sent)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_as_json(key): _as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_json(item) for item in value]
    return value


def _describe(error: Any, annotation: Any, arguments: dict[str, Any]) -> str:
    """The line for one validation error: which argument (or key of an object argument), what it expects."""
    loc = error["loc"]
    name = str(loc[0])
    if error["type"] == "missing":
        return f"{name}: missing; expected {expected(annotation)}"
    where = ".".join(str(part) for part in loc)
    if error["type"] == "too_long":  # a list or a text over its documented maximum
        unit = "items" if error["ctx"].get("field_type") == "List" else "characters"
        return f"{where}: at most {error['ctx']['max_length']} {unit}"
    model = _model_of(annotation)
    if model is not None and len(loc) > 1 and isinstance(loc[1], str):
        keys = ", ".join(model.model_fields)
        if error["type"] == "extra_forbidden":
            return f"{name}: unknown key {loc[1]!r}; the keys are {keys}"
        if loc[1] in model.model_fields:
            value = (arguments.get(name) or {}).get(loc[1])
            return f"{name}.{loc[1]}: expected {expected(model.model_fields[loc[1]].annotation)}, got {_quoted(value)}"
    return f"{name}: expected {expected(annotation)}, got {_quoted(arguments.get(name))}"


def expected(annotation: Any) -> str:
    """What a value of type ``annotation`` looks like, in words: 'an integer or null', 'a list of strings'."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return expected(args[0])
    if origin in (Union, types.UnionType):
        words = [expected(member) for member in args if member is not type(None)]
        either = ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]
        return either + (" (or null)" if type(None) in args else "")
    if origin is list:
        return f"a list of {_plural(args[0])}" if args else "a list"
    model = _model_of(annotation)
    if model is not None:
        return f"an object with any of the keys {', '.join(model.model_fields)}"
    return _SCALARS.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _plural(annotation: Any) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        words = [_plural(member) for member in args]
        return ", ".join(words[:-1]) + " or " + words[-1]
    return _PLURALS.get(annotation) or expected(annotation)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model ``annotation`` is (or is optionally), if any."""
    candidates = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    models = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
    return models[0] if models else None


def _quoted(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + "…"
