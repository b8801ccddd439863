"""The ROI summary split by initiative, month, quarter, cost type, vendor or value entry
status (SEMANTICS R37).

The sums are /roi's own (`roi_sums`, and `value_by_status` for the statuses), grouped by one
more column in SQL; finance/ folds them into rows and finishes each by R9, so the rows add up
to /roi exactly.
"""

from collections.abc import Callable, Sequence
from datetime import date
from typing import Annotated, Any, Final

import msgspec
from sqlalchemy import Connection, select

from airoi.auth import Principal
from airoi.db.tables import initiatives, vendors
from airoi.errors import bad_parameter
from airoi.finance.breakdown import (
    Part,
    StatusPart,
    fiscal_quarter_label,
    fold,
    month_label,
    parts,
    quarter_of,
    quarters_from,
    status_parts,
)
from airoi.finance.periods import month_of, months_between
from airoi.listing import NOT_ISSUED, CursorCodec, PageInfo
from airoi.reports.fields import Cents, Id, note
from airoi.reports.roi import (
    RoiPeriod,
    RoiScope,
    RoiSums,
    roi_period,
    roi_scope,
    roi_sums,
    value_by_status,
)
from airoi.vocabulary import VALUE_STATUSES
from airoi.vocabulary import BreakdownBy as By

NO_VENDOR: Final = "No vendor"
NO_COST_TYPE: Final = "No cost type"
# A cost type is at most 100 characters (of up to 4 bytes each), and the cursor carries one.
MAX_CURSOR: Final = 1000
Key = int | str | None


class BreakdownRow(msgspec.Struct):
    key: Annotated[
        Id | str | None,
        note(
            "The initiative id (by=initiative), the first day of the month or fiscal quarter "
            "(month, quarter), the cost type (cost_type), the vendor id (vendor) or the value "
            "entry status (value_status); null for cost with no cost type or no vendor.",
            "2026-04-01",
        ),
    ]
    label: Annotated[
        str,
        note(
            "Display name: the initiative's title, 2026-04, Q2 2026 (FY2026/27 Q1 when the "
            "fiscal year starts in another month), the cost type, the vendor's name, the "
            'status capitalised (Draft); "No cost type" and "No vendor" for a null key.'
        ),
    ]
    approved_value_cents: Annotated[
        Cents | None,
        note(
            "Approved value entries only; null when by is cost_type or vendor. By value_status: "
            "the row's value_cents on the approved row, 0 on the others."
        ),
    ]
    capex_cents: Annotated[
        Cents | None, note("One-time part of total cost; null when by is value_status.")
    ]
    opex_cents: Annotated[
        Cents | None, note("Running part of total cost; null when by is value_status.")
    ]
    total_cost_cents: Annotated[
        Cents | None, note("capex_cents + opex_cents; null when by is value_status.")
    ]
    net_value_cents: Annotated[
        Cents | None,
        note("Approved value minus total cost; null when by is cost_type, vendor or value_status."),
    ]
    roi: Annotated[
        float | None,
        note(
            "Net value divided by total cost; null when there is no cost, and when by is "
            "cost_type, vendor or value_status."
        ),
    ]
    # SEMANTICS R37: added after the fields of version 1.
    value_cents: Annotated[
        Cents | None,
        note(
            "By value_status: the sum of the converted value entries in window and scope with "
            "that status, whatever it is; null for every other by."
        ),
    ]


class RoiBreakdown(msgspec.Struct):
    scope: RoiScope
    period: RoiPeriod
    currency: Annotated[str, note("ISO 4217 code of every amount.", "USD")]
    by: Annotated[By, note("The dimension split along.")]
    data: Annotated[
        list[BreakdownRow],
        note(
            "Ordered by key (null last; by value_status in SPEC's order of the statuses: "
            "draft, calculated, reviewed, approved, disputed, archived); across all pages they "
            "add up to GET /roi exactly."
        ),
    ]
    page: PageInfo


def _order(key: Key) -> tuple[bool, Any]:
    return (key is None, key)


def _position(by: str, key: Key) -> tuple[bool, Any]:
    """Where a row of this split sorts: by key, but the statuses in SPEC 3's order (R37)."""
    if by != "value_status":
        return _order(key)
    if key not in VALUE_STATUSES:
        raise bad_parameter(NOT_ISSUED)
    return (False, VALUE_STATUSES.index(key))


