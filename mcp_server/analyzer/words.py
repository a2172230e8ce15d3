"""The words both the citation check and the agent treat as saying nothing about the topic."""

from __future__ import annotations

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves tell please know find give show explain list describe
    much many also may might must shall get got does did done need needs us let lets ever mean means meaning
    """.split()
)
"""Function words and question scaffolding that say nothing about the topic."""

CJK_FUNCTION_CHARS = frozenset("的了是在和与及或也都就而被将把之其这那个着过吗呢吧啊您你我他她它们")
"""Chinese characters of function words."""
CJK_STOP_CHARS = CJK_FUNCTION_CHARS | frozenset("么什哪怎多少几需要请")
"""Chinese characters of function words and question scaffolding; bigrams holding one are not terms."""


def cjk_bigrams(run: str, stop_chars: frozenset[str] = CJK_STOP_CHARS) -> list[str]:
    """Overlapping character bigrams of a CJK run (a run of one: the character), none holding a stop character."""
    grams = [run] if len(run) == 1 else [a + b for a, b in zip(run, run[1:])]
    return [gram for gram in grams if not set(gram) & stop_chars]
