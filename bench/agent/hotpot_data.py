"""HotpotQA for the agent benchmark: questions with their gold paragraphs, and a pooled, indexed corpus.

Two sets (see ``../shared/bench-data/README.md``):

- ``dev500``: 500 dev questions; the corpus is the published pooled view
  (``hotpotqa-dev500/beir/corpus.jsonl``, 4,858 paragraphs, one per distinct title).
- ``train100``: 100 train questions (the tuning set); its corpus is pooled here the same
  way from the questions' own contexts (994 distinct titles).

Every paragraph becomes one Markdown document (title in front matter) of a corpus named
``wiki``, indexed with the product's own ingestion into ``bench/.cache/agent/hotpotqa-<set>/``
beside an empty SQLite database (the knowledge is the paragraphs alone). Re-running reuses
the index: ingestion is incremental and embeddings are cached; dev500's first build takes
its embeddings from bench/retrieval/hotpotqa.py's index when that exists.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import (
    BENCH_DATA,
    CACHE,
    log,
    read_qrels,
    seed_embedding_cache,
    write_beir_corpus_folder,
)

from mcp_server.indexing.ingest import ingest
from mcp_server.progress import stderr_progress
from mcp_server.settings import Settings

CORPUS = "wiki"
DESCRIPTION = (
    "Encyclopedia: {count} English Wikipedia paragraphs, one per article, about people, places, films, "
    "music, books, sport, organisations and events. Use it for general-knowledge questions about them."
)
SETS = ("dev500", "train100")
RETRIEVAL_CACHE_SEED = CACHE / "retrieval" / "hotpotqa" / "data" / "embedding-cache.sqlite"
"""The retrieval benchmark's index of the same paragraphs (bench/retrieval/hotpotqa.py): its embeddings are reused."""


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: list[str]
    gold: frozenset[str]
    """doc ids of the two supporting paragraphs."""
    kind: str | None
    """``bridge`` or ``comparison`` where the source says (train100 only)."""


@dataclass(frozen=True)
class HotpotSet:
    name: str
    questions: list[Question]
    settings: Settings


def load_set(name: str) -> HotpotSet:
    """The questions of set ``name`` and the settings of its (brought up to date) index."""
    if name not in SETS:
        raise ValueError(f"unknown set {name!r}; use one of {', '.join(SETS)}")
    root = CACHE / "agent" / f"hotpotqa-{name}"
    corpus_dir = root / "corpus"
    if name == "dev500":
        questions, count = _dev500(corpus_dir)
    else:
        questions, count = _train100(corpus_dir, root / "corpus.jsonl")
    database = root / "empty.sqlite"
    if not database.exists():
        sqlite3.connect(database).close()
    settings = Settings(data_dir=root / "data", corpora=[corpus_dir], database=database)
    if name == "dev500":
        seed_embedding_cache(settings.embedding_cache_path, RETRIEVAL_CACHE_SEED)
    with stderr_progress() as progress:
        report = ingest(settings, progress=progress)
    if report.chunks_embedded:
        log(f"indexed {count} paragraphs ({report.chunks_embedded} chunks embedded)")
    return HotpotSet(name, questions, settings)


def _dev500(corpus_dir: Path) -> tuple[list[Question], int]:
    folder = BENCH_DATA / "hotpotqa-dev500"
    count = write_beir_corpus_folder(folder / "beir" / "corpus.jsonl", corpus_dir, CORPUS, _description(4858))
    qrels = read_qrels(folder / "beir" / "qrels" / "test.tsv")
    questions = [
        Question(row["id"], row["question"], list(row["answers"]), frozenset(qrels[row["id"]]), None)
        for row in _rows(folder / "hotpotqa_dev500.jsonl")
    ]
    return questions, count


def _train100(corpus_dir: Path, pooled: Path) -> tuple[list[Question], int]:
    rows = list(_rows(BENCH_DATA / "hotpotqa-train100" / "hotpotqa_train100.jsonl"))
    ids: dict[str, str] = {}
    lines = []
    for row in rows:
        for context in row["contexts"]:
            if context["title"] not in ids:
                ids[context["title"]] = f"tr{len(ids):05d}"
                lines.append(json.dumps({"_id": ids[context["title"]], "title": context["title"],
                                         "text": context["text"]}, ensure_ascii=False))
    pooled.parent.mkdir(parents=True, exist_ok=True)
    pooled.write_text("\n".join(lines) + "\n", encoding="utf-8")
    count = write_beir_corpus_folder(pooled, corpus_dir, CORPUS, _description(len(ids)))
    questions = [
        Question(row["id"], row["question"], [row["answer"]],
                 frozenset(ids[t] for t in row["supporting_titles"]), row.get("type"))
        for row in rows
    ]
    return questions, count


def _description(count: int) -> str:
    return DESCRIPTION.format(count=f"{count:,}")


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
