"""`airoi verify`: recompute `/roi` and the budgets' actual figures from a pulled copy, and
compare them with the live service.

The copy side is DuckDB SQL over the store `airoi pull` wrote (a DuckDB file, or a directory
of Parquet or CSV files), a few grouped queries whatever the size of the account: the sums
of `account_amount_cents` by initiative, category and window (SEMANTICS R35, R7-R9), and
the budgets' spend by initiative, month and category in each row's currency (R21, R22,
R25). The service side is the `/budgets` list and one `/roi` per scope and window, asked a
few at a time on one keep-alive client. Nothing here prints: `airoi verify` (cli.py) shows
the `Verification` this returns.

`today` is the service's (R1): the `period.through` of the portfolio's `1yr` window. Every
other answer must be of the same day, or the comparison is not one (`Inconclusive`).

What a copy cannot recompute is left out, never guessed:

- a budget row in a currency other than the account's, with spend in any currency but the
  row's (the account's included): the FX table is not served, so the row is reported as not
  checkable;
- `actual_monthly_run_rate_cents` of a revised budget (more than one approved version): the
  months each version covered (R16, R22) depend on versions the service does not serve;
- `opex_actual_fiscal_ytd_cents`: the fiscal year's first month (R23) is not served;
- the budget side of a row (R16-R20, R24) and its status: budget versions are not served.
  The row's own budget figures are taken as served to check capex_remaining_cents,
  variance_cents and used_ratio.
"""

# ruff: noqa: S608 - SQL names here are fixed table and column names; values are parameters.

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any, Final

import duckdb

from airoi.client.client import Client, Row
from airoi.client.copies.layout import FILE_FORMATS, STATE_FILE, STATE_TABLE, Format
from airoi.client.copies.lists import ACCOUNT, ACCOUNT_LIST
from airoi.client.copies.sql import first_row, quote_name, quote_text
from airoi.client.copies.targets import duckdb_file_problem, held_formats
from airoi.client.errors import AiroiError, CopyError
from airoi.client.verify_rows import (
    ROW_LISTS,
    ListCheck,
    ListProgress,
    RowDifference,
    check_rows,
    copy_positions,
    held_lists,
)
from airoi.client.walk import ANOTHER_ACCOUNTS_CURSOR
from airoi.vocabulary import Window

Value = int | float | str | None

WINDOWS: Final[tuple[Window, ...]] = ("all", "1yr", "3yr", "5yr")
# The lists the figures are recomputed from: a copy without one of them cannot match them.
FIGURE_LISTS: Final[tuple[str, ...]] = ("initiatives", "cost_entries", "value_entries")
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
BUDGET_WINDOW: Final = "to date"
PRESENT: Final = "present"
ABSENT: Final = "absent"
DEFAULT_WORKERS: Final = 4


class Inconclusive(Exception):
    """The service's answers are not all of one day, so they cannot be compared."""


@dataclass(frozen=True)
class Compared:
    """One figure as the service serves it and as the copy recomputes it."""

    figure: str
    scope: str  # "portfolio", "initiative 12" or "budget 12"
    window: str  # a /roi window, or "to date" for a budget row
    service: Value
    copy: Value

    @property
    def equal(self) -> bool:
        # JSON does not tell 2 from 2.0: numbers are equal by value. Anything else (a date, a
        # presence, null) only equals the same thing.
        if _is_number(self.service) and _is_number(self.copy):
            return self.service == self.copy
        return type(self.service) is type(self.copy) and self.service == self.copy

    @property
    def difference(self) -> int | float | None:
        """copy - service, when both are numbers."""
        service, copy = self.service, self.copy
        if isinstance(service, bool) or isinstance(copy, bool):
            return None
        if isinstance(service, int | float) and isinstance(copy, int | float):
            return copy - service
        return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Unchecked:
    """A budget row whose actual figures a copy cannot recompute, and why."""

    initiative_id: int
    currency: str
    reason: str


@dataclass
class Verification:
    base_url: str
    store: Path
    fmt: Format
    today: date
    currency: str
    compared: list[Compared] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    initiatives: int = 0
    budget_rows: int = 0
    requests: int = 0
    seconds: float = 0.0
    # --rows: each list compared row by row (airoi.client.verify_rows), and the lists the
    # copy does not hold.
    lists: list[ListCheck] | None = None
    lists_not_pulled: list[str] = field(default_factory=list)
    # Whether the figures were compared: not when `--resources` leaves out a FIGURE_LISTS.
    figures: bool = True

    @property
    def differences(self) -> list[Compared]:
        return [c for c in self.compared if not c.equal]

    @property
    def row_differences(self) -> list[RowDifference]:
        return [d for check in self.lists or () for d in check.differences]


