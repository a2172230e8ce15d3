"""check_answer's detection rate on corrupted answers and its latency, over the bundled corpora.

Correct answers are made by script from the index: sentences of chunks that state a number,
quoted verbatim and cited with their chunk's id, ten sentences from ten chunks per answer.
Each corrupted answer changes one sentence of a correct one:

* ``number``: a number of the sentence changed (+7, to a value absent from the cited chunk);
* ``wrong_id``: the citation swapped for another chunk's id whose text lacks the sentence's numbers;
* ``fabricated_id``: the citation swapped for an id that does not exist;
* ``uncited``: the citation removed.

A corruption is detected when the corrupted answer fails the check (its correct original passes,
or it counts as a false alarm: a correct answer that does not pass). Latency: tools.check_answer on each correct answer (the tool's work without
the transport), median and p95 over the answers, after one warm-up.

    .venv/bin/python bench/grounding/check_answer.py
"""

from __future__ import annotations

import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import CACHE, REPO  # noqa: E402

from mcp_server.grounding.claims import claims_of  # noqa: E402
from mcp_server.grounding.sentences import sentence_spans  # noqa: E402
from mcp_server.indexing.ingest import ingest  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402
from mcp_server.surface.tools import RetrievalTools  # noqa: E402

CORPORA = ["handbook", "engineering", "products", "reports", "support"]
SENTENCES = 10
NUMBER = re.compile(r"(?<![\w.,])\d+(?![\w.,]*\d)")
RESULTS = Path(__file__).with_name("results.json")


def chunks(tools: RetrievalTools) -> dict[str, str]:
    """Every chunk of the bundled corpora: citation id -> text."""
    texts: dict[str, str] = {}
    after = None
    while page := tools.document_page(None, after, 200):
        for corpus, doc_id, _ in page:
            document = tools.retriever.documents.get_document(f"{corpus}:{doc_id}", corpus=corpus)
            for span in document.chunks:
                texts[span.citation_id] = document.text[span.char_start : span.char_end]
        after = page[-1][:2]
    return texts


def numbered_sentences(texts: dict[str, str]) -> list[tuple[str, str]]:
    """(citation id, sentence) for one-line sentences of chunks that state a number."""
    found = []
    for cid, text in texts.items():
        for span in sentence_spans(text):
            sentence = " ".join(text[span.start : span.end].split())
            if 40 <= len(sentence) <= 300 and NUMBER.search(sentence) and claims_of(sentence).states_number:
                if not sentence.startswith(("#", "|", "-")) and len(sentence_spans(sentence)) == 1:
                    found.append((cid, sentence))
                    break
    return found


def main() -> None:
    settings = Settings(data_dir=CACHE / "grounding", corpora=[REPO / "corpora" / name for name in CORPORA])
    ingest(settings)
    tools = RetrievalTools.open(settings)
    texts = chunks(tools)
    pool = numbered_sentences(texts)
    rng = random.Random(26)
    answers = []
    for _ in range(60):
        picked = rng.sample(pool, SENTENCES)
        answers.append(picked)
    render = lambda parts: " ".join(f"{s.rstrip('.')} [{cid}]." for cid, s in parts)  # noqa: E731
    false_alarms = sum(1 for parts in answers if not tools.check_answer(render(parts), None).passed)
    detected: dict[str, list[bool]] = {"number": [], "wrong_id": [], "fabricated_id": [], "uncited": []}
    for parts in answers:
        index = rng.randrange(SENTENCES)
        cid, sentence = parts[index]
        numbers = NUMBER.findall(sentence)
        number = rng.choice(numbers)
        changed = str(int(number) + 7)
        cases = {}
        if changed not in texts[cid]:
            pattern = rf"(?<![\w.,]){re.escape(number)}(?![\w.,]*\d)"
            cases["number"] = (cid, re.sub(pattern, changed, sentence, count=1))
        others = [c for c in texts if c != cid and not any(n in texts[c] for n in numbers)]
        cases["wrong_id"] = (rng.choice(others), sentence)
        cases["fabricated_id"] = (cid.rsplit("#", 1)[0] + "#999", sentence)
        for kind, (new_id, new_sentence) in cases.items():
            corrupted = list(parts)
            corrupted[index] = (new_id, new_sentence)
            check = tools.check_answer(render(corrupted), None)
            detected[kind].append(not check.passed)
        uncited = render(parts[:index]) + " " + sentence + " " + render(parts[index + 1 :])
        check = tools.check_answer(uncited.strip(), None)
        detected["uncited"].append(not check.passed)
    tools.check_answer(render(answers[0]), None)
    times = []
    for parts in answers:
        start = time.perf_counter()
        tools.check_answer(render(parts), None)
        times.append((time.perf_counter() - start) * 1000)
    tools.close()
    caught = sum(sum(v) for v in detected.values())
    total = sum(len(v) for v in detected.values())
    result = {
        "answers": len(answers), "sentences_per_answer": SENTENCES, "chunks_cited_per_answer": SENTENCES,
        "false_alarms": false_alarms, "false_alarm_rate": round(false_alarms / len(answers), 4),
        "detection_rate": round(caught / total, 4),
        "by_kind": {k: {"corrupted": len(v), "detected": sum(v)} for k, v in detected.items()},
        "latency_ms": {"median": round(statistics.median(times), 2),
                       "p95": round(sorted(times)[int(0.95 * len(times)) - 1], 2)},
    }  # fmt: skip
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
