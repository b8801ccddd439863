"""Entries and readings found by their source connection and ref

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07

SEMANTICS R42: a cost entry, value entry or observation given without an id but with a
source ref (an import's rows, a spreadsheet's) is matched by (account, kind, source
connection, source ref). An index on (source_connection_id, source_ref) of each of the three
tables finds the stored row of a batch of such records without scanning the account.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

TABLES = ("cost_entries", "value_entries", "observations")


def upgrade() -> None:
    for table in TABLES:
        op.create_index(f"ix_{table}_source", table, ["source_connection_id", "source_ref"])


def downgrade() -> None:
    for table in TABLES:
        op.drop_index(f"ix_{table}_source", table_name=table)
