"""The MCP hosts ``ragmcp install`` knows: where each keeps its list of servers, and in what shape.

Each reads a JSON file mapping server names to how to start them over stdio:

- **claude-desktop**: ``claude_desktop_config.json`` under ``mcpServers``, in
  ``~/Library/Application Support/Claude/`` (macOS), ``%APPDATA%\\Claude\\`` (Windows) or
  ``~/.config/Claude/`` (Linux builds).
- **cursor**: ``~/.cursor/mcp.json`` under ``mcpServers`` (a project's: ``.cursor/mcp.json``).
- **claude-code**: ``~/.claude.json`` under ``mcpServers``, entries typed ``"stdio"``
  (a project's: ``.mcp.json``).
- **vscode**: the user profile's ``mcp.json`` under ``servers``, entries typed ``"stdio"``, in
  ``~/Library/Application Support/Code/User/`` (macOS), ``%APPDATA%\\Code\\User\\`` (Windows) or
  ``~/.config/Code/User/`` (Linux) (a workspace's: ``.vscode/mcp.json``).

A desktop app does not start its servers from the user's shell, so the command is the
absolute path of this installation's ``ragmcp`` and the settings travel in ``env``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from mcp_server.settings import Settings


def _in_home(*parts: str) -> Callable[[], Path]:
    return lambda: Path.home().joinpath(*parts)


def _in_config_folder(app: str, *parts: str) -> Callable[[], Path]:
    """Under the OS's per-user config folder: %APPDATA% (Windows), ~/Library/Application Support
    (macOS), $XDG_CONFIG_HOME or ~/.config (Linux)."""
    return lambda: Path(platformdirs.user_config_dir(app, appauthor=False, roaming=True)).joinpath(*parts)


@dataclass(frozen=True)
class Host:
    """One MCP host: its name on the command line, its user-wide config file and its entry shape."""

    name: str
    title: str
    servers_key: str  # the object of the config file that maps server names to entries
    typed: bool  # entries carry "type": "stdio"
    config_path: Callable[[], Path]  # where the user-wide config file is on this machine


HOSTS = {
    host.name: host
    for host in (
        Host("claude-desktop", "Claude Desktop", "mcpServers", False,
             _in_config_folder("Claude", "claude_desktop_config.json")),
        Host("cursor", "Cursor", "mcpServers", False, _in_home(".cursor", "mcp.json")),
        Host("claude-code", "Claude Code", "mcpServers", True, _in_home(".claude.json")),
        Host("vscode", "VS Code", "servers", True, _in_config_folder("Code", "User", "mcp.json")),
    )
}  # fmt: skip


@dataclass(frozen=True)
class Launch:
    """How a host starts this server: an absolute command, its arguments and its environment."""

    command: str
    args: list[str]
    env: dict[str, str]

    def entry(self, host: Host) -> dict[str, Any]:
        """The value stored under the server's name in ``host``'s config file."""
        typed: dict[str, Any] = {"type": "stdio"} if host.typed else {}
        return {**typed, "command": self.command, "args": self.args, "env": self.env}


def ragmcp_command(python: Path | None = None, windows: bool | None = None) -> list[str]:
    """The absolute command that runs this installation's ``ragmcp``.

    That is the console script beside the interpreter (``bin/ragmcp``, or
    ``Scripts\\ragmcp.exe`` on Windows), taken without resolving symlinks, which would lead
    out of the virtual environment. Without one (a source checkout run with ``python -m``),
    the interpreter runs the package.
    """
    python = python or Path(sys.executable)
    windows = os.name == "nt" if windows is None else windows
    script = python.parent / ("ragmcp.exe" if windows else "ragmcp")
    if script.is_file():
        return [str(script.absolute())]
    return [str(python.absolute()), "-m", "mcp_server"]


def server_launch(settings: Settings, watch: bool, python: Path | None = None) -> Launch:
    """``ragmcp serve`` with the explicitly chosen ``settings`` as RAGMCP_* variables."""
    command, *args = ragmcp_command(python)
    return Launch(command=command, args=[*args, "serve", *(["--watch"] if watch else [])], env=settings.to_env())
