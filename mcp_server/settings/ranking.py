"""How searches rank: hybrid fusion (``RAGMCP_*``), BM25 (``RAGMCP_BM25_*``) and reranking (``RAGMCP_RERANK_*``).

The fusion and BM25 parameters were chosen by nDCG@10 on the SciFact *train* queries
(bench/retrieval/tune_scifact.py; the grid and scores are in bench/retrieval/tuning-scifact.json).
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from mcp_server.settings.group import SettingsGroup, group_config

IdfFormula = Literal["lucene", "whoosh"]
"""``lucene``: ``log(1 + (N - df + 0.5) / (df + 0.5))``; ``whoosh``: ``log(N / (df + 1)) + 1``."""


class RetrievalSettings(SettingsGroup):
    """How hybrid search merges the vector and keyword rankings (:mod:`mcp_server.retrieval.fusion`), and how
    much memory keyword search keeps its decoded posting lists in."""

    model_config = group_config("RAGMCP_")

    candidate_depth: int = Field(default=100, ge=1, description="Hits each retriever hands to hybrid fusion.")
    hybrid_fusion: Literal["convex", "rrf"] = Field(
        default="convex",
        description="convex: weighted sum of cosine similarity and IDF-normalised BM25 (mcp_server.retrieval.fusion); "
        "rrf: weighted reciprocal-rank fusion.",
    )
    convex_keyword_weight: float = Field(
        default=0.3, ge=0, le=1, description="Keyword share of the convex fusion score; the vector share is 1 minus it."
    )
    # Chosen on half of CMRC 2018 with the English model (bench/retrieval/tune_cmrc2018.py --model minilm-int8).
    # Hits from corpora of the multilingual model keep convex_keyword_weight (mcp_server.retrieval.fusion).
    convex_keyword_weight_cjk: float = Field(
        default=0.7, ge=0, le=1,
        description="Keyword share for queries in Chinese, Japanese or Korean script (mixed queries: in between), "
        "for hits from corpora whose embedding model does not read those languages (all-MiniLM-L6-v2, and models on "
        "a server); hits from multilingual-e5-small corpora keep RAGMCP_CONVEX_KEYWORD_WEIGHT.",
    )
    rrf_k: float = Field(default=2.0, gt=0)
    rrf_vector_weight: float = Field(default=1.0, ge=0)
    rrf_keyword_weight: float = Field(default=1.0, ge=0)
    keyword_cache_mb: int = Field(
        default=512, ge=0,
        description="Memory for decoded keyword posting lists kept between searches (per index served); the common "
        "words that recur in query after query are then not decoded again. 0 keeps none.",
    )

    @model_validator(mode="after")
    def _check_weights(self) -> RetrievalSettings:
        if self.rrf_vector_weight == 0 and self.rrf_keyword_weight == 0:
            raise ValueError("rrf_vector_weight and rrf_keyword_weight cannot both be 0")
        return self


class Bm25Settings(SettingsGroup):
    """The keyword index's BM25 scoring (:mod:`mcp_server.stores.keyword`)."""

    model_config = group_config("RAGMCP_BM25_")

    b: float = Field(default=0.3, ge=0, le=1)
    k1: float = Field(default=1.2, ge=0)
    idf: IdfFormula = Field(default="lucene", description="BM25 IDF: lucene (as bm25s, Anserini) or whoosh.")
    # Chosen on SciFact train (bench/retrieval/tune_common_terms.py): the most pruning within 0.002 nDCG@10.
    common_term_share: float = Field(
        default=0.03, gt=0, le=1,
        description="A query word found in more than this share of the searched chunks (and in more than "
        "bm25_common_term_min_chunks) only adds to the score of chunks holding a rarer query word; 1 turns it off.",
    )
    common_term_min_chunks: int = Field(
        default=1000, ge=0,
        description="A query word in no more chunks than this is never treated as common, whatever the share: short "
        "posting lists cost little, so pruning starts only where the index is large (about 33,000 chunks at the "
        "default share).",
    )


class RerankSettings(SettingsGroup):
    """A rerank server that reorders hybrid search's fused candidates (:mod:`mcp_server.retrieval.rerank`)."""

    model_config = group_config("RAGMCP_RERANK_")

    url: str | None = Field(
        default=None,
        description="A rerank server's endpoint, e.g. http://localhost:8001/v1/rerank (vLLM, llama.cpp, Infinity, "
        "Jina/Cohere gateways) or http://localhost:8080/rerank (TEI); hybrid search reranks its fused candidates "
        "with it (mcp_server.retrieval.rerank). Unset or empty: no reranking.",
    )
    model: str | None = Field(
        default=None, description="The rerank model's name as the server knows it (sent in each request)."
    )
    api_key: SecretStr | None = Field(default=None, description="Bearer token for the rerank server; unset: none.")
    timeout_s: float = Field(
        default=5.0, gt=0, le=300,
        description="Longest one rerank call may take in all: connecting, sending, and reading every byte of the "
        "answer (a server sending it a byte at a time gains nothing); past it the search returns the fused order.",
    )  # fmt: skip
    candidates: int = Field(
        default=50, ge=1, le=1000,
        description="How many of the best fused candidates are sent to the rerank server (at least top_k).",
    )  # fmt: skip

    @field_validator("url", "model", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """``RAGMCP_RERANK_URL=`` turns reranking off (a host config cannot always delete a variable)."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("url", mode="after")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path in ("", "/"):
            raise ValueError(
                "RAGMCP_RERANK_URL must be the rerank endpoint itself, like http://localhost:8001/v1/rerank "
                f"(vLLM, llama.cpp, Infinity: /rerank) or http://localhost:8080/rerank (TEI), got {value!r}"
            )
        return value.strip()

    @model_validator(mode="after")
    def _check_model(self) -> RerankSettings:
        if self.url and not self.model:
            raise ValueError(
                "RAGMCP_RERANK_URL is set but RAGMCP_RERANK_MODEL is not; set it to the rerank model's name as the "
                "server knows it, e.g. BAAI/bge-reranker-v2-m3"
            )
        return self
