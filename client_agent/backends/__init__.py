"""LLM back-ends behind one small interface (:class:`client_agent.backends.base.Backend`)."""
