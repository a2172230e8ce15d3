"""The evidence view in a real browser: Debian's Chromium, driven headless by Playwright, shows the view in
a small test host page served on 127.0.0.1 that plays the host's side of the MCP Apps extension and passes
the view's ``tools/call`` and ``resources/read`` on to a real ``ragmcp serve`` over stdio.

The corpus is one PDF written with reportlab, whose second page carries the passage quoted, at a known
height; the test checks the verdicts of a ``check_answer`` result, the quote the view asks the server
for, the picture of its page with the highlight over the quoted line, and that the view fetched nothing.
"""

from __future__ import annotations

import base64
import http.server
import io
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from PIL import Image, ImageChops

from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.surface.links import page_uri
from mcp_server.surface.view import VIEW_URI
from tests.helpers import corpus_folder, make_settings, subprocess_env
from tests.mcp_server.surface.test_view import apps_host

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
HOST_PAGE = Path(__file__).with_name("view_host.html")
PAGE_WIDTH, PAGE_HEIGHT = 595.0, 842.0  # A4, in points
LEFT, FONT_SIZE = 72.0, 11
QUOTE_Y = 560.0  # the quoted line's baseline on page 2, in points from the bottom
QUOTE = "The master key is rotated every 90 days by the duty officer."
HOSTILE = "Markup is only text here: <img src=x onerror=alert(1)> <b>not bold</b>"
PAGES = [
    [
        "Vault operations guide",
        "This guide describes how the vault team runs the key vault from day to day.",
        "Staff sign the access log before they open the vault room.",
        HOSTILE,
    ],
    [
        "Key rotation",
        "The vault holds 40 keys in separate steel drawers.",
        QUOTE,
        "Rotation is recorded in the key register with the officer's initials.",
    ],
]


def write_guide(path: Path) -> None:
    """A two-page PDF (reportlab): a heading and lines of 11 pt text per page, the quote on page 2 at QUOTE_Y."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setTitle("Vault operations guide")
    for heading, *lines in PAGES:
        pdf.setFont("Helvetica-Bold", 16)
        pdf.drawString(72, 760, heading)
        pdf.setFont("Helvetica", FONT_SIZE)
        for number, line in enumerate(lines):
            pdf.drawString(LEFT, 600 - 40 * number if line != QUOTE else QUOTE_Y, line)
        pdf.showPage()
    pdf.save()


@pytest.fixture(scope="module")
def guide(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    root = tmp_path_factory.mktemp("view")
    folder = corpus_folder(root, "vault", "The vault team's guide.")
    write_guide(folder / "operations.pdf")
    settings = make_settings(root / "data", folder)
    ingest(settings)
    return settings


@contextmanager
def host_page_server() -> Iterator[str]:
    """The test host page, served on 127.0.0.1 (a free port) until the block ends; yields its URL."""
    page = HOST_PAGE.read_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(page if self.path == "/" else b"")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def as_json(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def highlighted(marked: bytes, plain: bytes) -> tuple[float, float, float, float]:
    """Left, top, right and bottom of what differs visibly between two pictures of one page, as fractions of its
    size (their palettes may differ a shade: 256 colours each)."""
    with Image.open(io.BytesIO(marked)) as picture, Image.open(io.BytesIO(plain)) as bare:
        difference = ImageChops.difference(picture.convert("RGB"), bare.convert("RGB")).convert("L")
        box = difference.point(lambda shade: 255 if shade > 16 else 0).getbbox()
        assert box is not None, "the picture shows no highlight"
        width, height = picture.size
        return box[0] / width, box[1] / height, box[2] / width, box[3] / height


async def screenshot(page: Any, path: Path) -> None:
    """A picture of the view as the host shows it, kept with the test's files (its path printed)."""
    await page.locator("#view").screenshot(path=str(path))
    print(f"\nscreenshot of the evidence view: {path}")


COLOURS = "nodes => nodes.map(node => [getComputedStyle(node).color, getComputedStyle(node).backgroundColor])"