# -- the copy ------------------------------------------------------------------------------


def store_format(store: Path, fmt: str | None = None) -> Format:
    """The format of the store at `store`: as given, or as its files show."""
    if fmt is not None and fmt not in ("duckdb", "parquet", "csv"):
        raise CopyError(f"Unknown format {fmt!r}: use duckdb, parquet or csv.")
    if not store.exists():
        raise CopyError(f"There is no store at {store}: make one with airoi pull --to {store}.")
    held = held_formats(store)
    if fmt in FILE_FORMATS and held and fmt not in held:
        raise CopyError(
            f"{store} holds .{held[0]} files, not .{fmt}: give --format {held[0]}, or leave it out."
        )
    if fmt is not None:
        return fmt  # type: ignore[return-value]
    if store.is_file():
        return "duckdb"
    if held:
        return held[0]  # type: ignore[return-value]
    raise CopyError(
        f"{store} holds no .parquet or .csv files of airoi pull: give --format, or pull into it."
    )


# Each view: the columns verify reads, as (name, type, required). A required column that a
# table lacks means a copy pulled before the service served it; an optional one reads null.
_COLUMNS: Final[dict[str, tuple[tuple[str, str, bool], ...]]] = {
    "initiatives": (("id", "BIGINT", True), ("is_sample", "BOOLEAN", True)),
    "cost_entries": (
        ("initiative_id", "BIGINT", True),
        ("cost_category", "VARCHAR", True),
        ("currency", "VARCHAR", False),
        ("amount_cents", "BIGINT", True),
        ("account_amount_cents", "BIGINT", True),
        ("reported_on", "DATE", True),
    ),
    "value_entries": (
        ("initiative_id", "BIGINT", True),
        ("status", "VARCHAR", True),
        ("currency", "VARCHAR", False),
        ("amount_cents", "BIGINT", True),
        ("account_amount_cents", "BIGINT", True),
        ("reported_on", "DATE", True),
    ),
}


# The columns the figures are grouped by: a copy row without one belongs to no scope.
_KEYS: Final = (("initiatives", "id"), ("cost_entries", "initiative_id"),
                ("value_entries", "initiative_id"))  # fmt: skip


def open_copy(store: Path, fmt: Format) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views `copy_initiatives`, `copy_cost_entries` and
    `copy_value_entries` over the store, which is only read. A resource the store has no
    table (or file) for had no rows when it was pulled: its view is empty."""
    conn = duckdb.connect(":memory:")
    try:
        conn.execute("SET TimeZone = 'UTC'")
        sources = _sources(conn, store, fmt)
        for name, columns in _COLUMNS.items():
            _create_view(conn, name, sources.get(name), columns, store)
        for name, key in _KEYS:
            found = first_row(conn.execute(f"SELECT count(*) FROM copy_{name} WHERE {key} IS NULL"))
            if found and found[0]:
                raise CopyError(
                    f"The {name} of the store at {store} hold {found[0]} rows with no {key},"
                    " which airoi pull never writes: the copy was changed. Pull into a new"
                    " target (or pull again with --full-refresh)."
                )
    except duckdb.Error as exc:
        conn.close()
        raise CopyError(f"The store at {store} could not be read ({_first_line(exc)}).") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _sources(conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format) -> dict[str, str]:
    """Each resource's table as a FROM clause; resources with no rows are left out."""
    if fmt == "duckdb":
        if not store.is_file():
            raise CopyError(f"{store} is not a DuckDB file (give --format parquet or csv?).")
        problem = duckdb_file_problem(store)
        if problem is not None:
            raise CopyError(f"{store} is not a DuckDB file ({problem}): no copy airoi pull made.")
        try:
            conn.execute(f"ATTACH {quote_text(str(store))} AS pulled (READ_ONLY)")
        except duckdb.Error as exc:
            raise CopyError(
                f"{store} could not be opened as a DuckDB store ({_first_line(exc)})."
            ) from exc
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'pulled'"
            ).fetchall()
        }
        # The state `airoi pull` keeps beside the data tells a store from any other file.
        if STATE_TABLE not in tables:
            raise CopyError(f"{store} is not a store of airoi pull (it has no {STATE_TABLE}).")
        return {name: f"pulled.{quote_name(name)}" for name in _COLUMNS if name in tables}
    if not store.is_dir():
        raise CopyError(f"{store} is not a directory of {fmt} files.")
    if not (store / STATE_FILE).exists():
        raise CopyError(f"{store} is not a store of airoi pull (it has no {STATE_FILE}).")
    found: dict[str, str] = {}
    for name in _COLUMNS:
        path = store / f"{name}.{fmt}"
        if not path.exists():
            continue
        if fmt == "parquet":
            found[name] = f"read_parquet({quote_text(str(path))})"
        else:
            # Every value as the text written, then cast below: no type guessed from a sample.
            found[name] = f"read_csv({quote_text(str(path))}, header = true, all_varchar = true)"
    return found


