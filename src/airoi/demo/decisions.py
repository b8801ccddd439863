"""Budget versions and decisions. A decision records the initiative's figures as they stood
the day it was taken, so they are worked out here from the entries already built."""

from __future__ import annotations

from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any

from airoi.demo.draft import Draft
from airoi.demo.ids import DEMO_ACCOUNT_ID, DEMO_OWNER_USER_ID


def _cents_half_even(value: Decimal | Fraction) -> int:
    if isinstance(value, Fraction):
        value = Decimal(value.numerator) / Decimal(value.denominator)
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


# Budgets ---------------------------------------------------------------------


def add_budgets(draft: Draft) -> None:
    """Budget versions, each taking effect in month `starts` (an offset from today's)."""
    story = draft.story
    for budget in story["budgets"]["budgets"]:
        set_by = budget.get("set_by")
        ends = budget.get("ends")
        draft.rows["budget_versions"].append(
            {
                "id": draft.take_id("budget_versions"),
                "initiative_id": story.initiative(budget["initiative"]),
                "effective_from": draft.month(budget["starts"]).isoformat(),
                "ends_on": None if ends is None else draft.month_end(ends).isoformat(),
                "capex_cents": budget["capex"],
                "opex_cents": budget["opex"],
                "opex_cadence": budget.get("cadence", "monthly"),
                "source": budget.get("source", "approval"),
                "reason": budget["reason"],
                "set_by_id": DEMO_OWNER_USER_ID if set_by is None else story.person(set_by),
                "status": budget.get("status", "approved"),
                "approved_at": draft.moment(budget.get("approved_at")),
            }
        )


# Decisions -------------------------------------------------------------------


def _rate(draft: Draft, currency: str, on: date) -> Decimal:
    """SEMANTICS R5: the latest rate on or before `on`, else the earliest."""
    if currency == draft.story.currency:
        return Decimal(1)
    rates = sorted((start, rate) for code, start, rate in draft.fx if code == currency)
    chosen = rates[0][1]
    for start, rate in rates:
        if start <= on:
            chosen = rate
    return Decimal(chosen)


def _convert(draft: Draft, amount: int, currency: str, into: str, on: date) -> int:
    converted = Decimal(amount) * _rate(draft, currency, on) / _rate(draft, into, on)
    return _cents_half_even(converted)


def _to_date(draft: Draft, key: str, initiative_id: int, currency: str, through: date) -> int:
    """Approved value (or cost) of an initiative dated on or before `through`."""
    total = 0
    for entry in draft.rows[key]:
        if entry["initiative_id"] != initiative_id or entry["amount_cents"] is None:
            continue
        if key == "value_entries" and entry["status"] != "approved":
            continue
        dated = date.fromisoformat((entry["period_start"] or entry["created_at"])[:10])
        if dated <= through:
            total += _convert(draft, entry["amount_cents"], entry["currency"], currency, dated)
    return total


def add_decisions(draft: Draft) -> None:
    for record in draft.story["decisions"]["decisions"]:
        if "initiative" in record:
            _decision(draft, record)
        else:
            _snapshot(draft, record, initiative_id=None, currency=draft.story.currency)


def _decision(draft: Draft, record: dict[str, Any]) -> None:
    """A decision with the figures of its initiative as they stood that day."""
    initiative_id = draft.story.initiative(record["initiative"])
    initiative = next(row for row in draft.rows["initiatives"] if row["id"] == initiative_id)
    currency = initiative["currency"] or draft.story.currency
    offset, day = record["on"]
    decided_on = draft.day(offset, day)
    planned = (initiative["expected_cost_savings_cents"] or 0) + (
        initiative["expected_revenue_uplift_cents"] or 0
    )
    # The part of the plan due: months live over the months of the ROI horizon.
    horizon_months = 12 * (initiative["roi_time_horizon_years"] or 1)
    live_on = date.fromisoformat((initiative["went_live_at"] or initiative["started_at"])[:10])
    elapsed = (decided_on.year - live_on.year) * 12 + decided_on.month - live_on.month
    share = Fraction(max(0, min(elapsed, horizon_months)), horizon_months)
    figures = {
        "subject_title": record.get("subject_title", initiative["title"]),
        "approved": _to_date(draft, "value_entries", initiative_id, currency, decided_on),
        "cost": _to_date(draft, "cost_entries", initiative_id, currency, decided_on),
        "planned": planned,
        "planned_to_date": _cents_half_even(planned * share),
    }
    _snapshot(draft, {**record, **figures}, initiative_id=initiative_id, currency=currency)


def _snapshot(
    draft: Draft, record: dict[str, Any], *, initiative_id: int | None, currency: str
) -> None:
    """A decision as written; one about a deleted initiative gives its own figures."""
    offset, day = record["on"]
    decided_at = draft.at(offset, day, 15, 0)
    review = None
    if (review_in_months := record.get("review_in_months")) is not None:
        review = draft.month(offset + review_in_months).replace(day=15).isoformat()
    approved, cost = record["approved"], record["cost"]
    net = approved - cost
    stage_before, stage_after = record["stages"]
    draft.rows["decisions"].append(
        {
            "id": draft.take_id("decisions"),
            "account_id": DEMO_ACCOUNT_ID,
            "initiative_id": initiative_id,
            "subject_title": record["subject_title"],
            "outcome": record["outcome"],
            "rationale": record["rationale"],
            "stage_before": stage_before,
            "stage_after": stage_after,
            "decided_at": decided_at,
            "decided_by_id": draft.story.person(record["by"]),
            "next_review_on": review,
            "currency": currency,
            "approved_value_cents": approved,
            "cost_to_date_cents": cost,
            "net_cents": net,
            "planned_value_cents": record["planned"],
            "planned_value_to_date_cents": record["planned_to_date"],
            "roi": None if cost == 0 else net / cost,
            "created_at": decided_at,
            "updated_at": decided_at,
        }
    )
