"""Ingestion benchmark on the bundled demo corpora (38 documents: Markdown, HTML, PDF, Chinese).

    python bench/ingest/bundled.py            # ~2 min on 2 cores

The same steps as the SciFact benchmark (harness.py), on a copy of the bundled corpora in
a temporary directory (the 1% edit must not touch the repository). Writes
bench/ingest/results-bundled.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO  # noqa: E402
from harness import measure_ingestion, print_table  # noqa: E402

from mcp_server.settings import Settings, bundled_corpus_dirs  # noqa: E402

SOURCE_SUFFIXES = {".md", ".txt", ".html", ".htm", ".pdf"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "ingest" / "results-bundled.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        corpora = [Path(shutil.copytree(c, Path(scratch) / "corpora" / c.name)) for c in bundled_corpus_dirs()]
        editable = [p for c in corpora for p in c.rglob("*") if p.suffix in {".md", ".txt", ".html", ".htm"}]
        documents = [p for c in corpora for p in c.rglob("*") if p.suffix in SOURCE_SUFFIXES]
        settings = Settings(data_dir=Path(scratch) / "data", corpora=corpora)
        result = measure_ingestion(settings, editable)
        result["documents"] = len(documents)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print_table(result)


if __name__ == "__main__":
    main()
