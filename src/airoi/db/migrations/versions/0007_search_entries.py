"""The search tool's folded texts, indexed by trigrams

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26

The search tool matched the whole query as one substring of a lower-cased title, by
scanning the account's rows. It now matches every word of the query, accents and case
folded, through an index: `search_entries` holds each searchable record's folded title and
secondary text, filled here from what is stored and rebuilt by every load that changes a
searched kind (airoi.db.search_index). SQLite indexes it with an FTS5 trigram table kept in
step by triggers; PostgreSQL with GIN trigram indexes (the pg_trgm extension, made here when
missing and left in place by the downgrade, as other objects may use it).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from airoi.db import search_index

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "search_entries",
        sa.Column("id", Id, autoincrement=True, nullable=False),
        sa.Column("account_id", Id, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("ref_id", Id, nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_entries")),
    )
    op.create_index("ix_search_entries_account", "search_entries", ["account_id", "kind", "ref_id"])
    bind = op.get_bind()
    statements = search_index.SQLITE_DDL if bind.dialect.name == "sqlite" else search_index.PG_DDL
    for statement in statements:
        op.execute(statement)
    search_index.rebuild(bind)
    op.execute("ANALYZE search_entries")  # the planner would take it for empty


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in search_index.SQLITE_DROP:
            op.execute(statement)
    op.drop_table("search_entries")
