"""The migrations build exactly the tables the code declares, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, select, text

from airoi.db import search_index
from airoi.db.tables import accounts, metadata


def _declared(name: str | None, type_: str, parents: object) -> bool:
    """Leave out the search index's own objects, made by revision 0007 and not declared as
    tables: the FTS5 table and its shadow tables on SQLite, GIN indexes on PostgreSQL."""
    if type_ == "table" and name is not None and name.startswith(search_index.FTS_TABLE):
        return False
    return not (type_ == "index" and name in search_index.PG_INDEXES)


def test_migrated_schema_matches_the_declared_tables(engine: Engine) -> None:
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_name": _declared})
        differences = compare_metadata(context, metadata)
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


def test_revision_0004_starts_the_clock_and_tells_a_given_category(tmp_path: Path) -> None:
    # SEMANTICS R32: the next load stamps later than every stamp an older store holds.
    # R33: an entry whose category differs from what its type implies had it given.
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade
    from airoi.load import load_bundle

    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    upgrade(engine, "0003")
    stamps = {"day": "2026-03-01T00:00:00.000Z", "later": "2027-01-01T00:00:00.000Z"}
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO accounts (id, name, currency, fiscal_year_start_month, api_access, "
                "internal, created_at, updated_at) VALUES (1, 'A', 'USD', 1, 1, 0, :day, :day)"
            ),
            stamps,
        )
        conn.execute(
            text(
                "INSERT INTO initiatives (id, account_id, title, stage, is_sample, created_at, "
                "updated_at) VALUES (1, 1, 'T', 'live', 0, :day, :day)"
            ),
            stamps,
        )
        conn.execute(
            text(
                "INSERT INTO cost_entries (id, account_id, initiative_id, amount_cents, "
                "cost_type, cost_category, entry_date, entry_month, is_estimated, locked, "
                "created_at, updated_at) VALUES (:id, 1, 1, 100, :type, :category, "
                "'2026-03-01', '2026-03-01', 0, 0, :day, :later)"
            ),
            [
                {**stamps, "id": 1, "type": "training", "category": "capex"},  # as implied
                {**stamps, "id": 2, "type": "training", "category": "opex"},  # given
                {**stamps, "id": 3, "type": None, "category": "opex"},  # as no type implies
            ],
        )
    upgrade(engine)
    with engine.connect() as conn:
        given = dict(conn.exec_driver_sql("SELECT id, cost_category_given FROM cost_entries").all())
        clock = conn.exec_driver_sql("SELECT last_stamp FROM store_clock").scalar()
    assert given == {1: 0, 2: 1, 3: 0}
    assert clock == "2027-01-01T00:00:00.000Z"
    # A load now stamps after it, whatever the machine's clock says.
    report = load_bundle(engine, {"initiatives": [{"id": 1, "stage": "paused"}]})
    assert report.stamp == datetime(2027, 1, 1, 0, 0, 0, 1000)
    engine.dispose()


def test_revision_0005_makes_the_stores_secret_and_downgrade_drops_it(engine: Engine) -> None:
    # SEMANTICS R13: every store at this revision has a random secret of its own to sign
    # cursors with; the downgrade removes it, and the upgrade after makes a new one.
    from sqlalchemy import inspect

    from airoi.db.migrate import alembic_config, upgrade
    from airoi.db.secret import read_store_secret

    def secrets_held() -> list[bytes] | None:
        with engine.connect() as conn:
            if not inspect(conn).has_table("store_secret"):
                return None
            found = conn.exec_driver_sql("SELECT id, secret FROM store_secret").all()
            assert [row[0] for row in found] == [1]
            assert read_store_secret(conn) == bytes(found[0][1])
            return [bytes(row[1]) for row in found]

    before = secrets_held()
    assert before is not None and len(before[0]) == 32
    try:
        command.downgrade(alembic_config(engine), "0004")
        assert secrets_held() is None
    finally:
        upgrade(engine)
    after = secrets_held()
    assert after is not None and len(after[0]) == 32
    assert after != before


def test_revision_0008_adds_the_oauth_tables_and_downgrade_drops_them(engine: Engine) -> None:
    from sqlalchemy import inspect

    from airoi.db.migrate import alembic_config, upgrade

    oauth = {"oauth_clients", "oauth_codes", "oauth_tokens"}

    def held() -> set[str]:
        with engine.connect() as conn:
            return oauth & set(inspect(conn).get_table_names())

    assert held() == oauth
    try:
        command.downgrade(alembic_config(engine), "0007")
        assert held() == set()
    finally:
        upgrade(engine)
    assert held() == oauth


def test_revision_0009_notifies_changes_to_tokens_on_postgresql(engine: Engine) -> None:
    # airoi.token_cache listens for these: a statement on tokens, users or accounts notifies.
    from airoi.db.migrate import alembic_config, upgrade

    def triggered() -> set[str]:
        if engine.dialect.name != "postgresql":
            return set()
        with engine.connect() as conn:
            # tgtype's bits: 4 INSERT, 8 DELETE, 16 UPDATE, 32 TRUNCATE; 1 (row level) unset.
            return set(
                conn.execute(
                    text(
                        "SELECT tgrelid::regclass::text || ' ' || (tgtype & 61)::text "
                        "FROM pg_trigger WHERE tgname = 'airoi_principals_changed'"
                    )
                ).scalars()
            )

    expected = {f"{table} 60" for table in ("tokens", "users", "accounts")}
    assert triggered() == (expected if engine.dialect.name == "postgresql" else set())
    try:
        command.downgrade(alembic_config(engine), "0008")
        assert triggered() == set()
    finally:
        upgrade(engine)
    assert triggered() == (expected if engine.dialect.name == "postgresql" else set())
