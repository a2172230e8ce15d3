"""Finding a quote in a text: through normalisation exactly, closely above the threshold, and never far off."""

from __future__ import annotations

import pytest

from mcp_server.grounding.quotes import MIN_RATIO, find_quote, normalise

TEXT = (
    "Intro.\n\nThe service team needs infor-\nmation about every repair within two days.\n"
    "Use the \u201cfilter\u201d \u2014 not the pipe \u2014 every 400 hours.  Stra\u00dfe \ufb01ne cafe\u0301.\n"
)


def found(quote: str, text: str = TEXT) -> str:
    match = find_quote(quote, text)
    assert match is not None
    return text[match.start : match.end]


@pytest.mark.parametrize(
    ("quote", "expected"),
    [
        ("needs information about every repair", "needs infor-\nmation about every repair"),
        ("NEEDS  INFORMATION\nabout every   repair", "needs infor-\nmation about every repair"),
        ('use the "filter" - not the pipe - every 400', "Use the \u201cfilter\u201d \u2014 not the pipe \u2014 every 400"),
        ("strasse fine caf\u00e9", "Stra\u00dfe \ufb01ne cafe\u0301"),
    ],
)
def test_case_spacing_hyphenation_and_unicode_forms_match_exactly(quote: str, expected: str) -> None:
    match = find_quote(quote, TEXT)
    assert match is not None and (match.exact, match.ratio) == (True, 1.0)
    assert TEXT[match.start : match.end] == expected


def test_a_quote_hyphenated_at_a_line_break_matches_the_joined_word() -> None:
    assert found("the service team needs infor-\n  mation", "The service team needs information.") == (
        "The service team needs information"
    )


def test_one_word_changed_is_a_close_match_naming_the_documents_words() -> None:
    sentence = "Replace the filter cartridge every 400 operating hours to keep the flow rate steady."
    text = "Maintenance.\n" + sentence + "\nStorage: drain the pump before winter."
    match = find_quote("Replace the filter cartridge every 500 operating hours to keep the flow rate steady.", text)
    assert match is not None and not match.exact and MIN_RATIO <= match.ratio < 1
    assert text[match.start : match.end] == sentence
    swapped = find_quote("Replace the filter element every 400 operating hours to keep the flow rate steady.", text)
    assert swapped is not None and MIN_RATIO <= swapped.ratio < 1 and text[swapped.start : swapped.end] == sentence


def test_a_close_match_does_not_take_in_neighbouring_text() -> None:
    text = "The board met. A committee approved the budget for the new pumps in March.\nNext item."
    assert found("The committee approved the budget for the new pumps in March.", text) == (
        "committee approved the budget for the new pumps in March."
    )


def test_an_unrelated_quote_is_not_found_or_below_the_threshold() -> None:
    text = " ".join(f"Paragraph {n} says the pump needs service every {n} days." for n in range(300))
    closest = find_quote("The insurance deductible per claim is 250 euros", text)
    assert closest is None or closest.ratio < MIN_RATIO
    assert find_quote("zebra quantum xylophone", text) is None


def test_an_exact_quote_found_twice_is_taken_in_the_preferred_span() -> None:
    text = "Keep it dry. " * 3
    first, preferred = find_quote("keep it dry", text), find_quote("keep it dry", text, prefer=(20, 40))
    assert first is not None and preferred is not None
    assert (first.start, preferred.start) == (0, 26)


def test_normalise_and_an_empty_quote() -> None:
    assert normalise("  A\u00a0\u00a0B\u2013C \u2018d\u2019 ") == "a b-c 'd'"
    with pytest.raises(ValueError, match="empty"):
        find_quote(" \n ", TEXT)
