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

    [documents]                # optional; which file suffixes are documents
    include = [".log"]         # added to the default suffixes (read as plain text when no loader knows them)
    exclude = [".json", ".py"] # removed from them

A folder without ``corpus.toml`` is still a corpus: its name is the folder name made
into a valid corpus name (``folder-`` and a hash of it for a name without ASCII letters or digits,
such as ``资料``), and its description says it is an undescribed ad-hoc folder.

Every file with a document suffix (:data:`SUPPORTED_SUFFIXES`, changed by ``[documents]``)
under the folder is a document, except hidden files and folders (names starting with '.',
counted), symlinks that lead outside the folder, loop or lead nowhere, symlinked folders
(never followed, so a link cannot loop or duplicate documents), names holding control or
text-direction characters, legacy binary Office files (``.doc``, ``.xls``, ``.ppt``) and
files over the size limit - each of those reported with its reason (:func:`scan_corpus`).
Files of other suffixes are not documents; they are counted by suffix, so a report can say
what was passed over (``.log`` ×2, ``.bak``).
The scan only lists: files are read later, once, through
:func:`mcp_server.documents.safe_open.read_inside`, which checks again where they lead.
A document's ``doc_id`` is its path inside the folder without the suffix, e.g.
``hr/leave-policy`` for ``hr/leave-policy.md``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import tomllib
import unicodedata
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from mcp_server.documents.chunking import ChunkingOptions
from mcp_server.display_text import for_display
from mcp_server.documents.loaders import DOCUMENT_SUFFIXES
from mcp_server.errors import IngestError

CONFIG_FILENAME = "corpus.toml"
SUPPORTED_SUFFIXES = DOCUMENT_SUFFIXES
"""The suffixes that are documents unless a corpus' ``[documents]`` table says otherwise."""
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

_CONFIG_KEYS = ("name", "description", "language", "chunking", "documents")
_DOCUMENTS_KEYS = ("include", "exclude")
_SUFFIX_RE = re.compile(r"\.[^./\\\s]+")
_FALLBACK_NAME = "my-corpus"
"""Control and text-direction (bidi) characters: in a file name they would forge lines and ids in renderings."""
LEGACY_OFFICE_SUFFIXES = {
    suffix: f"a legacy binary {kind} file; open it and save it as {modern} to index it"
    for suffix, kind, modern in ((".doc", "Word", ".docx"), (".xls", "Excel", ".xlsx"), (".ppt", "PowerPoint", ".pptx"))
}


@dataclass(frozen=True)
class CorpusConfig:
    """A corpus: its name, its routing description, its language and where its files are."""

    name: str
    description: str
    language: str | None
    root: Path
    chunking: ChunkingOptions
    suffixes: frozenset[str] = SUPPORTED_SUFFIXES
    """The file suffixes (lowercase, with the dot) that are documents of this corpus."""


@dataclass(frozen=True)
class SourceFile:
    """One document file of a corpus.

    ``relpath`` is the POSIX path inside the corpus folder (the citation's ``source``),
    ``doc_id`` the same without the file suffix, and ``path`` where to read it.
    """

    doc_id: str
    path: Path
    relpath: str
    size: int = 0  # bytes, modification and change times and inode, as the scan saw them
    mtime_ns: int = 0
    change_ns: int = 0  # st_ctime_ns: moves on any change, even one that restores size and mtime
    inode: int = 0


@dataclass(frozen=True)
class SkippedFile:
    """A file (or link, or folder) left out of the index: ``source`` inside the corpus, and why and what to do."""

    source: str
    reason: str


@dataclass
class CorpusScan:
    """What :func:`scan_corpus` found: documents, skipped entries and hidden entries (paths inside the corpus),
    and the files passed over for their type, counted by lowercase suffix ('' for none)."""

    files: list[SourceFile] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    other_types: Counter[str] = field(default_factory=Counter)


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
        suffixes=_suffixes(table.get("documents", {}), config_path),
    )


