"""Generate the CSV files of the demo database (corpora/database/*.csv) for the fictional Wonderlab.

A maintainer tool: the product builds its SQLite file from the checked-in CSV and JSON
files only, never from this script. Run it after changing it, review the diff of the CSVs,
and commit both::

    python scripts/generate_demo_data.py                 # rewrites corpora/database/*.csv
    python scripts/generate_demo_data.py --out /tmp/x    # writes elsewhere (the tests do this)

The output is deterministic: every table draws from its own ``random.Random`` seeded with
a fixed string, nothing depends on the clock or on hash order, and the CSVs are written
with "\\n" line ends, so a rerun reproduces the checked-in files byte for byte.

The data agree with the company bible and the bundled documents: about 420 staff in
Shanghai, Shenzhen (opened 2019) and Singapore (opened 2021); prices in CNY, with the
Service Cloud 2025 price list from 1 January 2025; transactions from 2024-07-01 to the
as-of date 2025-09-30; the WonderBot refund rule (full within 7 days, pro rata to day 30);
SLA credits for mainland Service Cloud customers after the 12 June 2025 outage; the leave
tiers of the HR handbook; and the quarterly reports (Q2 2025: revenue +37% on 2024-Q2, DAU
2.8 million, +12% on 2025-Q1, NPS 72, paid conversion 8.3% -> 11.2%, KPI attainment 94%,
sales 118%, R&D 89%; Q1 2025: revenue +29%, DAU 2.5 million, NPS 68). Vacuum prices live
only here: the X3 was cut from ¥2,499 to ¥2,199 on 2025-08-15.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TypeVar

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "corpora" / "database"
SEED = "wonderlab-demo-2025-09-30"
WINDOW_START = date(2024, 7, 1)
AS_OF = date(2025, 9, 30)
END_OF_DATA = datetime(2025, 9, 30, 23, 59, 59)
X3_PRICE_CUT = date(2025, 8, 15)
X5_LAUNCH = date(2024, 9, 5)  # the X5 specification sheet's date
WONDERBOT_LAUNCH = date(2023, 3, 1)  # a product of its own since 2023

T = TypeVar("T")
Record = dict[str, object]


def rng_for(table: str) -> random.Random:
    """An independent, reproducible random stream per table (str seeds hash with sha512, not hash())."""
    return random.Random(f"{SEED}/{table}")


def pick(rng: random.Random, weighted: Mapping[T, float]) -> T:
    """One key of ``weighted``, drawn with probability proportional to its value."""
    return rng.choices(list(weighted), weights=list(weighted.values()))[0]


def day_between(rng: random.Random, first: date, last: date) -> date:
    return first + timedelta(days=rng.randint(0, (last - first).days))


def add_months(day: date, months: int) -> date:
    """``day`` moved by whole months; callers keep days at 28 or below."""
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, day.day)


def cny(fen: int) -> str:
    """An amount in fen (1/100 yuan) as yuan with two decimals."""
    return f"{fen // 100}.{fen % 100:02d}"


# --- departments and employees -------------------------------------------------------------------


@dataclass(frozen=True)
class Department:
    id: int
    name: str
    office: str
    founded: date  # nobody in the department was hired before this day
    size: int
    head: str
    lead: str
    roles: tuple[str, ...]
    offices: dict[str, float]
    salary: tuple[int, int]


DEPARTMENTS = (
    Department(1, "Executive Office", "Shanghai", date(2016, 3, 1), 4, "Chief Executive Officer", "",
               ("Chief Operating Officer", "Chief of Staff", "Executive Assistant"), {"Shanghai": 1}, (18_000, 98_000)),
    Department(2, "R&D", "Shanghai", date(2016, 3, 1), 150, "Chief Technology Officer", "Engineering Manager",
               ("Backend Engineer", "Frontend Engineer", "Mobile Engineer", "Machine Learning Engineer",
                "Data Engineer", "QA Engineer", "Site Reliability Engineer", "Security Engineer"),
               {"Shanghai": 70, "Shenzhen": 20, "Singapore": 10}, (22_000, 50_000)),
    Department(3, "Product", "Shanghai", date(2016, 6, 1), 30, "VP Product", "Group Product Manager",
               ("Product Manager", "Product Designer", "UX Researcher"), {"Shanghai": 85, "Singapore": 15},
               (22_000, 45_000)),
    Department(4, "Smart Home Hardware", "Shenzhen", date(2019, 1, 7), 40, "VP Smart Home Hardware",
               "Hardware Engineering Manager",
               ("Hardware Engineer", "Firmware Engineer", "Industrial Designer", "Quality Engineer",
                "Supply Chain Specialist"), {"Shenzhen": 90, "Shanghai": 10}, (20_000, 45_000)),
    Department(5, "Sales", "Shanghai", date(2016, 6, 1), 70, "VP Sales", "Regional Sales Manager",
               ("Account Executive", "Sales Development Representative", "Solutions Consultant"),
               {"Shanghai": 50, "Shenzhen": 20, "Singapore": 30}, (15_000, 35_000)),
    Department(6, "Marketing", "Shanghai", date(2017, 3, 1), 25, "Head of Marketing", "Marketing Manager",
               ("Growth Marketer", "Content Marketing Specialist", "Brand Designer",
                "E-commerce Operations Specialist"),
               {"Shanghai": 80, "Singapore": 20}, (15_000, 32_000)),
    Department(7, "Customer Success", "Shanghai", date(2016, 9, 1), 60, "Head of Customer Success",
               "Support Team Lead", ("Support Engineer", "Customer Success Manager", "Support Specialist"),
               {"Shanghai": 60, "Shenzhen": 20, "Singapore": 20}, (10_000, 22_000)),
    Department(8, "Finance", "Shanghai", date(2016, 6, 1), 15, "Chief Financial Officer", "Finance Manager",
               ("Accountant", "Financial Analyst", "Payroll Specialist"), {"Shanghai": 90, "Singapore": 10},
               (15_000, 32_000)),
    Department(9, "People Operations", "Shanghai", date(2017, 3, 1), 12, "Head of People Operations", "HR Manager",
               ("HR Business Partner", "Recruiter", "People Operations Specialist"), {"Shanghai": 85, "Singapore": 15},
               (14_000, 30_000)),
    Department(10, "IT & Operations", "Shanghai", date(2017, 6, 1), 14, "Head of IT & Operations",
               "IT Operations Manager", ("IT Support Engineer", "Systems Administrator", "Network Engineer"),
               {"Shanghai": 70, "Shenzhen": 30}, (14_000, 30_000)),
)  # fmt: skip
OFFICES_OPENED = {"Shanghai": date(2016, 3, 1), "Shenzhen": date(2019, 1, 1), "Singapore": date(2021, 1, 1)}
SALES, CUSTOMER_SUCCESS = DEPARTMENTS[4], DEPARTMENTS[6]
SALES_ENGINEERS_HIRED = (date(2025, 3, 3), date(2025, 3, 31), ("Shanghai", "Singapore", "Shanghai", "Singapore"))
"""The Q1 2025 report: additional sales engineers were hired in Shanghai and Singapore in March."""

SURNAMES = (
    "Wang", "Li", "Zhang", "Liu", "Chen", "Yang", "Zhao", "Huang", "Zhou", "Wu", "Xu", "Sun", "Hu", "Zhu", "Gao",
    "Lin", "He", "Guo", "Ma", "Luo", "Liang", "Song", "Zheng", "Xie", "Han", "Tang", "Feng", "Yu", "Dong", "Xiao",
    "Cheng", "Cao", "Yuan", "Deng", "Fu", "Shen", "Zeng", "Peng", "Lu", "Jiang",
)  # fmt: skip
GIVEN_NAMES = (
    "Wei", "Fang", "Xiuying", "Jing", "Lei", "Min", "Jun", "Yang", "Yan", "Chao", "Tao", "Ming", "Hao", "Yu", "Jie",
    "Na", "Qiang", "Lin", "Ping", "Gang", "Hui", "Xin", "Yifan", "Zihan", "Haoran", "Yuxuan", "Siyu", "Mengyao",
    "Jiahui", "Zhiwei", "Junjie", "Xiaoming", "Tingting", "Yiming", "Ruoxi", "Kaiwen", "Shuang", "Peng", "Bo",
    "Xiaoyu", "Wenjing", "Zhen", "Dan", "Lu", "Qian", "Rui", "Kai", "Yue", "Jiayi", "Chen",
)  # fmt: skip
SINGAPORE_NAMES = (
    "Daniel Tan", "Rachel Lim", "Marcus Ng", "Chloe Goh", "Ethan Teo", "Natalie Ong", "Ryan Koh", "Vanessa Chua",
    "Priya Nair", "Rajesh Kumar", "Arun Pillai", "Kavitha Menon", "Nur Aisyah Rahman", "Muhammad Hafiz",
    "Siti Nurhaliza Ismail", "Farhan Yusof", "Jasmine Lee", "Benjamin Sim", "Grace Ho", "Shawn Yeo",
)  # fmt: skip
HIRE_YEARS = {2016: 2, 2017: 4, 2018: 6, 2019: 8, 2020: 9, 2021: 12, 2022: 14, 2023: 16, 2024: 17, 2025: 12}
RATINGS = {"S": 6, "A": 22, "B": 55, "C": 13, "D": 4}
RATED_IF_HIRED_BEFORE = date(2024, 10, 1)


@dataclass
class Person:
    department: Department
    title: str
    office: str
    hired: date
    salary: int
    manager: Person | None
    name: str = ""
    id: int = 0


def employees_table() -> tuple[list[Record], list[Person]]:
    rng = rng_for("employees")
    ceo = Person(DEPARTMENTS[0], DEPARTMENTS[0].head, "Shanghai", date(2016, 3, 1), 138_000, None)
    people = [ceo]
    for department in DEPARTMENTS:
        if department.id == 1:
            people += [_member(rng, department, role, ceo) for role in department.roles]
            continue
        founded = department.founded
        head = Person(department, department.head, department.office,
                      day_between(rng, founded + timedelta(days=6), founded + timedelta(days=730)),
                      _round_salary(rng.randint(75_000, 110_000)), ceo)  # fmt: skip
        leads = []
        for _ in range(max(1, round((department.size - 1) / 9))):
            hired = day_between(rng, founded, date(2022, 12, 31))
            salary = _round_salary(rng.randint(42_000, 68_000))
            leads.append(Person(department, department.lead, office_on(rng, department, hired), hired, salary, head))
        members = department.size - 1 - len(leads)
        people += [head, *leads]
        people += [_member(rng, department, rng.choice(department.roles), rng.choice(leads)) for _ in range(members)]
        if department is SALES:
            _hire_sales_engineers(rng, people[-members:])
    _name(rng, people)
    people.sort(key=lambda person: (person.hired, person.name))
    for number, person in enumerate(people, start=1):
        person.id = number
    rows: list[Record] = [
        {
            "id": p.id, "name": p.name, "email": p.name.lower().replace(" ", ".") + "@wonderlab.example",
            "department_id": p.department.id, "title": p.title, "office": p.office, "hire_date": p.hired,
            "manager_id": p.manager.id if p.manager else None, "monthly_salary_cny": p.salary,
            "rating_2024": pick(rng, RATINGS) if p.hired < RATED_IF_HIRED_BEFORE else None,
        }
        for p in people
    ]  # fmt: skip
    return rows, people


def office_on(rng: random.Random, department: Department, hired: date) -> str:
    """One of the department's offices that had opened when the person was hired."""
    open_then = {office: weight for office, weight in department.offices.items() if OFFICES_OPENED[office] <= hired}
    return pick(rng, open_then or {"Shanghai": 1})


