"""Change stamps belong to the store (SEMANTICS R32), on SQLite and PostgreSQL.

One load at a time per store, one stamp per load later than every stored updated_at, and
every row whose served content changes takes it, also when the change comes from another
record (a person's name, a vendor merge, a metric's key, an unlinking, an FX rate). A
bundle's own updated_at is ignored unless the load keeps it (--keep-stamps), and a kept one
leaves later loads room to stamp after it.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event, select, text

from airoi.db import tables
from airoi.load import BundleError, LoadBusy, load_bundle
from airoi.load.stamping import locked
from airoi.timeutil import truncate_ms, utc_now
from tests.factories import BundleBuilder
from tests.load.bundles import LATER, NOW, base_bundle, loaded, one, record, refused, snapshot


def stamps(engine: Engine, table: Any) -> dict[int, datetime]:
    with engine.connect() as conn:
        return dict(conn.execute(select(table.c.id, table.c.updated_at)).all())  # type: ignore[arg-type]


def world() -> tuple[BundleBuilder, dict[str, int]]:
    b = BundleBuilder()
    acct = b.account()
    ada = b.user(acct, name="Ada")
    max_ = b.user(acct, name="Max", email=None, role="member")
    ids = {
        "acct": acct,
        "ada": ada,
        "max": max_,
        "owned": b.initiative(acct, owner_id=ada),
        "other": b.initiative(acct, owner_id=max_, title="Other"),
    }
    ids["decided"] = b.decision(acct, initiative_id=ids["owned"], decided_by_id=ada)
    ids["connected"] = b.integration(acct, connected_by_id=ada)
    ids["unconnected"] = b.integration(acct, connected_by_id=max_, platform="slack")
    ids["metric"] = b.metric(acct, metric_key="tickets")
    ids["reading"] = b.observation(metric_id=ids["metric"], initiative_id=ids["owned"])
    b._add("vendors", {"id": 900, "account_id": acct, "name": "OpenAI"})
    b._add("vendors", {"id": 901, "account_id": acct, "name": "Open AI Inc"})
    ids["openai"] = b.cost_entry(ids["owned"], vendor_id=900)
    ids["openai_inc"] = b.cost_entry(ids["owned"], vendor_id=901)
    ids["eur"] = b.cost_entry(
        ids["owned"], amount_cents=1_000, currency="EUR", period_start="2026-02-10"
    )
    ids["usd"] = b.cost_entry(ids["owned"], amount_cents=1_000)
    b.fx_rate(acct, "EUR", "1.1000", "2026-01-01")
    return b, ids


def test_one_stamp_per_load_later_than_every_stored_one(engine: Engine) -> None:
    # SEMANTICS R32: later than every updated_at already stored, whatever the clock says.
    b, ids = world()
    assert b.load(engine, now=LATER).stamp == LATER
    report = load_bundle(
        engine, {"initiatives": [{"id": ids["owned"], "stage": "paused"}]}, now=NOW
    )
    assert report.stamp == LATER + timedelta(milliseconds=1)
    assert stamps(engine, tables.initiatives)[ids["owned"]] == report.stamp
    # Kept as given (--keep-stamps), a later stamp moves the store's clock on with it.
    far = "2030-01-01T00:00:00Z"
    load_bundle(
        engine,
        {"initiatives": [{"id": ids["other"], "stage": "paused", "updated_at": far}]},
        now=NOW,
        keep_stamps=True,
    )
    report = load_bundle(engine, {"initiatives": [{"id": ids["owned"], "stage": "live"}]}, now=NOW)
    assert report.stamp == datetime(2030, 1, 1, 0, 0, 0, 1000)


def test_a_new_name_moves_every_row_that_shows_the_person(engine: Engine) -> None:
    # SEMANTICS R32: initiative owner, decision decided_by, integration connected_by.
    b, ids = world()
    b.load(engine, now=NOW)
    report = load_bundle(engine, {"users": [{"id": ids["ada"], "name": "Ada King"}]}, now=LATER)
    assert stamps(engine, tables.initiatives) == {ids["owned"]: LATER, ids["other"]: NOW}
    assert stamps(engine, tables.decisions) == {ids["decided"]: LATER}
    assert stamps(engine, tables.integrations) == {ids["connected"]: LATER, ids["unconnected"]: NOW}
    assert (
        report.updated["users"],
        report.updated["initiatives"],
        report.updated["decisions"],
        report.updated["integrations"],
    ) == (1, 1, 1, 1)
    # Given again as it now is, the row a rename touched is counted once, as updated.
    report = load_bundle(
        engine,
        {
            "users": [{"id": ids["max"], "name": "Max Born"}],
            "initiatives": [{"id": ids["other"], "title": "Other"}],
        },
        now=LATER + timedelta(seconds=1),
    )
    assert (report.updated["initiatives"], report.unchanged["initiatives"]) == (1, 0)


def test_a_name_given_unchanged_moves_nothing(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    load_bundle(engine, {"users": [{"id": ids["ada"], "name": "Ada"}]}, now=LATER)
    assert set(stamps(engine, tables.initiatives).values()) == {NOW}


def test_a_vendor_merge_moves_the_entries_repointed(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    report = load_bundle(engine, {"vendors": [{"id": 901, "merged_into_id": 900}]}, now=LATER)
    with engine.connect() as conn:
        vendor = dict(
            conn.execute(select(tables.cost_entries.c.id, tables.cost_entries.c.vendor_id)).all()
        )  # type: ignore[arg-type]
    assert vendor[ids["openai_inc"]] == 900
    moved = stamps(engine, tables.cost_entries)
    assert moved[ids["openai_inc"]] == LATER
    assert moved[ids["openai"]] == NOW
    assert report.updated["cost_entries"] == 1


def test_a_metric_given_a_new_key_moves_its_readings(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    load_bundle(
        engine, {"metrics": [{"id": ids["metric"], "metric_key": "tickets_closed"}]}, now=LATER
    )
    assert stamps(engine, tables.observations) == {ids["reading"]: LATER}


def test_a_new_rate_moves_only_the_entries_whose_amount_moved(engine: Engine) -> None:
    # SEMANTICS R32, R35: the EUR entry serves a new account_amount_cents; the USD one not.
    b, ids = world()
    b.load(engine, now=NOW)
    report = load_bundle(
        engine,
        {
            "fx_rates": [
                {
                    "account_id": ids["acct"],
                    "currency": "EUR",
                    "rate": "1.2000",
                    "effective_from": "2026-02-01",
                }
            ]
        },
        now=LATER,
    )
    moved = stamps(engine, tables.cost_entries)
    assert moved[ids["eur"]] == LATER
    assert moved[ids["usd"]] == NOW
    assert report.updated["cost_entries"] == 1
    with engine.connect() as conn:
        amount = conn.execute(
            select(tables.cost_entries.c.account_amount_cents).where(
                tables.cost_entries.c.id == ids["eur"]
            )
        ).scalar()
    assert amount == 1_200  # 1,000 EUR cents at 1.2000 from 2026-02-01 (R5)


def test_a_changed_row_given_with_an_older_stamp_is_stamped_now(engine: Engine) -> None:
    # The case a sync by updated_since never saw: a change dated in the past by the bundle.
    b, ids = world()
    b.load(engine, now=LATER)
    report = load_bundle(
        engine,
        {
            "initiatives": [
                {"id": ids["owned"], "stage": "completed", "updated_at": "2020-01-01T00:00:00Z"}
            ]
        },
        now=LATER + timedelta(hours=1),
    )
    assert report.ignored_stamps == 1
    assert stamps(engine, tables.initiatives)[ids["owned"]] == LATER + timedelta(hours=1)


def test_a_null_created_at_is_refused_by_name_and_changes_nothing(engine: Engine) -> None:
    # BUNDLE.md: created_at given is kept, absent is the load's time; null clears nothing (the
    # store refused it at write time, naming neither the record nor the field).
    b, ids = world()
    b.load(engine, now=NOW)
    before = stamps(engine, tables.initiatives)
    stored = {"id": ids["owned"], "created_at": None}
    new = {"id": 77, "account_id": ids["acct"], "title": "New", "stage": "live",
           "created_at": None}  # fmt: skip
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, {"initiatives": [stored, new]}, now=LATER)
    said = "created_at: cannot be null; leave it out"
    assert [p.split(" (")[0] for p in caught.value.problems] == [
        f"initiatives[id={ids['owned']}].{said}",
        f"initiatives[id=77].{said}",
    ]
    assert stamps(engine, tables.initiatives) == before


def test_an_unchanged_reload_keeps_every_stamp_and_the_clock(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    before = {t.name: stamps(engine, t) for t in (tables.initiatives, tables.cost_entries)}
    report = b.load(engine, now=LATER)
    assert report.totals()["updated"] == 0
    assert {t.name: stamps(engine, t) for t in (tables.initiatives, tables.cost_entries)} == before
    # Nothing was stamped, so the next load may still stamp LATER.
    assert (
        load_bundle(
            engine, {"initiatives": [{"id": ids["owned"], "stage": "paused"}]}, now=LATER
        ).stamp
        == LATER
    )


# --------------------------------------------------------------------------- one at a time


def hold_the_store(conn: Connection) -> None:
    """Take the store's load lock from outside, as another load would."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.execute(
            text("SELECT pg_advisory_lock(:key)"), {"key": int.from_bytes(b"airoi ld", "big")}
        )


