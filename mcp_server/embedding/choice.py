"""Which model embeds which corpus: one model for every corpus, or (``auto``, the default) each corpus's own.

``RAGMCP_EMBEDDING_MODEL=auto`` gives a corpus, when it first enters the index, the model for its language:

- **multilingual-e5-small** when its ``corpus.toml`` declares a language other than English, or declares
  none and at least :data:`CJK_CORPUS_SHARE` of the letters and digits of its first documents
  (:data:`SAMPLE_CHARS` characters) are Chinese, Japanese or Korean;
- **all-MiniLM-L6-v2** otherwise, and wherever the multilingual model cannot run (its package is only for
  Linux x86-64, and it needs AVX2): the ingestion then says so in one line.

The language is the corpus's own, never another corpus's, so on a team server what a client gets back
depends only on the corpora it reads. The index records each corpus's model and an update keeps it;
``ragmcp ingest --rebuild`` chooses again. An index built with one of these models for every corpus (before
``auto`` existed) keeps its model under ``auto`` until it is rebuilt.

Searching corpora of both models embeds the query with each. Similarities are put on one scale before the
corpora's neighbours merge and before hybrid fusion adds keyword scores: each model's cosine similarity is
mapped by its :attr:`~mcp_server.embedding.loading.Embedder.scale` (an affine map fitted by
``bench/retrieval/fit_model_scales.py``), always, whatever else is searched, so a corpus's scores never
depend on which other corpora a search covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mcp_server.analyzer.scripts import cjk_share
from mcp_server.embedding.loading import Embedder, load_embedder
from mcp_server.errors import EmbeddingModelError, EmbeddingModelMismatchError
from mcp_server.settings.embedding import AUTO_MODEL, ENGLISH_MODEL, MULTILINGUAL_MODEL

SAMPLE_CHARS = 50_000
"""How much of a corpus's text (its first documents read) ``auto`` looks at to tell its script."""
CJK_CORPUS_SHARE = 1 / 3
"""The share of CJK letters and digits from which ``auto`` gives a corpus the multilingual model. Chinese
documents with the usual English names, numbers and markup measure about 0.7 (the bundled handbook's
Chinese pages: 0.71); an English corpus with a few Chinese pages about 0.05 (the bundled handbook: 0.05)."""
ENGLISH = ("en", "eng", "english")


@dataclass(frozen=True)
class CorpusModels:
    """The embedding model of each corpus of an index: ``single`` for every corpus, or (``auto``) each one's own
    in ``chosen`` (corpora not yet there are chosen when they are first indexed, :func:`auto_spec`)."""

    identity: str
    """What the index records as its embedding model: ``auto``, or the one model's name."""
    single: Embedder | None = None
    chosen: dict[str, Embedder] = field(default_factory=dict)

    @classmethod
    def one(cls, embedder: Embedder) -> CorpusModels:
        """``embedder`` for every corpus."""
        return cls(identity=embedder.name, single=embedder)

    def of(self, corpus: str) -> Embedder:
        """The model of ``corpus`` (with ``auto``: chosen already, else KeyError)."""
        return self.single if self.single is not None else self.chosen[corpus]

    def knows(self, corpus: str) -> bool:
        """Whether ``corpus``'s model is settled (always, for one model)."""
        return self.single is not None or corpus in self.chosen

    def choose(self, corpus: str, spec: str) -> Embedder:
        """Settle ``corpus`` on the model ``spec`` names (``auto`` only)."""
        assert self.single is None, "one model embeds every corpus"
        self.chosen[corpus] = load_embedder(spec)
        return self.chosen[corpus]

    def forget(self, corpus: str) -> None:
        """``corpus`` leaves the index: it is chosen again if it comes back."""
        self.chosen.pop(corpus, None)

    def recorded(self) -> dict[str, str] | None:
        """Each corpus's model spec, as the index records it (None: one model for every corpus)."""
        if self.single is not None:
            return None
        return {corpus: AUTO_SPECS[embedder.name] for corpus, embedder in sorted(self.chosen.items())}

    @property
    def dimension(self) -> int:
        """The vectors' length (the ``auto`` models share one: a model chosen already, else MiniLM, says it)."""
        return (self.single or next(iter(self.chosen.values()), None) or load_embedder(ENGLISH_MODEL)).dimension

    def groups(self, corpora: Iterable[str]) -> list[tuple[Embedder, list[str]]]:
        """``corpora`` (each with a settled model) grouped by model, in a stable order."""
        grouped: dict[str, tuple[Embedder, list[str]]] = {}
        for corpus in sorted(corpora):
            embedder = self.of(corpus)
            grouped.setdefault(embedder.name, (embedder, []))[1].append(corpus)
        return [grouped[name] for name in sorted(grouped)]


