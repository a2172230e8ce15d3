"""Settings: one object, read from ``RAGMCP_*`` environment variables and CLI flags, validated once.

Where things live:

- ``data_dir`` (``RAGMCP_DATA_DIR``): the index generations, the embedding cache and the
  materialised demo database. Defaults to the per-user data directory.
- ``corpora`` (``RAGMCP_CORPORA``, paths separated by ``os.pathsep``): the corpus folders
  that ``ragmcp ingest`` builds. Defaults to the bundled demo corpora.
- ``database`` (``RAGMCP_DATABASE``): what ``sql_query`` reads: an existing SQLite file, or a
  folder of database sources (``schema.json`` and one CSV per table, built into the data dir
  and rebuilt when they change), or ``none`` for no SQL at all. Unset, the bundled demo
  database (from ``corpora/database/``) is served together with the bundled demo corpora
  only; with corpora of the user's own there is then no SQL. The corpora served are exactly
  the configured ones (see :mod:`mcp_server.indexing.configured`).
- ``chroma_url`` (``RAGMCP_CHROMA_URL``, e.g. ``http://127.0.0.1:8000``): keep the vectors
  on a Chroma server (``chroma run``) instead of inside the index directory.
- ``embedding_model`` (``RAGMCP_EMBEDDING_MODEL``): the model spec (:mod:`mcp_server.embedding`);
  ``openai:<model>`` embeds through an OpenAI-compatible server at ``embedding_url``
  (``RAGMCP_EMBEDDING_URL``, e.g. Ollama's ``http://localhost:11434/v1``) with the ``embedding_*``
  key, batch size, timeout and retries below.

The ``http_*`` fields and the ``allowed_*`` lists configure ``ragmcp serve --transport http``;
its worker processes receive the parent's settings through :meth:`Settings.to_env`. With a
``tokens_file`` (``RAGMCP_TOKENS_FILE``) the HTTP server requires bearer tokens, and every
call it serves goes to the audit log (``audit_log``, default ``<data_dir>/audit.jsonl``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from mcp_server.embedding.spec import DEFAULT_MODEL, EmbeddingServer
from mcp_server.stores.keyword import IdfFormula

APP_NAME = "agentic-rag-mcp"

# The settings that decide what an index holds from the same files: which files are read, how far and with
# what help (OCR). The index records them (:meth:`Settings.index_settings`) and every later ingestion of it
# uses the recorded values until ``ragmcp ingest --rebuild`` records new ones, so a desktop host's server and
# the CLI on one data dir index alike. The embedding model is recorded and checked on its own (a model change
# needs a rebuild), and chunking is set per corpus in its corpus.toml.
INDEX_SETTINGS = (
    "max_file_mb", "max_document_chunks", "max_unzipped_mb", "max_sheet_cells",
    "reader_memory_mb", "read_timeout_s", "page_timeout_s", "ocr", "ocr_max_pages",
)  # fmt: skip


def env_value(value: Any) -> str:
    """A setting's value as a user would type it in an environment variable (``50``, not ``50.0``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def bundled_corpora_dir() -> Path:
    """The demo corpora: inside the installed package (wheel) or at the repository root (checkout)."""
    packaged = Path(__file__).parent / "corpora"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parent.parent / "corpora"


