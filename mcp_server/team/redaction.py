"""Nothing shaped like a secret reaches a log.

:class:`RedactSecrets` is a logging filter on every handler of the HTTP server (see
``http_app._stderr_logging``): it drops the query string from uvicorn's access-log lines
(a client may put a token in the URL, as ``?access_token=...``), and masks anything shaped
like a token (``rmcp_...``) or a bearer value in any record - percent-encoded ones too
(``/%72mcp_...``). The audit log masks its call arguments with :func:`redact` too.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote

from mcp_server.team.tokens import TOKEN_PREFIX

REDACTED = "[redacted]"
SECRET_SHAPES = re.compile(rf"{TOKEN_PREFIX}[A-Za-z0-9_\-]*|\bBearer\s+[^\s\"',;]+", re.IGNORECASE)
"""Our tokens (their prefix and what follows) and ``Bearer <value>``, wherever they appear."""
ACCESS_LOGGER = "uvicorn.access"


def redact(text: str) -> str:
    """``text`` with everything shaped like a secret replaced by :data:`REDACTED` (once percent-decoded, if a
    secret hides behind percent-encoding)."""
    decoded = _decoded(text)
    return SECRET_SHAPES.sub(REDACTED, decoded if SECRET_SHAPES.search(decoded) else text)


def has_secret(text: str) -> bool:
    return SECRET_SHAPES.search(_decoded(text)) is not None


def _decoded(text: str) -> str:
    """``text`` percent-decoded until nothing changes (at most three times: ``%2572`` is ``%72`` is ``r``)."""
    for _ in range(3):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


class RedactSecrets(logging.Filter):
    """A logging filter that rewrites records so that no query string and no token-shaped text is written."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == ACCESS_LOGGER and isinstance(record.args, tuple) and len(record.args) == 5:
            address, method, path, version, status = record.args  # uvicorn: '%s - "%s %s HTTP/%s" %d'
            if isinstance(path, str) and "?" in path:
                record.args = (address, method, f"{path.partition('?')[0]}?{REDACTED}", version, status)
        message = record.getMessage()
        if has_secret(message):
            record.msg, record.args = redact(message), None
        return True