def _member(rng: random.Random, department: Department, role: str, manager: Person) -> Person:
    year = pick(rng, {year: weight for year, weight in HIRE_YEARS.items() if year >= department.founded.year})
    hired = day_between(rng, max(date(year, 1, 1), department.founded), min(date(year, 12, 31), date(2025, 9, 15)))
    low, high = department.salary
    if department.id == 1:  # the executive office's roles are ordered by seniority
        salary = [98_000, 52_000, 18_000][department.roles.index(role)]
    else:
        salary = rng.randint(low, high)
    if department.id != 1 and hired.year <= 2021 and rng.random() < 0.5:
        role, salary = f"Senior {role}", salary * 13 // 10
    return Person(department, role, office_on(rng, department, hired), hired, _round_salary(salary), manager)


def _hire_sales_engineers(rng: random.Random, sales_staff: list[Person]) -> None:
    first, last, offices = SALES_ENGINEERS_HIRED
    for person, office in zip(sales_staff, offices):
        person.title, person.office, person.hired = "Solutions Consultant", office, day_between(rng, first, last)


def _round_salary(amount: int) -> int:
    return amount // 100 * 100


def _name(rng: random.Random, people: list[Person]) -> None:
    """Unique names: Chinese names (family name first), and local names for some Singapore staff."""
    taken: set[str] = set()
    for person in people:
        while not person.name or person.name in taken:
            if person.office == "Singapore" and rng.random() < 0.5:
                person.name = rng.choice(SINGAPORE_NAMES)
            else:
                person.name = chinese_name(rng)
        taken.add(person.name)


