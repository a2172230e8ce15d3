"""The audit middleware's pure parts (its lines over real HTTP are checked in test_auth.py)."""

from __future__ import annotations

from mcp_server.team.audit import ARGUMENT_CHARS, _clipped


def test_long_string_arguments_are_cut_and_marked() -> None:
    long = "y" * (ARGUMENT_CHARS + 5)
    clipped = _clipped({"sql": long, "params": [long, 3], "top_k": 5})
    assert clipped["sql"] == "y" * ARGUMENT_CHARS + "…[5 more characters]"
    assert clipped["params"] == [clipped["sql"], 3] and clipped["top_k"] == 5
