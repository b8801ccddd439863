"""The ROI index of cost entries also holds the vendor and the cost type

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26

`ix_cost_entries_roi` covered the sums of GET /roi: (account, date, category, initiative,
amount). A breakdown by vendor or by cost type (SEMANTICS R37) groups by a column it did not
hold, so on SQLite each entry was looked up in the table: 2-3 s for 200,000 entries where
/roi takes a tenth of that. The index now ends with both columns, and covers those sums too.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_FIRST = ("account_id", "entry_date", "cost_category", "initiative_id")


def _roi_index(*columns: str) -> None:
    op.drop_index("ix_cost_entries_roi", table_name="cost_entries")
    op.create_index("ix_cost_entries_roi", "cost_entries", list(columns))


def upgrade() -> None:
    _roi_index(*_FIRST, "vendor_id", "cost_type", "account_amount_cents")


def downgrade() -> None:
    _roi_index(*_FIRST, "account_amount_cents")