def chinese_name(rng: random.Random) -> str:
    return f"{rng.choice(SURNAMES)} {rng.choice(GIVEN_NAMES)}"


def departments_table() -> list[Record]:
    return [
        {"id": d.id, "name": d.name, "cost_center": f"WL-{d.id * 100}", "office": d.office} for d in DEPARTMENTS
    ]


# --- leave ---------------------------------------------------------------------------------------


def entitled_days(hired: date, year: int) -> float:
    """The leave policy: 10 days a year (pro rata from the first month), 15 after 3 years of
    service and 20 after 5, each new tier from the month after the anniversary; rounded to half days."""
    twelfths = 0
    start = hired.year * 12 + hired.month
    for month in range(year * 12 + 1, year * 12 + 13):
        if month < start:
            continue
        years = max(0, (month - start - 1) // 12)
        twelfths += 20 if years >= 5 else 15 if years >= 3 else 10
    return half_days(twelfths / 12)


def half_days(days: float) -> float:
    return int(days * 2 + 0.5) / 2


def leave_balances_table(people: list[Person]) -> list[Record]:
    """2024 and 2025 per employee. Carried-over days are always used first (before they lapse
    at the end of March), so next year's carry-over is this year's entitlement + carry-over - taken."""
    rng = rng_for("leave_balances")
    rows: list[Record] = []
    for person in people:
        carried = 0.0
        if person.hired.year <= 2024:
            entitled = entitled_days(person.hired, 2024)
            carried = half_days(rng.uniform(0, 5)) if person.hired.year < 2024 else 0.0
            taken = min(entitled + carried, carried + half_days(entitled * rng.uniform(0.55, 1.0)))
            rows.append(_leave_row(person, 2024, entitled, carried, taken))
            carried = entitled + carried - taken
        entitled = entitled_days(person.hired, 2025)
        taken = min(entitled + carried, carried + half_days(entitled * rng.uniform(0.15, 0.75)))
        rows.append(_leave_row(person, 2025, entitled, carried, taken))
    return rows


def _leave_row(person: Person, year: int, entitled: float, carried: float, taken: float) -> Record:
    return {"employee_id": person.id, "year": year, "entitled_days": f"{entitled:.1f}",
            "carried_over_days": f"{carried:.1f}", "taken_days": f"{taken:.1f}"}  # fmt: skip


# --- products --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Product:
    id: int
    sku: str
    line: str
    name: str
    price: int | None  # yuan; None = quoted
    unit: str
    seats: int | None
    api_calls: int | None
    effective: date
    previous: int | None = None


SERVICE_CLOUD_2025 = date(2025, 1, 1)  # the 2025 price list replaced the 2024 one
WONDERBOT_PRICES = date(2025, 3, 1)  # the price page's "valid from"; the prices themselves did not change
PRODUCTS = (
    Product(1, "SC-BASIC", "Service Cloud", "Service Cloud Basic plan", 1999, "month", 5, None, SERVICE_CLOUD_2025,
            1799),
    Product(2, "SC-PRO", "Service Cloud", "Service Cloud Professional plan", 4999, "month", 20, None,
            SERVICE_CLOUD_2025, 4499),
    Product(3, "SC-ENT", "Service Cloud", "Service Cloud Enterprise plan", 9999, "month", None, None,
            SERVICE_CLOUD_2025, 8999),
    Product(4, "WB-BASIC", "WonderBot Pro", "WonderBot Pro Basic plan", 99, "month", None, 10_000, WONDERBOT_PRICES),
    Product(5, "WB-PRO", "WonderBot Pro", "WonderBot Pro Pro plan", 299, "month", None, 100_000, WONDERBOT_PRICES),
    Product(6, "WB-ENT", "WonderBot Pro", "WonderBot Pro Enterprise plan", None, "month", None, None,
            WONDERBOT_PRICES),
    Product(7, "WC-X3", "WonderClean", "WonderClean X3", 2199, "unit", None, None, X3_PRICE_CUT, 2499),
    Product(8, "WC-X5", "WonderClean", "WonderClean X5", 3999, "unit", None, None, X5_LAUNCH),
)  # fmt: skip
SC_PLANS = {PRODUCTS[0]: 45, PRODUCTS[1]: 40, PRODUCTS[2]: 15}
WB_PLANS = {PRODUCTS[3]: 50, PRODUCTS[4]: 40, PRODUCTS[5]: 10}
X3, X5 = PRODUCTS[6], PRODUCTS[7]


def products_table() -> list[Record]:
    return [
        {
            "id": p.id, "sku": p.sku, "product_line": p.line, "name": p.name,
            "price_cny": None if p.price is None else cny(p.price * 100), "price_unit": p.unit,
            "seats_included": p.seats, "api_calls_per_month": p.api_calls, "price_effective_from": p.effective,
            "previous_price_cny": None if p.previous is None else cny(p.previous * 100),
        }
        for p in PRODUCTS
    ]  # fmt: skip


def price_on(product: Product, day: date) -> int:
    """List price in yuan on ``day`` (the previous price before the current one took effect)."""
    if product.previous is not None and day < product.effective:
        return product.previous
    assert product.price is not None
    return product.price


# --- customers -------------------------------------------------------------------------------------

CITIES = {
    ("Shanghai", "CN"): 18, ("Beijing", "CN"): 14, ("Shenzhen", "CN"): 12, ("Hangzhou", "CN"): 10,
    ("Guangzhou", "CN"): 8, ("Chengdu", "CN"): 6, ("Nanjing", "CN"): 5, ("Suzhou", "CN"): 4, ("Wuhan", "CN"): 4,
    ("Xi'an", "CN"): 3, ("Singapore", "SG"): 8, ("Kuala Lumpur", "MY"): 4, ("Jakarta", "ID"): 3,
    ("Bangkok", "TH"): 3, ("Hong Kong", "HK"): 4,
}  # fmt: skip
CONSUMER_CITIES = {city: weight for city, weight in CITIES.items() if city[1] == "CN"}
"""The online store sells robots in mainland China only; abroad, distributors sell them."""
INDUSTRIES = {
    "Retail": ("Retail", "Department Stores", "Mart"), "E-commerce": ("Online", "Commerce", "Shop"),
    "Banking": ("Bank", "Financial"), "Insurance": ("Insurance", "Assurance"),
    "Logistics": ("Logistics", "Express", "Freight"), "Healthcare": ("Health", "Medical", "Clinics"),
    "Education": ("Education", "Learning"), "Travel": ("Travel", "Holidays"),
    "Telecommunications": ("Telecom", "Mobile"),
    "Manufacturing": ("Manufacturing", "Industries", "Electronics"), "Gaming": ("Games", "Interactive"),
    "Real estate": ("Properties", "Realty"),
}  # fmt: skip
BRAND_WORDS = (
    "Bluepeak", "Jinhai", "Huaxin", "Silverleaf", "Yunfan", "Redwood", "Qingshan", "Starbridge", "Longmen", "Baifu",
    "Tianyi", "Greenfield", "Minghui", "Harborline", "Zhongda", "Lotus", "Everbright", "Kunlun", "Sunway",
    "Pearl River", "Jade Gate", "Northstar", "Hengtai", "Golden Bay", "Skyline", "Ruifeng", "Crescent", "Meridian",
)  # fmt: skip
LEGAL_FORMS = {"CN": "{} Co., Ltd.", "SG": "{} Pte. Ltd.", "MY": "{} Sdn. Bhd.", "ID": "PT {}", "TH": "{} Co., Ltd.",
               "HK": "{} Limited"}  # fmt: skip
SIGN_UP_YEARS = {2022: 20, 2023: 30, 2024: 40, 2025: 30}
BUSINESSES = 200
CONSUMERS = 400


@dataclass
class Customer:
    name: str
    kind: str
    city: tuple[str, str]
    industry: str | None
    signed_up: date
    account_manager: int | None
    id: int = 0


def businesses(sales_staff: Sequence[Person]) -> list[Customer]:
    """Companies, each looked after by a sales person: from Singapore for customers abroad."""
    rng = rng_for("customers")
    singapore = [person for person in sales_staff if person.office == "Singapore"]
    mainland = [person for person in sales_staff if person.office != "Singapore"]
    taken: set[str] = set()
    customers: list[Customer] = []
    while len(customers) < BUSINESSES:
        city = pick(rng, CITIES)
        industry = rng.choice(sorted(INDUSTRIES))
        name = LEGAL_FORMS[city[1]].format(f"{rng.choice(BRAND_WORDS)} {rng.choice(INDUSTRIES[industry])}")
        if name in taken:
            continue
        taken.add(name)
        year = pick(rng, SIGN_UP_YEARS)
        signed_up = day_between(rng, date(year, 1, 1), min(date(year, 12, 31), date(2025, 9, 25)))
        manager = rng.choice(mainland if city[1] == "CN" else singapore)
        customers.append(Customer(name, "business", city, industry, signed_up, manager.id))
    return customers


def customers_table(customers: list[Customer]) -> list[Record]:
    return [
        {"id": c.id, "name": c.name, "type": c.kind, "city": c.city[0], "country": c.city[1], "industry": c.industry,
         "signed_up_on": c.signed_up, "account_manager_id": c.account_manager}
        for c in customers
    ]  # fmt: skip


# --- orders ------------------------------------------------------------------------------------------

CYCLES = {"monthly": (1, 0), "annual": (12, 10), "three_year": (36, 20)}  # months billed, discount %


@dataclass
class Order:
    day: date
    customer: Customer
    product: Product
    order_type: str
    cycle: str
    quantity: int
    unit_price: int  # yuan
    id: int = 0

    @property
    def amount_fen(self) -> int:
        months, discount = CYCLES.get(self.cycle, (1, 0))
        return self.unit_price * 100 * self.quantity * months * (100 - discount) // 100


def subscription_orders(customers: Sequence[Customer]) -> list[Order]:
    """Charges of each business's subscriptions: one per billing period that starts in the window."""
    rng = rng_for("subscriptions")
    orders: list[Order] = []
    for customer in customers:
        lines = pick(rng, {("SC",): 55, ("WB",): 30, ("SC", "WB"): 15})
        for number, line in enumerate(lines):
            product = pick(rng, SC_PLANS if line == "SC" else WB_PLANS)
            start = customer.signed_up + timedelta(days=rng.randint(30, 300) if number else 0)
            if line == "WB":
                start = max(start, WONDERBOT_LAUNCH)
            start = start.replace(day=min(start.day, 28))
            basic_bot = product.sku == "WB-BASIC"
            cycles = {"monthly": 70, "annual": 30} if basic_bot else {"monthly": 30, "annual": 55, "three_year": 15}
            cycle = pick(rng, cycles)
            quote = rng.choice((3800, 4800, 6800, 8800, 12000))  # Enterprise bots are priced per contract
            periods = rng.randint(2, 20) if rng.random() < 0.15 else 10**6  # some customers cancel
            months = CYCLES[cycle][0]
            for period in range(periods):
                day = add_months(start, period * months)
                if day > AS_OF:
                    break
                if day >= WINDOW_START:
                    price = quote if product.price is None else price_on(product, day)
                    orders.append(Order(day, customer, product, "renewal" if period else "new", cycle, 1, price))
    return orders


def vacuum_days() -> tuple[list[date], list[float]]:
    """Every day of the window with its sales weight: peaks for the 618 and 11.11 shopping festivals."""
    days = [WINDOW_START + timedelta(days=n) for n in range((AS_OF - WINDOW_START).days + 1)]
    weights = [3.0 if d.month == 6 and d.day <= 18 else 4.0 if d.month == 11 and d.day <= 11 else 1.0 for d in days]
    return days, weights


def vacuum_model(rng: random.Random, day: date) -> Product:
    if day < X5_LAUNCH:
        return X3
    return pick(rng, {X3: 70, X5: 30} if day >= X3_PRICE_CUT else {X3: 50, X5: 50})


def consumers_and_vacuum_orders(business: Sequence[Customer]) -> tuple[list[Customer], list[Order]]:
    """Consumers, each with one vacuum purchase (some with a second), and a few office purchases."""
    rng = rng_for("vacuums")
    days, weights = vacuum_days()
    consumers, orders = [], []
    for _ in range(CONSUMERS):
        day = rng.choices(days, weights)[0]
        customer = Customer(chinese_name(rng), "consumer", pick(rng, CONSUMER_CITIES), None,
                            day - timedelta(days=rng.randint(0, 20)), None)  # fmt: skip
        consumers.append(customer)
        purchases = [day]
        if rng.random() < 0.08:
            later = day + timedelta(days=rng.randint(20, 200))
            purchases += [later] if later <= AS_OF else []
        for when in purchases:
            product = vacuum_model(rng, when)
            orders.append(Order(when, customer, product, "purchase", "one_off", 2 if rng.random() < 0.05 else 1,
                                price_on(product, when)))  # fmt: skip
    for customer in rng.sample([c for c in business if c.city[1] == "CN"], 15):
        when = max(customer.signed_up, rng.choices(days, weights)[0])
        product = vacuum_model(rng, when)
        orders.append(Order(when, customer, product, "purchase", "one_off", rng.randint(2, 6), price_on(product, when)))
    return consumers, orders


def orders_table(orders: list[Order]) -> list[Record]:
    return [
        {"id": o.id, "ordered_on": o.day, "customer_id": o.customer.id, "product_id": o.product.id,
         "order_type": o.order_type, "billing_cycle": o.cycle, "quantity": o.quantity,
         "unit_price_cny": cny(o.unit_price * 100), "discount_pct": CYCLES.get(o.cycle, (1, 0))[1],
         "amount_cny": cny(o.amount_fen)}
        for o in orders
    ]  # fmt: skip


# --- refunds -----------------------------------------------------------------------------------------


OUTAGE = date(2025, 6, 12)
OUTAGE_CREDIT = "SLA service credit (12 June 2025 outage)"
Refund = tuple[date, int, str]  # day, amount in fen, reason


def refunds_table(orders: Sequence[Order]) -> list[Record]:
    """Robots returned to the online store (within 7 days for any reason, within 15 days when
    defective), WonderBot Pro cancellations under the refund rule (full within 7 days, pro rata
    to day 30, none after), and the Service Cloud SLA credits after the 12 June 2025 outage."""
    rng = rng_for("refunds")
    refunds = outage_credits(rng, orders)
    for order in orders:
        refund = None if order.id in refunds else _refund(rng, order)
        if refund is not None and refund[0] <= AS_OF:
            refunds[order.id] = refund
    rows = sorted((day, order_id, fen, reason) for order_id, (day, fen, reason) in refunds.items())
    return [
        {"id": n, "order_id": order_id, "refunded_on": day, "amount_cny": cny(fen), "reason": reason}
        for n, (day, order_id, fen, reason) in enumerate(rows, start=1)
    ]


def outage_credits(rng: random.Random, orders: Sequence[Order]) -> dict[int, Refund]:
    """10% of a month's fee for every Service Cloud subscription of the Shanghai region (customers
    in mainland China; Singapore was not affected) whose billing period covered the outage."""
    latest: dict[tuple[int, int], Order] = {}
    for order in orders:  # in date order, so the last one kept is the latest
        if order.product.line == "Service Cloud" and order.customer.city[1] == "CN" and order.day <= OUTAGE:
            latest[(order.customer.id, order.product.id)] = order
    return {
        order.id: (OUTAGE + timedelta(days=rng.randint(8, 18)), order.unit_price * 10 * order.quantity, OUTAGE_CREDIT)
        for order in latest.values()
        if add_months(order.day, CYCLES[order.cycle][0]) > OUTAGE
    }


def _refund(rng: random.Random, order: Order) -> Refund | None:
    if order.product.line == "WonderClean" and rng.random() < 0.06:
        if rng.random() < 0.7:
            return order.day + timedelta(days=rng.randint(1, 7)), order.amount_fen, "returned within 7 days"
        return order.day + timedelta(days=rng.randint(8, 15)), order.amount_fen, "defective, returned within 15 days"
    if order.product.line == "WonderBot Pro" and order.cycle == "monthly" and order.product.price:
        if rng.random() >= 0.15:
            return None
        days = rng.randint(1, 35)
        if days <= 7:
            return order.day + timedelta(days=days), order.amount_fen, "cancelled within 7 days (full refund)"
        if days < 30:
            pro_rata = (order.amount_fen * (30 - days) + 15) // 30
            return order.day + timedelta(days=days), pro_rata, "cancelled within 30 days (pro rata)"
    return None


# --- support tickets ------------------------------------------------------------------------------------

SUBJECTS = {
    ("Service Cloud", "technical"): (
        "WeChat mini-program channel stopped receiving messages", "Agent assist suggestions not loading",
        "WebSocket API disconnects every few minutes", "REST API returns 429 at peak hours",
        "Ticket routing rules not applied to new queue", "iOS app crashes when opening attachments",
    ),
    ("Service Cloud", "billing"): ("Invoice not received", "Question about annual billing discount",
                                   "Need more seats than the plan includes"),
    ("Service Cloud", "account"): ("SSO login fails for new agents", "Admin locked out after password change"),
    ("WonderBot Pro", "technical"): (
        "Self-hosted bot not responding after docker-compose update", "API timeout when calling the LLM provider",
        "Container killed: out of memory", "restore.sh fails on last night's backup", "Answers slow with GLM-4",
    ),
    ("WonderBot Pro", "billing"): ("Refund request for monthly plan", "Overage charges higher than expected",
                                   "Invoice not received"),
    ("WonderBot Pro", "account"): ("Password reset e-mail not arriving", "Cannot create a sixth API key"),
    ("WC-X3", "hardware"): ("Main brush tangled with pet hair", "Battery runs out before cleaning finishes",
                            "Suction weaker after two months", "Robot cannot find the charging dock"),
    ("WC-X5", "hardware"): ("Pet-avoidance mode missed a water bowl", "Suction weaker after two months",
                            "Robot cannot find the charging dock", "Camera cover scratched"),
    ("WonderClean", "delivery"): ("Unit arrived damaged", "Delivery delayed", "Wrong model delivered"),
    ("WonderClean", "account"): ("App cannot pair with the robot", "Cannot share the robot with family members"),
    ("WonderClean", "billing"): ("Invoice not received", "Charged twice for one order"),
}  # fmt: skip
CATEGORIES = {
    "Service Cloud": {"technical": 55, "billing": 25, "account": 20},
    "WonderBot Pro": {"technical": 55, "billing": 25, "account": 20},
    "WonderClean": {"hardware": 55, "delivery": 20, "account": 10, "billing": 15},
}  # fmt: skip
PRIORITIES = {
    "WonderClean": {"low": 30, "normal": 55, "high": 13, "urgent": 2},
    "other": {"low": 20, "normal": 45, "high": 27, "urgent": 8},
}  # fmt: skip
HOURS_TO_RESOLVE = {"urgent": (1, 12), "high": (3, 48), "normal": (8, 120), "low": (24, 240)}
CHANNELS = {"web": 35, "email": 25, "phone": 15, "wechat": 25}
SATISFACTION = {5: 45, 4: 30, 3: 13, 2: 7, 1: 5}
TICKETS = 720


def support_tickets_table(orders: Sequence[Order], agents: Sequence[Person]) -> list[Record]:
    """Tickets about products customers bought, opened after their first order; those not
    resolved by the end of 2025-09-30 are open."""
    rng = rng_for("support_tickets")
    first_orders: dict[tuple[int, int], Order] = {}
    for order in orders:
        first_orders.setdefault((order.customer.id, order.product.id), order)
    purchases = list(first_orders.values())
    tickets: list[tuple[datetime, int, Record]] = []
    while len(tickets) < TICKETS:
        order = rng.choice(purchases)
        opened = datetime.combine(order.day, datetime.min.time()) + timedelta(
            days=int(rng.expovariate(1 / 90)), hours=rng.randint(8, 21), minutes=rng.randint(0, 59),
            seconds=rng.randint(0, 59),
        )  # fmt: skip
        if opened > END_OF_DATA:
            continue
        tickets.append((opened, order.customer.id, _ticket(rng, order, opened, agents)))
    tickets.sort(key=lambda ticket: ticket[:2])
    return [{"id": n, **ticket} for n, (_, _, ticket) in enumerate(tickets, start=1)]


def _ticket(rng: random.Random, order: Order, opened: datetime, agents: Sequence[Person]) -> Record:
    line = order.product.line
    category = pick(rng, CATEGORIES[line])
    subject_key = order.product.sku if category == "hardware" else line
    priority = pick(rng, PRIORITIES.get(line, PRIORITIES["other"]))
    low, high = HOURS_TO_RESOLVE[priority]
    if category == "hardware" and rng.random() < 0.1:  # waiting for a spare part or a courier
        low, high = 72, 500
    resolved_at = opened + timedelta(minutes=rng.randint(low * 60, high * 60))
    resolved = resolved_at if resolved_at <= END_OF_DATA else None
    abroad = order.customer.city[1] != "CN"  # served from Singapore
    on_duty = [a for a in agents if a.hired <= opened.date() and (a.office == "Singapore") == abroad] or list(agents)
    rated = resolved is not None and rng.random() < 0.7
    return {
        "opened_at": opened, "customer_id": order.customer.id, "product_id": order.product.id,
        "channel": pick(rng, CHANNELS), "category": category, "priority": priority,
        "subject": rng.choice(SUBJECTS[(subject_key, category)]), "status": "open" if resolved is None else "resolved",
        "resolved_at": resolved, "assignee_id": rng.choice(on_duty).id,
        "satisfaction": pick(rng, SATISFACTION) if rated else None,
    }  # fmt: skip


# --- quarterly KPIs -------------------------------------------------------------------------------------

# quarter: revenue (CNY), DAU, NPS, paid conversion %, KPI attainment % (overall, sales, R&D)
KPIS: dict[str, tuple[int, int, int, float, int | None, int | None, int | None]] = {
    "2023-Q1": (45_200_000, 1_180_000, 58, 5.9, 88, 95, 90),
    "2023-Q2": (47_100_000, 1_280_000, 59, 6.1, 91, 101, 92),
    "2023-Q3": (50_300_000, 1_400_000, 61, 6.3, 90, 99, 88),
    "2023-Q4": (58_900_000, 1_550_000, 61, 6.6, 93, 105, 94),
    "2024-Q1": (58_100_000, 1_720_000, 62, 6.8, 90, 96, 92),
    "2024-Q2": (62_400_000, 1_860_000, 63, 7.0, 92, 101, 90),
    "2024-Q3": (67_900_000, 2_050_000, 64, 7.3, 93, 104, 91),
    "2024-Q4": (76_200_000, 2_315_000, 65, 7.6, 95, 110, 93),
    # The Q1 2025 report: revenue +29% on 2024-Q1, DAU 2.5 million (+8%), NPS 68 (+3), conversion 7.6% -> 8.3%.
    "2025-Q1": (74_949_000, 2_500_000, 68, 8.3, 91, 97, 95),
    # The Q2 2025 report: revenue +37% on 2024-Q2, DAU 2.8 million (+12%), NPS 72, conversion 11.2%.
    "2025-Q2": (85_488_000, 2_800_000, 72, 11.2, 94, 118, 89),
    "2025-Q3": (91_900_000, 3_020_000, 73, 11.5, None, None, None),  # preliminary: attainment not yet set
}


def quarterly_kpis_table() -> list[Record]:
    rows: list[Record] = []
    for quarter, (revenue, dau, nps, conversion, overall, sales, rnd) in KPIS.items():
        year, number = int(quarter[:4]), int(quarter[-1])
        starts = date(year, 3 * number - 2, 1)
        ends = add_months(starts, 3) - timedelta(days=1)
        rows.append({
            "quarter": quarter, "starts_on": starts, "ends_on": ends,
            "status": "preliminary" if ends >= AS_OF else "final", "revenue_cny": revenue, "dau": dau, "nps": nps,
            "paid_conversion_pct": f"{conversion:.1f}", "kpi_attainment_pct": overall,
            "sales_kpi_attainment_pct": sales, "rnd_kpi_attainment_pct": rnd,
        })  # fmt: skip
    return rows


# --- assembly --------------------------------------------------------------------------------------------


class Numbered(Protocol):
    id: int


N = TypeVar("N", bound=Numbered)


def numbered(items: list[N], key: Callable[[N], tuple[Any, ...]]) -> list[N]:
    """``items`` sorted by ``key`` and given ids 1, 2, ... in that order."""
    items.sort(key=key)
    for number, item in enumerate(items, start=1):
        item.id = number
    return items


def build_tables() -> dict[str, list[Record]]:
    employees, people = employees_table()
    sales = [p for p in people if p.department.id == 5 and p.title != DEPARTMENTS[4].head]
    agents = [p for p in people if p.department.id == 7 and p.title != DEPARTMENTS[6].head]
    business = businesses(sales)
    consumers, vacuum_orders = consumers_and_vacuum_orders(business)
    customers = numbered(business + consumers, key=lambda c: (c.signed_up, c.kind, c.name))
    orders = numbered(subscription_orders(business) + vacuum_orders,
                      key=lambda o: (o.day, o.customer.id, o.product.id, o.order_type))  # fmt: skip
    return {
        "departments": departments_table(),
        "employees": employees,
        "leave_balances": leave_balances_table(people),
        "products": products_table(),
        "customers": customers_table(customers),
        "orders": orders_table(orders),
        "refunds": refunds_table(orders),
        "support_tickets": support_tickets_table(orders, agents),
        "quarterly_kpis": quarterly_kpis_table(),
    }


def cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)  # dates print as YYYY-MM-DD; money and days are pre-formatted strings


