"""The MCP surface: the server and its tools, their descriptions for the model, and the text renderings."""
