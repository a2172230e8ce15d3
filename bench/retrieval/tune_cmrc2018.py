"""Tune the convex keyword weight for CJK queries on one half of CMRC 2018; report it on the other half.

    python bench/retrieval/tune_cmrc2018.py --model minilm-int8   # ~5 min on 2 shared cores once the index is built
    python bench/retrieval/tune_cmrc2018.py --out bench/retrieval/tuning-cmrc2018-e5.json   # auto: E5 for this corpus

The weight applies to a CJK query's hits from corpora whose embedding model does not read CJK
(the English MiniLM); hits from multilingual-e5-small corpora keep the ordinary weight, which the
second command (the grid over an E5 index) checks: its best weight is the lowest.

CMRC 2018 has no train split, so the questions are split by their passage: questions
about even-numbered passages (DEV_0, DEV_2, ...) tune, those about odd-numbered ones are
held out. The weight maximising hybrid Recall@1 on the tuning half (MRR@10 breaks ties)
becomes ``settings.retrieval.convex_keyword_weight_cjk`` (of tied weights, the smallest);
bench/retrieval/cmrc2018.py reports the held-out half and the whole set. Fusion runs through the product's own functions on
the product's candidate lists. Writes bench/retrieval/tuning-cmrc2018.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parent), str(HERE)]  # this checkout's mcp_server, bench/, here

from cmrc2018 import DESCRIPTION, MEASURES, split_by_passage  # noqa: E402
from common import BENCH_DATA, REPO, log  # noqa: E402
from harness import BeirSet, candidate_lists, doc_of, doc_run, evaluate, prepare_index  # noqa: E402

from mcp_server.retrieval.fusion import convex_fusion, keyword_weight_for  # noqa: E402
from mcp_server.settings import Settings  # noqa: E402
from mcp_server.settings.embedding import AUTO_MODEL  # noqa: E402

WEIGHT_GRID = [0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 1.0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=BENCH_DATA / "cmrc2018-dev")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "retrieval" / "tuning-cmrc2018.json")
    parser.add_argument("--model", default=AUTO_MODEL, help="RAGMCP_EMBEDDING_MODEL to index with")
    args = parser.parse_args()

    data = split_by_passage(BeirSet.load(args.data))
    prepared = prepare_index("cmrc2018", data, DESCRIPTION, language="zh", model=args.model)
    queries, qrels = data.split_queries("tune"), data.qrels["tune"]
    log(f"candidate lists for the {len(queries)} tuning questions")
    candidates = candidate_lists(prepared.settings, queries)
    latin_weight = Settings(corpora=[]).retrieval.convex_keyword_weight
    scores = {}
    for weight in WEIGHT_GRID:
        run = {
            qid: doc_run(doc_of(cid) for cid, _ in convex_fusion(
                vector, keyword, keyword_weight_for(queries[qid], latin_weight, weight))[:10])
            for qid, (vector, keyword) in candidates.items()
        }
        scores[weight] = evaluate(run, qrels, MEASURES)
        log(f"  cjk weight {weight}: {scores[weight]}")
    chosen = max(WEIGHT_GRID, key=lambda w: (scores[w]["Recall@1"], scores[w]["MRR@10"]))
    report = {
        "split": f"tune: questions on even-numbered passages ({len(qrels)} questions)",
        "chosen_convex_keyword_weight_cjk": chosen,
        "hybrid_by_cjk_weight": {str(w): s for w, s in scores.items()},
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"chosen_convex_keyword_weight_cjk": chosen, "tune half": scores[chosen]}, indent=2))


if __name__ == "__main__":
    main()