def write_csvs(tables: dict[str, list[Record]], schema: Path, out: Path) -> Iterator[tuple[Path, int]]:
    """Write one CSV per table of ``schema``, columns in schema order; yield each path and row count."""
    declared = json.loads(schema.read_text(encoding="utf-8"))["tables"]
    if [table["name"] for table in declared] != list(tables):
        names = [table["name"] for table in declared]
        raise SystemExit(f"{schema} declares the tables {names}; the generator makes {list(tables)}")
    out.mkdir(parents=True, exist_ok=True)
    for table in declared:
        columns = [column["name"] for column in table["columns"]]
        rows = tables[table["name"]]
        for row in rows:
            if list(row) != columns:
                raise SystemExit(f"{table['name']}: generated columns {list(row)} differ from the schema's {columns}")
        path = out / f"{table['name']}.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows([cell(row[column]) for column in columns] for row in rows)
        yield path, len(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SOURCES, help=f"where to write the CSVs (default {SOURCES})")
    parser.add_argument(
        "--schema", type=Path, default=SOURCES / "schema.json", help="the schema whose columns to write"
    )
    args = parser.parse_args(argv)
    for path, rows in write_csvs(build_tables(), args.schema, args.out):
        print(f"{path}: {rows} rows")


if __name__ == "__main__":
    main()
