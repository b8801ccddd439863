"""GET /roi, its breakdowns and GET /budgets on a large account, against the raw SQL each needs.

    python -m bench.money [--cost-entries 1000000 --value-entries 200000 --initiatives 2000]
                          [--postgres URL]

For each database: load a generated bundle (budgets on three initiatives in four), then time
through a real server on loopback GET /roi (all, 1yr) and GET /budgets (limit 100, 500), and
the same sums as one hand-written query on the raw driver (sqlite3 / psycopg); the same for
GET /roi/breakdown by month and by initiative (a page of 500) against the grouped sums. Prints
the median and p99 of each and the ratio service/raw (targets: /roi and its breakdowns within
2x, a /budgets page of 100 within 3x).
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from collections.abc import Callable
from datetime import date
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy.engine import make_url

from bench.common import load, ok, scratch_databases, serving, timed_interleaved
from bench.make_bundle import ACCOUNT_ID, write_bundle

TODAY = date(2026, 6, 15)
ONE_YEAR_FROM = date(2025, 6, 16)

PORTFOLIO = (
    "account_id = {a} AND initiative_id NOT IN "
    "(SELECT id FROM initiatives WHERE account_id = {a} AND is_sample)"
)
ROI_SQL = """
SELECT cost_category, SUM(account_amount_cents) FROM cost_entries
 WHERE {scope} {span} GROUP BY cost_category
UNION ALL
SELECT 'approved', SUM(account_amount_cents) FROM value_entries
 WHERE {scope} AND status = 'approved' {span}
"""
# The same sums grouped by one more column, with the initiatives' titles (SEMANTICS R37): by
# category first and by day for months, which keeps SQLite on the covering ROI index (grouping
# by entry_month there reads every row from the table: 1.5 s against 0.2 s, 200,000 entries).
SPLIT_SQL = """
SELECT {key}, cost_category, SUM(account_amount_cents) FROM cost_entries
 WHERE {scope} GROUP BY cost_category, {key}
UNION ALL
SELECT {key}, 'approved', SUM(account_amount_cents) FROM value_entries
 WHERE {scope} AND status = 'approved' GROUP BY {key}
{titles}"""
# By initiative, every initiative of the portfolio with its title, as the service serves them.
TITLES_SQL = """UNION ALL
SELECT id, title, 0 FROM initiatives WHERE account_id = {a} AND NOT is_sample
"""
BUDGET_SQL = """
WITH page AS (
  SELECT id FROM initiatives WHERE account_id = {a} AND NOT is_sample
  ORDER BY updated_at, id LIMIT {limit}
)
SELECT c.initiative_id, c.entry_month, c.cost_category, SUM(c.account_amount_cents)
  FROM cost_entries c WHERE c.initiative_id IN (SELECT id FROM page) AND c.entry_date <= '{today}'
 GROUP BY c.initiative_id, c.entry_month, c.cost_category
UNION ALL
SELECT v.initiative_id, v.effective_from, v.status, v.opex_cents
  FROM budget_versions v WHERE v.initiative_id IN (SELECT id FROM page)
"""


def raw_runner(url: str) -> Callable[[str], list[Any]]:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        sqlite = sqlite3.connect(parsed.database or "")
        return lambda sql: sqlite.execute(sql).fetchall()
    pg = psycopg.connect(
        parsed.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
    )
    return lambda sql: pg.execute(sql).fetchall()


A = ACCOUNT_ID
# (label, path, query, the hand-written SQL giving the same sums)
CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("roi_all", "roi", {}, ROI_SQL.format(scope=PORTFOLIO.format(a=A), span="")),
    (
        "roi_1yr",
        "roi",
        {"window": "1yr"},
        ROI_SQL.format(
            scope=PORTFOLIO.format(a=A),
            span=f"AND entry_date BETWEEN '{ONE_YEAR_FROM}' AND '{TODAY}'",
        ),
    ),
    (
        "roi_by_month",
        "roi/breakdown",
        {"by": "month", "limit": 500},
        SPLIT_SQL.format(key="entry_date", scope=PORTFOLIO.format(a=A), titles=""),
    ),
    (
        "roi_by_initiative",
        "roi/breakdown",
        {"by": "initiative", "limit": 500},
        SPLIT_SQL.format(
            key="initiative_id", scope=PORTFOLIO.format(a=A), titles=TITLES_SQL.format(a=A)
        ),
    ),
    ("budgets_100", "budgets", {"limit": 100}, BUDGET_SQL.format(a=A, limit=100, today=TODAY)),
    ("budgets_500", "budgets", {"limit": 500}, BUDGET_SQL.format(a=A, limit=500, today=TODAY)),
]
TARGETS = {"roi": 2.0, "budgets_100": 3.0}


def _get(client: httpx.Client, path: str, params: dict[str, Any]) -> httpx.Response:
    return ok(client.get(path, params=params))


def measure_money(url: str, repeats: int) -> dict[str, dict[str, Any]]:
    """Each case through `airoi serve` (today fixed) and as its raw SQL, the two called in
    turn: p50, p99, ratio."""
    raw = raw_runner(url)
    figures: dict[str, dict[str, Any]] = {}
    with serving(url, AIROI_TODAY=TODAY.isoformat()) as client:
        for label, path, params, sql in CASES:
            # Side by side, call after call: this machine's speed drifts within minutes.
            calls: dict[str, Callable[[], Any]] = {
                "service": partial(_get, client, path, params),
                "raw": partial(raw, sql),
            }
            timings = timed_interleaved(calls, repeats)
            service, direct = timings["service"], timings["raw"]
            ratio = service["p50_ms"] / direct["p50_ms"]
            figures[label] = {"service": service, "raw": direct, "ratio": ratio}
    return figures


def money_lines(figures: dict[str, dict[str, Any]]) -> list[str]:
    lines = []
    for label, f in figures.items():
        target = TARGETS["roi"] if label.startswith("roi") else TARGETS.get(label)
        verdict = (
            ""
            if target is None
            else (f"  {'ok  ' if f['ratio'] <= target else 'MISS'} (target <= {target:g})")
        )
        lines.append(
            f"  {label:12} service p50 {f['service']['p50_ms']:8.1f} ms "
            f"p99 {f['service']['p99_ms']:8.1f} ms"
            f" | raw p50 {f['raw']['p50_ms']:8.1f} ms p99 {f['raw']['p99_ms']:8.1f} ms"
            f" | ratio {f['ratio']:.2f}x{verdict}"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost-entries", type=int, default=1_000_000)
    parser.add_argument("--value-entries", type=int, default=200_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--postgres", help="an admin URL; a scratch database is made and dropped")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="airoi-bench-"))
    bundle = work / "bundle.json"
    rows = write_bundle(
        bundle,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
        budgets=True,
    )
    print(f"bundle: {rows:,} records, {bundle.stat().st_size / 1e6:,.0f} MB; today {TODAY}")
    with scratch_databases(work, args.postgres) as targets:
        for name, url in targets:
            loaded = load(url, bundle, rows)
            print(
                f"{name}: loaded {rows:,} records in {loaded['load_s']:.0f} s "
                f"({loaded['load_rows_per_s']:,.0f} records/s, "
                f"peak RSS {loaded['load_peak_rss_mb']:.0f} MB)"
            )
            for line in money_lines(measure_money(url, args.repeats)):
                print(line, flush=True)


if __name__ == "__main__":
    main()
