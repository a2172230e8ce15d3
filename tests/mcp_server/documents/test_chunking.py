"""Chunking: the offsets invariant, heading paths, sizes, overlap, determinism."""

from __future__ import annotations

import random
import re
import textwrap
from itertools import pairwise
from pathlib import Path

import pytest

from mcp_server.documents.chunking import (
    Chunk,
    estimate_tokens,
    find_headings,
    split_into_chunks,
)
from mcp_server.documents.corpus import (
    ChunkingOptions,
    discover_documents,
    load_corpus_config,
)
from mcp_server.documents.loaders import load_path

CORPORA = [
    Path(__file__).parents[2] / "fixtures" / "corpora" / "acme",
    Path(__file__).parents[3] / "corpora" / "handbook",
]
SMALL = ChunkingOptions(target_tokens=60, max_tokens=80, overlap_tokens=16)
WORDS = "leave policy annual days request manager approval carry over salary bonus rating payment".split()
HANZI = "年假申请审批员工部门经理总监报销费用发票住宿标准城市工资奖金评级"


def assert_valid_chunks(text: str, chunks: list[Chunk], options: ChunkingOptions) -> None:
    """The contract every caller relies on: spans of the text, in order, trimmed, complete, bounded."""
    assert [chunk.index for chunk in chunks] == list(range(len(chunks)))
    covered = [False] * len(text)
    previous: Chunk | None = None
    for chunk in chunks:
        span = text[chunk.char_start : chunk.char_end]
        assert 0 <= chunk.char_start < chunk.char_end <= len(text)
        assert span == span.strip(), chunk
        assert estimate_tokens(span) <= options.max_tokens, chunk
        if previous is not None:
            assert chunk.char_start > previous.char_start and chunk.char_end > previous.char_end
        covered[chunk.char_start : chunk.char_end] = [True] * len(span)
        previous = chunk
    assert all(done or char.isspace() for done, char in zip(covered, text, strict=True)), "text left out of every chunk"


def chunk_text(chunk: Chunk, text: str) -> str:
    return text[chunk.char_start : chunk.char_end]


def sentences(rng: random.Random, count: int, longest: int = 14) -> list[str]:
    """``count`` English sentences of 3 to ``longest`` words."""
    return [" ".join(rng.choices(WORDS, k=rng.randint(3, longest))).capitalize() + "." for _ in range(count)]


def chinese_sentences(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choices(HANZI, k=rng.randint(6, 20))) + rng.choice("。！？；") for _ in range(count)]


