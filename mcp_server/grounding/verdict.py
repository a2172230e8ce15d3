"""The last step of the citation check: each sentence's verdict, the answer's, and enforcing it.

Answers cite inline with citation ids in square brackets — ``[handbook:hr/leave-policy#2]``,
``[sql:company:1a2b3c4d]``, several in one bracket (``[a:x#1, a:y#2]`` or ``;``) or adjacent
brackets. The check runs in four steps, each a module entered once, in order:
:mod:`~mcp_server.grounding.sentences` (the answer's sentences and citation brackets) →
:mod:`~mcp_server.grounding.claims` (what each sentence claims, and what each cited text holds)
→ :mod:`~mcp_server.grounding.support` (whether the cited texts hold the claims) → this module,
whose :func:`check_answer` checks each sentence against ``evidence``, the text of every citation
id a tool returned in this run:

* **Fabricated ids.** Every cited id must be a key of ``evidence``; any other id is reported, in
  every sentence, factual or not, as the server writes ids (:mod:`mcp_server.citation_ids`: an
  id written with its file name unescaped is compared, and reported, escaped).
* **Uncited claims.** Every *factual* sentence must cite at least one id from this run
  (:func:`~mcp_server.grounding.claims.is_factual` decides which are). A sentence is not factual when it is a question, a statement about the evidence itself ("I
  could not find …", "The knowledge base does not say …", "No source mentions …"), a heading
  or list intro ending with ":", or a short discourse line with no content words ("Here is
  what I found."). But any sentence other than a question that contains a number is factual:
  an uncited number is never accepted.
* **Support.** The texts of a sentence's cited ids, taken together, must contain every number,
  code, date and calendar name in the sentence and at least half of its other key terms
  (:mod:`~mcp_server.grounding.support` has the rules).

What it does **not** catch, by design of a lexical check: a wrong claim assembled from words
and numbers that all occur in the cited text ("10 days after 5 years" when the text says
"10 days after 1 year … 20 days after 5 years"), flipped negations or modality ("must" vs
"must not"), wrong relations between correct entities, a paraphrase sharing too few words
with its source (a *false alarm*: the sentence fails although it is right), and claims
inside a sentence that is exempt as a statement about the evidence and has no number. A
question is exempt even with numbers in it (it asserts nothing). Numbers spelled as words in
the answer ("three") are key terms, not numbers, so they need no citation of their own.

:func:`enforce` is the last resort after revisions: it removes (or marks ``[unsupported]``)
each factual sentence that is uncited or unsupported, strips fabricated ids from the
sentences it keeps, and leaves everything else verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp_server.analyzer.sentences import LINE_MARKER, SentenceSpan
from mcp_server.grounding.claims import SentenceClaims, claims_of_answer
from mcp_server.grounding.sentences import citation_brackets, read_answer, unique
from mcp_server.grounding.support import MIN_TERM_SHARE, Support, support_of_answer

# --------------------------------------------------------------------------- the check

SentenceStatus = Literal["supported", "unsupported", "uncited", "not_factual"]


@dataclass(frozen=True)
class SentenceCheck:
    """The verdict on one sentence of the answer."""

    text: str
    citations: list[str]
    factual: bool
    problems: list[str]
    unknown_ids: list[str]
    support: Support | None
    """None when the sentence is not factual or cites nothing from this run."""
    start: int
    end: int
    """Where the sentence is in the answer (for :func:`enforce`)."""

    @property
    def status(self) -> SentenceStatus:
        if not self.factual:
            return "not_factual"
        if self.support is None:
            return "uncited"
        return "supported" if self.support.supported else "unsupported"

    @property
    def passed(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": self.citations,
            "factual": self.factual,
            "status": self.status,
            "problems": self.problems,
            "support": self.support.to_dict() if self.support else None,
        }


@dataclass(frozen=True)
class CitationCheck:
    """The citation check of one answer: per-sentence verdicts and what failed."""

    answer: str
    sentences: list[SentenceCheck]

    @property
    def passed(self) -> bool:
        return all(sentence.passed for sentence in self.sentences)

    @property
    def unknown_ids(self) -> list[str]:
        return unique([cid for sentence in self.sentences for cid in sentence.unknown_ids])

    @property
    def failures(self) -> list[SentenceCheck]:
        return [sentence for sentence in self.sentences if not sentence.passed]

    def _count(self, status: SentenceStatus) -> int:
        return sum(1 for sentence in self.sentences if sentence.status == status)

    @property
    def factual(self) -> int:
        return sum(1 for sentence in self.sentences if sentence.factual)

    @property
    def supported(self) -> int:
        return self._count("supported")

    @property
    def unsupported(self) -> int:
        return self._count("unsupported")

    @property
    def uncited(self) -> int:
        return self._count("uncited")

    def feedback(self) -> str:
        """What a revision must fix: each failing sentence, quoted, with its specific failures."""
        if self.passed:
            return "The answer passed the citation check."
        lines = ["Your answer failed the citation check. These sentences must be fixed:"]
        for number, sentence in enumerate(self.failures, start=1):
            lines.append(f'{number}. "{sentence.text}" — ' + "; ".join(sentence.problems))
        if self.unknown_ids:
            lines.append(
                "These ids were never returned by a tool in this run, so they must not be cited: "
                + ", ".join(self.unknown_ids)
            )
        lines.append(
            "Cite only ids exactly as a tool returned them in this run. Give every factual sentence a "
            "citation whose text contains its numbers and key terms; drop a claim you cannot support, "
            "or say that the sources do not cover it. Reply with the whole revised answer."
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (for the trace and ``--json``'s ``verification``)."""
        return {
            "passed": self.passed,
            "sentences": len(self.sentences),
            "factual": self.factual,
            "supported": self.supported,
            "unsupported": self.unsupported,
            "uncited": self.uncited,
            "unknown_ids": self.unknown_ids,
            "checks": [sentence.to_dict() for sentence in self.sentences],
        }