def _create_view(
    conn: duckdb.DuckDBPyConnection,
    name: str,
    source: str | None,
    columns: Sequence[tuple[str, str, bool]],
    store: Path,
) -> None:
    view = quote_name(f"copy_{name}")
    if source is None:
        selected = ", ".join(f"CAST(NULL AS {kind}) AS {quote_name(c)}" for c, kind, _ in columns)
        conn.execute(f"CREATE VIEW {view} AS SELECT {selected} WHERE false")
        return
    present = {row[0] for row in conn.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    missing = [column for column, _, required in columns if required and column not in present]
    if missing:
        raise CopyError(
            f"The {name} of the store at {store} have no {', '.join(missing)} column: the copy "
            "was pulled from a service that did not serve it. Pull into a new target."
        )
    selected = ", ".join(
        f"CAST({quote_name(c) if c in present else 'NULL'} AS {kind}) AS {quote_name(c)}"
        for c, kind, _ in columns
    )
    conn.execute(f"CREATE VIEW {view} AS SELECT {selected} FROM {source}")


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


# -- the service, and the comparison -------------------------------------------------------

Progress = Callable[[int, int], None]


def _served(body: Row, figure: str) -> Value:
    value: Any = body
    for part in figure.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value  # type: ignore[no-any-return]


def _service_today(client: Client) -> tuple[date, str, Row]:
    body = client.roi(window="1yr")
    through = (body.get("period") or {}).get("through")
    currency = body.get("currency")
    if not isinstance(through, str) or not isinstance(currency, str):
        raise AiroiError(200, "The service's /roi?window=1yr gives no period.through.")
    return date.fromisoformat(through), currency, body


def _ask_all(
    client: Client,
    asks: Sequence[tuple[int | None, Window]],
    workers: int,
    progress: Progress | None,
) -> list[Row | None]:
    """/roi for each (initiative or portfolio, window), `workers` at a time, in order; None
    for an initiative the service does not have (404)."""

    def ask(scope: tuple[int | None, Window]) -> Row | None:
        initiative_id, window = scope
        try:
            return client.roi(window=window, initiative_id=initiative_id)
        except AiroiError as exc:
            if exc.status == 404 and initiative_id is not None:
                return None
            raise

    answers: list[Row | None] = []
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="airoi-verify") as pool:
        try:
            for answer in pool.map(ask, asks):
                answers.append(answer)
                if progress is not None:
                    progress(len(answers), len(asks))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return answers


