"""Retrieval over one index generation: the retriever (vector, keyword, hybrid, documents) and score fusion."""
