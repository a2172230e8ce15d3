"""Building the index: ingestion of corpora into a new generation, and the generations on disk."""
