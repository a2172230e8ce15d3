"""Corpus configuration (``corpus.toml``) and discovery of the documents in a corpus folder.

A corpus is a folder of documents. Its optional ``corpus.toml`` names it and describes,
for the model that routes questions, what it holds and when to use it::

    name = "handbook"
    description = "Wonderlab's internal HR and IT handbook. Use it for ...; not for ..."
    language = "en"            # optional

    [chunking]                 # optional; sizes in estimated tokens
    target_tokens = 220
    max_tokens = 300
    overlap_tokens = 40

A folder without ``corpus.toml`` is still a corpus: its name is the folder name made
into a valid corpus name, and its description says it is an undescribed ad-hoc folder.

Every file with a supported suffix under the folder is a document, except hidden files
and folders (names starting with '.'), symlinks that lead outside the folder, and
symlinked folders (never followed, so a link cannot loop or duplicate documents).
A document's ``doc_id`` is its path inside the folder without the suffix, e.g.
``hr/leave-policy`` for ``hr/leave-policy.md``.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from mcp_server.errors import IngestError

CONFIG_FILENAME = "corpus.toml"
SUPPORTED_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".html", ".htm", ".pdf"})
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

_CONFIG_KEYS = ("name", "description", "language", "chunking")
_FALLBACK_NAME = "my-corpus"


@dataclass(frozen=True)
class ChunkingOptions:
    """How documents are cut into chunks; all sizes in estimated tokens.

    ``target_tokens`` is the size a chunk aims at, ``max_tokens`` the size no chunk
    exceeds, and ``overlap_tokens`` roughly how much text consecutive chunks of one
    section share. Token counts come from ``chunking.estimate_tokens``.
    """

    target_tokens: int = 220
    max_tokens: int = 300
    overlap_tokens: int = 40

    def __post_init__(self) -> None:
        for option in fields(self):
            value = getattr(self, option.name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise IngestError(f"Chunking option {option.name} must be a positive integer, got {value!r}.")
        if not self.overlap_tokens < self.target_tokens <= self.max_tokens:
            raise IngestError(
                "Chunking options must satisfy overlap_tokens < target_tokens <= max_tokens, got "
                f"overlap_tokens={self.overlap_tokens}, target_tokens={self.target_tokens}, "
                f"max_tokens={self.max_tokens}."
            )


@dataclass(frozen=True)
class CorpusConfig:
    """A corpus: its name, its routing description, its language and where its files are."""

    name: str
    description: str
    language: str | None
    root: Path
    chunking: ChunkingOptions


@dataclass(frozen=True)
class SourceFile:
    """One document file of a corpus.

    ``relpath`` is the POSIX path inside the corpus folder (the citation's ``source``),
    ``doc_id`` the same without the file suffix, and ``path`` where to read it.
    """

    doc_id: str
    path: Path
    relpath: str


def load_corpus_config(root: Path) -> CorpusConfig:
    """Read ``root/corpus.toml``, or describe ``root`` as an ad-hoc corpus when it has none.

    :raises IngestError: ``root`` is not a folder, or ``corpus.toml`` is malformed,
        misses ``name`` or ``description``, has unknown keys or invalid values.
    """
    root = _resolve_folder(root)
    config_path = root / CONFIG_FILENAME
    if not config_path.is_file():
        return _adhoc_config(root)
    table = _read_toml(config_path)
    _reject_unknown_keys(table, _CONFIG_KEYS, config_path)
    name = _required_text(table, "name", config_path)
    _check_name(name, root, config_path)
    chunking = table.get("chunking", {})
    if not isinstance(chunking, dict):
        raise IngestError(f"{config_path}: 'chunking' must be a table ([chunking]), got {chunking!r}.")
    return CorpusConfig(
        name=name,
        description=_required_text(table, "description", config_path),
        language=_optional_text(table, "language", config_path),
        root=root,
        chunking=_chunking_options(chunking, config_path),
    )


def slugify_name(text: str) -> str:
    """``text`` made into a corpus name: ASCII, lowercase, runs of other characters as '-'.

    Returns '' when nothing usable is left (e.g. a name written only in Chinese).
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9_-]+", "-", ascii_text.lower()).strip("-_")
    return slug[:64].rstrip("-_")


