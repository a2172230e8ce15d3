"""Retrieval quality on HotpotQA dev500 (the pooled retrieval view): single-shot multi-hop retrieval.

    python bench/retrieval/hotpotqa.py   # ~5 min on 2 shared cores once the index is built

500 questions over the 4,858 paragraphs pooled from their distractor sets; each question
has two gold (supporting) paragraphs. Reports nDCG@10, Recall@2/5/10 and the share of
questions with *both* gold paragraphs in the top 5 and top 10, for the product's three
modes with their defaults (tuned on SciFact; nothing is tuned on this data) and a peer
BM25 (bm25s, stemmed). The agent benchmark (bench/agent) compares the agent with these.

Index: bench/.cache/retrieval/hotpotqa (the first run embeds its 5,098 chunks, ~18 min).
Writes bench/retrieval/results-hotpotqa.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from common import BENCH_DATA, REPO  # noqa: E402
from harness import (  # noqa: E402
    BeirSet, Qrels, Run, all_relevant_at, english_tokenizer, markdown_table, prepare_index, score_runs, scored_runs,
    write_report,
)

MEASURES = {"nDCG@10": "ndcg_cut.10", "Recall@2": "recall.2", "Recall@5": "recall.5", "Recall@10": "recall.10"}
TOP_K = 20  # chunks per question, for 10 distinct paragraphs (hybrid search still fuses 100 candidates from each)
PEER = "bm25s peer (stemmed)"


def both_gold(run: Run, qrels: Qrels) -> dict[str, float]:
    return {"both gold @5": all_relevant_at(run, qrels, 5), "both gold @10": all_relevant_at(run, qrels, 10)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "hotpotqa-dev500" / "beir")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "retrieval" / "results-hotpotqa.json")
    args = parser.parse_args()

    started = time.perf_counter()
    data = BeirSet.load(args.data)
    prepared = prepare_index(
        "hotpotqa", data, "HotpotQA dev500: 4,858 English Wikipedia paragraphs pooled from 500 questions.",
        language="en",
    )
    runs = scored_runs(prepared.settings, data, data.queries, (PEER, english_tokenizer()), TOP_K)
    rows = score_runs(runs, data.qrels["test"], MEASURES, both_gold)
    print(markdown_table(f"HotpotQA dev500 ({len(data.qrels['test'])} questions)", rows))
    write_report(
        args.out, "HotpotQA dev500 retrieval view: 4,858 paragraphs, 500 questions, 2 gold paragraphs each",
        prepared, {"test": rows}, started,
    )


if __name__ == "__main__":
    main()
