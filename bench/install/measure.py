"""What an install costs a new user: size per dependency, install time, and the MCP Bundle's first start.

    python bench/install/measure.py pip LABEL [--source DIR] [--extras ocr,anthropic,openai]
    python bench/install/measure.py bundle LABEL --mcpb dist/agentic-rag-mcp-0.1.0.mcpb
    python bench/install/measure.py uvx LABEL --source DIR
    python bench/install/measure.py download LABEL [--source DIR] [--extras ...] [--exclude NAME ...]

Each run writes its entry into bench/install/results.json under ``pip``/``bundle``/``uvx`` and LABEL.
Everything is installed under a fresh temporary folder with an empty package cache, so every
package is downloaded from the registry, as on a new user's machine; nothing touches ``.venv``.

- ``pip``: ``python -m venv`` and ``pip install SOURCE[EXTRAS]`` (timed), then the size of every
  installed distribution (the files its RECORD lists, bytecode pip compiled included), the venv's
  total, and for each direct dependency of agentic-rag-mcp its closure (everything it pulls in)
  and its *own share*: what would leave the install without it (packages that nothing else
  needs). Then the README's first command, ``rag-agent ask`` offline on the bundled demo, in
  that install (timed; the answer must cite the leave policy).
- ``bundle``: the ``.mcpb`` unpacked and started as the host starts it (the manifest's
  ``mcp_config`` command, ``uv run ...``, with one folder of the bundled corpora as the user's
  folder) with empty ``UV_CACHE_DIR``: time to the ``initialize`` reply, to ``tools/list``,
  and until a search returns hits (the index builds in the background); then the bundle's
  virtual environment on disk and the wheels it downloaded (their sizes as the registry serves
  them, fetched again by ``pip download`` for the installed versions).
- ``uvx``: ``uvx --from SOURCE ragmcp serve`` (the one-line start without a bundle), the same
  timings.
- ``download``: the bytes an install downloads on this machine, from a ``uv lock`` of it (the
  file sizes the registry lists; nothing is downloaded but the index pages).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results.json"
PROJECT = "agentic-rag-mcp"
QUESTION = "How many days of annual leave do I get after 3 years, and how far ahead must I request it?"
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
MB = 1_000_000

DISTRIBUTIONS = r"""
import importlib.metadata as md, json, os, re, sys
def canon(name): return re.sub(r"[-_.]+", "-", name).lower()
out = {}
for d in md.distributions():
    size = 0
    for f in d.files or []:
        try:
            size += os.lstat(d.locate_file(f)).st_size
        except OSError:
            pass
    out[canon(d.metadata["Name"])] = {"version": d.version, "bytes": size, "requires": d.requires or []}
json.dump(out, sys.stdout)
"""
"""Run inside the measured environment: every distribution, its size and its Requires-Dist lines."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def disk_bytes(path: Path) -> dict[str, int]:
    """Apparent bytes (the files' sizes) and bytes on disk (``du``: blocks, hard links once)."""
    apparent = sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())
    used = int(subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])
    return {"apparent_bytes": apparent, "disk_bytes": used}


def distributions(python: Path) -> dict[str, dict[str, Any]]:
    done = subprocess.run([str(python), "-c", DISTRIBUTIONS], capture_output=True, text=True, check=True)
    found: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return found


def _requirement(line: str) -> tuple[str, set[str], Any]:
    try:
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name
    except ImportError:  # pragma: no cover - pip vendors packaging
        from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
        from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]
    requirement = Requirement(line)
    return canonicalize_name(requirement.name), set(requirement.extras), requirement.marker


Node = tuple[str, frozenset[str]]
"""A distribution and the extras asked of it."""


def edges(dists: dict[str, dict[str, Any]], node: Node) -> set[Node]:
    """What ``node`` requires among the installed distributions, its markers evaluated on this machine."""
    out = set()
    environments = [{"extra": extra} for extra in (sorted(node[1]) or [""])]
    for line in dists[node[0]]["requires"]:
        name, asked, marker = _requirement(line)
        if name in dists and (marker is None or any(marker.evaluate(env) for env in environments)):
            out.add((name, frozenset(asked)))
    return out


def closure(dists: dict[str, dict[str, Any]], starts: set[Node]) -> set[str]:
    """The distributions ``starts`` pull in, themselves included."""
    seen: set[Node] = set()
    pending = list(starts)
    while pending:
        node = pending.pop()
        if node not in seen:
            seen.add(node)
            pending.extend(edges(dists, node))
    return {name for name, _ in seen}


