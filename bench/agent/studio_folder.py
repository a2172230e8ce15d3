"""A second user's folder, written for held-out evaluation: an architecture studio's files in English and
Chinese, named the way people name files (spaces, commas, brackets), no ``corpus.toml``.

    python bench/agent/studio_folder.py [FOLDER]      # default: bench/.cache/agent/architecture-studio

Written with the real libraries (openpyxl, python-docx, python-pptx, reportlab, csv), the same content
on every run, for ``studio-questions.jsonl`` (32 questions, half of them not answerable from the folder
though they share its words). It was written, with its questions, before any change to the offline
agent that these questions are meant to judge, and nothing in the agent was tuned on it: the questions'
test split (``splits/studio.test.jsonl``) is for reporting only.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rental_folder import write_csv, write_deck, write_pdf, write_word, write_workbook  # noqa: E402

DEFAULT = Path(__file__).resolve().parents[1] / ".cache" / "agent" / "architecture-studio"

FEES = [
    ("Service", "Fee basis", "Amount (SEK)"),
    ("Feasibility study", "fixed", 85000),
    ("Concept design", "fixed", 240000),
    ("Building permit drawings", "fixed", 180000),
    ("Site visit", "per visit", 6500),
    ("Interior design", "per square metre", 950),
]
HOURLY = [
    ("Role", "Rate (SEK per hour)"),
    ("Partner", 1650),
    ("Senior architect", 1250),
    ("Architect", 980),
    ("Intern", 450),
]
PROJECTS = [
    ("project", "client", "city", "phase", "deadline"),
    ("Harbour library", "Gothenburg municipality", "Gothenburg", "building permit drawings", "2026-11-30"),
    ("Hangzhou museum", "Hangzhou Culture Bureau", "Hangzhou", "competition", "2026-10-15"),
    ("Lake villa", "private client", "Kungsbacka", "concept design", "2027-01-20"),
    ("Tram depot", "Västtrafik", "Gothenburg", "construction", "2027-06-01"),
]
HANDBOOK = [
    ("Title", "Staff handbook: leave and travel"),
    ("Heading 1", "Holiday and leave"),
    ("", "Staff get 30 days of paid holiday per year."),
    ("", "Up to 5 unused holiday days can be carried over to the next year."),
    ("", "Parental leave is paid at 90% of salary for the first 6 months."),
    ("Heading 1", "Travel"),
    ("", "Train is the default for trips under 600 km."),
    ("", "Flights need the approval of a partner."),
    ("", "The daily allowance for trips abroad is SEK 450."),
    ("Heading 1", "Working from home"),
    ("", "Staff may work from home two days a week, agreed with their project lead."),
]
PARTNER_MEETING = [
    ("Title", "Partner meeting, 2 September 2026"),
    ("", "Present: Anna Lindqvist, Zhou Wei, Erik Holm. Notes taken by Erik Holm."),
    ("Heading 1", "Decisions"),
    ("List Bullet", "Erik Holm succeeds Anna Lindqvist as managing partner on 1 January 2027."),
    ("List Bullet", "The studio buys a second 3D printer for the model workshop."),
    ("List Bullet", "Zhou Wei leads the studio's entry to the Hangzhou museum competition."),
    ("Heading 1", "Next meeting"),
    ("", "The next partner meeting is on 2 December 2026 in the Shanghai office."),
]
FIRE_SAFETY = [
    [("Fire safety plan for the Gothenburg studio", "Title"),
     ("The assembly point is the parking lot on the north side of Järntorget.", ""),
     ("Fire drills are held twice a year, in March and in September.", ""),
     ("Fire extinguishers are checked every 12 months by Brandkontroll AB.", "")],
    [("Evacuation", "Heading1"),
     ("The model workshop has a separate exit through the courtyard.", ""),
     ("The fire warden for the second floor is Lena Berg.", "")],
]
COMPETITION_DECK = [
    ("Hangzhou museum competition", "Entry deadline: 15 October 2026\nLed by Zhou Wei", ""),
    ("Brief", "Gross floor area: 12,000 m²\nConstruction budget: CNY 180 million", "The client wants a roof garden."),
    ("Team", "Zhou Wei, Lena Berg and two interns from the Shanghai office", ""),
]
SHANGHAI_LEASE = [
    ("Title", "上海办公室租赁合同摘要"),
    ("", "办公室位于上海市徐汇区漕溪北路88号12楼。"),
    ("", "月租金为人民币38,000元，每季度预付。"),
    ("", "租期三年，从2025年7月1日到2028年6月30日。"),
    ("", "押金为两个月租金，退租时退还。"),
]
ONBOARDING = [
    ("Title", "新员工入职指南"),
    ("", "入职第一天请带身份证和银行卡。"),
    ("", "试用期为六个月。"),
    ("", "上海办公室的工作时间是周一到周五，上午9点到下午6点。"),
    ("", "每位新员工会分配一位导师。"),
]


def write_folder(folder: Path) -> list[Path]:
    """Write the folder's eight files (replacing earlier ones); returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        write_workbook(folder / "Fee schedule 2026.xlsx", {"Fees": FEES, "Hourly rates": HOURLY}),
        write_csv(folder / "Active projects, Q3 2026.csv", PROJECTS),
        write_word(folder / "Staff handbook (leave and travel).docx", HANDBOOK),
        write_word(folder / "Q3 partner meeting notes.docx", PARTNER_MEETING),
        write_pdf(folder / "Fire safety plan.pdf", FIRE_SAFETY),
        write_deck(folder / "Hangzhou museum competition.pptx", COMPETITION_DECK),
        write_word(folder / "上海办公室 租赁合同摘要.docx", SHANGHAI_LEASE),
        write_word(folder / "新员工 入职指南.docx", ONBOARDING),
    ]


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    for written in write_folder(target):
        print(written)
