"""Run the Alembic migrations shipped inside the package."""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    command.upgrade(alembic_config(engine), revision)


class StoreNotReady(Exception):
    """The store cannot be served as it is; the message says what makes it ready."""


class SchemaOutOfDate(StoreNotReady):
    """The store's schema is not the one this version reads; `airoi init` migrates it."""


def require_current_schema(engine: Engine) -> None:
    """Refuse to serve a store whose schema revision is not this version's head."""
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    # Reading the revision is not a migration: keep its "Context impl" lines out of the log.
    context_log = logging.getLogger("alembic.runtime.migration")
    level = context_log.level
    context_log.setLevel(logging.WARNING)
    try:
        with engine.connect() as conn:
            current = MigrationContext.configure(conn).get_current_revision()
    finally:
        context_log.setLevel(level)
    if current != head:
        found = f"schema revision {current}" if current else "no schema"
        raise SchemaOutOfDate(
            f"The store has {found}; this version of airoi reads revision {head}. "
            "Run `airoi init` against it to migrate, then serve again."
        )