def shares(dists: dict[str, dict[str, Any]], extras: frozenset[str]) -> list[dict[str, Any]]:
    """Per direct dependency of the project: its closure's size and its own share: what leaves the install
    when the project stops asking for it (nothing, if another dependency needs it too)."""
    direct = edges(dists, (PROJECT, extras))
    everything = closure(dists, direct)
    rows = []
    for name in sorted({n for n, _ in direct}):
        own = closure(dists, {d for d in direct if d[0] == name})
        alone = everything - closure(dists, {d for d in direct if d[0] != name})
        rows.append({
            "dependency": name,
            "closure_mb": round(sum(dists[p]["bytes"] for p in own) / MB, 1),
            "own_share_mb": round(sum(dists[p]["bytes"] for p in alone) / MB, 1),
            "own_share_packages": {p: round(dists[p]["bytes"] / MB, 1)
                                   for p in sorted(alone, key=lambda p: -dists[p]["bytes"])},
        })  # fmt: skip
    return sorted(rows, key=lambda r: -r["own_share_mb"])


def measure_pip(source: Path, extras: str, scratch: Path) -> dict[str, Any]:
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {**os.environ, "PIP_CACHE_DIR": str(scratch / "pip-cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    target = f"{source}[{extras}]" if extras else str(source)
    started = time.perf_counter()
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", target], check=True, env=env)
    install_s = time.perf_counter() - started
    log(f"pip install {target}: {install_s:.1f} s")
    dists = distributions(python)
    installed = {n: d for n, d in dists.items() if n in closure(dists, {(PROJECT, frozenset(extras.split(",")) - {""})})}
    result: dict[str, Any] = {
        "install": target.replace(str(source), "."),
        "pip_install_s": round(install_s, 1),
        "venv": {k: v / MB for k, v in disk_bytes(venv).items()},
        "distributions": len(installed),  # the project and what it pulls in (not the venv's own pip, setuptools)
        "installed_mb": round(sum(d["bytes"] for d in installed.values()) / MB, 1),
        "by_dependency": shares(dists, frozenset(e for e in extras.split(",") if e)),
        "largest": {n: round(d["bytes"] / MB, 1) for n, d in sorted(dists.items(), key=lambda kv: -kv[1]["bytes"])[:25]},
    }
    result["readme_first_command"] = readme_ask(venv, scratch)
    return result


def readme_ask(venv: Path, scratch: Path) -> dict[str, Any]:
    """The README's first command in this install: ``rag-agent ask`` offline on the bundled demo."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGMCP_", "ANTHROPIC_", "OPENAI_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update(RAGMCP_DATA_DIR=str(scratch / "data"), HOME=str(scratch / "home"))
    started = time.perf_counter()
    done = subprocess.run([str(venv / "bin" / "rag-agent"), "ask", QUESTION], capture_output=True, text=True,
                          env=env, cwd=scratch, timeout=900)  # fmt: skip
    seconds = time.perf_counter() - started
    answer = done.stdout.strip()
    log(f"rag-agent ask: exit {done.returncode} in {seconds:.1f} s")
    return {"exit_code": done.returncode, "seconds": round(seconds, 1), "cites_the_leave_policy": "leave" in answer,
            "answer_head": answer[:300], "stderr_tail": done.stderr[-600:] if done.returncode else ""}


class Peer:
    """A stdio MCP server process, its stdout read as JSON-RPC messages."""

    def __init__(self, command: list[str], env: dict[str, str], stderr: Path) -> None:
        self.started = time.perf_counter()
        self._stderr = stderr.open("wb")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._stderr, env=env)  # fmt: skip
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        assert self.process.stdout is not None
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()
        self._next = 0

    def _pump(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self._queue.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        self.send({"id": self._next, "method": method, "params": params})
        while True:
            reply = self._queue.get(timeout=900)
            if reply.get("id") == self._next:
                return reply

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._stderr.close()


def first_start(command: list[str], env: dict[str, str], stderr: Path) -> dict[str, float]:
    """Spawn, handshake, list tools, then search every 0.5 s until hits come back (the background build)."""
    peer = Peer(command, env, stderr)
    try:
        reply = peer.request("initialize", INITIALIZE)
        initialize_s = time.perf_counter() - peer.started
        assert "result" in reply, reply
        peer.send({"method": "notifications/initialized"})
        tools = peer.request("tools/list", {})["result"]["tools"]
        tools_s = time.perf_counter() - peer.started
        while True:
            result = peer.request("tools/call", {"name": "hybrid_search", "arguments": {"query": "annual leave"}})
            if not result["result"].get("isError"):
                break
            time.sleep(0.5)
        hits_s = time.perf_counter() - peer.started
    finally:
        peer.stop()
    log(f"initialize {initialize_s:.1f} s, tools/list {tools_s:.1f} s, first hits {hits_s:.1f} s")
    return {"initialize_s": round(initialize_s, 2), "tools_list_s": round(tools_s, 2), "tools": len(tools),
            "first_hits_s": round(hits_s, 1)}


def user_folder(scratch: Path) -> Path:
    """The user's folder of documents: a copy of the bundled handbook corpus."""
    folder = scratch / "Documents" / "handbook"
    shutil.copytree(REPO / "corpora" / "handbook", folder)
    return folder


def server_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RAGMCP_", "UV_", "VIRTUAL_ENV", "PYTHONPATH", "ANTHROPIC_", "OPENAI_"))}
    env.update(UV_CACHE_DIR=str(scratch / "uv-cache"), HOME=str(scratch / "home"),
               RAGMCP_DATA_DIR=str(scratch / "data"), XDG_DATA_HOME=str(scratch / "xdg-data"))
    return env


def downloaded_wheels(python: Path, scratch: Path, skip: set[str]) -> dict[str, Any]:
    """The wheels of the installed versions as the registry serves them for this machine (``pip download``)."""
    dists = distributions(python)
    pins = [f"{name}=={info['version']}" for name, info in dists.items() if name not in skip]
    folder = scratch / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(folder), *pins],
                   check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})  # jieba: a source archive
    files = sorted(folder.iterdir(), key=lambda p: -p.stat().st_size)
    return {"packages": len(pins), "download_mb": round(sum(p.stat().st_size for p in files) / MB, 1),
            "source_archives": [p.name for p in files if not p.name.endswith(".whl")],
            "largest_mb": {p.name: round(p.stat().st_size / MB, 1) for p in files[:12]}}


