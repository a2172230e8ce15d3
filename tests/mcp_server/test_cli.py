"""The ``ragmcp`` command line, run in-process with click's runner against real index files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_server.cli import main
from mcp_server.settings import Settings
from tests.document_fixtures import write_docx, write_pptx
from tests.helpers import DEMO_DATABASE_SOURCES, demo_row_counts


@pytest.fixture
def run(tiny_settings: Settings, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(tiny_settings.data_dir))
    monkeypatch.setenv("RAGMCP_CORPORA", str(tiny_settings.corpora[0]))
    monkeypatch.setenv("RAGMCP_DATABASE", str(DEMO_DATABASE_SOURCES))  # with a user corpus, SQL is configured

    def invoke(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, list(args))
        return result.exit_code, result.stdout, result.stderr

    return invoke


def test_search_builds_a_missing_index_then_prints_cited_hits(run) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run("search", "zebraword fuel", "-k", "1")
    assert code == 0, err
    assert "no index yet" in err and "published gen-" in err
    assert out.startswith("[tiny:alpha#0]")
    assert "alpha.md (chars 0-" in out


def test_search_json_output_is_the_hit_contract(run) -> None:  # type: ignore[no-untyped-def]
    run("ingest")
    code, out, _ = run("search", "lead shielding", "--json", "--mode", "vector", "-k", "2")
    hits = json.loads(out)
    assert code == 0 and len(hits) == 2
    assert set(hits[0]) == {"rank", "score", "retriever", "text", "citation"}
    assert set(hits[0]["citation"]) == {
        "id", "corpus", "doc_id", "chunk", "title", "source", "section", "char_start", "char_end", "updated", "url",
        "page", "page_end", "page_kind", "line_start", "line_end", "boxes",
    }
    assert hits[0]["citation"]["id"] == "tiny:gamma#0"
    assert hits[0]["citation"]["line_start"] == 4  # after three lines of front matter
    assert hits[0]["citation"]["boxes"] is None  # a Markdown file shows no pages


def test_ingest_twice_reports_nothing_to_do(run) -> None:  # type: ignore[no-untyped-def]
    assert run("ingest")[0] == 0
    code, _, err = run("ingest")
    assert code == 0 and "index is up to date" in err and "3 unchanged" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "x", "--corpus", "nope"), "unknown corpus 'nope'; available: tiny"),
        (("search", "x", "-k", "0"), "top_k must be between 1 and 50"),
        (("search", "", ), "the query is empty"),
        (("search", "x", "--since", "last week"), "is not a date; use YYYY-MM-DD"),
        (("doc", "../../etc/passwd"), "no document '../../etc/passwd'"),
        (("ingest", "/no/such/folder"), "neither a folder nor a known corpus"),
    ],
)
def test_bad_input_exits_non_zero_with_a_message(run, args: tuple[str, ...], message: str) -> None:  # type: ignore[no-untyped-def]
    run("ingest")
    code, out, err = run(*args)
    assert code != 0
    assert message in err
    assert "Traceback" not in err + out


def test_status_reports_model_corpora_and_database(run, tiny_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    database = tiny_settings.data_dir / "databases" / "company.sqlite"
    code, out, _ = run("status", "--json")
    assert code == 0 and json.loads(out) == {
        "index": json.loads(out)["index"], "built": False, "database": {"path": str(database), "built": False}
    }
    run("ingest")
    code, out, _ = run("status", "--json")
    status = json.loads(out)
    assert status["embedding_model"] == "auto" and status["dimension"] == 384
    assert status["corpus_models"] == {"tiny": "minilm-int8"}  # English text: MiniLM
    assert [(c["name"], c["documents"], c["chunks"]) for c in status["corpora"]] == [("tiny", 3, 3)]
    tables = {table["name"]: table["rows"] for table in status["database"]["tables"]}
    assert status["database"]["path"] == str(database) and tables == demo_row_counts()
    code, out, _ = run("status")
    assert code == 0 and f"database: {database}" in out and f"  orders: {tables['orders']} rows" in out
    assert "  tiny: 3 documents, 3 chunks, embedded with minilm-int8 — " in out


@pytest.mark.parametrize(
    ("database", "message"),
    [
        (None, "no SQL database is configured: set RAGMCP_DATABASE to a SQLite file or a folder of database sources"),
        ("none", "no SQL database is configured"),
        ("", "RAGMCP_DATABASE is set but empty. Set it to a SQLite file"),
        ("/no/such/file.sqlite", "RAGMCP_DATABASE names /no/such/file.sqlite, which does not exist"),
    ],
)
def test_with_a_user_corpus_sql_needs_a_configured_database(  # type: ignore[no-untyped-def]
    run, monkeypatch: pytest.MonkeyPatch, database: str | None, message: str
) -> None:
    if database is None:
        monkeypatch.delenv("RAGMCP_DATABASE")
    else:
        monkeypatch.setenv("RAGMCP_DATABASE", database)
    code, out, err = run("sql", "SELECT 1")
    assert code != 0 and message in err and "Traceback" not in err + out


def test_status_without_a_database_says_none_is_configured(run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMCP_DATABASE", "none")
    code, out, _ = run("status", "--json")
    assert code == 0 and json.loads(out)["database"] == {"path": None, "built": False}


def test_ingest_builds_the_demo_database_once(run, tiny_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    database = tiny_settings.data_dir / "databases" / "company.sqlite"
    code, _, err = run("ingest")
    counts = demo_row_counts()
    assert code == 0 and database.is_file()
    assert f"database company: {len(counts)} tables, {sum(counts.values()):,} rows" in err
    built = database.stat()
    assert run("ingest")[0] == 0
    assert (database.stat().st_ino, database.stat().st_mtime_ns) == (built.st_ino, built.st_mtime_ns)


def test_doc_shows_chunk_map_and_text(run) -> None:  # type: ignore[no-untyped-def]
    run("ingest")
    code, out, _ = run("doc", "tiny:beta#0")
    assert code == 0
    assert out.splitlines()[0] == "tiny:beta — Beta (beta.md)"
    assert "[tiny:beta#0] chars 0-" in out and "quarterly roadmap" in out


def test_ingest_progress_and_logs_go_to_stderr_only(tiny_settings: Settings, tmp_path: Path) -> None:
    env = {"RAGMCP_DATA_DIR": str(tiny_settings.data_dir), "RAGMCP_CORPORA": str(tiny_settings.corpora[0])}
    result = subprocess.run(
        [sys.executable, "-m", "mcp_server", "ingest"], env={**__import__("os").environ, **env},
        capture_output=True, text=True, check=True,
    )
    assert result.stdout == ""
    assert "indexing documents" in result.stderr and "published gen-" in result.stderr


def test_sql_reads_the_demo_database_and_cites_the_query(run) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run("sql", "SELECT name FROM departments WHERE name = ?", "-p", "R&D", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["rows"] == [["R&D"]] and result["columns"] == ["name"]
    assert result["citation_id"].startswith("sql:company:") and len(result["citation_id"]) == len("sql:company:") + 8


def test_sql_refuses_writes_and_leaves_the_database_unchanged(run, tiny_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    assert run("sql", "SELECT count(*) FROM employees")[0] == 0
    database = tiny_settings.data_dir / "databases" / "company.sqlite"
    before = database.read_bytes()
    code, _, err = run("sql", "DELETE FROM employees")
    assert code == 1 and "Only read-only queries are allowed" in err
    assert database.read_bytes() == before


def test_ingest_waits_for_an_ingestion_already_running(tiny_settings: Settings) -> None:
    from filelock import FileLock

    from tests.helpers import subprocess_env

    tiny_settings.data_dir.mkdir(parents=True)
    lock = FileLock(str(tiny_settings.data_dir / "ingest.lock"))  # as another server's build holds it
    lock.acquire()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_server", "ingest"], env=subprocess_env(tiny_settings), stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first.startswith("another ingestion is running on this data dir") and "waiting for it to finish" in first
        assert process.poll() is None
    finally:
        lock.release()
    assert process.wait(timeout=300) == 0
    # Whole lines although stderr is no terminal (rich would wrap this one at 80 columns).
    assert re.search(r"\npublished gen-\S+: 3 chunks written, 3 embedded, in [0-9.]+ s\n", process.stderr.read())


def test_a_settings_error_names_the_problem_without_quoting_the_api_key(run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMCP_EMBEDDING_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("RAGMCP_EMBEDDING_API_KEY", "sk-do-not-print-me")
    code, _, err = run("status")
    assert code == 1
    assert "RAGMCP_EMBEDDING_MODEL is 'auto', which uses no server" in err
    assert "sk-do-not-print-me" not in err


def test_ingesting_a_folder_that_is_not_configured_says_where_it_is_served(  # type: ignore[no-untyped-def]
    run, tmp_path: Path, tiny_settings: Settings
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "compost.md").write_text("# Compost\n\nCooked food must not go in the compost bins.\n", encoding="utf-8")
    assert run("ingest")[0] == 0  # the configured corpus, tiny
    code, _, ingested = run("ingest", str(folder))
    assert code == 0 and "notes: 1 added" in ingested
    configured = os.pathsep.join([str(tiny_settings.corpora[0]), str(folder.resolve())])

    code, out, err = run("search", "compost bins", "--corpus", "notes", "-k", "1")
    assert code == 0 and out.startswith("[notes:compost#0]")
    assert "note: notes is not in RAGMCP_CORPORA" in err and f"to serve it: RAGMCP_CORPORA={configured}" in err
    code, out, _ = run("doc", "notes:compost")
    assert code == 0 and out.startswith("notes:compost — Compost (compost.md)")
    code, out, err = run("search", "compost", "--mode", "keyword")  # RAGMCP_CORPORA's corpora only
    assert code == 0 and out == "no hits\n"
    assert "not searched: notes, in the index but not in RAGMCP_CORPORA (search one with --corpus NAME)" in err
    note = " ".join(ingested.split())  # the console may wrap the line
    assert "notes is not in RAGMCP_CORPORA" in note and f"To serve it: RAGMCP_CORPORA={configured}" in note
    assert "ragmcp search --corpus notes reads it" in note and "ragmcp corpus remove notes" in note


def test_status_does_not_count_corpora_it_does_not_serve(  # type: ignore[no-untyped-def]
    run, tmp_path: Path, tiny_settings: Settings
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "compost.md").write_text("# Compost\n\nCooked food must not go in the compost bins.\n", encoding="utf-8")
    assert run("ingest")[0] == 0 and run("ingest", str(folder))[0] == 0
    configured = os.pathsep.join([str(tiny_settings.corpora[0]), str(folder.resolve())])

    code, out, _ = run("status", "--json")
    status = json.loads(out)
    assert (status["documents"], status["chunks"], [c["name"] for c in status["corpora"]]) == (3, 3, ["tiny"])
    assert status["not_served"] == [{"name": "notes", "folder": str(folder.resolve()), "documents": 1, "chunks": 1}]
    code, out, _ = run("status")
    assert "served: 3 documents, 3 chunks in 1 corpora\n" in out
    assert f"indexed but not served: notes (1 documents) — serve with RAGMCP_CORPORA={configured}" in out


def _ragmcp(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``ragmcp ARGS`` as a new user runs it: this HOME, no RAGMCP_* setting."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("RAGMCP_", "XDG_"))}
    env = {**inherited, "HOME": str(home), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run([sys.executable, "-m", "mcp_server", *args], env=env, capture_output=True, text=True)


def test_after_ingesting_a_folder_the_cli_reads_it_without_a_setting(tmp_path: Path) -> None:
    folder = tmp_path / "mydocs"
    folder.mkdir()
    (folder / "compost.md").write_text("# Compost\n\nCooked food must not go in the compost bins.\n", encoding="utf-8")
    ingested = _ragmcp(tmp_path, "ingest", str(folder))
    assert ingested.returncode == 0, ingested.stderr

    searched = _ragmcp(tmp_path, "search", "what goes in the compost", "-k", "1")
    assert searched.returncode == 0, searched.stderr
    assert searched.stdout.startswith("[mydocs:compost#0]") and "compost bins" in searched.stdout
    assert "no index yet" not in searched.stderr  # the demo corpora were not built instead
    note = " ".join(ingested.stderr.split())
    assert "ragmcp search and ragmcp doc read mydocs" in note and f"RAGMCP_CORPORA={folder}" in note
    assert f"rag-agent ask --corpus {folder}" in note
    shown = _ragmcp(tmp_path, "doc", "mydocs:compost")
    assert shown.returncode == 0 and shown.stdout.startswith("mydocs:compost — Compost (compost.md)")
    status = _ragmcp(tmp_path, "status").stdout
    assert "served: 0 documents, 0 chunks in 0 corpora (RAGMCP_CORPORA unset: the bundled demo corpora)" in status
    assert f"indexed but not served: mydocs (1 documents) — serve with RAGMCP_CORPORA={folder};" in status


def test_doc_png_writes_the_cited_page_with_the_quote_highlighted(  # type: ignore[no-untyped-def]
    run, tiny_settings: Settings, tmp_path: Path
) -> None:
    from tests.mcp_server.documents.test_page_drawing import highlighted, write_line_pdf

    write_line_pdf(tiny_settings.corpora[0] / "leave.pdf")
    run("ingest")
    out_png = tmp_path / "page.png"
    code, out, err = run("doc", "tiny:leave", "--quote", "twenty five days", "--png", str(out_png))
    assert code == 0, err
    assert out == "" and f"wrote page 1 of tiny:leave to {out_png}" in err
    assert highlighted(out_png.read_bytes()).any()

    code, _, err = run("doc", "tiny:leave#0", "--png", str(tmp_path / "chunk.png"), "--page", "2")
    assert code == 0, err
    assert not highlighted((tmp_path / "chunk.png").read_bytes()).any()  # the chunk is on page 1

    code, _, err = run("doc", "tiny:beta#0", "--png", str(tmp_path / "beta.png"))
    assert code == 1 and "tiny:beta (beta.md) has no pages to show: only PDFs and pictures do" in err
    assert not (tmp_path / "beta.png").exists()
    code, _, err = run("doc", "tiny:leave#0", "--png", str(tmp_path / "no-such-folder" / "page.png"))
    assert code == 1 and "cannot write the picture to" in err and "a folder you can write to" in err
    code, _, err = run("doc", "tiny:leave#0", "--page", "2")
    assert code == 2 and "--page picks the page of the picture --png writes" in err


def test_since_this_year_finds_office_files_saved_today_with_2013_template_dates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "office"
    write_docx(folder / "report.docx", "Ferry report", [("", "The ferry timetable changes in June.")])
    write_pptx(folder / "deck.pptx", [("Ferry timetable", "The ferry timetable changes in June", "")])
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGMCP_CORPORA", str(folder))
    this_year = f"{date.today().year}-01-01"

    result = CliRunner().invoke(main, ["search", "ferry timetable", "--since", this_year, "--mode", "keyword", "--json"])

    assert result.exit_code == 0, result.stderr
    hits = json.loads(result.stdout)
    assert {hit["citation"]["doc_id"]: hit["citation"]["updated"] for hit in hits} == {
        "report": date.today().isoformat(), "deck": date.today().isoformat(),
    }  # fmt: skip
