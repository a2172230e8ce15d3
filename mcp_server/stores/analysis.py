"""Text analysis for the keyword (Whoosh BM25F) index: mixed English and Chinese text.

One tokenizer reads the text in a single pass and cuts it into runs:

* **Word runs** (letters and digits outside CJK scripts) become lowercase word tokens.
  Runs joined by ``_ - . /`` (``ERR_CONN_RESET``, ``docker-compose``, ``v1.2.3``,
  ``src/app.py``) yield each part as a token *and* the whole joined string as an extra
  token at the position of the first part. So ``conn`` finds ``ERR_CONN_RESET``, the
  exact string ``err_conn_reset`` scores highest for a user who types it, and the phrase
  ``"docker-compose up"`` matches part by part. English stop words are removed (the
  remaining tokens are renumbered, as in Whoosh's own ``StopFilter``) and pure-ASCII
  alphabetic words are Porter-stemmed; codes with digits (``E1042``, ``http2``) and
  joined strings are never stemmed. Non-ASCII words are NFKC-normalised first, so
  full-width ``ＡＢＣ１２３`` (common in Chinese text) indexes as ``abc123``.
* **Han runs** are segmented by the chosen CJK strategy (see :data:`CjkStrategy`).
* **Kana, bopomofo and Hangul runs** always become overlapping character bigrams.

Which characters are Han and which kana or Hangul, and the stemmer, are the analyzer's
(:mod:`mcp_server.analyzer`): the citation check and the agent read text by the same ranges and
stems.

Every token has a *main* or *extra* role (the ``extra`` token attribute). Main tokens
take consecutive positions and spell the text once, so they form phrases; extra tokens
(joined strings, dictionary sub-words, index-only single characters) share the
position of the main token they belong to. :func:`build_keyword_query` builds phrases
from main tokens only.

jieba is imported only when a Han run is first segmented with a jieba strategy, and
its logger is set to WARNING, so its dictionary load prints nothing (stdout carries
the MCP stdio protocol). The analyzer holds no functions or lambdas, so Whoosh can
pickle it into an index schema; an index built with it needs this module importable
under the same name to be reopened.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

from whoosh.analysis import Filter, LowercaseFilter, Token, Tokenizer
from whoosh.analysis.filters import STOP_WORDS
from whoosh.query import And, AndMaybe, Or, Phrase, Query, Term

from mcp_server.analyzer.scripts import HAN, KANA_HANGUL
from mcp_server.analyzer.stems import stem
from mcp_server.errors import InvalidQueryError

if TYPE_CHECKING:
    from jieba import Tokenizer as JiebaTokenizer
    from whoosh.analysis import Analyzer

__all__ = [
    "DEFAULT_CJK",
    "CjkStrategy",
    "EmptyQueryError",
    "MixedTokenizer",
    "analyze_query_terms",
    "build_analyzer",
    "build_keyword_query",
    "plain_query_terms",
]

CjkStrategy = Literal["bigram", "jieba", "jieba_search", "unigram"]
"""How Han runs are segmented; ``bench/tokenization`` measures each one.

* ``bigram``: overlapping character bigrams (``北京大学`` → 北京 京大 大学); a 1-character
  run is one token. When indexing, each character is also stored as an extra token,
  so a 1-character query (``猫``) still finds ``小猫咪``.
* ``jieba``: ``jieba.cut`` words at index and query time (``北京大学`` → 北京大学).
* ``jieba_search``: ``jieba.cut_for_search``: ``jieba`` words plus their dictionary
  sub-words as extra tokens, at index and query time (→ 北京大学 北京 大学).
