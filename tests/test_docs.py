"""The README and ``docs/`` stay in step with the code, as sqlite-utils keeps its docs: every command
of ``ragmcp`` and ``rag-agent`` and every ``RAGMCP_*`` setting is documented, every one the
documents name exists, every relative link leads to a file and heading that exist, and the README
stays a page a newcomer reads (its two set-up commands unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from client_agent.cli import main as rag_agent
from mcp_server.cli import main as ragmcp
from mcp_server.settings import Settings

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
SET_UP = [
    'python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/rag-agent ask "How many days of annual leave '
    'do I get after 3 years, and how far ahead must I request it?"',
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/pytest -q',
]
SETTING = re.compile(r"\bRAGMCP_[A-Z0-9_]*[A-Z0-9]\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def documented() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)


def command_lines(name: str, command: click.Command) -> Iterator[str]:
    """'ragmcp corpus list' and every other command path under ``command``, subcommands included."""
    yield name
    if isinstance(command, click.Group):
        for sub_name, sub in command.commands.items():
            yield from command_lines(f"{name} {sub_name}", sub)


def settings_in_code() -> set[str]:
    """The settings the server reads: the variables Settings and its groups read, and the names the packages
    spell out whole."""
    fields = set(Settings.env_names())
    spelled = {
        match
        for package in ("mcp_server", "client_agent")
        for path in (REPO / package).rglob("*.py")
        for match in SETTING.findall(path.read_text(encoding="utf-8"))
    }
    return fields | spelled


def test_the_readme_fits_on_a_few_screens_and_keeps_its_two_set_up_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    blocks = re.findall(r"```bash\n(.*?)\n```", text, flags=re.DOTALL)
    assert blocks[:2] == SET_UP


@pytest.mark.parametrize(
    "line", [*command_lines("ragmcp", ragmcp), *command_lines("rag-agent", rag_agent)]
)  # fmt: skip
def test_every_command_is_documented(line: str) -> None:
    assert line in documented(), f"`{line}` is in no page of README.md or docs/"


def test_every_command_the_pages_name_exists() -> None:
    real = {*command_lines("ragmcp", ragmcp), *command_lines("rag-agent", rag_agent)}
    named = set(re.findall(r"\b((?:ragmcp|rag-agent)(?: [a-z][a-z-]+)+)", documented()))
    unknown = set()
    for phrase in named:
        words = phrase.split()
        longest = next((" ".join(words[:n]) for n in range(len(words), 0, -1) if " ".join(words[:n]) in real), None)
        group = ragmcp if words[0] == "ragmcp" else rag_agent
        for sub in (longest or words[0]).split()[1:]:
            assert isinstance(group, click.Group)
            group = group.commands[sub]
        if isinstance(group, click.Group) and len(words) > len((longest or "").split()):
            unknown.add(phrase)  # a group followed by a word that is none of its commands
    assert not unknown, unknown


def test_every_setting_is_documented_and_every_documented_setting_exists() -> None:
    in_code, in_pages = settings_in_code(), set(SETTING.findall(documented()))
    assert not in_code - in_pages, f"settings no page documents: {sorted(in_code - in_pages)}"
    assert not in_pages - in_code, f"documented settings the code does not read: {sorted(in_pages - in_code)}"


def anchors(page: Path) -> set[str]:
    """The GitHub anchors of ``page``'s headings (outside code blocks)."""
    found, in_code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        in_code ^= line.startswith("```")
        if not in_code and (heading := re.match(r"#+ (.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists() or (anchor and anchor not in anchors(linked)):
            broken.append(target)
    assert not broken, broken
