"""Cost and value entries: the recurring streams of the data files made into monthly
entries, the Copilot seats, and the one-off entries."""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from typing import Any

from airoi.demo.draft import Draft, Row


def _source(draft: Draft, given: dict[str, Any] | None) -> Row:
    if given is None:
        return {"type": "manual", "ref": None, "connection_id": None}
    connection_id = draft.story.connection(given.get("connection"))
    return {"type": given["type"], "ref": given.get("ref"), "connection_id": connection_id}


def seats_in(draft: Draft, offset: int) -> int:
    """Copilot seats in month `offset`: a straight line from the first month's to the last's."""
    seats = draft.story["costs"]["seats"]
    grown = (seats["seats_last"] - seats["seats_first"]) * (offset - seats["first"])
    return int(seats["seats_first"] + grown // (seats["last"] - seats["first"]))


# Costs -----------------------------------------------------------------------


def cost_entry(
    draft: Draft,
    initiative_id: int,
    amount_cents: int | None,
    cost_type: str,
    *,
    period: int | None,
    created: str,
    vendor: tuple[int, str] | None,
    description: str,
    currency: str,
    source: Row,
    notes: str | None = None,
    is_estimated: bool = False,
    period_months: int = 1,
) -> None:
    start = None if period is None else draft.month(period)
    end = None if period is None else draft.month_end(period + period_months - 1)
    draft.rows["cost_entries"].append(
        {
            "id": draft.take_id("cost_entries"),
            "initiative_id": initiative_id,
            "amount_cents": amount_cents,
            "currency": currency,
            "cost_type": cost_type,
            "cost_category": "capex" if cost_type == "implementation" else "opex",
            "period_start": None if start is None else start.isoformat(),
            "period_end": None if end is None else end.isoformat(),
            "vendor_id": None if vendor is None else vendor[0],
            "vendor_name": None if vendor is None else vendor[1],
            "description": description,
            "notes": notes,
            "is_estimated": is_estimated,
            # Months before last month are closed in the ledger.
            "locked": end is not None and end < draft.month(-1),
            "source": source,
            "created_at": created,
            "updated_at": created,
        }
    )


def add_costs(draft: Draft) -> None:
    costs = draft.story["costs"]
    for line, stream in enumerate(costs["streams"]):
        _cost_stream(draft, stream, line)
    _seat_costs(draft, costs["seats"])
    for special in costs["specials"]:
        _one_off_cost(draft, special)


def _cost_stream(draft: Draft, stream: dict[str, Any], line: int) -> None:
    """A month's entry from `first` through `last`; usage varies, and is accrued this month."""
    invoiced_as = stream.get("vendor")
    vendor: tuple[int, str] | None = None
    currency, connection_id, connection_ended = draft.story.currency, None, None
    if invoiced_as is not None:
        vendor_id, currency, connection_id, connection_ended = draft.story.invoiced_as(invoiced_as)
        vendor = (vendor_id, invoiced_as)
    cost_type = stream["cost_type"]
    usage = cost_type in {"tokens", "infrastructure"}
    for step, offset in enumerate(range(stream["first"], stream["last"] + 1)):
        amount = stream["cents"] + stream["growth"] * step
        description = stream["description"]
        estimated = False
        if usage:
            amount += draft.rng.randint(-amount // 12, amount // 12)
            if offset == 0:  # this month so far, accrued from usage
                days = calendar.monthrange(draft.today.year, draft.today.month)[1]
                amount = amount * draft.today.day // days
                description += " (month to date)"
                estimated = True
        month = f"{draft.month(offset):%Y-%m}"
        source: Row
        if connection_id is not None and not (
            connection_ended is not None and offset >= connection_ended
        ):
            ref = f"usage/{month}/{line:02d}"
            source = {"type": "connection", "ref": ref, "connection_id": connection_id}
        elif vendor is not None:
            ref = f"AP-{month}-{line:02d}"
            source = {"type": "import", "ref": ref, "connection_id": None}
        else:
            source = _source(draft, None)
        # Milestones are invoiced at month end, usage early in the next month.
        if cost_type == "implementation":
            created = draft.at(offset, 28, 10, 30, ms=line * 10 + step)
        else:
            created = draft.at(offset + 1, 3, 6, 15, ms=line * 10 + step)
        cost_entry(
            draft,
            draft.story.initiative(stream["initiative"]),
            amount,
            cost_type,
            period=offset,
            created=created,
            vendor=vendor,
            description=description,
            currency=currency,
            source=source,
            is_estimated=estimated,
        )


def _seat_costs(draft: Draft, seats: dict[str, Any]) -> None:
    """Copilot seats, billed monthly through the connection of the vendor."""
    vendor_id, currency, connection_id, _ = draft.story.invoiced_as(seats["vendor"])
    for step, offset in enumerate(range(seats["first"], seats["last"] + 1)):
        count = seats_in(draft, offset)
        cost_entry(
            draft,
            draft.story.initiative(seats["initiative"]),
            count * seats["seat_cents"],
            seats["cost_type"],
            period=offset,
            created=draft.at(offset, 2, 4, 0, ms=step),
            vendor=(vendor_id, seats["vendor"]),
            description=seats["description"].replace("{seats}", str(count)),
            currency=currency,
            source={
                "type": "connection",
                "ref": seats["ref"].replace("{month}", f"{draft.month(offset):%Y-%m}"),
                "connection_id": connection_id,
            },
        )


def _one_off_cost(draft: Draft, special: dict[str, Any]) -> None:
    invoiced_as = special.get("vendor")
    vendor = None
    if invoiced_as is not None:
        vendor = (draft.story.invoiced_as(invoiced_as)[0], invoiced_as)
    created = draft.at(*special["created"])
    cost_entry(
        draft,
        draft.story.initiative(special["initiative"]),
        special.get("amount_cents"),
        special["cost_type"],
        period=special.get("period"),
        period_months=special.get("period_months", 1),
        created=created,
        vendor=vendor,
        description=special["description"],
        currency=special.get("currency", draft.story.currency),
        source=_source(draft, special.get("source")),
        notes=special.get("notes"),
        is_estimated=special.get("is_estimated", False),
    )


# Value -----------------------------------------------------------------------


def value_entry(
    draft: Draft,
    initiative_id: int,
    amount_cents: int | None,
    entry_type: str,
    status: str,
    *,
    period: int | None,
    created: str,
    provenance: str,
    currency: str,
    notes: str | None = None,
    is_estimated: bool = False,
    connection_id: int | None = None,
    period_months: int = 1,
) -> None:
    """A value entry; `provenance` is a key of values.toml's [provenance] (SPEC 2.4)."""
    values = draft.story["values"]
    entry_id = draft.take_id("value_entries")
    start = None if period is None else draft.month(period)
    end = None if period is None else draft.month_end(period + period_months - 1)
    formula = provenance == "formula"
    if formula:
        source_type = "formula"
    elif connection_id is not None:
        source_type = "connection"
    else:
        source_type = "manual"
    month = "none" if start is None else f"{start:%Y-%m}"
    ref = f"value:{initiative_id}:{entry_type}:{month}" if source_type != "manual" else None
    approved_at = None
    updated = created
    if status == "approved":
        # Approved in review about twelve days after the month (or the entry) closed.
        reviewed_from = end or date.fromisoformat(created[:10])
        approved_on = min(reviewed_from + timedelta(days=12), draft.today - timedelta(days=1))
        approved_at = draft.on(approved_on, 16, 45)
        updated = max(created, approved_at)
    draft.rows["value_entries"].append(
        {
            "id": entry_id,
            "initiative_id": initiative_id,
            "amount_cents": amount_cents,
            "currency": currency,
            "status": status,
            "entry_type": entry_type,
            "period_start": None if start is None else start.isoformat(),
            "period_end": None if end is None else end.isoformat(),
            "is_estimated": is_estimated,
            "confidence_score": round(0.6 + draft.rng.randint(0, 30) / 100, 2),
            "quality_score": round(0.7 + draft.rng.randint(0, 25) / 100, 2),
            "notes": notes,
            "provenance": values["provenance"][provenance],
            "calculation_version": 2 if formula else None,
            "formula_id": values["formula_ids"].get(entry_type) if formula else None,
            "source": {"type": source_type, "ref": ref, "connection_id": connection_id},
            "approved_at": approved_at,
            "created_at": created,
            "updated_at": updated,
        }
    )


def status_by_age(offset: int) -> str:
    """Older months are approved, last month is in review, this month is calculated."""
    if offset <= -2:
        return "approved"
    return "reviewed" if offset == -1 else "calculated"


def add_values(draft: Draft) -> None:
    values = draft.story["values"]
    story = draft.story
    exceptions = {
        (story.initiative(item["initiative"]), item["month"]): (item["status"], item["notes"])
        for item in values["review_exceptions"]
    }
    for stream in values["streams"]:
        initiative_id = story.initiative(stream["initiative"])
        for step, offset in enumerate(range(stream["first"], stream["last"] + 1)):
            amount = stream["cents"] + stream["growth"] * step
            amount += draft.rng.randint(-amount // 20, amount // 20)
            status, notes = exceptions.get((initiative_id, offset), (status_by_age(offset), None))
            value_entry(
                draft,
                initiative_id,
                amount,
                stream["entry_type"],
                status,
                period=offset,
                created=draft.at(offset + 1, 4, 7, 20, ms=step * 11),
                provenance=stream["provenance"],
                currency=stream["currency"],
                notes=notes,
                is_estimated=offset == 0,
                connection_id=story.connection(stream.get("connection")),
            )
    seat_time = values["seat_time_saved"]
    for step, offset in enumerate(range(seat_time["first"], seat_time["last"] + 1)):
        value_entry(
            draft,
            story.initiative(seat_time["initiative"]),
            seats_in(draft, offset) * seat_time["per_seat_cents"],
            seat_time["entry_type"],
            status_by_age(offset),
            period=offset,
            created=draft.at(offset + 1, 5, 7, 40, ms=step),
            provenance=seat_time["provenance"],
            currency=story.currency,
            connection_id=story.connection(seat_time["connection"]),
            is_estimated=offset == 0,
        )
    for special in values["specials"]:
        created = draft.at(*special["created"])
        value_entry(
            draft,
            story.initiative(special["initiative"]),
            special.get("amount_cents"),
            special["entry_type"],
            special["status"],
            period=special.get("period"),
            period_months=special.get("period_months", 1),
            created=created,
            provenance=special["provenance"],
            currency=special.get("currency", story.currency),
            notes=special.get("notes"),
            is_estimated=special.get("is_estimated", False),
            connection_id=story.connection(special.get("connection")),
        )
