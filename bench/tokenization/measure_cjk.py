"""Measure the CJK segmentation strategies of the keyword index on CMRC 2018 dev.

For each strategy in ``mcp_server.stores.analysis.CjkStrategy`` this builds a Whoosh
index (BM25F, one field = title + text) of the 848 passages, runs all 3,219 questions
through the product query path (``build_keyword_query``), and reports Recall@1/5/10,
MRR@10, index build time, index size on disk and mean query latency.

Run from the repository root::

    PYTHONPATH=. python bench/tokenization/measure_cjk.py [--data DIR] [--out FILE]

Progress goes to stderr, a markdown table to stdout, all numbers to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import get_args

from whoosh import index
from whoosh.fields import ID, TEXT, Schema
from whoosh.searching import Searcher

from mcp_server.stores.analysis import (
    DEFAULT_CJK,
    CjkStrategy,
    EmptyQueryError,
    build_analyzer,
    build_keyword_query,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO_ROOT / ".." / "shared" / "bench-data" / "cmrc2018-dev"
DEFAULT_OUT = Path(__file__).resolve().parent / "results.json"
TOP_K = 10
FIELD = "content"


@dataclass(frozen=True)
class Dataset:
    """A BEIR-layout retrieval set: passages, questions and the relevant passage ids."""

    corpus: dict[str, str]
    queries: dict[str, str]
    qrels: dict[str, set[str]]


@dataclass(frozen=True)
class Result:
    """What one strategy scored and cost. Times are CPU time of this process (the
    bench machine is shared, so wall-clock times are also kept but are noisier)."""

    strategy: str
    recall_at_1: float
    recall_at_5: float
    recall_at_10: float
    mrr_at_10: float
    better_than_default: int
    worse_than_default: int
    build_cpu_s: float
    build_wall_s: float
    index_mb: float
    query_cpu_ms_mean: float
    query_cpu_ms_p95: float
    query_wall_ms_mean: float
    empty_queries: int


@dataclass(frozen=True)
class Run:
    """The raw outcome of one strategy: reciprocal rank per query and the costs."""

    strategy: CjkStrategy
    reciprocal_ranks: list[float]
    ranks: list[int | None]
    build_cpu_s: float
    build_wall_s: float
    index_mb: float
    query_cpu_ms: list[float]
    query_wall_ms: list[float]
    empty_queries: int


def main() -> None:
    """Parse arguments, measure every strategy, write JSON and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BEIR-layout folder (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON (default: %(default)s)")
    args = parser.parse_args()

    data = load_beir(args.data.resolve())
    log(f"{len(data.corpus)} passages, {len(data.queries)} queries with judgements")
    jieba_load_s = warm_up_jieba()
    runs = {strategy: measure(strategy, data) for strategy in get_args(CjkStrategy)}
    results = [summarise(run, runs[DEFAULT_CJK]) for run in runs.values()]

    report = {
        "dataset": os.path.relpath(args.data, REPO_ROOT),
        "passages": len(data.corpus),
        "queries": len(data.queries),
        "top_k": TOP_K,
        "default_strategy": DEFAULT_CJK,
        "jieba_dictionary_load_s": round(jieba_load_s, 2),
        "environment": {
            "python": platform.python_version(),
            "whoosh-reloaded": version("whoosh-reloaded"),
            "jieba": version("jieba"),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        },
        "results": [asdict(result) for result in results],
    }
    args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote {args.out}")
    print(markdown_table(results))


def load_beir(folder: Path) -> Dataset:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv``; keep judged queries."""
    corpus = {doc["_id"]: f"{doc['title']}\n{doc['text']}" for doc in read_jsonl(folder / "corpus.jsonl")}
    qrels: dict[str, set[str]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    queries = {q["_id"]: q["text"] for q in read_jsonl(folder / "queries.jsonl") if q["_id"] in qrels}
    return Dataset(corpus, queries, qrels)


def read_jsonl(path: Path) -> list[dict[str, str]]:
    """One JSON object per non-empty line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def warm_up_jieba() -> float:
    """Load jieba's dictionary once, so its ~1 s load is not charged to one strategy."""
    started = time.perf_counter()
    list(build_analyzer("jieba")("预热"))
    return time.perf_counter() - started


def measure(strategy: CjkStrategy, data: Dataset) -> Run:
    """Index the corpus with ``strategy``, run every query, and rank the relevant passages."""
    log(f"[{strategy}] indexing ...")
    with tempfile.TemporaryDirectory(prefix=f"cjk-{strategy}-") as folder:
        build_cpu_s, build_wall_s = build_index(Path(folder), strategy, data.corpus)
        index_mb = sum(f.stat().st_size for f in Path(folder).iterdir()) / 1e6
        log(f"[{strategy}] built in {build_cpu_s:.2f} s CPU, {index_mb:.2f} MB; querying ...")
        with index.open_dir(folder).searcher() as searcher:
            rankings, cpu_ms, wall_ms, empty = run_queries(searcher, data.queries)
    ranks = [first_relevant_rank(rankings[qid], data.qrels[qid]) for qid in data.queries]
    reciprocal_ranks = [1 / rank if rank is not None else 0.0 for rank in ranks]
    log(f"[{strategy}] MRR@{TOP_K} {statistics.fmean(reciprocal_ranks):.4f}")
    return Run(strategy, reciprocal_ranks, ranks, build_cpu_s, build_wall_s, index_mb, cpu_ms, wall_ms, empty)


def build_index(folder: Path, strategy: CjkStrategy, corpus: dict[str, str]) -> tuple[float, float]:
    """Create a one-field BM25F index in ``folder``; return (CPU, wall) seconds to add and commit."""
    schema = Schema(doc_id=ID(stored=True, unique=True), content=TEXT(analyzer=build_analyzer(strategy)))
    ix = index.create_in(str(folder), schema)
    cpu, wall = time.process_time(), time.perf_counter()
    with ix.writer() as writer:
        for doc_id, text in corpus.items():
            writer.add_document(doc_id=doc_id, content=text)
    return time.process_time() - cpu, time.perf_counter() - wall


def run_queries(
    searcher: Searcher, queries: dict[str, str]
) -> tuple[dict[str, list[str]], list[float], list[float], int]:
    """Top-k doc ids per query, per-query CPU and wall ms (build query + search), empty count."""
    analyzer = searcher.schema[FIELD].analyzer
    rankings: dict[str, list[str]] = {}
    cpu_ms: list[float] = []
    wall_ms: list[float] = []
    empty = 0
    for qid, text in queries.items():
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            hits = searcher.search(build_keyword_query(FIELD, text, analyzer), limit=TOP_K)
            rankings[qid] = [hit["doc_id"] for hit in hits]
        except EmptyQueryError:
            rankings[qid] = []
            empty += 1
        cpu_ms.append((time.process_time() - cpu) * 1000)
        wall_ms.append((time.perf_counter() - wall) * 1000)
    return rankings, cpu_ms, wall_ms, empty


def summarise(run: Run, default: Run) -> Result:
    """Aggregate one run; count the queries it ranks better / worse than the default strategy."""
    pairs = list(zip(run.reciprocal_ranks, default.reciprocal_ranks, strict=True))
    return Result(
        strategy=run.strategy,
        recall_at_1=recall_at(run.ranks, 1),
        recall_at_5=recall_at(run.ranks, 5),
        recall_at_10=recall_at(run.ranks, 10),
        mrr_at_10=round(statistics.fmean(run.reciprocal_ranks), 4),
        better_than_default=sum(1 for mine, theirs in pairs if mine > theirs),
        worse_than_default=sum(1 for mine, theirs in pairs if mine < theirs),
        build_cpu_s=round(run.build_cpu_s, 2),
        build_wall_s=round(run.build_wall_s, 2),
        index_mb=round(run.index_mb, 2),
        query_cpu_ms_mean=round(statistics.fmean(run.query_cpu_ms), 2),
        query_cpu_ms_p95=round(statistics.quantiles(run.query_cpu_ms, n=20)[-1], 2),
        query_wall_ms_mean=round(statistics.fmean(run.query_wall_ms), 2),
        empty_queries=run.empty_queries,
    )


def first_relevant_rank(ranking: list[str], relevant: set[str]) -> int | None:
    """1-based rank of the first relevant passage, or ``None`` if it is not retrieved."""
    return next((rank for rank, doc_id in enumerate(ranking, 1) if doc_id in relevant), None)


def recall_at(ranks: list[int | None], k: int) -> float:
    """Share of queries whose (single) relevant passage is in the top ``k``."""
    return round(sum(1 for r in ranks if r is not None and r <= k) / len(ranks), 4)


def markdown_table(results: list[Result]) -> str:
    """The results as a GitHub markdown table."""
    lines = [
        f"| strategy | R@1 | R@5 | R@10 | MRR@10 | vs `{DEFAULT_CJK}` (better / worse) "
        "| build CPU (s) | index (MB) | query CPU mean / p95 (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        versus = "—" if r.strategy == DEFAULT_CJK else f"+{r.better_than_default} / −{r.worse_than_default}"
        lines.append(
            f"| `{r.strategy}` | {r.recall_at_1:.4f} | {r.recall_at_5:.4f} | {r.recall_at_10:.4f} "
            f"| {r.mrr_at_10:.4f} | {versus} | {r.build_cpu_s:.1f} | {r.index_mb:.1f} "
            f"| {r.query_cpu_ms_mean:.1f} / {r.query_cpu_ms_p95:.1f} |"
        )
    return "\n".join(lines)


def log(message: str) -> None:
    """Progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