def verify(
    client: Client,
    store: Path,
    fmt: str | None = None,
    *,
    workers: int = DEFAULT_WORKERS,
    progress: Progress | None = None,
    rows: bool = False,
    list_progress: ListProgress | None = None,
    resources: Collection[str] | None = None,
) -> Verification:
    """Compare the copy at `store` with the service `client` asks; with `rows`, every row of
    each list too (`airoi.client.verify_rows`). `resources`: the lists the copy was pulled
    with (`airoi pull --resources`); the figures are compared only when they are among them,
    and with `rows` those lists alone, each whether or not the copy holds it.

    Raises CopyError when the store cannot be read (or `resources` leaves nothing to
    compare), AiroiError when the service cannot be asked, Inconclusive when its answers
    are not all of one day.
    """
    started = time.perf_counter()
    requests_before = client.requests_sent
    left_out = [name for name in FIGURE_LISTS if resources is not None and name not in resources]
    row_lists = {resource.name for resource in ROW_LISTS}
    if left_out and resources is not None and not row_lists.intersection(resources):
        # Budgets are recomputed with the figures, never compared row by row: --rows would
        # not help either.
        raise CopyError(
            f"--resources leaves out {', '.join(left_out)}, which the figures are recomputed "
            f"from, and names no list compared row by row ({', '.join(sorted(row_lists))}): "
            "there is nothing to compare."
        )
    if left_out and not rows:
        raise CopyError(
            f"--resources leaves out {', '.join(left_out)}, which the figures are recomputed "
            "from: there is nothing to compare without --rows (every row of the lists given)."
        )
    found_format = store_format(store, fmt)
    conn = open_copy(store, found_format)
    try:
        _of_this_account(client, conn, store, found_format)
        today, currency, first = _service_today(client)
        result = Verification(client.base_url, store, found_format, today, currency)
        result.figures = not left_out
        live: dict[int, Row] = {}
        copy = CopyFigures({}, {})
        spend: dict[int, Spend] = {}
        if result.figures:
            budgets = list(client.budgets(include_sample=True))
            live = {int(row["initiative_id"]): row for row in budgets}
            copy = copy_roi(conn, today)
            spend = copy_spend(
                conn,
                {i: str(row.get("currency") or currency) for i, row in live.items()},
                currency,
                today,
            )
            result.notes += _notes(conn)
            if resources is None:
                result.notes += _figure_lists_missing(conn, store, found_format)
        if rows:
            result.lists, result.lists_not_pulled = check_rows(
                client, conn, store, found_format, progress=list_progress, only=resources
            )
    except duckdb.Error as exc:
        conn.close()
        raise CopyError(f"The store at {store} could not be read ({_first_line(exc)}).") from exc
    except BaseException:
        conn.close()
        raise
    conn.close()
    if result.figures:
        _compare_figures(client, result, live, copy, spend, first, workers, progress)
    result.requests = client.requests_sent - requests_before
    result.seconds = time.perf_counter() - started
    return result


def _of_this_account(
    client: Client, conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format
) -> None:
    """Raise CopyError when the copy is of another account than the token's: the service
    refuses a position the copy remembers as issued to another account (SEMANTICS R13).
    Compared, every figure of the two accounts would differ, and say nothing of why. The
    first position the service takes or refuses as another's tells; one it refuses as none
    of its own (a secret key changed) tells nothing, and the next is asked."""
    try:
        positions = copy_positions(conn, store, fmt)
    except (OSError, ValueError, duckdb.Error):
        return  # no positions kept (an earlier version's copy): nothing to ask with
    for name, state in positions.items():
        if not state.cursor:
            continue
        try:
            client.get_json(
                f"/{ACCOUNT_LIST if name == ACCOUNT else name}",
                {"cursor": state.cursor, "limit": "1"},
            )
        except AiroiError as exc:
            if exc.status == 400 and exc.message.startswith(ANOTHER_ACCOUNTS_CURSOR):
                raise CopyError(
                    f"The copy at {store} is of another account than this token's (the "
                    "service refused its remembered position as issued to another account): "
                    "its figures are not this account's to compare. Verify it with a token of "
                    "its own account."
                ) from None
            if exc.status == 400:
                continue
            raise
        return


def _compare_figures(
    client: Client,
    result: Verification,
    live: Mapping[int, Row],
    copy: CopyFigures,
    spend: Mapping[int, Spend],
    first: Row,
    workers: int,
    progress: Progress | None,
) -> None:
    """/roi of the portfolio and of each initiative over every window, and each live budget
    row, against the copy's figures; Inconclusive when the service's day changed meanwhile.
    `first` is the portfolio's 1yr answer, asked already."""
    ids = sorted(set(live) | set(copy.initiatives) | set(copy.sums))
    asks: list[tuple[int | None, Window]] = [(None, w) for w in WINDOWS if w != "1yr"]
    asks += [(i, w) for i in ids if i in live for w in WINDOWS]
    answers = dict(zip(asks, _ask_all(client, asks, workers, progress), strict=True))
    answers[(None, "1yr")] = first

    days = _compare_scopes(result, ids, copy, answers)
    days |= _compare_budgets(result, live, spend)
    today = result.today.isoformat()
    other_days = sorted(days - {today})
    if other_days:
        raise Inconclusive(
            f"The service's day changed while it was asked ({today}, then "
            f"{', '.join(other_days)}): its answers cannot be compared. Run again."
        )


