"""The last ingestion run's report, kept in the data directory for ``ragmcp status``.

``last-ingest.json`` holds when the run finished, what it published and, per corpus, the
counts of added, changed, deleted and unchanged documents, every skipped file with its
reason, the number of hidden entries left out and the files passed over for their type
(by suffix). Written atomically after each run.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from mcp_server.indexing.generations import write_file_atomically

RUN_REPORT = "last-ingest.json"


def save_run_report(data_dir: Path, report: dict[str, Any]) -> None:
    """Keep ``report`` (``IngestReport.to_json()``) as the last run's, stamped with the time it finished."""
    content = {"finished": datetime.now(timezone.utc).isoformat(timespec="seconds"), **report}
    write_file_atomically(data_dir / RUN_REPORT, json.dumps(content, indent=2, ensure_ascii=False) + "\n")


def load_run_report(data_dir: Path) -> dict[str, Any] | None:
    """The last run's report, or None when no run finished yet (or the file is unreadable)."""
    try:
        content: dict[str, Any] = json.loads((data_dir / RUN_REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return content
