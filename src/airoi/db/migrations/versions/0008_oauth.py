"""OAuth 2.1 for the tool endpoint: registered clients, pending codes, issued tokens

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26

Assistants that only speak OAuth (Claude.ai and ChatGPT connectors, mcp-remote without
--header) reach /mcp with tokens issued against a personal access token (airoi.oauth). What
they need between requests lives here, so that every worker of a store sees it: clients
registered (RFC 7591), codes not yet exchanged, and access and refresh tokens, each secret
stored only as its SHA-256.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oauth_clients",
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=True),
        sa.Column("registration", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("granted_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("client_id", name=op.f("pk_oauth_clients")),
    )
    op.create_index("ix_oauth_clients_created_at", "oauth_clients", ["created_at"])
    op.create_table(
        "oauth_codes",
        sa.Column("code_hash", sa.String(64), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("pat_hash", sa.String(64), nullable=False),
        sa.Column("redirect_uri", sa.Text(), nullable=False),
        sa.Column("code_challenge", sa.String(128), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        sa.Column("scopes", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["oauth_clients.client_id"],
            name=op.f("fk_oauth_codes_client_id_oauth_clients"),
        ),
        sa.PrimaryKeyConstraint("code_hash", name=op.f("pk_oauth_codes")),
    )
    op.create_index("ix_oauth_codes_expires_at", "oauth_codes", ["expires_at"])
    op.create_table(
        "oauth_tokens",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("grant_id", sa.String(64), nullable=False),
        sa.Column("client_id", sa.String(64), nullable=False),
        sa.Column("pat_hash", sa.String(64), nullable=False),
        sa.Column("resource", sa.Text(), nullable=False),
        sa.Column("scopes", sa.String(200), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("used_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["client_id"],
            ["oauth_clients.client_id"],
            name=op.f("fk_oauth_tokens_client_id_oauth_clients"),
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_oauth_tokens")),
    )
    op.create_index("ix_oauth_tokens_grant_id", "oauth_tokens", ["grant_id"])
    op.create_index("ix_oauth_tokens_pat_hash", "oauth_tokens", ["pat_hash"])
    op.create_index("ix_oauth_tokens_expires_at", "oauth_tokens", ["expires_at"])


def downgrade() -> None:
    op.drop_table("oauth_tokens")
    op.drop_table("oauth_codes")
    op.drop_table("oauth_clients")
