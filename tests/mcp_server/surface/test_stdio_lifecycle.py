"""The server's life on a user's machine, over real stdio: configured corpora only, a handshake that
never waits for indexing, concurrent first starts, corpus removal and a database only when configured.

Every test starts real ``ragmcp serve`` processes on fresh data dirs and talks newline-delimited
JSON-RPC with them, as a desktop host does.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_server.indexing.background import BUILD_NICENESS
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from tests.helpers import is_running, niceness, subprocess_env, wait_for, write_doc
from tests.mcp_server.surface.test_stdio import SERVE, StdioPeer

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "mcp_server"]
SEARCH_TOOLS = ("hybrid_search", "vector_search", "keyword_search")
DEMO_CORPORA = ["engineering", "handbook", "products", "reports", "support"]


def corpus_folder(root: Path, name: str, docs: dict[str, str]) -> Path:
    """A corpus folder ``name`` with one Markdown document per entry of ``docs`` (file stem: body)."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "corpus.toml").write_text(f'name = "{name}"\ndescription = "The {name} notes."\n', encoding="utf-8")
    for stem, body in docs.items():
        write_doc(folder, f"{stem}.md", stem.title(), f"# {stem.title()}\n\n{body}")
    return folder


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return corpus_folder(tmp_path, "notes", {
        "compost": "Cooked food must not go in the compost bins; put it in the grey bin.",
        "bikes": "The bike shed code is 4417 and it is locked at midnight.",
        "plants": "Water the office ferns every Thursday.",
    })  # fmt: skip


@pytest.fixture(scope="module")
def demo_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir indexed with the bundled demo corpora (the quick start), built once per module."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("demo") / "data")
    ingest(settings)
    return settings.data_dir


class Served:
    """One ``ragmcp serve`` process over stdio with its stderr log."""

    def __init__(self, settings: Settings, log: Path) -> None:
        self.log = log
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=subprocess_env(settings),
                cwd=log.parent,
            )  # fmt: skip
        self.peer = StdioPeer(process)
        self._ids = iter(range(1, 10_000))

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.peer.request(next(self._ids), method, params or {})
        assert "result" in reply, reply
        return reply["result"]  # type: ignore[no-any-return]

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return self.request("tools/call", {"name": tool, "arguments": arguments})

    def tools(self) -> dict[str, dict[str, Any]]:
        return {tool["name"]: tool for tool in self.request("tools/list")["tools"]}

    def corpora_resource(self) -> list[dict[str, Any]]:
        contents = self.request("resources/read", {"uri": "ragmcp://corpora"})["contents"]
        return json.loads(contents[0]["text"])  # type: ignore[no-any-return]

    def wait_until_indexed(self) -> None:
        """Wait for the tool list to change: the server now serves a newly published generation."""
        self.peer.wait_for_notification("notifications/tools/list_changed")

    def stop(self) -> str:
        """Close stdin as a host does; the exit code must be 0. Returns the stderr log."""
        assert self.peer.close() == 0
        return self.log.read_text(encoding="utf-8")


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    started: list[Served] = []

    def start(settings: Settings, name: str = "server") -> Served:
        served = Served(settings, tmp_path / f"{name}.log")
        started.append(served)
        return served

    yield start
    for served in started:
        if served.peer.process.poll() is None:
            served.peer.process.kill()
            served.peer.process.wait()


def corpus_enum(tool: dict[str, Any]) -> list[str]:
    corpus = tool["inputSchema"]["properties"]["corpus"]
    branches = [b for b in corpus.get("anyOf", [corpus]) if b.get("type") != "null"]
    return branches[0]["enum"]  # type: ignore[no-any-return]


def hit_ids(result: dict[str, Any]) -> list[str]:
    assert not result.get("isError"), result["content"][0]["text"]
    return [hit["citation"]["id"] for hit in result["structuredContent"]["hits"]]


def test_configured_folder_replaces_the_demo_in_an_indexed_data_dir(
    demo_data_dir: Path, notes: Path, tmp_path: Path, serve: Any
) -> None:
    data_dir = shutil.copytree(demo_data_dir, tmp_path / "data")
    server = serve(Settings(data_dir=data_dir, corpora=[notes]))
    initialized = server.peer.initialize()
    assert "Corpora: notes." in initialized["instructions"] and "SQL" not in initialized["instructions"]
    tools = server.tools()
    assert set(tools) == {*SEARCH_TOOLS, "get_document", "check_answer"}  # no sql_query: the demo database goes with the demo
    assert all(corpus_enum(tools[name]) == ["notes"] for name in (*SEARCH_TOOLS, "get_document"))
    assert [c["name"] for c in server.corpora_resource()] == ["notes"]

    server.wait_until_indexed()
    assert [c["name"] for c in server.corpora_resource()] == ["notes"]
    assert hit_ids(server.call("hybrid_search", query="can cooked food go in the compost"))[0] == "notes:compost#0"
    for query in ("annual leave request", "load balancer alert"):  # demo topics: nothing of the demo comes back
        assert all(cid.startswith("notes:") for cid in hit_ids(server.call("hybrid_search", query=query)))
    refused = server.call("get_document", doc_id="handbook:hr/leave-policy")
    assert refused["isError"] and "no document 'handbook:hr/leave-policy'" in refused["content"][0]["text"]
    log = server.stop()
    assert f"in the index but not configured, so not served: {', '.join(DEMO_CORPORA)}" in log
    assert "notes: 3 added" in log and "published gen-" in log


