"""``rag-agent eval``: run a question set and report process health, result quality and cost.

A question set is JSONL, one object per line:

``question`` (required); ``id``; ``kind`` (a free label used to group the report, e.g.
``multi-hop``, ``sql``, ``conflict``, ``unanswerable``, ``no-retrieval``);
``expected_answer`` (a string, or a list of strings that must *all* appear in the answer —
numbers compare by value, so "1999" matches "1,999"); ``expected_state`` (e.g.
``insufficient`` for a question the knowledge cannot answer); ``expected_sources``
(``corpus:doc_id`` of documents the answer should cite); ``answer_sentences``, the source
sentences that answer it, each given by fragments that together identify it (``[["E-bike",
"650"]]`` for the price sheet's e-bike row); ``also_acceptable``, sentences that are not
needed but not wrong either; and ``answer_excludes``, fragments no answer sentence may hold
(the other rows of that price sheet: a whole table quoted for one row is not on point).

The report has three layers:

- **Process**: steps and tool calls per question, the tool-call mix, the share of runs whose
  last reflection said "sufficient", and how runs ended.
- **Quality**: answer match (all expected strings present), answered and matched (the run
  also ended ``answered``: a matching sentence quoted under "I could not find this" does not
  count), state match, source recall, the wrong-answer rate (questions expected to end ``insufficient`` that were answered
  instead), answer-sentence recall and precision on answered questions with labelled answer
  sentences (recall: the share of labelled sentences the answer quotes; precision: the share
  of the answer's cited sentences that are labelled — an unrelated or padding sentence lowers it),
  and citation recall and precision in the ALCE sense, judged by the project's own support
  check (:func:`mcp_server.grounding.support.supports`): a factual sentence counts toward recall
  when the concatenation of its cited texts supports it; a citation counts toward precision
  unless it is *irrelevant* — it does not support the sentence alone and the sentence's
  other citations support it without it. The support check tests numbers, codes and key
  terms; it cannot tell a true claim from a false one built from the same words.
- **Cost**: model tokens and wall time per answered question, and US dollars when the
  model's prices are given (:class:`Prices`).

The report names the back-end and the models that answered (as the servers reported them),
so reports of one question set on several back-ends compare side by side.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_server.citation_ids import CitationId, DocumentRef, parse_or_none
from mcp_server.grounding.sentences import remove_citations
from mcp_server.grounding.support import supports
from mcp_server.grounding.verdict import check_answer
from client_agent.errors import QuestionSetError
from client_agent.loop import RunResult
from client_agent.trace import read_trace


class EvalQuestion(BaseModel):
    """One line of a question set."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    id: str | None = None
    kind: str = "unlabelled"
    expected_answer: str | list[str] | None = None
    expected_state: str | None = None
    expected_sources: list[str] = Field(default_factory=list)
    answer_sentences: list[list[str]] = Field(default_factory=list)
    also_acceptable: list[list[str]] = Field(default_factory=list)
    answer_excludes: list[str] = Field(default_factory=list)

    @property
    def expected_parts(self) -> list[str]:
        if self.expected_answer is None:
            return []
        return [self.expected_answer] if isinstance(self.expected_answer, str) else self.expected_answer


def load_questions(path: Path) -> list[EvalQuestion]:
    """The questions of a JSONL file, validated; blank lines are skipped."""
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            questions.append(EvalQuestion.model_validate_json(line))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "line"
            raise QuestionSetError(f"{path}:{number}: {where}: {problem['msg']}. Each line must be a JSON object "
                                   "with at least a non-empty \"question\".") from exc
    if not questions:
        raise QuestionSetError(f"{path} holds no questions; write one JSON object per line.")
    return questions


