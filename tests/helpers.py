"""Helpers the tests share: writing corpus documents, settings for a temporary index, and the
demo database's sources read with the csv module (independently of the code that builds it), and the
default embedding model's token count of a document's chunks."""

from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp_server.documents.window import embedding_text
from mcp_server.embedding.loading import load_embedder
from mcp_server.settings.embedding import ENGLISH_MODEL
from mcp_server.models import DocumentView
from mcp_server.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"
DEMO_DATABASE_SOURCES = Path(__file__).resolve().parents[1] / "corpora" / "database"


def write_doc(folder: Path, relpath: str, title: str, body: str, **front: str) -> Path:
    """Write a Markdown document with front matter into a corpus folder."""
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = "".join(f"{k}: {v}\n" for k, v in {"title": title, **front}.items())
    path.write_text(f"---\n{meta}---\n{body}\n", encoding="utf-8")
    return path


def corpus_folder(root: Path, name: str, description: str) -> Path:
    """A new, empty corpus folder ``root/name`` whose corpus.toml names it and says what it holds."""
    folder = root / name
    folder.mkdir()
    (folder / "corpus.toml").write_text(f"name = {name!r}\ndescription = {description!r}\n", encoding="utf-8")
    return folder


def make_settings(data_dir: Path, *corpora: Path) -> Settings:
    return Settings(data_dir=data_dir, corpora=list(corpora))


def subprocess_env(settings: Settings) -> dict[str, str]:
    """The environment for a ``python -m mcp_server`` child of this checkout serving ``settings``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    return {**inherited, **settings.to_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def demo_tables(sources: Path = DEMO_DATABASE_SOURCES) -> list[dict[str, Any]]:
    """The table entries of the demo database's schema.json, in creation order."""
    tables: list[dict[str, Any]] = json.loads((sources / "schema.json").read_text(encoding="utf-8"))["tables"]
    return tables


def demo_csv(table: str, sources: Path = DEMO_DATABASE_SOURCES) -> list[dict[str, str]]:
    """One demo table's rows as the csv module reads them: strings, '' for NULL."""
    with (sources / f"{table}.csv").open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def demo_row_counts(sources: Path = DEMO_DATABASE_SOURCES) -> dict[str, int]:
    """Rows per demo table, in creation order, counted in the CSV files."""
    return {table["name"]: len(demo_csv(table["name"], sources)) for table in demo_tables(sources)}


def wait_for(condition: Callable[[], bool], timeout_s: float, poll_s: float = 0.1) -> bool:
    """Whether ``condition`` came true within ``timeout_s`` (checked every ``poll_s``)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return True


def process_stat(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name: state first, then ppid, ..."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def is_running(pid: int) -> bool:
    """Whether process ``pid`` is running (a zombie, exited but not yet reaped, is not)."""
    try:
        return process_stat(pid)[0] != "Z"
    except FileNotFoundError:
        return False


def niceness(pid: int) -> int:
    """The ``nice`` value of process ``pid``."""
    return int(process_stat(pid)[16])


def embedded_lengths(view: DocumentView) -> list[int]:
    """The default model's token count of each chunk's embedded text (title and chunk, special tokens included)."""
    embedder = load_embedder(ENGLISH_MODEL)
    assert embedder.count_tokens is not None
    return embedder.count_tokens([embedding_text(view.title, view.text[c.char_start : c.char_end]) for c in view.chunks])
