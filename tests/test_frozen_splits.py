"""The agent question sets' test parts are frozen (issue 33): nothing is tuned on them, so a change to one
must be a deliberate, visible act — updating the checksum here — not a side effect of tuning.

Also checks that the parts are the documented split of each set (``bench/agent/split_questions.py``):
together they are the set, with no question in both, and no document's questions straddle them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

AGENT_BENCH = Path(__file__).resolve().parents[1] / "bench" / "agent"
FROZEN = {
    "bundled": "64156a58cddfa86bfaebab04b2f518bce334dc953e2bd993bf210a992c25a89f",
    "evidence-bundled": "9c2830f4602742f1c054dcbd1da285038f543402490841fc5cbbe29602390d17",
    "evidence-folder": "36d579fc83520ab525715513523fc910f1a5bc6bd56dfe9d446583a0a4faa061",
    "paraphrase": "b622c337d8aa8d888b66c60c3cb24d59b6747f4ddb82fd59319161672dd40409",
    "studio": "9bafc926d480fc9e7922c25c2790a17dc4948cfb2418c09dd6a7e20c6cca4888",
}


def split_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("split_questions", AGENT_BENCH / "split_questions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_the_test_part_is_unchanged(name: str) -> None:
    test_part = AGENT_BENCH / "splits" / f"{name}.test.jsonl"
    assert hashlib.sha256(test_part.read_bytes()).hexdigest() == FROZEN[name]


@pytest.mark.parametrize("name", sorted(FROZEN))
def test_the_parts_are_the_documented_split_of_the_whole_set(name: str) -> None:
    script = split_script()
    assert set(script.SETS) == set(FROZEN)  # every set is split, and every split set is frozen
    whole = read(script.SETS[name])
    development, test = (read(AGENT_BENCH / "splits" / f"{name}.{part}.jsonl") for part in ("dev", "test"))
    assert (development, test) == script.split(whole)
    assert sorted(str(q["id"]) for q in development + test) == sorted(str(q["id"]) for q in whole)
    documents = [{json.dumps(sorted(q.get("expected_sources") or [])) for q in part} - {"[]"} for part in (development, test)]
    assert not documents[0] & documents[1]
    assert 0.3 < len(test) / len(whole) < 0.7
