"""The figures `airoi verify` recomputes from a copy: the sums of `account_amount_cents` by
initiative, category and window that /roi is made of (SEMANTICS R35, R7-R9), and the
budgets' spend by initiative, month and category in each row's currency, with the actual
figures of a budget row it gives (R21, R22, R25). A few grouped queries over the views of
`airoi.client.verify_copy`, whatever the size of the account, then exact arithmetic here.

What a copy cannot recompute is left out, never guessed:

- a budget row in a currency other than the account's, with spend in any currency but the
  row's (the account's included): the FX table is not served, so the row is reported as not
  checkable;
- `actual_monthly_run_rate_cents` of a revised budget (more than one approved version): the
  months each version covered (R16, R22) depend on versions the service does not serve;
- `opex_actual_fiscal_ytd_cents`: the fiscal year's first month (R23) is not served; nor,
  so, the fiscal-year projection (R46), made of that figure and the months of the fiscal
  year after the current one;
- the budget side of a row (R16-R20, R24) and its status: budget versions are not served.
  The row's own budget figures are taken as served to check capex_remaining_cents,
  variance_cents and used_ratio.
"""

# ruff: noqa: S608 - SQL names here are fixed table and column names; values are parameters.

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from fractions import Fraction
from typing import Final

import duckdb

from airoi.client.client import Row
from airoi.vocabulary import Window

Value = int | float | str | None

WINDOWS: Final[tuple[Window, ...]] = ("all", "1yr", "3yr", "5yr")
WINDOW_YEARS: Final[dict[str, int]] = {"1yr": 1, "3yr": 3, "5yr": 5}
# /roi's figures, as named in its body (SPEC 2.10); nested ones with a dot.
ROI_FIGURES: Final = (
    "approved_value_cents",
    "cost.capex_cents",
    "cost.opex_cents",
    "total_cost_cents",
    "net_value_cents",
    "roi",
)
# The budget row's figures checked (SEMANTICS R21, R22, R25).
BUDGET_FIGURES: Final = (
    "capex_actual_cents",
    "opex_actual_cents",
    "actual_to_date_cents",
    "spent_before_budget_cents",
    "capex_remaining_cents",
    "variance_cents",
    "used_ratio",
    "actual_monthly_run_rate_cents",
)


# -- windows -------------------------------------------------------------------------------


def window_bounds(window: str, today: date) -> tuple[date, date] | None:
    """[from, through] of a /roi window, both inclusive (SEMANTICS R8); None for `all`."""
    if window == "all":
        return None
    years = WINDOW_YEARS[window]
    try:
        back = today.replace(year=today.year - years)
    except ValueError:  # 29 February in a year that has none
        back = today.replace(year=today.year - years, day=28)
    return back + timedelta(days=1), today


def month_of(day: date) -> date:
    return day.replace(day=1)


