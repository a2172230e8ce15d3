"""A JSON-lines log file, rotated by size, that several processes can append to.

Each line is one JSON object stamped with its UTC ``time``, and one line for every reader:
no character any common reader breaks lines at is written raw. Every write holds a lock file
(``<name>.lock``), so the processes of a multi-worker server share one file: lines never
interleave, and a process that finds the file rotated away by another reopens it before
writing. Rotation is the standard library's: ``<name>.1`` is the newest old file.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timezone
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from filelock import FileLock


LINE_BREAKS_JSON_KEEPS = {code: f"\\u{code:04x}" for code in (0x85, 0x2028, 0x2029)}
"""The characters ``str.splitlines()`` (and many log readers) break lines at that ``json.dumps`` leaves raw,
as JSON escapes; the others (\\n, \\r, \\x0b, \\x0c, \\x1c-\\x1e) are control characters JSON always escapes."""


class JsonlLog:
    """Appends one JSON object per line to ``path``, keeping ``backups`` rotated files of ``max_bytes`` at most."""

    def __init__(self, path: Path, *, max_bytes: int, backups: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handler = _SharedRotatingFileHandler(path, max_bytes=max_bytes, backups=backups)

    def write(self, record: dict[str, Any]) -> None:
        line = json.dumps({"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **record},
                          ensure_ascii=False, default=str).translate(LINE_BREAKS_JSON_KEEPS)  # fmt: skip
        self._handler.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

    def close(self) -> None:
        self._handler.close()


class _SharedRotatingFileHandler(RotatingFileHandler):
    """A RotatingFileHandler several processes can share: each write holds a lock file, and the
    file is reopened when another process has rotated it away."""

    def __init__(self, path: Path, *, max_bytes: int, backups: int) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", delay=True)
        self._lock_file = FileLock(str(path.with_name(path.name + ".lock")))

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_file:
            if self.stream is not None and self._rotated_elsewhere(self.stream.fileno()):
                self.stream.close()
                self.stream = None  # reopened by the next write, as with delay=True
            super().emit(record)

    def _rotated_elsewhere(self, fd: int) -> bool:
        try:
            return os.stat(self.baseFilename).st_ino != os.fstat(fd).st_ino
        except FileNotFoundError:
            return True
