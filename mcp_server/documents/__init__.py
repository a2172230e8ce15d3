"""Documents: corpus configuration and discovery, loaders per file type, and chunking."""
