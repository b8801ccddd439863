"""`airoi verify`: a fresh copy adds up to the service, figure for figure; a copy that drifted
is named by figure and scope (SEMANTICS R35, R7-R9, R21, R22, R25).

Every expected figure here is worked out by hand from the records below, in the comments
beside it. Today is 2026-06-15 (tests/client/conftest.py): the 1yr window is [2025-06-16,
2026-06-15], 3yr [2023-06-16, ...], 5yr [2021-06-16, ...]. EUR is 1.10 USD from 2025-01-01
and 1.20 from 2026-01-01 (an entry dated before 2025-01-01 takes the earliest rate, 1.10);
GBP is 1.25 from 2025-01-01.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.copies.layout import Format
from airoi.client.pull import pull
from airoi.load import load_bundle
from tests.client.conftest import FIRST_LOAD, LATER
from tests.factories import BundleBuilder

duckdb = pytest.importorskip("duckdb")

from airoi.client.verify import (  # noqa: E402 - needs duckdb, skipped above without it
    Compared,
    CopyError,
    Inconclusive,
    Unchecked,
    Verification,
    verify,
)

FORMATS: list[Format] = ["duckdb", "parquet", "csv"]


@dataclass
class World:
    builder: BundleBuilder
    token: str
    initiatives: dict[str, int]  # A, B, C, D, E, S
    entries: dict[str, int]


def build_world(engine: Engine) -> World:
    b = BundleBuilder(first_id=5000)
    acct = b.account(currency="USD")
    owner = b.user(acct, role="owner")
    # A token of this test's own: the rate limit counts per token across the session.
    token = b.token(owner, secret=f"airoi_verify-{uuid.uuid4().hex}-" + "x" * 16)
    b.fx_rate(acct, "EUR", "1.10", "2025-01-01")
    b.fx_rate(acct, "EUR", "1.20", "2026-01-01")
    b.fx_rate(acct, "GBP", "1.25", "2025-01-01")
    a = b.initiative(acct, title="A")  # no currency: the account's (USD)
    bee = b.initiative(acct, title="B", currency="EUR")
    c = b.initiative(acct, title="C", currency="EUR")
    d = b.initiative(acct, title="D")
    e = b.initiative(acct, title="E")
    s = b.initiative(acct, title="S", is_sample=True)
    entries = {
        # A, in USD (null currency), EUR; a refund, a null amount, a null period, a future
        # entry and entries outside the 1yr and 5yr windows.
        "a_capex": b.cost_entry(a, amount_cents=10_000, cost_category="capex",
                                period_start="2026-03-01"),
        "a_eur": b.cost_entry(a, amount_cents=5_000, currency="EUR",
                              period_start="2026-02-01"),  # 5,000 x 1.20 = 6,000
        "a_refund": b.cost_entry(a, amount_cents=-1_500, currency="USD",
                                 period_start="2026-04-01"),
        "a_null": b.cost_entry(a, amount_cents=None, period_start="2026-05-01"),
        "a_old_eur": b.cost_entry(a, amount_cents=2_001, currency="EUR",
                                  period_start="2024-07-01"),  # 2,001 x 1.10 = 2,201.1 -> 2,201
        "a_no_period": b.cost_entry(a, amount_cents=3_000, cost_category="capex",
                                    created_at="2026-06-01T10:00:00Z"),  # dated 2026-06-01
        "a_future": b.cost_entry(a, amount_cents=7_000, period_start="2026-07-01"),
        "a_2020": b.cost_entry(a, amount_cents=4_000, period_start="2020-01-01"),
        "a_value": b.value_entry(a, amount_cents=100_000, period_start="2026-03-01"),
        "a_value_eur": b.value_entry(a, amount_cents=10_000, currency="EUR",
                                     period_start="2025-03-01"),  # 11,000, outside 1yr
        "a_value_draft": b.value_entry(a, amount_cents=50_000, status="draft",
                                       period_start="2026-03-01"),
        "a_value_null": b.value_entry(a, amount_cents=None, period_start="2026-03-01"),
        "a_value_negative": b.value_entry(a, amount_cents=-2_000, period_start="2026-05-01"),
        # B, a EUR initiative with a revised EUR budget: its row is in EUR.
        "b_opex": b.cost_entry(bee, amount_cents=8_000, currency="EUR",
                               period_start="2026-02-01"),  # 9,600 USD
        "b_capex": b.cost_entry(bee, amount_cents=1_000, currency="EUR", cost_category="capex",
                                period_start="2026-04-01"),  # 1,200 USD
        "b_null_usd": b.cost_entry(bee, amount_cents=None, currency="USD",
                                   period_start="2026-03-01"),
        "b_value": b.value_entry(bee, amount_cents=30_000, currency="USD",
                                 period_start="2026-02-01"),
        # C, a EUR initiative with spend in GBP: 4,000 x 1.25 = 5,000 USD.
        "c_gbp": b.cost_entry(c, amount_cents=4_000, currency="GBP", period_start="2026-03-01"),
        # D, a budget that starts in September: scheduled.
        "d_opex": b.cost_entry(d, amount_cents=2_500, period_start="2026-05-01"),
        # E, no budget.
        "e_capex": b.cost_entry(e, amount_cents=700, cost_category="capex",
                                period_start="2026-06-10"),
        # S, a sample initiative: out of the portfolio, in its own scope.
        "s_opex": b.cost_entry(s, amount_cents=99_999, period_start="2026-03-01"),
        "s_value": b.value_entry(s, amount_cents=1_000, period_start="2026-03-01"),
    }  # fmt: skip
    b.budget_version(a, effective_from="2026-01-01", capex_cents=20_000, opex_cents=3_000,
                     approved_at="2025-12-01T00:00:00Z")  # fmt: skip
    b.budget_version(bee, effective_from="2026-01-01", capex_cents=5_000, opex_cents=1_200,
                     approved_at="2025-12-01T00:00:00Z")  # fmt: skip
    b.budget_version(bee, effective_from="2026-04-01", capex_cents=6_000, opex_cents=2_000,
                     approved_at="2026-03-15T00:00:00Z", source="revision")  # fmt: skip
    b.budget_version(c, effective_from="2026-01-01", capex_cents=1_000, opex_cents=500)
    b.budget_version(d, effective_from="2026-09-01", capex_cents=1_000, opex_cents=500)
    b.load(engine, now=FIRST_LOAD)
    names = {"A": a, "B": bee, "C": c, "D": d, "E": e, "S": s}
    return World(b, token, names, entries)


@pytest.fixture
def world(engine: Engine) -> World:
    return build_world(engine)


def target_for(tmp_path: Path, fmt: Format) -> Path:
    return tmp_path / "copy.duckdb" if fmt == "duckdb" else tmp_path / f"copy-{fmt}"


def pulled(base_url: str, world: World, target: Path, fmt: Format = "duckdb") -> Path:
    with Client(base_url, world.token) as api:
        pull(api, target, fmt)
    return target


def verified(base_url: str, world: World, target: Path, fmt: str | None = None) -> Verification:
    with Client(base_url, world.token) as api:
        return verify(api, target, fmt, workers=3)


def figure(result: Verification, name: str, scope: str, window: str) -> Compared:
    (found,) = [
        c for c in result.compared if (c.figure, c.scope, c.window) == (name, scope, window)
    ]
    return found


def keys(compared: list[Compared]) -> set[tuple[str, str, str]]:
    return {(c.figure, c.scope, c.window) for c in compared}


def assert_both(result: Verification, scope: str, window: str, expected: dict[str, Any]) -> None:
    for name, value in expected.items():
        found = figure(result, name, scope, window)
        assert (found.service, found.copy) == (value, value), (name, scope, window, found)


# -- a fresh copy --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fresh_copy_adds_up_to_the_service(
    base_url: str, world: World, tmp_path: Path, fmt: Format
) -> None:
    target = pulled(base_url, world, target_for(tmp_path, fmt), fmt)
    result = verified(base_url, world, target)

    assert result.fmt == fmt
    assert result.today == date(2026, 6, 15)
    assert result.currency == "USD"
    assert result.differences == []
    i = world.initiatives
    # SEMANTICS R21: C's budget row is in EUR and C spent GBP; the copy has no FX table.
    assert result.unchecked == [
        Unchecked(
            i["C"],
            "EUR",
            "spend in GBP cannot be converted into EUR from a copy (the FX table is not served)",
        )
    ]
    # Portfolio and 6 initiatives (presence + 6 figures) over 4 windows, the portfolio's
    # three window starts; budget rows A, D, E, S with 8 figures, B (revised: no run rate) 7.
    assert len(result.compared) == (24 + 3) + 6 * (1 + 24) + 4 * 8 + 7
    assert result.notes == []
    # One /roi for each of the portfolio and six initiatives over 4 windows, one /budgets,
    # and one page of a position the copy remembers (is it this account's copy?).
    assert result.requests == 4 + 6 * 4 + 1 + 1

    # Initiative A, all time: capex 10,000 + 3,000 = 13,000; opex 6,000 - 1,500 + 2,201
    # + 7,000 (future) + 4,000 (2020) = 17,701; approved value 100,000 + 11,000 - 2,000.
    assert_both(
        result,
        f"initiative {i['A']}",
        "all",
        {
            "approved_value_cents": 109_000,
            "cost.capex_cents": 13_000,
            "cost.opex_cents": 17_701,
            "total_cost_cents": 30_701,
            "net_value_cents": 78_299,
            "roi": 78_299 / 30_701,
        },
    )
    # A over 1yr: the 2024, 2020 and July entries and the 2025-03 value are out.
    assert_both(
        result,
        f"initiative {i['A']}",
        "1yr",
        {
            "approved_value_cents": 98_000,
            "cost.capex_cents": 13_000,
            "cost.opex_cents": 4_500,
            "total_cost_cents": 17_500,
            "net_value_cents": 80_500,
            "roi": 4.6,
        },
    )
    # A over 3yr and 5yr: 2,201 (2024-07) and the 11,000 value come in; 2020 stays out.
    for window in ("3yr", "5yr"):
        assert_both(
            result,
            f"initiative {i['A']}",
            window,
            {"approved_value_cents": 109_000, "cost.opex_cents": 6_701},
        )
    # The portfolio over 1yr, sample S left out: value A 98,000 + B 30,000; capex A 13,000
    # + B 1,200 + E 700; opex A 4,500 + B 9,600 + C 5,000 + D 2,500.
    assert_both(
        result,
        "portfolio",
        "1yr",
        {
            "approved_value_cents": 128_000,
            "cost.capex_cents": 14_900,
            "cost.opex_cents": 21_600,
            "total_cost_cents": 36_500,
            "net_value_cents": 91_500,
            "roi": 91_500 / 36_500,
        },
    )
    assert_both(result, "portfolio", "1yr", {"period.from": "2025-06-16"})
    # S in its own scope (SEMANTICS R7).
    assert_both(
        result,
        f"initiative {i['S']}",
        "1yr",
        {"approved_value_cents": 1_000, "cost.opex_cents": 99_999, "net_value_cents": -98_999},
    )
    # A's budget (USD, from January, one version of 20,000 capex and 3,000 a month): capex
    # 10,000 + 3,000; opex 6,000 - 1,500 (the July entry is after today); before January
    # 2,201 + 4,000. Budget to date 20,000 + 6 x 3,000 = 38,000. Run rate: March, April and
    # May, opex 0 - 1,500 + 0 over 3 = -500.
    assert_both(
        result,
        f"budget {i['A']}",
        "to date",
        {
            "capex_actual_cents": 13_000,
            "opex_actual_cents": 4_500,
            "actual_to_date_cents": 17_500,
            "spent_before_budget_cents": 6_201,
            "capex_remaining_cents": 7_000,
            "variance_cents": 20_500,
            "used_ratio": 17_500 / 38_000,
            "actual_monthly_run_rate_cents": -500,
        },
    )
    # B's budget, in EUR: the EUR amounts as entered (the null USD entry is nothing). The
    # current version (April on) has capex 6,000; opex to date 3 x 1,200 + 3 x 2,000.
    assert_both(
        result,
        f"budget {i['B']}",
        "to date",
        {
            "capex_actual_cents": 1_000,
            "opex_actual_cents": 8_000,
            "actual_to_date_cents": 9_000,
            "spent_before_budget_cents": 0,
            "capex_remaining_cents": 5_000,
            "variance_cents": 6_600,
            "used_ratio": 9_000 / 15_600,
        },
    )
    assert ("actual_monthly_run_rate_cents", f"budget {i['B']}", "to date") not in keys(
        result.compared
    )
    # D is scheduled: nothing has begun; the spend so far is before the budget (R25).
    assert_both(
        result,
        f"budget {i['D']}",
        "to date",
        {"spent_before_budget_cents": 2_500, "actual_to_date_cents": 0, "used_ratio": None},
    )
    # E has no budget: every amount 0 whatever was spent (R25).
    assert_both(
        result,
        f"budget {i['E']}",
        "to date",
        {"capex_actual_cents": 0, "actual_to_date_cents": 0, "spent_before_budget_cents": 0},
    )


def test_run_rate_of_a_budget_that_ended(base_url: str, engine: Engine, tmp_path: Path) -> None:
    # SEMANTICS R22: the covered months of a one-version budget end with its ends_on month.
    b = BundleBuilder(first_id=7000)
    acct = b.account()
    token = b.token(b.user(acct), secret=f"airoi_verify-{uuid.uuid4().hex}-" + "x" * 16)
    init = b.initiative(acct)
    b.budget_version(init, effective_from="2025-10-01", ends_on="2026-02-10", opex_cents=900)
    for month, cents in (("2025-11", 100), ("2025-12", 200), ("2026-01", 301), ("2026-02", 400)):
        b.cost_entry(init, amount_cents=cents, period_start=f"{month}-05")
    b.cost_entry(init, amount_cents=10_000, period_start="2026-03-05")  # after it ended
    b.load(engine, now=FIRST_LOAD)
    world = World(b, token, {"I": init}, {})
    result = verified(base_url, world, pulled(base_url, world, tmp_path / "c.duckdb"))
    assert result.differences == []
    # December, January, February: (200 + 301 + 400) / 3 = 300.33 -> 300.
    assert_both(result, f"budget {init}", "to date", {"actual_monthly_run_rate_cents": 300})


# -- copies that drifted -------------------------------------------------------------------


def test_a_change_made_to_the_copy_is_named(base_url: str, world: World, tmp_path: Path) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    conn = duckdb.connect(str(target))
    conn.execute(
        "UPDATE cost_entries SET account_amount_cents = account_amount_cents + 1 WHERE id = ?",
        [world.entries["a_capex"]],
    )
    conn.execute("DELETE FROM value_entries WHERE id = ?", [world.entries["a_value"]])
    conn.close()

    result = verified(base_url, world, target)

    a = f"initiative {world.initiatives['A']}"
    moved = ("approved_value_cents", "cost.capex_cents", "total_cost_cents", "net_value_cents")
    budget = f"budget {world.initiatives['A']}"
    assert keys(result.differences) == {
        (name, scope, window)
        for scope in ("portfolio", a)
        for window in ("all", "1yr", "3yr", "5yr")
        for name in (*moved, "roi")
    } | {
        (name, budget, "to date")
        for name in (
            "capex_actual_cents",
            "actual_to_date_cents",
            "capex_remaining_cents",
            "variance_cents",
            "used_ratio",
        )
    }
    value = figure(result, "approved_value_cents", "portfolio", "1yr")
    assert (value.service, value.copy, value.difference) == (128_000, 28_000, -100_000)
    capex = figure(result, "capex_actual_cents", budget, "to date")
    assert (capex.service, capex.copy, capex.difference) == (13_000, 13_001, 1)


def test_a_change_loaded_on_the_server_after_the_pull_is_named(
    base_url: str, world: World, engine: Engine, tmp_path: Path
) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    # B's EUR opex becomes 9,000 (10,800 USD at 1.20); the copy is not pulled again.
    (changed,) = [
        r for r in world.builder.data["cost_entries"] if r["id"] == world.entries["b_opex"]
    ]
    load_bundle(engine, {"cost_entries": [{**changed, "amount_cents": 9_000}]}, now=LATER)
    result = verified(base_url, world, target)

    b = world.initiatives["B"]
    opex = figure(result, "cost.opex_cents", f"initiative {b}", "1yr")
    assert (opex.service, opex.copy, opex.difference) == (10_800, 9_600, -1_200)
    portfolio = figure(result, "cost.opex_cents", "portfolio", "all")
    assert portfolio.difference == -1_200
    budget = figure(result, "opex_actual_cents", f"budget {b}", "to date")
    assert (budget.service, budget.copy) == (9_000, 8_000)
    assert {scope for _, scope, _ in keys(result.differences)} == {
        "portfolio",
        f"initiative {b}",
        f"budget {b}",
    }


def test_a_deletion_the_copy_missed_is_named(
    base_url: str, world: World, engine: Engine, tmp_path: Path
) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    load_bundle(
        engine,
        {
            "delete": {
                "cost_entries": [world.entries["a_capex"]],
                "initiatives": [world.initiatives["E"]],
            }
        },
        now=LATER,
    )  # fmt: skip
    result = verified(base_url, world, target)

    a, e = world.initiatives["A"], world.initiatives["E"]
    capex = figure(result, "cost.capex_cents", f"initiative {a}", "1yr")
    assert (capex.service, capex.copy) == (3_000, 13_000)
    budget = figure(result, "capex_actual_cents", f"budget {a}", "to date")
    assert (budget.service, budget.copy) == (3_000, 13_000)
    # E is gone from the service and still in the copy: named, its figures not asked for.
    gone = figure(result, "initiative", f"initiative {e}", "")
    assert (gone.service, gone.copy) == ("absent", "present")
    assert not [c for c in result.compared if c.scope == f"initiative {e}" and c.window]
    # The portfolio lost A's 10,000 and E's 700 of capex.
    portfolio = figure(result, "cost.capex_cents", "portfolio", "1yr")
    assert (portfolio.service, portfolio.copy) == (14_900 - 10_700, 14_900)


def test_an_initiative_the_copy_lacks_is_named(
    base_url: str, world: World, engine: Engine, tmp_path: Path
) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    conn = duckdb.connect(str(target))
    conn.execute("DELETE FROM initiatives WHERE id = ?", [world.initiatives["D"]])
    conn.close()
    result = verified(base_url, world, target)
    d = world.initiatives["D"]
    lacking = figure(result, "initiative", f"initiative {d}", "")
    assert (lacking.service, lacking.copy) == ("present", "absent")
    # Its own figures still add up from its entries; the portfolio (joined to the copy's
    # initiatives, R7) lost its 2,500.
    assert not [c for c in result.differences if c.scope == f"initiative {d}" and c.window]
    assert figure(result, "cost.opex_cents", "portfolio", "1yr").difference == -2_500


# -- the store and the service -------------------------------------------------------------


def test_a_store_that_is_not_a_copy_is_refused(base_url: str, world: World, tmp_path: Path) -> None:
    with pytest.raises(CopyError, match="There is no store at"):
        verified(base_url, world, tmp_path / "nowhere.duckdb")
    (tmp_path / "text.duckdb").write_text("not a database")
    with pytest.raises(CopyError, match=r"not a DuckDB file \(it does not begin as one does\)"):
        verified(base_url, world, tmp_path / "text.duckdb")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CopyError, match=r"holds no \.parquet or \.csv files"):
        verified(base_url, world, tmp_path / "empty")
    other = duckdb.connect(str(tmp_path / "other.duckdb"))
    other.execute("CREATE TABLE t (x INTEGER)")
    other.close()
    with pytest.raises(CopyError, match="is not a store of airoi pull"):
        verified(base_url, world, tmp_path / "other.duckdb")
    # A format its files contradict: said, not read as a copy with nothing in it.
    files = pulled(base_url, world, tmp_path / "files", "parquet")
    with pytest.raises(CopyError, match=r"holds \.parquet files, not \.csv: give --format parq"):
        verified(base_url, world, files, "csv")
    assert verified(base_url, world, files, "parquet").differences == []


def test_a_copy_pulled_before_entries_served_reported_on_is_refused(
    base_url: str, world: World, tmp_path: Path
) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    conn = duckdb.connect(str(target))
    conn.execute("ALTER TABLE cost_entries DROP COLUMN reported_on")
    conn.close()
    with pytest.raises(CopyError, match=r"cost_entries .* have no reported_on column"):
        verified(base_url, world, target)


CLEARED = {
    "initiatives": "UPDATE initiatives SET id = NULL WHERE id = ?",
    "cost_entries": "UPDATE cost_entries SET initiative_id = NULL WHERE initiative_id = ?",
}


@pytest.mark.parametrize(
    ("table", "key"), [("initiatives", "id"), ("cost_entries", "initiative_id")]
)
def test_a_copy_row_with_no_key_is_refused_not_a_crash(
    base_url: str, world: World, tmp_path: Path, table: str, key: str
) -> None:
    # It was a TypeError traceback (sorting None with ids), exit 1 as if figures differed.
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    conn = duckdb.connect(str(target))
    conn.execute(CLEARED[table], [world.initiatives["A"]])
    conn.close()
    with pytest.raises(CopyError, match=f"The {table} of the store at .* rows with no {key}"):
        verified(base_url, world, target)


@pytest.mark.parametrize("fmt", ["duckdb", "parquet"])
def test_a_copy_of_another_account_is_said_to_be_one(
    base_url: str, world: World, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R13: its figures were compared as this account's, 59 differences, exit 1.
    target = pulled(base_url, world, target_for(tmp_path, fmt), fmt)
    other = BundleBuilder(first_id=7000)
    theirs = other.token(other.user(other.account(name="Theirs")), secret="airoi_t-" + "y" * 43)
    other.load(engine, now=LATER)
    with Client(base_url, theirs) as api, pytest.raises(CopyError) as refused:
        verify(api, target, workers=3)
    assert str(refused.value) == (
        f"The copy at {target} is of another account than this token's (the service refused "
        "its remembered position as issued to another account): its figures are not this "
        "account's to compare. Verify it with a token of its own account."
    )
    assert verified(base_url, world, target).differences == []  # its own token: as before


def test_the_copy_is_only_read(base_url: str, world: World, tmp_path: Path) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    before = target.read_bytes()
    verified(base_url, world, target)
    assert target.read_bytes() == before


def test_numbers_are_equal_by_value_and_nothing_else_is() -> None:
    # JSON does not tell 2 from 2.0; null is not zero; a presence is not a number.
    assert Compared("roi", "portfolio", "all", 2, 2.0).equal
    assert not Compared("roi", "portfolio", "all", None, 0.0).equal
    assert not Compared("used_ratio", "budget 1", "to date", 0, None).equal
    assert not Compared("x", "portfolio", "all", True, 1).equal
    assert Compared("c", "portfolio", "all", 700, 0).difference == -700
    assert Compared("initiative", "initiative 1", "", "present", "absent").difference is None


def test_answers_of_another_day_are_not_compared(tmp_path: Path) -> None:
    # SEMANTICS R1: without AIROI_TODAY the service's day can turn while it is asked.
    conn = duckdb.connect(str(tmp_path / "empty.duckdb"))
    conn.execute(
        "CREATE TABLE _airoi_state (resource VARCHAR, updated_since VARCHAR, walk_since VARCHAR,"
        " cursor VARCHAR, walk_max VARCHAR, pulled_at TIMESTAMPTZ)"
    )
    conn.close()

    def roi(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/budgets"):
            return httpx.Response(200, json={"data": [], "page": {"has_more": False}})
        window = request.url.params.get("window", "all")
        # The 1yr answer, asked first, is of the 15th; the others of the 16th.
        through = "2026-06-15" if window == "1yr" else "2026-06-16"
        period = {"window": window, "label": window}
        if window != "all":
            period |= {"from": "2025-06-16", "through": through}
        zero = {"approved_value_cents": 0, "total_cost_cents": 0, "net_value_cents": 0}
        body = {"scope": {"type": "portfolio"}, "period": period, "currency": "USD", **zero,
                "roi": None, "cost": {"capex_cents": 0, "opex_cents": 0}}  # fmt: skip
        return httpx.Response(200, json=body)

    transport = httpx.MockTransport(roi)
    with Client("http://service", "t" * 40, transport=transport) as api:  # noqa: SIM117
        with pytest.raises(Inconclusive, match=r"2026-06-15, then 2026-06-16"):
            verify(api, tmp_path / "empty.duckdb")


# -- the command line ----------------------------------------------------------------------


def airoi_verify(*args: str, token: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AIROI_TOKEN": token, "COLUMNS": "200"}
    env.pop("AIROI_BASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "airoi", "verify", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.mark.store_independent
def test_the_command_exits_0_1_or_2_and_never_prints_the_token(
    base_url: str, world: World, tmp_path: Path
) -> None:
    target = pulled(base_url, world, tmp_path / "copy.duckdb")
    token = world.token
    equal = airoi_verify("--base-url", base_url, "--store", str(target), token=token)
    assert equal.returncode == 0, equal.stderr
    summary = " ".join(equal.stdout.split())
    assert "0 differ, 1 budget rows not checkable from a copy" in summary
    assert "Not checkable from a copy" in equal.stdout
    assert f"as of 2026-06-15 (USD); copy {target} (duckdb)" in summary

    conn = duckdb.connect(str(target))
    conn.execute("DELETE FROM cost_entries WHERE id = ?", [world.entries["e_capex"]])
    conn.close()
    differ = airoi_verify("--base-url", base_url, "--store", str(target), token=token)
    assert differ.returncode == 1, differ.stderr
    e = world.initiatives["E"]
    # E's 700 of capex, in every window that holds 2026-06-10, for E and the portfolio.
    assert f"│ cost.capex_cents │ initiative {e} │ 1yr │ 700 │ 0 │ -700 │" in " ".join(
        differ.stdout.split()
    )
    assert "32 differ" in " ".join(differ.stdout.split())

    runs = [equal, differ]
    runs.append(
        airoi_verify("--base-url", base_url, "--store", str(target), token="airoi_" + "y" * 43)
    )
    assert runs[-1].returncode == 2
    assert runs[-1].stderr.startswith("Verify stopped: 401: ")
    runs.append(
        airoi_verify("--base-url", base_url, "--store", str(tmp_path / "none"), token=token)
    )
    assert (runs[-1].returncode, runs[-1].stderr.strip()) == (
        2,
        f"Verify stopped: There is no store at {tmp_path / 'none'}: make one with airoi pull "
        f"--to {tmp_path / 'none'}.",
    )
    runs.append(airoi_verify("--base-url", "http://reader:pw@host:port/api/v1", "--store",
                             str(target), token=token))  # fmt: skip
    assert (runs[-1].returncode, runs[-1].stderr.strip()) == (
        2,
        "Verify stopped: http://host:port/api/v1 is not a URL that can be asked.",
    )
    runs.append(airoi_verify("--base-url", base_url, token=token))  # no --store: usage
    assert runs[-1].returncode == 2 and "--store" in runs[-1].stderr
    runs.append(airoi_verify("--base-url", base_url, "--store", str(target), "--token", token,
                             "--all", token="unused"))  # fmt: skip
    assert runs[-1].returncode == 1
    runs.append(airoi_verify("--help", token=token))
    assert runs[-1].returncode == 0
    assert "not checkable from a copy" in " ".join(runs[-1].stdout.split())
    for run in runs:
        assert token not in run.stdout + run.stderr
        assert "Traceback" not in run.stderr


def test_the_help_names_what_a_copy_cannot_check(tmp_path: Path) -> None:
    help_text = " ".join(airoi_verify("--help", token="x" * 40).stdout.split())
    for words in ("--base-url", "--token", "--store", "not checkable from a copy", "FX table"):
        assert words in help_text, words
