"""What the retrieval benchmarks share: BEIR data sets, cached indexes, product runs, bm25s peers, pytrec_eval.

Every benchmark indexes a BEIR corpus with the product's own ingestion (one Markdown
file per document, the title in front matter) into ``bench/.cache/retrieval/<name>/``,
runs the product's :class:`~mcp_server.retrieval.retriever.Retriever` for each search mode, turns
chunk hits into document rankings (each document at its best chunk's rank), and scores
them with pytrec_eval. Re-running reuses the index when the corpus is unchanged (the
ingestion is incremental), and the embedding cache makes even a rebuild of unchanged
text cheap.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import pytrec_eval
import Stemmer
from common import (
    CACHE,
    log,
    read_jsonl,
    read_qrels,
    seed_embedding_cache,
    write_beir_corpus_folder,
)

from mcp_server.settings.embedding import AUTO_MODEL
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.retrieval.search import SearchMode
from mcp_server.settings import Settings

DEPTH = 100  # chunks asked of each search mode; equals the default hybrid candidate depth
MODES: tuple[SearchMode, ...] = ("vector", "keyword", "hybrid")

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]  # query id -> {doc id: score}, for pytrec_eval


@dataclass(frozen=True)
class BeirSet:
    """A BEIR-layout data set: the corpus file, query texts and relevance judgements per split."""

    corpus: Path
    queries: dict[str, str]
    qrels: dict[str, Qrels]

    @classmethod
    def load(cls, folder: Path, splits: Iterable[str] = ("test",)) -> BeirSet:
        texts = {q["_id"]: q["text"] for q in read_jsonl(folder / "queries.jsonl")}
        return cls(folder / "corpus.jsonl", texts, {s: read_qrels(folder / "qrels" / f"{s}.tsv") for s in splits})

    def split_queries(self, split: str) -> dict[str, str]:
        return {qid: self.queries[qid] for qid in self.qrels[split]}


@dataclass(frozen=True)
class PreparedIndex:
    settings: Settings
    documents: int
    seconds: float  # ingestion time of this run
    chunks_embedded: int  # chunks the model embedded in this run (0: cache hit or index reused)
    reused: bool  # the index was already up to date


def prepare_index(
    name: str,
    data: BeirSet,
    description: str,
    *,
    language: str | None = None,
    seed_cache: Path | None = None,
    model: str = AUTO_MODEL,
) -> PreparedIndex:
    """Index ``data``'s corpus in ``bench/.cache/retrieval/<name>`` (``<name>-<model>`` for one embedding
    model named instead of the default ``auto``) or bring it up to date.

    ``seed_cache``: an embedding cache to copy in before the first build (the same
    texts embedded by the same model elsewhere, e.g. by the ingestion benchmark).
    """
    root = CACHE / "retrieval" / (name if model == AUTO_MODEL else f"{name}-{model}")
    corpus_dir, data_dir = root / "corpus", root / "data"
    documents = write_beir_corpus_folder(data.corpus, corpus_dir, name, description, language)
    settings = Settings.from_names(data_dir=data_dir, corpora=[corpus_dir], max_top_k=1000, embedding_model=model)
    if seed_cache is not None:
        seed_embedding_cache(settings.embedding_cache_path, seed_cache)
    log(f"{name}: indexing {documents} documents in {data_dir} (incremental)")
    report = ingest(settings)
    log(f"{name}: index ready in {report.seconds:.1f} s ({report.chunks_embedded} chunks embedded)")
    return PreparedIndex(settings, documents, report.seconds, report.chunks_embedded, report.generation is None)


def product_runs(
    settings: Settings, queries: Mapping[str, str], modes: Iterable[SearchMode] = MODES, top_k: int = DEPTH
) -> dict[str, Run]:
    """Document runs of the product's search modes: the documents of the ``top_k`` best chunks, best first."""
    retriever = Retriever.open(settings)
    try:
        runs: dict[str, Run] = {}
        for mode in modes:
            started = time.perf_counter()
            runs[mode] = {
                qid: doc_run(hit.citation.doc_id for hit in retriever.searcher.search(text, mode=mode, top_k=top_k))
                for qid, text in queries.items()
            }
            log(f"  {mode}: {len(queries)} queries in {time.perf_counter() - started:.1f} s")
        return runs
    finally:
        retriever.close()


Scored = list[tuple[str, float]]  # (citation id, score), best first


def candidate_lists(settings: Settings, queries: Mapping[str, str], depth: int = DEPTH) -> dict[str, tuple[Scored, Scored]]:
    """Per query, the vector and keyword candidate lists the product's hybrid search fuses."""
    retriever = Retriever.open(settings)
    try:
        return {qid: retriever.searcher.fusion_candidates(text, depth) for qid, text in queries.items()}
    finally:
        retriever.close()


def doc_of(citation_id: str) -> str:
    """The doc_id of a citation id ``corpus:doc_id#chunk``."""
    return citation_id.split(":", 1)[1].rsplit("#", 1)[0]


def doc_run(doc_ids: Iterable[str]) -> dict[str, float]:
    """Ranked document ids (repeats allowed, e.g. one per chunk) as scores: each at its first rank."""
    scores: dict[str, float] = {}
    for rank, doc_id in enumerate(doc_ids):
        scores.setdefault(doc_id, float(10 * DEPTH - rank))
    return scores


