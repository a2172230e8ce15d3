"""Adding one server entry to a host's JSON config file without losing anything already in it.

The file is read whole and must be a JSON object (an empty or missing file counts as
``{}``); anything else is refused and the file left as it was. Every other key and every
other server stays as it is, in its order. Before the file changes, the previous version
is copied beside it (``<name>.<UTC time>.bak``); the new version replaces it atomically.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_server.errors import HostConfigError
from mcp_server.indexing.generations import write_file_atomically


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
        text = path.read_text(encoding="utf-8")
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

    :raises HostConfigError: the file is malformed, or holds another entry of that name and
        ``force`` is False.
    """
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
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomically(path, json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    if backup is not None:
        shutil.copymode(backup, path)  # a private file (e.g. ~/.claude.json) stays private
    return Written(changed=True, backup=backup, replaced=previous is not None)


def _back_up(path: Path) -> Path | None:
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    counter = 1
    while backup.exists():  # two installs within a second
        backup = path.with_name(f"{path.name}.{stamp}-{counter}.bak")
        counter += 1
    shutil.copy2(path, backup)
    return backup
