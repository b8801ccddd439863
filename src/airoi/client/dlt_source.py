"""A dlt `rest_api` source for this API: every list into any dlt destination, incrementally.

    import dlt
    from airoi.client.dlt_source import airoi_source

    pipeline = dlt.pipeline("airoi_sync", destination="duckdb", dataset_name="airoi")
    pipeline.run(airoi_source("http://localhost:8000/api/v1", token))

Needs `pip install "airoi[dlt]"` (dlt itself is imported only by `airoi_source`;
`rest_api_config` is plain data). Each list follows `page.next_cursor` as `cursor` while
`page.has_more` is true (SPEC 4.A.1), asks with `updated_since` from the largest `updated_at`
dlt remembers, and merges on `id`. The bound is inclusive, so the rows stamped at that moment
come again; dlt's incremental drops the ones it has already seen (by primary key) before
they are written, and `merge` would absorb any that came through. Budgets have no
`updated_since` and no `id` (SPEC 4.A.10): they are replaced whole on every run, keyed by
`initiative_id`. Dates arrive as `date` columns, datetimes as UTC timestamps and cents as
bigint; nested objects become columns joined with `__` (`owner__name`), arrays child tables.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airoi.client.client import sendable_token

if TYPE_CHECKING:
    from dlt.sources import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        DltSource,
    )

INCREMENTAL: tuple[str, ...] = (
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
)
# Sample (demo) initiatives are included so that every cost or value row has its initiative;
# the is_sample column tells them apart (as in `airoi pull`).
WITH_SAMPLES = frozenset({"initiatives", "budgets"})
# Fields SPEC 2 types `string (date)`, by resource, as dlt names the flattened columns.
DATE_COLUMNS: dict[str, tuple[str, ...]] = {
    "cost_entries": ("period_start", "period_end", "reported_on"),
    "value_entries": ("period_start", "period_end", "reported_on"),
    "observations": ("period_start", "period_end"),
    "decisions": ("next_review_on",),
    "budgets": (
        "as_of",
        "budget_started_on",
        "current_version__effective_from",
        "current_version__ends_on",
    ),
}
PAGE_SIZE = 500
EPOCH = "1970-01-01T00:00:00.000Z"


def api_datetime(value: datetime | str) -> str:
    """`value` spelt exactly as the API writes `updated_at` (UTC, milliseconds, Z).

    dlt compares the incremental cursor with the rows' `updated_at` strings as they are, so
    the start must share their spelling: `...T09:00:00Z` would sort after `...T09:00:00.500Z`.
    """
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


def _columns(name: str) -> dict[str, dict[str, str]]:
    return {column: {"data_type": "date"} for column in DATE_COLUMNS.get(name, ())}


def _without_null_version(row: dict[str, Any]) -> dict[str, Any]:
    """An unbudgeted row's `current_version` is null; left in, dlt would warn on every run of
    a column it cannot type next to the `current_version__*` columns of the budgeted rows."""
    if row.get("current_version", ...) is None:
        del row["current_version"]
    return row


def rest_api_config(
    base_url: str, token: str, *, start: datetime | str = EPOCH, page_size: int = PAGE_SIZE
) -> dict[str, Any]:
    """The `RESTAPIConfig` for dlt's `rest_api_source` (building it imports nothing of dlt).

    `start` is where the first run begins (`updated_since`); later runs begin at the
    largest `updated_at` dlt kept in the pipeline's state.
    """
    resources: list[dict[str, Any]] = []
    for name in INCREMENTAL:
        params: dict[str, Any] = {
            "updated_since": {
                "type": "incremental",
                "cursor_path": "updated_at",
                "initial_value": api_datetime(start),
            }
        }
        if name in WITH_SAMPLES:
            params["include_sample"] = "true"
        resources.append(
            {
                "name": name,
                "primary_key": "id",
                "write_disposition": "merge",
                "columns": _columns(name),
                "endpoint": {"path": name, "params": params},
            }
        )
    resources.append(
        {
            "name": "budgets",
            "primary_key": "initiative_id",
            "write_disposition": "replace",
            "columns": _columns("budgets"),
            "endpoint": {"path": "budgets", "params": {"include_sample": "true"}},
            "processing_steps": [{"map": _without_null_version}],
        }
    )
    return {
        "client": {
            "base_url": base_url.rstrip("/") + "/",
            "auth": {"type": "bearer", "token": sendable_token(token)},
            "paginator": {
                "type": "cursor",
                "cursor_path": "page.next_cursor",
                "cursor_param": "cursor",
                "has_more_path": "page.has_more",
            },
        },
        "resource_defaults": {
            "endpoint": {"data_selector": "data", "params": {"limit": page_size}},
        },
        "resources": resources,
    }


def airoi_source(
    base_url: str,
    token: str,
    *,
    start: datetime | str = EPOCH,
    page_size: int = PAGE_SIZE,
    name: str = "airoi",
) -> DltSource:
    """The dlt source (needs `pip install "airoi[dlt]"`); its schema is named `name`.

    Pick resources with `.with_resources("cost_entries", "value_entries")`.
    """
    from dlt.sources.rest_api import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        rest_api_source,
    )

    config = rest_api_config(base_url, token, start=start, page_size=page_size)
    source: DltSource = rest_api_source(config, name=name)  # type: ignore[arg-type, unused-ignore]
    return source
