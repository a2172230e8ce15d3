"""``ragmcp corpus``: which corpora are configured and indexed, and removing one from the index for good.

The configured corpora (``RAGMCP_CORPORA``) are the ones served. A corpus dropped from the
configuration stops being served at once but stays in the index (re-adding it costs
nothing; another host sharing the data dir may still configure it) until ``ragmcp corpus
remove`` deletes it. A corpus that is still configured is not removed: the next start
would index it again, so the command says to drop it from ``RAGMCP_CORPORA`` first.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import asdict, dataclass

import click

from mcp_server.cli_support import handle_errors
from mcp_server.errors import IngestError
from mcp_server.indexing.build_status import BuildStatus, another_build
from mcp_server.indexing.configured import configured_corpora
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import remove_corpora
from mcp_server.settings import Settings
from mcp_server.stores.docstore import DocumentStore


@dataclass(frozen=True)
class CorpusState:
    name: str
    folder: str
    configured: bool
    indexed: bool
    documents: int
    chunks: int


def indexed_corpora(settings: Settings) -> dict[str, tuple[str, int, int]]:
    """The corpora of the current index generation: name -> (folder, documents, chunks); none without an index."""
    layout = IndexLayout(settings.index_dir)
    if layout.current() is None:
        return {}
    _, _, lease = layout.lease_current()
    try:
        docstore = DocumentStore(lease.generation / "docstore.sqlite", read_only=True)
        counts = docstore.counts()
        stored = {c.name: (c.root, *counts.get(c.name, (0, 0))) for c in docstore.corpora()}
        docstore.close()
    finally:
        lease.release()
    return stored


def serving_setting(settings: Settings, folders: list[str]) -> str:
    """The ``RAGMCP_CORPORA=...`` assignment (quoted for a shell) that serves ``folders`` besides the corpora
    configured now; while RAGMCP_CORPORA is unset (the bundled demo corpora), ``folders`` alone."""
    kept = [str(folder) for folder in settings.corpora] if "corpora" in settings.model_fields_set else []
    value = os.pathsep.join(dict.fromkeys([*kept, *folders]))
    return f"RAGMCP_CORPORA={shlex.quote(value)}"


def corpus_states(settings: Settings) -> list[CorpusState]:
    """Every configured corpus (indexed or not), then every indexed corpus that is not configured."""
    configured = {c.name: str(c.root) for c in configured_corpora(settings)}
    stored = indexed_corpora(settings)
    states = [
        CorpusState(name, folder, True, name in stored, *stored.get(name, ("", 0, 0))[1:])
        for name, folder in configured.items()
    ]
    states += [
        CorpusState(name, root, False, True, documents, chunks)
        for name, (root, documents, chunks) in sorted(stored.items())
        if name not in configured
    ]
    return states


@click.group()
def corpus() -> None:
    """List the configured and indexed corpora; remove one from the index."""


@corpus.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the corpora as JSON.")
@click.pass_obj
@handle_errors
def list_corpora(settings: Settings, as_json: bool) -> None:
    """Show each corpus: configured (served) or only indexed (not served), with its folder and size."""
    states = corpus_states(settings)
    if as_json:
        click.echo(json.dumps([asdict(s) for s in states], indent=2, ensure_ascii=False))
        return
    for s in states:
        if s.configured and s.indexed:
            status = f"served, {s.documents} documents, {s.chunks} chunks"
        elif s.configured:
            status = "configured, not indexed yet (the next ragmcp serve or ragmcp ingest indexes it)"
        else:
            status = (f"not configured, not served; {s.documents} documents in the index. To serve it: "
                      f"{serving_setting(settings, [s.folder])}; to drop it: ragmcp corpus remove {s.name}")
        click.echo(f"{s.name}  {s.folder}\n  {status}")


@corpus.command("remove")
@click.argument("names", nargs=-1, required=True)
@click.pass_obj
@handle_errors
def remove(settings: Settings, names: tuple[str, ...]) -> None:
    """Delete corpora NAMES from the index for good (publishing a new index generation).

    Only corpora that are no longer configured can be removed: drop a corpus's folder from
    RAGMCP_CORPORA first, else the next start would index it again.
    """
    states = {s.name: s for s in corpus_states(settings)}
    for name in names:
        state = states.get(name)
        if state is not None and state.configured:
            raise IngestError(
                f"corpus {name!r} is configured (RAGMCP_CORPORA includes {state.folder}), so the next start would "
                f"index it again. Remove that folder from RAGMCP_CORPORA first, then run: ragmcp corpus remove {name}"
            )
        if state is None:
            indexed = ", ".join(n for n, s in states.items() if s.indexed and not s.configured) or "none"
            raise IngestError(f"no corpus {name!r} in the index; corpora that can be removed: {indexed}")
    generation = remove_corpora(settings, names, on_wait=say_waiting)
    click.echo(f"removed {', '.join(names)} from the index (now generation {generation})", err=True)


def say_waiting(status: BuildStatus | None) -> None:
    """Tell the terminal that another ingestion holds the data dir, and how far it is."""
    click.echo(f"{another_build(status)}; waiting for it to finish", err=True)
