"""Adding one server entry to a host's JSON config file without losing anything already in it.

The file is read whole and must be a JSON object (an empty or missing file counts as
``{}``); anything else is refused and the file left as it was. Every other key and every
other server stays as it is, in its order. Before the file changes, the previous version
is copied beside it (``<name>.<UTC time>.bak``); the new version replaces it atomically.

The entry may carry keys (``RAGMCP_*_API_KEY`` from the environment), so a file this creates
is readable by its owner only (0600), a file it rewrites keeps its mode, and neither the new
version nor the backup is readable by anyone else for a moment while being written. A path
that is a symbolic link is refused: rewriting it would put a copy of the file it points to,
with whatever secrets that file holds, in the link's place (say, inside a project folder).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_server.errors import HostConfigError

NEW_FILE_MODE = 0o600
"""The mode of a config file this creates: its owner's only."""


@dataclass(frozen=True)
class Written:
    """What :func:`add_server` did: ``changed`` False when the same entry was already there."""

    changed: bool
    backup: Path | None  # the copy of the previous file; None when there was none or nothing changed
    replaced: bool  # an entry of that name with other contents was overwritten (force)


def read_config(path: Path) -> dict[str, Any]:
    """The config file's top-level object; ``{}`` when the file is missing or empty.

    :raises HostConfigError: it cannot be read, is not JSON, or is not a JSON object.
    """
    try:
        # O_NOFOLLOW: a link put in the file's place since add_server looked is not read through
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise HostConfigError(f"cannot read {path}: {e}; nothing was changed") from e
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise HostConfigError(
            f"{path} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}; comments and trailing "
            "commas count as errors); nothing was changed. Fix the file, or add the block that --print shows "
            "by hand."
        ) from None
    if not isinstance(config, dict):
        raise HostConfigError(f"{path} holds a JSON {type(config).__name__}, not an object; nothing was changed")
    return config


def add_server(path: Path, servers_key: str, name: str, entry: dict[str, Any], force: bool) -> Written:
    """Put ``entry`` under ``config[servers_key][name]`` in the file at ``path``.

    :raises HostConfigError: ``path`` is a symbolic link, the file is malformed, or it holds
        another entry of that name and ``force`` is False.
    """
    if path.is_symlink():
        raise HostConfigError(
            f"{path} is a symbolic link to {os.readlink(path)}; nothing was changed. ragmcp install does not write "
            "through links, which would put a copy of the linked file in the link's place. Pass the real file's "
            f"path instead: --config {path.resolve()}"
        )
    config = read_config(path)
    servers = config.setdefault(servers_key, {})
    if not isinstance(servers, dict):
        raise HostConfigError(
            f"{path}: {servers_key!r} is a JSON {type(servers).__name__}, not an object; nothing was changed"
        )
    previous = servers.get(name)
    if previous == entry:
        return Written(changed=False, backup=None, replaced=False)
    if previous is not None and not force:
        raise HostConfigError(
            f"{path} already has a server named {name!r}:\n{json.dumps(previous, indent=2)}\n"
            "nothing was changed. Pass --force to replace it, or --name to add this one beside it."
        )
    servers[name] = entry
    backup = _back_up(path)
    mode = NEW_FILE_MODE if backup is None else stat.S_IMODE(path.stat().st_mode)  # a rewritten file keeps its mode
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomically(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n", mode)
    return Written(changed=True, backup=backup, replaced=previous is not None)


def _back_up(path: Path) -> Path | None:
    """A copy of the file at ``path`` beside it, with its mode and times; None when there is no file."""
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    counter = 1
    while True:
        try:
            _write_new(backup, original)
            break
        except FileExistsError:  # two installs within a second
            backup = path.with_name(f"{path.name}.{stamp}-{counter}.bak")
            counter += 1
    shutil.copystat(path, backup)  # the original's mode (a private file stays private) and times
    return backup


def _write_atomically(path: Path, text: str, mode: int) -> None:
    """Replace the file at ``path`` with ``text`` in one step (a new file beside it, synced, renamed over
    it), the new file having ``mode``."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        _write_new(tmp, text.encode("utf-8"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if os.name == "posix":  # the rename itself survives a crash
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, synced; readable by its owner only until the caller widens it.

    :raises FileExistsError: there is a file (or link) at ``path`` already.
    """
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE), "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