* ``unigram``: one token per character; a recall floor for comparison.
"""

DEFAULT_CJK: CjkStrategy = "bigram"
"""The measured winner on CMRC 2018 (see ``bench/tokenization/README.md``)."""

_WORD_CHAR = rf"[^\W_{HAN}{KANA_HANGUL}]"
_JOINERS = "_\\-./"
_RUN_RE = re.compile(
    rf"(?P<word>{_WORD_CHAR}+(?:[{_JOINERS}]+{_WORD_CHAR}+)*)"
    rf"|(?P<han>[{HAN}]+)"
    rf"|(?P<kana_hangul>[{KANA_HANGUL}]+)"
)
_WORD_PART_RE = re.compile(rf"{_WORD_CHAR}+")
_QUOTED_RE = re.compile(r'"(?P<ascii>[^"]*)"|“(?P<curly>[^“”"]*)”')
_STRAY_QUOTES_RE = re.compile(r'["“”]')

# Whoosh's English stop words plus the leftovers of split contractions ("don't" → "t").
_STOP_WORDS = STOP_WORDS | {"s", "t", "d", "ll", "m", "re", "ve"}


class EmptyQueryError(InvalidQueryError, ValueError):
    """The query has nothing left to search for once it is analyzed."""


class _Piece(NamedTuple):
    """A token before it becomes a Whoosh ``Token``: text, offsets into the analyzed text."""

    text: str
    start: int
    end: int
    extra: bool


class MixedTokenizer(Tokenizer):  # type: ignore[misc]  # whoosh ships no type hints
    """Whoosh tokenizer for mixed Latin/CJK text; see the module docstring.

    Honours the usual Whoosh tokenizer arguments (``positions``, ``chars``,
    ``start_pos``, ``start_char``, ``keeporiginal``, ``removestops``, ``tokenize``,
    ``mode``). With ``mode="query"`` the index-only extra tokens are left out.
    """

    def __init__(self, cjk: CjkStrategy = DEFAULT_CJK) -> None:
        if cjk not in get_args(CjkStrategy):
            raise ValueError(f"Unknown CJK strategy {cjk!r}; use one of {get_args(CjkStrategy)}.")
        self.cjk: CjkStrategy = cjk

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MixedTokenizer) and other.cjk == self.cjk

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cjk={self.cjk!r})"

    def __call__(
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs: Any,
    ) -> Iterator[Token]:
        """Yield one reused ``Token`` per piece, as Whoosh tokenizers do."""
        if tokenize:
            pieces = _segment(value, self.cjk, index=mode != "query")
        else:
            pieces = iter([_Piece(value, 0, len(value), extra=False)])
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos - 1
        for piece in pieces:
            if not piece.extra:
                pos += 1
            token.text = piece.text
            token.extra = piece.extra
            token.boost = 1.0
            token.stopped = False
            if keeporiginal:
                token.original = piece.text
            if positions:
                token.pos = pos
            if chars:
                token.startchar = start_char + piece.start
                token.endchar = start_char + piece.end
            yield token


class _StopFilter(Filter):  # type: ignore[misc]
    """Drop English stop words and renumber positions so main tokens stay consecutive.

    Unlike Whoosh's ``StopFilter`` it keeps extra tokens on the position of their main
    token, and it keeps 1-character tokens (CJK characters, digits, ``C``).
    """

    def __call__(self, tokens: Iterable[Token]) -> Iterator[Token]:
        last_seen: int | None = None
        renumbered: int | None = None
        for token in tokens:
            if token.text in _STOP_WORDS:
                if not token.removestops:
                    token.stopped = True
                    yield token
                continue
            if token.positions:
                if token.pos != last_seen:
                    last_seen = token.pos
                    renumbered = token.pos if renumbered is None else renumbered + 1
                token.pos = renumbered
            yield token


class _PorterFilter(Filter):  # type: ignore[misc]
    """Stem words with the analyzer's stemmer (Porter2 for pure ASCII alphabetic words; codes, joined strings
    and CJK stay as they are)."""

    is_morph = True

    def __call__(self, tokens: Iterable[Token]) -> Iterator[Token]:
        for token in tokens:
            if not token.stopped:
                token.text = stem(token.text)
            yield token


def build_analyzer(cjk: CjkStrategy = DEFAULT_CJK) -> Analyzer:
    """Return the analyzer for keyword-index text fields and keyword queries.

    Use the same strategy for indexing and querying one index; the analyzer is stored in
    the schema, so read it back from ``index.schema[field].analyzer`` when querying.
    """
    return MixedTokenizer(cjk) | LowercaseFilter() | _StopFilter() | _PorterFilter()


def analyze_query_terms(text: str, analyzer: Analyzer) -> list[str]:
    """Return the distinct terms ``analyzer`` makes of ``text`` in query mode, in order.

    Extra tokens are included, so ``ERR_CONN_RESET`` gives
    ``["err", "err_conn_reset", "conn", "reset"]``.
    """
    return list(dict.fromkeys(token.text for token in analyzer(text, mode="query")))


def build_keyword_query(fieldname: str, text: str, analyzer: Analyzer, *, require_phrases: bool = True) -> Query:
    """Turn user text into a Whoosh query; no Whoosh query syntax is interpreted.

    * Each quoted phrase (``"..."`` or ``“...”``) becomes a ``Phrase`` over its main
      tokens (a ``Term`` if it has one); every phrase is required. With
      ``require_phrases=False`` quotes are ignored: their words are ordinary terms.
    * All other text becomes an ``Or`` of its distinct query terms; these are optional
      when a phrase is present (they only add to the score) and otherwise at least one
      must match.
    * A quote without a partner is ignored; the text after it counts as unquoted.
    * Operators (``AND``, ``OR``, ``NOT``), wildcards and ``field:`` prefixes are plain
      text.

    Raises :class:`EmptyQueryError` (an ``InvalidQueryError`` and a ``ValueError``) when
    nothing searchable remains, e.g. for ``""``, ``"?!"`` or only stop words.
    """
    phrases, words = _parse(fieldname, text, analyzer, require_phrases)
    optional = _one_or_or([Term(fieldname, word) for word in words])
    if phrases and optional is not None:
        return AndMaybe(_one_or_and(phrases), optional)
    if phrases:
        return _one_or_and(phrases)
    assert optional is not None  # _parse refuses a query with neither
    return optional


def plain_query_terms(fieldname: str, text: str, analyzer: Analyzer, *, require_phrases: bool = True) -> list[str] | None:
    """The distinct terms of ``text`` when its query holds no phrase, else None (a phrase needs positions).

    The terms are those :func:`build_keyword_query` would OR together; raises
    :class:`EmptyQueryError` as it does.
    """
    phrases, words = _parse(fieldname, text, analyzer, require_phrases)
    return None if phrases else words


def _parse(fieldname: str, text: str, analyzer: Analyzer, require_phrases: bool) -> tuple[list[Query], list[str]]:
    """The required phrase queries of ``text`` and its other distinct terms; raises EmptyQueryError for neither."""
    quoted, unquoted = _split_quoted(text) if require_phrases else ([], [_STRAY_QUOTES_RE.sub(" ", text)])
    phrases = [query for query in (_phrase_query(fieldname, phrase, analyzer) for phrase in quoted) if query is not None]
    words = analyze_query_terms(" ".join(unquoted), analyzer)
    if not phrases and not words:
        raise EmptyQueryError(
            f"The query {text!r} has no searchable words: it is empty or holds only stop words "
            "and punctuation. Search for distinctive words, names, codes or a quoted phrase."
        )
    return phrases, words


def _segment(text: str, cjk: CjkStrategy, index: bool) -> Iterator[_Piece]:
    """Cut ``text`` into pieces in reading order; ``index`` adds index-only extras."""
    for match in _RUN_RE.finditer(text):
        run, start = match.group(), match.start()
        if match.lastgroup == "word":
            if run.isalnum():  # a single part, no joiners: most words, so without a generator of its own
                yield _Piece(_normalise(run), start, start + len(run), False)
            else:
                yield from _word_pieces(run, start)
        elif match.lastgroup == "han":
            yield from _han_pieces(run, start, cjk, index)
        else:
            yield from _bigram_pieces(run, start, index)


def _word_pieces(run: str, start: int) -> Iterator[_Piece]:
    """Yield the parts of a word run, plus the joined run as an extra after the first."""
    parts = list(_WORD_PART_RE.finditer(run))
    for i, part in enumerate(parts):
        yield _Piece(_normalise(part.group()), start + part.start(), start + part.end(), False)
        if i == 0 and len(parts) > 1:
            yield _Piece(_normalise(run), start, start + len(run), True)


def _han_pieces(run: str, start: int, cjk: CjkStrategy, index: bool) -> Iterator[_Piece]:
    """Segment a Han run with the chosen strategy."""
    if cjk == "bigram":
        return _bigram_pieces(run, start, index)
    if cjk == "unigram":
        return (_Piece(char, start + i, start + i + 1, False) for i, char in enumerate(run))
    return _jieba_pieces(run, start, subwords=cjk == "jieba_search")


def _bigram_pieces(run: str, start: int, index: bool) -> Iterator[_Piece]:
    """Overlapping bigrams as main tokens; when indexing, each character as an extra."""
    if len(run) == 1:
        yield _Piece(run, start, start + 1, False)
        return
    for i in range(len(run) - 1):
        yield _Piece(run[i : i + 2], start + i, start + i + 2, False)
        if index:
            yield from _unigram_extras(run, start, i, last=i == len(run) - 2)


def _unigram_extras(run: str, start: int, i: int, last: bool) -> Iterator[_Piece]:
    """Characters ``i`` (and ``i + 1`` for the last bigram), skipping repeats at one position."""
    yield _Piece(run[i], start + i, start + i + 1, True)
    if last and run[i + 1] != run[i]:
        yield _Piece(run[i + 1], start + i + 1, start + i + 2, True)


def _jieba_pieces(run: str, start: int, subwords: bool) -> Iterator[_Piece]:
    """jieba words as main tokens; with ``subwords``, their dictionary sub-words as extras.

    The sub-words are those ``jieba.cut_for_search`` adds: the 2- and 3-character
    substrings of longer words that are in jieba's dictionary.
    """
    segmenter = _jieba()
    offset = start
    for word in segmenter.cut(run):
        yield _Piece(word, offset, offset + len(word), False)
        if subwords:
            yield from _jieba_subwords(word, offset, segmenter.FREQ)
        offset += len(word)


def _jieba_subwords(word: str, start: int, freq: dict[str, int]) -> Iterator[_Piece]:
    """Distinct in-dictionary 2- and 3-grams of ``word`` (3+ and 4+ characters long)."""
    seen: set[str] = set()
    for size in (2, 3):
        if len(word) <= size:
            continue
        for i in range(len(word) - size + 1):
            gram = word[i : i + size]
            if gram not in seen and freq.get(gram):
                seen.add(gram)
                yield _Piece(gram, start + i, start + i + size, True)


@functools.cache
def _jieba() -> JiebaTokenizer:
    """Import jieba and load its dictionary once, with its logging quiet."""
    import jieba

    # jieba's import sets its logger to DEBUG; silence it before the dictionary loads.
    logging.getLogger("jieba").setLevel(logging.WARNING)
    jieba.dt.initialize()
    return jieba.dt


def _normalise(word: str) -> str:
    """NFKC-normalise non-ASCII words (full-width letters and digits become ASCII)."""
    return word if word.isascii() else unicodedata.normalize("NFKC", word)


def _split_quoted(text: str) -> tuple[list[str], list[str]]:
    """Split ``text`` into quoted phrases and the unquoted rest; lone quotes are dropped."""
    quoted: list[str] = []
    unquoted: list[str] = []
    position = 0
    for match in _QUOTED_RE.finditer(text):
        unquoted.append(text[position : match.start()])
        quoted.append(match.group("ascii") if match.group("ascii") is not None else match.group("curly"))
        position = match.end()
    unquoted.append(text[position:])
    return quoted, [_STRAY_QUOTES_RE.sub(" ", part) for part in unquoted]


def _phrase_query(fieldname: str, phrase: str, analyzer: Analyzer) -> Query | None:
    """``Phrase`` over the main tokens of ``phrase``, a ``Term`` for one, ``None`` for none."""
    words = [t.text for t in analyzer(phrase, mode="query", positions=True) if not getattr(t, "extra", False)]
    if not words:
        return None
    return Term(fieldname, words[0]) if len(words) == 1 else Phrase(fieldname, words)


def _one_or_or(queries: list[Query]) -> Query | None:
    """``None`` for no queries, the query itself for one, else their ``Or``."""
    if not queries:
        return None
    return queries[0] if len(queries) == 1 else Or(queries)


def _one_or_and(queries: list[Query]) -> Query:
    """The query itself for one, else their ``And``."""
    return queries[0] if len(queries) == 1 else And(queries)