def check_answer(
    answer: str, evidence: Mapping[str, str], spans: Sequence[SentenceSpan] | None = None
) -> CitationCheck:
    """Check every sentence of ``answer`` against ``evidence`` (citation id → text, all ids returned in this run);
    ``spans`` are ``sentence_spans(answer)`` when the caller has them already.

    The steps run once each, in order: the answer's sentences and their citations
    (:func:`~mcp_server.grounding.sentences.read_answer`), what each sentence claims
    (:func:`~mcp_server.grounding.claims.claims_of_answer`), whether the cited texts hold it
    (:func:`~mcp_server.grounding.support.support_of_answer`), then each sentence's verdict here.
    A sentence's problems read ``cites unknown id X (not returned by any tool in this run)``,
    ``no citation``, ``number N not in the cited text`` and ``key terms "a", "b" not in the
    cited text``; the answer passes when no sentence has any.

    The work is linear in the answer's length plus the length of the texts it cites (each is
    indexed once, however many sentences cite it), and it stops with DeadlineExceeded, between
    two sentences, once the :func:`~mcp_server.grounding.deadline.current_deadline` has passed.
    """
    claimed = claims_of_answer(read_answer(answer, spans))
    supports = support_of_answer(claimed, evidence)
    return CitationCheck(answer, [_verdict(sentence, support, evidence) for sentence, support in zip(claimed, supports)])


def _verdict(claimed: SentenceClaims, support: Support | None, evidence: Mapping[str, str]) -> SentenceCheck:
    """One sentence's verdict from its citations, whether it is factual, and its support."""
    sentence = claimed.sentence
    unknown = [cid for cid in sentence.ids if cid not in evidence]
    problems = [f"cites unknown id {cid} (not returned by any tool in this run)" for cid in unknown]
    if support is not None:
        problems += _support_problems(support)
    elif claimed.factual and not sentence.ids:
        problems.append("no citation")
    span = sentence.span
    return SentenceCheck(sentence.text, sentence.ids, claimed.factual, problems, unknown, support, span.start, span.end)


def _support_problems(support: Support) -> list[str]:
    problems = [f"number {number} not in the cited text" for number in support.missing_numbers]
    missing = list(support.missing_codes)
    if support.coverage < MIN_TERM_SHARE:
        missing += support.missing_terms
    if missing:
        quoted = ", ".join(f'"{term}"' for term in missing)
        problems.append(f"key terms {quoted} not in the cited text")
    return problems


