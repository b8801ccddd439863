"""`airoi verify`: recompute `/roi` and the budgets' actual figures from a pulled copy, and
compare them with the live service.

The copy side is DuckDB SQL over the store `airoi pull` wrote (`airoi.client.verify_copy`),
a few grouped queries whatever the size of the account (`airoi.client.verify_figures`, which
also names what a copy cannot recompute); with `--rows`, every row of each list too
(`airoi.client.verify_rows`). The service side is the `/budgets` list and one `/roi` per
scope and window, asked a few at a time on one keep-alive client. Nothing here prints:
`airoi verify` (`airoi.client.commands`) shows the `Verification` this returns.

`today` is the service's (R1): the `period.through` of the portfolio's `1yr` window. Every
other answer must be of the same day, or the comparison is not one (`Inconclusive`).
"""

# ruff: noqa: S608 - SQL names here are fixed table and column names; values are parameters.

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Final

import duckdb

from airoi.client.client import Client, Row
from airoi.client.copies.layout import Format
from airoi.client.copies.lists import ACCOUNT, ACCOUNT_LIST
from airoi.client.copies.sql import first_row
from airoi.client.errors import AiroiError, CopyError
from airoi.client.verify_copy import first_line, open_copy, store_format
from airoi.client.verify_figures import (
    ROI_FIGURES,
    WINDOWS,
    CopyFigures,
    Spend,
    Value,
    budget_expected,
    copy_roi,
    copy_spend,
    roi_of,
    window_bounds,
)
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

# The lists the figures are recomputed from: a copy without one of them cannot match them.
FIGURE_LISTS: Final[tuple[str, ...]] = ("initiatives", "cost_entries", "value_entries")
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
        raise CopyError(f"The store at {store} could not be read ({first_line(exc)}).") from exc
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
