"""Build the MCP Bundle ``dist/agentic-rag-mcp-<version>.mcpb`` that Claude Desktop installs with a double-click.

    python scripts/build_mcpb.py      # needs pip, Node.js (npx) and access to npm; the result is not committed

The bundle is ``packaging/mcpb/`` (the manifest and the entry point ``server/main.py``), a wheel
of this project, and a ``pyproject.toml`` that depends on that wheel. Its server type is
``uv``: the host runs ``uv run`` in the unpacked bundle, which installs Python and the
dependencies from PyPI into a virtual environment there on the first start. The manifest
is validated with ``npx @anthropic-ai/mcpb validate``, then ``mcpb pack`` writes the file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "packaging" / "mcpb"
MCPB = ["npx", "--yes", "@anthropic-ai/mcpb@2.1.2"]


def bundle_pyproject(version: str, wheel: str) -> str:
    """A project that is not installed itself; ``uv run`` installs its one dependency, the wheel."""
    return (
        f'[project]\nname = "agentic-rag-mcp-bundle"\nversion = "{version}"\nrequires-python = ">=3.11"\n'
        f'dependencies = ["agentic-rag-mcp=={version}"]\n\n'
        f'[tool.uv.sources]\nagentic-rag-mcp = {{ path = "wheels/{wheel}" }}\n'
    )


def main() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    manifest = json.loads((SOURCE / "manifest.json").read_text(encoding="utf-8"))
    if manifest["version"] != version:
        sys.exit(f"packaging/mcpb/manifest.json says version {manifest['version']}, pyproject.toml {version}")
    out = REPO / "dist" / f"agentic-rag-mcp-{version}.mcpb"
    with tempfile.TemporaryDirectory() as scratch:
        stage = Path(scratch) / "bundle"
        (stage / "server").mkdir(parents=True)
        shutil.copyfile(SOURCE / "manifest.json", stage / "manifest.json")
        shutil.copyfile(SOURCE / ".mcpbignore", stage / ".mcpbignore")
        shutil.copyfile(SOURCE / "main.py", stage / "server" / "main.py")
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(stage / "wheels"), str(REPO)],
            check=True,
        )  # fmt: skip
        (wheel,) = (p.name for p in (stage / "wheels").glob("*.whl"))
        (stage / "pyproject.toml").write_text(bundle_pyproject(version, wheel), encoding="utf-8")
        subprocess.run([*MCPB, "validate", str(stage / "manifest.json")], check=True)
        out.parent.mkdir(exist_ok=True)
        subprocess.run([*MCPB, "pack", str(stage), str(out)], check=True)
    print(out)


if __name__ == "__main__":
    main()
