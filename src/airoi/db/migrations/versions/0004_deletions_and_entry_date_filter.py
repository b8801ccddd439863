"""Tombstones of deleted rows; the period filter reads the entry date

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

`deletions` keeps one row for every served row a load removes (SEMANTICS R34), so a copy
can drop what the store dropped. The period filter of the entry lists matches the entry
date (R11: period_start, else the date of created_at), so the value entries' period index
is on that date; the cost entries' ROI index already leads with (account_id, entry_date).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from airoi.db.types import Timestamp

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "deletions",
        sa.Column("seq", Id, autoincrement=True, nullable=False),
        sa.Column("account_id", Id, nullable=False),
        sa.Column("resource", sa.String(30), nullable=False),
        sa.Column("record_id", Id, nullable=False),
        sa.Column("deleted_at", Timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_deletions")),
        sa.ForeignKeyConstraint(
            ["account_id"], ["accounts.id"], name=op.f("fk_deletions_account_id_accounts")
        ),
    )
    op.create_index("ix_deletions_keyset", "deletions", ["account_id", "deleted_at", "seq"])
    op.drop_index("ix_cost_entries_period", table_name="cost_entries")
    op.drop_index("ix_value_entries_period", table_name="value_entries")
    op.create_index("ix_value_entries_period", "value_entries", ["account_id", "entry_date"])


def downgrade() -> None:
    op.drop_index("ix_value_entries_period", table_name="value_entries")
    op.create_index("ix_value_entries_period", "value_entries", ["account_id", "period_start"])
    op.create_index("ix_cost_entries_period", "cost_entries", ["account_id", "period_start"])
    op.drop_index("ix_deletions_keyset", table_name="deletions")
    op.drop_table("deletions")