def release_the_store(conn: Connection) -> None:
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("ROLLBACK")
    else:
        conn.execute(
            text("SELECT pg_advisory_unlock(:key)"), {"key": int.from_bytes(b"airoi ld", "big")}
        )


def test_a_load_waits_for_the_one_holding_the_store_and_says_so(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    said: list[str] = []
    holder = engine.connect()
    hold_the_store(holder)
    released = threading.Timer(0.6, release_the_store, args=(holder,))
    released.start()
    try:
        started = time.monotonic()
        report = load_bundle(
            engine,
            {"initiatives": [{"id": ids["owned"], "stage": "paused"}]},
            now=LATER,
            wait=30,
            say=said.append,
        )
        waited = time.monotonic() - started
    finally:
        released.join()
        holder.close()
    assert report.updated["initiatives"] == 1
    assert waited >= 0.5
    assert len(said) == 1
    assert said[0].startswith("Another load") and "waiting for it to finish" in said[0]
    assert "up to 30 s" in said[0]


def test_a_load_that_waits_too_long_gives_up_and_writes_nothing(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    holder = engine.connect()
    hold_the_store(holder)
    try:
        with pytest.raises(
            LoadBusy,
            match=r"still holds this store after 0.5 s; nothing was "
            r"loaded.*--wait",
        ):
            load_bundle(
                engine,
                {"initiatives": [{"id": ids["owned"], "stage": "paused"}]},
                now=LATER,
                wait=0.5,
            )
    finally:
        release_the_store(holder)
        holder.close()
    assert stamps(engine, tables.initiatives)[ids["owned"]] == NOW


def test_a_refused_bundle_releases_the_store(engine: Engine) -> None:
    b, ids = world()
    b.load(engine, now=NOW)
    with pytest.raises(BundleError):
        load_bundle(engine, {"initiatives": [{"id": ids["owned"], "stage": "liv"}]}, wait=0)
    load_bundle(engine, {"initiatives": [{"id": ids["owned"], "stage": "paused"}]}, wait=0)


# --------------------------------------------------------------------------- the demo


def served_stamps(engine: Engine) -> dict[tuple[str, int], datetime]:
    found = {}
    with engine.connect() as conn:
        for table in (tables.initiatives, tables.cost_entries, tables.decisions):
            for row_id, stamp in conn.execute(select(table.c.id, table.c.updated_at)):
                found[(table.name, row_id)] = stamp
    return found


def test_the_demo_keeps_its_history_when_made_and_moves_forward_when_refreshed(
    engine: Engine,
) -> None:
    from datetime import date

    from airoi.demo import build_demo_bundle, load_demo

    demo = build_demo_bundle(date(2026, 6, 15))
    made = load_demo(engine, demo)
    first = served_stamps(engine)
    # Made: the realistic history, months of stamps before the load's own.
    assert min(first.values()) < made.stamp - timedelta(days=30)  # type: ignore[operator]
    assert len(set(first.values())) > 10
    # A demo row deleted by a load, then the demo refreshed: every row it makes again is
    # stamped later than anything served before, and the deleted one after its tombstone.
    entry = demo["cost_entries"][0]["id"]
    deleted = load_bundle(engine, {"delete": {"cost_entries": [entry]}})
    refreshed = load_demo(engine, demo)
    assert refreshed.stamp > deleted.stamp  # type: ignore[operator]
    again = served_stamps(engine)
    assert again.keys() == first.keys()
    assert min(again.values()) > max(first.values())
    assert again[("cost_entries", entry)] > deleted.stamp  # type: ignore[operator]


def test_a_load_interrupted_while_writing_leaves_the_store_as_it_was(engine: Engine) -> None:
    # Ctrl-C while the driver writes: the KeyboardInterrupt itself comes out (not a driver
    # error about the interrupted connection), nothing is written, and the store is free.
    b, ids = world()
    b.load(engine, now=NOW)
    before = stamps(engine, tables.cost_entries)
    bundle = {
        "cost_entries": [{"id": 50_000 + n, "initiative_id": ids["owned"]} for n in range(3_000)]
    }
    writes = []

    def interrupt(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        # The stored rows of each batch of a thousand are read before it is written.
        if statement.lstrip().upper().startswith("SELECT") and "FROM cost_entries" in statement:
            writes.append(statement)
            if len(writes) == 3:  # two batches written
                raise KeyboardInterrupt

    event.listen(engine, "before_cursor_execute", interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            load_bundle(engine, bundle, now=LATER)
    finally:
        event.remove(engine, "before_cursor_execute", interrupt)
    assert len(writes) == 3
    assert stamps(engine, tables.cost_entries) == before
    report = load_bundle(engine, bundle, now=LATER, wait=0)
    assert report.inserted["cost_entries"] == 3_000


def test_bundle_given_timestamps_are_ignored_unless_kept(engine: Engine) -> None:
    # SEMANTICS R32: the store stamps what a load changes; created_at given is kept.
    bundle = base_bundle()
    initiative = record(bundle, "initiatives", 5)
    initiative["created_at"] = "2025-06-01T08:00:00Z"
    initiative["updated_at"] = "2025-07-01T09:15:30.5+02:00"
    report = loaded(engine, bundle)
    assert report.ignored_stamps == 1
    assert report.stamp == NOW
    stored = one(engine, tables.initiatives, id=5)
    assert stored["created_at"] == datetime(2025, 6, 1, 8, 0)
    assert stored["updated_at"] == NOW
    # A different given updated_at alone changes nothing.
    initiative["updated_at"] = "2025-08-01T00:00:00Z"
    report = loaded(engine, bundle, now=LATER)
    assert (report.updated["initiatives"], report.ignored_stamps) == (0, 1)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == NOW
    # A changed row given with an older updated_at takes the load's stamp.
    initiative["title"] = "Support triage assistant"
    loaded(engine, bundle, now=LATER)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == LATER


def test_keep_stamps_keeps_the_bundles_updated_at(engine: Engine) -> None:
    # SEMANTICS R32: --keep-stamps keeps them as given (fixtures, copying a store).
    bundle = base_bundle()
    initiative = record(bundle, "initiatives", 5)
    initiative["created_at"] = "2025-06-01T08:00:00Z"
    initiative["updated_at"] = "2025-07-01T09:15:30.5+02:00"
    report = load_bundle(engine, bundle, now=NOW, keep_stamps=True)
    assert report.ignored_stamps == 0
    stored = one(engine, tables.initiatives, id=5)
    assert stored["updated_at"] == datetime(2025, 7, 1, 7, 15, 30, 500_000)
    # A different given updated_at alone is a change, and is kept as given.
    initiative["updated_at"] = "2025-08-01T00:00:00Z"
    report = load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    assert report.updated["initiatives"] == 1
    assert one(engine, tables.initiatives, id=5)["updated_at"] == datetime(2025, 8, 1)
    # A content change with a given updated_at takes the given one, not the load's.
    initiative["title"] = "Support triage assistant"
    load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == datetime(2025, 8, 1)


def test_a_kept_stamp_leaves_later_loads_room(engine: Engine) -> None:
    # SEMANTICS R32: every later load stamps after the latest kept stamp, a millisecond on;
    # one at the end of the year 9999 left none, and each later load crashed.
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["updated_at"] = "9999-12-31T23:59:59.999Z"
    before = snapshot(engine)
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    assert caught.value.problems == [
        "initiatives[id=5].updated_at: too late to keep: a kept updated_at must be before "
        "9999-01-01T00:00:00Z, so that later loads can still stamp after it"
    ]
    assert snapshot(engine) == before
    # Without --keep-stamps the given stamp is ignored, so it is no problem.
    record(bundle, "initiatives", 5)["title"] = "Renamed"
    assert loaded(engine, bundle, now=LATER).ignored_stamps == 1
    # The last moment allowed is kept, and the next load stamps a millisecond after it.
    record(bundle, "initiatives", 5)["updated_at"] = "9998-12-31T23:59:59.999Z"
    load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    record(bundle, "initiatives", 5)["title"] = "Renamed again"
    report = loaded(engine, bundle, now=LATER)
    assert report.stamp == datetime(9999, 1, 1)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == datetime(9999, 1, 1)


def test_a_load_that_waited_stamps_when_it_holds_the_lock(engine: Engine) -> None:
    # SEMANTICS R32: one moment taken once the load holds the store's write lock, not when
    # the load was asked for (a load that waited stamped the moment it began waiting).
    loaded(engine)
    holding, released = threading.Event(), []

    def another_load() -> None:
        with locked(engine, wait=5):
            holding.set()
            time.sleep(0.5)
            released.append(utc_now())

    other = threading.Thread(target=another_load)
    other.start()
    assert holding.wait(5)
    asked = utc_now()
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Renamed"
    report = load_bundle(engine, bundle, wait=5)
    other.join()
    assert report.stamp is not None
    assert report.stamp >= truncate_ms(released[0]) > asked


def test_a_store_stamped_at_the_end_of_time_refuses_a_load_by_a_clear_line(
    engine: Engine,
) -> None:
    # A stamp kept before the bound above existed: the load says so, it does not crash.
    loaded(engine)
    with engine.begin() as conn:
        end = datetime(9999, 12, 31, 23, 59, 59, 999_000)
        conn.execute(tables.store_clock.update().values(last_stamp=end))
    before = snapshot(engine)
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Renamed"
    assert refused(engine, bundle) == [
        "store: its last stamp 9999-12-31T23:59:59.999Z leaves no later moment to stamp with"
    ]
    assert snapshot(engine) == before