# --------------------------------------------------------------------------- enforcement

EnforceMode = Literal["remove", "mark"]
UNSUPPORTED_MARK = "[unsupported]"
_EMPTY_LINE_LEFT = re.compile(rf"[ \t]*(?:{LINE_MARKER}|#{{1,6}})?[ \t]*")
"""What is left of a line whose only sentence was removed: it goes too."""


@dataclass(frozen=True)
class Enforced:
    """An answer after :func:`enforce`: its new text and what was taken out or flagged."""

    answer: str
    mode: EnforceMode
    removed: list[str]
    marked: list[str]
    stripped_ids: list[str]
    """Unknown ids deleted from sentences that were kept."""

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "removed": self.removed, "marked": self.marked, "stripped_ids": self.stripped_ids}


def enforce(answer: str, check: CitationCheck, mode: EnforceMode) -> Enforced:
    """Remove (or mark ``[unsupported]``) the uncited and unsupported factual sentences of ``answer``.

    Fabricated ids are deleted from every sentence that stays (a bracket left empty goes with
    the space before it); all other text stays verbatim. A line left with nothing but its
    list marker is dropped.
    """
    if check.answer != answer:
        raise ValueError("enforce() needs the answer that check_answer() checked; run the check on this answer first")
    failing = [s for s in check.sentences if s.status in ("uncited", "unsupported")]
    kept = [s for s in check.sentences if s not in failing]
    edits: list[tuple[int, int, str]] = []
    stripped: list[str] = []
    for sentence in kept if mode == "remove" else check.sentences:
        edits += _strip_unknown(answer, sentence, stripped)
    if mode == "mark":
        edits += [(s.start, s.start, UNSUPPORTED_MARK + " ") for s in failing]
        return Enforced(_apply(answer, edits), mode, [], [s.text for s in failing], unique(stripped))
    edits += [(start, end, "") for start, end in _removal_ranges(answer, failing)]
    return Enforced(_apply(answer, edits), mode, [s.text for s in failing], [], unique(stripped))


def _strip_unknown(answer: str, sentence: SentenceCheck, stripped: list[str]) -> list[tuple[int, int, str]]:
    edits = []
    unknown = set(sentence.unknown_ids)
    for bracket in citation_brackets(answer[sentence.start : sentence.end]):
        if not unknown & set(bracket.ids):
            continue
        start, end = sentence.start + bracket.start, sentence.start + bracket.end
        stripped += [cid for cid in bracket.ids if cid in unknown]
        remaining = [cid for cid in bracket.ids if cid not in unknown]
        if remaining:
            edits.append((start, end, "[" + ", ".join(remaining) + "]"))
        else:
            while start > sentence.start and answer[start - 1] in " \t":
                start -= 1
            edits.append((start, end, ""))
    return edits


def _removal_ranges(answer: str, failing: list[SentenceCheck]) -> list[tuple[int, int]]:
    """Ranges to delete: runs of adjacent failing sentences, with the whitespace or line they leave."""
    runs: list[list[int]] = []
    for sentence in sorted(failing, key=lambda s: s.start):
        if runs and not answer[runs[-1][1] : sentence.start].strip():
            runs[-1][1] = sentence.end
        else:
            runs.append([sentence.start, sentence.end])
    ranges = []
    for start, end in runs:
        line_start = answer.rfind("\n", 0, start) + 1
        line_end = answer.find("\n", end)
        line_end = len(answer) if line_end == -1 else line_end
        if _EMPTY_LINE_LEFT.fullmatch(answer[line_start:start]) and not answer[end:line_end].strip():
            ranges.append((line_start, min(line_end + 1, len(answer))))  # the whole line goes
            continue
        while end < line_end and answer[end] in " \t":
            end += 1
        if end == line_end:
            while start > line_start and answer[start - 1] in " \t":
                start -= 1
        ranges.append((start, end))
    return ranges


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each span ``[start, end)`` of ``edits`` (which do not overlap) replaced."""
    parts, done = [], 0
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1])):
        parts += [text[done:start], replacement]
        done = end
    return "".join(parts) + text[done:]
