"""The store's own secret, that cursors are signed with

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02

SEMANTICS R13: cursors were signed with a constant in the source, so anyone could make one.
`store_secret` holds one row of 32 random bytes, made here, so every store at this revision
has one: `airoi init`, `airoi load` and `airoi demo` all migrate first. It lives in the store
so that every server of it, a hot standby too, signs and reads the same cursors.
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

SECRET_BYTES = 32


def upgrade() -> None:
    secret = op.create_table(
        "store_secret",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("secret", sa.LargeBinary(64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_store_secret")),
    )
    op.bulk_insert(secret, [{"id": 1, "secret": secrets.token_bytes(SECRET_BYTES)}])


def downgrade() -> None:
    op.drop_table("store_secret")
