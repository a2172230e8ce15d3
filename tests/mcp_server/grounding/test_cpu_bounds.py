"""Crafted input costs the citation check and the quote search about what ordinary input of its size costs.

Issue 35, finding 4: answers, cited texts and documents shaped to hit super-linear work (full stops
after abbreviations, runs of dots, lines of citation brackets, runs of combining marks, thousands
of distinct words against thousands of stems, sentences citing many long texts, a long line of
CJK text, a quote of two letters) took seconds of CPU each. Every test here times the crafted
call and an ordinary call of the same size in the same run, as CPU time of this process (the
best of three), and holds the crafted one to a multiple of the ordinary one: no absolute seconds.
"""

from __future__ import annotations

import random
import string
import time
import unicodedata
from collections.abc import Callable

import pytest

from mcp_server.grounding import claims
from mcp_server.grounding.verdict import check_answer
from mcp_server.grounding.quotes import find_quote

CHECK_BUDGET = 5
"""A crafted answer, or cited text, costs at most this many times an ordinary one as long (at most about 3 here;
10 to 50 before)."""
QUOTE_BUDGET = 5
"""A quote against crafted text costs at most this many times one against ordinary text as long and of the same
kind (at most about 2 here; 7 to 350 before)."""

ORDINARY_SENTENCES = [
    "New staff get {n} days of annual leave per year after the probation period [hb:leave#{i}].",
    "Leave must be requested two weeks ahead through the HR portal by the employee [hb:leave#{i}].",
    "The X3 vacuum runs for {n} minutes on one charge in eco mode [pr:x3#{i}].",
    "Error ERR_VPN_AUTH_4012 means the token expired; sign in again to renew it [it:vpn#{i}].",
]
ORDINARY_EVIDENCE = {
    **{f"hb:leave#{i}": "New staff get 20 days of annual leave per year after the probation period. Leave must be "
       "requested two weeks ahead through the HR portal. Unused leave of up to 5 days carries over." for i in range(5)},
    **{f"pr:x3#{i}": "The X3 vacuum runs for 150 minutes on one charge in eco mode and 90 in turbo." for i in range(5)},
    **{f"it:vpn#{i}": "Error ERR_VPN_AUTH_4012 means the token expired; sign in again to renew it." for i in range(5)},
}  # fmt: skip


def cpu_seconds(work: Callable[[], object]) -> float:
    """The least CPU time of this process over three runs of ``work`` (caches of cited texts emptied first)."""
    best = float("inf")
    for _ in range(3):
        claims.index_cited_text.cache_clear()
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best


