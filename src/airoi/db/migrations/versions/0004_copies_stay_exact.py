"""Copies that stay exact: tombstones, the store's clock, a given cost category, the period
filter on the entry date

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25

- `deletions` keeps one row for every served row a load removes (SEMANTICS R34), so a copy
  can drop what the store dropped.
- `store_clock` holds the last stamp a load gave (R32), so the next one is later than
  every stored `updated_at` without reading the tables for it. Its first value is the
  latest stamp stored.
- `cost_entries.cost_category_given` says the category was given and no longer follows
  `cost_type` (R33). Rows stored before this were given a category, or had it follow the
  type: one that differs from what its type implies was certainly given.
- The period filter of the entry lists matches the entry date (R11: period_start, else the
  date of created_at), so the value entries' period index is on that date; the cost
  entries' ROI index already leads with (account_id, entry_date).
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
# SPEC 2.3 as the loader reads it at this revision (airoi.load.kinds.CAPEX_COST_TYPES).
CAPEX_COST_TYPES = (
    "implementation",
    "hardware",
    "setup",
    "integration",
    "training",
    "consulting",
    "migration",
)
STAMPED = (
    "accounts",
    "users",
    "vendors",
    "initiatives",
    "initiative_notes",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "budget_versions",
    "decisions",
    "integrations",
    "assessments",
)


def upgrade() -> None:
    op.create_table(
        "deletions",
        sa.Column("seq", Id, autoincrement=True, nullable=False),
        sa.Column("account_id", Id, nullable=False),
        sa.Column("resource", sa.String(30), nullable=False),
        sa.Column("record_id", Id, nullable=False),
        sa.Column("deleted_at", Timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_deletions")),
    )
    op.create_index("ix_deletions_keyset", "deletions", ["account_id", "deleted_at", "seq"])
    op.drop_index("ix_cost_entries_period", table_name="cost_entries")
    op.drop_index("ix_value_entries_period", table_name="value_entries")
    op.create_index("ix_value_entries_period", "value_entries", ["account_id", "entry_date"])

    op.add_column(
        "cost_entries",
        sa.Column("cost_category_given", sa.Boolean(), server_default="0", nullable=False),
    )
    capex = ", ".join(f"'{name}'" for name in CAPEX_COST_TYPES)
    implied = f"CASE WHEN lower(trim(cost_type)) IN ({capex}) THEN 'capex' ELSE 'opex' END"
    op.execute(f"UPDATE cost_entries SET cost_category_given = (cost_category <> {implied})")  # noqa: S608

    clock = op.create_table(
        "store_clock",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("last_stamp", Timestamp(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_store_clock")),
    )
    bind = op.get_bind()
    stamps = sa.MetaData()
    latest = None
    for name in STAMPED:
        table = sa.Table(name, stamps, sa.Column("updated_at", Timestamp()))
        found = bind.execute(sa.select(sa.func.max(table.c.updated_at))).scalar()
        if found is not None and (latest is None or found > latest):
            latest = found
    if latest is not None:  # the next load stamps later than every stamp stored
        op.bulk_insert(clock, [{"id": 1, "last_stamp": latest}])


def downgrade() -> None:
    op.drop_table("store_clock")
    with op.batch_alter_table("cost_entries") as batch:
        batch.drop_column("cost_category_given")
    op.drop_index("ix_value_entries_period", table_name="value_entries")
    op.create_index("ix_value_entries_period", "value_entries", ["account_id", "period_start"])
    op.create_index("ix_cost_entries_period", "cost_entries", ["account_id", "period_start"])
    op.drop_index("ix_deletions_keyset", table_name="deletions")
    op.drop_table("deletions")
