"""``ragmcp``: build the index and query it from the terminal.

Results go to stdout; progress, warnings and errors to stderr. Every command exits
non-zero with a message saying what to do when its input is refused. What comes from inside
documents or the database is printed through :mod:`mcp_server.display_text`, so no title,
cell or skip reason can move the cursor, retitle the terminal or start a line of its own.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
import textwrap
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel
from rich.console import Console

from mcp_server.citation_ids import DocumentRef, parse_or_none
from mcp_server.cli_support import handle_errors, load_settings, with_overrides
from mcp_server.display_text import for_display, json_for_display
from mcp_server.errors import IndexMissingError
from mcp_server.indexing.cli import corpus, indexed_corpora, say_waiting, serving_setting
from mcp_server.indexing.build_status import BuildStatus, read_build_status
from mcp_server.indexing.configured import configured_names
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.watch_cli import watch
from mcp_server.indexing.ingest import IngestReport, ingest
from mcp_server.indexing.run_report import load_run_report
from mcp_server.indexing.watch import start_watching
from mcp_server.indexing.recorded_settings import setting_assignment
from mcp_server.install.cli import install
from mcp_server.models import Hit, SearchFilters, describe_location
from mcp_server.progress import stderr_progress
from mcp_server.retrieval.page_pictures import PagePicture, page_picture
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.sql.demo import database_path, open_database
from mcp_server.sql.guard import ReadOnlyDatabase
from mcp_server.team.cli import token
from mcp_server.team.tokens import read_tokens

stderr = Console(stderr=True, soft_wrap=True)  # whole lines in a host's log, not wrapped at 80 columns


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", type=click.Path(path_type=Path), help="Index location (env RAGMCP_DATA_DIR).")
@click.version_option(package_name="agentic-rag-mcp")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None) -> None:
    """Cited retrieval over local corpora and a read-only SQL database."""
    ctx.obj = load_settings(data_dir=data_dir)


def print_ingest_report(report: IngestReport) -> None:
    for line in report.lines():
        stderr.print(for_display(line), highlight=False, markup=False)


def print_database_report(settings: Settings) -> None:
    """Open the configured database (building it from its sources when needed) and say what it holds."""
    database = open_database(settings)
    if database is None:
        stderr.print("no SQL database configured (RAGMCP_DATABASE)", highlight=False)
        return
    tables = database.schema()
    stderr.print(
        f"database {database.name}: {len(tables)} tables, {sum(t.row_count for t in tables):,} rows ({database.path})",
        highlight=False,
    )


def database_status(settings: Settings) -> dict[str, Any]:
    """Where the configured database is and its tables with row counts; builds nothing."""
    path = database_path(settings)
    if path is None:
        return {"path": None, "built": False}
    if not path.is_file():
        return {"path": str(path), "built": False}
    tables = ReadOnlyDatabase(path, timeout_s=settings.sql.timeout_s).schema()
    return {"path": str(path), "built": True, "tables": [{"name": t.name, "rows": t.row_count} for t in tables]}


def ensure_index(settings: Settings) -> None:
    """Build the index from the configured corpora if there is none yet, with progress on stderr."""
    if IndexLayout(settings.index_dir).current() is None:
        stderr.print(f"no index yet at {settings.index_dir}; building it from the configured corpora")
        with stderr_progress(stderr) as progress:
            print_ingest_report(ingest(settings, progress=progress, on_wait=say_waiting))


def open_retriever(settings: Settings, corpus: str | None) -> Retriever:
    """Open the index for search and doc, building it from the configured corpora first if there is none yet.

    They read the corpora of RAGMCP_CORPORA, and ``corpus`` too when the index holds it (saying on
    stderr how to serve it); while RAGMCP_CORPORA is unset, every corpus in the index: what
    ``ragmcp ingest FOLDER`` indexed is found without a setting.
    """
    ensure_index(settings)
    indexed = {name: folder for name, (folder, _, _) in indexed_corpora(settings).items() if Path(folder).is_dir()}
    if "corpora" not in settings.model_fields_set:
        return Retriever.open(with_overrides(settings, corpora=list(indexed.values())) if indexed else settings)
    if corpus is None or corpus not in indexed or corpus in configured_names(settings):
        return Retriever.open(settings)
    stderr.print(
        f"note: {corpus} is not in RAGMCP_CORPORA, so servers started with these settings (rag-agent, ragmcp serve) "
        f"do not serve it; to serve it: {serving_setting(settings, [indexed[corpus]])}",
        highlight=False, markup=False,
    )
    return Retriever.open(with_overrides(settings, corpora=[*settings.corpora, Path(indexed[corpus])]))


@main.command("ingest")
@click.argument("targets", nargs=-1)
@click.option("--rebuild", is_flag=True, help="Start a fresh index (needed after changing the embedding model).")
@click.option("--strict", is_flag=True,
              help="Exit with status 1 when any file was skipped (for CI); the index is still updated.")
@click.pass_obj
@handle_errors
def ingest_command(settings: Settings, targets: tuple[str, ...], rebuild: bool, strict: bool) -> None:
    """Build or update the index from corpus folders, and the demo database.

    TARGETS are corpus folders or names of known corpora; with none, every configured
    corpus (RAGMCP_CORPORA, default: the bundled demo corpora) is brought up to date.
    Unchanged documents cost nothing. Only configured corpora are served (ragmcp search
    and doc read every indexed corpus while RAGMCP_CORPORA is unset); --rebuild
    starts a fresh index that keeps every indexed corpus (only `ragmcp corpus remove` drops one). A database built from sources (the demo database, or a folder in
    RAGMCP_DATABASE) is rebuilt when they changed. Another ingestion running on the data
    dir is waited for. A file that cannot be indexed is skipped with a line saying why;
    the rest is indexed.
    """
    with stderr_progress(stderr) as progress:
        report = ingest(settings, targets, rebuild=rebuild, progress=progress, on_wait=say_waiting)
    print_ingest_report(report)
    served = configured_names(settings)
    indexed = indexed_corpora(settings)
    for c in report.corpora:
        if c.name not in served:
            stderr.print(_unserved_note(settings, c.name, indexed[c.name][0]), highlight=False, markup=False)
    if not targets or any(c.name in served for c in report.corpora):  # not for a folder these settings do not serve
        print_database_report(settings)
    skipped = sum(len(c.skipped) for c in report.corpora)
    if strict and skipped:
        raise click.ClickException(f"{skipped} files skipped (--strict); fix or remove them, or exclude their suffixes")


def _unserved_note(settings: Settings, name: str, folder: str) -> str:
    """Who reads corpus ``name`` (in ``folder``), indexed but not configured, and how to serve it or drop it."""
    serve = serving_setting(settings, [folder])
    if "corpora" not in settings.model_fields_set:
        return (
            f"note: ragmcp search and ragmcp doc read {name} (with RAGMCP_CORPORA unset they read every indexed "
            f"corpus), but servers started with these settings (rag-agent, ragmcp serve) serve the bundled demo "
            f"corpora. To serve {name}: {serve}, or rag-agent ask --corpus {shlex.quote(folder)} \"...\", or "
            f"ragmcp install HOST --corpus {shlex.quote(folder)}. "
            f"To drop it from the index: ragmcp corpus remove {name}"
        )
    return (
        f"note: {name} is not in RAGMCP_CORPORA, so servers started with these settings (rag-agent, ragmcp serve) "
        f"do not serve it; ragmcp search --corpus {name} reads it. To serve it: {serve} (ragmcp install HOST "
        f"--corpus FOLDER writes that into a host's config). To drop it from the index: ragmcp corpus remove {name}"
    )


def _filters(category: str | None, tags: tuple[str, ...], since: date | None, until: date | None, prefix: str | None) -> SearchFilters:
    return SearchFilters(category=category, tags=list(tags), date_from=since, date_to=until, source_prefix=prefix)


def _echo_line(line: str) -> None:
    """Print one line to stdout, any control, escape or text-direction character in it escaped."""
    click.echo(for_display(line))


def _print_hits(hits: list[Hit], reranked_by: str | None) -> None:
    if not hits:
        click.echo("no hits")
    label = f"rerank score ({reranked_by})" if reranked_by else None
    for hit in hits:
        c = hit.citation
        _echo_line(f"[{c.id}]  {label or f'{hit.retriever} score'} {hit.score:.4f}")
        location = c.section if c.section.startswith(c.title) else " > ".join(filter(None, [c.title, c.section]))
        where = ", ".join(filter(None, [f"chars {c.char_start}-{c.char_end}", c.location()]))
        _echo_line(f"  {location} — {c.source} ({where})")
        body = for_display(" ".join(hit.text.split()))
        click.echo(textwrap.indent(textwrap.fill(textwrap.shorten(body, 600, placeholder=" …"), 100), "  "))
        click.echo()


def _print_json(value: BaseModel | list[Any]) -> None:
    if isinstance(value, list):
        text = json.dumps([v.model_dump(mode="json") for v in value], ensure_ascii=False, indent=2)
    else:
        text = value.model_dump_json(indent=2)
    click.echo(json_for_display(text))


def _as_date(ctx: click.Context, param: click.Parameter, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date; use YYYY-MM-DD") from None


@main.command()
@click.argument("query")
@click.option("--mode", type=click.Choice(["hybrid", "vector", "keyword"]), default="hybrid", show_default=True)
@click.option("--corpus", help="Search only this corpus.")
@click.option("-k", "--top-k", type=int, default=5, show_default=True, help="Number of hits.")
@click.option("--category", help="Only documents of this category.")
@click.option("--tag", "tags", multiple=True, help="Only documents with this tag (repeatable; all must match).")
@click.option("--since", callback=_as_date, help="Only documents dated on or after YYYY-MM-DD.")
@click.option("--until", callback=_as_date, help="Only documents dated on or before YYYY-MM-DD.")
@click.option("--source-prefix", help="Only documents whose path starts with this, e.g. hr/.")
@click.option("--json", "as_json", is_flag=True, help="Print hits as JSON.")
@click.pass_obj
@handle_errors
def search(
    settings: Settings, query: str, mode: str, corpus: str | None, top_k: int, category: str | None,
    tags: tuple[str, ...], since: date | None, until: date | None, source_prefix: str | None, as_json: bool,
) -> None:
    """Search the index; every hit is printed with its citation id.

    Searched: the corpora of RAGMCP_CORPORA, or while it is unset every corpus in the index
    (what ragmcp ingest FOLDER indexed among them); --corpus names any indexed corpus.
    """
    retriever = open_retriever(settings, corpus)
    try:
        ranking = retriever.searcher.ranking(
            query, mode=mode, corpus=corpus, top_k=top_k,  # type: ignore[arg-type]
            filters=_filters(category, tags, since, until, source_prefix),
        )
    finally:
        retriever.close()
    if not ranking.hits and corpus is None and retriever.unserved and "corpora" in settings.model_fields_set:
        stderr.print(
            f"not searched: {', '.join(retriever.unserved)}, in the index but not in RAGMCP_CORPORA "
            "(search one with --corpus NAME)", highlight=False, markup=False,
        )
    _print_json(ranking.hits) if as_json else _print_hits(ranking.hits, ranking.reranked_by)


@main.command("doc")
@click.argument("ref")
@click.option("--corpus", help="Corpus of the document, when REF is a bare doc_id found in several.")
@click.option("--chunk", type=int, help="Show only this chunk (and --window chunks around it).")
@click.option("--window", type=int, default=0, show_default=True)
@click.option("--quote", help="Locate this passage: its chunk, page, lines and match quality; show the chunks around it.")
@click.option(
    "--png", type=click.Path(dir_okay=False, path_type=Path),
    help="Write a picture of the cited page (PDFs, pictures) to this PNG file, the chunk or --quote highlighted.",
)  # fmt: skip
@click.option("--page", type=click.IntRange(min=1), help="With --png: picture this page (from 1) instead.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
@handle_errors
def doc(
    settings: Settings, ref: str, corpus: str | None, chunk: int | None, window: int, quote: str | None,
    png: Path | None, page: int | None, as_json: bool,
) -> None:
    """Show a document by doc_id or citation id, with its chunk map (from the corpora search reads).

    With --png, write a picture of the page the citation id's chunk (or --chunk, or --quote) is on, that span
    highlighted, instead: ragmcp doc 'handbook:policies/leave#2' --png page.png.
    """
    if page is not None and png is None:
        raise click.UsageError("--page picks the page of the picture --png writes; pass --png FILE too.")
    named = parse_or_none(ref)
    retriever = open_retriever(settings, corpus or (named.corpus if isinstance(named, DocumentRef) else None))
    try:
        if png is not None:
            _write_page_picture(page_picture(retriever, ref, corpus=corpus, chunk=chunk, quote=quote, page=page), png)
            return
        view = retriever.documents.get_document(ref, corpus=corpus, chunk=chunk, window=window, quote=quote)
    finally:
        retriever.close()
    if as_json:
        _print_json(view)
        return
    _echo_line(f"{DocumentRef(view.corpus, view.doc_id)} — {view.title} ({view.source})")
    if view.metadata.get("ocr_pages"):
        click.echo(f"  read by OCR: pages {view.metadata['ocr_pages']}")
    if view.quote is not None:
        from mcp_server.surface.rendering import render_quote

        click.echo(f"  {render_quote(view.quote)}")
    for span in view.chunks:
        where = describe_location(span.page, span.page_end, view.page_kind, span.line_start, span.line_end)
        chars = ", ".join(filter(None, [f"chars {span.char_start}-{span.char_end}", where]))
        _echo_line(f"  [{span.citation_id}] {chars} {span.section}")
    click.echo()
    click.echo(for_display(view.text, lines=True))


def _write_page_picture(picture: PagePicture, path: Path) -> None:
    try:
        path.write_bytes(picture.png)
    except OSError as error:
        raise click.ClickException(
            f"cannot write the picture to {path} ({error.strerror}); pass --png a file in a folder you can write to."
        ) from error
    stderr.print(
        for_display(f"wrote page {picture.page} of {picture.corpus}:{picture.doc_id} to {path} ({len(picture.png):,} bytes)"),
        highlight=False, markup=False,
    )


@main.command()
@click.argument("query")
@click.option("-p", "--param", "params", multiple=True, help="A bound parameter for the next ? (repeatable).")
@click.option("--max-rows", type=int, help="Row cap (default and ceiling: RAGMCP_SQL_MAX_ROWS).")
@click.option("--schema", is_flag=True, help="Print the database schema before the result.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
@handle_errors
def sql(settings: Settings, query: str, params: tuple[str, ...], max_rows: int | None, schema: bool, as_json: bool) -> None:
    """Run one read-only SELECT on the configured database; the result cites the query."""
    database = open_database(settings)
    if database is None:
        raise click.ClickException(
            "no SQL database is configured: set RAGMCP_DATABASE to a SQLite file or a folder of database sources "
            "(schema.json and one CSV per table). Unset, the demo database goes with the bundled demo corpora only."
        )
    if schema:
        click.echo(for_display(database.schema_text(), lines=True) + "\n")
    result = database.query(query, list(params) or None, max_rows=max_rows)
    if as_json:
        _print_json(result)
        return
    table = [[for_display(c) for c in result.columns]]
    table += [["NULL" if v is None else for_display(str(v)) for v in row] for row in result.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(result.columns))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    more = " (truncated: more rows exist; add LIMIT/WHERE or raise --max-rows)" if result.truncated else ""
    click.echo(f"\n{result.row_count} rows{more}  [{result.citation_id}]")


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_obj
@handle_errors
def status(settings: Settings, as_json: bool) -> None:
    """Show where the index is, what it holds and what model built it, how far a running build is, and the
    database's tables."""
    database = database_status(settings)
    building = read_build_status(settings.data_dir)
    try:
        retriever = Retriever.open(settings)
    except IndexMissingError as e:
        if as_json:
            missing = {"index": str(settings.index_dir), "built": False, "database": database, **_build_json(building)}
            click.echo(json_for_display(json.dumps(missing, ensure_ascii=False)))
            return
        if building is None:
            raise click.ClickException(str(e)) from e
        click.echo(f"index: none yet at {settings.index_dir}")
        _echo_build(building)
        return
    last_ingest = load_run_report(settings.data_dir)
    try:
        corpora = retriever.corpora()
        manifest = retriever.manifest
        stored = indexed_corpora(settings)
        not_served = [
            {"name": name, "folder": stored[name][0], "documents": stored[name][1], "chunks": stored[name][2]}
            for name in retriever.unserved if name in stored
        ]
        info = {
            "index": str(retriever.generation), "built": True, "generation": manifest.generation,
            "created": manifest.created, "embedding_model": manifest.embedding_model,
            "corpus_models": manifest.corpus_models,
            "dimension": manifest.dimension, "documents": sum(c.documents for c in corpora),
            "chunks": sum(c.chunks for c in corpora), "index_settings": manifest.settings,
            "corpora": [c.model_dump() for c in corpora], "not_served": not_served, "database": database,
            "last_ingest": last_ingest,
        }  # documents and chunks: of the served corpora, those in "corpora"
    finally:
        retriever.close()
    info |= _build_json(building)
    if as_json:
        click.echo(json_for_display(json.dumps(info, indent=2, ensure_ascii=False)))
        return
    click.echo(f"index: {info['index']}\ncreated: {manifest.created}")
    click.echo(f"embedding model: {manifest.embedding_model} ({manifest.dimension}-d)")
    source = "" if "corpora" in settings.model_fields_set else " (RAGMCP_CORPORA unset: the bundled demo corpora)"
    click.echo(f"served: {info['documents']} documents, {info['chunks']} chunks in {len(corpora)} corpora{source}")
    if manifest.settings is not None:
        recorded = " ".join(setting_assignment(name, value) for name, value in manifest.settings.items())
        click.echo(f"indexed with: {recorded} (change with: ragmcp ingest --rebuild)")
    models = manifest.corpus_models or {}
    for c in corpora:
        model = f", embedded with {models[c.name]}" if c.name in models else ""
        _echo_line(
            f"  {c.name}: {c.documents} documents, {c.chunks} chunks{model} — {textwrap.shorten(c.description, 90)}"
        )
    if not_served:
        listed = ", ".join(f"{c['name']} ({c['documents']} documents)" for c in not_served)
        serve = serving_setting(settings, [str(c["folder"]) for c in not_served])
        _echo_line(f"indexed but not served: {listed} — serve with {serve}; drop with ragmcp corpus remove NAME")
    _echo_last_ingest(last_ingest)
    _echo_build(building)
    if database["path"] is None:
        click.echo("database: none configured (RAGMCP_DATABASE)")
        return
    if not database["built"]:
        click.echo(f"database: not built yet at {database['path']} (run ragmcp ingest)")
        return
    click.echo(f"database: {database['path']}")
    for table in database["tables"]:
        _echo_line(f"  {table['name']}: {table['rows']} rows")


