"""``rag-agent``: the reference agent's command line.

The agent itself (``ask``, ``chat``) lands with the agent issue; until then this group
only carries the entry point so the distribution's console scripts are stable.
"""

import click


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentic-rag-mcp")
def main() -> None:
    """Answer questions over an agentic-rag-mcp server, with citations (coming with the agent issue)."""
