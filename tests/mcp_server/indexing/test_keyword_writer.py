"""Writing the keyword shards in segments, in process and in a child process, on real Whoosh indexes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from whoosh import index as whoosh_index

from mcp_server.errors import IngestError
from mcp_server.indexing import ingest as ingest_module
from mcp_server.indexing import keyword_writer
from mcp_server.indexing.ingest import ingest
from mcp_server.indexing.keyword_writer import ProcessKeywordWriter, SegmentWriter, open_keyword_writer
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.stores.keyword import KeywordRecord, WhooshIndex
from tests.helpers import is_running, make_settings, wait_for, write_doc

REPO = Path(__file__).resolve().parents[3]
WORDS = ["amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet"]


class RecordedProgress:
    def __init__(self) -> None:
        self.phases: list[tuple[str, int]] = []
        self.done = 0

    def start(self, phase: str, total: int) -> None:
        self.phases.append((phase, total))

    def advance(self, amount: int) -> None:
        self.done += amount

    def detail(self, text: str) -> None:
        pass


def records(corpus: str = "rocks") -> list[KeywordRecord]:
    return [KeywordRecord(f"{corpus}:{w}#0", corpus, w, f"notes on {w} samples") for w in WORDS]


def segment_sizes(path: Path, part: str = "rocks") -> list[int]:
    """The document counts of the segments of one part index of the shard of corpus 'rocks'."""
    index = whoosh_index.open_dir(str(path / part))
    try:
        reader = index.reader()
        sizes = sorted(leaf.doc_count_all() for leaf, _ in reader.leaf_readers())
        reader.close()
        return sizes
    finally:
        index.close()


def found(path: Path, word: str) -> list[str]:
    index = WhooshIndex(path)
    try:
        return [hit for hit, _ in index.search(word, 10)]
    finally:
        index.close()


def test_segment_writer_commits_a_segment_each_time_the_buffer_is_full(tmp_path: Path) -> None:
    writer = SegmentWriter(WhooshIndex(tmp_path), segment_chunks=3)
    writer.add(records()[:2])
    assert writer.committed == 0  # below one segment: still buffered
    writer.add(records()[2:])
    assert writer.committed == 7
    progress = RecordedProgress()
    writer.finish(progress)
    assert progress.phases == [("writing the keyword index", 0)]
    assert segment_sizes(tmp_path) == [7]  # one commit of the 7 buffered
    assert found(tmp_path, "garnet") == ["rocks:garnet#0"]


def test_segment_writer_finish_commits_what_is_still_buffered(tmp_path: Path) -> None:
    writer = SegmentWriter(WhooshIndex(tmp_path), segment_chunks=4)
    for record in records():
        writer.add([record])
    progress = RecordedProgress()
    writer.finish(progress)
    assert progress.phases == [("writing the keyword index", 3)] and progress.done == 3
    assert segment_sizes(tmp_path) == [3, 4]
    assert [found(tmp_path, w) for w in ("amber", "garnet")] == [["rocks:amber#0"], ["rocks:garnet#0"]]


def test_child_writers_write_the_parts_of_the_shard_in_other_processes(tmp_path: Path) -> None:
    writer = ProcessKeywordWriter(tmp_path, 2)
    assert len(set(writer.pids)) == 2 and os.getpid() not in writer.pids
    writer.add(records()[:4])  # to the first child: part 0
    writer.add(records()[4:])  # to the second: part 1
    progress = RecordedProgress()
    writer.finish(progress)
    assert progress.phases == [("writing the keyword index", 7)] and progress.done == 7
    assert segment_sizes(tmp_path, "rocks") == [4] and segment_sizes(tmp_path, "rocks.1") == [3]
    assert found(tmp_path, "cobalt") == ["rocks:cobalt#0"] and found(tmp_path, "garnet") == ["rocks:garnet#0"]
    assert len(found(tmp_path, "samples")) == 7  # one search reads both parts


def test_a_deletion_reaches_every_part_and_new_records_go_to_the_part_asked(tmp_path: Path) -> None:
    writer = ProcessKeywordWriter(tmp_path, 2)
    writer.add(records()[:4])
    writer.add(records()[4:])
    writer.finish(RecordedProgress())
    index = WhooshIndex(tmp_path)
    index.update(["rocks:amber", "rocks:garnet"], [KeywordRecord("rocks:jade#0", "rocks", "jade", "jade samples")])
    index.close()
    assert found(tmp_path, "amber") == [] and found(tmp_path, "garnet") == []
    assert found(tmp_path, "jade") == ["rocks:jade#0"] and len(found(tmp_path, "samples")) == 6
    assert sum(segment_sizes(tmp_path, "rocks")) == 5  # 4 + jade, amber deleted (counted until a merge)


def test_a_failing_child_is_reported(tmp_path: Path) -> None:
    blocked = tmp_path / "whoosh"
    blocked.write_text("a file where the shards' folder should be", encoding="utf-8")
    writer = ProcessKeywordWriter(blocked, 1)
    with pytest.raises(IngestError, match="keyword index"):
        writer.add(records())
        writer.finish(RecordedProgress())
    writer.abort()
    assert all(not child.process.is_alive() for child in writer._children)


def test_abort_stops_the_children(tmp_path: Path) -> None:
    writer = ProcessKeywordWriter(tmp_path, 2)
    writer.add(records())
    writer.abort()
    assert all(not child.process.is_alive() for child in writer._children)


def test_small_runs_write_in_process_and_big_ones_in_children(tmp_path: Path) -> None:
    small = open_keyword_writer(tmp_path / "a", keyword_writer.CHILD_MIN_DOCUMENTS - 1)
    big = open_keyword_writer(tmp_path / "b", keyword_writer.CHILD_MIN_DOCUMENTS)
    assert isinstance(small, SegmentWriter) and isinstance(big, ProcessKeywordWriter)
    small.abort()
    big.abort()


def hits(settings: Settings, query: str, mode: str) -> list[tuple[str, float]]:
    """(id, score) of the top 10, ties by id (Whoosh breaks ties by internal document number)."""
    retriever = Retriever.open(settings)
    try:
        found = [(h.citation.id, round(h.score, 6)) for h in retriever.searcher.search(query, mode=mode, top_k=10)]  # type: ignore[arg-type]
    finally:
        retriever.close()
    return sorted(found, key=lambda hit: (-hit[1], hit[0]))


def test_an_ingestion_streamed_in_small_batches_through_the_child_finds_what_one_batch_in_process_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "rocks"
    folder.mkdir()
    for n, word in enumerate(WORDS):
        write_doc(folder, f"{word}.md", word.title(), f"# {word}\n\nSample {n} of {word}, found near the quarry.")
    one_batch = make_settings(tmp_path / "one", folder)
    ingest(one_batch)
    monkeypatch.setattr(ingest_module, "BATCH_CHUNKS", 2)
    monkeypatch.setattr(keyword_writer, "CHILD_MIN_DOCUMENTS", 1)
    progress = RecordedProgress()
    streamed = make_settings(tmp_path / "streamed", folder)
    report = ingest(streamed, progress=progress)
    assert report.chunks_written == 7
    assert [phase for phase, _ in progress.phases] == ["indexing documents", "writing the keyword index"]
    for mode in ("keyword", "hybrid", "vector"):
        assert hits(streamed, "garnet samples quarry", mode) == hits(one_batch, "garnet samples quarry", mode)
    assert hits(streamed, "dolomite", "keyword")[0][0] == "rocks:dolomite#0"


@pytest.mark.parametrize(
    "entry", ["runpy.run_module('mcp_server', run_name='__mp_main__')",
              f"runpy.run_path({str(REPO / 'packaging' / 'mcpb' / 'main.py')!r}, run_name='__mp_main__')"],
)  # fmt: skip
def test_the_entry_points_do_nothing_when_a_spawned_child_imports_them(entry: str) -> None:
    # A spawned child (the keyword writer) imports the parent's main module as __mp_main__; an entry
    # point that ran the CLI then would start a second server or ingestion in the child.
    done = subprocess.run(
        [sys.executable, "-c", f"import runpy, sys; sys.argv = ['x', 'ingest']; {entry}; print('imported')"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "imported\n", "")


KILLED_PARENT = """
import sys
import time
from pathlib import Path
from mcp_server.indexing.keyword_writer import ProcessKeywordWriter
from mcp_server.stores.keyword import KeywordRecord

if __name__ == "__main__":
    writer = ProcessKeywordWriter(Path(sys.argv[1]), 2)
    writer.add([KeywordRecord("rocks:a#0", "rocks", "a", "notes on amber")])
    print(*writer.pids, flush=True)
    sys.stdin.read()  # killed here, the children still waiting for batches
"""


def test_the_children_exit_when_the_ingesting_process_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(KILLED_PARENT, encoding="utf-8")
    parent = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "whoosh")], cwd=REPO,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert parent.stdout is not None
    children = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(children) == 2 and all(is_running(pid) for pid in children)
    parent.kill()
    parent.wait()
    assert wait_for(lambda: not any(is_running(pid) for pid in children), 30)
