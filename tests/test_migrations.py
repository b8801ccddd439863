"""The migrations build exactly the tables the code declares, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, select

from airoi.db.tables import accounts, metadata


def test_migrated_schema_matches_the_declared_tables(engine: Engine) -> None:
    with engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    assert differences == []


def test_sqlite_datetimes_are_rewritten_as_the_served_text(tmp_path: Path) -> None:
    # Revision 0002: SQLite held `2026-03-01 09:30:00.125000` and now holds the text served
    # (SEMANTICS R3), so a store made before it reads and serves the same instants after it.
    from airoi.db.engine import make_engine
    from airoi.db.migrate import alembic_config, upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    upgrade(engine, "0001")
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO accounts (id, name, currency, fiscal_year_start_month, api_access, "
            "internal, created_at, updated_at) VALUES (1, 'A', 'USD', 1, 1, 0, "
            "'2026-03-01 09:30:00.125000', '2026-03-02 23:59:59.999000')"
        )
    upgrade(engine)
    with engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT created_at, updated_at FROM accounts").one()
        read = conn.execute(select(accounts.c.created_at, accounts.c.updated_at)).one()
    assert tuple(stored) == ("2026-03-01T09:30:00.125Z", "2026-03-02T23:59:59.999Z")
    assert tuple(read) == (
        datetime(2026, 3, 1, 9, 30, 0, 125_000),
        datetime(2026, 3, 2, 23, 59, 59, 999_000),
    )

    command.downgrade(alembic_config(engine), "0001")
    with engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT created_at, updated_at FROM accounts").one()
    assert tuple(stored) == ("2026-03-01 09:30:00.125000", "2026-03-02 23:59:59.999000")
    engine.dispose()


def test_a_store_of_an_older_schema_is_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Serving a 0001 store would send SQLite's old datetime text as is: refused, with the fix.
    from airoi.app import app_from_env
    from airoi.db.engine import make_engine
    from airoi.db.migrate import SchemaOutOfDate, upgrade

    url = f"sqlite:///{tmp_path / 'old.db'}"
    monkeypatch.setenv("AIROI_DATABASE_URL", url)
    engine = make_engine(url)
    upgrade(engine, "0001")
    with pytest.raises(SchemaOutOfDate, match=r"revision 0001.*Run `airoi init`"):
        app_from_env()
    upgrade(engine)
    app_from_env().state.engine.dispose()
    engine.dispose()
