"""The benchmarks' dataset (bench/make_bundle.py): deterministic, and what it says it is
once loaded through the project's own loader: the large account beside small ones."""

from __future__ import annotations

from pathlib import Path

from bench.make_bundle import (
    ACCOUNT_ID,
    METRICS_PER_ACCOUNT,
    SMALL_COST_ENTRIES,
    SMALL_INITIATIVES,
    write_bundle,
)
from sqlalchemy import Engine, text

from airoi.load import load_bundle

SIZES = {
    "accounts": 3,
    "cost_entries": 1_500,
    "initiatives": 12,
    "value_entries": 400,
    "observations": 300,
    "budgets": True,
}


def test_the_bundle_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert write_bundle(first, **SIZES) == write_bundle(second, **SIZES)
    assert first.read_bytes() == second.read_bytes()


def test_the_loaded_store_holds_the_large_account_beside_small_ones(
    tmp_path: Path, engine: Engine
) -> None:
    path = tmp_path / "bundle.json"
    records = write_bundle(path, **SIZES)
    load_bundle(engine, path)

    def per_account(table: str, via_initiative: bool = True) -> dict[int, int]:
        join = " JOIN initiatives i ON i.id = t.initiative_id" if via_initiative else ""
        account = "i.account_id" if via_initiative else "t.account_id"
        sql = f"SELECT {account}, count(*) FROM {table} t{join} GROUP BY {account}"  # noqa: S608
        with engine.connect() as conn:
            return {row[0]: row[1] for row in conn.execute(text(sql))}

    small = [ACCOUNT_ID + 1, ACCOUNT_ID + 2]
    # Worked out from the sizes: a small account has 1/100 of the values and observations.
    assert per_account("initiatives", via_initiative=False) == {
        ACCOUNT_ID: 12,
        **dict.fromkeys(small, SMALL_INITIATIVES),
    }
    assert per_account("cost_entries", via_initiative=False) == {
        ACCOUNT_ID: 1_500,
        **dict.fromkeys(small, SMALL_COST_ENTRIES),
    }
    assert per_account("value_entries", via_initiative=False) == {
        ACCOUNT_ID: 400,
        **dict.fromkeys(small, 4),
    }
    assert per_account("observations") == {ACCOUNT_ID: 300, **dict.fromkeys(small, 3)}
    assert per_account("metrics", via_initiative=False) == dict.fromkeys(
        [ACCOUNT_ID, *small], METRICS_PER_ACCOUNT
    )
    # Budgets on three initiatives in four (ids divisible by 4 have none), a revision on
    # one in three of those: initiatives 1..32 hold 24 budgeted, 8 of them (3, 6, 9, ...,
    # not divisible by 4) revised.
    budgeted = [i for i in range(1, 33) if i % 4]
    revised = [i for i in budgeted if i % 3 == 0]
    with engine.connect() as conn:
        versions = conn.execute(text("SELECT count(*) FROM budget_versions")).scalar()
    assert versions == len(budgeted) + len(revised)
    # Every record written was loaded: accounts, users, the token, fx rates and the rest.
    expected = 3 + 3 + 1 + 6 + 32 + 3_500 + 408 + 3 * METRICS_PER_ACCOUNT + 306 + versions
    assert records == expected
