"""agentic-rag-mcp reference agent: answers questions over the MCP server with checked citations."""
