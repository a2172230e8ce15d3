"""What ``ragmcp install`` says about the index: how to build it, or that it already holds the folders."""

from __future__ import annotations

from pathlib import Path

from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.helpers import write_doc
from tests.mcp_server.install.test_install import install


def test_install_says_whether_the_index_already_holds_the_folders(tmp_path: Path) -> None:
    notes, manuals = tmp_path / "notes", tmp_path / "manuals"
    write_doc(notes, "compost.md", "Compost", "# Compost\n\nCooked food goes in the green bin.")
    write_doc(manuals, "pump.md", "Pump", "# Pump\n\nThe pump runs at 3 bar.")
    data = tmp_path / "data"
    args = ("claude-desktop", "--corpus", str(notes), "--data-dir", str(data), "--print")

    before = install(tmp_path / "home", *args)
    assert before.returncode == 0, before.stderr
    assert "to build the index before the first start" in before.stderr

    ingest(Settings(data_dir=data, corpora=[notes]))
    built = install(tmp_path / "home", *args)
    assert "to build the index before the first start" not in built.stderr
    assert "the index already holds these corpora; the server brings it up to date when it starts" in built.stderr

    more = install(tmp_path / "home", *args, "--corpus", str(manuals))
    assert f"the index does not hold {manuals} yet; to index it before the first start: " in more.stderr