# --- token estimate ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        (" \n\t ", 0),
        ("leave", 2),  # 1.3, rounded up
        ("annual leave policy", 4),  # 3.9
        ("Hello, world!", 5),  # 2.6 + 2 marks
        ("年假制度。", 5),
        ("ERR_VPN_AUTH_4012", 9),  # 4 words (5.2) + 3 underscores
        ("a" * 60, 10),  # long runs: one token per 6 characters
    ],
)
def test_estimate_tokens(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens


def test_estimate_tokens_grows_with_text() -> None:
    text = "Leave must be requested 5 working days ahead. 报销需在30天内提交。"

    counts = [estimate_tokens(text[:end]) for end in range(len(text) + 1)]

    assert counts == sorted(counts)
    assert estimate_tokens(text + " " + text) <= 2 * estimate_tokens(text)


# --- headings and sections -----------------------------------------------------------


def test_find_headings_skips_code_fences_and_non_headings() -> None:
    text = (
        "# Top\n"
        "#hashtag\n"
        "####### seven\n"
        "````python\n# comment\n```\n# still code\n````\n"
        "  ## Indented ##\n"
        "~~~~\n## tilde code\n~~~\n~~~~\n"
        "### Deep\n"
    )

    assert [(heading.level, heading.title) for heading in find_headings(text)] == [
        (1, "Top"),
        (2, "Indented"),
        (3, "Deep"),
    ]
    assert text[find_headings(text)[1].start :].startswith("  ## Indented")


def test_sections_carry_heading_paths() -> None:
    body = " ".join(["Some words about this part of the policy."] * 6)
    text = (
        f"Preamble text before any heading. {body}\n\n"
        f"# Annual leave\n\n{body}\n\n"
        f"## Entitlement\n\n{body}\n\n"
        f"### Part-time\n\n{body}\n\n"
        f"## Carry-over\n\n{body}\n\n"
        f"# Sick leave\n\n```\n# not a heading\n```\n{body}\n"
    )

    chunks = split_into_chunks(text, ChunkingOptions())

    assert [chunk.section for chunk in chunks] == [
        "",
        "Annual leave",
        "Annual leave > Entitlement",
        "Annual leave > Entitlement > Part-time",
        "Annual leave > Carry-over",
        "Sick leave",
    ]
    assert chunk_text(chunks[2], text).startswith("## Entitlement\n\nSome words")
    assert_valid_chunks(text, chunks, ChunkingOptions())


def test_heading_followed_at_once_by_subheading_merges_into_it() -> None:
    body = " ".join(["Employees receive ten days of leave after one year."] * 5)
    text = f"# Leave Policy\n\n## Annual leave\n\n### Entitlement\n\n{body}\n\n### Approval\n\n{body}\n"

    chunks = split_into_chunks(text, ChunkingOptions())

    assert [(chunk.char_start, chunk.section) for chunk in chunks] == [
        (0, "Leave Policy > Annual leave > Entitlement"),
        (text.index("### Approval"), "Leave Policy > Annual leave > Approval"),
    ]


def test_small_sibling_merges_under_the_shared_heading() -> None:
    body = " ".join(["The warranty covers repairs for two years."] * 5)
    text = f"# FAQ\n\n## Battery\n\nIt lasts 18 hours.\n\n## Warranty\n\n{body}\n"

    chunks = split_into_chunks(text, ChunkingOptions())

    assert [(chunk.char_start, chunk.section) for chunk in chunks] == [(0, "FAQ")]


def test_small_section_stays_alone_before_another_parent_or_at_the_end() -> None:
    body = " ".join(["Claims are paid with the next salary."] * 6)
    text = f"# A\n\n## A1\n\nShort.\n\n# B\n\n{body}\n\n## B1\n\nContact HR."

    chunks = split_into_chunks(text, ChunkingOptions())

    assert [chunk.section for chunk in chunks] == ["A > A1", "B", "B > B1"]
    assert chunk_text(chunks[0], text) == "# A\n\n## A1\n\nShort."
    assert chunk_text(chunks[2], text) == "## B1\n\nContact HR."


# --- sizes, boundaries and overlap ---------------------------------------------------


def test_blank_text_has_no_chunks() -> None:
    assert split_into_chunks("", ChunkingOptions()) == []
    assert split_into_chunks(" \n\n\t\n", ChunkingOptions()) == []


def test_a_section_that_fits_is_one_trimmed_chunk() -> None:
    text = "\n\n  Leave must be requested 5 working days ahead.  \n\n"

    assert split_into_chunks(text, ChunkingOptions()) == [Chunk(0, 4, len(text.rstrip()), "")]


def test_long_section_splits_at_paragraphs_with_sentence_overlap() -> None:
    rng = random.Random(7)
    paragraphs = [textwrap.fill(" ".join(sentences(rng, 2, longest=8)), width=72) for _ in range(24)]
    text = "## Requesting leave\n\n" + "\n\n".join(paragraphs)

    chunks = split_into_chunks(text, SMALL)

    assert len(chunks) > 4
    assert_valid_chunks(text, chunks, SMALL)
    assert {chunk.section for chunk in chunks} == {"Requesting leave"}
    for chunk, following in pairwise(chunks):
        assert text[chunk.char_end :].startswith("\n\n"), "a chunk should end at a paragraph break"
        overlap = text[following.char_start : chunk.char_end]
        assert following.char_start < chunk.char_end, "consecutive chunks should overlap"
        assert 0 < estimate_tokens(overlap) <= SMALL.overlap_tokens
        assert re.search(r"[.]\s+$", text[: following.char_start]), "overlap should start at a sentence"
        assert estimate_tokens(chunk_text(chunk, text)) >= SMALL.target_tokens // 2


def test_one_long_paragraph_splits_at_sentence_ends() -> None:
    text = " ".join(sentences(random.Random(3), 40))

    chunks = split_into_chunks(text, SMALL)

    assert len(chunks) > 3
    assert_valid_chunks(text, chunks, SMALL)
    assert all(chunk_text(chunk, text).endswith(".") for chunk in chunks)


def test_chinese_text_splits_on_chinese_punctuation() -> None:
    text = "## 报销时限\n\n" + "".join(chinese_sentences(random.Random(5), 40))

    chunks = split_into_chunks(text, SMALL)

    assert len(chunks) > 3
    assert_valid_chunks(text, chunks, SMALL)
    assert all(chunk_text(chunk, text)[-1] in "。！？；" for chunk in chunks)
    assert all(following.char_start < chunk.char_end for chunk, following in pairwise(chunks))


def test_text_without_any_break_is_cut_hard_within_bounds() -> None:
    rng = random.Random(11)
    blob = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789+/", k=4000))
    text = f"Key:\n\n{blob}\n\nEnd of key."

    chunks = split_into_chunks(text, SMALL)

    assert_valid_chunks(text, chunks, SMALL)
    assert len(chunks) > 8
    assert all(following.char_start < chunk.char_end for chunk, following in pairwise(chunks[1:-1]))


def test_chunking_is_deterministic() -> None:
    rng = random.Random(13)
    text = random_markdown(rng)

    first = split_into_chunks(text, SMALL)

    assert split_into_chunks("".join(list(text)), ChunkingOptions(60, 80, 16)) == first


# --- the invariant over real and generated documents --------------------------------


@pytest.mark.parametrize("corpus", CORPORA, ids=lambda path: path.name)
def test_every_corpus_document_chunks_validly(corpus: Path) -> None:
    config = load_corpus_config(corpus)
    for source in discover_documents(config):
        text = load_path(source.path).text
        for options in (config.chunking, SMALL):
            chunks = split_into_chunks(text, options)
            assert chunks, source.relpath
            assert_valid_chunks(text, chunks, options)


def test_handbook_leave_policy_splits_into_sections() -> None:
    config = load_corpus_config(CORPORA[1])
    text = load_path(config.root / "hr" / "leave-policy.md").text

    chunks = split_into_chunks(text, config.chunking)

    assert len(chunks) >= 5
    assert "Leave Policy > Annual leave > Entitlement" in {chunk.section for chunk in chunks}
    entitlement = next(chunk for chunk in chunks if chunk.section.endswith("Entitlement"))
    assert "After 3 years of service" in chunk_text(entitlement, text)


def random_markdown(rng: random.Random) -> str:
    """A Markdown-ish document mixing the shapes real documents have, and some nasty ones."""
    blocks: list[str] = []
    for _ in range(rng.randint(0, 25)):
        kind = rng.random()
        if kind < 0.25:
            blocks.append("#" * rng.randint(1, 6) + " " + " ".join(rng.choices(WORDS, k=rng.randint(1, 4))))
        elif kind < 0.55:
            paragraph = " ".join(sentences(rng, rng.randint(1, 12)))
            blocks.append(textwrap.fill(paragraph, width=rng.randint(40, 100)) if rng.random() < 0.5 else paragraph)
        elif kind < 0.65:
            blocks.append("".join(chinese_sentences(rng, rng.randint(1, 15))))
        elif kind < 0.75:
            blocks.append("\n".join(f"- {' '.join(rng.choices(WORDS, k=rng.randint(2, 9)))}" for _ in range(6)))
        elif kind < 0.85:
            blocks.append("```\n# inside code\n" + " ".join(rng.choices(WORDS, k=30)) + "\n```")
        elif kind < 0.9:
            blocks.append("x" * rng.randint(100, 1500))
        else:
            blocks.append(" " * rng.randint(0, 3) + "\t \n")
    separator = rng.choice(["\n\n", "\n", "\r\n\r\n", "\n\n\n"])
    return separator.join(blocks)


def test_random_markdown_chunks_validly() -> None:
    rng = random.Random(20240601)
    for _ in range(150):
        text = random_markdown(rng)
        overlap = rng.randint(1, 40)
        target = rng.randint(overlap + 1, 250)
        options = ChunkingOptions(target, target + rng.randint(0, 100), overlap)
        chunks = split_into_chunks(text, options)
        assert_valid_chunks(text, chunks, options)
        labels = {heading.title for heading in find_headings(text)}
        assert all(not chunk.section or chunk.section.split(" > ")[-1] in labels for chunk in chunks)