def discover_documents(config: CorpusConfig) -> list[SourceFile]:
    """All document files of a corpus, sorted by their path inside it.

    :raises IngestError: a folder cannot be listed, or two files map to the same doc_id
        (e.g. ``a.md`` and ``a.txt``).
    """
    root = config.root.resolve()
    documents = sorted((_source_file(root, path) for path in _walk(root, root)), key=lambda doc: doc.relpath)
    _reject_duplicate_doc_ids(documents)
    return documents


def _resolve_folder(root: Path) -> Path:
    if not root.exists():
        raise IngestError(f"Corpus folder {root} does not exist; pass the path of a folder of documents.")
    if not root.is_dir():
        raise IngestError(f"Corpus path {root} is not a folder; pass the folder that holds the documents.")
    return root.resolve()


def _adhoc_config(root: Path) -> CorpusConfig:
    name = slugify_name(root.name)
    if not NAME_PATTERN.match(name):
        raise IngestError(
            f"Cannot derive a corpus name from the folder name {root.name!r}; add {root / CONFIG_FILENAME} "
            f'with name = "{_FALLBACK_NAME}" and a description.'
        )
    description = (
        f"Documents from the local folder '{root.name}', indexed ad hoc without a {CONFIG_FILENAME}, so "
        "what they cover is not described. Search it when the question may concern those documents "
        "and no better-described corpus fits."
    )
    return CorpusConfig(name=name, description=description, language=None, root=root, chunking=ChunkingOptions())


def _read_toml(config_path: Path) -> dict[str, object]:
    try:
        with config_path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise IngestError(f"{config_path} is not valid TOML: {error}.") from error
    except OSError as error:
        raise IngestError(f"Cannot read {config_path}: {error}.") from error


def _reject_unknown_keys(table: Mapping[str, object], allowed: tuple[str, ...], where: Path) -> None:
    for key in table:
        if key not in allowed:
            raise IngestError(f"{where}: unknown key {key!r}; the keys allowed here are {', '.join(allowed)}.")


def _required_text(table: Mapping[str, object], key: str, where: Path) -> str:
    value = _optional_text(table, key, where)
    if value is None:
        raise IngestError(f'{where}: {key!r} is missing; add {key} = "..." to it.')
    return value


def _optional_text(table: Mapping[str, object], key: str, where: Path) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise IngestError(f"{where}: {key!r} must be a non-empty string, got {value!r}.")
    return value.strip()


def _check_name(name: str, root: Path, where: Path) -> None:
    if not NAME_PATTERN.match(name):
        suggestion = slugify_name(name) or slugify_name(root.name) or _FALLBACK_NAME
        raise IngestError(
            f"{where}: corpus name {name!r} is not valid; use 1-64 lowercase letters, digits, '-' or '_', "
            f'starting with a letter or digit, e.g. name = "{suggestion}".'
        )


def _chunking_options(table: Mapping[str, object], where: Path) -> ChunkingOptions:
    allowed = tuple(option.name for option in fields(ChunkingOptions))
    _reject_unknown_keys(table, allowed, where)
    try:
        return ChunkingOptions(**table)  # type: ignore[arg-type]  # values are checked in __post_init__
    except IngestError as error:
        raise IngestError(f"{where}: {error}") from error


def _walk(directory: Path, root: Path) -> Iterator[Path]:
    """Document files under ``directory``: no hidden entries, no links leaving ``root``."""
    try:
        entries = sorted(directory.iterdir())
    except OSError as error:
        raise IngestError(f"Cannot list the corpus folder {directory}: {error}.") from error
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            if _is_document(entry) and _is_file_inside(entry, root):
                yield entry
        elif entry.is_dir():
            yield from _walk(entry, root)
        elif _is_document(entry):
            yield entry


def _is_document(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_SUFFIXES and path.is_file()


def _is_file_inside(link: Path, root: Path) -> bool:
    return link.resolve().is_relative_to(root)


def _source_file(root: Path, path: Path) -> SourceFile:
    relpath = path.relative_to(root).as_posix()
    return SourceFile(doc_id=relpath[: -len(path.suffix)], path=path, relpath=relpath)


def _reject_duplicate_doc_ids(documents: list[SourceFile]) -> None:
    seen: dict[str, SourceFile] = {}
    for document in documents:
        first = seen.setdefault(document.doc_id, document)
        if first is not document:
            raise IngestError(
                f"Documents {first.relpath!r} and {document.relpath!r} both map to doc_id "
                f"{document.doc_id!r}; rename or remove one of them."
            )