def test_search_during_the_build_says_so_when_the_data_dir_holds_another_index(
    notes: Path, tmp_path: Path, serve: Any
) -> None:
    demo = corpus_folder(tmp_path, "demo", {"tour": "The demo tour covers the okapi enclosure."})
    assert ragmcp(Settings(data_dir=tmp_path / "data", corpora=[demo], database="none"), "ingest").returncode == 0
    settings = Settings(data_dir=tmp_path / "data", corpora=[notes], database="none")
    held = _HeldBuild()
    build = threading.Thread(target=lambda: ingest(settings, progress=held))
    build.start()  # the user's own folder, still being built on a data dir that holds the demo's index
    try:
        assert held.embedding.wait(120)
        server = serve(settings)
        server.peer.initialize()
        refused = server.call("hybrid_search", query="compost")
        text = refused["content"][0]["text"]
        assert refused["isError"] and "The index is being built" in text and "ragmcp ingest" not in text
    finally:
        held.release.set()
        build.join(120)


def test_files_that_could_not_be_read_are_listed_for_the_host_until_they_are_mended(
    notes: Path, tmp_path: Path, serve: Any
) -> None:
    (notes / "invoice.docx").write_bytes(b"PK\x03\x04 not a real Word file")
    settings = Settings.from_names(data_dir=tmp_path / "data", corpora=[notes], database="none", reload_interval_s=0.2)
    assert ragmcp(settings, "ingest").returncode == 0
    server = serve(settings)
    server.peer.initialize()

    [listing] = server.corpora_resource()
    assert listing["skipped_count"] == 1 and [s["source"] for s in listing["skipped"]] == ["invoice.docx"]
    assert "docx" in listing["skipped"][0]["reason"].lower() or "word" in listing["skipped"][0]["reason"].lower()
    corpus = server.tools()["hybrid_search"]["inputSchema"]["properties"]["corpus"]["description"]
    assert "- notes (3 documents; 1 file could not be read, listed in the ragmcp://corpora resource)" in corpus

    (notes / "invoice.docx").unlink()
    assert ragmcp(settings, "ingest").returncode == 0  # another process mends the folder: the host server follows
    server.wait_until_indexed()
    [listing] = server.corpora_resource()
    assert (listing["skipped_count"], listing["skipped"]) == (0, [])
    assert "could not be read" not in server.tools()["hybrid_search"]["inputSchema"]["properties"]["corpus"]["description"]
    server.stop()


def test_three_servers_started_at_once_on_an_empty_data_dir_share_one_build(
    notes: Path, tmp_path: Path, serve: Any
) -> None:
    settings = Settings(data_dir=tmp_path / "data", corpora=[notes], database="none")
    servers = [serve(settings, f"server{i}") for i in range(3)]
    for server in servers:
        assert server.peer.initialize()["serverInfo"]["name"] == "agentic-rag-mcp"
    answers = []
    for server in servers:
        server.wait_until_indexed()
        answers.append(hit_ids(server.call("keyword_search", query="bike shed code")))
    assert answers[0][0] == "notes:bikes#0" and answers == [answers[0]] * 3
    generations = sorted(p.name for p in settings.index_dir.glob("gen-*"))
    assert generations == [IndexLayout(settings.index_dir).current_name()]  # one build, one generation
    logs = [server.stop() for server in servers]
    assert sum(log.count("published gen-") for log in logs) == 1
    assert sum("index is up to date; nothing to do" in log for log in logs) == 2


class _HeldBuild:
    """A progress sink that holds the build as it starts indexing documents, until released."""

    def __init__(self) -> None:
        self.embedding = threading.Event()
        self.release = threading.Event()

    def start(self, phase: str, total: int) -> None:
        if phase == "indexing documents":
            self.embedding.set()
            assert self.release.wait(120)

    def advance(self, amount: int) -> None:
        pass

    def detail(self, text: str) -> None:
        pass