def slugify_name(text: str) -> str:
    """``text`` made into a corpus name: ASCII, lowercase, runs of other characters as '-'.

    Returns '' when nothing usable is left (e.g. a name written only in Chinese).
    """
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9_-]+", "-", ascii_text.lower()).strip("-_")
    return slug[:64].rstrip("-_")


def discover_documents(config: CorpusConfig) -> list[SourceFile]:
    """All document files of a corpus, sorted by their path inside it (see :func:`scan_corpus`)."""
    return scan_corpus(config).files


def scan_corpus(config: CorpusConfig, max_file_bytes: int | None = None, data_dir: Path | None = None) -> CorpusScan:
    """The document files of a corpus, sorted by path, and the entries skipped with their reasons.

    ``data_dir`` (the index's own data dir, when it sits inside the corpus folder) is not
    looked into: nothing in it is a document, or counted.

    Skipped: symlinks that leave the folder, loop or lead nowhere; symlinked folders;
    files over ``max_file_bytes``; a second file mapping to a doc_id already taken
    (``a.md`` and ``a.txt``). Hidden entries are counted, not looked into; so are files of
    other types, by suffix.

    :raises IngestError: the corpus folder itself cannot be listed.
    """
    root = config.root.resolve()
    scan = CorpusScan()
    own = data_dir.resolve() if data_dir is not None else None
    found = sorted(_walk(root, "", root, config.suffixes, scan, own), key=lambda source: source.relpath)
    seen: dict[str, SourceFile] = {}
    for source in found:
        first = seen.setdefault(source.doc_id, source)
        if first is not source:
            scan.skipped.append(SkippedFile(source.relpath, f"same doc_id as {first.relpath}; rename one of them"))
        elif max_file_bytes is not None and source.size > max_file_bytes:
            scan.skipped.append(
                SkippedFile(
                    source.relpath,
                    f"{source.size / 1_048_576:.1f} MB, over the size limit of {max_file_bytes / 1_048_576:g} MB; "
                    "raise RAGMCP_MAX_FILE_MB or split the file",
                )
            )
        else:
            scan.files.append(source)
    scan.skipped.sort(key=lambda skipped: skipped.source)
    return scan


def _resolve_folder(root: Path) -> Path:
    if not root.exists():
        raise IngestError(f"Corpus folder {root} does not exist; pass the path of a folder of documents.")
    if not root.is_dir():
        raise IngestError(f"Corpus path {root} is not a folder; pass the folder that holds the documents.")
    return root.resolve()


def _adhoc_config(root: Path) -> CorpusConfig:
    """A folder without ``corpus.toml``: named after the folder, or, when its name has no ASCII letters or
    digits (``资料``), ``folder-`` and 8 hex digits of its name's SHA-256, the same for the same name."""
    name = slugify_name(root.name) or f"folder-{hashlib.sha256(root.name.encode()).hexdigest()[:8]}"
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


def _suffixes(table: object, where: Path) -> frozenset[str]:
    """The default document suffixes with ``[documents]``' ``include`` added and ``exclude`` removed."""
    if not isinstance(table, dict):
        raise IngestError(f"{where}: 'documents' must be a table ([documents]), got {table!r}.")
    _reject_unknown_keys(table, _DOCUMENTS_KEYS, where)
    lists = {key: table.get(key, []) for key in _DOCUMENTS_KEYS}
    for key, value in lists.items():
        if not isinstance(value, list) or not all(isinstance(s, str) and _SUFFIX_RE.fullmatch(s) for s in value):
            raise IngestError(
                f'{where}: [documents] {key} must be a list of file suffixes with their dot, e.g. {key} = [".log"], '
                f"got {value!r}."
            )
    include = {suffix.lower() for suffix in lists["include"]}
    exclude = {suffix.lower() for suffix in lists["exclude"]}
    return frozenset((SUPPORTED_SUFFIXES | include) - exclude)