def _by_initiative(
    db: Connection, principal: Principal, scope: RoiScope, sums: RoiSums
) -> list[tuple[Key, str, Part[Any]]]:
    # Every initiative in scope, spent or not: the portfolio (samples left out, R7) or one.
    query = select(initiatives.c.id, initiatives.c.title).where(
        initiatives.c.account_id == principal.account_id
    )
    if scope.id is not None:
        query = query.where(initiatives.c.id == scope.id)
    else:
        query = query.where(initiatives.c.is_sample.is_(False))
    titles: dict[int, str] = {key: title for key, title in db.execute(query)}  # noqa: C416
    ids = sorted(titles)
    rows = parts([(i,) for i in ids], sums.cost, sums.approved)
    return [(i, titles[i], row) for i, row in zip(ids, rows, strict=True)]


def _by_period(
    sums: RoiSums,
    span: tuple[date, date] | None,
    periods: Callable[[date, date], list[date]],
    period_of: Callable[[date], date],
    label: Callable[[date], str],
) -> list[tuple[Key, str, Part[Any]]]:
    cost, approved = fold(sums.cost, sums.approved, lambda key: period_of(key[0]))
    if span is not None:
        keys = periods(*span)
    else:
        # All time: from the first period with an entry through the last.
        seen = set(cost) | set(approved or {})
        keys = periods(min(seen), max(seen)) if seen else []
    return [
        (k.isoformat(), label(k), row)
        for k, row in zip(keys, parts(keys, cost, approved), strict=True)
    ]


def _by_cost_type(sums: RoiSums) -> list[tuple[Key, str, Part[Any]]]:
    keys = sorted(sums.cost, key=lambda k: _order(k[0]))
    return [
        (k[0], NO_COST_TYPE if k[0] is None else k[0], row)
        for k, row in zip(keys, parts(keys, sums.cost, None), strict=True)
    ]


def _by_vendor(
    db: Connection, principal: Principal, sums: RoiSums
) -> list[tuple[Key, str, Part[Any]]]:
    keys = sorted(sums.cost, key=lambda k: _order(k[0]))
    ids = [k[0] for k in keys if k[0] is not None]
    names = (
        dict(
            db.execute(
                select(vendors.c.id, vendors.c.name).where(
                    vendors.c.account_id == principal.account_id, vendors.c.id.in_(ids)
                )
            ).all()
        )
        if ids
        else {}
    )
    return [
        (k[0], NO_VENDOR if k[0] is None else names.get(k[0], str(k[0])), row)
        for k, row in zip(keys, parts(keys, sums.cost, None), strict=True)
    ]


def _by_value_status(
    db: Connection, principal: Principal, initiative_id: int | None, span: tuple[date, date] | None
) -> list[BreakdownRow]:
    # Every status, in SPEC 3's order, 0 where none: value only, cost fields null (R37).
    value = value_by_status(db, principal, initiative_id=initiative_id, span=span)
    return [_status_row(part) for part in status_parts(VALUE_STATUSES, value)]


def _status_row(part: StatusPart) -> BreakdownRow:
    return BreakdownRow(
        key=part.status,
        label=part.status.capitalize(),
        approved_value_cents=part.approved_value_cents,
        capex_cents=None,
        opex_cents=None,
        total_cost_cents=None,
        net_value_cents=None,
        roi=None,
        value_cents=part.value_cents,
    )


VALUE_STATUS_AND_VENDOR: Final = (
    "by=value_status splits value entries, which name no vendor; leave vendor_id out or split "
    "by another dimension."
)

# The column each `by` groups cost by in SQL, and value by (None: a split of cost alone).
_GROUPS: Final[dict[str, tuple[Sequence[str], Sequence[str] | None]]] = {
    "initiative": (("initiative_id",), ("initiative_id",)),
    # By day, folded into months here: the date is in the covering ROI indexes, the month not.
    "month": (("entry_date",), ("entry_date",)),
    "quarter": (("entry_date",), ("entry_date",)),
    "cost_type": (("cost_type",), None),
    "vendor": (("vendor_id",), None),
}


