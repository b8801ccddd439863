"""An import's write: under the load's lock, its connection found or made (SEMANTICS R40),
what it replaces read (R41), and one load of the account (one transaction, the store's
stamps, tombstones, every check of a load)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Final

from sqlalchemy import Connection, Engine, select

from airoi.db import tables
from airoi.imports.problems import ImportRefused
from airoi.load import LoadReport, load_bundle
from airoi.load.keyed import fresh_ids
from airoi.load.stamping import Say

PLATFORM_NAMES: Final = {
    "focus": "FOCUS cost import",
    "openai": "OpenAI cost import",
    "anthropic": "Anthropic cost import",
    "spreadsheet": "Spreadsheet import",
}
SUCCEEDED: Final = "succeeded"


@dataclass(frozen=True)
class Target:
    """Where an import writes: the account, the platform its connection is for, and the
    connection given with --connection, if any."""

    account_id: int
    platform: str
    connection_id: int | None = None
    api: bool = False


@dataclass
class Account:
    currency: str
    initiatives: set[int] = field(default_factory=set)
    fx_currencies: set[str] = field(default_factory=set)


def read_account(engine: Engine, target: Target) -> Account:
    """The account an import writes into, checked before anything is read under the lock."""
    accounts, initiatives, fx = tables.accounts, tables.initiatives, tables.fx_rates
    with engine.connect() as conn:
        currency = conn.execute(
            select(accounts.c.currency).where(accounts.c.id == target.account_id)
        ).scalar()
        if currency is None:
            raise ImportRefused([f"--account: no account {target.account_id} in this store"])
        found = Account(currency=currency)
        found.initiatives = set(
            conn.execute(
                select(initiatives.c.id).where(initiatives.c.account_id == target.account_id)
            ).scalars()
        )
        found.fx_currencies = set(
            conn.execute(
                select(fx.c.currency).where(fx.c.account_id == target.account_id).distinct()
            ).scalars()
        )
        if target.connection_id is not None:
            integrations = tables.integrations
            owner = conn.execute(
                select(integrations.c.account_id).where(integrations.c.id == target.connection_id)
            ).scalar()
            if owner != target.account_id:
                raise ImportRefused(
                    [
                        f"--connection: {target.connection_id} is not a connection of account "
                        f"{target.account_id}"
                    ]
                )
    return found


def connection_record(conn: Connection, target: Target, stamp: datetime) -> dict[str, Any]:
    """The import's connection as a bundle record: the one given, else the account's for the
    platform (the lowest id), else a new one; stamped as synced by this load (R40)."""
    integrations = tables.integrations
    connection_id = target.connection_id
    if connection_id is None:
        connection_id = conn.execute(
            select(integrations.c.id)
            .where(
                integrations.c.account_id == target.account_id,
                integrations.c.platform == target.platform,
            )
            .order_by(integrations.c.id)
            .limit(1)
        ).scalar()
    synced = {
        "last_synced_at": stamp.isoformat(timespec="microseconds") + "Z",
        "last_sync_status": SUCCEEDED,
    }
    if connection_id is not None:
        return {"id": connection_id, "account_id": target.account_id, **synced}
    (made,) = fresh_ids(conn, integrations, 1)
    return {
        "id": made,
        "account_id": target.account_id,
        "platform": target.platform,
        "name": PLATFORM_NAMES.get(target.platform, target.platform),
        "status": "active",
        "auth_type": "api_key" if target.api else None,
        "primary_source_categories": ["costs"] if target.platform != "spreadsheet" else [],
        "metric_categories": [],
        **synced,
    }


def write(
    engine: Engine,
    compose: Callable[[Connection, datetime], Mapping[str, Any]],
    *,
    dry_run: bool,
    wait: float,
    say: Say | None,
    now: datetime | None = None,
) -> LoadReport:
    return load_bundle(engine, compose, dry_run=dry_run, wait=wait, say=say, now=now)


def covered(
    given: tuple[date | None, date | None], first: date | None, last: date | None
) -> tuple[date, date] | None:
    """R41: the dates an import is authoritative for: --from / --to, else the earliest and
    latest period_start its files hold; None when that leaves no dates."""
    low = given[0] or first
    high = given[1] or last
    if low is None or high is None or low > high:
        return None
    return low, high
