"""What every group of settings shares: read from ``RAGMCP_*`` variables under the group's prefix,
unknown names refused, defaults validated like any value, and each field's variable known by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "RAGMCP_"


def group_config(env_prefix: str) -> SettingsConfigDict:
    """A group's configuration: its variables are ``env_prefix`` + the field name, or a field's own alias."""
    return SettingsConfigDict(env_prefix=env_prefix, extra="forbid", validate_default=True, populate_by_name=True)


def expand_home(value: Any) -> Any:
    """``~`` in a path setting means the home folder (a host config's env is not run by a shell)."""
    if isinstance(value, list):
        return [p.expanduser() if isinstance(p, Path) else p for p in value]
    return value.expanduser() if isinstance(value, Path) else value


class SettingsGroup(BaseSettings):
    """A group of settings: a small pydantic-settings class that reads its own variables."""

    model_config = group_config(PREFIX)

    def __init__(self, **values: Any) -> None:
        """Read and check the group; a refusal names the setting as the user knows it (``rerank_timeout_s``)."""
        try:
            super().__init__(**values)
        except ValidationError as e:
            named = [self._named(error) for error in e.errors()]
            raise ValidationError.from_exception_data("Settings", named) from None

    @classmethod
    def _named(cls, error: ErrorDetails) -> InitErrorDetails:
        """``error`` with its field (or the field's variable, when read by alias) given by setting name."""
        names = {}
        for field, env in cls.env_names().items():
            names[field] = names[env] = names[env.lower()] = env.removeprefix(PREFIX).lower()
        loc = error["loc"]
        if loc and str(loc[0]) in names:
            loc = (names[str(loc[0])], *loc[1:])
        named = InitErrorDetails(type=error["type"], loc=loc, input=error["input"])
        if "ctx" in error:
            named["ctx"] = error["ctx"]
        return named

    @classmethod
    def env_names(cls) -> dict[str, str]:
        """Each field's environment variable, e.g. ``{"timeout_s": "RAGMCP_RERANK_TIMEOUT_S"}``."""
        prefix = cls.model_config.get("env_prefix", PREFIX)
        return {
            name: (info.validation_alias if isinstance(info.validation_alias, str) else prefix + name).upper()
            for name, info in cls.model_fields.items()
        }