def _walk(
    directory: Path, prefix: str, root: Path, suffixes: frozenset[str], scan: CorpusScan, own: Path | None
) -> Iterator[SourceFile]:
    """Document files under ``directory`` (``prefix``: its path inside the corpus, ending in '/' unless
    it is the root), not looking into the folder ``own``; hidden entries, links that are not followed
    and files of other types go to ``scan``."""
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
    except OSError as error:
        if directory == root:
            raise IngestError(f"Cannot list the corpus folder {directory}: {error}.") from error
        scan.skipped.append(SkippedFile(prefix, f"cannot list the folder: {error.strerror}"))
        return
    for entry in entries:
        relpath = prefix + entry.name
        if entry.name.startswith("."):
            scan.hidden.append(relpath)
        elif for_display(entry.name) != entry.name:
            shown = for_display(relpath)
            scan.skipped.append(SkippedFile(shown, "its name holds control or text-direction characters; rename it"))
        elif _suffix(entry.name) in LEGACY_OFFICE_SUFFIXES and entry.is_file(follow_symlinks=False):
            scan.skipped.append(SkippedFile(relpath, LEGACY_OFFICE_SUFFIXES[_suffix(entry.name)]))
        elif entry.is_symlink():
            yield from _follow_link(Path(entry.path), relpath, root, suffixes, scan)
        elif entry.is_dir():
            if Path(entry.path) != own:
                yield from _walk(Path(entry.path), relpath + "/", root, suffixes, scan, own)
        elif _is_document(entry.name, relpath, suffixes) and entry.is_file():
            yield _source_file(Path(entry.path), relpath, entry)
        elif relpath != CONFIG_FILENAME and entry.is_file():
            scan.other_types[_suffix(entry.name)] += 1


def _follow_link(link: Path, relpath: str, root: Path, suffixes: frozenset[str], scan: CorpusScan) -> Iterator[SourceFile]:
    """A symlinked file inside the corpus folder is a document; other links are skipped with a reason."""
    try:
        target = link.resolve(strict=True)
    except RuntimeError:  # Python < 3.13 reports a loop this way
        scan.skipped.append(SkippedFile(relpath, "symlink loop; remove the link"))
        return
    except OSError as error:
        reason = "symlink loop; remove the link" if error.errno == errno.ELOOP else "broken symlink; remove the link"
        scan.skipped.append(SkippedFile(relpath, reason))
        return
    if target.is_dir():
        scan.skipped.append(
            SkippedFile(relpath, "symlinked folder, not followed (links could loop or index files twice); "
                        "configure its target as a corpus of its own")
        )  # fmt: skip
    elif _suffix(link.name) not in suffixes:
        scan.other_types[_suffix(link.name)] += 1
    elif not target.is_relative_to(root):
        scan.skipped.append(
            # The target's path stays out of the reason: reasons are listed to every client of the corpus.
            SkippedFile(relpath, "symlink to a file outside the corpus folder; copy the file into the folder")
        )
    elif target.is_file():
        yield _source_file(link, relpath)


def _suffix(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else ""


def _is_document(name: str, relpath: str, suffixes: frozenset[str]) -> bool:
    """Whether a file of this name (at ``relpath`` in the corpus) is a document by its suffix."""
    if relpath == CONFIG_FILENAME:
        return False
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in suffixes


def _source_file(path: Path, relpath: str, entry: os.DirEntry[str] | None = None) -> SourceFile:
    """The document at ``path`` (``relpath`` inside the corpus; ``entry``: its directory entry, if listed),
    with its size and modification time (zero when it cannot be read: the loader then says why)."""
    try:
        info = entry.stat() if entry is not None else path.stat()
        size, mtime_ns, change_ns, inode = info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino
    except OSError:
        size = mtime_ns = change_ns = inode = 0
    return SourceFile(
        doc_id=relpath[: -len(path.suffix)], path=path, relpath=relpath, size=size, mtime_ns=mtime_ns,
        change_ns=change_ns, inode=inode,
    )  # fmt: skip
