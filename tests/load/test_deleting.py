"""A bundle's deletes (BUNDLE.md; airoi.load.deleting): applied before the upserts, taking an
initiative's records with it, unlinking what named a deleted row, leaving tombstones
(SEMANTICS R34)."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from airoi.db import tables
from airoi.load import BundleError
from tests.load.bundles import LATER, NOW, base_bundle, loaded, one, record, refused, rows


def test_deleting_an_initiative_removes_its_records_and_unlinks_its_decisions(
    engine: Engine,
) -> None:
    loaded(engine)
    report = loaded(engine, {"delete": {"initiatives": [5, 404]}}, now=LATER)
    assert {k: v for k, v in report.deleted.items() if v} == {
        "initiatives": 1,
        "cost_entries": 2,
        "value_entries": 1,
        "observations": 1,
        "budget_versions": 1,
        "initiative_notes": 1,
    }
    for table in (
        tables.cost_entries,
        tables.value_entries,
        tables.observations,
        tables.budget_versions,
        tables.initiative_notes,
    ):
        assert rows(engine, table, initiative_id=5) == []
    assert rows(engine, tables.initiatives, id=5) == []
    decision = one(engine, tables.decisions, id=9)
    assert decision["initiative_id"] is None
    # The unlinked decision changed: a new updated_at, so a sync by updated_since sees it.
    assert (decision["created_at"], decision["updated_at"]) == (NOW, LATER)
    assert report.updated["decisions"] == 1
    # Deleting again is a no-op; the original bundle's decision still reads as unchanged.
    again = loaded(engine, {"delete": {"initiatives": [5]}})
    assert (again.totals()["deleted"], again.totals()["updated"]) == (0, 0)
    bundle = base_bundle()
    del bundle["decisions"]
    loaded(engine, bundle, now=LATER)
    assert loaded(engine, {"decisions": base_bundle()["decisions"]}).unchanged["decisions"] == 1
    # So does the decision with the stamps it had before it was unlinked.
    stamped = {**base_bundle()["decisions"][0], "created_at": "2026-03-01T12:00:00Z"}
    stamped["updated_at"] = "2026-03-01T12:00:00Z"
    assert loaded(engine, {"decisions": [stamped]}).unchanged["decisions"] == 1
    assert one(engine, tables.decisions, id=9)["updated_at"] == LATER


def test_deleting_records_by_kind(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "delete": {
                "cost_entries": [17],
                "value_entries": [21],
                "observations": [31],
                "metrics": [6],
                "integrations": [4],
                "assessments": [61],
                "budget_versions": [41],
                "initiative_notes": [51],
                "fx_rates": [1],
            }
        },
    )
    assert report.totals()["deleted"] == 8
    assert [r["id"] for r in rows(engine, tables.cost_entries)] == [18]
    assert rows(engine, tables.metrics) == []
    assert len(rows(engine, tables.fx_rates)) == 1


def test_deleting_a_metric_or_a_connection_unlinks_the_rows_that_named_it(engine: Engine) -> None:
    # BUNDLE.md: references resolve inside the account. Deleting metric 6 or connection 4 used
    # to leave observation 31 and the entries naming them with a dangling id, which a re-load
    # of those same rows then refused. They are unlinked, as a deleted initiative's decisions
    # are, and get a new updated_at so a sync by updated_since sees the change.
    bundle = base_bundle()
    bundle["cost_entries"][0]["source"] = {"type": "sync", "connection_id": 4}
    bundle["value_entries"][0]["source"] = {"type": "sync", "connection_id": 4}
    bundle["observations"][0]["source"] = {"type": "sync", "ref": "r-1", "connection_id": 4}
    loaded(engine, bundle)
    report = loaded(engine, {"delete": {"metrics": [6], "integrations": [4]}}, now=LATER)
    assert {k: v for k, v in report.deleted.items() if v} == {"metrics": 1, "integrations": 1}
    assert {k: v for k, v in report.updated.items() if v} == {
        "cost_entries": 1,
        "value_entries": 1,
        "observations": 1,
    }
    observation = one(engine, tables.observations, id=31)
    assert (observation["metric_id"], observation["source_connection_id"]) == (None, None)
    assert (observation["source_type"], observation["source_ref"]) == ("sync", "r-1")
    assert observation["updated_at"] == LATER
    for table, entry_id in ((tables.cost_entries, 17), (tables.value_entries, 21)):
        entry = one(engine, table, id=entry_id)
        assert (entry["source_connection_id"], entry["updated_at"]) == (None, LATER)
    # Rows that named neither are untouched.
    assert one(engine, tables.cost_entries, id=18)["updated_at"] == NOW
    # The rows as they now are load back unchanged; as they were, naming what is gone, they
    # are refused (references must resolve).
    again = base_bundle()
    refused = [
        ({"observations": again["observations"]}, "observations[id=31].metric_id: no metric 6"),
        ({"cost_entries": bundle["cost_entries"][:1]}, "no integration 4 in account 1"),
    ]
    for given, expected in refused:
        with pytest.raises(BundleError) as caught:
            loaded(engine, given)
        assert any(expected in problem for problem in caught.value.problems), caught.value
    deleting_again = loaded(engine, {"delete": {"metrics": [6], "integrations": [4]}})
    assert deleting_again.totals() == {"inserted": 0, "updated": 0, "unchanged": 0, "deleted": 0}
    # Connection 4 deleted and given again in one bundle, with the rows naming it: it is there
    # after the load, so nothing naming it is unlinked, and the rows given as they are stay
    # unchanged, counted once each.
    loaded(engine, bundle)
    again = loaded(engine, {**bundle, "delete": {"integrations": [4]}}, now=LATER)
    counts = {k: (again.updated[k], again.unchanged[k]) for k in ("cost_entries", "observations")}
    assert counts == {"cost_entries": (0, 2), "observations": (0, 1)}, counts
    assert one(engine, tables.observations, id=31)["source_connection_id"] == 4
    # Given again as it now is (no connection): still a row this load changed.
    as_now = {**bundle["cost_entries"][0], "source": {"type": "sync"}}
    after = loaded(engine, {"cost_entries": [as_now], "delete": {"integrations": [4]}}, now=LATER)
    assert (after.updated["cost_entries"], after.unchanged["cost_entries"]) == (1, 0)
    assert one(engine, tables.cost_entries, id=17)["source_connection_id"] is None


def test_a_reference_to_a_row_deleted_in_the_same_bundle_is_refused(engine: Engine) -> None:
    loaded(engine)
    problems = refused(
        engine,
        {
            "delete": {"initiatives": [5]},
            "cost_entries": [{"id": 90, "initiative_id": 5, "amount_cents": 1}],
        },
    )
    assert problems == ["cost_entries[id=90].initiative_id: no initiative 5"]


def test_deletes_are_applied_before_upserts(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "delete": {"cost_entries": [17]},
            "cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 3}],
        },
        now=LATER,
    )
    assert (report.deleted["cost_entries"], report.inserted["cost_entries"]) == (1, 1)
    assert one(engine, tables.cost_entries, id=17)["created_at"] == LATER


def test_a_record_deleted_and_given_again_keeps_what_names_it(engine: Engine) -> None:
    # A row the bundle deletes and gives again is there after the load: the decision naming
    # the initiative, the entries naming the connection stay linked (BUNDLE.md, R34).
    bundle = base_bundle()
    record(bundle, "cost_entries", 17)["source"] = {"connection_id": 4}
    loaded(engine, bundle)
    again = {
        "delete": {"initiatives": [5], "integrations": [4]},
        "initiatives": [record(base_bundle(), "initiatives", 5)],
        "integrations": [record(base_bundle(), "integrations", 4)],
    }
    report = loaded(engine, again, now=LATER)
    assert one(engine, tables.decisions, id=9)["initiative_id"] == 5
    assert report.updated["decisions"] == 0
    # The initiative's own entries went with it (the bundle deleted it); nothing else moved.
    assert rows(engine, tables.cost_entries) == []
    assert rows(engine, tables.deletions) and {
        r["resource"] for r in rows(engine, tables.deletions)
    } == {"cost_entries", "value_entries", "observations"}
