"""A dlt `rest_api` source for this API (CONVENTIONS: how dlt's rest_api reads it).

Documented configuration, not exercised by this project's tests (dlt is not a dependency):

    import dlt
    from airoi.client.dlt_source import airoi_source

    pipeline = dlt.pipeline("airoi", destination="duckdb", dataset_name="airoi")
    pipeline.run(airoi_source("http://localhost:8000/api/v1", token))

Each list follows `page.next_cursor` as `cursor` until `page.has_more` is false, asks with
`updated_since` from the largest `updated_at` dlt remembers (inclusive: the rows at that
moment come again, and `merge` on the primary key removes the repeats), and merges on `id`.
Budgets have no `updated_since` and no `id`: they are replaced whole on every run.
"""

from __future__ import annotations

from typing import Any

INCREMENTAL: tuple[str, ...] = (
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
)
WITH_SAMPLES = {"initiatives", "budgets"}


def rest_api_config(base_url: str, token: str, *, start: str = "1970-01-01T00:00:00Z") -> Any:
    """The `RESTAPIConfig` dict for dlt's `rest_api_source` (plain data, no dlt import)."""
    resources: list[dict[str, Any]] = []
    for name in INCREMENTAL:
        params: dict[str, Any] = {
            "limit": 500,
            "updated_since": {
                "type": "incremental",
                "cursor_path": "updated_at",
                "initial_value": start,
            },
        }
        if name in WITH_SAMPLES:
            params["include_sample"] = "true"
        resources.append(
            {
                "name": name,
                "primary_key": "id",
                "write_disposition": "merge",
                "endpoint": {"path": name, "params": params},
            }
        )
    resources.append(
        {
            "name": "budgets",
            "primary_key": "initiative_id",
            "write_disposition": "replace",
            "endpoint": {"path": "budgets", "params": {"limit": 500, "include_sample": "true"}},
        }
    )
    return {
        "client": {
            "base_url": base_url.rstrip("/") + "/",
            "auth": {"type": "bearer", "token": token},
            "paginator": {
                "type": "cursor",
                "cursor_path": "page.next_cursor",
                "cursor_param": "cursor",
            },
        },
        "resource_defaults": {"endpoint": {"data_selector": "data"}},
        "resources": resources,
    }


def airoi_source(base_url: str, token: str, *, start: str = "1970-01-01T00:00:00Z") -> Any:
    """The dlt source itself (needs `pip install dlt`)."""
    from dlt.sources.rest_api import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        rest_api_source,
    )

    return rest_api_source(rest_api_config(base_url, token, start=start))