def _compare_scopes(
    result: Verification,
    ids: Sequence[int],
    copy: CopyFigures,
    answers: Mapping[tuple[int | None, Window], Row | None],
) -> set[str]:
    """/roi of the portfolio and of each initiative against the copy's sums; the days the
    answers are of."""
    days: set[str] = set()
    portfolio = copy.scope(i for i, sample in copy.initiatives.items() if not sample)
    for window in WINDOWS:
        body = answers[(None, window)]
        assert body is not None
        days |= _check_period(result, "portfolio", window, body)
        _compare_roi(result, "portfolio", window, body, portfolio[window])
    for initiative_id in ids:
        scope = f"initiative {initiative_id}"
        copy_has = PRESENT if initiative_id in copy.initiatives else ABSENT
        bodies = [answers.get((initiative_id, w)) for w in WINDOWS]
        service_has = PRESENT if all(b is not None for b in bodies) else ABSENT
        result.compared.append(Compared("initiative", scope, "", service_has, copy_has))
        if service_has == ABSENT:
            continue
        own = copy.scope([initiative_id])
        for window, body in zip(WINDOWS, bodies, strict=True):
            assert body is not None
            days |= _check_period(result, scope, window, body)
            _compare_roi(result, scope, window, body, own[window])
    result.initiatives = len(ids)
    return days


def _compare_budgets(
    result: Verification, live: Mapping[int, Row], spend: Mapping[int, Spend]
) -> set[str]:
    """Each live budget row against the copy's spend; the days the rows are of."""
    days: set[str] = set()
    for initiative_id, row in sorted(live.items()):
        days.add(str(row.get("as_of")))
        expected = budget_expected(row, spend.get(initiative_id, Spend()), result.today)
        if isinstance(expected, str):
            row_currency = str(row.get("currency") or result.currency)
            result.unchecked.append(Unchecked(initiative_id, row_currency, expected))
            continue
        for figure, value in expected.items():
            result.compared.append(
                Compared(figure, f"budget {initiative_id}", BUDGET_WINDOW, row.get(figure), value)
            )
    result.budget_rows = len(live)
    return days


def _check_period(result: Verification, scope: str, window: str, body: Row) -> set[str]:
    """The day the answer is of (its period.through); the portfolio's window starts are
    compared with R8's, since the copy's sums use R8's."""
    period = body.get("period") or {}
    bounds = window_bounds(window, result.today)
    if bounds is None:
        return set()
    if scope == "portfolio":
        result.compared.append(
            Compared("period.from", scope, window, period.get("from"), bounds[0].isoformat())
        )
    return {str(period.get("through"))}


def _compare_roi(
    result: Verification, scope: str, window: str, body: Row, sums: Sequence[int]
) -> None:
    expected = roi_of(*sums)
    for figure in ROI_FIGURES:
        result.compared.append(
            Compared(figure, scope, window, _served(body, figure), expected[figure])
        )


def _figure_lists_missing(conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format) -> list[str]:
    """A note when the copy holds none of a list the figures are recomputed from."""
    held = held_lists(conn, store, fmt)
    missing = [name for name in FIGURE_LISTS if name not in held]
    if not missing:
        return []
    return [
        f"The copy holds no {', '.join(missing)} (pulled with --resources, or a pull cut off "
        "before them): the figures recomputed from them differ for that reason. A copy "
        "pulled with --resources is verified with the same --resources."
    ]


def _notes(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """What in the copy explains differences before they are read (a copy pulled
    incrementally since before the service served reported_on and account_amount_cents
    keeps those rows without them)."""
    notes = []
    for name in ("cost_entries", "value_entries"):
        found = first_row(
            conn.execute(
                f"SELECT count(*) FROM copy_{name} WHERE reported_on IS NULL"
                " OR (account_amount_cents IS NULL AND amount_cents IS NOT NULL)"
            )
        )
        missing = int(found[0]) if found else 0
        if missing:
            notes.append(
                f"{missing} {name} in the copy have no reported_on or account_amount_cents "
                "(pulled before the service served them): pull into a new target."
            )
    return notes
