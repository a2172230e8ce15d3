"""The page:// resource and the resource links, in memory through the real SDK client, over a real index.

A corpus holds a reportlab PDF with its text at known positions (its name has a space), a
Markdown note and, in a second corpus, another PDF. The picture of a quote must highlight
the quoted words where reportlab set them; a search and get_document link what they cite.
"""

from __future__ import annotations

import base64
import io
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.server import MCPServer
from mcp.types import BlobResourceContents, ResourceLink
from PIL import Image

from mcp_server.grants import Grant
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.surface.links import DOCUMENT_URI, PAGE_URI, document_uri, page_uri
from mcp_server.surface.server import build_server
from mcp_server.surface.tools import RetrievalTools
from tests.helpers import subprocess_env, write_doc
from tests.mcp_server.documents.test_page_drawing import LINE, PAGE, highlighted, word_box, write_line_pdf

pytestmark = pytest.mark.anyio

DOC_ID = "hr/leave policy"  # a space and a folder: the URI must encode it


@pytest.fixture(scope="module")
def papers(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("pictures")
    for name in ("papers", "private"):
        (root / name).mkdir()
        (root / name / "corpus.toml").write_text(f'name = "{name}"\ndescription = "{name} files."\n', encoding="utf-8")
    (root / "papers" / "hr").mkdir()
    write_line_pdf(root / "papers" / "hr" / "leave policy.pdf")
    write_line_pdf(root / "papers" / "travel.pdf", lines=("Travel claims are paid within thirty days of approval",))
    write_doc(root / "papers", "notes.md", "Notes", "# Notes\n\nThe annual leave allowance is written down here too.")
    write_line_pdf(root / "private" / "secret.pdf", lines=("The private launch budget is forty two million",))
    settings = Settings.from_names(data_dir=root / "data", corpora=[root / "papers", root / "private"], database="none", ocr="off")
    ingest(settings)
    return settings


@pytest.fixture(scope="module")
def tools(papers: Settings) -> RetrievalTools:
    return RetrievalTools.open(papers)


@pytest.fixture(scope="module")
def server(tools: RetrievalTools, papers: Settings) -> MCPServer:
    return build_server(papers, tools, grant=Grant(corpora=("papers",), sql=False))


@pytest.fixture
async def client(server: MCPServer) -> AsyncIterator[Client]:
    async with Client(server) as connected:
        yield connected


async def picture(client: Client, uri: str) -> bytes:
    (contents,) = (await client.read_resource(uri)).contents
    assert isinstance(contents, BlobResourceContents) and contents.mime_type == "image/png"
    return base64.b64decode(contents.blob)


async def test_a_quotes_picture_highlights_the_quoted_words_where_they_are_set(client: Client) -> None:
    png = await picture(client, page_uri("papers", DOC_ID, quote="twenty five days"))
    mask = highlighted(png)
    assert mask.shape == (1200, 1600)  # RAGMCP_PAGE_IMAGE_MAX_SIDE's default, page 1's aspect
    scale = mask.shape[1] / PAGE[0]
    words = [word_box(LINE, word) for word in ("twenty", "five", "days")]
    inside = np.zeros_like(mask)
    margin = 8  # padding and outline, in pixels, around the words' true boxes
    for x0, y0, x1, y1 in words:
        inside[int(y0 * scale) - margin : int(y1 * scale) + margin, int(x0 * scale) - margin : int(x1 * scale) + margin] = True
        covered = mask[int(y0 * scale) + 2 : int(y1 * scale) - 2, int(x0 * scale) : int(x1 * scale)].mean()
        assert covered > 0.8, f"only {covered:.0%} of a quoted word is highlighted"
    assert mask.any() and mask[~inside].mean() < 0.001, "highlight outside the quoted words"
    before = word_box(LINE, "allowance")  # a word of the line that is not quoted
    assert not mask[int(before[1] * scale) + 2 : int(before[3] * scale) - 2, int(before[0] * scale) : int(before[2] * scale)].any()


async def test_a_chunk_and_a_page_are_shown_and_the_page_alone_is_plain(client: Client) -> None:
    chunk = highlighted(await picture(client, page_uri("papers", DOC_ID, chunk=0)))
    assert chunk.any()  # the chunk's lines on its page
    page_two = await picture(client, page_uri("papers", DOC_ID, page=2))
    assert not highlighted(page_two).any()
    assert Image.open(io.BytesIO(page_two)).size == (1600, 1200)
    with pytest.raises(MCPError, match="has no page 3; it has pages 1 to 2"):
        await client.read_resource(page_uri("papers", DOC_ID, page=3))
    with pytest.raises(MCPError, match="chunk must be a whole number"):
        await client.read_resource(f"page://papers/{DOC_ID.replace(' ', '%20')}?chunk=two")


async def test_a_document_without_pages_and_an_ungranted_one_are_refused_saying_why(client: Client) -> None:
    with pytest.raises(MCPError, match=r"papers:notes \(notes.md\) has no pages to show: only PDFs and pictures do"):
        await client.read_resource(page_uri("papers", "notes", chunk=0))
    with pytest.raises(MCPError) as ungranted:
        await client.read_resource(page_uri("private", "secret", chunk=0))
    with pytest.raises(MCPError) as unknown:
        await client.read_resource(page_uri("nosuch", "secret", chunk=0))
    assert ungranted.value.error.message == unknown.value.error.message.replace("nosuch", "private")


async def test_search_and_get_document_link_the_documents_and_pictures_they_cite(client: Client) -> None:
    result = await client.call_tool("hybrid_search", {"query": "annual leave allowance", "top_k": 5})
    links = [block for block in result.content if isinstance(block, ResourceLink)]
    uris = {str(link.uri): link for link in links}
    assert document_uri("papers", DOC_ID) in uris and document_uri("papers", "notes") in uris
    page_link = uris[page_uri("papers", DOC_ID, chunk=0)]
    assert page_link.mime_type == "image/png" and page_link.name == "papers:hr/leave%20policy#0"
    assert not any(uri.startswith("page://papers/notes") for uri in uris)  # Markdown: no page
    assert highlighted(await picture(client, str(page_link.uri))).any()
    assert result.structured_content is not None and "links" not in result.structured_content

    quoted = await client.call_tool("get_document", {"doc_id": f"papers:{DOC_ID}", "quote": "twenty five days"})
    (quote_link,) = [b for b in quoted.content if isinstance(b, ResourceLink) and b.mime_type == "image/png"]
    assert str(quote_link.uri) == page_uri("papers", DOC_ID, chunk=0, quote="twenty five days")
    assert highlighted(await picture(client, str(quote_link.uri))).any()

    window = await client.call_tool("get_document", {"doc_id": "papers:travel#0"})
    assert [str(b.uri) for b in window.content if isinstance(b, ResourceLink)] == [
        document_uri("papers", "travel"), page_uri("papers", "travel", chunk=0)
    ]
    whole = await client.call_tool("get_document", {"doc_id": "papers:travel"})  # no chunk named: no page picked
    assert [str(b.uri) for b in whole.content if isinstance(b, ResourceLink)] == [document_uri("papers", "travel")]

    answer = "Travel claims are paid within thirty days [papers:travel#0]."
    checked = await client.call_tool("check_answer", {"answer": answer})
    assert checked.structured_content is not None and checked.structured_content["supported"] == 1
    evidence = [b for b in checked.content if isinstance(b, ResourceLink)]
    assert [str(link.uri) for link in evidence][0] == document_uri("papers", "travel")
    (evidence_link,) = [link for link in evidence if link.mime_type == "image/png"]
    assert str(evidence_link.uri).startswith(page_uri("papers", "travel", chunk=0) + "&quote=Travel%20claims")
    assert highlighted(await picture(client, str(evidence_link.uri))).any()

    templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
    assert templates == [DOCUMENT_URI, PAGE_URI]


async def test_a_file_changed_since_indexing_is_not_highlighted(client: Client, papers: Settings) -> None:
    path = papers.corpora[0] / "hr" / "leave policy.pdf"
    indexed = path.read_bytes()
    try:
        write_line_pdf(path, lines=("An entirely different first line of the page",))
        with pytest.raises(MCPError, match="its file hr/leave policy.pdf has changed since it was indexed"):
            await client.read_resource(page_uri("papers", DOC_ID, chunk=0))
        path.unlink()
        with pytest.raises(MCPError, match="its file hr/leave policy.pdf is gone or unreadable; re-index it"):
            await client.read_resource(page_uri("papers", DOC_ID, chunk=0))
    finally:
        path.write_bytes(indexed)
    assert highlighted(await picture(client, page_uri("papers", DOC_ID, chunk=0))).any()


@pytest.mark.slow
async def test_the_picture_and_the_links_over_stdio(papers: Settings, tmp_path: Path) -> None:
    serve = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server", "serve"], env=subprocess_env(papers), cwd=tmp_path
    )
    async with Client(serve) as client:
        result = await client.call_tool("keyword_search", {"query": "twenty five days", "corpus": "papers"})
        links = [b for b in result.content if isinstance(b, ResourceLink) and b.mime_type == "image/png"]
        assert str(links[0].uri) == page_uri("papers", DOC_ID, chunk=0)  # the best hit's page
        assert highlighted(await picture(client, str(links[0].uri))).any()
        with pytest.raises(MCPError, match="has no pages to show"):
            await client.read_resource(page_uri("papers", "notes"))


