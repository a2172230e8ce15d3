"""The bundled demo corpora, checked against a freshly built index.

The demo knowledge is deliberately shaped (see issue 3): every required fact is found by
searching and stated in exactly one corpus, the two X3 manuals disagree and carry dates,
and the cause of the Nginx incident needs three documents, each holding one part of it.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcp_server.cli import main
from mcp_server.documents.corpus import discover_documents, load_corpus_config
from mcp_server.embedding.loading import load_embedder
from mcp_server.settings.embedding import ENGLISH_MODEL
from mcp_server.indexing.ingest import ingest
from mcp_server.models import DocumentView
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings, bundled_corpus_dirs
from scripts.build_report_pdf import OUTPUT as REPORT_PDF
from scripts.build_report_pdf import build as build_report_pdf
from tests.helpers import embedded_lengths

CORPORA = {"engineering", "handbook", "products", "reports", "support"}
ALERT = "engineering:incidents/2025-06-12-lb-no-healthy-backend-alert"
CHANGE = "engineering:changes/CHG-2025-0612-03"
LB_MANUAL = "engineering:manuals/load-balancer-configuration"
X3_V1 = "products:wonderclean/x3-user-manual-v1.0"
X3_V2 = "products:wonderclean/x3-user-manual-v2.0"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("bundled"))
    assert settings.corpora == bundled_corpus_dirs() and settings.corpora
    ingest(settings)
    retriever = Retriever.open(settings)
    yield retriever
    retriever.close()


@pytest.fixture(scope="module")
def documents(bundled: Retriever) -> dict[str, DocumentView]:
    """Every indexed document by ``corpus:doc_id``, listed from the corpus folders, not the index."""
    views = {}
    for folder in bundled_corpus_dirs():
        config = load_corpus_config(folder)
        for source in discover_documents(config):
            ref = f"{config.name}:{source.doc_id}"
            views[ref] = bundled.documents.get_document(ref)
    return views


def flat(text: str) -> str:
    """``text`` as a snippet is matched against: Markdown bold removed, whitespace collapsed."""
    return " ".join(text.replace("**", "").split())


def holders(documents: dict[str, DocumentView], snippet: str) -> set[str]:
    """The ``corpus:doc_id`` of every document whose text contains ``snippet``."""
    return {ref for ref, view in documents.items() if snippet in flat(view.text)}


def test_leave_request_question_finds_the_rule_among_the_top_hits(bundled: Retriever) -> None:
    """Both top hits are the leave policy; the request rule is one of them (the entitlement section,
    which also says "annual leave" and "request", may rank first)."""
    hits = bundled.searcher.search("how far ahead must I request annual leave")[:2]
    assert all(h.citation.id.startswith("handbook:hr/leave-policy#") for h in hits)
    (hit,) = [h for h in hits if "5 working days" in h.text]
    document = bundled.documents.get_document(hit.citation.id.split("#")[0])
    assert document.text[hit.citation.char_start : hit.citation.char_end] == hit.text


def test_chinese_question_finds_the_chinese_policy(bundled: Retriever) -> None:
    hit = bundled.searcher.search("报销需要在费用发生后多少天内提交")[0]
    assert hit.citation.doc_id == "zh/expense-policy" and "30天内" in hit.text


@pytest.mark.parametrize("code", ["ERR_VPN_AUTH_4012", "E1042"])
def test_keyword_mode_finds_exact_error_codes(bundled: Retriever, code: str) -> None:
    hit = bundled.searcher.search(code, mode="keyword")[0]
    assert hit.citation.doc_id == "it/vpn-troubleshooting" and code in hit.text


def test_every_bundled_corpus_has_a_routing_description(bundled: Retriever) -> None:
    corpora = bundled.corpora()
    assert {corpus.name for corpus in corpora} == CORPORA
    for corpus in corpora:
        assert corpus.documents > 0 and corpus.chunks >= corpus.documents
        assert "Use it for" in corpus.description or "Use it when" in corpus.description
        assert "Do not use it for" in corpus.description


# Each fact of issue 3: (its home corpus, a question a user would ask, the text that states it).
# All snippets of a fact must appear in one hit; "**" and line breaks are ignored (see flat).
FACTS = [
    # HR handbook
    ("handbook", "how many days of annual leave after 1 year of service",
     ["After 1 year of service: 10 days"]),
    ("handbook", "how many days of annual leave after 3 years of service",
     ["After 3 years of service: 15 days"]),
    ("handbook", "how many days of annual leave after 5 years of service",
     ["After 5 years of service: 20 days"]),
    ("handbook", "how far in advance must annual leave be requested",
     ["at least 5 working days before the first day of leave"]),
    ("handbook", "who approves leave of more than 5 consecutive days",
     ["more than 5 consecutive working days also needs the approval of your department director"]),
    ("handbook", "until when can unused annual leave be carried over", ["taken by the end of March"]),
    ("handbook", "when is the year-end bonus paid", ["paid with February's salary"]),
    ("handbook", "how many months of salary is the bonus for an S, A or B rating",
     ["| S | Outstanding | 4 months' salary |", "| A | Exceeds expectations | 3 months' salary |",
      "| B | Meets expectations | 2 months' salary |"]),
    ("handbook", "year-end bonus for a C rating or below", ["does not meet expectations | none |"]),
    ("handbook", "who confirms performance ratings and when",
     ["Ratings are confirmed each December by your line manager together with HR"]),
    # Service Cloud
    ("products", "which platforms does Service Cloud run on",
     ["| Web |", "| iOS app |", "| Android app |", "| WeChat mini-program |"]),
    ("products", "what APIs does Service Cloud offer", ["REST API", "WebSocket API"]),
    ("products", "Service Cloud SLA availability and latency",
     ["99.9% monthly availability", "P99 latency under 500 ms"]),
    ("products", "Service Cloud security certifications", ["ISO 27001", "SOC 2 Type II"]),
    ("products", "Service Cloud Basic plan price and seats", ["| Basic | ¥1,999/month | 5 seats |"]),
    ("products", "Service Cloud Professional plan price and seats", ["| Professional | ¥4,999/month | 20 seats |"]),
    ("products", "Service Cloud Enterprise plan price and seats", ["| Enterprise | ¥9,999/month | unlimited seats |"]),
    ("products", "what does the Service Cloud Enterprise plan include",
     ["dedicated customer-success manager", "on-premises option"]),
    ("products", "Service Cloud discount for annual and three-year billing",
     ["| Annual (paid yearly in advance) | 10% off |", "| Three-year (paid yearly or in advance) | 20% off |"]),
    # Q2 2025 quarterly report (PDF)
    ("reports", "Q2 2025 revenue growth year on year", ["Revenue grew 37% year on year"]),
    ("reports", "daily active users in Q2 2025", ["passed 2.8 million, up 12% quarter on quarter"]),
    ("reports", "Net Promoter Score in Q2 2025", ["Net Promoter Score (NPS) reached 72"]),
    ("reports", "paid conversion rate in Q2 2025", ["rose from 8.3% in Q1 2025 to 11.2% in Q2 2025"]),
    ("reports", "Q2 2025 KPI attainment overall, sales and R&D",
     ["Overall KPI attainment was 94%: Sales reached 118% of target, R&D 89%"]),
    # Architecture
    ("engineering", "core services of the platform architecture",
     ["| User service |", "| Session service |", "| Model-scheduling service |", "| Vector-retrieval service |"]),
    ("engineering", "which vector database and embedding model are used in production",
     ["Vector database: Qdrant in production", "text-embedding-3-small, producing 1536-dimensional vectors"]),
    ("engineering", "where do the production services run", ["All services run on Kubernetes", "across availability zones"]),
    # WonderBot Pro: product and pricing
    ("products", "WonderBot Pro plan prices and included API calls per month",
     ["| Basic | ¥99/month | 10K calls/month", "| Pro | ¥299/month | 100K calls/month",
      "| Enterprise | quoted individually |"]),
    ("products", "WonderBot Pro overage price for calls beyond the included quota", ["billed at ¥0.01 per call"]),
    ("products", "which large language models does WonderBot Pro support",
     ["| GPT-4 |", "| Claude 3 |", "| Gemini Pro |", "| GLM-4 |"]),
    ("products", "WonderBot Pro data residency certification and export",
     ["Data stored in-region.", "The WonderBot Pro SaaS platform is certified", "Encrypted export."]),
    # WonderBot Pro: operations
    ("support", "server requirements for self-hosting WonderBot Pro: Docker, memory, CPU",
     ["Docker 20 or later (Docker 20+)", "at least 8 GB RAM", "at least 4 CPU cores"]),
    ("support", "command to build and start the self-hosted WonderBot Pro containers", ["docker-compose up --build"]),
    ("support", "self-hosted WonderBot Pro assistant does not respond at all", ["run `docker ps`"]),
    ("support", "WonderBot Pro API requests time out", ["Check the connection to your LLM provider."]),
    ("support", "WonderBot Pro container runs out of memory", ["raise the container's memory limit"]),
    ("support", "when does the WonderBot Pro backup run and how long are backups kept",
     ["daily backup runs at 02:00", "kept for 30 days"]),
    ("support", "how do I restore a WonderBot Pro backup with the restore script", ["./restore.sh backups/"]),
    ("support", "WonderBot Pro self-hosted default alert rules CPU memory error rate",
     ["CPU usage above 80% for 5 minutes", "memory usage above 90%", "API error rate above 5%"]),
    # WonderBot Pro: FAQ
    ("support", "I forgot my WonderBot Pro password, how do I reset it", ["password reset link"]),
    ("support", "WonderBot Pro refund policy",
     ["| Within 7 days | full refund |", "| From day 7 to day 30 | pro rata refund", "| After 30 days | no refund |"]),
    ("support", "how do I get an invoice for WonderBot Pro",
     ["billing centre", "sent by e-mail within 3–5 working days"]),
    ("support", "where do I create WonderBot Pro API keys", ["Developer settings"]),
    ("support", "how many API keys can one account have", ["at most 5 API keys"]),
    # Robot vacuums
    ("products", "WonderClean X3 main brush type", ["combination brush with rows of bristles and rubber blades"]),
    ("products", "WonderClean X3 maximum suction and noise level", ["2,700 Pa", "65 dB in Standard mode"]),
    ("products", "does the X3 have pet-avoidance", ["no front camera and no pet-avoidance mode"]),
    ("products", "WonderClean X3 technical specifications battery runtime", ["up to 120 minutes"]),
    ("products", "WonderClean X3 technical specifications battery runtime", ["up to 150 minutes"]),
    ("products", "does the X5 main brush tangle with pet hair", ["Anti-tangle rubber main brush"]),
    ("products", "X5 AI pet-avoidance mode", ["AI pet-avoidance mode", "pet waste and pet bowls"]),
    ("products", "WonderClean X5 suction noise level and battery runtime",
     ["4,000 Pa", "58 dB in Quiet mode", "up to 180 minutes"]),
    ("support", "how often should I clean the robot vacuum filter in a home with cats",
     ["in homes with pets, clean the filter every week"]),
    # The incident: one part per document
    ("engineering", "production Nginx suddenly refused connections", ["refused client connections"]),
    ("engineering", "NetworkPolicy restricting ingress to the Nginx edge pods", ["restricts their ingress to the 10.20.0.0/16 range"]),
    ("engineering", "where do load balancer health checks come from", ["100.64.0.0/10"]),
    ("engineering", "what does the load balancer do when no backend is healthy",
     ["with no healthy backend, the listener refuses new client connections"]),
    ("engineering", "when is a load balancer backend marked unhealthy",
     ["fails 3 consecutive health checks is marked unhealthy"]),
]


@pytest.mark.parametrize(("corpus", "query", "snippets"), FACTS, ids=[fact[1] for fact in FACTS])
def test_each_fact_is_found_in_its_home_corpus_and_stated_in_no_other(
    bundled: Retriever, documents: dict[str, DocumentView], corpus: str, query: str, snippets: list[str]
) -> None:
    hits = bundled.searcher.search(query, top_k=5)
    # A fact may span two adjacent chunks where a chunk too long for the embedding model was cut
    # (the WonderBot Pro data protection list): the home corpus's hits hold every snippet between them.
    home = " ".join(flat(h.text) for h in hits if h.citation.corpus == corpus)
    assert all(s in home for s in snippets), f"the hits in {corpus} do not hold {snippets}; got {[h.citation.id for h in hits]}"
    for snippet in snippets:
        elsewhere = {ref for ref in holders(documents, snippet) if not ref.startswith(f"{corpus}:")}
        assert not elsewhere, f"{snippet!r} is stated outside {corpus}: {elsewhere}"


def test_the_two_x3_manuals_disagree_on_battery_life_and_carry_their_dates(
    bundled: Retriever, documents: dict[str, DocumentView]
) -> None:
    old, new = documents[X3_V1], documents[X3_V2]
    assert (old.updated, new.updated) == (datetime.date(2024, 3, 1), datetime.date(2025, 1, 15))
    assert "Manual version 1.0 — published 2024-03-01" in old.text
    assert "Manual version 2.0 — published 2025-01-15" in new.text
    assert "up to 120 minutes" in old.text and "150 minutes" not in old.text
    assert "up to 150 minutes" in new.text and "120 minutes" not in new.text
    assert holders(documents, "up to 120 minutes") == {X3_V1}
    assert holders(documents, "up to 150 minutes") == {X3_V2}
    hits = bundled.searcher.search("How long does the WonderClean X3 battery last?", top_k=10)
    dated = {(h.citation.doc_id, h.citation.updated) for h in hits}
    assert {("wonderclean/x3-user-manual-v1.0", old.updated), ("wonderclean/x3-user-manual-v2.0", new.updated)} <= dated


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        (ALERT, ["LBNoHealthyBackend", "refused client connections", "marked all six Nginx backends"]),
        (CHANGE, ["10.20.0.0/16", "including health checks"]),
        (LB_MANUAL, ["100.64.0.0/10", "3 consecutive health checks",
                     "with no healthy backend, the listener refuses new client connections"]),
    ],
)
def test_each_incident_document_holds_its_own_part_of_the_cause(
    documents: dict[str, DocumentView], ref: str, parts: list[str]
) -> None:
    for part in parts:
        assert holders(documents, part) == {ref}, part


def test_the_alert_names_the_change_but_not_the_cause(documents: dict[str, DocumentView]) -> None:
    alert, change = flat(documents[ALERT].text), flat(documents[CHANGE].text)
    assert "Change CHG-2025-0612-03 deployed to cluster `prod-sh`" in alert
    assert "| Change id | CHG-2025-0612-03 |" in change
    assert "NetworkPolicy" not in alert and "health-check network" not in alert
    assert "100.64" not in change, "the change record must not say where health checks come from"


def test_the_cat_question_needs_several_documents(documents: dict[str, DocumentView]) -> None:
    """Brush, filter care, noise, pet-avoidance and battery for the X3 and X5 live in different documents."""
    facts = ["Anti-tangle rubber main brush", "clean the filter every week", "65 dB in Standard mode",
             "58 dB in Quiet mode", "no pet-avoidance mode", "AI pet-avoidance mode", "up to 150 minutes",
             "up to 180 minutes"]
    places = set().union(*(holders(documents, fact) for fact in facts))
    assert len(places) >= 4 and {ref.split(":")[0] for ref in places} == {"products", "support"}


def test_no_document_states_a_robot_vacuum_price(documents: dict[str, DocumentView]) -> None:
    for ref, view in documents.items():
        if "WonderClean" in view.text or "X3" in view.text:
            assert "¥" not in view.text and "元" not in view.text, ref


@pytest.mark.parametrize(
    ("query", "ref"),
    [
        ("宠物避障", "products:wonderclean/zh/x5-quick-start"),
        ("快速建图", "products:wonderclean/zh/x5-quick-start"),
        ("住宿标准", "handbook:zh/expense-policy"),
    ],
)
def test_chinese_keyword_search_finds_the_chinese_documents(bundled: Retriever, query: str, ref: str) -> None:
    hit = bundled.searcher.search(query, mode="keyword")[0]
    assert f"{hit.citation.corpus}:{hit.citation.doc_id}" == ref and query in hit.text


@pytest.mark.parametrize(
    ("corpus", "question", "doc_id"),
    [
        ("handbook", "How many days of annual leave do I get after five years?", "hr/leave-policy"),
        ("products", "Which security certifications does Service Cloud hold?", "service-cloud/overview"),
        ("support", "How do I get an invoice for my WonderBot Pro subscription?",
         "wonderbot-pro/billing-refunds-invoices-faq"),
        ("engineering", "Which vector database runs in production?", "architecture/platform-overview"),
        ("reports", "What was the NPS in Q2 2025?", "2025-q2-quarterly-report"),
    ],
)
def test_cli_search_per_corpus_puts_the_right_document_first(
    bundled: Retriever, monkeypatch: pytest.MonkeyPatch, corpus: str, question: str, doc_id: str
) -> None:
    monkeypatch.setenv("RAGMCP_DATA_DIR", str(bundled.settings.data_dir))
    result = CliRunner().invoke(main, ["search", "--corpus", corpus, question, "-k", "3"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"[{corpus}:{doc_id}#")


def test_no_chunk_is_longer_than_the_embedding_model_reads(documents: dict[str, DocumentView]) -> None:
    """Counted by the model's own tokenizer, title included as it is embedded: no chunk's tail is cut off."""
    lengths = {ref: max(embedded_lengths(view)) for ref, view in documents.items()}
    window = load_embedder(ENGLISH_MODEL).max_tokens
    assert window is not None
    assert {ref: n for ref, n in lengths.items() if n > window} == {}


def test_every_loader_is_exercised(documents: dict[str, DocumentView]) -> None:
    suffixes = {Path(view.source).suffix for view in documents.values()}
    assert {".md", ".html", ".pdf"} <= suffixes
    spec = documents["products:wonderclean/x5-spec-sheet"]
    assert spec.source.endswith(".html") and spec.updated == datetime.date(2024, 9, 5)
    assert "# WonderClean X5 — Specification Sheet" in spec.text and "<td>" not in spec.text
    report = documents["reports:2025-q2-quarterly-report"]
    assert report.source.endswith(".pdf") and report.title == "Wonderlab Quarterly Business Report - Q2 2025"


def test_the_committed_report_pdf_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    rebuilt = tmp_path / "report.pdf"
    build_report_pdf(rebuilt)
    assert rebuilt.read_bytes() == REPORT_PDF.read_bytes()


@pytest.mark.slow
def test_wheel_carries_the_corpora_and_the_tokenizer(tmp_path: Path) -> None:
    """A non-editable install (what a desktop host runs) must find the demo knowledge and the model."""
    repo = Path(__file__).parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(repo)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("agentic_rag_mcp-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "mcp_server/corpora/handbook/corpus.toml" in names
    assert "mcp_server/corpora/database/schema.json" in names and "mcp_server/corpora/database/orders.csv" in names
    assert "mcp_server/corpora/reports/2025-q2-quarterly-report.pdf" in names
    assert "mcp_server/embedding/assets/minilm-tokenizer.json" in names
    assert "mcp_server/embedding/assets/NOTICE" in names
    assert "mcp_server/surface/evidence_view.html" in names  # the MCP Apps view, read with importlib.resources
    assert {"mcp_server/py.typed", "client_agent/py.typed"} <= names
