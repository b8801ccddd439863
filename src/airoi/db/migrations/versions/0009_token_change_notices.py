"""PostgreSQL notifies a change to tokens, users or accounts

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26

A serving worker keeps the rows of the token lookup (tokens joined to users and accounts) for
the API's requests while the store has not changed them (airoi.token_cache). On PostgreSQL it
hears of a change by LISTENing on `airoi_principals`: a statement-level trigger on each of the
three tables notifies that channel, with an empty payload, on INSERT, UPDATE, DELETE and
TRUNCATE (one notification per transaction, as PostgreSQL folds repeats). SQLite needs
nothing: a worker reads `PRAGMA data_version` on its own connection. Nothing changes there.
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

CHANNEL = "airoi_principals"  # airoi.token_cache.CHANNEL, as it stands at this revision
FUNCTION = "airoi_principals_changed"
TABLES = ("tokens", "users", "accounts")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"CREATE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n  PERFORM pg_notify('{CHANNEL}', '');\n  RETURN NULL;\nEND\n$$"
    )
    for table in TABLES:
        op.execute(
            f"CREATE TRIGGER {FUNCTION} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
            f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TABLES:
        op.execute(f"DROP TRIGGER IF EXISTS {FUNCTION} ON {table}")
    op.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")
