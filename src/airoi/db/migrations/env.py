"""Alembic environment: the engine comes from the caller (airoi init, the tests)."""

from __future__ import annotations

from alembic import context

from airoi.db.tables import metadata

engine = context.config.attributes["engine"]

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    context.run_migrations()
