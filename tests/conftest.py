"""Shared fixtures: corpora built in temporary directories, settings pointing at them, opened retrievers."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.helpers import FIXTURES, make_settings, write_doc


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """A three-document corpus in tmp_path, safe to modify."""
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "corpus.toml").write_text('name = "tiny"\ndescription = "A tiny test corpus."\n', encoding="utf-8")
    write_doc(folder, "alpha.md", "Alpha", "# Alpha\n\nThe alpha reactor runs on zebraword fuel at 451 kelvin.")
    write_doc(folder, "beta.md", "Beta", "# Beta\n\nBeta teams meet every Tuesday to review the quarterly roadmap.")
    write_doc(folder, "gamma.md", "Gamma", "# Gamma\n\nGamma rays are stopped by thick lead shielding.")
    return folder


@pytest.fixture
def tiny_settings(tmp_path: Path, tiny_corpus: Path) -> Settings:
    return make_settings(tmp_path / "data", tiny_corpus)


@pytest.fixture(scope="session")
def acme_index(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The fixture corpus tests/fixtures/corpora/acme, ingested once per test session (read-only use)."""
    root = tmp_path_factory.mktemp("acme")
    corpus = root / "acme"
    shutil.copytree(FIXTURES / "corpora" / "acme", corpus)
    settings = make_settings(root / "data", corpus)
    ingest(settings)
    return settings


@pytest.fixture(scope="session")
def acme(acme_index: Settings) -> Iterator[Retriever]:
    retriever = Retriever.open(acme_index)
    yield retriever
    retriever.close()
