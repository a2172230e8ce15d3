"""The packages' layering: imports run downward only, so no module imports one that imports it back.

The layers of ``mcp_server`` from the top: the command line, the team server, the MCP surface,
retrieval and SQL, indexing, the stores, documents and embedding, the citation check
(grounding), the text analyzer, the command groups' shared helpers, and the ground floor (settings,
grants, models, citation ids, errors, logs, progress, display text), which imports nothing above
it. ``client_agent`` sits above the server's core: it may use
the citation check, the text analyzer, the models and citation ids, the embedder and the display
text, never the server's surface, and the server never imports the agent. Inside the agent, the offline back-end is a package of its own
(``client_agent.offline``): the loop and everything else reach it only through
``client_agent.offline.backend``, and it never imports the loop's control (the loop, reflection
parsing, traces, the command line, evaluation) or a model back-end. A new import that points
upward, or a cycle in either package, fails here with the path that closes it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mcp_server", "client_agent")

GROUND_FLOOR = {
    "mcp_server.settings", "mcp_server.grants", "mcp_server.models", "mcp_server.citation_ids", "mcp_server.errors",
    "mcp_server.jsonl_log", "mcp_server.progress", "mcp_server.display_text",
}
"""What every layer may use and which uses nothing above it: settings (with the model names and the BM25
formula they offer), grants, models, citation ids, errors, logs, progress and display text."""

LAYERS = [
    {"mcp_server.cli", "mcp_server.__main__", "mcp_server.install"},
    {"mcp_server.team"},
    {"mcp_server.surface"},
    {"mcp_server.retrieval", "mcp_server.sql"},
    {"mcp_server.indexing"},
    {"mcp_server.stores"},
    {"mcp_server.documents", "mcp_server.embedding"},
    {"mcp_server.grounding"},
    {"mcp_server.analyzer"},
    {"mcp_server.cli_support"},  # settings from flags and clean errors, for every part's command group
    GROUND_FLOOR,
]
"""Upper layers first; a part may import its own layer's siblings only where listed in ALLOWED_SIDEWAYS."""


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> Iterator[str]:
    """The project modules ``path`` imports (``from a.b import c`` names ``a.b.c`` when that is a module)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
            yield node.module
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                if (REPO / Path(*candidate.split("."))).with_suffix(".py").exists():
                    yield candidate
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] in PACKAGES)


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}
    return {name: {d for d in imports_of(path) if d in modules and d != name} for name, path in modules.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def part_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def layer_of(module: str) -> int | None:
    part = part_of(module)
    return next((i for i, layer in enumerate(LAYERS) if part in layer), None)


def test_no_module_imports_itself_back() -> None:
    assert find_cycle(graph()) is None


def test_the_parts_of_mcp_server_have_no_cycle_between_them() -> None:
    parts: dict[str, set[str]] = {}
    for module, deps in graph().items():
        if module.startswith("mcp_server."):
            parts.setdefault(part_of(module), set()).update(part_of(d) for d in deps if part_of(d) != part_of(module))
    assert find_cycle(parts) is None


@pytest.mark.parametrize("module", sorted(m for m in graph() if layer_of(m) is not None))
def test_imports_run_downward(module: str) -> None:
    upward = [d for d in graph()[module] if (layer := layer_of(d)) is not None and layer < layer_of(module)]  # type: ignore[operator]
    assert upward == [], f"{module} imports from a layer above it: {upward}"


def test_every_part_of_mcp_server_has_a_layer() -> None:
    parts = {part_of(m) for m in graph() if m.startswith("mcp_server.")}
    assert sorted(p for p in parts if layer_of(p) is None) == []


def test_the_ground_floor_imports_nothing_above_it() -> None:
    upward = {m: sorted(part_of(d) for d in deps if part_of(d) not in GROUND_FLOOR)
              for m, deps in graph().items() if part_of(m) in GROUND_FLOOR}
    assert {m: parts for m, parts in upward.items() if parts} == {}


def test_the_top_level_holds_a_dozen_shared_modules_at_most() -> None:
    top = sorted(p.stem for p in (REPO / "mcp_server").glob("*.py"))
    assert len(top) <= 12, top


AGENT_MAY_IMPORT = {
    "mcp_server.grounding", "mcp_server.analyzer", "mcp_server.models", "mcp_server.embedding", "mcp_server.settings", "mcp_server.display_text",
    "mcp_server.citation_ids",
}
"""The parts of the server the agent builds on; it reaches the rest only over MCP."""


def test_the_server_never_imports_the_agent() -> None:
    offenders = {m: sorted(d for d in deps if d.startswith("client_agent"))
                 for m, deps in graph().items() if m.startswith("mcp_server")}
    assert {m: d for m, d in offenders.items() if d} == {}


def test_the_agent_uses_only_the_server_core_it_shares() -> None:
    used = {m: sorted(part_of(d) for d in deps if d.startswith("mcp_server") and part_of(d) not in AGENT_MAY_IMPORT)
            for m, deps in graph().items() if m.startswith("client_agent")}
    assert {m: parts for m, parts in used.items() if parts} == {}


def test_the_citation_check_has_one_implementation() -> None:
    assert not (REPO / "client_agent" / "citations.py").exists()
    assert not (REPO / "client_agent" / "claims.py").exists()


OFFLINE = "client_agent.offline"
OFFLINE_ENTRY = "client_agent.offline.backend"
LOOP_CONTROL = {"client_agent.loop", "client_agent.reflection", "client_agent.trace", "client_agent.cli",
                "client_agent.evaluation", "client_agent.backends.anthropic_backend",
                "client_agent.backends.openai_backend", "client_agent.backends.conversation"}
"""What the offline back-end must not import: the loop's control and the model back-ends. It may use
the back-end contract (``backends.base``) and what the loop hands every back-end (the catalog, the
evidence ledger, text helpers, conflicts, the query log's near-duplicate rule)."""


def test_the_parts_of_client_agent_have_no_cycle_between_them() -> None:
    parts: dict[str, set[str]] = {}
    for module, deps in graph().items():
        if module.startswith("client_agent."):
            parts.setdefault(part_of(module), set()).update(
                part_of(d) for d in deps if d.startswith("client_agent.") and part_of(d) != part_of(module))
    assert find_cycle(parts) is None


def test_only_the_offline_entry_point_is_imported_from_outside_the_offline_package() -> None:
    reaching_in = {m: sorted(d for d in deps if d.startswith(OFFLINE + ".") and d != OFFLINE_ENTRY)
                   for m, deps in graph().items() if not m.startswith(OFFLINE)}
    assert {m: d for m, d in reaching_in.items() if d} == {}


def test_the_offline_package_does_not_import_the_loop_or_a_model_back_end() -> None:
    reaching_out = {m: sorted(deps & LOOP_CONTROL) for m, deps in graph().items() if m.startswith(OFFLINE)}
    assert {m: d for m, d in reaching_out.items() if d} == {}
    assert (REPO / "client_agent" / "offline" / "backend.py").is_file()
    assert not (REPO / "client_agent" / "backends" / "offline.py").exists()


SDK_BOUNDARY = {"mcp_server/surface/sdk.py", "mcp_server/surface/sdk_http.py", "client_agent/connection.py"}
"""The modules that import the MCP SDK: the server's protocol and HTTP transport, and the agent's connection.
Everything else takes the SDK's names from them, so a new SDK version is met in these three files."""


def imports_the_sdk(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.split(".")[0] == "mcp":
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "mcp" for a in node.names):
            return True
    return False


def test_only_the_sdk_boundary_modules_import_the_mcp_sdk() -> None:
    importing = {str(p.relative_to(REPO)) for package in PACKAGES for p in (REPO / package).rglob("*.py") if imports_the_sdk(p)}
    assert importing - SDK_BOUNDARY == set()
    assert importing == SDK_BOUNDARY  # each boundary module still is one


def test_the_analyzer_imports_nothing_else_of_the_project() -> None:
    """The index, the check and the agent all read text with it, so it stands on nothing of theirs."""
    reaching_out = {m: sorted(d for d in deps if not d.startswith("mcp_server.analyzer"))
                    for m, deps in graph().items() if m.startswith("mcp_server.analyzer")}
    assert {m: d for m, d in reaching_out.items() if d} == {}
