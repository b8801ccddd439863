"""Metrics, and each one's baseline and monthly readings on an initiative."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airoi.demo.draft import Draft, Row
from airoi.demo.ids import DEMO_ACCOUNT_ID

# The first metric was created this many months back, each next one a month later.
_FIRST_METRIC_MONTH = -19


@dataclass(frozen=True)
class _Series:
    """A metric's baseline and its monthly readings on one initiative."""

    metric_id: int
    metric_key: str
    initiative_id: int
    baseline_first: int
    baseline_last: int
    first: int
    last: int
    baseline: float
    start: float
    end: float
    sample_size: int
    connection_id: int | None
    baseline_method: str
    missing_months: frozenset[int]  # readings that never arrived


def add_metrics(draft: Draft) -> None:
    data = draft.story["metrics"]
    for step, metric in enumerate(data["metrics"]):
        created = draft.at(_FIRST_METRIC_MONTH + step, 8, 9, 0)
        retired_at = draft.moment(metric.get("retired_at"))
        draft.rows["metrics"].append(
            {
                "id": metric["id"],
                "account_id": DEMO_ACCOUNT_ID,
                "metric_key": metric["key"],
                "name": metric["name"],
                "description": metric["description"],
                "metric_type": metric["metric_type"],
                "unit": metric["unit"],
                "currency_metric": metric["metric_type"] == "currency",
                "active": retired_at is None,
                "created_at": created,
                "updated_at": retired_at or created,
            }
        )
    for record in data["series"]:
        _observation_series(draft, _series(draft, record))


def _series(draft: Draft, record: dict[str, Any]) -> _Series:
    baseline_first, baseline_last = record["baseline_months"]
    first, last = record["months"]
    return _Series(
        metric_id=draft.story.metric(record["metric"]),
        metric_key=record["metric"],
        initiative_id=draft.story.initiative(record["initiative"]),
        baseline_first=baseline_first,
        baseline_last=baseline_last,
        first=first,
        last=last,
        baseline=record["baseline"],
        start=record["start"],
        end=record["end"],
        sample_size=record["sample_size"],
        connection_id=draft.story.connection(record.get("connection")),
        baseline_method=record["baseline_method"],
        missing_months=frozenset(record.get("missing_months", ())),
    )


def _observation(
    draft: Draft,
    item: _Series,
    *,
    value: float | None,
    role: str,
    months: tuple[int, int],
    ms: int,
) -> None:
    first, last = months
    source: Row = {"type": "manual", "ref": None, "connection_id": None}
    if item.connection_id is not None:
        ref = f"{item.metric_key}/{draft.month(first):%Y-%m}"
        source = {"type": "connection", "ref": ref, "connection_id": item.connection_id}
    created = draft.at(last + 1, 1, 3, 0, ms=ms)
    draft.rows["observations"].append(
        {
            "id": draft.take_id("observations"),
            "metric_id": item.metric_id,
            "metric_key": item.metric_key,
            "initiative_id": item.initiative_id,
            "value": value,
            "role": role,
            "baseline_method": item.baseline_method if role == "baseline" else None,
            "observed_at": draft.at(last + 1, 1, 2, 0),
            "period_start": draft.month(first).isoformat(),
            "period_end": draft.month_end(last).isoformat(),
            "is_estimated": role == "reading" and last == 0,
            "sample_size": None if value is None else item.sample_size,
            "quality_score": None if value is None else 0.9 if role == "baseline" else 0.8,
            "source": source,
            "created_at": created,
            "updated_at": created,
        }
    )


def _observation_series(draft: Draft, item: _Series) -> None:
    """The baseline, then a reading a month on the line from `start` to `end`, within 4%."""
    baseline_months = (item.baseline_first, item.baseline_last)
    _observation(draft, item, value=item.baseline, role="baseline", months=baseline_months, ms=0)
    span = item.last - item.first
    for step, offset in enumerate(range(item.first, item.last + 1)):
        share = Fraction(step, span) if span else Fraction(1)
        trend = item.start + (item.end - item.start) * float(share)
        value: float | None = round(trend * (1 + draft.rng.randint(-4, 4) / 100), 1)
        if offset in item.missing_months:
            value = None
        _observation(draft, item, value=value, role="reading", months=(offset, offset), ms=step + 1)
