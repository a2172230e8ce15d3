"""Tests for the keyword index's mixed English/Chinese analysis and query building."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest
from whoosh import index
from whoosh.fields import ID, TEXT, Schema
from whoosh.filedb.filestore import RamStorage
from whoosh.query import And, AndMaybe, Or, Phrase, Term

from mcp_server.errors import InvalidQueryError
from mcp_server.stores.analysis import (
    DEFAULT_CJK,
    EmptyQueryError,
    MixedTokenizer,
    analyze_query_terms,
    build_analyzer,
    build_keyword_query,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
STRATEGIES = ["bigram", "jieba", "jieba_search", "unigram"]


def tokens(text: str, cjk: str = "bigram", mode: str = "index") -> list[tuple[str, int, bool]]:
    """(text, position, extra) for every token the analyzer yields."""
    return [(t.text, t.pos, t.extra) for t in build_analyzer(cjk)(text, positions=True, mode=mode)]


def main_texts(text: str, cjk: str = "bigram") -> list[str]:
    return [word for word, _, extra in tokens(text, cjk) if not extra]


def search(docs: dict[str, str], query: str, cjk: str = DEFAULT_CJK) -> list[str]:
    """Ids of ``docs`` matching ``query``, best first, from an in-memory index."""
    schema = Schema(doc_id=ID(stored=True), content=TEXT(analyzer=build_analyzer(cjk)))
    ix = RamStorage().create_index(schema)
    with ix.writer() as writer:
        for doc_id, text in docs.items():
            writer.add_document(doc_id=doc_id, content=text)
    with ix.searcher() as searcher:
        q = build_keyword_query("content", query, searcher.schema["content"].analyzer)
        return [hit["doc_id"] for hit in searcher.search(q, limit=None)]


# --- English and codes ---------------------------------------------------------------


def test_english_is_stemmed_stop_words_dropped_and_positions_renumbered() -> None:
    assert tokens("Connecting to the servers failed; running now") == [
        ("connect", 0, False),
        ("server", 1, False),
        ("fail", 2, False),
        ("run", 3, False),
        ("now", 4, False),
    ]


def test_codes_are_kept_whole_and_unstemmed() -> None:
    assert main_texts("E1042 http2 running5 404 ＡＢＣ１２３") == ["e1042", "http2", "running5", "404", "abc123"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ERR_CONN_RESET", [("err", 0, False), ("err_conn_reset", 0, True), ("conn", 1, False), ("reset", 2, False)]),
        ("docker-compose", [("docker", 0, False), ("docker-compose", 0, True), ("compos", 1, False)]),
        ("v1.2.3", [("v1", 0, False), ("v1.2.3", 0, True), ("2", 1, False), ("3", 2, False)]),
        ("src/app.py", [("src", 0, False), ("src/app.py", 0, True), ("app", 1, False), ("py", 2, False)]),
    ],
)
def test_joined_words_yield_parts_and_the_whole_string(text: str, expected: list[tuple[str, int, bool]]) -> None:
    assert tokens(text) == expected


def test_sentence_punctuation_does_not_join_words() -> None:
    assert main_texts("It ended. Next, __init__ ran") == ["end", "next", "init", "ran"]


# --- Chinese and mixed text ----------------------------------------------------------


def test_bigram_segments_with_consecutive_positions_and_index_only_characters() -> None:
    assert tokens("北京大学", mode="query") == [("北京", 0, False), ("京大", 1, False), ("大学", 2, False)]
    assert tokens("北京大学") == [
        ("北京", 0, False),
        ("北", 0, True),
        ("京大", 1, False),
        ("京", 1, True),
        ("大学", 2, False),
        ("大", 2, True),
        ("学", 2, True),
    ]
    assert tokens("猫") == [("猫", 0, False)]


def test_jieba_cut_yields_words_with_consecutive_positions() -> None:
    assert tokens("我来到北京清华大学", "jieba") == [
        ("我", 0, False),
        ("来到", 1, False),
        ("北京", 2, False),
        ("清华大学", 3, False),
    ]


def test_jieba_search_adds_dictionary_subwords_at_the_word_position() -> None:
    result = tokens("我来到北京清华大学", "jieba_search", mode="query")
    assert [(w, p) for w, p, extra in result if not extra] == [("我", 0), ("来到", 1), ("北京", 2), ("清华大学", 3)]
    assert {(w, p) for w, p, extra in result if extra} == {("清华", 3), ("华大", 3), ("大学", 3)}


@pytest.mark.parametrize(
    ("cjk", "expected"),
    [
        ("bigram", ["用", "python", "读取", "csv", "文件", "ひら", "らが", "がな"]),
        ("jieba", ["用", "python", "读取", "csv", "文件", "ひら", "らが", "がな"]),
        ("unigram", ["用", "python", "读", "取", "csv", "文", "件", "ひら", "らが", "がな"]),
    ],
)
def test_mixed_text_is_split_by_script_in_one_pass(cjk: str, expected: list[str]) -> None:
    result = tokens("用Python读取CSV文件 ひらがな", cjk, mode="query")
    assert [w for w, _, _ in result] == expected
    assert [p for _, p, _ in result] == list(range(len(expected)))


@pytest.mark.parametrize("cjk", STRATEGIES)
def test_char_offsets_slice_the_source_text(cjk: str) -> None:
    text = "  Der ERR_CONN_RESET（第3次）出现在docker-compose里，ＡＢＣ１２３ 한국어 中华人民共和国成立。"
    found = list(MixedTokenizer(cjk)(text, chars=True, mode="index"))
    assert found
    for token in found:
        assert unicodedata.normalize("NFKC", text[token.startchar : token.endchar]) == token.text
    shifted = [(t.text, t.startchar) for t in MixedTokenizer(cjk)(text, chars=True, start_char=100)]
    assert shifted == [(t.text, t.startchar + 100) for t in MixedTokenizer(cjk)(text, chars=True)]


def test_analyzer_offsets_survive_the_filters() -> None:
    text = "The Running dogs"
    found = [(t.text, text[t.startchar : t.endchar]) for t in build_analyzer()(text, chars=True)]
    assert found == [("run", "Running"), ("dog", "dogs")]


def test_whoosh_tokenizer_protocol_options() -> None:
    analyzer = build_analyzer()
    assert [t.text for t in analyzer("Hello World", tokenize=False)] == ["hello world"]
    assert [(t.text, t.stopped) for t in analyzer("the cat", removestops=False)] == [("the", True), ("cat", False)]
    assert [t.pos for t in analyzer("one two", positions=True, start_pos=5)] == [5, 6]


def test_unknown_strategy_is_rejected() -> None:
    with pytest.raises(ValueError, match="Unknown CJK strategy"):
        build_analyzer("trigram")  # type: ignore[arg-type]


def test_analyzer_pickles_by_value() -> None:
    analyzer = build_analyzer("jieba")
    restored = pickle.loads(pickle.dumps(analyzer))
    assert restored == analyzer and restored != build_analyzer("bigram")
    assert [t.text for t in restored("Running 北京")] == [t.text for t in analyzer("Running 北京")]


# --- query building ------------------------------------------------------------------


def test_query_terms_include_the_joined_string() -> None:
    assert analyze_query_terms("ERR_CONN_RESET reset", build_analyzer()) == ["err", "err_conn_reset", "conn", "reset"]


def test_query_shapes() -> None:
    analyzer = build_analyzer()
    assert build_keyword_query("f", "servers", analyzer) == Term("f", "server")
    assert build_keyword_query("f", "title:foo AND bar*", analyzer) == Or(
        [Term("f", "titl"), Term("f", "foo"), Term("f", "bar")]
    )
    assert build_keyword_query("f", 'timeout "connection pool"', analyzer) == AndMaybe(
        Phrase("f", ["connect", "pool"]), Term("f", "timeout")
    )
    assert build_keyword_query("f", "“E1042” “北京”", analyzer) == And([Term("f", "e1042"), Term("f", "北京")])


def test_quotes_can_be_read_as_plain_words() -> None:
    analyzer = build_analyzer()
    assert build_keyword_query("f", 'timeout "connection pool"', analyzer, require_phrases=False) == Or(
        [Term("f", "timeout"), Term("f", "connect"), Term("f", "pool")]
    )


def test_unbalanced_quote_is_ignored() -> None:
    analyzer = build_analyzer()
    assert build_keyword_query("f", 'connection "pool', analyzer) == Or([Term("f", "connect"), Term("f", "pool")])
    assert build_keyword_query("f", '"a b" c"', analyzer) == AndMaybe(Term("f", "b"), Term("f", "c"))


@pytest.mark.parametrize("text", ["", "   ", "the of and", '""', "？！…", '"the" ,'])
def test_empty_queries_raise_a_value_error(text: str) -> None:
    with pytest.raises(EmptyQueryError, match="no searchable words") as caught:
        build_keyword_query("f", text, build_analyzer())
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, InvalidQueryError)


# --- searching -----------------------------------------------------------------------

DOCS = {
    "exact": "The client raised ERR_CONN_RESET when the connection pool was full.",
    "shuffled": "Reset the pool: the connection said err, conn lost.",
    "compose": "Start it with docker-compose up -d.",
    "zh": "北京大学位于北京市海淀区，是中华人民共和国成立前创办的大学。",
    "zh_shuffled": "共和人民的大学。",
    "cat": "小猫咪很可爱。",
}


def test_phrase_finds_the_exact_phrase_only() -> None:
    assert search(DOCS, '"connection pool"') == ["exact"]
    assert search(DOCS, '"ERR_CONN_RESET"') == ["exact"]
    assert search(DOCS, '"docker compose up"') == ["compose"]


def test_exact_code_ranks_first_without_quotes() -> None:
    assert search(DOCS, "ERR_CONN_RESET")[:2] == ["exact", "shuffled"]


@pytest.mark.parametrize("cjk", ["bigram", "jieba"])
def test_chinese_query_finds_the_chinese_document(cjk: str) -> None:
    assert search(DOCS, "北京大学在哪个区？", cjk)[0] == "zh"


def test_chinese_phrase_inside_a_longer_word_matches_with_bigrams() -> None:
    assert search(DOCS, "“人民共和”") == ["zh"]
    assert search(DOCS, "“人民共和”", "jieba") == []  # jieba indexed 中华人民共和国 as one word


def test_single_character_query_finds_it_inside_a_word() -> None:
    assert search(DOCS, "猫") == ["cat"]


def test_schema_survives_close_and_reopen_in_a_fresh_process(tmp_path: Path) -> None:
    schema = Schema(doc_id=ID(stored=True), content=TEXT(analyzer=build_analyzer("jieba")))
    ix = index.create_in(str(tmp_path), schema)
    with ix.writer() as writer:
        writer.add_document(doc_id="zh", content=DOCS["zh"])
        writer.add_document(doc_id="exact", content=DOCS["exact"])
    ix.close()
    script = textwrap.dedent(
        f"""
        import sys
        from whoosh import index
        from mcp_server.stores.analysis import build_keyword_query
        with index.open_dir({str(tmp_path)!r}).searcher() as searcher:
            analyzer = searcher.schema["content"].analyzer
            english = build_keyword_query("content", "connection", analyzer)
            print("jieba loaded early:", "jieba" in sys.modules)
            chinese = build_keyword_query("content", "北京大学在哪里", analyzer)
            print([hit["doc_id"] for q in (english, chinese) for hit in searcher.search(q)])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, check=True, timeout=60
    )
    assert done.stdout.splitlines() == ["jieba loaded early: False", "['exact', 'zh']"]
    assert "prefix dict" not in done.stderr.lower()