@dataclass
class Outcome:
    """One question's run, scored."""

    question: EvalQuestion
    result: RunResult
    answer_match: bool | None
    state_match: bool | None
    source_recall: float | None
    citation_recall: float | None
    citation_precision: float | None
    answer_sentences: AnswerSentences | None = None
    tools: Counter[str] = field(default_factory=Counter)
    reflected_sufficient: bool | None = None
    backend: str = ""
    models: list[str] = field(default_factory=list)
    """The models that answered this question's model calls, as the server named them."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.question.id, "kind": self.question.kind, "question": self.question.question,
            "state": self.result.state, "answer": self.result.answer,
            "answer_match": self.answer_match, "state_match": self.state_match,
            "source_recall": self.source_recall, "citation_recall": self.citation_recall,
            "citation_precision": self.citation_precision,
            "answer_sentences": self.answer_sentences.to_dict() if self.answer_sentences else None,
            "tools": dict(self.tools),
            "reflected_sufficient": self.reflected_sufficient, "totals": self.result.totals.to_dict(),
            "backend": self.backend, "models": self.models, "trace": str(self.result.trace),
        }


def score(question: EvalQuestion, result: RunResult) -> Outcome:
    events = read_trace(result.trace)
    tools = Counter(e["tool"] for e in events if e["event"] == "tool_call" and not e.get("refused"))
    verdicts = [e["verdict"] for e in events if e["event"] == "reflection" and "verdict" in e]
    start = next((e for e in events if e["event"] == "run_start"), {})
    models = list(dict.fromkeys(e["model"] for e in events if e["event"] == "model_call" and e.get("model")))
    recall, precision = citation_quality(result)
    cited_docs = {_source_of(c["id"]) for c in result.citations}
    return Outcome(
        question=question,
        result=result,
        answer_match=answer_matches(result.answer, question.expected_parts) if question.expected_parts else None,
        state_match=(result.state == question.expected_state) if question.expected_state else None,
        source_recall=(sum(_source_of(s) in cited_docs for s in question.expected_sources)
                       / len(question.expected_sources)
                       if question.expected_sources else None),
        citation_recall=recall,
        citation_precision=precision,
        answer_sentences=answer_sentences(question, result) if question.answer_sentences else None,
        tools=tools,
        reflected_sufficient=verdicts[-1]["sufficient"] if verdicts else None,
        backend=str(start.get("backend", "")),
        models=models,
    )


def _source_of(ref: str) -> CitationId | None:
    """The document a citation id or document ref names (a SQL id names itself); None when ``ref`` is neither."""
    cited = parse_or_none(ref)
    return cited.document if isinstance(cited, DocumentRef) else cited


@dataclass(frozen=True)
class AnswerSentences:
    """How the cited sentences of an answer compare with a question's labelled answer sentences."""

    labelled: int
    """Labelled answer sentences of the question."""
    found: int
    """Of those, how many the answer quotes (0 unless the run ended ``answered``)."""
    quoted: int
    """Cited sentences in the answer (0 unless the run ended ``answered``)."""
    on_point: int
    """Of those, how many are labelled answer sentences (or also acceptable)."""

    def to_dict(self) -> dict[str, int]:
        return {"labelled": self.labelled, "found": self.found, "quoted": self.quoted, "on_point": self.on_point}


def answer_sentences(question: EvalQuestion, result: RunResult) -> AnswerSentences:
    """The answer's cited sentences against the question's labels (a sentence matches a label when it
    holds all the label's fragments and none of ``answer_excludes``, compared as :func:`answer_matches` does)."""
    quoted = [_normalise(remove_citations(s.text)) for s in check_answer(result.answer, result.cited_texts).sentences
              if s.citations] if result.state == "answered" else []
    labels = [[_normalise(f) for f in label] for label in question.answer_sentences]
    acceptable = labels + [[_normalise(f) for f in label] for label in question.also_acceptable]
    excluded = [_normalise(f) for f in question.answer_excludes]

    def holds(sentence: str, label: list[str]) -> bool:
        return all(re.search(_whole(f), sentence) for f in label) and not any(
            re.search(_whole(f), sentence) for f in excluded)

    return AnswerSentences(
        labelled=len(labels), found=sum(any(holds(s, label) for s in quoted) for label in labels),
        quoted=len(quoted), on_point=sum(any(holds(s, label) for label in acceptable) for s in quoted))


