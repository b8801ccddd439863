"""Tokens of users without API access are revoked

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-07

SEMANTICS R29 (changed): a token opens the account only while its user is an Owner or Admin
and not removed, and losing that is final: the load that takes it away revokes the user's
tokens, so restoring the user or the role later opens nothing until a new token is issued.
A store from before the rule may hold live tokens of users already removed or demoted; they
are revoked here, at the moment of the upgrade.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from airoi.db.types import Timestamp

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    tokens = sa.table(
        "tokens",
        sa.column("user_id", sa.BigInteger),
        sa.column("revoked_at", Timestamp()),
    )
    users = sa.table(
        "users",
        sa.column("id", sa.BigInteger),
        sa.column("role", sa.String),
        sa.column("removed_at", Timestamp()),
    )
    without_access = sa.select(users.c.id).where(
        sa.or_(users.c.removed_at.is_not(None), users.c.role.not_in(("owner", "admin")))
    )
    now = datetime.now(UTC).replace(tzinfo=None)
    op.execute(
        tokens.update()
        .where(tokens.c.revoked_at.is_(None), tokens.c.user_id.in_(without_access))
        .values(revoked_at=now)
    )


def downgrade() -> None:
    pass  # a revoked token stays revoked (SEMANTICS R29)
