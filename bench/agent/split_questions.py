"""Split every agent question set into a development part and a frozen test part.

    python bench/agent/split_questions.py          # writes bench/agent/splits/<set>.dev.jsonl and .test.jsonl

Rules, thresholds and model choices for the offline agent are fitted on the ``.dev`` files; the
``.test`` files are for reporting only, and ``tests/test_frozen_splits.py`` holds their checksums,
so a change to a test part shows up in review. The split is deterministic: questions are grouped by
the documents they expect (``expected_sources``; a question without them is its own group), so that
questions about the same document never straddle the split, and within each kind (a group's first
question's) the groups, in the order of their key's SHA-256, go to whichever part has fewer
questions of that kind. Large groups (the leave policy's many questions) make a part smaller than half.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SETS = {
    "bundled": HERE / "bundled-questions.jsonl",
    "paraphrase": HERE / "paraphrase-questions.jsonl",
    "evidence-bundled": HERE / "evidence-bundled-questions.jsonl",
    "evidence-folder": HERE / "evidence-folder-questions.jsonl",
    "studio": HERE / "studio-questions.jsonl",
}
SPLITS = HERE / "splits"


def split(questions: list[dict[str, object]]) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(development, test), each in the set's own order."""
    groups: dict[str, list[int]] = defaultdict(list)
    for index, question in enumerate(questions):
        sources = question.get("expected_sources")
        groups[json.dumps(sorted(sources)) if isinstance(sources, list) and sources else str(question["id"])].append(index)
    part_of: dict[int, str] = {}
    counts: dict[tuple[str, str], int] = defaultdict(int)
    kind_of = {key: str(questions[members[0]].get("kind", "unlabelled")) for key, members in groups.items()}
    for key in sorted(groups, key=lambda k: (kind_of[k], hashlib.sha256(k.encode()).hexdigest())):
        kind, members = kind_of[key], groups[key]
        part = "test" if counts[(kind, "test")] < counts[(kind, "dev")] else "dev"
        counts[(kind, part)] += len(members)
        part_of.update(dict.fromkeys(members, part))
    development = [q for i, q in enumerate(questions) if part_of[i] == "dev"]
    return development, [q for i, q in enumerate(questions) if part_of[i] == "test"]


def main() -> None:
    SPLITS.mkdir(exist_ok=True)
    for name, path in SETS.items():
        questions = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for part, chosen in zip(("dev", "test"), split(questions), strict=True):
            target = SPLITS / f"{name}.{part}.jsonl"
            target.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in chosen), encoding="utf-8")
            print(f"{target.relative_to(HERE.parents[1])}: {len(chosen)} questions")


if __name__ == "__main__":
    main()
