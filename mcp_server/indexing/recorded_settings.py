"""The settings an index was built with, and what an ingestion with other settings does about them.

An index records the values of :data:`~mcp_server.settings.INDEX_SETTINGS` it was built with
(in its manifest). An ingestion that brings it up to date uses those values, whatever its own
environment says — a desktop host's server started without the ``RAGMCP_*`` variables a shell
had set must not undo what that shell indexed — and says so in one line when they differ.
``ragmcp ingest --rebuild`` is how new values are recorded: every file is then read again under them.
"""

from __future__ import annotations

from typing import Any

from mcp_server.settings import Settings, env_value


def setting_assignment(name: str, value: Any) -> str:
    """``RAGMCP_NAME=value``, as a user would type it (``50`` rather than ``50.0``)."""
    return f"RAGMCP_{name.upper()}={env_value(value)}"


def adopt_recorded(settings: Settings, recorded: dict[str, Any] | None) -> tuple[Settings, str | None]:
    """``settings`` with the index's recorded values, and the line that says what differed (None: nothing)."""
    if recorded is None:  # an index from before settings were recorded: it records these from now on
        return settings, None
    own = settings.index_settings()
    differing = sorted(name for name, value in recorded.items() if name in own and own[name] != value)
    if not differing:
        return settings, None
    built = " ".join(setting_assignment(name, recorded[name]) for name in differing)
    here = " ".join(setting_assignment(name, own[name]) for name in differing)
    note = (
        f"the index was built with {built}, this process has {here}: indexing with the index's settings, so "
        f"nothing indexed under them is undone. To index with this process's settings instead, re-read every "
        f"file under them: {here} ragmcp ingest --rebuild"
    )
    return settings.with_index_settings(recorded), note
