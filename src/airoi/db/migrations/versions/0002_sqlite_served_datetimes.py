"""SQLite keeps datetimes as the text they are served as

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Before, SQLite held `2026-03-01 09:30:00.125000`; now `2026-03-01T09:30:00.125Z`
(`airoi.db.types.Timestamp`). Both are fixed width, so converting keeps the order.
PostgreSQL keeps a `timestamp` and is not touched.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _convert(pattern: str) -> None:
    """Rewrite every value of every datetime column (as SQLite declares them) by `pattern`."""
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    for table in inspector.get_table_names():
        for column in inspector.get_columns(table):
            if isinstance(column["type"], sa.DateTime):
                name = column["name"]
                op.execute(
                    f"UPDATE {table} SET {name} = strftime('{pattern}', {name}) "  # noqa: S608
                    f"WHERE {name} IS NOT NULL"
                )


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _convert("%Y-%m-%dT%H:%M:%fZ")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _convert("%Y-%m-%d %H:%M:%f000")