def answer_matches(answer: str, expected: list[str]) -> bool:
    """True when every expected string appears in the answer as a whole word or number
    (case-insensitive; thousands separators ignored, so "1999" matches "1,999")."""
    normal = _normalise(answer)
    return all(re.search(_whole(_normalise(part)), normal) for part in expected)


def _whole(part: str) -> str:
    """A pattern for ``part`` that does not match inside a longer word or number (edges in Latin script)."""
    before = r"(?<![A-Za-z0-9_.])" if part[:1].isascii() and part[:1].isalnum() else ""
    after = r"(?![A-Za-z0-9_])" if part[-1:].isascii() and part[-1:].isalnum() else ""
    return before + re.escape(part) + after


def _normalise(text: str) -> str:
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text.lower())
    return re.sub(r"\s+", " ", text)


def citation_quality(result: RunResult) -> tuple[float | None, float | None]:
    """ALCE-style citation recall and precision of the answer (None when it makes no factual claims)."""
    if result.verification.get("checked") is False:
        return None, None  # answered without retrieval: nothing to cite
    check = check_answer(result.answer, result.cited_texts)
    factual = [s for s in check.sentences if s.factual]
    if not factual:
        return None, None
    supported = 0
    citations = irrelevant = 0
    for sentence in factual:
        texts = [result.cited_texts[c] for c in sentence.citations if c in result.cited_texts]
        if texts and supports(sentence.text, "\n".join(texts)).supported:
            supported += 1
        for index, text in enumerate(texts):
            citations += 1
            others = texts[:index] + texts[index + 1 :]
            alone = supports(sentence.text, text).supported
            if not alone and others and supports(sentence.text, "\n".join(others)).supported:
                irrelevant += 1
    return supported / len(factual), (1 - irrelevant / citations) if citations else None


Ask = Callable[[EvalQuestion], Awaitable[RunResult]]


async def evaluate(questions: list[EvalQuestion], ask: Ask, progress: Callable[[str], None]) -> list[Outcome]:
    outcomes = []
    for number, question in enumerate(questions, start=1):
        progress(f"[{number}/{len(questions)}] {question.question}")
        outcomes.append(score(question, await ask(question)))
    return outcomes


