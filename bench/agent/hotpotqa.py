"""Agentic retrieval on HotpotQA: does the offline agent keep both gold paragraphs more often than one search?

    python bench/agent/hotpotqa.py                    # dev500, the reported set (~10 min with the index cached)
    python bench/agent/hotpotqa.py --set train100     # the tuning set

For every question, over ONE real MCP server (``python -m mcp_server serve`` over stdio, as
a desktop host runs it) on the pooled paragraphs of the set (``hotpot_data.py``):

- **single-shot**: one ``hybrid_search`` for the question; its first 5 (10) distinct paragraphs;
- **agent**: the real agent loop (:class:`client_agent.loop.Agent`) with the offline back-end,
  default budgets; its final evidence set is :meth:`RunResult.evidence` at the same budget of
  5 (10) paragraphs, however many tool calls it made (the paragraphs its answer cites first,
  then the rest of what it retrieved by reciprocal-rank fusion).

Reported: supporting-paragraph recall — the share of questions with BOTH gold paragraphs in
the evidence — at 5 and 10; tool calls per question; and exact match / F1 (HotpotQA's
answer normalisation) of the agent's extractive answer, citations removed, for the record.

The first run indexes the set (dev500: ~10 min of embedding on 2 free cores, ~30 min on a
busy machine); later runs reuse ``bench/.cache/agent/``. Progress goes to stderr; the table
to stdout; per-question results to ``bench/agent/results-hotpotqa-<set>.json``; agent traces
to ``bench/.cache/agent/traces-<set>/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

for folder in (Path(__file__).resolve().parents[2], Path(__file__).resolve().parents[1], Path(__file__).resolve().parent):
    sys.path.insert(0, str(folder))  # this checkout's code (not another install), bench/, bench/agent/

from answer_match import exact_match, f1_score  # noqa: E402
from common import CACHE, REPO, log  # noqa: E402
from hotpot_data import SETS, HotpotSet, Question, load_set  # noqa: E402

from client_agent.offline.backend import OfflineBackend  # noqa: E402
from mcp_server.grounding.sentences import cited_ids  # noqa: E402
from client_agent.connection import ToolServer, connect  # noqa: E402
from client_agent.loop import Agent, RunResult  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402

BUDGETS = (5, 10)
SINGLE_SHOT_CHUNKS = 30
"""Chunks the single-shot search asks for: enough to hold 10 distinct paragraphs."""


@dataclass(frozen=True)
class Outcome:
    """One question's results."""

    question: Question
    single_shot: list[str]
    agent: list[str]
    tool_calls: int
    state: str
    answer: str

    def both(self, ranked: list[str], budget: int) -> bool:
        return self.question.gold <= set(ranked[:budget])

    def to_json(self) -> dict[str, Any]:
        plain = plain_answer(self.answer)
        return {
            "id": self.question.id, "gold": sorted(self.question.gold), "single_shot": self.single_shot,
            "agent": self.agent, "tool_calls": self.tool_calls, "state": self.state, "answer": plain,
            "em": exact_match(plain, self.question.answers), "f1": round(f1_score(plain, self.question.answers), 4),
        }


