"""What the bounded reading costs: ``ragmcp ingest --rebuild`` of a folder of ordinary documents, two checkouts.

The folder: the bundled corpora's Markdown, HTML, CSV and PDF files, plus 40 Word files, 20 slide
decks and 20 workbooks generated with python-docx/pptx and openpyxl (about 600 chunks). Each run is a
rebuild with a warm embedding cache (the first run of each checkout fills it), so what is timed is
reading, chunking and writing the stores - the part the bounded readers change; embedding would
otherwise dominate. Runs alternate between the checkouts; medians are reported.

    git worktree add /tmp/before 59c3dd1          # the code before the bounded readers
    python bench/documents/ingest_overhead.py --before /tmp/before --after . --runs 5

With ``--pdfs N`` the folder is instead the first N manuals of ``bench/documents/pdf_extraction.py``'s set,
and with ``--cold`` every run starts from an empty data dir: the whole ingestion, embedding included.

    python bench/documents/ingest_overhead.py --before /tmp/before --after . --pdfs 25 --cold --runs 1

``--label`` names the results file apart (``results-ingest-ordinary-<label>.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.document_fixtures import write_docx, write_pptx, write_xlsx  # noqa: E402

SENTENCES = [
    "The pump must be primed before the first start.", "Check the seal for wear every 500 hours.",
    "Orders placed before noon ship the same day.", "The warranty covers parts and labour for two years.",
]  # fmt: skip


def build_folder(root: Path) -> None:
    for source in (REPO / "corpora").iterdir():
        if source.is_dir() and source.name != "database":
            shutil.copytree(source, root / source.name, ignore=shutil.ignore_patterns("corpus.toml"))
    office = root / "office"
    for n in range(40):
        blocks = [("Heading 1", f"Procedure {n}")] + [("", " ".join(SENTENCES[(n + k) % 4] for k in range(12)))] * 4
        write_docx(office / f"procedure-{n:02}.docx", f"Procedure {n}", blocks)
    for n in range(20):
        slides = [(f"Quarter {n} slide {s}", SENTENCES[s % 4], f"Notes {s}") for s in range(8)]
        write_pptx(office / f"deck-{n:02}.pptx", slides)
        rows = [["Item", "Quarter", "Cost"]] + [[f"Part {r}", f"Q{r % 4 + 1}", r * 13] for r in range(200)]
        write_xlsx(office / f"costs-{n:02}.xlsx", {"Costs": rows})


def pdf_folder(root: Path, count: int) -> None:
    from bench.documents.pdf_extraction import fetch

    root.mkdir(parents=True)
    for source in fetch()[:count]:
        (root / f"{source.parent.name}-{source.name}").write_bytes(source.read_bytes())


def run(checkout: Path, folder: Path, data: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    env.update(PYTHONPATH=str(checkout), RAGMCP_DATA_DIR=str(data), RAGMCP_CORPORA=str(folder), RAGMCP_DATABASE="none")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mcp_server", "ingest", "--rebuild"], env=env, check=True, cwd=checkout,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pdfs", type=int, default=0, help="the first N public PDF manuals instead")
    parser.add_argument("--cold", action="store_true", help="every run from an empty data dir (embedding included)")
    parser.add_argument("--label", default="", help="added to the results file's name (e.g. text-in-reader)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "ordinary"
        pdf_folder(folder, args.pdfs) if args.pdfs else build_folder(folder)
        files = sum(1 for p in folder.rglob("*") if p.is_file())
        times: dict[str, list[float]] = {"before": [], "after": []}
        if not args.cold:
            for name, checkout in (("before", args.before), ("after", args.after)):
                run(checkout.resolve(), folder, Path(scratch) / name)  # fills the embedding cache
        for number in range(args.runs):
            for name, checkout in (("before", args.before), ("after", args.after)):
                data = Path(scratch) / (f"{name}-{number}" if args.cold else name)
                times[name].append(run(checkout.resolve(), folder, data))
    medians = {name: statistics.median(values) for name, values in times.items()}
    result = {
        "files": files, "runs": times, "median_s": medians,
        "overhead": round(medians["after"] / medians["before"] - 1, 3), "load_average": os.getloadavg(),
    }  # fmt: skip
    print(json.dumps(result, indent=2))
    label = f"-{args.label}" if args.label else ""
    name = f"results-ingest-{'pdfs' if args.pdfs else 'ordinary'}{'-cold' if args.cold else ''}{label}.json"
    (Path(__file__).parent / name).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