@dataclass(frozen=True)
class Prices:
    """What a model's tokens cost, in US dollars per million input and per million output tokens."""

    input_per_mtok: float
    output_per_mtok: float

    def usd(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1_000_000


def summarise(outcomes: list[Outcome], prices: Prices | None = None) -> dict[str, Any]:
    """The report: who answered, process, quality and cost over all runs, and quality per kind."""
    runs = len(outcomes)
    answered = [o for o in outcomes if o.result.state == "answered"]
    tools: Counter[str] = sum((o.tools for o in outcomes), Counter())
    reflected = [o.reflected_sufficient for o in outcomes if o.reflected_sufficient is not None]
    return {
        "backend": ", ".join(sorted({o.backend for o in outcomes if o.backend})),
        "models": sorted({m for o in outcomes for m in o.models}),
        "runs": runs,
        "process": {
            "steps_per_run": _mean([o.result.totals.steps for o in outcomes]),
            "tool_calls_per_run": _mean([o.result.totals.tool_calls for o in outcomes]),
            "tool_mix": dict(tools.most_common()),
            "reflection_sufficient_share": _mean([float(r) for r in reflected]),
            "states": dict(Counter(o.result.state for o in outcomes).most_common()),
        },
        "quality": _quality(outcomes),
        "by_kind": {kind: _quality([o for o in outcomes if o.question.kind == kind])
                    for kind in sorted({o.question.kind for o in outcomes})},
        "cost": {
            "input_tokens_per_answered": _mean([o.result.totals.input_tokens for o in answered]),
            "output_tokens_per_answered": _mean([o.result.totals.output_tokens for o in answered]),
            "seconds_per_answered": _mean([o.result.totals.seconds for o in answered]),
            "seconds_total": round(sum(o.result.totals.seconds for o in outcomes), 2),
            **(_dollars(outcomes, answered, prices) if prices else {}),
        },
    }


def _dollars(outcomes: list[Outcome], answered: list[Outcome], prices: Prices) -> dict[str, Any]:
    def usd(outcome: Outcome) -> float:
        return prices.usd(outcome.result.totals.input_tokens, outcome.result.totals.output_tokens)

    return {
        "usd_per_answered": round(sum(map(usd, answered)) / len(answered), 6) if answered else None,
        "usd_total": round(sum(map(usd, outcomes)), 6),
        "prices_usd_per_mtok": {"input": prices.input_per_mtok, "output": prices.output_per_mtok},
    }


def _quality(outcomes: list[Outcome]) -> dict[str, Any]:
    labelled = [o.answer_sentences for o in outcomes if o.answer_sentences is not None]
    declinable = [o for o in outcomes if o.question.expected_state == "insufficient"]
    return {
        "runs": len(outcomes),
        "answer_match": _share([o.answer_match for o in outcomes]),
        "answered_and_matched": _share([o.answer_match and o.result.state == "answered"
                                        if o.answer_match is not None else None for o in outcomes]),
        "state_match": _share([o.state_match for o in outcomes]),
        "source_recall": _mean([o.source_recall for o in outcomes if o.source_recall is not None]),
        "citation_recall": _mean([o.citation_recall for o in outcomes if o.citation_recall is not None]),
        "citation_precision": _mean([o.citation_precision for o in outcomes if o.citation_precision is not None]),
        "wrong_answer_rate": _share([o.result.state == "answered" for o in declinable]),
        "answer_sentence_recall": _ratio(sum(a.found for a in labelled), sum(a.labelled for a in labelled)),
        "answer_sentence_precision": _ratio(sum(a.on_point for a in labelled), sum(a.quoted for a in labelled)),
    }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


def _share(flags: list[bool | None]) -> float | None:
    known = [f for f in flags if f is not None]
    return round(sum(known) / len(known), 3) if known else None


def _mean(values: list[float] | list[int]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def render_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables, for bench/README.md."""
    p, c = report["process"], report["cost"]
    models = ", ".join(report["models"]) or "no model"
    lines = [
        f"Back-end: {report['backend'] or 'unknown'} ({models}).",
        "",
        f"Runs: {report['runs']}. Steps/run {p['steps_per_run']}, tool calls/run {p['tool_calls_per_run']}, "
        f"reflection said sufficient in {_pct(p['reflection_sufficient_share'])} of runs that reflected.",
        "",
        "End states: " + ", ".join(f"{k} {v}" for k, v in p["states"].items()) + ". Tool mix: "
        + ", ".join(f"{k} {v}" for k, v in p["tool_mix"].items()) + ".",
        "",
        "| kind | runs | answer match | answered and matched | state match | source recall | citation recall | citation precision "
        "| wrong answers | answer-sentence recall | answer-sentence precision |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = {**report["by_kind"], "**all**": report["quality"]}
    for kind, q in rows.items():
        lines.append(f"| {kind} | {q['runs']} | {_pct(q['answer_match'])} | {_pct(q['answered_and_matched'])} | "
                     f"{_pct(q['state_match'])} | "
                     f"{_pct(q['source_recall'])} | {_pct(q['citation_recall'])} | {_pct(q['citation_precision'])} | "
                     f"{_pct(q['wrong_answer_rate'])} | {_pct(q['answer_sentence_recall'])} | "
                     f"{_pct(q['answer_sentence_precision'])} |")
    lines += ["", f"Cost per answered question: {c['input_tokens_per_answered']} input + "
              f"{c['output_tokens_per_answered']} output tokens, {c['seconds_per_answered']} s "
              f"(total {c['seconds_total']} s)."]
    if "usd_total" in c:
        lines[-1] += f" Dollars: {c['usd_per_answered']} per answered question, {c['usd_total']} in all."
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def write_report(outcomes: list[Outcome], path: Path, prices: Prices | None = None) -> dict[str, Any]:
    report = {**summarise(outcomes, prices), "questions": [o.to_dict() for o in outcomes]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return report
