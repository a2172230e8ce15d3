"""``ragmcp install HOST`` with a temporary HOME: the block it prints, the config files it writes (entries
kept, backups, refusals), and the written command starting a working server over stdio as a host would."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from collections.abc import Iterator
from typing import Any, NamedTuple

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client, StdioServerParameters

from mcp_server.cli import main
from mcp_server.install.hosts import ragmcp_command
from tests.helpers import write_doc
from tests.mcp_server.surface.mcp_contract import text_of

RAGMCP_BESIDE_PYTHON = Path(sys.executable).parent / "ragmcp"
# Where each host keeps its user-wide config on Linux, and the entry's shape (servers key, "type").
LINUX_CONFIGS = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers", None),
    "cursor": (".cursor/mcp.json", "mcpServers", None),
    "claude-code": (".claude.json", "mcpServers", "stdio"),
    "vscode": (".config/Code/User/mcp.json", "servers", "stdio"),
}


class Done(NamedTuple):
    returncode: int
    stdout: str
    stderr: str


def install(home: Path, *args: str, env: dict[str, str] | None = None) -> Done:
    """``ragmcp install ARGS`` as a user with this HOME and no RAGMCP_* or XDG_* variables but ``env`` would run it."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("RAGMCP_", "XDG_"))}
    result = CliRunner().invoke(main, ["install", *args], env={**unset, "HOME": str(home), **(env or {})})
    return Done(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The umask most users have (022): a file created without a mode of its own is readable by everyone."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "My Notes"  # a space, as in real folder names
    write_doc(folder, "compost.md", "Compost", "# Compost\n\nCooked food goes in the green bin, never the brown one.")
    return folder


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("host", sorted(LINUX_CONFIGS))
def test_print_shows_the_block_with_the_absolute_command(host: str, tmp_path: Path, notes: Path) -> None:
    home = tmp_path / "home"
    other = tmp_path / "more"
    other.mkdir()
    done = install(home, host, "--corpus", str(notes), "--corpus", str(other), "--print")
    assert done.returncode == 0, done.stderr
    relpath, servers_key, kind = LINUX_CONFIGS[host]
    entry = json.loads(done.stdout)[servers_key]["agentic-rag"]
    assert entry.pop("type", None) == kind
    assert entry == {
        "command": str(RAGMCP_BESIDE_PYTHON),
        "args": ["serve"],
        "env": {
            "RAGMCP_CORPORA": f"{notes}{os.pathsep}{other}",
            "RAGMCP_DATA_DIR": str(home / ".local/share/agentic-rag-mcp"),  # XDG's default, as ragmcp ingest uses
        },
    }
    assert os.access(entry["command"], os.X_OK)
    assert str(home / relpath) in done.stderr  # says where the block goes
    assert not home.exists() or not any(home.rglob("*.json"))  # --print writes nothing


def test_the_claude_code_hint_is_a_working_claude_mcp_command(tmp_path: Path, notes: Path) -> None:
    done = install(tmp_path / "home", "claude-code", "--corpus", str(notes), "--print")
    hint = next(line for line in done.stderr.splitlines() if "claude mcp add-json" in line)
    words = shlex.split(hint.split("with: ", 1)[1])
    assert words[:6] == ["claude", "mcp", "add-json", "--scope", "user", "agentic-rag"]
    assert json.loads(words[6]) == json.loads(done.stdout)["mcpServers"]["agentic-rag"]


def test_first_install_creates_the_hosts_file_under_home(tmp_path: Path, notes: Path) -> None:
    home = tmp_path / "home"
    done = install(home, "claude-desktop", "--corpus", str(notes), "--watch", "--name", "my-notes")
    assert done.returncode == 0, done.stderr
    config = home / LINUX_CONFIGS["claude-desktop"][0]
    entry = read_json(config)["mcpServers"]["my-notes"]
    assert entry["args"] == ["serve", "--watch"] and entry["env"]["RAGMCP_CORPORA"] == str(notes)
    assert list(config.parent.iterdir()) == [config]  # nothing to back up


def test_merge_keeps_entries_backs_up_and_refuses_a_second_server_of_the_same_name(
    tmp_path: Path, notes: Path
) -> None:
    config = tmp_path / "claude_desktop_config.json"
    original = '{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": {"files": {"command": "/usr/bin/files-mcp"}}\n}\n'
    config.write_text(original, encoding="utf-8")
    config.chmod(0o600)
    home = tmp_path / "home"

    done = install(home, "claude-desktop", "--config", str(config), "--corpus", str(notes))
    assert done.returncode == 0, done.stderr
    written = read_json(config)
    assert written["globalShortcut"] == "Ctrl+Space"
    assert list(written["mcpServers"]) == ["files", "agentic-rag"]
    assert written["mcpServers"]["files"] == {"command": "/usr/bin/files-mcp"}
    assert written["mcpServers"]["agentic-rag"]["env"]["RAGMCP_CORPORA"] == str(notes)
    assert config.stat().st_mode & 0o777 == 0o600
    (backup,) = tmp_path.glob("claude_desktop_config.json.*.bak")
    assert backup.read_text(encoding="utf-8") == original and str(backup) in done.stderr

    after_first = config.read_bytes()
    again = install(home, "claude-desktop", "--config", str(config), "--corpus", str(notes))
    assert again.returncode == 0 and "nothing changed" in again.stderr
    other_folder = tmp_path / "other"
    other_folder.mkdir()
    refused = install(home, "claude-desktop", "--config", str(config), "--corpus", str(other_folder))
    assert refused.returncode == 1
    assert "already has a server named 'agentic-rag'" in refused.stderr and "--force" in refused.stderr
    assert config.read_bytes() == after_first
    assert len(list(tmp_path.glob("*.bak"))) == 1

    forced = install(home, "claude-desktop", "--config", str(config), "--corpus", str(other_folder), "--force")
    assert forced.returncode == 0, forced.stderr
    assert read_json(config)["mcpServers"]["agentic-rag"]["env"]["RAGMCP_CORPORA"] == str(other_folder)
    assert read_json(config)["mcpServers"]["files"] == {"command": "/usr/bin/files-mcp"}
    assert len(list(tmp_path.glob("*.bak"))) == 2


@pytest.mark.usefixtures("usual_umask")
def test_a_new_config_file_holding_a_key_is_readable_by_its_owner_only(tmp_path: Path, notes: Path) -> None:
    home = tmp_path / "home"
    done = install(home, "cursor", "--corpus", str(notes), env={"RAGMCP_RERANK_API_KEY": "sk-rerank-secret"})
    assert done.returncode == 0, done.stderr
    config = home / LINUX_CONFIGS["cursor"][0]
    assert read_json(config)["mcpServers"]["agentic-rag"]["env"]["RAGMCP_RERANK_API_KEY"] == "sk-rerank-secret"
    assert config.stat().st_mode & 0o777 == 0o600


@pytest.mark.usefixtures("usual_umask")
def test_a_rewritten_config_file_and_its_backup_keep_the_files_mode(tmp_path: Path, notes: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}', encoding="utf-8")
    config.chmod(0o640)  # neither the umask's 644 nor a new file's 600: the user's own choice
    done = install(tmp_path / "home", "cursor", "--config", str(config), "--corpus", str(notes))
    assert done.returncode == 0, done.stderr
    (backup,) = tmp_path.glob("mcp.json.*.bak")
    assert "agentic-rag" in read_json(config)["mcpServers"]
    assert config.stat().st_mode & 0o777 == 0o640 and backup.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("given", ["--config", "the host's own file"])
def test_a_config_path_that_is_a_symbolic_link_is_refused(tmp_path: Path, notes: Path, given: str) -> None:
    # A project folder whose .cursor/mcp.json links to a file of secrets: rewriting the link would copy them there.
    home = tmp_path / "home"
    secrets = home / ".claude.json"
    secrets.parent.mkdir(parents=True)
    original = '{"mcpServers": {"mail": {"env": {"MAIL_TOKEN": "secret"}}}}'
    secrets.write_text(original, encoding="utf-8")
    link = tmp_path / "project" / ".cursor" / "mcp.json" if given == "--config" else home / LINUX_CONFIGS["cursor"][0]
    link.parent.mkdir(parents=True)
    link.symlink_to(secrets)
    done = install(home, "cursor", "--corpus", str(notes), *(["--config", str(link)] if given == "--config" else []))
    assert done.returncode == 1
    assert f"{link} is a symbolic link to {secrets}; nothing was changed" in done.stderr
    assert f"Pass the real file's path instead: --config {secrets}" in done.stderr
    assert link.is_symlink() and secrets.read_text(encoding="utf-8") == original
    assert list(tmp_path.rglob("*.bak")) == []


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ('{"mcpServers": {"files": {"command": "x"},}}', "is not valid JSON"),  # a trailing comma
        ("// my servers\n{}", "is not valid JSON"),
        ('["not", "an", "object"]', "holds a JSON list, not an object"),
        ('{"mcpServers": ["files"]}', "'mcpServers' is a JSON list, not an object"),
    ],
)
def test_a_malformed_config_is_refused_and_left_alone(tmp_path: Path, notes: Path, content: str, complaint: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(content, encoding="utf-8")
    done = install(tmp_path / "home", "cursor", "--config", str(config), "--corpus", str(notes))
    assert done.returncode == 1
    assert complaint in done.stderr and "nothing was changed" in done.stderr
    assert config.read_text(encoding="utf-8") == content
    assert list(tmp_path.glob("*.bak")) == []


def test_a_folder_with_a_broken_corpus_toml_is_refused_before_writing(tmp_path: Path, notes: Path) -> None:
    (notes / "corpus.toml").write_text('name = "Not Valid"\ndescription = "x"\n', encoding="utf-8")
    config = tmp_path / "mcp.json"
    done = install(tmp_path / "home", "cursor", "--config", str(config), "--corpus", str(notes))
    assert done.returncode == 1 and "corpus name 'Not Valid' is not valid" in done.stderr
    assert not config.exists()


def test_the_command_is_the_script_beside_the_interpreter_or_the_interpreter_itself(tmp_path: Path) -> None:
    scripts = tmp_path / "venv" / "Scripts"
    scripts.mkdir(parents=True)
    python = scripts / "python.exe"
    assert ragmcp_command(python, windows=True) == [str(python), "-m", "mcp_server"]
    (scripts / "ragmcp.exe").write_bytes(b"MZ")
    assert ragmcp_command(python, windows=True) == [str(scripts / "ragmcp.exe")]
    assert ragmcp_command(python, windows=False) == [str(python), "-m", "mcp_server"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_written_entry_starts_a_working_server(tmp_path: Path, notes: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    done = install(tmp_path / "home", "claude-desktop", "--config", str(config), "--corpus", str(notes),
                   "--data-dir", str(tmp_path / "index"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    entry = read_json(config)["mcpServers"]["agentic-rag"]
    # As a desktop host starts it: the entry's command, arguments and env on top of a minimal
    # environment (the SDK's default: HOME, PATH, ...), no PYTHONPATH, from some other folder.
    server = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"], cwd=tmp_path)
    async with Client(server) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"hybrid_search", "keyword_search", "get_document"} <= tools
        # The handshake does not wait for the first build: until it is published, searches say so.
        with anyio.fail_after(120):
            while (result := await client.call_tool("hybrid_search", {"query": "Can I put cooked food in the compost?"})).is_error:
                assert "being built" in text_of(result), text_of(result)
                await anyio.sleep(0.5)
        assert "[my-notes:compost#0]" in text_of(result)
    assert (tmp_path / "index" / "index" / "CURRENT").is_file()


def test_env_options_go_into_the_entry_and_bad_ones_are_refused(tmp_path: Path, notes: Path) -> None:
    home = tmp_path / "home"
    done = install(home, "cursor", "--corpus", str(notes), "--env", "RAGMCP_OCR=off", "--env", "ragmcp_max_file_mb=200",
                   "--print")  # fmt: skip
    assert done.returncode == 0, done.stderr
    env = json.loads(done.stdout)["mcpServers"]["agentic-rag"]["env"]
    assert env["RAGMCP_OCR"] == "off" and env["RAGMCP_MAX_FILE_MB"] == "200"  # as the user typed it
    for pair, complaint in [
        ("OCR=off", "'OCR=off' is not RAGMCP_NAME=VALUE for a setting ragmcp has"),
        ("RAGMCP_COLOUR=blue", "'RAGMCP_COLOUR=blue' is not RAGMCP_NAME=VALUE"),
        ("RAGMCP_OCR", "'RAGMCP_OCR' is not RAGMCP_NAME=VALUE"),
        ("RAGMCP_OCR=sometimes", "invalid settings: ocr:"),
    ]:
        refused = install(home, "cursor", "--corpus", str(notes), "--env", pair, "--print")
        assert refused.returncode != 0 and complaint in refused.stderr, refused.stderr
        assert refused.stdout == ""
