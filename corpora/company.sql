-- Wonderlab demo business database (fictional SaaS company; the HR corpus describes the same company).
-- Built into a read-only SQLite file by mcp_server.demo_database.materialize_database.
-- Each CREATE TABLE starts its column list with a one-line comment: the table description
-- that ReadOnlyDatabase.schema() publishes to models. Money is in euros; dates are ISO 8601 text.

PRAGMA foreign_keys = ON;

BEGIN;

CREATE TABLE departments ( -- One row per department: name, cost center and office location.
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE,
    cost_center TEXT    NOT NULL UNIQUE,
    location    TEXT    NOT NULL
);

CREATE TABLE employees ( -- One row per employee: department, job title, hire date, manager, monthly base salary in EUR and the performance rating confirmed in the December 2024 review (S, A, B, C or D).
    id             INTEGER PRIMARY KEY,
    name           TEXT    NOT NULL,
    email          TEXT    NOT NULL UNIQUE,
    department_id  INTEGER NOT NULL REFERENCES departments (id),
    title          TEXT    NOT NULL,
    hire_date      TEXT    NOT NULL,
    manager_id     INTEGER REFERENCES employees (id),
    monthly_salary REAL    NOT NULL,
    rating         TEXT    CHECK (rating IN ('S', 'A', 'B', 'C', 'D'))
);

CREATE TABLE leave_balances ( -- Annual leave per employee and calendar year: days entitled under the leave policy, days carried over from the previous year, and days taken so far.
    employee_id       INTEGER NOT NULL REFERENCES employees (id),
    year              INTEGER NOT NULL,
    entitled_days     REAL    NOT NULL,
    carried_over_days REAL    NOT NULL DEFAULT 0,
    taken_days        REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (employee_id, year)
);

CREATE TABLE products ( -- One row per product plan on the price list: monthly price in EUR and seats included.
    id            INTEGER PRIMARY KEY,
    name          TEXT    NOT NULL,
    plan          TEXT    NOT NULL,
    monthly_price REAL    NOT NULL,
    seats         INTEGER NOT NULL,
    UNIQUE (name, plan)
);

CREATE TABLE customers ( -- One row per customer company: country (ISO code), industry and the date it signed up.
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    country    TEXT NOT NULL,
    industry   TEXT NOT NULL,
    signed_up  TEXT NOT NULL
);

CREATE TABLE invoices ( -- One row per invoice: customer, product plan, issue date, amount in EUR and payment status (paid, open, overdue).
    id          INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id),
    product_id  INTEGER NOT NULL REFERENCES products (id),
    issued_on   TEXT    NOT NULL,
    amount      REAL    NOT NULL,
    status      TEXT    NOT NULL CHECK (status IN ('paid', 'open', 'overdue'))
);

INSERT INTO departments (id, name, cost_center, location) VALUES
    (1, 'Engineering',       'CC-100', 'Berlin'),
    (2, 'Product',           'CC-200', 'Berlin'),
    (3, 'Sales',             'CC-300', 'London'),
    (4, 'Customer Success',  'CC-400', 'Lisbon'),
    (5, 'People Operations', 'CC-500', 'Berlin');

