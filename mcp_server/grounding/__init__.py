"""Grounding: whether an answer's sentences are supported by the texts they cite.

The one citation check of the project, on the ground floor so that both the MCP server's
``check_answer`` tool and the reference agent (``client_agent``) run the same code:
:mod:`~mcp_server.grounding.claims` reads an answer (sentences, citation brackets, numbers,
codes, key terms), :mod:`~mcp_server.grounding.citations` decides what each sentence must
satisfy. :mod:`~mcp_server.grounding.quotes` finds a quote in a text. Their work is linear in
what they read and stops at the deadline of the call it serves
(:mod:`~mcp_server.grounding.deadline`). It imports nothing else of the project.
"""
