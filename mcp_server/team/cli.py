"""``ragmcp token``: issue, list and revoke the bearer tokens of a team server.

A token is printed once, on stdout alone (``TOKEN=$(ragmcp token add ...)`` works), and
only its hash is stored. A running server picks up every change at its next request.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from mcp_server.cli_support import handle_errors, with_overrides
from mcp_server.grants import Grant
from mcp_server.indexing.generations import IndexLayout
from mcp_server.settings import Settings
from mcp_server.stores.docstore import DocumentStore
from mcp_server.team.tokens import (
    ClientLimits,
    add_client,
    read_tokens,
    revoke_client,
    tokens_summary,
)

DEFAULT_LIMITS = ClientLimits()


@click.group("token")
@click.option("--file", "tokens_file", type=click.Path(path_type=Path),
              help="The tokens file (env RAGMCP_TOKENS_FILE); the server's --tokens-file.")
@click.pass_context
def token(ctx: click.Context, tokens_file: Path | None) -> None:
    """Manage who may use the HTTP server, what each client may read, and how fast."""
    settings = with_overrides(ctx.obj, tokens_file=tokens_file)
    if settings.http.tokens_file is None:
        raise click.ClickException("no tokens file given: pass --file PATH or set RAGMCP_TOKENS_FILE")
    ctx.obj = settings.http.tokens_file, settings


@token.command("add")
@click.argument("name")
@click.option("--corpora", default="",
              help="Corpora the client may read, comma-separated, or '*' for all (including ones added later).")
@click.option("--sql/--no-sql", default=False, show_default=True, help="Whether the client may run sql_query.")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_LIMITS.rate_per_minute,
              show_default=True, help="Sustained requests per minute.")
@click.option("--burst", type=click.IntRange(min=1), default=DEFAULT_LIMITS.burst, show_default=True,
              help="Requests allowed at once above the sustained rate.")
@click.option("--max-concurrent", type=click.IntRange(min=1), default=DEFAULT_LIMITS.max_concurrent,
              show_default=True, help="Requests in flight at once; more wait their turn.")
@click.pass_obj
@handle_errors
def add(
    target: tuple[Path, Settings], name: str, corpora: str, sql: bool, rate: float, burst: int, max_concurrent: int
) -> None:
    """Create client NAME and print its new token (once: only its hash is kept)."""
    path, settings = target
    names = [c.strip() for c in corpora.split(",") if c.strip()]
    if not names and not sql:
        raise click.ClickException("grant something: --corpora NAME[,NAME...] (or '*' for all), and/or --sql")
    if "*" in names and len(names) > 1:
        raise click.ClickException("--corpora '*' means every corpus; give it alone, or list the names")
    grant = Grant(corpora="*" if names == ["*"] else tuple(names), sql=sql)
    indexed = _indexed_corpora(settings)
    unknown = sorted(set(names) - indexed - {"*"}) if indexed is not None else []
    if unknown:
        click.echo(f"note: not in the current index (yet): {', '.join(unknown)}", err=True)
    secret = add_client(path, name, grant, ClientLimits(
        rate_per_minute=rate, burst=burst, max_concurrent=max_concurrent,
    ))  # fmt: skip
    click.echo(
        f"client {name}: {grant.describe()}; {rate:g} requests/min (burst {burst}), {max_concurrent} at once.\n"
        "Its token is below. Hand it over now: it is not stored and cannot be shown again. "
        "Clients send it as: Authorization: Bearer <token>",
        err=True,
    )
    click.echo(secret)


@token.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
@handle_errors
def list_tokens(target: tuple[Path, Settings], as_json: bool) -> None:
    """List the clients, their grants and limits (never their tokens)."""
    tokens = read_tokens(target[0])
    if as_json:
        click.echo(json.dumps(tokens_summary(tokens), indent=2))
        return
    if not tokens.clients:
        click.echo(f"no clients in {target[0]}", err=True)
    for c in tokens.clients:
        corpora = c.grant.corpora if c.grant.corpora == "*" else ",".join(c.grant.corpora) or "-"
        click.echo(
            f"{c.name}\tcorpora={corpora}\tsql={'yes' if c.grant.sql else 'no'}\trate={c.limits.rate_per_minute:g}/min"
            f"\tburst={c.limits.burst}\tconcurrent={c.limits.max_concurrent}\tcreated={c.created}"
        )


@token.command("revoke")
@click.argument("name")
@click.pass_obj
@handle_errors
def revoke(target: tuple[Path, Settings], name: str) -> None:
    """Remove client NAME: running servers refuse its token from their next request on."""
    revoke_client(target[0], name)
    click.echo(f"revoked {name}; servers refuse its token from their next request on", err=True)


def _indexed_corpora(settings: Settings) -> set[str] | None:
    """The corpora in the current index, or None when there is no index to check against."""
    generation = IndexLayout(settings.index_dir).current()
    if generation is None or not (generation / "docstore.sqlite").is_file():
        return None
    store = DocumentStore(generation / "docstore.sqlite", read_only=True)
    try:
        return {c.name for c in store.corpora()}
    finally:
        store.close()