def measure_bundle(mcpb: Path, scratch: Path) -> dict[str, Any]:
    bundle = scratch / "bundle"
    with zipfile.ZipFile(mcpb) as archive:
        archive.extractall(bundle)
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    config = manifest["server"]["mcp_config"]
    folder = user_folder(scratch)
    values = {"${__dirname}": str(bundle), "${user_config.watch}": "false", "${user_config.folders}": str(folder)}
    args = []
    for arg in config["args"]:
        for key, value in values.items():
            arg = arg.replace(key, value)
        args.append(arg)
    command = [shutil.which(config["command"]) or config["command"], *args]
    env = {**server_env(scratch), **config.get("env", {})}
    result: dict[str, Any] = {"mcpb_bytes": mcpb.stat().st_size, "command": " ".join([config["command"], *config["args"]])}
    result["first_start"] = first_start(command, env, scratch / "first-start.log")
    result["second_start"] = first_start(command, env, scratch / "second-start.log")
    venv = bundle / ".venv"
    result["venv_mb"] = {k: round(v / MB, 1) for k, v in disk_bytes(venv).items()}
    result["uv_cache_mb"] = {k: round(v / MB, 1) for k, v in disk_bytes(scratch / "uv-cache").items()}
    dists = distributions(venv / "bin" / "python")
    result["distributions"] = len(dists)
    result["largest_mb"] = {n: round(d["bytes"] / MB, 1) for n, d in sorted(dists.items(), key=lambda kv: -kv[1]["bytes"])[:20]}
    result["wheels"] = downloaded_wheels(venv / "bin" / "python", scratch, {PROJECT, "agentic-rag-mcp-bundle"})
    return result


def measure_uvx(source: Path, scratch: Path) -> dict[str, Any]:
    folder = user_folder(scratch)
    env = {**server_env(scratch), "UV_TOOL_DIR": str(scratch / "uv-tools"), "RAGMCP_CORPORA": str(folder)}
    command = [shutil.which("uvx") or "uvx", "--from", str(source), "ragmcp", "serve"]
    result: dict[str, Any] = {"command": "uvx --from SOURCE ragmcp serve"}
    result["first_start"] = first_start(command, env, scratch / "first-start.log")
    result["uv_cache_mb"] = {k: round(v / MB, 1) for k, v in disk_bytes(scratch / "uv-cache").items()}
    return result


