"""A parser's error message, shown in a file's skip line, carries no heap address of a Python object."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.documents import reader_process
from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.documents.limits import FileInput
from mcp_server.errors import IngestError


def test_a_parsers_message_loses_its_object_addresses_and_keeps_its_offsets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken_parser(*args: object) -> None:
        raise ValueError(f"cannot use {object()!r} for <Element body at 0x7f3a2b1c0d90>; bad xref at 0x0001a2f0")

    monkeypatch.setattr(reader_process, "extract", broken_parser)
    with pytest.raises(IngestError) as refused:
        reader_process._run_guarded(FileInput(b"", tmp_path / "report.md"), ChunkingOptions(), None)
    assert str(refused.value) == (
        f"{tmp_path / 'report.md'} could not be read (ValueError: cannot use <object object> for <Element body>; "
        "bad xref at 0x0001a2f0)."
    )