def server_env(settings: Settings) -> dict[str, str]:
    """The environment of the spawned server: this checkout's code serving ``settings``, nothing inherited."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    return {**inherited, **settings.to_env(), "PYTHONPATH": str(REPO)}


def paragraphs(keys: list[str]) -> list[str]:
    """Document ids of ``corpus:doc_id`` sources (SQL results, which have none, are dropped)."""
    return [key.split(":", 1)[1] for key in keys if ":" in key and not key.startswith("sql:")]


def plain_answer(answer: str) -> str:
    """The answer without its citation brackets."""
    for cid in cited_ids(answer):
        answer = answer.replace(cid, "")
    return " ".join(answer.replace("[]", " ").replace("[, ]", " ").split())


async def single_shot(server: ToolServer, question: str) -> list[str]:
    outcome = await server.call("hybrid_search", {"query": question, "top_k": SINGLE_SHOT_CHUNKS}, step=1)
    if outcome.is_error:
        raise RuntimeError(f"hybrid_search failed for {question!r}: {outcome.text}")
    return list(dict.fromkeys(item.citation["doc_id"] for item in outcome.evidence))[: max(BUDGETS)]


async def run_set(data: HotpotSet, limit: int | None) -> tuple[list[Outcome], float]:
    questions = data.questions[:limit] if limit else data.questions
    traces = CACHE / "agent" / f"traces-{data.name}"
    traces.mkdir(parents=True, exist_ok=True)
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    async with connect(server_env=server_env(data.settings)) as server:
        for number, question in enumerate(questions, start=1):
            shot = await single_shot(server, question.question)
            result: RunResult = await Agent(server, OfflineBackend()).run(
                question.question, traces / f"{question.id}.jsonl")
            outcomes.append(Outcome(question, shot, paragraphs(result.evidence(max(BUDGETS))),
                                    result.totals.tool_calls, result.state, result.answer))
            if number % 10 == 0 or number == len(questions):
                log(f"[{number}/{len(questions)}] {progress_line(outcomes)} ({time.perf_counter() - started:.0f} s)")
    return outcomes, time.perf_counter() - started


def summary(outcomes: list[Outcome]) -> dict[str, float]:
    n = len(outcomes)
    row: dict[str, float] = {}
    for budget in BUDGETS:
        row[f"single_shot_both_at_{budget}"] = sum(o.both(o.single_shot, budget) for o in outcomes) / n
        row[f"agent_both_at_{budget}"] = sum(o.both(o.agent, budget) for o in outcomes) / n
    row["agent_tool_calls_per_question"] = sum(o.tool_calls for o in outcomes) / n
    answers = [o.to_json() for o in outcomes]
    row["agent_answer_em"] = sum(a["em"] for a in answers) / n
    row["agent_answer_f1"] = sum(a["f1"] for a in answers) / n
    return {key: round(value, 4) for key, value in row.items()}


def progress_line(outcomes: list[Outcome]) -> str:
    row = summary(outcomes)
    return (f"both@5 single-shot {row['single_shot_both_at_5']:.1%} agent {row['agent_both_at_5']:.1%}; "
            f"both@10 {row['single_shot_both_at_10']:.1%} / {row['agent_both_at_10']:.1%}; "
            f"{row['agent_tool_calls_per_question']:.2f} calls/question")


def table(name: str, row: dict[str, float]) -> str:
    lines = [
        f"HotpotQA {name}: both gold paragraphs in the evidence kept",
        "",
        "| evidence budget | single-shot hybrid | offline agent | difference |",
        "|---|---:|---:|---:|",
    ]
    for budget in BUDGETS:
        single, agent = row[f"single_shot_both_at_{budget}"], row[f"agent_both_at_{budget}"]
        lines.append(f"| {budget} paragraphs | {single:.1%} | {agent:.1%} | {100 * (agent - single):+.1f} points |")
    lines += [
        "",
        f"Tool calls per question: single-shot 1, agent {row['agent_tool_calls_per_question']:.2f}. "
        f"Agent's extractive answers: EM {row['agent_answer_em']:.1%}, F1 {row['agent_answer_f1']:.1%}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=SETS, default="dev500")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions (a quick look)")
    parser.add_argument("--out", type=Path, default=None, help="default: bench/agent/results-hotpotqa-<set>.json")
    args = parser.parse_args()

    started = time.perf_counter()
    data = load_set(args.set)
    prepared = time.perf_counter() - started
    log(f"{len(data.questions)} questions; index ready in {prepared:.0f} s; one stdio server for all of them")
    outcomes, seconds = asyncio.run(run_set(data, args.limit))
    row = summary(outcomes)
    print(table(args.set, row))
    out = args.out or REPO / "bench" / "agent" / f"results-hotpotqa-{args.set}.json"
    report = {
        "set": args.set, "questions": len(outcomes), "summary": row,
        "seconds": {"index_preparation": round(prepared, 1), "questions": round(seconds, 1)},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "per_question": [o.to_json() for o in outcomes],
    }
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
