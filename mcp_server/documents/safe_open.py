"""Reading a corpus file's bytes once, from inside the corpus folder only, whatever the folder does meanwhile.

The scan of a corpus folder sees a file (or a link to a file inside the folder); by the time
it is read, the name may lead somewhere else - a link swapped in to ``/etc/passwd``, to
another team's corpus, to ``/dev/zero``, or a folder on the way replaced by a link. So a
file is opened once, without following a link in its last component (``O_NOFOLLOW``; a
link the scan admitted is resolved first), without blocking on a FIFO (``O_NONBLOCK``),
and the open descriptor itself is checked: it must be a regular file whose real path lies
inside the corpus folder. Its bytes are read from that descriptor, at most the size limit,
and everything later - the fingerprint, the size check, the parse - uses those bytes.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from mcp_server.errors import IngestError

_READ_BLOCK = 1_048_576


def read_inside(path: Path, root: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, which must lie inside the folder ``root`` (resolved).

    :raises IngestError: the file cannot be opened, is not a regular file, lies (now) outside
        ``root``, or holds more than ``max_bytes`` bytes.
    """
    target = Path(os.path.realpath(path))  # a link the scan admitted; checked again on the descriptor
    flags = os.O_RDONLY
    for name in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_BINARY"):  # each where the platform has it
        flags |= getattr(os, name, 0)
    try:
        descriptor = os.open(target, flags)
    except OSError as error:
        raise IngestError(f"{path} cannot be read ({error.strerror}); check that it exists and its permissions.") from error
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise IngestError(f"{path} is not a regular file (a device, pipe or socket); remove it from the corpus folder.")
        opened = _opened_path(descriptor, target, info)
        if opened is None or not opened.is_relative_to(root):
            raise IngestError(
                f"{path} now leads outside the corpus folder; it was replaced while being indexed. "
                "Copy the file into the folder instead of linking to it."
            )
        return _read_at_most(descriptor, path, max_bytes)
    finally:
        os.close(descriptor)


def _opened_path(descriptor: int, target: Path, info: os.stat_result) -> Path | None:
    """The real path of the open file: from ``/proc`` on Linux, ``F_GETPATH`` on macOS; elsewhere the
    resolved name, accepted only when it still names the very file that was opened."""
    if sys.platform.startswith("linux"):
        try:
            return Path(os.readlink(f"/proc/self/fd/{descriptor}"))
        except OSError:
            return None
    if sys.platform == "darwin":
        import fcntl

        try:
            raw = fcntl.fcntl(descriptor, 50, b"\0" * 1024)  # F_GETPATH
        except OSError:
            return None
        return Path(os.fsdecode(raw.split(b"\0", 1)[0]))
    try:
        now = os.stat(target)
    except OSError:
        return None
    return target if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino) else None


def _read_at_most(descriptor: int, path: Path, max_bytes: int) -> bytes:
    """Read to the end, refusing the file as soon as it passes ``max_bytes`` (it may grow while read)."""
    blocks: list[bytes] = []
    size = 0
    while True:
        block = os.read(descriptor, _READ_BLOCK)
        if not block:
            return b"".join(blocks)
        size += len(block)
        if size > max_bytes:
            raise IngestError(
                f"{path} is over the size limit of {max_bytes / 1_048_576:g} MB; raise RAGMCP_MAX_FILE_MB or split the file."
            )
        blocks.append(block)
