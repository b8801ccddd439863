"""What a load leaves the query planner, and the plans the served pages get from it.

A load gives the planner statistics for the tables it changed (SQLite `ANALYZE`,
PostgreSQL `VACUUM (ANALYZE)`); revision 0003 gives them to a store loaded before, and
puts the budget index in the order the budget sums group by.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from sqlalchemy import Engine, event, inspect, text

from tests.conftest import bearer
from tests.factories import BundleBuilder

ROWS = 1_200
INITIATIVES = 12


def _one_account(b: BundleBuilder) -> tuple[int, str]:
    """One account whose 1,200 cost entries are spread over 12 initiatives and 24 months."""
    account = b.account()
    token = b.token(b.user(account))
    initiatives = [b.initiative(account, title=f"I{n}") for n in range(INITIATIVES)]
    for n in range(ROWS):
        month = n % 24
        b.cost_entry(
            initiatives[n % INITIATIVES],
            amount_cents=100 + n,
            cost_category="capex" if n % 5 == 0 else "opex",
            period_start=f"{2024 + month // 12}-{month % 12 + 1:02d}-01",
        )
    return initiatives[3], token


def test_a_load_leaves_statistics_for_the_tables_it_changed(engine: Engine) -> None:
    b = BundleBuilder()
    _one_account(b)
    b.load(engine)
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            analyzed = {
                row[0] for row in conn.execute(text("SELECT DISTINCT tbl FROM sqlite_stat1"))
            }
            counted = conn.execute(
                text("SELECT stat FROM sqlite_stat1 WHERE idx = 'ix_cost_entries_initiative'")
            ).scalar_one()
            assert {"cost_entries", "initiatives", "users"} <= analyzed
            # Tokens change outside loads too; stale figures could plan a token lookup as a
            # scan, so they are given none and SQLite keeps using the unique hash.
            assert "tokens" not in analyzed
            # 'rows, rows per initiative, ...': the figures of this load, not of an earlier one.
            assert counted.split()[:2] == [str(ROWS), str(ROWS // INITIATIVES)]
        else:
            row = conn.execute(
                text(
                    "SELECT s.n_mod_since_analyze, c.relpages, c.relallvisible "
                    "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
                    "WHERE s.relname = 'cost_entries'"
                )
            ).one()
            assert row.n_mod_since_analyze == 0
            # Vacuumed: every page is marked all-visible, so sums can be read off an index.
            assert row.relpages > 0
            assert row.relallvisible == row.relpages


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[tuple[Engine, TestClient[Any], list[str]]]:
    """A migrated SQLite store, a client of the app on it, and every statement the app's
    connections run, as run (the plans checked here are SQLite's)."""
    from airoi.app import create_app
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade
    from airoi.settings import Settings

    url = f"sqlite:///{tmp_path / 'store.db'}"
    writer = make_engine(url)
    upgrade(writer)
    app = create_app(Settings(database_url=url))
    statements: list[str] = []

    @event.listens_for(app.state.engine, "connect")
    def _trace(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.set_trace_callback(statements.append)

    with TestClient(app) as client:
        yield writer, client, statements
    app.state.engine.dispose()
    writer.dispose()


def _plans(engine: Engine, statements: list[str], needle: str) -> list[str]:
    with engine.connect() as conn:
        return [
            " | ".join(row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
            for sql in statements
            if needle in sql
        ]


@pytest.fixture
def loaded(
    sqlite_store: tuple[Engine, TestClient[Any], list[str]],
) -> tuple[Engine, TestClient[Any], list[str], int, str]:
    """The SQLite store with `_one_account` loaded, and its fourth initiative and token."""
    b = BundleBuilder()
    initiative, token = _one_account(b)
    engine, client, statements = sqlite_store
    b.load(engine)
    return engine, client, statements, initiative, token


def test_a_page_of_one_initiative_is_read_by_its_index(
    loaded: tuple[Engine, TestClient[Any], list[str], int, str],
) -> None:
    # Without statistics SQLite walked the account's keyset index, all 1,200 rows, and kept
    # the initiative's 100; with them it reads the initiative's 100 by its own index.
    engine, client, statements, initiative, token = loaded
    for path in ("/api/v1/cost_entries", "/api/v1/roi"):
        response = client.get(path, params={"initiative_id": initiative}, headers=bearer(token))
        assert response.status_code == 200
    plans = _plans(engine, statements, "cost_entries.initiative_id = ")
    assert len(plans) == 2
    for plan in plans:
        assert "INDEX ix_cost_entries_initiative (initiative_id=?)" in plan
        assert "ix_cost_entries_keyset" not in plan


def test_the_budget_sums_are_read_in_index_order(
    loaded: tuple[Engine, TestClient[Any], list[str], int, str],
) -> None:
    engine, client, statements, _, token = loaded
    assert client.get("/api/v1/budgets", headers=bearer(token)).status_code == 200
    (plan,) = _plans(engine, statements, "sum(cost_entries.account_amount_cents)")
    assert "COVERING INDEX ix_cost_entries_budget" in plan
    assert "TEMP B-TREE" not in plan  # grouped as read, not sorted again


def _budget_index_columns(engine: Engine) -> list[str]:
    (index,) = [
        i
        for i in inspect(engine).get_indexes("cost_entries")
        if i["name"] == "ix_cost_entries_budget"
    ]
    return list(index["column_names"])


def test_revision_0003_reorders_the_budget_index_and_analyzes_an_older_store(
    tmp_path: Path,
) -> None:
    from alembic import command

    from airoi.db.engine import make_engine
    from airoi.db.migrate import alembic_config, upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'older.db'}")
    # A store as it was at 0002: loaded (by today's loader, which needs today's schema),
    # then taken back to 0002.
    upgrade(engine)
    b = BundleBuilder()
    _one_account(b)
    b.load(engine)
    command.downgrade(alembic_config(engine), "0002")
    with engine.begin() as conn:  # as a store loaded before 0003 was: no statistics
        conn.exec_driver_sql("DELETE FROM sqlite_stat1")
    assert _budget_index_columns(engine)[:3] == ["initiative_id", "entry_date", "entry_month"]

    upgrade(engine)
    assert _budget_index_columns(engine) == [
        "initiative_id",
        "entry_month",
        "cost_category",
        "entry_date",
        "account_amount_cents",
    ]
    with engine.connect() as conn:
        analyzed = {row[0] for row in conn.exec_driver_sql("SELECT DISTINCT tbl FROM sqlite_stat1")}
    assert {"cost_entries", "initiatives"} <= analyzed
    assert "tokens" not in analyzed

    command.downgrade(alembic_config(engine), "0002")
    assert _budget_index_columns(engine)[:3] == ["initiative_id", "entry_date", "entry_month"]
    engine.dispose()
