"""The OAuth writer: an engine held to the oauth_* tables, and the transactions run on it.

The app's engine is read-only (airoi.db.engine), so that no handler can write. OAuth has to
write, so it has a writer engine of its own, made on first use and held to the OAuth tables:
every statement it runs is checked before it runs (`_only_oauth_writes`), and an INSERT,
UPDATE or DELETE of any other table, or text SQL, is refused. A database role with rights on
those tables alone would be stronger; it is the operator's to make (the service is given one
database URL), so the check lives in the code beside the only code that writes. On a
read-only hot standby these writes fail, and the OAuth steps that write answer 503.

Every secret written (client secret, code, token) is kept only as its SHA-256; each carries
256 random bits, so one hash is enough (as for personal tokens, airoi.tokens).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

from anyio import to_thread
from mcp.server.auth.provider import RegistrationError, TokenError
from sqlalchemy import Connection, Delete, Engine, Insert, Update, event
from sqlalchemy.sql import Select

from airoi.db.engine import make_engine
from airoi.db.tables import oauth_clients, oauth_codes, oauth_tokens
from airoi.settings import Settings

OAUTH_TABLES = frozenset({oauth_clients.name, oauth_codes.name, oauth_tokens.name})


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def epoch_of(moment: datetime) -> int:
    """A stored moment (naive UTC) as the epoch seconds the SDK's models hold."""
    return int((moment - datetime(1970, 1, 1)).total_seconds())


def moment_of(epoch: float) -> datetime:
    """Epoch seconds as a moment to store (naive UTC)."""
    return datetime(1970, 1, 1) + timedelta(seconds=epoch)


class WriteOutsideOAuth(Exception):
    """The OAuth writer engine was asked to write a table that is not OAuth's."""


def _only_oauth_writes(
    conn: Connection, clause: Any, multiparams: Any, params: Any, options: Any
) -> None:
    if isinstance(clause, Select):
        return
    if isinstance(clause, Insert | Update | Delete) and clause.table.name in OAUTH_TABLES:  # type: ignore[union-attr]
        return
    raise WriteOutsideOAuth("the OAuth writer runs selects and writes of the oauth_* tables only")


def writer_engine(settings: Settings) -> Engine:
    engine = make_engine(settings.database_url, statement_timeout_ms=settings.statement_timeout_ms)
    event.listen(engine, "before_execute", _only_oauth_writes)
    return engine


class GrantRefused(Exception):
    """An SDK error (TokenError, RegistrationError) raised inside a transaction."""

    def __init__(self, error: TokenError | RegistrationError) -> None:
        super().__init__(error.error)
        self.error = error


T = TypeVar("T")


class OAuthWriter:
    """The writer engine of one app, made on first use, and the transactions run on it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._engine: Engine | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        with self._lock:
            if self._engine is None:
                self._engine = writer_engine(self._settings)
            return self._engine

    def close(self) -> None:
        with self._lock:
            if self._engine is not None:
                self._engine.dispose()
                self._engine = None

    async def transaction(self, work: Callable[[Connection], T]) -> T:
        """`work` in one transaction, in a worker thread."""

        def run() -> T:
            with self.engine.begin() as conn:
                return work(conn)

        try:
            return await to_thread.run_sync(run)
        except GrantRefused as refused:
            # The SDK's errors are frozen dataclasses, which a context manager cannot give a
            # traceback to: raised out here, after the transaction rolled back.
            raise refused.error from None
