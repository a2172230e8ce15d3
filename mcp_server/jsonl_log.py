"""A JSON-lines log file, rotated by size, that several processes can append to.

Each line is one JSON object stamped with its UTC ``time``, and one line for every reader:
no character any common reader breaks lines at is written raw (:func:`encoded`). Every write
holds a lock file (``<name>.lock``), so the processes of a multi-worker server share one file:
lines never interleave, and a process that finds the file rotated away by another reopens it
before writing. It is the audit log's file (:mod:`mcp_server.team.audit`), and its warning
names the audit log's settings.

Rotation is the standard library's - ``<name>.1`` is the newest old file, ``<name>.<backups>``
the oldest, deleted by the next rotation - with two exceptions. An empty file is never rotated
(a line longer than ``max_bytes`` gets a file of its own, not an empty backup). And the oldest
backup is never deleted while its last line is younger than ``min_keep_s``: until then the
current file grows past ``max_bytes`` (with a warning on the server log, once per process
until the next rotation), so however fast lines come, none is removed sooner than
``min_keep_s`` after it was written.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from datetime import datetime, timezone
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from filelock import FileLock

logger = logging.getLogger(__name__)

LINE_BREAKS_JSON_KEEPS = {chr(code): f"\\u{code:04x}" for code in (0x85, 0x2028, 0x2029)}
"""The characters ``str.splitlines()`` (and many log readers) break lines at that ``json.dumps`` leaves raw,
as JSON escapes; the others (\\n, \\r, \\x0b, \\x0c, \\x1c-\\x1e) are control characters JSON always escapes."""


def encoded(value: Any) -> str:
    """``value`` as JSON the way the log writes it: characters as they are, but the line breaks escaped."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    for line_break, escape in LINE_BREAKS_JSON_KEEPS.items():  # str.replace: far faster than str.translate
        text = text.replace(line_break, escape)
    return text


class JsonlLog:
    """Appends one JSON object per line to ``path``, keeping ``backups`` rotated files of ``max_bytes`` at most,
    each for ``min_keep_s`` at least (see the module)."""

    def __init__(self, path: Path, *, max_bytes: int, backups: int, min_keep_s: float = 0) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._handler = _SharedRotatingFileHandler(path, max_bytes=max_bytes, backups=backups, min_keep_s=min_keep_s)

    def write(self, record: dict[str, Any]) -> int:
        """Append ``record``, stamped with the time; the bytes its line took."""
        line = encoded({"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **record})
        self._handler.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))
        return len(line.encode("utf-8")) + 1

    def close(self) -> None:
        self._handler.close()


class _SharedRotatingFileHandler(RotatingFileHandler):
    """A RotatingFileHandler several processes can share: each write holds a lock file, and the
    file is reopened when another process has rotated it away. It rotates no empty file, and
    deletes no backup younger than ``min_keep_s``."""

    def __init__(self, path: Path, *, max_bytes: int, backups: int, min_keep_s: float) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", delay=True)
        self._lock_file = FileLock(str(path.with_name(path.name + ".lock")))
        self._min_keep_s = min_keep_s
        self._held = False  # the last write found the file full and the oldest backup too young to delete

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_file:
            if self.stream is not None and self._rotated_elsewhere(self.stream.fileno()):
                self.stream.close()
                self.stream = None  # reopened by the next write, as with delay=True
            super().emit(record)

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        """Whether the file is full, not empty, and rotating it deletes no backup younger than ``min_keep_s``."""
        if not super().shouldRollover(record) or os.path.getsize(self.baseFilename) == 0:
            return False
        oldest = Path(f"{self.baseFilename}.{self.backupCount}")
        try:
            age_s = time.time() - oldest.stat().st_mtime
        except FileNotFoundError:
            age_s = math.inf
        held = age_s < self._min_keep_s
        if held and not self._held:
            logger.warning(
                "%s is past RAGMCP_AUDIT_MAX_BYTES and keeps growing: rotating it would delete %s, last written "
                "%.1f hours ago, inside RAGMCP_AUDIT_MIN_KEEP_HOURS (%g). It rotates once that file is older; "
                "raise RAGMCP_AUDIT_MAX_BYTES or RAGMCP_AUDIT_BACKUPS if this is ordinary traffic.",
                self.baseFilename, oldest.name, age_s / 3600, self._min_keep_s / 3600,
            )  # fmt: skip
        self._held = held
        return not held

    def _rotated_elsewhere(self, fd: int) -> bool:
        try:
            return os.stat(self.baseFilename).st_ino != os.fstat(fd).st_ino
        except FileNotFoundError:
            return True
