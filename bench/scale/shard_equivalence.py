"""Per-corpus keyword shards against the shared index they replace: the same results, the same CPU cost?

    git archive d7d6816 | tar -x -C /tmp/before              # the code before per-corpus shards
    python bench/scale/shard_equivalence.py build 1 /tmp/kw   # SciFact (1 copy) as one keyword shard, no embedding
    python bench/scale/shard_equivalence.py compare 100 /tmp/kw /tmp/before/mcp_server/stores/keyword.py

``build COPIES DIR`` indexes SciFact's chunks (copied COPIES times under new ids) as corpus
``s`` with this checkout's WhooshIndex: ``DIR/s/`` is then a plain Whoosh index, which the old
single-index WhooshIndex opens as its whole index. ``compare N DIR OLD`` runs the first N
SciFact test claims through both, as hybrid search's keyword side (k 100, normalised) and as
keyword_search (k 10), checks the (id, score) lists are identical and reports each one's CPU
time per search (``time.process_time``, which other load inflates less than wall-clock).
Writes bench/scale/results-shard-equivalence.json.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import BENCH_DATA, REPO, read_jsonl, read_qrels  # noqa: E402

from mcp_server.documents.chunking import split_into_chunks  # noqa: E402
from mcp_server.documents.corpus import ChunkingOptions  # noqa: E402
from mcp_server.stores.keyword import KeywordRecord, WhooshIndex  # noqa: E402

MODES: dict[str, dict[str, Any]] = {
    "hybrid's keyword side (k 100, normalised, quotes as words)": {"k": 100, "normalize": True, "require_phrases": False},
    "keyword_search (k 10)": {"k": 10, "normalize": False, "require_phrases": True},
    "hybrid's keyword side at k 10": {"k": 10, "normalize": True, "require_phrases": False},
}


def build(copies: int, folder: Path) -> None:
    records = []
    for copy in range(copies):
        for doc in read_jsonl(BENCH_DATA / "scifact" / "corpus.jsonl"):
            text, doc_id = doc["text"], f"c{copy}-{doc['_id']}"
            for chunk in split_into_chunks(text, ChunkingOptions()):
                content = f"{doc['title']}\n{chunk.section}\n{text[chunk.char_start:chunk.char_end]}"
                records.append(KeywordRecord(f"s:{doc_id}#{chunk.index}", "s", doc_id, content))
    index = WhooshIndex(folder)
    index.update([], records)
    index.close()
    print(f"indexed {len(records)} chunks")


def percentile_ms(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000, 1)


def compare(count: int, folder: Path, old_module: Path) -> None:
    spec = importlib.util.spec_from_file_location("old_keyword", old_module)
    assert spec is not None and spec.loader is not None
    old_keyword = importlib.util.module_from_spec(spec)
    sys.modules["old_keyword"] = old_keyword
    spec.loader.exec_module(old_keyword)
    texts = {q["_id"]: q["text"] for q in read_jsonl(BENCH_DATA / "scifact" / "queries.jsonl")}
    queries = [texts[q] for q in read_qrels(BENCH_DATA / "scifact" / "qrels" / "test.tsv")][:count]
    old, new = old_keyword.WhooshIndex(folder / "s", bm25_b=0.3), WhooshIndex(folder, bm25_b=0.3)
    report = {}
    for label, mode in MODES.items():
        k, options = mode["k"], {name: value for name, value in mode.items() if name != "k"}
        same, old_cpu, new_cpu = 0, [], []
        for query in queries:
            started = time.process_time()
            before = old.search(query, k, **options)
            middle = time.process_time()
            after = new.search(query, k, **options)
            old_cpu.append(middle - started)
            new_cpu.append(time.process_time() - middle)
            same += before == after
        report[label] = {
            "identical": f"{same}/{len(queries)}",
            "old_cpu_p50_ms": percentile_ms(old_cpu, 0.5), "old_cpu_p95_ms": percentile_ms(old_cpu, 0.95),
            "new_cpu_p50_ms": percentile_ms(new_cpu, 0.5), "new_cpu_p95_ms": percentile_ms(new_cpu, 0.95),
        }  # fmt: skip
        print(label, report[label], flush=True)
    out = REPO / "bench" / "scale" / "results-shard-equivalence.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(int(sys.argv[2]), Path(sys.argv[3]))
    else:
        compare(int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
