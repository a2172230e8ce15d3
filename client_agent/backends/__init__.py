"""The model back-ends (Anthropic, OpenAI-compatible) behind one small interface (:class:`client_agent.backends.base.Backend`).

The offline back-end, which has no model, is its own package: :mod:`client_agent.offline`.
"""