def compute_breakdown(
    db: Connection,
    principal: Principal,
    *,
    by: str,
    window: str,
    initiative_id: int | None,
    today: date,
    vendor_id: int | None = None,
) -> tuple[RoiScope, RoiPeriod, list[BreakdownRow]]:
    """Every row of the split, ordered by key (SEMANTICS R37). `vendor_id` (the tool's
    get_roi_breakdown only) splits that vendor's cost alone: value fields null; by value
    status it is refused (400), value entries naming no vendor."""
    if by == "value_status" and vendor_id is not None:
        raise bad_parameter(VALUE_STATUS_AND_VENDOR)
    scope = roi_scope(db, principal, initiative_id)
    period, span = roi_period(window, today)
    if by == "value_status":
        return scope, period, _by_value_status(db, principal, initiative_id, span)
    cost_by, value_by = _GROUPS[by]
    sums = roi_sums(
        db,
        principal,
        initiative_id=initiative_id,
        span=span,
        cost_by=cost_by,
        value_by=value_by,
        vendor_id=vendor_id,
    )
    fy_start = principal.fiscal_year_start_month
    if by == "initiative":
        rows = _by_initiative(db, principal, scope, sums)
    elif by == "month":
        rows = _by_period(sums, span, months_between, month_of, month_label)
    elif by == "quarter":
        rows = _by_period(
            sums,
            span,
            lambda first, last: quarters_from(first, last, fy_start),
            lambda m: quarter_of(m, fy_start),
            lambda q: fiscal_quarter_label(q, fy_start),
        )
    elif by == "cost_type":
        rows = _by_cost_type(sums)
    else:
        rows = _by_vendor(db, principal, sums)
    return scope, period, [_served(*row) for row in rows]


def _served(key: Key, label: str, part: Part[Any]) -> BreakdownRow:
    f = part.figures
    return BreakdownRow(
        key=key,
        label=label,
        approved_value_cents=f.approved_value_cents if part.value_known else None,
        capex_cents=f.capex_cents,
        opex_cents=f.opex_cents,
        total_cost_cents=f.total_cost_cents,
        net_value_cents=f.net_value_cents if part.value_known else None,
        roi=f.roi if part.value_known else None,
        value_cents=None,
    )


def _seal(codec: CursorCodec, by: str, account_id: int, key: Key) -> str:
    return codec.seal(msgspec.json.encode(["roi_breakdown", by, account_id, key]))


def _after(codec: CursorCodec, by: str, account_id: int, cursor: str) -> Key:
    """The key a cursor continues after; 400 unless this split issued it to this account."""
    try:
        issued_for, issued_by, issued_to, key = msgspec.json.decode(
            codec.unseal(cursor, MAX_CURSOR), type=tuple[str, str, int, int | str | None]
        )
    except (msgspec.DecodeError, ValueError) as exc:
        raise bad_parameter(NOT_ISSUED) from exc
    if issued_for != "roi_breakdown":
        raise bad_parameter(NOT_ISSUED)
    if issued_by != by:
        raise bad_parameter(
            f"The cursor continues the breakdown by {issued_by}, not by {by}; "
            "repeat the by of the page it came from."
        )
    if issued_to != account_id:
        raise bad_parameter(
            "The cursor was issued to another account; a cursor only continues a list "
            "for the account of the token it was served to."
        )
    return key


def breakdown_page(
    db: Connection,
    principal: Principal,
    codec: CursorCodec,
    *,
    by: By,
    window: str,
    initiative_id: int | None,
    today: date,
    limit: int,
    cursor: str | None,
    vendor_id: int | None = None,
) -> RoiBreakdown:
    """One page of the split, for the endpoint and the get_roi_breakdown tool alike; a bad
    cursor is a 400 (ApiError) before anything is summed."""
    after = (
        None if cursor is None else _position(by, _after(codec, by, principal.account_id, cursor))
    )
    scope, period, rows = compute_breakdown(
        db,
        principal,
        by=by,
        window=window,
        initiative_id=initiative_id,
        today=today,
        vendor_id=vendor_id,
    )
    if after is not None:
        rows = [row for row in rows if _position(by, row.key) > after]
    served = rows[:limit]
    more = len(rows) > limit
    return RoiBreakdown(
        scope=scope,
        period=period,
        currency=principal.account_currency,
        by=by,
        data=served,
        page=PageInfo(
            has_more=more,
            next_cursor=_seal(codec, by, principal.account_id, served[-1].key) if more else None,
        ),
    )