@pytest.mark.slow
async def test_a_scanned_pictures_page_is_the_picture_itself_with_the_quote_highlighted(tmp_path: Path) -> None:
    from PIL import ImageDraw, ImageFont

    from tests.document_fixtures import CJK_FONT, scan

    lines = ["Expense claims are due by the fifth", "Receipts are kept for seven years"]
    corpus = tmp_path / "scans"
    corpus.mkdir()
    (corpus / "corpus.toml").write_text('name = "scans"\ndescription = "Scans."\n', encoding="utf-8")
    page = scan(lines)
    page.save(corpus / "receipts.png")
    settings = Settings(data_dir=tmp_path / "data", corpora=[corpus], database="none")
    ingest(settings)
    tools = RetrievalTools.open(settings)
    try:
        async with Client(build_server(settings, tools)) as client:
            png = await picture(client, page_uri("scans", "receipts", quote="Receipts are kept for seven years"))
    finally:
        tools.close()
    drawn = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    assert drawn.shape[:2] == (page.height, page.width)  # the picture itself, not enlarged
    x0, y0, x1, y1 = ImageDraw.Draw(page).textbbox((60, 130), lines[1], font=ImageFont.truetype(str(CJK_FONT), 30))
    mask = highlighted(png)
    assert mask[y0:y1, x0:x1].mean() > 0.5  # the quoted line, tinted (ink and paper alike)
    assert not mask[: y0 - 30].any() and not mask[y1 + 30 :].any()  # the other line and the margins untouched
    original = np.asarray(page).astype(int)
    assert (drawn[~mask] == original[~mask]).mean() > 0.99  # elsewhere, the picture's own pixels


def test_a_page_slower_to_draw_than_its_time_limit_is_refused_naming_the_settings(papers: Settings) -> None:
    from mcp_server.errors import InvalidQueryError
    from mcp_server.retrieval.page_pictures import page_picture
    from mcp_server.retrieval.retriever import Retriever

    hurried = papers.updated(**{"page_timeout_s": 0.01, "page_image_max_side": 6_000})
    retriever = Retriever.open(hurried)
    try:
        with pytest.raises(InvalidQueryError) as refused:
            page_picture(retriever, f"papers:{DOC_ID}#0")
    finally:
        retriever.close()
    message = str(refused.value)
    assert message.startswith("page 1 of papers:hr/leave policy could not be drawn: hr/leave policy.pdf took longer")
    assert "the shorter of RAGMCP_PAGE_TIMEOUT_S and RAGMCP_CALL_TIMEOUT_S" in message
