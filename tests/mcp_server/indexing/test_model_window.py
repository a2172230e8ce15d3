"""Every chunk's embedded text fits the embedding model's window, counted by the model's own tokenizer.

Chunks are sized by an estimate; technical prose has more word pieces per word than the estimate
assumes, so without a count some chunks ran past the 256 tokens all-MiniLM-L6-v2 reads and their
tails never reached vector search.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import mcp_server.indexing.ingest as ingest_module
from mcp_server.embedding.loading import load_embedder
from mcp_server.settings.embedding import ENGLISH_MODEL
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from tests.helpers import embedded_lengths, make_settings, write_doc

SENTENCES = [
    "Immunohistochemistry of deoxyribonucleotide kinases in Pseudomonas aeruginosa biofilms showed heterogeneous staining.",
    "Phosphatidylinositol 3-kinase inhibitors attenuated glucocorticoid-induced osteoclastogenesis in ovariectomized rats.",
    "Metalloproteinase-9 polymorphisms (rs3918242) correlated with thrombocytopenia after cardiopulmonary bypass.",
    "Hydroxychloroquine pharmacokinetics differed between hypoalbuminemic and normoalbuminemic cohorts (p=0.013).",
    "Electroencephalographic desynchronization preceded myoclonic exacerbations in Lennox-Gastaut syndrome.",
]


def long_document() -> str:
    """Three sections of long paragraphs of dense biomedical prose (many word pieces per word)."""
    sections = []
    for number in range(3):
        paragraphs = [" ".join(SENTENCES[(number + k) % len(SENTENCES)] for k in range(12)) for _ in range(2)]
        sections.append(f"## Findings {number + 1}\n\n" + "\n\n".join(paragraphs))
    return "# Assay report\n\n" + "\n\n".join(sections)


def test_no_chunk_of_a_long_dense_document_exceeds_the_window_and_all_text_is_in_a_chunk(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    text = long_document()
    write_doc(folder, "assay.md", "Assay report", text)
    settings = make_settings(tmp_path / "data", folder)
    ingest(settings)
    retriever = Retriever.open(settings)
    try:
        view = retriever.documents.get_document("lab:assay")
    finally:
        retriever.close()
    lengths = embedded_lengths(view)
    window = load_embedder(ENGLISH_MODEL).max_tokens
    assert window is not None and max(lengths) <= window, f"chunks of {sorted(lengths)[-3:]} tokens, window {window}"
    covered = set().union(*(range(c.char_start, c.char_end) for c in view.chunks))
    assert all(i in covered for i, char in enumerate(view.text) if not char.isspace())
    assert {c.section for c in view.chunks} >= {f"Assay report > Findings {n}" for n in (1, 2, 3)}


def test_an_index_from_before_the_window_cut_is_read_again_on_its_next_update(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index built by the release before chunks were cut to the window (pipeline 5, no cut) holds chunks over
    the window; an update of it must read its unchanged files again rather than keep those chunks."""
    folder = tmp_path / "lab"
    write_doc(folder, "assay.md", "Assay report", long_document())
    settings = make_settings(tmp_path / "data", folder)
    window = load_embedder(ENGLISH_MODEL).max_tokens
    assert window is not None
    with monkeypatch.context() as old_release:
        old_release.setattr(ingest_module, "PIPELINE_VERSION", "5")
        old_release.setattr(ingest_module, "fit_to_window", lambda extracted, options, window: extracted)
        ingest(settings)
    assert max(_lengths(settings)) > window, "the old release's index should hold a chunk over the window"

    report = ingest(settings)

    assert report.corpora[0].changed == ["assay"]
    assert max(_lengths(settings)) <= window
    said = [note for note in report.notes if "read again" in note]
    assert len(said) == 1 and "pipeline 5" in said[0], report.notes
    assert not any("read again" in note for note in ingest(settings).notes), "said once, on the update that reads"


def _lengths(settings: Settings) -> list[int]:
    retriever = Retriever.open(settings)
    try:
        return embedded_lengths(retriever.documents.get_document("lab:assay"))
    finally:
        retriever.close()