-- Hire dates put nobody across a leave-tier boundary (1, 3, 5 years) in 2025, so each
-- 2025 entitlement is simply the handbook's tier: 10, 15 or 20 days.
INSERT INTO employees (id, name, email, department_id, title, hire_date, manager_id, monthly_salary, rating) VALUES
    (1,  'Amara Okafor',  'amara.okafor@wonderlab.example',  1, 'Chief Technology Officer', '2018-03-12', NULL, 12500, 'S'),
    (2,  'Jonas Weber',   'jonas.weber@wonderlab.example',   1, 'Senior Backend Engineer',  '2019-07-01', 1,    8200,  'A'),
    (3,  'Li Wei',        'li.wei@wonderlab.example',        1, 'Frontend Engineer',        '2021-09-13', 1,    6400,  'B'),
    (4,  'Priya Raman',   'priya.raman@wonderlab.example',   1, 'Data Engineer',            '2023-09-04', 1,    6900,  'A'),
    (5,  'Sofia Marquez', 'sofia.marquez@wonderlab.example', 2, 'Head of Product',          '2019-01-21', NULL, 9800,  'A'),
    (6,  'Tom Becker',    'tom.becker@wonderlab.example',    2, 'Product Designer',         '2021-05-10', 5,    5600,  'B'),
    (7,  'Grace Mensah',  'grace.mensah@wonderlab.example',  3, 'VP Sales',                 '2019-11-04', NULL, 10400, 'B'),
    (8,  'Oliver Hughes', 'oliver.hughes@wonderlab.example', 3, 'Account Executive',        '2023-10-17', 7,    5200,  'C'),
    (9,  'Inês Carvalho', 'ines.carvalho@wonderlab.example', 4, 'Customer Success Lead',    '2021-02-01', NULL, 6700,  'A'),
    (10, 'Mateus Silva',  'mateus.silva@wonderlab.example',  4, 'Support Engineer',         '2023-03-18', 9,    4300,  'B'),
    (11, 'Hannah Schulz', 'hannah.schulz@wonderlab.example', 5, 'Head of People',           '2018-09-03', NULL, 8800,  'B'),
    (12, 'Ravi Patel',    'ravi.patel@wonderlab.example',    5, 'Recruiter',                '2024-06-24', 11,   4600,  'B');

INSERT INTO leave_balances (employee_id, year, entitled_days, carried_over_days, taken_days) VALUES
    (1,  2024, 20, 0, 17),
    (11, 2024, 20, 0, 20),
    (1,  2025, 20, 3, 11),
    (2,  2025, 20, 0, 12),
    (3,  2025, 15, 2, 9),
    (4,  2025, 10, 0, 4),
    (5,  2025, 20, 0, 14),
    (6,  2025, 15, 1, 6),
    (7,  2025, 20, 0, 8),
    (8,  2025, 10, 0, 7.5),
    (9,  2025, 15, 0, 11),
    (10, 2025, 10, 0, 3),
    (11, 2025, 20, 0, 10),
    (12, 2025, 10, 0, 2);

INSERT INTO products (id, name, plan, monthly_price, seats) VALUES
    (1, 'Wonderlab Notebooks', 'Starter',    29.0,  5),
    (2, 'Wonderlab Notebooks', 'Team',       99.0,  25),
    (3, 'Wonderlab Notebooks', 'Enterprise', 499.0, 250),
    (4, 'Wonderlab Insights',  'Add-on',     49.0,  25);

INSERT INTO customers (id, name, country, industry, signed_up) VALUES
    (1, 'Northwind Traders', 'DE', 'Retail',     '2021-06-01'),
    (2, 'Bluefin Analytics', 'GB', 'Finance',    '2022-01-15'),
    (3, 'Casa Verde Foods',  'PT', 'Food',       '2023-03-20'),
    (4, 'Helios Energy',     'NL', 'Energy',     '2022-09-05'),
    (5, 'Kestrel Health',    'IE', 'Healthcare', '2024-02-12'),
    (6, 'Atlas Logistics',   'FR', 'Logistics',  '2025-01-08');

INSERT INTO invoices (id, customer_id, product_id, issued_on, amount, status) VALUES
    (1,  1, 2, '2025-01-31', 99.0,  'paid'),
    (2,  2, 3, '2025-01-31', 499.0, 'paid'),
    (3,  3, 1, '2025-01-31', 29.0,  'paid'),
    (4,  4, 2, '2025-01-31', 99.0,  'paid'),
    (5,  2, 4, '2025-02-28', 49.0,  'paid'),
    (6,  5, 2, '2025-02-28', 99.0,  'paid'),
    (7,  6, 1, '2025-02-28', 29.0,  'paid'),
    (8,  1, 2, '2025-03-31', 99.0,  'paid'),
    (9,  2, 3, '2025-03-31', 499.0, 'paid'),
    (10, 4, 4, '2025-03-31', 49.0,  'overdue'),
    (11, 3, 1, '2025-04-30', 29.0,  'paid'),
    (12, 5, 3, '2025-04-30', 499.0, 'open'),
    (13, 6, 2, '2025-05-31', 99.0,  'open'),
    (14, 1, 4, '2025-05-31', 49.0,  'overdue'),
    (15, 2, 3, '2025-06-30', 499.0, 'open');

COMMIT;