def bundled_corpus_dirs() -> list[Path]:
    root = bundled_corpora_dir()
    return sorted(p for p in root.iterdir() if (p / "corpus.toml").is_file()) if root.is_dir() else []


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAGMCP_", extra="forbid", validate_default=True)

    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir(APP_NAME)))
    corpora: Annotated[list[Path], NoDecode] = Field(default_factory=bundled_corpus_dirs)
    database: Literal["none"] | Path | None = None

    chroma_url: str | None = Field(
        default=None, description="Chroma server for the vectors (http(s)://host:port); unset: embedded store."
    )

    embedding_model: str = DEFAULT_MODEL
    embedding_config: str | None = None
    embedding_url: str | None = Field(
        default=None,
        description="OpenAI-compatible base URL of the server for an openai:<model> spec, e.g. "
        "http://localhost:11434/v1 (Ollama); unset: OpenAI's API.",
    )
    embedding_api_key: SecretStr | None = Field(
        default=None, description="API key for that server; unset: none (OpenAI's API: OPENAI_API_KEY)."
    )
    embedding_batch_size: int = Field(
        default=64, ge=1, le=4096, description="Texts per embedding request (and per embedding-cache commit)."
    )
    embedding_timeout_s: float = Field(default=60.0, gt=0, le=3600, description="Longest one embedding request may take.")
    embedding_max_retries: int = Field(
        default=4, ge=0, le=20,
        description="Retries of an embedding request after a connection error, timeout, 429 or 5xx, with backoff.",
    )

    rerank_url: str | None = Field(
        default=None,
        description="A rerank server's endpoint, e.g. http://localhost:8001/v1/rerank (vLLM, llama.cpp, Infinity, "
        "Jina/Cohere gateways) or http://localhost:8080/rerank (TEI); hybrid search reranks its fused candidates "
        "with it (mcp_server.retrieval.rerank). Unset or empty: no reranking.",
    )
    rerank_model: str | None = Field(
        default=None, description="The rerank model's name as the server knows it (sent in each request)."
    )
    rerank_api_key: SecretStr | None = Field(default=None, description="Bearer token for the rerank server; unset: none.")
    rerank_timeout_s: float = Field(
        default=5.0, gt=0, le=300,
        description="Longest one rerank call may take in all: connecting, sending, and reading every byte of the "
        "answer (a server sending it a byte at a time gains nothing); past it the search returns the fused order.",
    )  # fmt: skip
    rerank_candidates: int = Field(
        default=50, ge=1, le=1000,
        description="How many of the best fused candidates are sent to the rerank server (at least top_k).",
    )  # fmt: skip

    max_top_k: int = Field(default=50, ge=1, le=1000)
    max_query_chars: int = Field(default=2000, ge=16)
    # Hybrid fusion and BM25 parameters: chosen by nDCG@10 on the SciFact *train* queries
    # (bench/retrieval/tune_scifact.py; the grid and scores are in bench/retrieval/tuning-scifact.json).
    candidate_depth: int = Field(default=100, ge=1, description="Hits each retriever hands to hybrid fusion.")
    hybrid_fusion: Literal["convex", "rrf"] = Field(
        default="convex",
        description="convex: weighted sum of cosine similarity and IDF-normalised BM25 (mcp_server.retrieval.fusion); "
        "rrf: weighted reciprocal-rank fusion.",
    )
    convex_keyword_weight: float = Field(
        default=0.3, ge=0, le=1, description="Keyword share of the convex fusion score; the vector share is 1 minus it."
    )
    # Chosen on half of CMRC 2018 (bench/retrieval/tune_cmrc2018.py). The default embedding model is
    # English-only; with a multilingual model, set it to convex_keyword_weight.
    convex_keyword_weight_cjk: float = Field(
        default=0.7, ge=0, le=1,
        description="Keyword share for queries in Chinese, Japanese or Korean script (mixed queries: in between).",
    )
    rrf_k: float = Field(default=2.0, gt=0)
    rrf_vector_weight: float = Field(default=1.0, ge=0)
    rrf_keyword_weight: float = Field(default=1.0, ge=0)
    bm25_b: float = Field(default=0.3, ge=0, le=1)
    bm25_k1: float = Field(default=1.2, ge=0)
    bm25_idf: IdfFormula = Field(default="lucene", description="BM25 IDF: lucene (as bm25s, Anserini) or whoosh.")
    # Chosen on SciFact train (bench/retrieval/tune_common_terms.py): the most pruning within 0.002 nDCG@10.
    bm25_common_term_share: float = Field(
        default=0.03, gt=0, le=1,
        description="A query word found in more than this share of the searched chunks (and in more than "
        "bm25_common_term_min_chunks) only adds to the score of chunks holding a rarer query word; 1 turns it off.",
    )
    bm25_common_term_min_chunks: int = Field(
        default=1000, ge=0,
        description="A query word in no more chunks than this is never treated as common, whatever the share: short "
        "posting lists cost little, so pruning starts only where the index is large (about 33,000 chunks at the "
        "default share).",
    )
    keyword_cache_mb: int = Field(
        default=512, ge=0,
        description="Memory for decoded keyword posting lists kept between searches (per index served); the common "
        "words that recur in query after query are then not decoded again. 0 keeps none.",
    )

    sql_max_rows: int = Field(default=200, ge=1, le=10_000)
    sql_timeout_s: float = Field(default=5.0, gt=0, le=300)
    sql_max_concurrent: int = Field(
        default=2, ge=1, le=64,
        description="SQL statements running at once per process (each in a worker process), besides the other calls; "
        "on a team server one team holds all but one of them while another team waits.",
    )  # fmt: skip
    sql_memory_mb: int = Field(
        default=256, ge=16, le=65_536,
        description="Memory one SQL statement may use (SQLite's heap, its sorts and temporary tables included: they "
        "stay in memory, never on disk); past it the statement is stopped with a tool error.",
    )  # fmt: skip

    max_result_chars: int = Field(
        default=20_000, ge=1_000, description="Most characters of text one MCP tool call returns."
    )
    max_concurrent_calls: int = Field(
        default=4, ge=1, le=256,
        description="Searches and document reads running at once per process (SQL: sql_max_concurrent); more wait.",
    )
    call_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="Longest an MCP tool call may take, waiting for its turn included."
    )

    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8000, ge=0, le=65_535)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Host headers accepted over HTTP besides loopback; 'name:*' for any port."
    )
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Origin headers accepted over HTTP besides loopback ones."
    )
    stateless_http: bool = Field(default=True, description="A fresh MCP transport per HTTP request (no sessions).")
    max_body_bytes: int = Field(default=1_048_576, ge=1_024, description="Largest HTTP request body accepted.")
    reload_interval_s: float = Field(
        default=1.0, gt=0, le=3600, description="How often an HTTP worker checks for a newly published index."
    )
    http_header_timeout_s: float = Field(
        default=10.0, gt=0, le=3600, description="Longest an HTTP request's headers may take to arrive."
    )
    http_body_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="Longest an HTTP request's body may take to arrive after its headers."
    )
    http_max_header_bytes: int = Field(
        default=65_536, ge=4_096, le=16_777_216,
        description="Largest HTTP request line and headers together; past it the answer is 431.",
    )  # fmt: skip
    http_stream_lifetime_s: float = Field(
        default=300.0, gt=0, le=86_400,
        description="Longest an HTTP notification stream (GET /mcp, subscriptions/listen) stays open; clients reconnect.",
    )  # fmt: skip
    http_max_headers: int = Field(
        default=100, ge=10, le=10_000, description="Most header fields an HTTP request may have; past it, 431."
    )
    http_worker_start_timeout_s: int = Field(
        default=60, ge=5, le=3600,
        description="Longest an HTTP worker process may take to start (and to answer the supervisor's pings).",
    )  # fmt: skip

    tokens_file: Path | None = Field(
        default=None, description="Clients, token hashes and grants (ragmcp token add); set, HTTP requires tokens."
    )
    public_url: str | None = Field(
        default=None,
        description="The URL clients reach the HTTP server at (behind a proxy, the proxy's); names the protected "
        "resource in auth responses. Default: http://<host>:<port>.",
    )
    audit_log: Path | None = Field(
        default=None, description="The HTTP audit log (JSONL); default <data_dir>/audit.jsonl."
    )
    audit_max_bytes: int = Field(default=10_485_760, ge=10_000, description="Size at which the audit log rotates.")
    audit_backups: int = Field(default=5, ge=1, description="Rotated audit logs kept (audit.jsonl.1, .2, ...).")
    audit_min_keep_hours: float = Field(
        default=24.0, ge=0, le=8_760,
        description="Rotation never deletes an audit backup written to less than this many hours ago: the log grows "
        "past audit_max_bytes instead, so a flood of calls cannot push recent records out. 0: rotate by size alone.",
    )  # fmt: skip
    audit_client_bytes_per_minute: int = Field(
        default=262_144, ge=16_384,
        description="Bytes of full audit records one client may write a minute (per worker process); past it its "
        "calls are still recorded, each on a thinned line (time, tool, outcome, the start of its arguments).",
    )  # fmt: skip

    # Ingestion limits: what one file may cost, on disk and in what it becomes when read
    # (mcp_server/documents/limits.py). 50 MB admits slide decks and PDFs full of pictures.
    max_file_mb: float = Field(
        default=50.0, gt=0, description="Files larger than this many megabytes are skipped (and reported)."
    )
    max_document_chunks: int = Field(
        default=100_000, ge=1,
        description="A file that would make more chunks than this (about 25M tokens: a 50 MB log, a 20,000-page "
        "manual) is skipped (and reported).",
    )  # fmt: skip
    max_unzipped_mb: float = Field(
        default=512.0, gt=0,
        description="A zip-based document (.docx, .pptx, .xlsx, .odt, .epub...) whose members would inflate past this "
        "many megabytes is skipped as a likely zip bomb.",
    )  # fmt: skip
    max_sheet_cells: int = Field(
        default=5_000_000, ge=1, description="A workbook with more cells than this is skipped (and reported)."
    )
    reader_memory_mb: int = Field(
        default=3_072, ge=1_024,
        description="The address space a process reading PDFs, pictures and Office files may use (OCR needs about "
        "2 GB of it); a file that needs more is skipped.",
    )  # fmt: skip
    read_timeout_s: float = Field(
        default=600.0, gt=0,
        description="The longest one file may take to read (OCR included) before it is skipped: one file holds the "
        "publication of every corpus for at most this long.",
    )
    page_timeout_s: float = Field(
        default=120.0, gt=0, description="The longest one page of a PDF or picture may take to read (OCR included)."
    )
    ocr: Literal["auto", "off"] = Field(
        default="auto", description="auto: scanned PDF pages and pictures are read by OCR; off: they are skipped."
    )
    ocr_max_pages: int = Field(
        default=150, ge=1,
        description="The most pages of one document that OCR reads or tries (a blank page counts); later ones are left "
        "out. About 3 s a page: 150 pages fit in RAGMCP_READ_TIMEOUT_S's 600 s.",
    )
    page_image_max_side: int = Field(
        default=1600, ge=64, le=10_000,
        description="The longest side, in pixels, of a picture of a cited page (page:// resources, ragmcp doc --png); "
        "a page is drawn at the scale that fits it (a picture is only ever scaled down).",
    )  # fmt: skip
    page_image_max_bytes: int = Field(
        default=2_000_000, ge=10_000, le=50_000_000,
        description="The largest PNG of a cited page, in bytes; a larger one is drawn again, smaller, until it fits.",
    )  # fmt: skip
    watch_debounce_s: float = Field(
        default=1.0, gt=0, le=60,
        description="Watch mode: how long a folder must be quiet after a change before it is re-indexed.",
    )

    @field_validator("corpora", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p.strip()]
        return value

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("embedding_url", mode="after")
    @classmethod
    def _check_embedding_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"embedding_url must be the server's OpenAI base URL, like http://localhost:11434/v1, got {value!r}"
            )
        return value.rstrip("/")

    @field_validator("rerank_url", "rerank_model", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """``RAGMCP_RERANK_URL=`` turns reranking off (a host config cannot always delete a variable)."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("rerank_url", mode="after")
    @classmethod
    def _check_rerank_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path in ("", "/"):
            raise ValueError(
                "RAGMCP_RERANK_URL must be the rerank endpoint itself, like http://localhost:8001/v1/rerank "
                f"(vLLM, llama.cpp, Infinity: /rerank) or http://localhost:8080/rerank (TEI), got {value!r}"
            )
        return value.strip()

    @field_validator("chroma_url", mode="after")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        try:
            port = parts.port
        except ValueError:  # not a number, or out of range
            port = None
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") or port is None:
            raise ValueError(f"chroma_url must look like http://HOST:PORT (the Chroma server's address), got {value!r}")
        return value.rstrip("/")

    @field_validator("database", mode="before")
    @classmethod
    def _database_choice(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError(
                "RAGMCP_DATABASE is set but empty. Set it to a SQLite file, to a folder of database sources "
                "(schema.json and one CSV per table), or to none for no SQL; or unset it (the bundled demo "
                "database is then served with the bundled demo corpora only)"
            )
        if isinstance(value, str) and value.strip().lower() == "none":
            return "none"
        return value

    @field_validator("data_dir", "corpora", "database", "tokens_file", "audit_log", mode="after")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        """``~`` in every path setting means the home folder (a host config's env is not run by a shell)."""
        if isinstance(value, list):
            return [p.expanduser() if isinstance(p, Path) else p for p in value]
        return value.expanduser() if isinstance(value, Path) else value

    @model_validator(mode="after")
    def _check_weights(self) -> Settings:
        if self.rrf_vector_weight == 0 and self.rrf_keyword_weight == 0:
            raise ValueError("rrf_vector_weight and rrf_keyword_weight cannot both be 0")
        if (self.embedding_url or self.embedding_api_key) and not self.embedding_model.startswith("openai:"):
            raise ValueError(
                "RAGMCP_EMBEDDING_URL or RAGMCP_EMBEDDING_API_KEY is set, but RAGMCP_EMBEDDING_MODEL is "
                f"{self.embedding_model!r}, which uses no server; set RAGMCP_EMBEDDING_MODEL=openai:<model> "
                "(the name the server knows the model by)"
            )
        if self.rerank_url and not self.rerank_model:
            raise ValueError(
                "RAGMCP_RERANK_URL is set but RAGMCP_RERANK_MODEL is not; set it to the rerank model's name as the "
                "server knows it, e.g. BAAI/bge-reranker-v2-m3"
            )
        return self

    def to_env(self) -> dict[str, str]:
        """``RAGMCP_*`` variables that recreate every explicitly set field in another process."""
        env = {}
        for name in sorted(self.model_fields_set):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, list):
                value = (os.pathsep if name == "corpora" else ",").join(str(item) for item in value)
            elif isinstance(value, SecretStr):
                value = value.get_secret_value()
            env[f"RAGMCP_{name.upper()}"] = env_value(value)
        return env

    def index_settings(self) -> dict[str, Any]:
        """The values of :data:`INDEX_SETTINGS`, as an index records them."""
        return {name: getattr(self, name) for name in INDEX_SETTINGS}

    def with_index_settings(self, recorded: dict[str, Any]) -> Settings:
        """These settings with an index's recorded :data:`INDEX_SETTINGS` in place of their own."""
        known = {name: value for name, value in recorded.items() if name in INDEX_SETTINGS}
        return type(self)(**{**self.model_dump(include=self.model_fields_set), **known})

    @property
    def embedding_server(self) -> EmbeddingServer:
        """Where an ``openai:<model>`` embedding spec finds its server, and how it talks to it."""
        key = self.embedding_api_key.get_secret_value() if self.embedding_api_key else None
        return EmbeddingServer(
            url=self.embedding_url, api_key=key, batch_size=self.embedding_batch_size,
            timeout_s=self.embedding_timeout_s, max_retries=self.embedding_max_retries,
        )  # fmt: skip

    @property
    def index_dir(self) -> Path:
        return self.data_dir / "index"

    @property
    def embedding_cache_path(self) -> Path:
        return self.data_dir / "embedding-cache.sqlite"

    @property
    def fingerprint_cache_path(self) -> Path:
        return self.data_dir / "fingerprint-cache.sqlite"

    @property
    def audit_path(self) -> Path:
        return self.audit_log or self.data_dir / "audit.jsonl"
