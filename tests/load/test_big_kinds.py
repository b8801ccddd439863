"""The big kinds written in pass 2 (airoi.load.big_kinds): a reading takes its account and
its key from its metric."""

from __future__ import annotations

from sqlalchemy import Engine

from airoi.db import tables
from tests.load.bundles import base_bundle, loaded, one, record, refused


def test_observation_account_comes_from_its_metric_or_is_given(engine: Engine) -> None:
    loaded(engine)
    bundle = {
        "observations": [
            {
                "id": 32,
                "metric_id": 6,
                "value": 1.0,
                "role": "reading",
                "observed_at": "2026-02-01T00:00:00Z",
            },
            {"id": 33, "account_id": 2, "metric_key": "nps", "value": None},
        ]
    }
    report = loaded(engine, bundle)
    assert report.inserted["observations"] == 2
    assert one(engine, tables.observations, id=32)["account_id"] == 1
    assert one(engine, tables.observations, id=32)["metric_key"] == "tickets_deflected"
    assert one(engine, tables.observations, id=33)["account_id"] == 2


def test_an_observation_key_that_is_not_its_metrics_is_refused(engine: Engine) -> None:
    # Metric 6 is tickets_deflected: a reading of it filed under another key would be missed by
    # GET /observations?metric_key=tickets_deflected.
    bundle = base_bundle()
    record(bundle, "observations", 31)["metric_key"] = "csat"
    assert refused(engine, bundle) == [
        "observations[id=31].metric_key: 'csat' is not the key of metric 6 ('tickets_deflected')"
    ]
    record(bundle, "observations", 31)["metric_key"] = "tickets_deflected"
    loaded(engine, bundle)
    assert one(engine, tables.observations, id=31)["metric_key"] == "tickets_deflected"
