"""Entry point of the MCP Bundle: ``main.py WATCH FOLDER...`` serves the FOLDERs over stdio.

The host passes the folders chosen in its settings as arguments (a bundle manifest can put a
list into arguments only, not into an environment variable) and WATCH as "true" or "false".
The index goes where ``ragmcp ingest`` puts it (the per-user data folder).
"""

import os
import sys

from mcp_server.cli import main

if __name__ == "__main__":  # not when a spawned child process (the keyword index writer) imports it
    watch, *folders = sys.argv[1:] or ["false"]
    if folders:
        os.environ["RAGMCP_CORPORA"] = os.pathsep.join(folders)
    main(["serve", *(["--watch"] if watch == "true" else [])], prog_name="ragmcp")
