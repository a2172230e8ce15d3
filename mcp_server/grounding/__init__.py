"""Grounding: whether an answer's sentences are supported by the texts they cite.

The one citation check of the project, low in the layers so that both the MCP server's
``check_answer`` tool and the reference agent (``client_agent``) run the same code. It runs in
four steps, each a module entered once, in order: :mod:`~mcp_server.grounding.sentences` (an
answer's sentences and citation brackets) → :mod:`~mcp_server.grounding.claims` (what a
sentence claims, what a cited text holds) → :mod:`~mcp_server.grounding.support` (whether the
cited texts hold the claims) → :mod:`~mcp_server.grounding.verdict` (each sentence's verdict,
the answer's, and enforcing it). All of them read text with the analyzer
(:mod:`mcp_server.analyzer`). :mod:`~mcp_server.grounding.quotes` finds a quote in a text.
Their work is linear in what they read and stops at the deadline of the call it serves
(:mod:`~mcp_server.grounding.deadline`). Besides the analyzer it imports only citation ids.
"""
