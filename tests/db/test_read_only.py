"""The serving path cannot write (CONVENTIONS rule 5; SPEC 4.B: a tool call writes nothing).

The served app's engine opens SQLite with PRAGMA query_only and PostgreSQL with
default_transaction_read_only, so even a handler that tried to write would fail.
"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, func, insert, select, text, update
from sqlalchemy.exc import DBAPIError

from airoi.app import create_app
from airoi.db.tables import accounts
from airoi.settings import Settings
from tests.factories import BundleBuilder


def read_only_refusal(error: DBAPIError) -> bool:
    words = str(error.orig).lower()
    return "readonly" in words or "read-only" in words


def test_the_serving_engine_refuses_writes(db_url: str, engine: Engine) -> None:
    b = BundleBuilder()
    b.account(name="Before")
    b.load(engine)
    app = create_app(Settings(database_url=db_url))
    serving: Engine = app.state.engine
    try:
        attempts = [
            insert(accounts).values(name="Intruder", currency="USD"),
            update(accounts).values(name="Renamed"),
            text("DELETE FROM accounts"),
            text("CREATE TABLE intruder (id INTEGER)"),
        ]
        for statement in attempts:
            with pytest.raises(DBAPIError) as refused, serving.begin() as conn:
                conn.execute(statement)
            assert read_only_refusal(refused.value), refused.value.orig
        # Reading through the same engine still works.
        with serving.connect() as conn:
            assert conn.execute(select(func.count()).select_from(accounts)).scalar() == 1
    finally:
        serving.dispose()
    with engine.connect() as conn:
        assert conn.execute(select(accounts.c.name)).scalars().all() == ["Before"]
