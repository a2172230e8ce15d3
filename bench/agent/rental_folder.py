"""A user's folder as people keep one: a small rental shop's Office files, a PDF and a CSV, no ``corpus.toml``.

    python bench/agent/rental_folder.py [FOLDER]      # default: bench/.cache/agent/rental-shop

Written with the real libraries (openpyxl, python-docx, python-pptx, reportlab, csv), the same
content on every run, for the offline agent's evaluation set (``evidence-folder-questions.jsonl``):
a price sheet, a lead-times CSV, board meeting notes, a winter-tyre policy (PDF, two pages), the
Oslo shop project deck and the shop rules. What the folder does not say is as deliberate as
what it says: it names the Oslo shop but not its rent, mentions insurance but no deductible,
lists suppliers but no helmets, so the unanswerable questions share its words.
"""

from __future__ import annotations

import csv
import datetime
import sys
from pathlib import Path

import docx
import openpyxl
import pptx
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

DEFAULT = Path(__file__).resolve().parents[1] / ".cache" / "agent" / "rental-shop"
WRITTEN = datetime.datetime(2026, 3, 20, 9, 0)

PRICES = [
    ("Item", "Daily rate (NOK)", "Weekly rate (NOK)", "Deposit (NOK)"),
    ("City bike", 250, 1200, 1000),
    ("Mountain bike", 450, 2200, 2000),
    ("E-bike", 650, 3200, 4000),
    ("Child bike trailer", 200, 900, 800),
    ("Touring skis", 350, 1700, 1500),
    ("Alpine ski set", 500, 2400, 2500),
    ("Snowboard", 450, 2100, 2000),
    ("Roof box", 300, 1400, 1500),
]
DISCOUNTS = [
    ("Customer group", "Discount"),
    ("Students", "15%"),
    ("Groups of 5 or more", "10%"),
    ("Hotel partners", "20%"),
]
LEAD_TIMES = [
    ("supplier", "item", "lead_time_days", "minimum_order"),
    ("Nordic Bikes AS", "E-bike batteries", 21, 4),
    ("Nordic Bikes AS", "Mountain bike frames", 35, 2),
    ("Alpin Supply", "Ski bindings", 10, 6),
    ("Alpin Supply", "Ski wax", 4, 30),
    ("Velo Parts", "Brake pads", 3, 20),
    ("TyreHouse", "Van winter tyres", 5, 4),
]
BOARD_MEETING = [
    ("Title", "Board meeting, 12 March 2026"),
    ("", "Present: Kari Nilsen (chair), Ingrid Dahl, Ola Berg, Sofie Lie. Minutes taken by Sofie Lie."),
    ("Heading 1", "Results for 2025"),
    ("", "E-bike rentals grew 34% in 2025 and are now the largest source of income."),
    ("", "Ski rentals fell slightly because of the short winter season."),
    ("Heading 1", "Decisions"),
    ("List Bullet", "The board approved opening a second shop in Oslo in spring 2027."),
    ("List Bullet", "Ingrid Dahl leads the Oslo shop project and reports to the board every quarter."),
    ("List Bullet", "Both delivery vans get new winter tyres before 1 November 2026."),
    ("List Bullet", "The insurance policy is to be reviewed with the broker before the summer season."),
    ("Heading 1", "Next meeting"),
    ("", "The next board meeting is on 11 June 2026 at the Bergen shop."),
]
SHOP_RULES = [
    ("Title", "Shop rules for rentals"),
    ("Heading 1", "Opening hours"),
    ("", "The Bergen shop is open Monday to Friday from 09:00 to 18:00 and on Saturday from 10:00 to 16:00."),
    ("", "The shop is closed on Sundays."),
    ("Heading 1", "Returns"),
    ("", "Equipment returned after closing time goes into the key drop box by the door."),
    ("", "A late return costs NOK 100 per started hour."),
    ("Heading 1", "Damage"),
    ("", "Customers pay for repairs of damage they cause, up to the amount of the deposit."),
    ("", "Every rental starts with a short safety check of the equipment together with the customer."),
]
WINTER_TYRES = [
    [("Winter tyre policy for the delivery vans", "Title"),
     ("The shop's two delivery vans drive to hotels and cabins all year round.", ""),
     ("Winter tyres must be fitted between 1 November and the first Monday after Easter.", ""),
     ("The minimum tread depth for winter tyres is 3 mm; tyres with less tread are replaced.", ""),
     ("Tyres are changed at TyreHouse, which should be booked at least two weeks ahead.", "")],
    [("Storage and studded tyres", "Heading1"),
     ("Storage of the summer tyres at TyreHouse costs NOK 900 per season for both vans.", ""),
     ("Studded tyres are used only on the van that serves the mountain cabins.", ""),
     ("Bergen charges a studded-tyre fee of NOK 45 per day for light vehicles.", "")],
]
OSLO_DECK = [
    ("Oslo shop project", "A second shop in Oslo, opening in April 2027.", "Led by Ingrid Dahl."),
    ("Milestones", "Lease signed by 30 September 2026\nFour staff hired by February 2027\nOpening in April 2027", ""),
    ("Budget", "The fit-out budget for the Oslo shop is NOK 1.2 million.\nStock for the first season: 60 bikes.", ""),
    ("Risks", "Finding a ground-floor shop near the ski trains\nHiring mechanics before the spring season", ""),
]


def write_folder(folder: Path) -> list[Path]:
    """Write the folder's six files (replacing earlier ones); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        write_workbook(folder / "price-sheet-2026.xlsx", {"Prices": PRICES, "Discounts": DISCOUNTS}),
        write_csv(folder / "lead-times.csv", LEAD_TIMES),
        write_word(folder / "board-meeting-2026-03-12.docx", BOARD_MEETING),
        write_word(folder / "shop-rules.docx", SHOP_RULES),
        write_pdf(folder / "winter-tyres.pdf", WINTER_TYRES),
        write_deck(folder / "oslo-shop-project.pptx", OSLO_DECK),
    ]


def write_workbook(path: Path, sheets: dict[str, list[tuple[object, ...]]]) -> Path:
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    workbook.properties.created = workbook.properties.modified = WRITTEN
    workbook.save(path)
    return path


def write_csv(path: Path, rows: list[tuple[object, ...]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return path


def write_word(path: Path, blocks: list[tuple[str, str]]) -> Path:
    document = docx.Document()
    document.core_properties.title = blocks[0][1]
    document.core_properties.created = document.core_properties.modified = WRITTEN
    for style, text in blocks:
        document.add_paragraph(text, style=style or None)
    document.save(str(path))
    return path


def write_pdf(path: Path, pages: list[list[tuple[str, str]]]) -> Path:
    styles = getSampleStyleSheet()
    story: list[object] = []
    for number, page in enumerate(pages):
        if number:
            story.append(PageBreak())
        story.extend(Paragraph(text, styles[style or "BodyText"]) for text, style in page)
    SimpleDocTemplate(str(path), pagesize=A4, title=pages[0][0][0], invariant=1).build(story)
    return path


def write_deck(path: Path, slides: list[tuple[str, str, str]]) -> Path:
    presentation = pptx.Presentation()
    presentation.core_properties.created = presentation.core_properties.modified = WRITTEN
    for title, body, notes in slides:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    presentation.save(str(path))
    return path


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    for written in write_folder(target):
        print(written)
