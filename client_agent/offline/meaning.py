"""Meaning for the offline back-end: how close two texts are, by the bundled sentence-embedding model.

Word overlap misses paraphrases: "help-desk software" shares no word with "Service Cloud",
"a home with cats" none with "designed for homes with pets". The server already ships a
local sentence-embedding model (all-MiniLM-L6-v2, int8 ONNX, :mod:`mcp_server.embedding`);
the offline back-end loads the same model in its own process — nothing is downloaded, no
language model is involved, and the same texts always get the same vectors — and compares
texts by the cosine of their embeddings.

The model is loaded on first use (about a second) and every text is embedded once per
process (:data:`CACHE_SIZE` texts are kept), so an answer's many candidate sentences cost
little after the first search.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mcp_server.embedding.loading import load_embedder
from mcp_server.settings.embedding import ENGLISH_MODEL

WORD_MEANING = 0.55
"""Cosine similarity from which two single words count as meaning nearly the same. Measured on the
bundled model: cats~pets 0.76, married~wedding 0.62, baby~child 0.60, memory~RAM 0.73; unrelated or loosely
related pairs such as car~devices 0.38, party~festival 0.53 or day~week 0.546 stay below."""
CACHE_SIZE = 20_000
MAX_CHARS = 2_000
"""Texts are cut to this many characters before embedding (the model reads 256 tokens anyway)."""

_cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()


def similarity(text: str, others: Sequence[str]) -> list[float]:
    """The cosine similarity of ``text`` to each of ``others`` (about -0.1 to 1; unrelated texts score below 0.2)."""
    if not others:
        return []
    vectors = _embed([text, *others])
    return [float(np.dot(vectors[0], vector)) for vector in vectors[1:]]


def best_similarity(text: str, others: Sequence[str]) -> float:
    """The highest similarity of ``text`` to any of ``others`` (0 when there are none)."""
    return max(similarity(text, others), default=0.0)


def _embed(texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
    keys = [text[:MAX_CHARS] for text in texts]
    missing = list(dict.fromkeys(key for key in keys if key not in _cache))
    embedded = dict(zip(missing, load_embedder(ENGLISH_MODEL).embed(missing), strict=True)) if missing else {}
    vectors = [embedded[key] if key in embedded else _cache[key] for key in keys]
    for key, vector in zip(keys, vectors, strict=True):  # kept newest last; the oldest go once all are read
        _cache[key] = vector
        _cache.move_to_end(key)
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return vectors


def matched_words(words: Sequence[str], vocabulary: Sequence[str], threshold: float = WORD_MEANING) -> set[str]:
    """The ``words`` some word of ``vocabulary`` means nearly the same as (cosine >= ``threshold``): cats ~ pets."""
    if not words or not vocabulary:
        return set()
    vectors = _embed([*words, *vocabulary])
    matrix = np.stack(vectors[len(words) :])
    return {word for word, vector in zip(words, vectors[: len(words)], strict=True)
            if float(np.max(matrix @ vector)) >= threshold}