def auto_spec(language: str | None, sample: str) -> tuple[str, str | None]:
    """The model spec ``auto`` gives a corpus that declares ``language`` (None: none) and whose first text is
    ``sample``, and a line to tell the user when the model for its language cannot run here (else None)."""
    if language is not None:
        multilingual = language.strip().lower() not in ENGLISH
    else:
        multilingual = cjk_share(sample) >= CJK_CORPUS_SHARE
    if not multilingual:
        return ENGLISH_MODEL, None
    try:
        load_embedder(MULTILINGUAL_MODEL)
    except EmbeddingModelError as e:
        return ENGLISH_MODEL, f"{e}; embedding it with all-MiniLM-L6-v2 (English) instead"
    return MULTILINGUAL_MODEL, None


def index_models(
    spec: str, recorded_model: str | None, recorded_corpora: Mapping[str, str] | None, load: Embedder | None = None
) -> tuple[CorpusModels, str | None]:
    """The models of an index that records ``recorded_model`` (None: no index yet) and ``recorded_corpora``,
    opened with the configured ``spec`` (``load``: that spec's model, loaded already); and a line for the user
    when the index keeps a model ``auto`` would not choose today (else None).

    Raises EmbeddingModelMismatchError when the index was built by another model than ``spec`` names.
    """
    if spec != AUTO_MODEL:
        embedder = load or load_embedder(spec)
        if recorded_model is not None:
            _check(recorded_model, embedder.name, recorded_corpora)
        return CorpusModels.one(embedder), None
    if recorded_model is None or recorded_model == AUTO_MODEL:
        chosen = {corpus: load_embedder(model) for corpus, model in (recorded_corpora or {}).items()}
        return CorpusModels(identity=AUTO_MODEL, chosen=chosen), None
    if recorded_model in AUTO_SPECS:
        note = (
            f"the index embeds every corpus with {recorded_model}; to give each corpus the model for its language "
            "(multilingual-e5-small for Chinese), rebuild it: ragmcp ingest --rebuild"
        )
        return CorpusModels.one(load_embedder(AUTO_SPECS[recorded_model])), note
    _check(recorded_model, AUTO_MODEL, recorded_corpora)
    raise AssertionError("unreachable")  # pragma: no cover


def _check(recorded: str, configured: str, corpora: Mapping[str, str] | None) -> None:
    if recorded != configured:
        models = ", ".join(f"{corpus}: {model}" for corpus, model in sorted((corpora or {}).items()))
        each = f" ({models})" if models else ""
        raise EmbeddingModelMismatchError(
            f"the index was built with embedding model {recorded!r}{each}, but {configured!r} is configured. "
            "Either set RAGMCP_EMBEDDING_MODEL (and RAGMCP_EMBEDDING_URL) back to the model the index was built "
            "with, or rebuild the index with the new model: ragmcp ingest --rebuild"
        )


AUTO_SPECS = {"all-MiniLM-L6-v2-int8": ENGLISH_MODEL, "multilingual-e5-small-q4": MULTILINGUAL_MODEL}
"""The names the index records for the models ``auto`` chooses from, and their specs."""
