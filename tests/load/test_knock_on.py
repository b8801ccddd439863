"""What a record changes in rows the bundle does not give (airoi.load.knock_on): a
metric's readings take its new key, a merged vendor's entries move to the one it was
merged into."""

from __future__ import annotations

from sqlalchemy import Engine

from airoi.db import tables
from tests.load.bundles import LATER, NOW, base_bundle, loaded, one


def test_a_metric_given_a_new_key_takes_its_readings_with_it(engine: Engine) -> None:
    # SPEC 4.A.9: ?metric_key= filters by the canonical key. Renaming metric 6's key used to
    # leave observation 31 under the old one: found by the old key, missed by the new, and
    # refused when loaded again as it was served.
    loaded(engine)
    metric = {**base_bundle()["metrics"][0], "metric_key": "tickets_resolved"}
    report = loaded(engine, {"metrics": [metric]}, now=LATER)
    assert (report.updated["metrics"], report.updated["observations"]) == (1, 1)
    observation = one(engine, tables.observations, id=31)
    assert (observation["metric_key"], observation["updated_at"]) == ("tickets_resolved", LATER)
    served = {**base_bundle()["observations"][0], "metric_key": "tickets_resolved"}
    assert loaded(engine, {"observations": [served]}).unchanged["observations"] == 1
    # The same key again changes nothing.
    assert loaded(engine, {"metrics": [metric]}).totals()["updated"] == 0


def test_merging_a_vendor_repoints_existing_entries(engine: Engine) -> None:
    loaded(engine)
    assert one(engine, tables.cost_entries, id=17)["vendor_id"] == 1
    report = loaded(
        engine,
        {"vendors": [{"id": 1, "account_id": 1, "name": "OpenAI", "merged_into_id": 2}]},
        now=LATER,
    )
    assert report.updated == {**dict.fromkeys(report.updated, 0), "vendors": 1, "cost_entries": 1}
    entry = one(engine, tables.cost_entries, id=17)
    assert (entry["vendor_id"], entry["vendor_name"], entry["updated_at"]) == (2, "openai", LATER)
    assert one(engine, tables.cost_entries, id=18)["updated_at"] == NOW
