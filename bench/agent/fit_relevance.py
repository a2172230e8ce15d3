"""Fit the offline agent's relevance thresholds on the development splits (never the test parts).

    RAGMCP_DATA_DIR=... python bench/agent/fit_relevance.py run bench/agent/splits/bundled.dev.jsonl /tmp/fit/bundled
    python bench/agent/fit_relevance.py table /tmp/fit/*

``run`` evaluates a split at the current thresholds and records each question's lowest best score over its parts
(the evidence gathered depends a little on the threshold, since a part the model finds answered is not searched
further, so the table is exact at the current cut and close to it elsewhere)
(``<out>.json`` is the eval report, ``<out>.scores.json`` the scores). ``table`` prints, for each candidate
threshold, how many unanswerable questions would be answered and how many answerable ones answered on point
(answer matched, or an on-point answer sentence); questions answered by arithmetic, a tier or
numbered steps are decided without the model and count as not answered here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

UNANSWERABLE = {"unanswerable"}


def run(split: str, out: str) -> None:
    from client_agent.cli import main
    from client_agent.offline import extractive, relevance

    best: dict[str, float] = {}

    def answers(question: str, score: float) -> bool:
        best[question] = max(score, best.get(question, -1e9))
        return relevance.answers(question, score)

    setattr(extractive, "answers", answers)  # record instead of deciding
    try:
        main(["eval", "--backend", "offline", split, "-o", f"{out}.json"], standalone_mode=False)
    finally:
        Path(f"{out}.scores.json").write_text(json.dumps(best, ensure_ascii=False, indent=0), encoding="utf-8")


def table(outs: list[str]) -> None:
    rows: list[tuple[str, bool, float | None, bool]] = []
    for out in outs:
        report = json.loads(Path(f"{out}.json").read_text(encoding="utf-8"))
        best = json.loads(Path(f"{out}.scores.json").read_text(encoding="utf-8"))
        for q in report["questions"]:
            parts = [score for text, score in best.items() if text in q["question"] or q["question"] in text]
            on_point = bool(q.get("answer_match")) or (q.get("answer_sentences") or {}).get("on_point", 0) > 0
            rows.append((q["question"], q["kind"] in UNANSWERABLE, min(parts, default=None), on_point))
    chinese = [r for r in rows if sum("\u4e00" <= c <= "\u9fff" for c in r[0]) > len(r[0]) / 4]
    for name, subset, cuts in (("English", [r for r in rows if r not in chinese], [x / 10 for x in range(0, 90, 5)]),
                               ("Chinese", chinese, [x / 100 for x in range(60, 95, 3)])):
        unanswerable = [r for r in subset if r[1]]
        answerable = [r for r in subset if not r[1]]
        print(f"{name}: {len(unanswerable)} unanswerable, {len(answerable)} answerable")
        for cut in cuts:
            wrong = sum(r[2] is not None and r[2] >= cut for r in unanswerable)
            good = sum(r[2] is not None and r[2] >= cut and r[3] for r in answerable)
            print(f"  {cut:5.2f}: unanswerable answered {wrong}, answerable answered on point {good}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        run(sys.argv[2], sys.argv[3])
    else:
        table(sys.argv[2:])
