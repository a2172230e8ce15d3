"""The one analyzer: the keyword index, the citation check and the agent read a word, a CJK letter, a
sentence and a month alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from client_agent.text import content_terms, sentences
from mcp_server.analyzer.dates import calendar_name, iso_month
from mcp_server.analyzer.scripts import cjk_share, is_cjk
from mcp_server.analyzer.sentences import sentence_spans, split_sentences
from mcp_server.analyzer.stems import root, stem
from mcp_server.documents.chunking import estimate_tokens
from mcp_server.documents.sniff import check_has_words
from mcp_server.grounding.claims import claims_of
from mcp_server.grounding.support import supports
from mcp_server.stores.analysis import analyze_query_terms, build_analyzer


@pytest.mark.parametrize("word", ["approves", "approval", "running", "ratings", "configured"])
def test_the_index_the_check_and_the_agent_meet_a_regular_word_at_one_stem(word: str) -> None:
    assert analyze_query_terms(word, build_analyzer()) == [stem(word)]
    assert content_terms(word) == [stem(word)]
    assert [term.key for term in claims_of(word).terms] == [stem(word)]


@pytest.mark.parametrize(("form", "word"), [("paid", "pay"), ("sold", "sell"), ("children", "child"), ("written", "write")])
def test_irregular_forms_meet_their_word_in_the_check_and_the_agent(form: str, word: str) -> None:
    assert root(form) == root(word) != stem(form)
    assert content_terms(form) == content_terms(word)
    assert [t.key for t in claims_of(form).terms] == [t.key for t in claims_of(word).terms]


@pytest.mark.parametrize("form", ["found", "left", "saw", "given"])
def test_a_form_that_is_also_a_word_of_its_own_is_left_to_the_stemmer(form: str) -> None:
    assert root(form) == stem(form)


def test_the_check_accepts_a_past_form_cited_by_its_present() -> None:
    assert supports("The bonus is paid in February.", "Bonuses pay out each February.").supported
    assert not supports("The bonus is paid in March.", "Bonuses pay out each February.").supported


@pytest.mark.parametrize("letter", ["漢", "〇", "々", "あ", "カ", "ㄅ", "가", "\U00020000"])
def test_a_cjk_letter_is_cjk_to_the_chunker_the_index_the_check_and_the_agent(letter: str, tmp_path: Path) -> None:
    assert is_cjk(letter)
    assert estimate_tokens(letter * 4) == 4  # one token a character, not a 4-letter word's 1.3
    check_has_words(letter, tmp_path / "one.txt")  # a letter, so a word: no error
    assert analyze_query_terms(letter * 3, build_analyzer()) == [letter * 2]
    assert {t.key for t in claims_of(letter * 3).terms} == {letter * 2}
    assert content_terms(letter * 3) == [letter * 2]


def test_an_ideographic_zero_joins_the_han_digits_around_it() -> None:
    assert analyze_query_terms("二〇一三年", build_analyzer()) == ["二〇", "〇一", "一三", "三年"]


def test_the_agent_and_the_check_cut_sentences_alike() -> None:
    text = "The fee is 5 EUR, e.g. for a day. It rises to 8 EUR in May! Is it paid in advance? Yes。下一句。"
    assert sentences(text) == split_sentences(text) == [
        "The fee is 5 EUR, e.g. for a day.", "It rises to 8 EUR in May!", "Is it paid in advance?", "Yes。", "下一句。",
    ]


def test_an_attached_span_after_a_full_stop_belongs_to_the_sentence_it_ends() -> None:
    text = "It costs 5 EUR. [a:b#1] It rises. [a:c#2]"
    spans = sentence_spans(text, [(16, 23), (34, 41)])
    assert [text[s.start : s.end] for s in spans] == ["It costs 5 EUR. [a:b#1]", "It rises. [a:c#2]"]
    assert [text[s.start : s.end] for s in sentence_spans(text)] == ["It costs 5 EUR.", "[a:b#1] It rises.", "[a:c#2]"]


def test_a_month_is_named_one_way() -> None:
    assert calendar_name("May") == "may" and calendar_name("may") is None and calendar_name("Sept") == "september"
    assert iso_month("2024-05-01") == "may" and iso_month("2024-13-01") is None


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("年假需要提前几天申请", 1.0),
        ("annual leave", 0.0),
        ("VPN 怎么连", 0.5),  # 3 Latin letters, 3 Han characters
        ("《東京》タワー？", 1.0),  # punctuation does not count
        ("서울 2024", 2 / 6),
        ("⺀⺀ ab", 0.0),  # radicals are symbols, not letters: they count neither way
        ("", 0.0),
        ("?! -", 0.0),
    ],
)
def test_cjk_share_counts_han_kana_and_hangul_among_letters_and_digits(text: str, share: float) -> None:
    assert cjk_share(text) == pytest.approx(share)
