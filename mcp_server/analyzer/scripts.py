"""Which characters are Chinese, Japanese and Korean: the one definition of the CJK ranges.

Han ideographs are told apart from the phonetic scripts (kana, bopomofo, hangul) because the
keyword index may segment Han text by words (:data:`mcp_server.stores.analysis.CjkStrategy`)
while the others are always read as character bigrams. Everything else in the project that
asks "is this CJK?" (chunk sizing, telling text from binary, the citation check, the agent)
asks :data:`CJK`.
"""

from __future__ import annotations

import re

HAN = "\u2e80-\u2fdf\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff"
"""Han ideographs: CJK and Kangxi radicals, the iteration and closing marks and ideographic zero
(``々〆〇``), the Unified Ideographs with Extension A, compatibility ideographs and the supplementary
ideographic planes (Extensions B and later)."""
KANA_HANGUL = "\u1100-\u11ff\u3040-\u30ff\u3100-\u31ff\uac00-\ud7af\uff66-\uff9f"
"""The phonetic scripts: hiragana and katakana (with their phonetic extensions and half-width forms),
bopomofo, hangul jamo and syllables (and the CJK strokes and kanbun marks among them)."""
CJK = HAN + KANA_HANGUL
"""Every Chinese, Japanese and Korean letter, for a regular expression's character class."""

CJK_RUN = re.compile(f"[{CJK}]+")
_CJK_LETTER = re.compile(f"[{CJK}]")
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


def is_cjk(text: str) -> bool:
    """Whether ``text`` is non-empty and all CJK letters."""
    return CJK_RUN.fullmatch(text) is not None


def cjk_share(text: str) -> float:
    """The share of CJK letters among the letters and digits of ``text`` (0 when it has none).

    ``"年假需要提前几天申请"`` gives 1.0, ``"annual leave"`` 0.0, ``"VPN 怎么连"`` 0.5.
    """
    letters = _LETTER_OR_DIGIT.findall(text)
    return sum(1 for letter in letters if _CJK_LETTER.match(letter)) / len(letters) if letters else 0.0