Tokenizer = Callable[[list[str]], Any]  # texts -> what bm25s indexes: token lists or bm25s.tokenize output


def bm25s_run(data: BeirSet, queries: Mapping[str, str], tokenize: Tokenizer, k: int = DEPTH) -> Run:
    """A peer BM25 (bm25s, its default Lucene variant, k1=1.5, b=0.75) over whole documents (title + text)."""
    docs = list(read_jsonl(data.corpus))
    model = bm25s.BM25()
    model.index(tokenize([f"{d['title']} {d['text']}" for d in docs]), show_progress=False)
    qids = list(queries)
    results, scores = model.retrieve(
        tokenize([queries[q] for q in qids]), k=min(k, len(docs)), show_progress=False, n_threads=1
    )
    return {
        qid: {docs[j]["_id"]: float(s) for j, s in zip(results[i], scores[i]) if s > 0}
        for i, qid in enumerate(qids)
    }


def english_tokenizer() -> Tokenizer:
    """bm25s's own tokenizer with its English stop words and the Snowball English stemmer."""
    stemmer = Stemmer.Stemmer("english")
    return lambda texts: bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)


_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAN_OR_WORD = re.compile(rf"(?P<han>[{_HAN}]+)|(?P<word>[^\W_{_HAN}]+)")  # a word stops where Han begins


def bigram_tokenizer() -> Tokenizer:
    """Overlapping character bigrams of each Han run (a lone character as itself), lowercase words otherwise."""
    def tokens(text: str) -> list[str]:
        out: list[str] = []
        for match in _HAN_OR_WORD.finditer(text):
            run = match.group()
            if match.lastgroup == "word":
                out.append(run.lower())
            elif len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
        return out

    return lambda texts: [tokens(t) for t in texts]


def scored_runs(
    settings: Settings, data: BeirSet, queries: Mapping[str, str], peer: tuple[str, Tokenizer], top_k: int = DEPTH
) -> dict[str, Run]:
    """Runs of the product's three modes (``top_k`` chunks each) and of the bm25s peer, by row label."""
    log(f"{len(queries)} queries")
    runs = product_runs(settings, queries, top_k=top_k)
    runs[peer[0]] = bm25s_run(data, queries, peer[1], top_k)
    return runs


def score_runs(
    runs: Mapping[str, Run],
    qrels: Qrels,
    measures: Mapping[str, str],
    extra: Callable[[Run, Qrels], dict[str, float]] | None = None,
) -> dict[str, dict[str, float]]:
    """The metrics of each run on ``qrels`` (queries outside ``qrels`` are ignored), by row label."""
    return {label: {**evaluate(run, qrels, measures), **(extra(run, qrels) if extra else {})}
            for label, run in runs.items()}


def evaluate(run: Run, qrels: Qrels, measures: Mapping[str, str]) -> dict[str, float]:
    """Mean of each measure over all judged queries (a query without hits scores 0).

    ``measures`` maps a label to a pytrec_eval measure, e.g. ``{"nDCG@10": "ndcg_cut.10"}``.
    """
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures.values()))
    per_query = evaluator.evaluate({qid: run.get(qid, {}) for qid in qrels})
    return {
        label: round(sum(per_query.get(q, {}).get(m.replace(".", "_"), 0.0) for q in qrels) / len(qrels), 4)
        for label, m in measures.items()
    }


def all_relevant_at(run: Run, qrels: Qrels, k: int) -> float:
    """Share of queries whose relevant documents are all in the top ``k`` of the run."""
    hits = 0
    for qid, relevant in qrels.items():
        top = sorted(run.get(qid, {}).items(), key=lambda kv: -kv[1])[:k]
        hits += {d for d, r in relevant.items() if r > 0} <= {d for d, _ in top}
    return round(hits / len(qrels), 4)


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "note": "shared 2-core VM; other jobs ran at the same time, so timings are indicative",
    }


def markdown_table(title: str, rows: Mapping[str, Mapping[str, float]]) -> str:
    """Rows of metrics as a Markdown table, one column per metric of the first row."""
    columns = list(next(iter(rows.values())))
    lines = [f"| {title} | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(f"{m[c]:.4f}" for c in columns) + " |" for label, m in rows.items()]
    return "\n".join(lines)


def index_report(prepared: PreparedIndex) -> dict[str, Any]:
    """How the index of a run came about, and the retrieval defaults it was searched with."""
    settings = prepared.settings
    return {
        "documents": prepared.documents,
        "build_seconds_this_run": round(prepared.seconds, 1),
        "chunks_embedded_this_run": prepared.chunks_embedded,
        "reused_cached_index": prepared.reused,
        "defaults": {k: settings.value(k) for k in (
            "hybrid_fusion", "convex_keyword_weight", "candidate_depth", "bm25_idf", "bm25_b", "bm25_k1")},
    }


def write_report(
    out: Path, description: str, prepared: PreparedIndex, results: dict[str, Any], started: float
) -> None:
    """Write a benchmark's results JSON: the data, the machine, the index, the metrics, the wall time."""
    report = {
        "data": description,
        "machine": machine(),
        "index": index_report(prepared),
        "results": results,
        "seconds": round(time.perf_counter() - started, 1),
    }
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    log(f"done in {report['seconds']} s; wrote {out}")
