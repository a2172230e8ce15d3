"""Settings: one object, read from ``RAGMCP_*`` environment variables and CLI flags, validated once.

Where things live (the top-level fields):

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

The rest comes in groups, each a small pydantic-settings class that reads its own variables
(:class:`~mcp_server.settings.group.SettingsGroup`); a variable's name says its group's prefix:

- ``embedding`` (``RAGMCP_EMBEDDING_*``, :mod:`.embedding`): the model and its server;
- ``retrieval`` (fusion: ``RAGMCP_CANDIDATE_DEPTH``, ``RAGMCP_RRF_*``, ...), ``bm25`` (``RAGMCP_BM25_*``)
  and ``rerank`` (``RAGMCP_RERANK_*``), in :mod:`.ranking`;
- ``calls`` (``RAGMCP_MAX_TOP_K``, ``RAGMCP_CALL_TIMEOUT_S``, ...), ``sql`` (``RAGMCP_SQL_*``), ``http``
  (``RAGMCP_HTTP_*``, the access lists and the tokens file) and ``audit`` (``RAGMCP_AUDIT_*``), in :mod:`.serving`;
- ``reading`` (``RAGMCP_MAX_FILE_MB``, ``RAGMCP_OCR``, ...: what an index records) and ``watch``
  (``RAGMCP_WATCH_*``), in :mod:`.reading`.

So ``RAGMCP_RERANK_TIMEOUT_S`` is ``settings.rerank.timeout_s``. A setting's *name* is its variable's
without ``RAGMCP_``, in lower case (``rerank_timeout_s``): the CLI, ``--env`` and the recorded
settings speak in names (:meth:`Settings.from_names`, :meth:`Settings.explicit`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from mcp_server.settings.embedding import EmbeddingSettings
from mcp_server.settings.group import PREFIX, SettingsGroup, expand_home
from mcp_server.settings.ranking import Bm25Settings, RerankSettings, RetrievalSettings
from mcp_server.settings.reading import ReadingSettings, WatchSettings
from mcp_server.settings.serving import AuditSettings, CallSettings, HttpSettings, SqlSettings

APP_NAME = "agentic-rag-mcp"

# The settings that decide what an index holds from the same files (the reading group): the index records
# them (:meth:`Settings.index_settings`) and every later ingestion of it uses the recorded values until
# ``ragmcp ingest --rebuild`` records new ones. The embedding model is recorded and checked on its own (a
# model change needs a rebuild), and chunking is set per corpus in its corpus.toml.
INDEX_SETTINGS = tuple(ReadingSettings.model_fields)


def env_value(value: Any) -> str:
    """A setting's value as a user would type it in an environment variable (``50``, not ``50.0``)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def bundled_corpora_dir() -> Path:
    """The demo corpora: inside the installed package (wheel) or at the repository root (checkout)."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "corpora"
    return packaged if packaged.is_dir() else package.parent / "corpora"


def bundled_corpus_dirs() -> list[Path]:
    root = bundled_corpora_dir()
    return sorted(p for p in root.iterdir() if (p / "corpus.toml").is_file()) if root.is_dir() else []


class Settings(BaseSettings):
    """Every setting: where things live, and the groups (each reads its own ``RAGMCP_*`` variables)."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="forbid", validate_default=True)

    data_dir: Path = Field(default_factory=lambda: Path(platformdirs.user_data_dir(APP_NAME)))
    corpora: Annotated[list[Path], NoDecode] = Field(default_factory=bundled_corpus_dirs)
    database: Literal["none"] | Path | None = None
    chroma_url: str | None = Field(
        default=None, description="Chroma server for the vectors (http(s)://host:port); unset: embedded store."
    )

    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    bm25: Bm25Settings = Field(default_factory=Bm25Settings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    calls: CallSettings = Field(default_factory=CallSettings)
    sql: SqlSettings = Field(default_factory=SqlSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    audit: AuditSettings = Field(default_factory=AuditSettings)
    reading: ReadingSettings = Field(default_factory=ReadingSettings)
    watch: WatchSettings = Field(default_factory=WatchSettings)

    @classmethod
    def groups(cls) -> dict[str, type[SettingsGroup]]:
        """The group fields and their classes, e.g. ``{"rerank": RerankSettings, ...}``."""
        return {
            name: info.annotation
            for name, info in cls.model_fields.items()
            if isinstance(info.annotation, type) and issubclass(info.annotation, SettingsGroup)
        }

    @classmethod
    def names(cls) -> dict[str, tuple[str | None, str]]:
        """Every setting's name (its variable's without ``RAGMCP_``, lower case) -> (its group or None, its field)."""
        top = {name: (None, name) for name in cls.model_fields if name not in cls.groups()}
        return top | {
            env.removeprefix(PREFIX).lower(): (group, field)
            for group, kind in cls.groups().items()
            for field, env in kind.env_names().items()
        }

    @classmethod
    def env_names(cls) -> list[str]:
        """Every ``RAGMCP_*`` variable a setting is read from."""
        return sorted(f"{PREFIX}{name.upper()}" for name in cls.names())

    @classmethod
    def from_names(cls, **values: Any) -> Settings:
        """Settings from values given by setting name (``rerank_timeout_s=2``); the others from the environment."""
        names = cls.names()
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise TypeError(f"no such setting: {', '.join(unknown)}")
        top: dict[str, Any] = {}
        grouped: dict[str, dict[str, Any]] = {}
        for name, value in values.items():
            group, field = names[name]
            if group is None:
                top[field] = value
            else:
                grouped.setdefault(group, {})[field] = value
        built: dict[str, Any] = {group: cls.groups()[group](**fields) for group, fields in grouped.items()}
        return cls(**top, **built)

    def value(self, name: str) -> Any:
        """A setting's value by its name (``rerank_timeout_s``)."""
        group, field = type(self).names()[name]
        return getattr(self if group is None else getattr(self, group), field)

    def updated(self, **values: Any) -> Settings:
        """These settings with ``values`` (by setting name) in place, validated again."""
        return type(self).from_names(**{**self.explicit(), **values})

    def explicit(self) -> dict[str, Any]:
        """The explicitly set settings (by flag, argument or environment), by setting name."""
        names = {(group, field): name for name, (group, field) in type(self).names().items()}
        chosen = {field: getattr(self, field) for field in self.model_fields_set if field not in self.groups()}
        for group in self.groups():
            part: SettingsGroup = getattr(self, group)
            chosen |= {names[(group, field)]: getattr(part, field) for field in part.model_fields_set}
        return chosen

    @field_validator(
        "embedding", "retrieval", "bm25", "rerank", "calls", "sql", "http", "audit", "reading", "watch", mode="before"
    )
    @classmethod
    def _group_from_dict(cls, value: Any, info: ValidationInfo) -> Any:
        """A group given as a dict is built as its class, so its other settings still come from the environment."""
        if isinstance(value, dict) and info.field_name is not None:
            return cls.groups()[info.field_name](**value)
        return value

    @field_validator("corpora", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p.strip()]
        return value

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

    @field_validator("data_dir", "corpora", "database", mode="after")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return expand_home(value)

    def to_env(self) -> dict[str, str]:
        """``RAGMCP_*`` variables that recreate every explicitly set setting in another process."""
        env = {}
        for name, value in sorted(self.explicit().items()):
            if value is None:
                continue
            if isinstance(value, list):
                value = (os.pathsep if name == "corpora" else ",").join(str(item) for item in value)
            elif isinstance(value, SecretStr):
                value = value.get_secret_value()
            env[f"{PREFIX}{name.upper()}"] = env_value(value)
        return env

    def index_settings(self) -> dict[str, Any]:
        """The values of :data:`INDEX_SETTINGS`, as an index records them."""
        return {name: getattr(self.reading, name) for name in INDEX_SETTINGS}

    def with_index_settings(self, recorded: dict[str, Any]) -> Settings:
        """These settings with an index's recorded :data:`INDEX_SETTINGS` in place of their own."""
        known = {name: value for name, value in recorded.items() if name in INDEX_SETTINGS}
        return self.updated(**known)

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
        return self.audit.log or self.data_dir / "audit.jsonl"
