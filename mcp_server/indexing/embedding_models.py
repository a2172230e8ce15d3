"""The embedding models of an index under this process's settings (:mod:`mcp_server.embedding.choice`)."""

from __future__ import annotations

from mcp_server.embedding.choice import CorpusModels, index_models
from mcp_server.embedding.loading import load_embedder
from mcp_server.indexing.generations import Manifest
from mcp_server.settings import Settings
from mcp_server.settings.embedding import AUTO_MODEL


def models_of_index(settings: Settings, manifest: Manifest | None) -> tuple[CorpusModels, str | None]:
    """The models of the index ``manifest`` describes (None: a new index) under the configured embedding
    model, and a line for the user when the index keeps a model ``auto`` would not choose today.

    Raises EmbeddingModelMismatchError when the index was built by another model than the one configured.
    """
    embedding = settings.embedding
    load = None if embedding.model == AUTO_MODEL else load_embedder(embedding.model, embedding.config, embedding.server)
    if manifest is None:
        return index_models(embedding.model, None, None, load)
    return index_models(embedding.model, manifest.embedding_model, manifest.corpus_models, load)
