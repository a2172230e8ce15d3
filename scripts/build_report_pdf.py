"""Build the bundled Q2 2025 quarterly report PDF from the text in this file.

The ``reports`` demo corpus holds one PDF so that the PDF loader is exercised on first
run. Its text lives here, so the PDF is reproducible and reviewable; after editing the
text, rebuild and commit the PDF from the repository root::

    python -m scripts.build_report_pdf

The layout is plain: paragraphs wrapped to a fixed width and filled onto letter-size
pages, a paragraph moved to the next page whole when it does not fit the rest of a page.
The text must be ASCII (the writer uses the PDF standard Helvetica font).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from scripts.text_pdf import write_text_pdf

OUTPUT = Path(__file__).resolve().parent.parent / "corpora" / "reports" / "2025-q2-quarterly-report.pdf"
TITLE = "Wonderlab Quarterly Business Report - Q2 2025"
LINE_WIDTH = 80
LINES_PER_PAGE = 46

REPORT = """\
Wonderlab Quarterly Business Report - Q2 2025

Reporting period: 1 April 2025 - 30 June 2025
Published: 2025-07-18
Prepared by: Finance & Strategy, for the management team and the board
Classification: internal

1. Summary

The second quarter of 2025 was Wonderlab's strongest quarter so far. Growth came from all \
three product lines, led by new Enterprise contracts for Service Cloud and by WonderBot Pro \
customers moving from trial to paid plans. The headline results are:

- Revenue grew 37% year on year, compared with Q2 2024.
- Daily active users (DAU) passed 2.8 million, up 12% quarter on quarter.
- Net Promoter Score (NPS) reached 72.
- Paid conversion rose from 8.3% in Q1 2025 to 11.2% in Q2 2025.
- Overall KPI attainment was 94%: Sales reached 118% of target, R&D 89%.

Definitions of these measures are in the KPI definitions document of the reports library. \
Figures are unaudited management figures.

2. Revenue

Revenue rose 37% year on year. Service Cloud contributed the largest share, helped by new \
Enterprise customers in retail and financial services and by higher seat usage among \
existing Professional customers. WonderBot Pro grew fastest from a smaller base, as more \
workspaces outgrew the Basic plan and paid for overage before upgrading. WonderClean robot \
vacuum sales were supported by the 618 shopping festival promotions in June.

Service credits paid to Shanghai-region customers after the production outage of 12 June \
reduced June subscription revenue slightly. The effect on the quarter is not material.

3. Users and engagement

Daily active users passed 2.8 million for the first time, up 12% on the previous quarter. \
The increase came mainly from end users of WonderBot Pro assistants published on customer \
websites and in WeChat, and from new WonderHome app users after the 618 promotions. Agent \
sessions in Service Cloud grew in line with seats sold.

4. Customer satisfaction

NPS reached 72, up from the previous quarter. Customers most often praised the speed of \
AI-assisted replies in Service Cloud and the new customer timeline. The most common \
complaint remained setup effort for self-hosted WonderBot Pro installations; Customer \
Support published revised self-hosting guides in April and May.

5. Conversion

Paid conversion - the share of new trial workspaces that became paying customers within \
the quarter - rose from 8.3% in Q1 to 11.2% in Q2. The main drivers were the shorter \
onboarding flow for WonderBot Pro, usage e-mails sent to trial workspaces, and sales \
follow-up within one working day of a trial starting.

6. KPI attainment

Overall KPI attainment for the quarter was 94% of target, weighted by department as set \
in the 2025 plan.

Department        Attainment   Comment
Sales             118%         Enterprise pipeline closed faster than planned
R&D               89%          two roadmap items moved to Q3

R&D missed its target because two planned releases moved to Q3: the redesigned analytics \
dashboard for Service Cloud and the next X5 firmware release. Both are now in testing. The \
R&D score also reflects the engineering time spent on the 12 June outage and its follow-up \
actions.

7. Risks

- Dependence on external model providers for WonderBot Pro: price changes or outages at a \
provider affect our margins and our customers.
- Hardware supply: component lead times for the X5 camera module lengthened in May.
- Competition in the help-desk market is increasing, with aggressive pricing from new \
entrants.

8. Outlook for Q3 2025

We expect continued growth, at a lower rate than in Q2 because Q3 has no major shopping \
festival. Priorities for Q3 are shipping the delayed R&D items, adding a second Singapore \
data centre for WonderBot Pro, and reducing setup time for self-hosted customers.

Questions about this report: finance-strategy@wonderlab.example
"""


def layout(text: str) -> list[str]:
    """``text`` as pages of wrapped lines; blank lines separate paragraphs, list items hang."""
    pages: list[list[str]] = [[]]
    for paragraph in text.split("\n\n"):
        lines: list[str] = []
        for line in paragraph.split("\n"):
            indent = "  " if line.startswith("- ") else ""
            lines += textwrap.wrap(line, LINE_WIDTH, subsequent_indent=indent) or [""]
        page = pages[-1]
        if page and len(page) + 1 + len(lines) > LINES_PER_PAGE:
            pages.append(page := [])
        elif page:
            page.append("")
        page.extend(lines)
    return ["\n".join(page) for page in pages]


def build(path: Path = OUTPUT) -> None:
    """Write the report PDF to ``path``."""
    write_text_pdf(path, TITLE, layout(REPORT))


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)
    print(f"wrote {sys.argv[1] if len(sys.argv) > 1 else OUTPUT}", file=sys.stderr)