def _build_json(status: BuildStatus | None) -> dict[str, Any]:
    """What ``status --json`` says of the running index build: ``build``, its record and position (nothing
    when no build runs)."""
    return {} if status is None else {"build": {**asdict(status), "position": status.describe()}}


def _echo_build(status: BuildStatus | None) -> None:
    """The running index build's position: phase, documents done and what the current document is doing."""
    if status is not None:
        _echo_line(f"building now: {status.describe()} (process {status.pid})")


def _echo_last_ingest(run: dict[str, Any] | None) -> None:
    """The last ingestion run: when it finished, every file it skipped with the reason, and the files of
    types not indexed."""
    if run is None:
        return
    lines = [line for corpus in run.get("corpora", []) for line in corpus.get("lines", [])]
    skipped = sum(len(corpus.get("skipped", [])) for corpus in run.get("corpora", []))
    other = sum(sum(corpus.get("other_types", {}).values()) for corpus in run.get("corpora", []))
    passed = f", {other} of types not indexed" if other else ""
    click.echo(f"last ingest: {run.get('finished')}, {skipped} files skipped{passed}" + (":" if lines else ""))
    for line in lines:
        _echo_line(f"  {line}")


@main.command()
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio for a desktop host that starts the server; http for a shared server.")
@click.option("--host", help="HTTP: address to bind (env RAGMCP_HTTP_HOST, default 127.0.0.1).")
@click.option("--port", type=int, help="HTTP: port (env RAGMCP_HTTP_PORT, default 8000).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="HTTP: worker processes sharing the index (needs --stateless).")
@click.option("--allowed-host", "allowed_hosts", multiple=True,
              help="HTTP: accept this Host header too, e.g. rag.example.com:* (repeatable).")
@click.option("--allowed-origin", "allowed_origins", multiple=True,
              help="HTTP: accept this Origin header too, e.g. https://app.example.com (repeatable).")
@click.option("--stateless/--stateful", default=None,
              help="HTTP: a fresh MCP transport per request, no sessions (default: stateless).")
@click.option("--max-body-bytes", type=int, help="HTTP: largest request body accepted (default 1 MiB).")
@click.option("--tokens-file", type=click.Path(path_type=Path),
              help="HTTP: require bearer tokens from this file (env RAGMCP_TOKENS_FILE; see: ragmcp token).")
@click.option("--no-auth", is_flag=True,
              help="HTTP: allow serving beyond loopback without tokens (an authenticating proxy must sit in front).")
@click.option("--public-url", help="HTTP: the URL clients use, e.g. https://rag.example.com (env RAGMCP_PUBLIC_URL).")
@click.option("--audit-log", type=click.Path(path_type=Path),
              help="HTTP: the audit log, one JSON line per call (env RAGMCP_AUDIT_LOG, default <data dir>/audit.jsonl).")
@click.option("--watch", "watch_folders", is_flag=True,
              help="Re-index the corpus folders when their files change (as ragmcp watch does).")
@click.option("--wait-for-index", is_flag=True,
              help="Bring the index up to date before serving (for scripts and one-shot clients; hosts need not).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True,
              help="Least severe log lines written to stderr (rag-agent runs its server with warning).")
@click.pass_obj
@handle_errors
def serve(
    settings: Settings, transport: str, host: str | None, port: int | None, workers: int,
    allowed_hosts: tuple[str, ...], allowed_origins: tuple[str, ...], stateless: bool | None,
    max_body_bytes: int | None, tokens_file: Path | None, no_auth: bool, public_url: str | None,
    audit_log: Path | None, watch_folders: bool, wait_for_index: bool, log_level: str,
) -> None:
    """Serve the retrieval tools over MCP (stdio by default; HTTP at /mcp with --transport http).

    The configured corpora (RAGMCP_CORPORA) are served, and only they: on start the index is
    brought in line with them in the background, unchanged documents costing nothing, while
    the published index keeps serving. Over stdio the handshake never waits for that: until a
    corpus is indexed, searching it says how far the build is. Over HTTP, a data dir with no
    index at all is built first. Progress goes to stderr.
    Logs go to stderr; over stdio, stdout carries nothing but the protocol. Over HTTP with
    a tokens file, clients need a token and each reads only what its grant allows; without
    one, the server binds to loopback only, unless --no-auth.
    """
    # Imported here: the MCP SDK and uvicorn add a second to start-up, which other commands don't need.
    from mcp_server.indexing.background import LOG_FORMAT, BackgroundIngest
    from mcp_server.surface.stdio import serve_stdio
    from mcp_server.team.http_app import serve_http

    settings = with_overrides(
        settings, http_host=host, http_port=port, allowed_hosts=list(allowed_hosts) or None,
        allowed_origins=list(allowed_origins) or None, stateless_http=stateless, max_body_bytes=max_body_bytes,
        tokens_file=tokens_file, public_url=public_url, audit_log=audit_log,
    )
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, format=LOG_FORMAT)
    if wait_for_index:
        with stderr_progress(stderr) as progress:
            print_ingest_report(ingest(settings, progress=progress, on_wait=say_waiting))
    if transport == "http":
        if workers > 1 and not settings.http.stateless_http:
            raise click.ClickException("--workers above 1 needs --stateless: sessions live in one worker's memory")
        _check_auth(settings, no_auth)
    watching = start_watching(settings, logging.getLogger("mcp_server.watch").info) if watch_folders else None
    try:
        if transport == "stdio":
            serve_stdio(settings)
        else:
            stderr.print(f"audit log: {settings.audit_path}", soft_wrap=True, highlight=False)
            ensure_index(settings)  # HTTP workers start from a published generation; later updates are followed
            build = BackgroundIngest(settings)
            build.start()
            try:
                serve_http(settings, workers)
            finally:
                build.stop()
    finally:
        if watching is not None:
            watching.stop()


