"""The errors the retrieval library raises.

Every message names the offending value and says what to do instead, because the
same text reaches a terminal user (through the CLI) and a model (through MCP).
"""


class RetrievalError(Exception):
    """Base class: something the caller asked for cannot be done as asked."""


class InvalidQueryError(RetrievalError):
    """The query, its options or its filters are malformed or out of range."""


class NotFoundError(RetrievalError):
    """A corpus, document or chunk that the caller named does not exist."""


class ReadOnlyViolationError(RetrievalError):
    """A SQL statement tried to do something other than read."""


class QueryTimeoutError(RetrievalError):
    """A SQL statement ran past its wall-clock limit and was interrupted."""


class IndexMissingError(RetrievalError):
    """No index has been built yet at the configured location."""


class IndexBuildingError(RetrievalError):
    """The index (or the corpus asked for) is still being built; the message says how far and when to retry."""


class EmbeddingModelMismatchError(RetrievalError):
    """The configured embedding model is not the one the index was built with."""


class EmbeddingModelError(RetrievalError):
    """The embedding model cannot be loaded (missing file, wrong checksum, bad config)."""


class IngestError(RetrievalError):
    """A corpus or document cannot be ingested as given."""


class SourceChangedError(RetrievalError):
    """The file a document was indexed from has changed or gone since: what the index says of it no longer fits it."""


class BackendUnavailableError(RetrievalError):
    """A store the index needs (the Chroma server) cannot be reached or lacks the index's data."""


class TokensFileError(RetrievalError):
    """The tokens file of a team server is missing or malformed, or a token command cannot be done."""


class CallTimeoutError(RetrievalError):
    """A tool call ran past the server's per-call time limit."""


class HostConfigError(RetrievalError):
    """A desktop host's configuration file cannot be read or changed as asked (ragmcp install)."""
