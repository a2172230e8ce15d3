"""The three stores of an index generation (documents, vectors, keywords) and the embedding cache."""
