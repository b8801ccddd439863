"""Engines for the store: a writer for the CLI, a read-only one for serving.

The serving path opens the database read-only (SQLite `PRAGMA query_only`,
PostgreSQL `default_transaction_read_only`), so a bug in a handler cannot write.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def make_engine(url: str, *, read_only: bool = False) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            if parsed.database and parsed.database != ":memory:" and not read_only:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=5000")
            if read_only:
                cur.execute("PRAGMA query_only=ON")
            cur.close()

        return engine
    connect_args: dict[str, Any] = {}
    if read_only:
        connect_args["options"] = "-c default_transaction_read_only=on"
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True)
