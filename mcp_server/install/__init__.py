"""``ragmcp install``: register this server with a desktop MCP host."""