def _check_auth(settings: Settings, no_auth: bool) -> None:
    """Refuse an HTTP server that anyone off this machine could use without a token, unless --no-auth."""
    from mcp_server.team.http_app import is_loopback

    if settings.http.tokens_file is not None:
        if no_auth:
            raise click.ClickException("--no-auth contradicts the tokens file; drop one of them")
        clients = read_tokens(settings.http.tokens_file).clients
        stderr.print(
            f"authentication: bearer tokens of {len(clients)} clients in {settings.http.tokens_file}",
            soft_wrap=True, highlight=False,
        )
        return
    if is_loopback(settings.http.host):
        return
    if not no_auth:
        raise click.ClickException(
            f"refusing to serve on {settings.http.host} without authentication: anyone who can reach it could read "
            "every corpus and query the database. Create tokens (ragmcp token --file PATH add NAME --corpora ...) "
            "and pass --tokens-file PATH, or bind to 127.0.0.1, or pass --no-auth if an authenticating proxy "
            "sits in front."
        )
    stderr.print(
        f"[bold red]WARNING: serving on {settings.http.host}:{settings.http.port} with NO authentication.[/]\n"
        "[red]Anyone who can reach this address can read every corpus and query the database. "
        "Make sure an authenticating reverse proxy sits in front. Clients must send a Host "
        "header you allow with --allowed-host.[/]",
        highlight=False,
    )


main.add_command(token)
main.add_command(install)
main.add_command(watch)
main.add_command(corpus)
