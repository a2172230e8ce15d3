"""``ragmcp install HOST``: add this server to a desktop host's MCP config, or print the block to add."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import click

from mcp_server.cli_support import handle_errors, with_overrides
from mcp_server.documents.corpus import load_corpus_config
from mcp_server.indexing.cli import indexed_corpora
from mcp_server.install.config_file import add_server
from mcp_server.install.hosts import HOSTS, Host, Launch, ragmcp_command, server_launch
from mcp_server.settings import Settings


def _say(line: str) -> None:
    click.echo(line, err=True)


@click.command("install")
@click.argument("host_name", metavar="HOST", type=click.Choice(list(HOSTS)))
@click.option("--corpus", "corpora", multiple=True, type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="A folder of your documents to serve (repeatable). Default: RAGMCP_CORPORA, else the demo.")
@click.option("--data-dir", type=click.Path(path_type=Path, file_okay=False),
              help="Where the server keeps its index. Default: what ragmcp ingest uses (RAGMCP_DATA_DIR, "
                   "else the per-user data folder).")
@click.option("--name", default="agentic-rag", show_default=True, help="The server's name in the host.")
@click.option("--watch", is_flag=True, help="The server re-indexes the folders when their files change.")
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write into this file instead of the host's user-wide one, e.g. a project's .mcp.json "
                   "(the real file: a symbolic link is refused).")
@click.option("--env", "env_pairs", multiple=True, metavar="RAGMCP_NAME=VALUE",
              help="A setting for the host's server (repeatable), e.g. --env RAGMCP_OCR=off.")
@click.option("--force", is_flag=True, help="Replace a server of the same name.")
@click.option("--print", "print_only", is_flag=True, help="Print the block to add instead of writing it.")
@click.pass_obj
@handle_errors
def install(
    settings: Settings, host_name: str, corpora: tuple[Path, ...], data_dir: Path | None, name: str, watch: bool,
    env_pairs: tuple[str, ...], config_path: Path | None, force: bool, print_only: bool,
) -> None:
    """Add this server to HOST's MCP configuration (claude-desktop, cursor, claude-code, vscode).

    The entry starts this installation's ragmcp by its absolute path, with your folders
    (--corpus) and the index location (--data-dir) as RAGMCP_* variables; RAGMCP_*
    settings of the current environment are carried over too, and --env adds more. The
    server indexes with the settings the index records, like every ingestion (ragmcp
    status shows them; ragmcp ingest --rebuild changes them). The previous config file is
    kept beside it as a timestamped .bak; a server of the same name is replaced only with
    --force. A config file this creates is readable by you only, as the entry may hold
    keys; one it rewrites keeps its permissions. Restart the host afterwards.
    """
    host = HOSTS[host_name]
    if not name.strip():
        raise click.BadParameter("the server name cannot be empty", param_hint="--name")
    for folder in corpora:
        load_corpus_config(folder)  # a malformed corpus.toml is refused now, not at the host's first start
    if not corpora and "corpora" in settings.model_fields_set:
        corpora = tuple(settings.corpora)  # from RAGMCP_CORPORA
    settings = with_overrides(
        settings, data_dir=(data_dir or settings.data_dir).absolute(), corpora=[p.absolute() for p in corpora] or None,
        **_settings_from(env_pairs),
    )
    launch = server_launch(settings, watch)
    target = config_path or host.config_path()
    if print_only:
        click.echo(json.dumps({host.servers_key: {name: launch.entry(host)}}, indent=2, ensure_ascii=False))
        _say(f"add it to {target}, under {host.servers_key!r}, or let ragmcp install {host.name} write it there")
    else:
        written = add_server(target, host.servers_key, name, launch.entry(host), force)
        if not written.changed:
            _say(f"{target} already starts server {name!r} this way; nothing changed")
        else:
            verb = "replaced" if written.replaced else "added"
            kept = f" (previous version kept as {written.backup})" if written.backup else ""
            _say(f"{verb} server {name!r} in {target}{kept}")
    _explain(host, name, launch, settings, in_user_file=config_path is None, written=not print_only)


def _settings_from(env_pairs: tuple[str, ...]) -> dict[str, str]:
    """``--env RAGMCP_NAME=VALUE`` options as settings (validated with the others)."""
    fields = set(Settings.names())
    chosen = {}
    for pair in env_pairs:
        key, equals, value = pair.partition("=")
        name = key.strip().upper().removeprefix("RAGMCP_").lower()
        if not equals or not key.strip().upper().startswith("RAGMCP_") or name not in fields:
            raise click.BadParameter(
                f"{pair!r} is not RAGMCP_NAME=VALUE for a setting ragmcp has (the README's Configuration section lists them), "
                "e.g. --env RAGMCP_OCR=off",
                param_hint="--env",
            )
        chosen[name] = value
    return chosen


def _explain(host: Host, name: str, launch: Launch, settings: Settings, in_user_file: bool, written: bool) -> None:
    """What the entry does and what to do next."""
    explicit_corpora = "corpora" in settings.model_fields_set
    if explicit_corpora:
        _say("corpora: " + os.pathsep.join(str(p) for p in settings.corpora))
    else:
        _say("corpora: the bundled demo (no --corpus given; add --corpus PATH for your own folders)")
    _say(f"index: {settings.data_dir}")
    folders = [str(p) for p in settings.corpora] if explicit_corpora else []
    ingest = shlex.join([*ragmcp_command(), "--data-dir", str(settings.data_dir), "ingest", *folders])
    indexed = {Path(folder) for folder, _, _ in indexed_corpora(settings).values()}
    missing = [folder for folder in settings.corpora if folder.resolve() not in indexed]
    if not indexed:
        _say(f"to build the index before the first start (worth it for large folders): {ingest}")
    elif missing:
        them = "it" if len(missing) == 1 else "them"
        listed = ", ".join(map(str, missing)) if explicit_corpora else "the bundled demo corpora"
        _say(f"the index does not hold {listed} yet; to index {them} before the first start: {ingest}")
    else:
        _say(f"the index already holds these corpora; the server brings it up to date when it starts "
             f"(or now: {ingest})")
    if host.name == "claude-code" and in_user_file:
        entry = json.dumps(launch.entry(host), ensure_ascii=False)
        _say(
            "Claude Code rewrites ~/.claude.json while it runs: quit it before installing there, or add the server "
            f"with: claude mcp add-json --scope user {shlex.quote(name)} {shlex.quote(entry)}"
        )
    _say(f"restart {host.title} to start the server" if written
         else f"nothing was written: once the entry is in {host.title}'s config, restart {host.title}")