def test_initialize_answers_while_the_index_is_being_built_and_search_says_how_far(
    notes: Path, tmp_path: Path, serve: Any
) -> None:
    settings = Settings(data_dir=tmp_path / "data", corpora=[notes], database="none")
    held = _HeldBuild()
    published: list[str | None] = []
    build = threading.Thread(target=lambda: published.append(ingest(settings, progress=held).generation))
    build.start()  # the build a `ragmcp ingest` (or another server) runs on the same data dir
    try:
        assert held.embedding.wait(120)
        server = serve(settings)
        assert server.peer.initialize()["capabilities"]["tools"]["listChanged"] is True
        assert corpus_enum(server.tools()["hybrid_search"]) == ["notes"]
        for tool, arguments in (("hybrid_search", {"query": "compost"}), ("get_document", {"doc_id": "compost"})):
            refused = server.call(tool, **arguments)
            text = refused["content"][0]["text"]
            assert refused["isError"] and "The index is being built" in text
            assert "indexing documents: 0 of 3 documents done" in text and re.search(r"Retry in about \d+ s", text)
        assert IndexLayout(settings.index_dir).current() is None
        waiting = "another ingestion is running on this data dir (indexing documents: 0 of 3 documents done"
        assert wait_for(lambda: waiting in server.log.read_text(encoding="utf-8"), 60)  # the server's own build waits
    finally:
        held.release.set()
        build.join(120)
    server.wait_until_indexed()
    assert hit_ids(server.call("hybrid_search", query="compost bins"))[0] == "notes:compost#0"
    log = server.stop()
    assert f"now serving index {published[0]}" in log


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc): the build and multiprocessing's resource tracker."""
    children = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line)
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            children.append(int(status.parent.name))
    return children


def test_the_index_build_runs_at_a_lower_priority_and_ends_when_its_server_is_killed(notes: Path, tmp_path: Path, serve: Any) -> None:
    settings = Settings(data_dir=tmp_path / "data", corpora=[notes], database="none")
    held = _HeldBuild()
    build = threading.Thread(target=lambda: ingest(settings, progress=held))
    build.start()  # holds the data dir's ingestion lock, so the server's build waits in its child process
    try:
        assert held.embedding.wait(120)
        server = serve(settings)
        server.peer.initialize()
        assert wait_for(lambda: "another ingestion is running" in server.log.read_text(encoding="utf-8"), 60)
        children = child_pids(server.peer.process.pid)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children]
        assert sum(b"spawn_main" in command for command in commands) == 1, commands
        builder = children[next(i for i, command in enumerate(commands) if b"spawn_main" in command)]
        assert niceness(builder) == niceness(server.peer.process.pid) + BUILD_NICENESS  # searches come first
        server.peer.process.kill()  # as a host may, with no chance to stop the build
        server.peer.process.wait()
        assert wait_for(lambda: not any(is_running(pid) for pid in children), 30)
    finally:
        held.release.set()
        build.join(120)


def ragmcp(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], env=subprocess_env(settings), capture_output=True, text=True, timeout=300, check=False
    )


def test_corpus_remove_deletes_an_unconfigured_corpus_and_rebuild_never_brings_it_back(
    notes: Path, tmp_path: Path, serve: Any
) -> None:
    secrets = corpus_folder(tmp_path, "secrets", {"vault": "The vault combination is kept by the quokka team."})
    both = Settings(data_dir=tmp_path / "data", corpora=[notes, secrets], database="none")
    notes_only = Settings(data_dir=both.data_dir, corpora=[notes], database="none")
    assert ragmcp(both, "ingest").returncode == 0

    refused = ragmcp(both, "corpus", "remove", "secrets")
    assert refused.returncode != 0
    assert f"corpus 'secrets' is configured (RAGMCP_CORPORA includes {secrets.resolve()})" in refused.stderr
    listed = json.loads(ragmcp(notes_only, "corpus", "list", "--json").stdout)
    assert [(c["name"], c["configured"], c["indexed"]) for c in listed] == [
        ("notes", True, True), ("secrets", False, True)
    ]  # fmt: skip
    removed = ragmcp(notes_only, "corpus", "remove", "secrets")
    assert removed.returncode == 0, removed.stderr
    assert "removed secrets from the index" in removed.stderr
    assert ragmcp(notes_only, "ingest", "--rebuild").returncode == 0
    listed = json.loads(ragmcp(both, "corpus", "list", "--json").stdout)
    assert [(c["name"], c["indexed"]) for c in listed] == [("notes", True), ("secrets", False)]

    server = serve(notes_only)
    assert "SQL" not in server.peer.initialize()["instructions"]
    tools = server.tools()
    assert "sql_query" not in tools and corpus_enum(tools["keyword_search"]) == ["notes"]
    assert [c["name"] for c in server.corpora_resource()] == ["notes"]
    assert hit_ids(server.call("keyword_search", query="vault combination quokka")) == []
    refused_doc = server.call("get_document", doc_id="secrets:vault")
    assert refused_doc["isError"]
    assert "index is up to date" in server.stop()


def test_a_missing_configured_folder_is_a_clear_error_at_start(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = subprocess.run(
        SERVE, env=subprocess_env(Settings(data_dir=tmp_path / "data", corpora=[missing])), input="",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert f"The configured corpus folder {missing} does not exist. Create it, or remove it from RAGMCP_CORPORA" in (
        result.stderr
    )
