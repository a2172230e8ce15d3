"""Tokens with their offsets: runs of CJK letters, and words joined into codes, dates and numbers.

:data:`TOKEN` finds them, each as a match (its offsets are the match's): group ``word`` is a run
of letters and digits, joined by ``- _ . / :`` into one token when no space parts them
(``ERR_VPN_AUTH_4012``, ``2024-05-01``, ``v2.0``, ``10:30``, ``e-bike``); group ``cjk`` is a run
of Chinese, Japanese or Korean letters (:data:`~mcp_server.analyzer.scripts.CJK`), which readers
take as character bigrams. Everything else (spaces, punctuation, symbols) is between tokens.
A pattern rather than a generator of token objects: the citation check reads every token of
every answer and cited text, and a match costs nothing more.
"""

from __future__ import annotations

import re

from mcp_server.analyzer.scripts import CJK

TOKEN = re.compile(rf"(?P<cjk>[{CJK}]+)|(?P<word>[^\W_{CJK}]+(?:[-_./:][^\W_{CJK}]+)*)")
"""A token: a ``cjk`` run or a ``word`` (see the module docstring)."""
JOINERS = re.compile(r"[-_./:]")
"""What joins the parts of a word token."""