def ordinary_answer(length: int) -> str:
    sentences = (ORDINARY_SENTENCES[k % 4].format(n=20 + k % 3, i=k % 5) for k in range(length))
    return " ".join(next(sentences) for _ in range(length // 60 + 1))[:length]


def _words(count: int, seed: int) -> list[str]:
    """Distinct 11-letter words sharing their first five letters (each a candidate prefix match)."""
    rng = random.Random(seed)
    return ["abcde" + "".join(rng.choices(string.ascii_lowercase, k=6)) for _ in range(count)]


Check = tuple[str, dict[str, str]]
"""An answer and its evidence."""


def _like(answer: str) -> Check:
    """An ordinary answer as long as ``answer``, and its evidence."""
    return ordinary_answer(len(answer)), ORDINARY_EVIDENCE


def _many_ids() -> tuple[Check, Check]:
    """100 sentences each citing 10 of 40 texts of 300 distinct words (the texts were joined and read again for
    every sentence), against 40 sentences citing one text each."""
    rng = random.Random(3)
    words = _words(3000, 4)
    evidence = {f"t:d#{i}": " ".join(rng.sample(words, 300)) + "." for i in range(40)}
    answer = " ".join(f"Alpha beta gamma [{', '.join(rng.sample(list(evidence), 10))}]." for _ in range(100))
    return (answer, evidence), (" ".join(f"Alpha beta gamma [{cid}]." for cid in evidence), evidence)


def _crafted(answer: str, evidence: dict[str, str]) -> tuple[Check, Check]:
    return (answer, evidence), _like(answer)


CRAFTED_ANSWERS = {  # the crafted answer and an ordinary one of its size, each with its evidence
    "abbreviation full stops": _crafted("e.g. " * 4000, {}),
    "a run of dots": _crafted("a" + "." * 5000 + "b", {}),
    "lines of citation brackets": _crafted("x\n" + "[a:b]\n" * 3300, {}),
    "distinct words against distinct stems": _crafted(
        " ".join(_words(1500, 1)) + " [t:d#0].", {"t:d#0": " ".join(_words(3000, 2))}
    ),
    "sentences citing many long texts": _many_ids(),
}


@pytest.mark.parametrize("name", list(CRAFTED_ANSWERS))
def test_a_crafted_answer_costs_about_an_ordinary_one_of_its_size(name: str) -> None:
    (answer, evidence), (ordinary, ordinary_evidence) = CRAFTED_ANSWERS[name]
    baseline = cpu_seconds(lambda: check_answer(ordinary, ordinary_evidence))
    crafted = cpu_seconds(lambda: check_answer(answer, evidence))
    assert crafted <= CHECK_BUDGET * baseline, (name, crafted, baseline)


def test_a_cited_text_of_combining_marks_costs_about_an_ordinary_one() -> None:
    """NFKC puts a run of combining marks in order by insertion sort: 40,000 of them took a second."""
    marks = "a" + "\u0301\u0316" * 20_000
    ordinary = _ordinary_text(len(marks))
    answer = "The pump needs a new filter [t:d#0]."
    baseline = cpu_seconds(lambda: check_answer(answer, {"t:d#0": ordinary}))
    crafted = cpu_seconds(lambda: check_answer(answer, {"t:d#0": marks}))
    assert crafted <= CHECK_BUDGET * baseline, (crafted, baseline)


def _two_letter_text() -> tuple[str, str]:
    """A quote of two letters in random order, near text of the same two letters: comparing them character
    by character used to cost about the product of their lengths."""
    rng = random.Random(5)
    return "".join(rng.choice("ab") for _ in range(1000)), "".join(rng.choice("ab") for _ in range(3000))


def _ordinary_text(length: int) -> str:
    words = ("the pump needs a new filter cartridge every four hundred operating hours to keep its flow rate " * 2).split()
    rng = random.Random(6)
    return " ".join(rng.choice(words) for _ in range(length // 3))[:length]


def _cjk_line(length: int) -> str:
    rng = random.Random(7)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(length))


def _decomposed_text(length: int) -> str:
    """Ordinary text with its accents as combining marks (NFD, as macOS writes file names): folded a character
    and its marks at a time, as a run of marks is."""
    words = "le café de la mère a été fermé très tôt après la fête à côté du théâtre".split()
    rng = random.Random(8)
    return unicodedata.normalize("NFD", " ".join(rng.choice(words) for _ in range(length // 4)))[:length]


CRAFTED_QUOTES = {  # the quote, the crafted text, ordinary text of the same kind
    "a line of CJK text": (_cjk_line(300), _cjk_line(200_000), _ordinary_text(200_000)),
    "a run of combining marks": ("a\u0301\u0316\u0301", "a" + "\u0301\u0316" * 20_000, _decomposed_text(40_001)),
    "a quote of two letters": (*_two_letter_text(), _ordinary_text(3000)),
}


@pytest.mark.parametrize("name", list(CRAFTED_QUOTES))
def test_a_quote_against_crafted_text_costs_about_one_against_ordinary_text(name: str) -> None:
    quote, text, ordinary = CRAFTED_QUOTES[name]
    near_miss = ordinary[len(ordinary) // 2 : len(ordinary) // 2 + len(quote)].replace("e", "o", 3)
    baseline = cpu_seconds(lambda: find_quote(near_miss, ordinary))
    crafted = cpu_seconds(lambda: find_quote(quote, text))
    assert crafted <= QUOTE_BUDGET * baseline, (name, crafted, baseline)
