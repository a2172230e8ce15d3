"""Tokens with their offsets: runs of CJK letters, and words joined into codes, dates and numbers.

A *word* token is a run of letters and digits, joined by ``- _ . / :`` into one token when no
space parts them (``ERR_VPN_AUTH_4012``, ``2024-05-01``, ``v2.0``, ``10:30``, ``e-bike``); a
*CJK* token is a run of Chinese, Japanese or Korean letters (:data:`~mcp_server.analyzer.scripts.CJK`),
which readers take as character bigrams. Everything else (spaces, punctuation, symbols) is
between tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from mcp_server.analyzer.scripts import CJK

_TOKEN = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>[^\W_{CJK}]+(?:[-_./:][^\W_{CJK}]+)*)")
JOINERS = re.compile(r"[-_./:]")
"""What joins the parts of a word token."""


class Token(NamedTuple):
    """A token as written, where it stands, and whether it is a run of CJK letters."""

    text: str
    start: int
    end: int
    cjk: bool


def tokens(text: str) -> Iterator[Token]:
    """The tokens of ``text``, in order."""
    for match in _TOKEN.finditer(text):
        yield Token(match.group(), match.start(), match.end(), match.lastgroup == "cjk")
