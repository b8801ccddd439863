"""The budget index in the order its sums group by; SQLite's planner gets statistics

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23

`ix_cost_entries_budget` was (initiative, date, month, category, amount): a budget page
read its spend in date order and sorted it again to sum it by month and category. It is
now (initiative, month, category, date, amount), so the sums come off the index in order.

A store loaded before this had no SQLite statistics (loads gave them to PostgreSQL only),
so SQLite planned a page of one initiative's rows by walking the whole account. The
tables a bundle loads are analyzed here once; every load analyzes what it changed.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# The tables a bundle loads (airoi.load.kinds.KINDS) as they were at this revision, but tokens:
# issuing and revoking them changes the table outside any load, so its statistics would go
# stale; without any, SQLite always looks a token up by its unique hash.
ANALYZED = (
    "accounts",
    "assessments",
    "budget_versions",
    "cost_entries",
    "decisions",
    "fx_rates",
    "initiative_notes",
    "initiatives",
    "integrations",
    "metrics",
    "observations",
    "users",
    "value_entries",
    "vendors",
)


def _budget_index(*columns: str) -> None:
    op.drop_index("ix_cost_entries_budget", table_name="cost_entries")
    op.create_index("ix_cost_entries_budget", "cost_entries", list(columns))


def upgrade() -> None:
    _budget_index(
        "initiative_id", "entry_month", "cost_category", "entry_date", "account_amount_cents"
    )
    if op.get_bind().dialect.name == "sqlite":
        for table in ANALYZED:
            op.execute(f"ANALYZE {table}")


def downgrade() -> None:
    _budget_index(
        "initiative_id", "entry_date", "entry_month", "cost_category", "account_amount_cents"
    )
