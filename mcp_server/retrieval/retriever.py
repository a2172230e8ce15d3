"""The retrieval core: one opened index generation with a room for searching and one for reading.

Plain Python over one opened index generation; the CLI and the MCP server are thin surfaces over
:class:`Retriever`:

* the generation itself (:class:`~mcp_server.retrieval.generation.OpenGeneration`, which a
  Retriever is): its lease, its stores, the background copy of its vectors, the corpora served
  and each caller's scope;
* :attr:`Retriever.searcher` (:mod:`mcp_server.retrieval.search`): vector, keyword and hybrid
  search, filters and reranking;
* :attr:`Retriever.documents` (:mod:`mcp_server.retrieval.reading`): documents, citation lookup
  and where a span lies on its pages.
"""

from __future__ import annotations

from pathlib import Path

from mcp_server.embedding.choice import CorpusModels
from mcp_server.indexing.generations import GenerationLease, Manifest
from mcp_server.retrieval.generation import OpenGeneration
from mcp_server.retrieval.reading import DocumentReader
from mcp_server.retrieval.search import Searcher
from mcp_server.settings import Settings


class Retriever(OpenGeneration):
    """Search and read one index generation. Safe to share between threads."""

    def __init__(
        self, generation: Path, manifest: Manifest, models: CorpusModels, settings: Settings,
        lease: GenerationLease | None = None, *, vectors_in_background: bool = False,
    ) -> None:  # fmt: skip
        """Open ``generation`` (see :class:`~mcp_server.retrieval.generation.OpenGeneration`) and its two rooms."""
        super().__init__(generation, manifest, models, settings, lease, vectors_in_background=vectors_in_background)
        self.searcher = Searcher(self)
        self.documents = DocumentReader(self)