def contrast(foreground: str, background: str) -> float:
    """The WCAG contrast ratio of two CSS colours given as 'rgb(r, g, b)'."""

    def luminance(colour: str) -> float:
        channels = [int(value) / 255 for value in re.findall(r"\d+", colour)[:3]]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    light, dark = sorted((luminance(foreground), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def quote_width() -> float:
    """The width of the quoted line on its page, in points."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    return float(stringWidth(QUOTE, "Helvetica", FONT_SIZE))


async def test_the_evidence_view_shows_verdicts_quotes_and_the_highlighted_page_in_chromium(
    guide: Settings, tmp_path: Path
) -> None:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's package 'chromium' (apt-get install chromium)")
    from playwright.async_api import async_playwright, expect

    server = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_server", "serve"], env=subprocess_env(guide), cwd=tmp_path
    )
    async with Client(server, extensions=[apps_host()]) as client, async_playwright() as playwright:
        found = (await client.call_tool("keyword_search", {"query": "rotated master key"})).structured_content
        assert found is not None
        cited = found["hits"][0]["citation"]["id"]
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        view_uri = (listed["check_answer"].meta or {})["ui"]["resourceUri"]  # where a host finds the view
        assert view_uri == VIEW_URI
        view_html = (await client.read_resource(view_uri)).contents[0].text  # type: ignore[union-attr]

        async def forward(method: str, params: dict[str, Any]) -> dict[str, Any]:
            if method == "tools/call":
                return as_json(await client.call_tool(params["name"], params.get("arguments") or {}))
            return as_json(await client.read_resource(params["uri"]))

        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        page = await browser.new_page(viewport={"width": 820, "height": 1000})
        requested: list[str] = []
        errors: list[str] = []
        page.on("request", lambda request: requested.append(request.url))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        await page.expose_function("forwardToServer", forward)
        with host_page_server() as url:
            await page.goto(url)
            view = page.frame_locator("#view")

            # A check_answer result: one verdict per sentence, the reason of the one that fails.
            answer = (
                f"The master key is rotated every 90 days [{cited}]. The vault holds 12 keys [{cited}]. "
                "Each key hangs on a brass hook."
            )
            check = as_json(await client.call_tool("check_answer", {"answer": answer}))
            await page.evaluate("([html, args, result]) => showToolResult(html, args, result)",
                                [view_html, {"answer": answer}, check])  # fmt: skip
            sentences = view.locator("li.sentence")
            await expect(sentences.locator(".status")).to_have_text(["\u2713 supported", "\u2717 unsupported", "! uncited"])
            await expect(sentences.nth(1)).to_contain_text("12")
            for theme in ("dark", "light"):  # the host's theme, as it tells the view
                await page.evaluate("theme => setTheme(theme)", theme)
                await expect(view.locator("html")).to_have_css("color-scheme", theme)
                for foreground, background in await view.locator(".status").evaluate_all(COLOURS):
                    assert contrast(foreground, background) >= 4.5  # WCAG AA for text
            await expect(view.locator("h2")).to_have_text("Answer check: needs work")
            evidence_page = sentences.nth(0).locator("figure.page img")  # the supported sentence's evidence, pictured
            await expect(evidence_page).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
            assert await evidence_page.evaluate("image => image.decode().then(() => image.naturalWidth)") > 0
            await expect(view.locator("figure.page")).to_have_count(1)
            await screenshot(page, tmp_path / "evidence-view-check.png")

            # The view asks the host to read the evidence: get_document with the quote, through the real server.
            await sentences.nth(0).get_by_role("button", name="Show in document").focus()
            await page.keyboard.press("Enter")  # the view's controls are buttons, reached and used by keyboard
            await expect(view.locator("blockquote.quote mark")).to_have_text(QUOTE)
            await expect(view.locator("h2")).to_be_focused()  # the keyboard goes on from the top of the document
            asked = [m for m in await page.evaluate("fromView") if m.get("method") == "tools/call"]
            assert asked[-1]["params"]["name"] == "get_document" and asked[-1]["params"]["arguments"]["quote"]

            # Its page picture, read through the host, with the highlight over the quoted line.
            picture = view.locator("figure.page img")
            await expect(picture).to_have_count(1)
            await expect(picture).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
            assert await picture.evaluate("image => image.decode().then(() => image.naturalWidth)") > 0
            shown = base64.b64decode((await picture.get_attribute("src") or "").split(",", 1)[1])
            reads = [m["params"]["uri"] for m in await page.evaluate("fromView") if m.get("method") == "resources/read"]
            assert reads and all(uri.startswith("page://vault/operations?") for uri in reads)  # through the host
            plain = await client.read_resource(page_uri("vault", "operations", page=2))
            left, top, right, bottom = highlighted(shown, base64.b64decode(plain.contents[0].blob))  # type: ignore[union-attr]
            baseline = 1 - QUOTE_Y / PAGE_HEIGHT
            assert top < baseline < bottom + 0.01 and bottom - top < 0.05  # the quoted line, and only it
            assert abs(left - LEFT / PAGE_WIDTH) < 0.02 and abs(right - (LEFT + quote_width()) / PAGE_WIDTH) < 0.02

            await screenshot(page, tmp_path / "evidence-view-quote.png")

            # A neighbouring chunk, read through the host too; Back returns to the quote, then to the verdicts.
            await view.get_by_role("button", name="\u2190 Chunk 0").click()
            await expect(view.locator("article.chunk h3")).to_have_text(["[vault:operations#0]"])
            await expect(view.locator("article.chunk")).to_contain_text(HOSTILE)  # document text stays text
            assert await view.locator("article.chunk p.text *").count() == 0  # no element made of it
            await expect(view.locator("article.chunk figure.page img")).to_have_count(1)  # its page, linked by the result
            await view.get_by_role("button", name="Back").click()
            await expect(view.locator("blockquote.quote mark")).to_have_text(QUOTE)
            await view.get_by_role("button", name="Back").click()
            await expect(view.locator("li.sentence")).to_have_count(3)

            # A search result: every hit, each with the picture of its page.
            search = as_json(await client.call_tool("hybrid_search", {"query": "vault keys"}))
            await page.evaluate("([html, args, result]) => showToolResult(html, args, result)",
                                [view_html, {"query": "vault keys"}, search])  # fmt: skip
            hits = search["structuredContent"]["hits"]
            await expect(view.locator("article.hit")).to_have_count(len(hits))
            await expect(view.locator("article.hit figure.page img")).to_have_count(len(hits))
            await expect(view.locator("article.hit h3").first).to_contain_text(hits[0]["citation"]["id"])
            assert not errors  # nothing failed in the page or the view, and no policy was violated

            # Trusted Types with no policy: the view could not write HTML from a string even if it tried.
            refused = "() => { try { document.body.innerHTML = '<b>x</b>'; return 'written'; } catch (e) { return e.name; } }"
            assert await page.frames[1].evaluate(refused) == "TypeError"
        await browser.close()
    assert requested == [url]  # the view fetched nothing: no script, style, font or picture from the network
