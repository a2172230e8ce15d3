"""Settings come in groups (``settings.rerank.timeout_s``), but the user's names stay the ``RAGMCP_*``
variables they always were: read from the environment, beaten by flags, handed to worker processes
and recorded in an index under those names."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_server.settings import INDEX_SETTINGS, Settings
from mcp_server.settings.ranking import RerankSettings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in Settings.env_names():
        monkeypatch.delenv(name, raising=False)


def test_each_variable_lands_in_its_group(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "RAGMCP_RERANK_TIMEOUT_S": "3", "RAGMCP_BM25_B": "0.5", "RAGMCP_MAX_BODY_BYTES": "2048",
        "RAGMCP_HTTP_PORT": "9000", "RAGMCP_AUDIT_BACKUPS": "2", "RAGMCP_MAX_FILE_MB": "7",
        "RAGMCP_CALL_TIMEOUT_S": "9", "RAGMCP_SQL_MAX_ROWS": "10", "RAGMCP_WATCH_DEBOUNCE_S": "2",
        "RAGMCP_RRF_K": "60", "RAGMCP_EMBEDDING_BATCH_SIZE": "8", "RAGMCP_TOKENS_FILE": "~/tokens.json",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert (settings.rerank.timeout_s, settings.bm25.b, settings.embedding.batch_size) == (3, 0.5, 8)
    assert (settings.http.max_body_bytes, settings.http.port) == (2048, 9000)
    assert (settings.audit.backups, settings.reading.max_file_mb, settings.calls.call_timeout_s) == (2, 7, 9)
    assert (settings.sql.max_rows, settings.watch.debounce_s, settings.retrieval.rrf_k) == (10, 2, 60)
    assert settings.http.tokens_file == Path("~/tokens.json").expanduser()


def test_every_setting_has_one_name_and_one_place() -> None:
    names = Settings.names()
    assert len(Settings.env_names()) == len(names) == len(set(names.values()))
    assert names["rerank_timeout_s"] == ("rerank", "timeout_s")
    assert names["allowed_hosts"] == ("http", "allowed_hosts")
    assert names["data_dir"] == (None, "data_dir")


def test_a_flag_beats_the_environment_and_the_rest_still_comes_from_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMCP_RERANK_TIMEOUT_S", "3")
    monkeypatch.setenv("RAGMCP_RERANK_CANDIDATES", "20")
    settings = Settings.from_names(rerank_timeout_s=2)
    assert (settings.rerank.timeout_s, settings.rerank.candidates) == (2, 20)
    assert Settings(rerank={"timeout_s": 1}).rerank.candidates == 20
    assert Settings(rerank=RerankSettings(timeout_s=1)).rerank.candidates == 20


def test_to_env_recreates_the_explicit_settings_in_another_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAGMCP_BM25_K1", "1.5")
    settings = Settings.from_names(
        data_dir=tmp_path, corpora=[tmp_path / "a", tmp_path / "b"], http_port=9000, allowed_hosts=["x.example"],
        rerank_url="http://h/rerank", rerank_model="m", rerank_api_key="secret", max_file_mb=5.0,
    )  # fmt: skip
    env = settings.to_env()
    assert env["RAGMCP_HTTP_PORT"] == "9000" and env["RAGMCP_ALLOWED_HOSTS"] == "x.example"
    assert env["RAGMCP_RERANK_API_KEY"] == "secret" and env["RAGMCP_MAX_FILE_MB"] == "5"
    assert env["RAGMCP_BM25_K1"] == "1.5" and "RAGMCP_SQL_MAX_ROWS" not in env
    monkeypatch.delenv("RAGMCP_BM25_K1")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    again = Settings()
    assert again.model_dump() == settings.model_dump()
    assert again.to_env() == env


def test_a_bad_value_is_refused_under_its_variable_s_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGMCP_HTTP_PORT", "-1")
    with pytest.raises(ValidationError, match="http_port"):
        Settings()
    monkeypatch.delenv("RAGMCP_HTTP_PORT")
    monkeypatch.setenv("RAGMCP_MAX_BODY_BYTES", "many")
    with pytest.raises(ValidationError, match="max_body_bytes"):
        Settings()
    with pytest.raises(TypeError, match="no such setting: rerank_speed"):
        Settings.from_names(rerank_speed=1)


def test_an_index_records_the_reading_settings_under_their_old_names() -> None:
    assert INDEX_SETTINGS == (
        "max_file_mb", "max_document_chunks", "max_unzipped_mb", "max_sheet_cells",
        "reader_memory_mb", "read_timeout_s", "page_timeout_s", "ocr", "ocr_max_pages",
    )  # fmt: skip
    settings = Settings.from_names(max_file_mb=5, ocr="off")
    recorded = settings.index_settings()
    assert set(recorded) == set(INDEX_SETTINGS) and recorded["ocr"] == "off"
    adopted = Settings.from_names(http_port=9000).with_index_settings({**recorded, "unknown": 1})
    assert adopted.reading == settings.reading and adopted.http.port == 9000
