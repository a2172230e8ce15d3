"""Sentences with their offsets: the one sentence splitter, linear in the text whatever its shape.

:func:`sentence_spans` cuts a text into sentences. Lines, list items, table rows and headings
are sentences of their own (list and heading markers are not part of the text; a wrapped line
that does not start with a capital letter continues a line that did not finish its sentence;
fenced code lines are lines). Inside a line, a sentence ends at ``.``, ``!`` or ``?`` followed
by a space, or at ``。！？``; not at decimals ("2.8 million"), versions ("v2.0"), addresses,
abbreviations ("e.g.", "No. 5").

A caller may name *attached* spans — the citation check names an answer's citation brackets
(``[handbook:hr/leave-policy#2]``): no sentence ends inside one, one right after a full stop
belongs to the sentence that stop ends ("… 150 minutes. [a:b#1]"), and a line holding only
such spans continues the line before it.

The splitter goes from one terminator or attached span to the next and never looks at a
character again for each full stop after it (a run of ``!!!…`` or of short lines of brackets
costs its length, once), and it calls the caller's ``check`` between lines and sentences so
that a deadline can stop it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

LINE_MARKER = r"(?:[-*+•·]|\d{1,3}[.)]|\([a-z]\)|[a-z]\)|>)"
"""A list item's bullet or number, or a quote's ">"."""
_LIST_MARKER = re.compile(rf"[ \t]*{LINE_MARKER}[ \t]+")
_HEADING_MARKER = re.compile(r"[ \t]*#{1,6}[ \t]+")
_FENCE = re.compile(r"[ \t]*(?:```|~~~)")
_TERMINATORS = ".!?"
_CJK_TERMINATORS = "。！？"
CLOSERS = "\"')»”’」』）*_"
"""What may close a sentence after its terminator: quotes, brackets, emphasis."""
_ABBREVIATIONS = {
    "e.g", "i.e", "cf", "vs", "approx", "incl", "excl", "esp", "resp", "viz", "mr", "mrs", "ms",
    "dr", "prof", "st", "jr", "sr", "ca", "dept", "ext", "min", "max",
}
"""Words whose full stop never ends a sentence."""
_ABBREVIATIONS_BEFORE_NUMBER = {"no", "nr", "fig", "p", "pp", "vol", "ch", "sec", "art", "v"}
"""Words whose full stop does not end a sentence when a number follows ("No. 5")."""
_LONGEST_ABBREVIATION = max(map(len, _ABBREVIATIONS | _ABBREVIATIONS_BEFORE_NUMBER | {"etc"}))
_NEXT_VISIBLE = re.compile(r"\s*(\S?)")
_STOP = re.compile(f"[{re.escape(_TERMINATORS + _CJK_TERMINATORS)}\\[]")
"""What may end a sentence, or start an attached span (which opens with a square bracket)."""
_CJK_STOP = re.compile(f"[{_CJK_TERMINATORS}]")
_WORD_RUN = re.compile(r"[\w.]+")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class SentenceSpan:
    """Where a sentence stands in its text, and whether it is a heading ("## Leave")."""

    start: int
    end: int
    heading: bool


def _no_check() -> None:
    """Never stops the splitter."""


def sentence_spans(
    text: str, attached: Iterable[tuple[int, int]] = (), check: Callable[[], None] = _no_check
) -> list[SentenceSpan]:
    """Where the sentences of ``text`` stand (see the module docstring for the rules).

    ``attached`` are the (start, end) of spans that open with ``[`` and belong to the sentence before
    them (citation brackets); ``check`` is called between lines and sentences, and may raise to stop.
    """
    return _Splitter(text, attached).spans(check)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, as :func:`sentence_spans` finds them with no attached spans."""
    return [text[span.start : span.end] for span in sentence_spans(text)]


class _Splitter:
    """Splits one text into sentence spans; see the module docstring for the rules."""

    def __init__(self, text: str, attached: Iterable[tuple[int, int]]) -> None:
        self.text = text
        self.attached = dict(attached)
        """Where each attached span ends, by where it starts."""
        self.attached_starts = {end: start for start, end in self.attached.items()}
        self._content_ends: dict[int, int] = {}
        """Where a line's text ends once trailing attached spans are stripped, by where the stripping began."""
        self._runs = [match.span() for match in _WORD_RUN.finditer(text)]
        self._run_starts = [run_start for run_start, _ in self._runs]
        self._first_letters: dict[int, int | None] = {}
        """Where the first letter of each run (by its number) is, once looked for."""

    def spans(self, check: Callable[[], None]) -> list[SentenceSpan]:
        """The sentences, in order; ``check`` is called for each line and sentence."""
        spans = []
        for start, end, heading in self._blocks(check):
            for s, e in self._sentences(start, end):
                check()
                while s < e and self.text[s].isspace():
                    s += 1
                while e > s and self.text[e - 1].isspace():
                    e -= 1
                if s < e:
                    spans.append(SentenceSpan(s, e, heading))
        return spans

    def _blocks(self, check: Callable[[], None]) -> list[tuple[int, int, bool]]:
        """Lines, list items, table rows and headings; a wrapped line continues an unfinished sentence.

        A line continues the previous one when that did not end its sentence and the line
        is not a list item, heading or table row, and does not start with a capital letter
        (unless the previous line ended with a comma): "… as it stands on\n31 December."
        """
        blocks: list[tuple[int, int, bool]] = []
        unfinished: str | None = None
        pos = 0
        for line in self.text.splitlines(keepends=True):
            check()
            start, pos = pos, pos + len(line)
            body = line.rstrip("\r\n")
            end = start + len(body)
            if not body.strip() or _FENCE.match(body):
                unfinished = None
                continue
            heading = _HEADING_MARKER.match(body)
            marker = heading or _LIST_MARKER.match(body)
            first = body.lstrip()[:1]
            table_row = first == "|"
            if unfinished and not marker and not table_row and (not first.isupper() or unfinished in ",;，；、"):
                blocks[-1] = (blocks[-1][0], end, False)
            else:
                blocks.append((start + (marker.end() if marker else 0), end, heading is not None))
            unfinished = None if heading or table_row else self._unfinished_tail(blocks[-1][0], end)
        return blocks

    def _unfinished_tail(self, start: int, end: int) -> str | None:
        """The last character of text[start:end] if it does not finish a sentence (or an intro ending in ":")."""
        tail = self._content_end(start, end)
        while tail > start and self.text[tail - 1] in CLOSERS + " \t":
            tail -= 1
        if tail == start or self.text[tail - 1] in _TERMINATORS + _CJK_TERMINATORS + ":：":
            return None
        return self.text[tail - 1]

    def _content_end(self, start: int, end: int) -> int:
        """Where text[start:end] ends without its trailing whitespace and attached spans.

        Lines holding only attached spans continue the line before them, so the stripping may run back
        over many lines; every position it passes is remembered, which keeps the whole answer's
        work linear.
        """
        passed = []
        position = end
        while (known := self._content_ends.get(position)) is None:
            passed.append(position)
            while position > start and self.text[position - 1].isspace():
                position -= 1
            span_start = self.attached_starts.get(position)
            if span_start is None or span_start < start:
                known = position
                break
            position = span_start
        for position in passed:
            self._content_ends[position] = known
        return known

    def _sentences(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """The sentences of the block text[start:end], going from one terminator or attached span to the next.

        The end of the closing punctuation after a terminator is kept while later terminators fall
        inside it, so that a run of them ("!!!…") is not looked through again for each one.
        """
        text = self.text
        sentence_start = i = start
        closers_end = start
        while (stop := _STOP.search(text, i, end)) is not None:
            i = stop.start()
            if text[i] == "[":
                span_end = self.attached.get(i)
                i = span_end if span_end is not None else i + 1
                continue
            closers_end = closers_end if i < closers_end else self._after_closers(i + 1, end)
            if text[i] in _CJK_TERMINATORS or self._ends_sentence(i, closers_end, start, end):
                boundary = self._after_citations(closers_end, end)
                yield sentence_start, boundary
                sentence_start = i = boundary
            elif not self._may_end(closers_end, end):  # "2.8", "...x": no terminator before it ends a sentence
                cjk = _CJK_STOP.search(text, i + 1, closers_end)
                i = cjk.start() if cjk else closers_end
            else:
                i += 1
        if sentence_start < end:
            yield sentence_start, end

    def _may_end(self, j: int, end: int) -> bool:
        """Whether a sentence may end before ``j``, where a terminator's closing punctuation ends: at the end of
        the block, or before a space or an attached span."""
        return j >= end or self.text[j].isspace() or j in self.attached

    def _word_start(self, end: int) -> int | None:
        """Where the word ending at ``end`` starts: the first letter of the run of letters, digits, ``_`` and
        ``.`` holding text[end - 1] (None: no such run, or no letter in it before ``end``)."""
        run = bisect_right(self._run_starts, end - 1) - 1
        if run < 0 or self._runs[run][1] < end:
            return None
        if run not in self._first_letters:
            letter = _LETTER.search(self.text, *self._runs[run])
            self._first_letters[run] = letter.start() if letter else None
        first = self._first_letters[run]
        return first if first is not None and first < end else None

    def _after_closers(self, j: int, end: int) -> int:
        while j < end and self.text[j] in _TERMINATORS + _CJK_TERMINATORS + CLOSERS:
            j += 1
        return j

    def _after_citations(self, j: int, end: int) -> int:
        """Past attached spans that follow a full stop: they belong to the sentence it ends."""
        k = j
        while True:
            while k < end and self.text[k] in " \t":
                k += 1
            span_end = self.attached.get(k)
            if span_end is None or span_end > end:
                return j
            j = k = span_end

    def _ends_sentence(self, i: int, j: int, start: int, end: int) -> bool:
        """Whether the terminator at ``i`` of the block text[start:end], its closers running to ``j``, ends
        its sentence."""
        text = self.text
        if not self._may_end(j, end):
            return False  # "2.8", "v2.0", "example.com", "e.g" inside
        if text[i] != ".":
            return True
        word_end = i - 1 if i > start and text[i - 1] == "\n" else i  # a full stop opening a line ends its word
        word_start = self._word_start(word_end)
        if word_start is None or word_end - word_start > _LONGEST_ABBREVIATION:
            return True
        before = text[word_start:word_end].lower()
        visible = _NEXT_VISIBLE.match(text, j, end)
        following = visible[1] if visible else ""
        if before in _ABBREVIATIONS:
            return False
        if before in _ABBREVIATIONS_BEFORE_NUMBER and following.isdigit():
            return False
        return not (before == "etc" and following.islower())

