"""Helpers the tests share: writing corpus documents and settings for a temporary index."""

from __future__ import annotations

import os
from pathlib import Path

from mcp_server.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"


def write_doc(folder: Path, relpath: str, title: str, body: str, **front: str) -> Path:
    """Write a Markdown document with front matter into a corpus folder."""
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = "".join(f"{k}: {v}\n" for k, v in {"title": title, **front}.items())
    path.write_text(f"---\n{meta}---\n{body}\n", encoding="utf-8")
    return path


def make_settings(data_dir: Path, *corpora: Path) -> Settings:
    return Settings(data_dir=data_dir, corpora=list(corpora))


def subprocess_env(settings: Settings) -> dict[str, str]:
    """The environment for a ``python -m mcp_server`` child of this checkout serving ``settings``."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    return {**inherited, **settings.to_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
