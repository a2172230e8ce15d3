"""Citation ids: one format, escaped so that any file name survives the bracket syntax, parsed back exactly."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_server.citation_ids import (
    DocumentRef,
    SqlRef,
    canonical,
    chunk_id,
    parse,
    parse_doc_part,
    parse_store_key,
)
from mcp_server.errors import InvalidQueryError
from mcp_server.grounding.sentences import cited_ids
from mcp_server.sql.guard import citation_id as sql_citation_id

CORPORA = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,20}", fullmatch=True).filter(lambda name: any(c.isalpha() for c in name))
"""Corpus names with a letter (one without would read as a time in brackets, ``[10:30]``)."""
NAME_BYTES = st.binary(min_size=1, max_size=40).filter(lambda name: b"/" not in name and b"\0" not in name)
FILE_NAMES = NAME_BYTES.map(os.fsdecode) | st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="/\0"), min_size=1, max_size=40
)
"""What a POSIX file system allows as a name (any bytes but '/' and NUL, decoded as Python decodes file names)."""
DOC_IDS = st.lists(FILE_NAMES, min_size=1, max_size=3).map("/".join)


@given(corpus=CORPORA, doc_id=DOC_IDS, chunk=st.integers(min_value=0, max_value=10_000))
def test_every_file_name_round_trips_through_a_chunk_id_and_a_citation_bracket(
    corpus: str, doc_id: str, chunk: int
) -> None:
    cid = chunk_id(corpus, doc_id, chunk)
    assert parse(cid) == DocumentRef(corpus, doc_id, chunk)
    assert parse(str(DocumentRef(corpus, doc_id))) == DocumentRef(corpus, doc_id)
    assert not any(ch.isspace() or ch in "[],;`|<>\\" for ch in cid) and cid.count("#") == 1
    assert cited_ids(f"The drill is on Thursday [{cid}]. It lasts 20 minutes [{cid}, {cid}].") == [cid]
    assert parse_store_key(DocumentRef(corpus, doc_id, chunk).store_key) == (corpus, doc_id, chunk)
    assert canonical(cid) == cid


IDS_AS_WRITTEN = (
    st.text(st.characters(codec="utf-8"), max_size=30) | st.from_regex(r"[a-z]{1,3}:[a-z#0-9%]{1,8}", fullmatch=True)
).filter(lambda text: text == text.strip())


@given(IDS_AS_WRITTEN)
def test_an_id_is_written_back_as_parsing_and_formatting_it_would(text: str) -> None:
    try:
        expected: str | None = str(parse(text))
    except InvalidQueryError:
        expected = None
    assert canonical(text) == expected


@pytest.mark.parametrize(
    ("doc_id", "escaped"),
    [
        ("Fire drill on Thursday", "Fire%20drill%20on%20Thursday"),
        ("Q3, facilities [draft] #2", "Q3%2C%20facilities%20%5Bdraft%5D%20%232"),
        ("Bob's \"notes\"; final", "Bob's%20\"notes\"%3B%20final"),
        ("100% done\tnow", "100%25%20done%09now"),
        ("消防演习", "消防演习"),
        ("🔥 plan", "🔥%20plan"),
        ("👩‍💻 rota", "👩‍💻%20rota"),  # the zero-width joiner holds the emoji together
        ("a\u202etxt.exe", "a%E2%80%AEtxt.exe"),  # a bidi override would reorder what is shown
        ("hr/leave-policy", "hr/leave-policy"),
        ("10:30 notes|`x`\\<b>", "10:30%20notes%7C%60x%60%5C%3Cb%3E"),
        (os.fsdecode(b"caf\xe9"), "caf%E9"),  # a Latin-1 byte in a UTF-8 file system
    ],
)
def test_what_is_escaped_and_what_stays(doc_id: str, escaped: str) -> None:
    assert chunk_id("mydocs", doc_id, 0) == f"mydocs:{escaped}#0"


def test_an_unescaped_id_reads_as_the_escaped_one() -> None:
    assert parse("mydocs:Fire drill on Thursday#0") == parse("mydocs:Fire%20drill%20on%20Thursday#0")
    assert parse("mydocs:Q3, facilities #2#1") == DocumentRef("mydocs", "Q3, facilities #2", 1)
    assert parse("mydocs:100% done") == DocumentRef("mydocs", "100% done")  # no %XX: a percent sign
    assert parse("mydocs:a%2cb#3") == DocumentRef("mydocs", "a,b", 3)
    assert parse_doc_part("notes#12") == ("notes", 12) and parse_doc_part("notes#x") == ("notes#x", None)


def test_sql_ids() -> None:
    cid = sql_citation_id("company", "SELECT 1")
    assert cid.startswith("sql:company:") and parse(cid) == SqlRef("company", cid.rsplit(":", 1)[1])
    assert str(parse(cid)) == cid
    assert cited_ids(f"There are 17 open orders [{cid}].") == [cid]
    assert parse("sql:notes#2") == DocumentRef("sql", "notes", 2)  # a corpus named sql is still cited by chunk


@pytest.mark.parametrize("text", ["", "no colon here", ":doc#1", "my docs:x#1", "mydocs:", "mydocs:#3"])
def test_a_malformed_id_is_refused_naming_the_shapes(text: str) -> None:
    with pytest.raises(InvalidQueryError, match="expected '<corpus>:<doc_id>#<chunk>'.*as search hits give them"):
        parse(text)
