"""A model back-end whose SDK is not installed (the default install has neither) names its extra.

``rag-agent ask`` runs in a child process that cannot import the SDK (``sys.modules[name] = None``),
as in an install without the extra; the server it spawns serves the bundled index as usual.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcp_server.settings import Settings
from tests.helpers import subprocess_env

pytestmark = pytest.mark.slow

ASK = "import sys; sys.modules[{sdk!r}] = None; from client_agent.cli import main; main(sys.argv[1:], prog_name='rag-agent')"


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_model_backend_without_its_sdk_says_which_extra_to_install(bundled_settings: Settings, backend: str) -> None:
    env = {**subprocess_env(bundled_settings), "ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": ""}
    done = subprocess.run(
        [sys.executable, "-c", ASK.format(sdk=backend), "ask", "--backend", backend, "How much annual leave do I get?"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip

    assert done.returncode == 1 and done.stdout == ""
    assert f"install agentic-rag-mcp[{backend}]" in done.stderr and "--backend offline" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
