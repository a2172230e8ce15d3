"""Shared helpers for the benchmarks: locating public data and turning BEIR corpora into corpus folders."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent


def _bench_data() -> Path:
    """``$BENCH_DATA``, else the nearest ``shared/bench-data`` beside the checkout or one of its parents."""
    if "BENCH_DATA" in os.environ:
        return Path(os.environ["BENCH_DATA"])
    for parent in REPO.parents:
        if (parent / "shared" / "bench-data").is_dir():
            return parent / "shared" / "bench-data"
    return REPO.parent / "shared" / "bench-data"


BENCH_DATA = _bench_data()
CACHE = REPO / "bench" / ".cache"
DEMO_DATABASE = REPO / "corpora" / "database"
"""The bundled demo database's sources: what ``RAGMCP_DATABASE`` names for SQL beside a benchmark corpus."""


def read_jsonl(path: Path) -> Iterator[dict[str, str]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (with header) as {query_id: {doc_id: relevance}}."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as f:
        next(f)
        for line in f:
            query_id, doc_id, score = line.rstrip("\n").split("\t")
            qrels.setdefault(query_id, {})[doc_id] = int(score)
    return qrels


def write_beir_corpus_folder(
    corpus_jsonl: Path, folder: Path, name: str, description: str, language: str | None = None
) -> int:
    """One Markdown file per BEIR document (doc_id = BEIR _id, title in front matter); returns the count."""
    folder.mkdir(parents=True, exist_ok=True)
    language_line = f'language = "{language}"\n' if language else ""
    (folder / "corpus.toml").write_text(
        f'name = "{name}"\ndescription = """{description}"""\n{language_line}', encoding="utf-8"
    )
    count = 0
    for doc in read_jsonl(corpus_jsonl):
        front = yaml.safe_dump({"title": doc["title"] or doc["_id"]}, allow_unicode=True, width=10_000)
        (folder / f"{doc['_id']}.md").write_text(f"---\n{front}---\n{doc['text']}\n", encoding="utf-8")
        count += 1
    return count


def seed_embedding_cache(target: Path, seed: Path) -> bool:
    """Copy the embedding cache ``seed`` to ``target`` when there is none yet: the same texts, embedded once.

    The cache is keyed by model and text, so another index of the same texts (another
    benchmark's) saves their embedding time. Returns whether it was copied.
    """
    if not seed.is_file() or target.exists():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(seed, target)
    log(f"seeded the embedding cache from {seed}")
    return True


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
