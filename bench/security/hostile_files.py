"""What one crafted file costs ``ragmcp ingest``: the red team's second-round files, each beside a good document.

For each file, a fresh data dir and a folder of ``good.md`` plus the file; ``ragmcp ingest`` of the
checkout given (``--checkout``, the code before, or this one) runs under an address-space ceiling
(``--memory-gb``, so a bomb cannot take the machine) and a deadline (``--seconds``). It reports the
wall time, the peak memory of the largest process (the ingesting one or its reading process), the
exit code and whether the good document was published; ``results-hostile-files-<label>.json``.

    git worktree add /tmp/before 4f5133c
    python bench/security/hostile_files.py --checkout /tmp/before --label before
    python bench/security/hostile_files.py --label after
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.mcp_server.indexing.test_hostile_text import (  # noqa: E402 - after the path is set
    GOOD_FACT,
    blank_pdf,
    crafted_asciidoc,
    crafted_email,
    crafted_html,
    crafted_markdown,
    looping_epub,
)


def _text(make: Callable[[int], str], size: int) -> Callable[[Path], None]:
    return lambda path: path.write_text(make(size), encoding="utf-8")


CASES: dict[str, tuple[Callable[[Path], None], dict[str, str]]] = {
    "heading.md (200 KB)": (_text(crafted_markdown, 200_000), {}),
    "heading.adoc (200 KB)": (_text(crafted_asciidoc, 200_000), {}),
    "quotes.html (800 KB)": (_text(crafted_html, 800_000), {}),
    "subject.eml (664 KB)": (_text(crafted_email, 664_000), {}),
    "blank.pdf (100,000 pages), RAGMCP_OCR_MAX_PAGES=5": (lambda path: blank_pdf(path, 100_000), {"RAGMCP_OCR_MAX_PAGES": "5"}),
    "loop.epub (one chapter named 20,000 times)": (lambda path: looping_epub(path, 20_000), {}),
}

_MEASURED = (
    "import resource, subprocess, sys; "
    "code = subprocess.run([sys.executable, '-m', 'mcp_server', 'ingest'], capture_output=True).returncode; "
    "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)"
)


def measure(checkout: Path, name: str, seconds: float, memory_gb: float) -> dict[str, object]:
    write, extra = CASES[name]
    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "shared"
        corpus.mkdir()
        (corpus / "good.md").write_text(f"# Harbour office\n\n{GOOD_FACT}\n", encoding="utf-8")
        write(corpus / name.split(" ")[0])
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
        env.update(PYTHONPATH=str(checkout), RAGMCP_DATA_DIR=f"{scratch}/data", RAGMCP_CORPORA=str(corpus), **extra)
        ceiling = int(memory_gb * 1024**3)

        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))

        started = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-c", _MEASURED], env=env, cwd=checkout, capture_output=True,
                                  text=True, timeout=seconds, preexec_fn=cap)  # fmt: skip
        except subprocess.TimeoutExpired:
            return {"file": name, "seconds": None, "outcome": f"still reading at {seconds:g} s (killed)"}
        took = time.monotonic() - started
        code, peak_mb = (int(word) for word in done.stdout.split()[-2:])
        published = any((Path(scratch) / "data").rglob("CURRENT"))
        outcome = "exit 0, good document published" if code == 0 and published else f"exit {code}, published: {published}"
        return {"file": name, "seconds": round(took, 1), "peak_mb": peak_mb, "outcome": outcome}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--label", default="after")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--memory-gb", type=float, default=6)
    args = parser.parse_args()
    rows = []
    for name in CASES:
        row = measure(args.checkout.resolve(), name, args.seconds, args.memory_gb)
        print(json.dumps(row), flush=True)
        rows.append(row)
    out = Path(__file__).with_name(f"results-hostile-files-{args.label}.json")
    out.write_text(json.dumps({"checkout": str(args.checkout), "rows": rows}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
