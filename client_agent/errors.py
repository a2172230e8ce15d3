"""The agent's errors, in one place.

An :class:`AgentError` is one a user can act on: its message says what went wrong and what to do
(a flag, a key, a server to start), and the command line shows it as one line. Anything else
that reaches the command line is unexpected — a bug — and is shown as one line that says so;
``rag-agent --debug`` shows its traceback instead.
"""

from __future__ import annotations


class AgentError(Exception):
    """An error the user can act on; the message says what to do about it."""


class ModelBackendError(AgentError, RuntimeError):
    """A model API could not be used; the message says what to do about it."""


class MissingExtraError(ModelBackendError):
    """A back-end whose SDK is not installed (the default install has none): names the extra that brings it."""

    def __init__(self, extra: str, backend: str, error: ImportError) -> None:
        super().__init__(
            f"the {backend} back-end needs the {extra} SDK, which is not installed ({error}): install "
            f"agentic-rag-mcp[{extra}] to use it (pip install 'agentic-rag-mcp[{extra}]'), or use the offline "
            "back-end (--backend offline), which needs no SDK."
        )


class RelevanceModelError(AgentError, RuntimeError):
    """The offline back-end's relevance model is missing or not the file it pins; the message says what to
    reinstall."""


class ServerConnectionError(AgentError, ConnectionError):
    """The retrieval server at a URL could not be reached or did not answer MCP; the message names the
    URL and what to check."""


class QuestionSetError(AgentError, ValueError):
    """The question set cannot be read; the message names the line and what to fix."""


class ReflectionError(ValueError):
    """A reflection reply that is not a valid verdict; the message says what to fix. The loop retries it
    once and never lets it reach the user."""
