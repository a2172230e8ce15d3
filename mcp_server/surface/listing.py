"""Documents listed as resources, a page at a time: ``resources/list`` names every readable document.

The documents are also a resource template (``doc://{corpus}/{+doc_id}``), but a client
browsing resources expects to see them. :class:`DocumentListing` is server middleware that
answers ``resources/list`` with the server's own resources (the corpus list, the SQL schema)
followed by the documents of the corpora the grant may read, :data:`PAGE_SIZE` per page in
(corpus, doc_id) order, with the MCP ``nextCursor`` to ask for the next page. A cursor is
the last document of the previous page, so pages stay consistent over a big corpus; one
that cannot be decoded is refused with -32602 (invalid params), as the specification asks.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Collection
from typing import Any

from mcp_server.citation_ids import DocumentRef
from mcp_server.surface.links import document_uri
from mcp_server.surface.sdk import (
    CallNext,
    HandlerResult,
    ListResourcesResult,
    MCPError,
    Resource,
    ServerRequestContext,
)
from mcp_server.surface.tools import ToolBackend

PAGE_SIZE = 100
"""Documents per ``resources/list`` page."""
INVALID_PARAMS = -32602


class DocumentListing:
    """Server middleware: ``resources/list`` pages through the documents of the corpora within ``scope``."""

    def __init__(self, tools: ToolBackend, scope: Collection[str] | None) -> None:
        self.tools = tools
        self.scope = scope

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "resources/list":
            return await call_next(ctx)
        cursor = (ctx.params or {}).get("cursor")
        after = _decode(cursor) if cursor is not None else None
        fixed: list[Resource] = []
        if after is None:  # the first page leads with the server's own resources
            listed = await call_next(ctx)
            fixed = ListResourcesResult.model_validate(listed).resources
        page = self.tools.document_page(self.scope, after, PAGE_SIZE + 1)
        documents = [_resource(corpus, doc_id, title) for corpus, doc_id, title in page[:PAGE_SIZE]]
        more = len(page) > PAGE_SIZE
        return ListResourcesResult(
            resources=[*fixed, *documents], next_cursor=_encode(page[PAGE_SIZE - 1][:2]) if more else None
        )


def _resource(corpus: str, doc_id: str, title: str) -> Resource:
    return Resource(
        uri=document_uri(corpus, doc_id), name=str(DocumentRef(corpus, doc_id)), title=title,
        mime_type="text/plain", description=f"Document {doc_id!r} of the {corpus} corpus, with its citation ids.",
    )  # fmt: skip


def _encode(position: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(position)).encode("utf-8")).decode("ascii")


def _decode(cursor: object) -> tuple[str, str]:
    try:
        corpus, doc_id = json.loads(base64.urlsafe_b64decode(str(cursor).encode("ascii")))
        if isinstance(corpus, str) and isinstance(doc_id, str):
            return corpus, doc_id
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        pass
    raise MCPError(INVALID_PARAMS, "Invalid cursor for resources/list: pass the nextCursor of the previous page.")
