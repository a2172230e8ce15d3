"""Ingestion benchmark on BEIR SciFact: throughput, peak memory, and distance from the embedding floor.

    python bench/ingest/scifact.py            # ~8 min on 2 free cores: ingest, bare embedding, re-ingests

The steps are those of harness.py. Writes bench/ingest/results-scifact.json and prints a
Markdown table. The built index is kept in bench/.cache/scifact/ for the other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DATA, CACHE, REPO, write_beir_corpus_folder  # noqa: E402
from harness import measure_ingestion, print_table  # noqa: E402

from mcp_server.settings import Settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "scifact")
    parser.add_argument("--workdir", type=Path, default=CACHE / "scifact")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "ingest" / "results-scifact.json")
    args = parser.parse_args()

    corpus_dir, data_dir = args.workdir / "corpus", args.workdir / "data"
    shutil.rmtree(args.workdir, ignore_errors=True)
    write_beir_corpus_folder(
        args.data / "corpus.jsonl", corpus_dir, "scifact",
        "BEIR SciFact: 5,183 scientific paper abstracts (title + abstract), for claim verification.",
    )
    settings = Settings(data_dir=data_dir, corpora=[corpus_dir])
    result = measure_ingestion(settings, sorted(corpus_dir.glob("*.md")))
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print_table(result)


if __name__ == "__main__":
    main()
