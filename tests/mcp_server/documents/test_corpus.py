"""Corpus configuration (corpus.toml) and document discovery."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from mcp_server.documents.corpus import (
    ChunkingOptions,
    CorpusConfig,
    SkippedFile,
    discover_documents,
    load_corpus_config,
    scan_corpus,
    slugify_name,
)
from mcp_server.errors import IngestError

FIXTURE_CORPUS = Path(__file__).parents[2] / "fixtures" / "corpora" / "acme"
HANDBOOK = Path(__file__).parents[3] / "corpora" / "handbook"


def write_config(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.toml").write_text(text, encoding="utf-8")
    return root


def make_files(root: Path, *relpaths: str) -> None:
    for relpath in relpaths:
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {relpath}\n", encoding="utf-8")


# --- corpus.toml ---------------------------------------------------------------------


def test_fixture_config_is_read() -> None:
    config = load_corpus_config(FIXTURE_CORPUS)

    assert config.name == "acme"
    assert "Not for anything about other companies" in config.description
    assert config.language == "en"
    assert config.root == FIXTURE_CORPUS.resolve()
    assert config.chunking == ChunkingOptions(target_tokens=120, max_tokens=160, overlap_tokens=24)


def test_bundled_handbook_config_routes_by_description() -> None:
    config = load_corpus_config(HANDBOOK)

    assert config.name == "handbook"
    assert "leave" in config.description and "Do not use it for" in config.description
    assert config.chunking == ChunkingOptions()


def test_chunking_table_is_optional_and_partial(tmp_path: Path) -> None:
    root = write_config(tmp_path / "c", 'name = "c"\ndescription = "d"\n[chunking]\noverlap_tokens = 10\n')

    assert load_corpus_config(root).chunking == ChunkingOptions(overlap_tokens=10)
    write_config(root, 'name = "c"\ndescription = "d"\n')
    assert load_corpus_config(root).chunking == ChunkingOptions()


def test_folder_without_config_is_an_adhoc_corpus(tmp_path: Path) -> None:
    root = tmp_path / "My Notes (2024)"
    root.mkdir()

    config = load_corpus_config(root)

    assert config == CorpusConfig(
        name="my-notes-2024",
        description=config.description,
        language=None,
        root=root.resolve(),
        chunking=ChunkingOptions(),
    )
    assert "ad hoc" in config.description and "My Notes (2024)" in config.description


def test_adhoc_folder_named_in_chinese_gets_a_stable_name_and_its_name_in_the_description(tmp_path: Path) -> None:
    """A folder picked in a desktop host may be named 资料: it is indexed, not refused."""
    for parent in ("a", "b"):
        (tmp_path / parent / "资料").mkdir(parents=True)
    first, second = (load_corpus_config(tmp_path / parent / "资料") for parent in ("a", "b"))
    other = tmp_path / "笔记"
    other.mkdir()

    assert re.fullmatch(r"folder-[0-9a-f]{8}", first.name) and first.name == second.name
    assert load_corpus_config(other).name != first.name
    assert "'资料'" in first.description


@pytest.mark.parametrize(
    ("text", "slug"),
    [("Human Resources", "human-resources"), ("  __FAQ__ ", "faq"), ("Café_2024", "cafe_2024"), ("报销", "")],
)
def test_slugify_name(text: str, slug: str) -> None:
    assert slugify_name(text) == slug


def test_missing_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="does not exist"):
        load_corpus_config(tmp_path / "nowhere")


def test_root_that_is_a_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text("x")

    with pytest.raises(IngestError, match="not a folder"):
        load_corpus_config(path)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [("Human Resources", "human-resources"), ("-x", "x"), ("a" * 65, "a" * 64), ("报销", "hr-docs")],
)
def test_invalid_name_is_refused_with_a_suggestion(tmp_path: Path, name: str, suggestion: str) -> None:
    root = write_config(tmp_path / "hr-docs", f'name = "{name}"\ndescription = "d"\n')

    with pytest.raises(IngestError, match="is not valid") as error:
        load_corpus_config(root)
    assert f'name = "{suggestion}"' in str(error.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "c"\ndescription = "d"\nowner = "me"\n', "unknown key 'owner'"),
        ('name = "c"\ndescription = "d"\n[chunking]\nsize = 3\n', "unknown key 'size'"),
        ('description = "d"\n', "'name' is missing"),
        ('name = "c"\n', "'description' is missing"),
        ('name = "c"\ndescription = "  "\n', "'description' must be a non-empty string"),
        ('name = "c"\ndescription = "d"\nlanguage = 7\n', "'language' must be a non-empty string"),
        ('name = "c"\ndescription = "d"\nchunking = 5\n', "must be a table"),
        ('name = "c"\ndescription = \n', "not valid TOML"),
    ],
)
def test_malformed_config_is_refused(tmp_path: Path, text: str, message: str) -> None:
    root = write_config(tmp_path / "c", text)

    with pytest.raises(IngestError, match=message):
        load_corpus_config(root)


@pytest.mark.parametrize(
    "options",
    [
        {"target_tokens": 0},
        {"max_tokens": -1},
        {"overlap_tokens": "40"},
        {"overlap_tokens": True},
        {"overlap_tokens": 220},
        {"target_tokens": 301},
    ],
)
def test_invalid_chunking_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(IngestError, match="Chunking option"):
        ChunkingOptions(**options)  # type: ignore[arg-type]


def test_invalid_chunking_options_in_config_name_the_file(tmp_path: Path) -> None:
    root = write_config(tmp_path / "c", 'name = "c"\ndescription = "d"\n[chunking]\nmax_tokens = 100\n')

    with pytest.raises(IngestError, match=r"corpus\.toml: Chunking options must satisfy"):
        load_corpus_config(root)


# --- discovery -----------------------------------------------------------------------


def test_fixture_documents_are_discovered_in_order() -> None:
    documents = discover_documents(load_corpus_config(FIXTURE_CORPUS))

    assert [document.relpath for document in documents] == [
        "engineering/deploy-errors.md",
        "notes/office-hours.txt",
        "policies/remote-work.md",
        "policies/travel.md",
        "products/widget-faq.html",
        "zh/年假制度.md",
    ]
    assert documents[0].doc_id == "engineering/deploy-errors"
    assert documents[-1].doc_id == "zh/年假制度"
    assert documents[0].path == FIXTURE_CORPUS.resolve() / "engineering" / "deploy-errors.md"


def test_discovery_skips_hidden_unsupported_and_config_files(tmp_path: Path) -> None:
    root = write_config(tmp_path / "c", 'name = "c"\ndescription = "d"\n')
    make_files(
        root,
        "b/z.md",
        "b/a.HTML",
        "a.markdown",
        "B.txt",
        "manual.pdf",
        "page.htm",
        ".hidden.md",
        ".git/notes.md",
        "drafts/.wip/x.md",
        "notes.docx",
        "archive.zip",
        "README",
    )

    scan = scan_corpus(load_corpus_config(root))

    assert [(document.doc_id, document.relpath) for document in scan.files] == [
        ("B", "B.txt"),
        ("a", "a.markdown"),
        ("b/a", "b/a.HTML"),
        ("b/z", "b/z.md"),
        ("manual", "manual.pdf"),
        ("notes", "notes.docx"),
        ("page", "page.htm"),
    ]
    assert scan.hidden == [".git", ".hidden.md", "drafts/.wip"]
    assert scan.skipped == []


def test_documents_table_adds_and_removes_suffixes(tmp_path: Path) -> None:
    root = write_config(
        tmp_path / "c", 'name = "c"\ndescription = "d"\n[documents]\ninclude = [".LOG"]\nexclude = [".json", ".py"]\n'
    )
    make_files(root, "a.md", "run.log", "data.json", "tool.py", "deck.pptx")

    config = load_corpus_config(root)

    assert ".log" in config.suffixes and not {".json", ".py"} & config.suffixes
    assert [document.relpath for document in discover_documents(config)] == ["a.md", "deck.pptx", "run.log"]


@pytest.mark.parametrize("table", ['include = ".log"', 'include = ["log"]', 'exclude = [".a/b"]', 'only = [".md"]'])
def test_documents_table_is_checked(tmp_path: Path, table: str) -> None:
    root = write_config(tmp_path / "c", f'name = "c"\ndescription = "d"\n[documents]\n{table}\n')

    with pytest.raises(IngestError, match=r"corpus\.toml: (\[documents\] (include|exclude) must be a list of file "
                       r"suffixes|unknown key 'only')"):
        load_corpus_config(root)


def test_files_over_the_size_limit_are_skipped_with_the_setting_to_raise(tmp_path: Path) -> None:
    root = tmp_path / "c"
    make_files(root, "small.md")
    (root / "big.txt").write_text("word " * 300_000, encoding="utf-8")

    scan = scan_corpus(load_corpus_config(root), max_file_bytes=1_048_576)

    assert [document.relpath for document in scan.files] == ["small.md"]
    assert scan.skipped == [
        SkippedFile("big.txt", "1.4 MB, over the size limit of 1 MB; raise RAGMCP_MAX_FILE_MB or split the file")
    ]


def test_second_file_with_a_taken_doc_id_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "c"
    make_files(root, "hr/a.md", "hr/a.txt")

    scan = scan_corpus(load_corpus_config(root))

    assert [document.relpath for document in scan.files] == ["hr/a.md"]
    assert scan.skipped == [SkippedFile("hr/a.txt", "same doc_id as hr/a.md; rename one of them")]


def test_symlinks_never_lead_outside_the_corpus(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_files(outside, "secret.md", "dir/inner.md")
    root = tmp_path / "c"
    make_files(root, "real.md")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "leakdir").symlink_to(outside / "dir", target_is_directory=True)
    (root / "alias.md").symlink_to(root / "real.md")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "broken.md").symlink_to(root / "missing.md")
    (root / "cycle.md").symlink_to(root / "cycle.md")
    (root / "photo.zip").symlink_to(outside / "secret.md")

    scan = scan_corpus(load_corpus_config(root))

    assert [document.relpath for document in scan.files] == ["alias.md", "real.md"]
    reasons = {skip.source: skip.reason for skip in scan.skipped}
    assert list(reasons) == ["broken.md", "cycle.md", "leak.md", "leakdir", "loop"]  # not photo.zip: no document
    assert reasons["broken.md"] == "broken symlink; remove the link"
    assert reasons["cycle.md"] == "symlink loop; remove the link"
    assert reasons["leak.md"].startswith("symlink to a file outside the corpus folder")
    assert str(outside) not in reasons["leak.md"]  # reasons are listed to MCP clients: no path beyond the folder
    assert reasons["leakdir"].startswith("symlinked folder, not followed")
    assert reasons["loop"].startswith("symlinked folder, not followed")


def test_unreadable_folder_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "c"
    make_files(root, "locked/a.md")
    real_scandir = os.scandir

    def scandir(path: Path) -> Any:  # as for a folder without read permission (tests run as root in CI)
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)

    scan = scan_corpus(load_corpus_config(root))

    assert scan.files == []
    assert scan.skipped == [SkippedFile("locked/", "cannot list the folder: Permission denied")]