def add_months(month: date, n: int) -> date:
    index = month.year * 12 + month.month - 1 + n
    return date(index // 12, index % 12 + 1, 1)


# -- the copy's figures --------------------------------------------------------------------

# [approved value, capex, opex] per window, each in account cents (SEMANTICS R9, R35).
RoiSums = dict[str, list[int]]


@dataclass
class CopyFigures:
    """What the copy holds for /roi: sums by initiative and window, and who is in it."""

    sums: dict[int, RoiSums]
    initiatives: dict[int, bool]  # id -> is_sample, as the copy has it

    def scope(self, ids: Iterable[int]) -> RoiSums:
        total: RoiSums = {window: [0, 0, 0] for window in WINDOWS}
        for initiative_id in ids:
            for window, figures in self.sums.get(initiative_id, {}).items():
                total[window] = [a + b for a, b in zip(total[window], figures, strict=True)]
        return total


def _window_filters(today: date) -> tuple[str, list[date]]:
    """One sum per window over `reported_on`: the SELECT items and their parameters."""
    items = ["sum(account_amount_cents)"]
    parameters: list[date] = []
    for window in WINDOWS[1:]:
        bounds = window_bounds(window, today)
        assert bounds is not None
        items.append("sum(account_amount_cents) FILTER (WHERE reported_on BETWEEN ? AND ?)")
        parameters += bounds
    return ", ".join(items), parameters


def copy_roi(conn: duckdb.DuckDBPyConnection, today: date) -> CopyFigures:
    """Two grouped queries: cost by (initiative, category), approved value by initiative,
    each summed over every window at once (SEMANTICS R8, R9, R35)."""
    sums: dict[int, RoiSums] = defaultdict(lambda: {window: [0, 0, 0] for window in WINDOWS})
    items, parameters = _window_filters(today)
    costs = conn.execute(
        f"SELECT initiative_id, cost_category, {items} FROM copy_cost_entries"
        " WHERE cost_category IN ('capex', 'opex') GROUP BY initiative_id, cost_category",
        parameters,
    ).fetchall()
    for initiative_id, category, *by_window in costs:
        slot = 1 if category == "capex" else 2
        for window, cents in zip(WINDOWS, by_window, strict=True):
            sums[initiative_id][window][slot] += int(cents or 0)
    values = conn.execute(
        f"SELECT initiative_id, {items} FROM copy_value_entries WHERE status = 'approved'"
        " GROUP BY initiative_id",
        parameters,
    ).fetchall()
    for initiative_id, *by_window in values:
        for window, cents in zip(WINDOWS, by_window, strict=True):
            sums[initiative_id][window][0] += int(cents or 0)
    initiatives = {
        int(initiative_id): bool(is_sample)
        for initiative_id, is_sample in conn.execute(
            "SELECT id, is_sample FROM copy_initiatives"
        ).fetchall()
    }
    return CopyFigures(dict(sums), initiatives)


def roi_of(approved: int, capex: int, opex: int) -> dict[str, Value]:
    """The /roi figures of three sums (SEMANTICS R9): roi is net / total, a float."""
    total = capex + opex
    net = approved - total
    return {
        "approved_value_cents": approved,
        "cost.capex_cents": capex,
        "cost.opex_cents": opex,
        "total_cost_cents": total,
        "net_value_cents": net,
        "roi": None if total == 0 else net / total,  # int / int: correctly rounded
    }


@dataclass
class Spend:
    """One initiative's cost entries dated through today, in its budget row's currency."""

    by_month: dict[tuple[date, str], int] = field(default_factory=dict)  # (month, category)
    foreign: set[str] = field(default_factory=set)  # currencies that cannot be converted

    def total(
        self, category: str | None = None, first: date | None = None, last: date | None = None
    ) -> int:
        return sum(
            cents
            for (month, kind), cents in self.by_month.items()
            if (category is None or kind == category)
            and (first is None or month >= first)
            and (last is None or month <= last)
        )


def copy_spend(
    conn: duckdb.DuckDBPyConnection,
    row_currencies: Mapping[int, str],
    account_currency: str,
    today: date,
) -> dict[int, Spend]:
    """Cost entries dated (R2) through today by (initiative, month, category), each in its
    budget row's currency (SEMANTICS R4, R21): `account_amount_cents` when the row is in the
    account currency, else `amount_cents` of the entries in the row's own currency. Entries
    in any other currency (with an amount) are named in `foreign`: the copy holds no FX
    table to convert them with."""
    ids = list(row_currencies)
    conn.execute(
        "CREATE OR REPLACE TEMP TABLE budget_rows AS"
        " SELECT unnest(?::BIGINT[]) AS initiative_id, unnest(?::VARCHAR[]) AS currency",
        [ids, [row_currencies[i] for i in ids]],
    )
    rows = conn.execute(
        """
        WITH dated AS (
            SELECT e.initiative_id, date_trunc('month', e.reported_on)::DATE AS month,
                   e.cost_category, e.amount_cents, e.account_amount_cents,
                   r.currency AS row_currency, coalesce(e.currency, ?) AS entry_currency
            FROM copy_cost_entries e JOIN budget_rows r USING (initiative_id)
            WHERE e.reported_on <= ? AND e.cost_category IN ('capex', 'opex')
        )
        SELECT initiative_id, month, cost_category,
               sum(CASE WHEN row_currency = ? THEN account_amount_cents
                        WHEN entry_currency = row_currency THEN amount_cents END),
               list(DISTINCT entry_currency) FILTER (
                   WHERE row_currency <> ? AND entry_currency <> row_currency
                         AND amount_cents IS NOT NULL)
        FROM dated GROUP BY initiative_id, month, cost_category
        """,
        [account_currency, today, account_currency, account_currency],
    ).fetchall()
    spend: dict[int, Spend] = defaultdict(Spend)
    for initiative_id, month, category, cents, foreign in rows:
        found = spend[initiative_id]
        found.by_month[(month, category)] = int(cents or 0)
        found.foreign.update(foreign or ())
    return dict(spend)


def budget_expected(row: Row, spend: Spend, today: date) -> dict[str, Value] | str:
    """The figures a copy gives for one live budget row, or why it cannot give them.

    The row's own budget figures (capex_budget_cents, budget_to_date_cents) and its start
    come from the service: they are not the copy's to recompute.
    """
    status = row.get("status")
    zero: dict[str, Value] = dict.fromkeys(BUDGET_FIGURES, 0)
    zero["used_ratio"] = None
    zero["actual_monthly_run_rate_cents"] = None
    if status == "no_budget":  # SEMANTICS R25: every amount 0, whatever was spent
        return zero
    if spend.foreign:
        return (
            f"spend in {', '.join(sorted(spend.foreign))} cannot be converted into "
            f"{row.get('currency')} from a copy (the FX table is not served)"
        )
    started = row.get("budget_started_on")
    if not isinstance(started, str):
        return f"the service gives status {status} and no budget_started_on"
    start = month_of(date.fromisoformat(started))
    if status == "scheduled":  # R25: nothing has begun; the spend so far is "before"
        return {**zero, "spent_before_budget_cents": spend.total()}
    capex = spend.total("capex", first=start)
    opex = spend.total("opex", first=start)
    actual = capex + opex
    budget_to_date = int(row.get("budget_to_date_cents") or 0)
    figures: dict[str, Value] = {
        "capex_actual_cents": capex,
        "opex_actual_cents": opex,
        "actual_to_date_cents": actual,
        "spent_before_budget_cents": spend.total(last=add_months(start, -1)),
        "capex_remaining_cents": int(row.get("capex_budget_cents") or 0) - capex,
        "variance_cents": budget_to_date - actual,
        "used_ratio": None if budget_to_date == 0 else actual / budget_to_date,
    }
    covered = _covered_months(row, start, today)
    if covered is not None:  # SEMANTICS R22: the last three, the mean rounded half to even once
        recent = covered[-3:]
        opex_spent = sum(spend.by_month.get((month, "opex"), 0) for month in recent)
        figures["actual_monthly_run_rate_cents"] = (
            round(Fraction(opex_spent, len(recent))) if recent else None
        )
    return figures


def _covered_months(row: Row, start: date, today: date) -> list[date] | None:
    """The complete covered months of SEMANTICS R22 (start month up to, not including, the
    current one) for a budget of one approved version: its own months, through its `ends_on`
    month. None for a revised budget, whose earlier versions (and so the months they
    covered) are not served."""
    version = row.get("current_version")
    if row.get("version_count") != 1 or not isinstance(version, dict):
        return None
    last = add_months(month_of(today), -1)
    ends_on = version.get("ends_on")
    if isinstance(ends_on, str):
        last = min(last, month_of(date.fromisoformat(ends_on)))
    months: list[date] = []
    month = start
    while month <= last:
        months.append(month)
        month = add_months(month, 1)
    return months