def measure_download(source: Path, extras: str, excluded: list[str], scratch: Path) -> dict[str, Any]:
    """What installing SOURCE[EXTRAS] downloads here: ``uv lock`` of a project asking for it (less ``excluded``),
    and for each locked package the size of the file this machine's Python would fetch (its best wheel by
    ``packaging.tags``, else the source archive). No package is downloaded."""
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename

    wheel_dir = scratch / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheel_dir),
                    str(source)], check=True)  # fmt: skip
    (wheel,) = wheel_dir.glob("*.whl")
    asked = f"{PROJECT}[{extras}]" if extras else PROJECT
    exclude = "".join(f'"{name}", ' for name in excluded)
    (scratch / "pyproject.toml").write_text(
        f'[project]\nname = "measure"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = ["{asked}"]\n\n'
        f'[tool.uv.sources]\n{PROJECT} = {{ path = "{wheel}" }}\n\n[tool.uv]\nexclude-dependencies = [{exclude}]\n',
        encoding="utf-8",
    )
    uv = shutil.which("uv") or "uv"
    subprocess.run([uv, "lock", "--quiet", "--directory", str(scratch)], check=True)
    import tomllib

    from packaging.requirements import Requirement

    exported = subprocess.run([uv, "export", "--frozen", "--no-hashes", "--no-header", "--no-emit-project",
                               "--no-annotate", "--directory", str(scratch)], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
    here = set()  # (name, version) installed on this machine: the universal lock's markers evaluated here
    for line in exported.splitlines():
        if "==" in line and not line.startswith(("#", "-")):  # not the project's wheel (a path)
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate():
                here.add((requirement.name.lower(), str(requirement.specifier).removeprefix("==")))
    lock = tomllib.loads((scratch / "uv.lock").read_text(encoding="utf-8"))
    priority = {tag: rank for rank, tag in enumerate(sys_tags())}
    files: dict[str, int] = {}
    for package in lock["package"]:
        if (package["name"], package.get("version")) not in here:
            continue
        best: tuple[int, str, int] | None = None
        for wheel_entry in package.get("wheels", []):
            name = wheel_entry["url"].rsplit("/", 1)[-1]
            ranks = [priority[t] for t in parse_wheel_filename(name)[3] if t in priority]
            if ranks and (best is None or min(ranks) < best[0]):
                best = (min(ranks), name, wheel_entry["size"])
        if best is not None:
            files[best[1]] = best[2]
        elif "sdist" in package:
            files[package["sdist"]["url"].rsplit("/", 1)[-1]] = package["sdist"]["size"]
    ordered = sorted(files.items(), key=lambda kv: -kv[1])
    return {"install": asked, "excluded": excluded, "packages": len(files),
            "download_mb": round(sum(files.values()) / MB, 1),
            "largest_mb": {name: round(size / MB, 1) for name, size in ordered[:12]}}


def machine() -> dict[str, Any]:
    uv = subprocess.run([shutil.which("uv") or "uv", "--version"], capture_output=True, text=True).stdout.strip()
    return {"cores": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "uv": uv, "load_average_before": list(os.getloadavg()), "date": time.strftime("%Y-%m-%d")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=["pip", "bundle", "uvx", "download"])
    parser.add_argument("label")
    parser.add_argument("--source", type=Path, default=REPO, help="the project to install (a checkout or a wheel)")
    parser.add_argument("--extras", default="", help="extras to install with pip, comma-separated")
    parser.add_argument("--mcpb", type=Path, help="the bundle to start")
    parser.add_argument("--exclude", action="append", default=[], help="download: a package left out (repeatable)")
    parser.add_argument("--note", default="", help="what this label measures (kept with the result)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ragmcp-install-") as tmp:
        scratch = Path(tmp)
        entry = {"machine": machine(), "note": args.note}
        if args.kind == "pip":
            entry.update(measure_pip(args.source.resolve(), args.extras, scratch))
        elif args.kind == "bundle":
            assert args.mcpb is not None, "--mcpb is required"
            entry.update(measure_bundle(args.mcpb.resolve(), scratch))
        elif args.kind == "uvx":
            entry.update(measure_uvx(args.source.resolve(), scratch))
        else:
            entry.update(measure_download(args.source.resolve(), args.extras, args.exclude, scratch))
    results = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    results.setdefault(args.kind, {})[args.label] = entry
    RESULTS.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(entry, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
