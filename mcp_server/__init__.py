"""agentic-rag-mcp server: cited retrieval over local corpora and a read-only SQL database."""

__version__ = "0.1.0"
