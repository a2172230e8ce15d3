"""Citation ids: the ids answers cite and tools accept, formatted and parsed here and nowhere else.

Three shapes, all ``<corpus>:<rest>``:

* a chunk id ``<corpus>:<doc_id>#<chunk>`` (``handbook:hr/leave-policy#2``), what a hit cites;
* a document ref ``<corpus>:<doc_id>``, which get_document also opens;
* a SQL id ``sql:<database>:<hash>`` (the hash: 8 hex digits of the query and its parameters).

A doc_id is the document's path in its corpus without extension, and a file name may hold any
character. In an id it is escaped as URLs are: the UTF-8 bytes of ``%``, whitespace, the
bracket syntax's ``[ ] , ;``, the chunk separator ``#``, Markdown's ``\\`` (escapes the next
character: ``\\]`` would not close a bracket), backtick (opens code), ``|`` (splits a table
cell) and ``< >`` (open HTML), and control and format characters (invisible; bidi overrides
reorder what is shown) are written ``%XX``. Letters of every script, CJK, emoji (with their
zero-width joiners), quotes, ``:`` and ``/`` stay as they are: ``Fire drill on Thursday.eml`` is
cited ``[mydocs:Fire%20drill%20on%20Thursday#0]``.

Parsing decodes, and is lenient where that is unambiguous: an unescaped id
(``mydocs:Fire drill on Thursday#0``) reads as the same id, the last ``#<digits>`` being the
chunk; a ``%`` that starts no ``%XX`` is a percent sign. The vector and keyword stores key
their records by the unescaped form (:attr:`DocumentRef.store_key`), as indexes built before
ids were escaped do.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

from mcp_server.errors import InvalidQueryError

SQL_CORPUS = "sql"
"""The prefix of SQL ids (a corpus of that name is still cited by chunk id)."""

_ESCAPED = frozenset("%[],;#\\`|<>")
_KEPT_FORMAT_CHARS = frozenset("\u200c\u200d")
"""Zero-width non-joiner and joiner: parts of emoji sequences and of Persian and Indic words."""
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"})
_PLAIN_CHARS = r"[\w./:'\"!$&()*+=?@^{}~-]"
_PLAIN = re.compile(f"{_PLAIN_CHARS}*", re.ASCII)
"""Text with nothing to escape, as most doc_ids are: looked for first, at C speed."""
_PLAIN_ID = re.compile(rf"[\w.-]+:{_PLAIN_CHARS}+(?:#(?:0|[1-9][0-9]*))?", re.ASCII)
"""An id with nothing to escape or decode: already as the server writes it."""
_CORPUS = re.compile(r"[\w.-]+")
_SQL_REST = re.compile(r"(?P<database>[^:]+):(?P<hash>[0-9a-f]{8})")

ID_FORMS = "'<corpus>:<doc_id>#<chunk>', '<corpus>:<doc_id>' or 'sql:<database>:<hash>'"


def escape(text: str) -> str:
    """``text`` with the characters an id may not hold as themselves written ``%XX`` (see the module)."""
    if _PLAIN.fullmatch(text):
        return text
    return "".join(_escaped(char) if _must_escape(char) else char for char in text)


def unescape(text: str) -> str:
    """``text`` with every ``%XX`` decoded (bytes of UTF-8; a file name's undecodable bytes come back as the
    surrogates :func:`os.fsdecode` gives them); a ``%`` that starts no ``%XX`` stays."""
    return unquote(text, errors="surrogateescape")


def _must_escape(char: str) -> bool:
    if char in _ESCAPED or char.isspace():
        return True
    return unicodedata.category(char) in _ESCAPED_CATEGORIES and char not in _KEPT_FORMAT_CHARS


def _escaped(char: str) -> str:
    try:
        data = char.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        data = char.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in data)


@dataclass(frozen=True)
class DocumentRef:
    """A document (``chunk`` None) or one of its chunks; ``doc_id`` is unescaped, ``str()`` gives the id."""

    corpus: str
    doc_id: str
    chunk: int | None = None

    def __str__(self) -> str:
        ref = f"{self.corpus}:{escape(self.doc_id)}"
        return ref if self.chunk is None else f"{ref}#{self.chunk}"

    @property
    def document(self) -> DocumentRef:
        """The document this ref names or is a chunk of."""
        return DocumentRef(self.corpus, self.doc_id)

    @property
    def store_key(self) -> str:
        """The key of a chunk's records in the vector and keyword stores: the id unescaped."""
        return f"{self.corpus}:{self.doc_id}#{self.chunk}"



@dataclass(frozen=True)
class SqlRef:
    """The result of one SQL query: ``sql:<database>:<hash>``."""

    database: str
    hash: str

    def __str__(self) -> str:
        return f"{SQL_CORPUS}:{escape(self.database)}:{self.hash}"


CitationId = DocumentRef | SqlRef


def parse_store_key(key: str) -> tuple[str, str, int]:
    """The corpus, doc_id and chunk of a store key (:attr:`DocumentRef.store_key`)."""
    corpus, _, rest = key.partition(":")
    doc_id, _, chunk = rest.rpartition("#")
    return corpus, doc_id, int(chunk)


def chunk_id(corpus: str, doc_id: str, chunk: int) -> str:
    """The citation id of one chunk, escaped."""
    return str(DocumentRef(corpus, doc_id, chunk))


def parse_doc_part(text: str) -> tuple[str, int | None]:
    """What follows ``<corpus>:`` in a document ref or chunk id: the unescaped doc_id, and the chunk when the
    text ends in ``#<digits>``."""
    body, separator, number = text.rpartition("#")
    if separator and number.isascii() and number.isdigit():
        return unescape(body), int(number)
    return unescape(text), None


def parse(text: str) -> CitationId:
    """The citation id ``text`` (escaped, or unescaped where unambiguous; see the module).

    :raises InvalidQueryError: ``text`` has none of the three shapes.
    """
    corpus, separator, rest = text.strip().partition(":")
    if not separator or not _CORPUS.fullmatch(corpus) or not rest:
        raise InvalidQueryError(f"{text!r} is not a citation id: expected {ID_FORMS}, as search hits give them")
    if corpus == SQL_CORPUS and (sql := _SQL_REST.fullmatch(rest)):
        return SqlRef(unescape(sql["database"]), sql["hash"])
    doc_id, chunk = parse_doc_part(rest)
    if not doc_id:
        raise InvalidQueryError(f"{text!r} names no document: expected {ID_FORMS}, as search hits give them")
    return DocumentRef(corpus, doc_id, chunk)


def parse_or_none(text: str) -> CitationId | None:
    """:func:`parse`, or None when ``text`` is not a citation id."""
    try:
        return parse(text)
    except InvalidQueryError:
        return None


def canonical(text: str) -> str | None:
    """The id ``text`` names as the server writes it (None when it names none); most ids are written so already."""
    if _PLAIN_ID.fullmatch(text):
        return text
    cited = parse_or_none(text)
    return None if cited is None else str(cited)
