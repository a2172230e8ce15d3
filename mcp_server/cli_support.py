"""Helpers shared by the ``ragmcp`` command groups: settings from flags, and errors as clean CLI errors."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from mcp_server.errors import RetrievalError
from mcp_server.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


def load_settings(**overrides: Any) -> Settings:
    try:
        return Settings.from_names(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as e:  # listed without the input, which would quote every setting (API keys too)
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'settings'}: {error['msg']}" for error in e.errors(include_input=False)
        )
        raise click.ClickException(f"invalid settings: {problems}") from e


def with_overrides(settings: Settings, **overrides: Any) -> Settings:
    """``settings`` with the non-None ``overrides`` applied, validated again."""
    return load_settings(**{**settings.explicit(), **overrides})


def handle_errors(func: F) -> F:
    """Turn the library's errors into a clean CLI error (exit 1, message on stderr)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RetrievalError as e:
            raise click.ClickException(str(e)) from e

    return wrapper  # type: ignore[return-value]
