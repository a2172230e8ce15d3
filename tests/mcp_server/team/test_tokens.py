"""The tokens file and ``ragmcp token``: hashes only, atomic edits, and a registry that follows changes."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_server.cli import main
from mcp_server.errors import TokensFileError
from mcp_server.settings import Settings
from mcp_server.team.tokens import (
    TOKEN_PREFIX,
    ClientLimits,
    Grant,
    TokenRegistry,
    add_client,
    hash_token,
    read_tokens,
    revoke_client,
)

READ_A = Grant(corpora=("a",), sql=False)


def test_a_new_token_is_returned_once_and_only_its_hash_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = add_client(path, "team-a", READ_A, ClientLimits(rate_per_minute=30, burst=5, max_concurrent=2))
    assert token.startswith(TOKEN_PREFIX) and len(token) > 40
    stored = path.read_text(encoding="utf-8")
    assert token not in stored and hash_token(token) in stored
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    (entry,) = read_tokens(path).clients
    assert (entry.name, entry.grant, entry.limits.max_concurrent) == ("team-a", READ_A, 2)
    assert add_client(path, "team-b", Grant(), ClientLimits()) != token


def test_names_must_be_unique_and_well_formed(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    add_client(path, "team-a", READ_A, ClientLimits())
    with pytest.raises(TokensFileError, match="already exists; revoke it first"):
        add_client(path, "team-a", READ_A, ClientLimits())
    with pytest.raises(TokensFileError, match="invalid client name 'team a'"):
        add_client(path, "team a", READ_A, ClientLimits())
    assert [c.name for c in read_tokens(path).clients] == ["team-a"]


def test_revoking_an_unknown_client_names_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    add_client(path, "team-a", READ_A, ClientLimits())
    with pytest.raises(TokensFileError, match="no client 'team-z' .*; clients: team-a"):
        revoke_client(path, "team-z")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist; create it with: ragmcp token add"),
        ("{not json", "is malformed"),
        ('{"version": 1, "clients": [{"name": "x"}]}', "is malformed"),
    ],
)
def test_a_missing_or_malformed_file_is_refused_clearly(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "tokens.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(TokensFileError, match=message):
        read_tokens(path)


def test_the_registry_follows_additions_and_revocations_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token_a = add_client(path, "team-a", READ_A, ClientLimits())
    registry = TokenRegistry(path)
    found = registry.find(token_a)
    assert found is not None and found.name == "team-a"
    assert registry.find("rmcp_wrong") is None and registry.find(token_a + "x") is None

    token_b = add_client(path, "team-b", Grant(), ClientLimits())
    found = registry.find(token_b)
    assert found is not None and found.name == "team-b"
    revoke_client(path, "team-a")
    assert registry.find(token_a) is None
    assert registry.find(token_b) is not None


def test_the_registry_refuses_every_token_while_the_file_is_broken(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    token = add_client(path, "team-a", READ_A, ClientLimits())
    good = path.read_text(encoding="utf-8")
    registry = TokenRegistry(path)
    path.write_text(good.replace('"version": 1', '"version": 2'), encoding="utf-8")
    assert registry.find(token) is None
    path.unlink()
    assert registry.find(token) is None
    path.write_text(good, encoding="utf-8")
    assert registry.find(token) is not None


# --- ragmcp token ---------------------------------------------------------------------------------------


@pytest.fixture
def token_cli(tmp_path: Path, teams_settings: Settings, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(teams_settings.data_dir))
    monkeypatch.delenv("RAGMCP_TOKENS_FILE", raising=False)
    path = tmp_path / "tokens.json"

    def invoke(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(main, ["token", "--file", str(path), *args])
        return result.exit_code, result.stdout, result.stderr

    return invoke, path


def test_token_add_list_revoke_from_the_command_line(token_cli) -> None:  # type: ignore[no-untyped-def]
    run, path = token_cli
    code, out, err = run("add", "team-a", "--corpora", "teama,elsewhere,teama", "--rate", "30", "--burst", "5")
    assert code == 0, err
    token = out.strip()
    assert out == token + "\n" and token.startswith(TOKEN_PREFIX)
    assert "cannot be shown again" in err and "not in the current index (yet): elsewhere" in err
    assert run("add", "team-b", "--corpora", "*", "--sql")[0] == 0

    code, out, _ = run("list")
    assert code == 0 and token not in out and hash_token(token) not in out
    lines = out.splitlines()
    assert lines[0].startswith("team-a\tcorpora=elsewhere,teama\tsql=no\trate=30/min\tburst=5\tconcurrent=4")
    assert lines[1].startswith("team-b\tcorpora=*\tsql=yes\trate=120/min\tburst=20\tconcurrent=4")
    listed = json.loads(run("list", "--json")[1])
    assert [(c["name"], c["corpora"], c["sql"]) for c in listed] == [
        ("team-a", ["elsewhere", "teama"], False), ("team-b", "*", True),
    ]  # fmt: skip
    assert all("token_sha256" not in c for c in listed)

    code, _, err = run("revoke", "team-a")
    assert code == 0 and "revoked team-a" in err
    assert [c.name for c in read_tokens(path).clients] == ["team-b"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "team-a"), "grant something: --corpora"),
        (("add", "team-a", "--corpora", "*,teama"), "give it alone"),
        (("add", "team-a", "--corpora", "x", "--rate", "0"), "Invalid value for '--rate'"),
        (("revoke", "nobody"), "no client 'nobody'"),
        (("list",), "does not exist; create it with"),
    ],
)
def test_token_commands_refuse_bad_input(token_cli, args: tuple[str, ...], message: str) -> None:  # type: ignore[no-untyped-def]
    run, path = token_cli
    code, out, err = run(*args)
    assert code != 0 and message in err and out == ""
    assert not path.exists()


def test_token_commands_need_a_tokens_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("RAGMCP_TOKENS_FILE", raising=False)
    result = CliRunner().invoke(main, ["token", "list"])
    assert result.exit_code == 1 and "pass --file PATH or set RAGMCP_TOKENS_FILE" in result.stderr
