"""Loading the demo account into a store: a fresh account on each refresh, in one transaction."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, delete, select

from airoi.db import tables
from airoi.demo.ids import DEMO_ACCOUNT_ID, DEMO_ACCOUNT_NAME
from airoi.load import LoadReport, load_bundle
from airoi.load.kinds import SERVED_LISTS


class DemoRefused(Exception):
    """The store holds something of its own where the demo lives; nothing is changed."""


def reset_demo_account(conn: Connection) -> list[tuple[str, int, int]]:
    """Remove every row of the demo account, so `airoi demo` can rebuild it for a new today.

    The demo's decisions are dated relative to today, and decisions never change once
    written, so a refresh on a later month rebuilds the account instead of upserting it.
    It runs inside the load's transaction: a demo bundle the store refuses leaves the demo
    as it was. Only the demo account is touched; an account of the store's own that holds
    the demo's id is refused, not removed. Returns the served rows removed, as (list,
    account, id), so that those the new demo does not give again leave tombstones
    (SEMANTICS R34).
    """
    name = conn.execute(
        select(tables.accounts.c.name).where(tables.accounts.c.id == DEMO_ACCOUNT_ID)
    ).scalar()
    if name is not None and name != DEMO_ACCOUNT_NAME:
        raise DemoRefused(
            f"Account {DEMO_ACCOUNT_ID}, where the demo lives, holds another account; "
            "nothing was changed."
        )
    removed: list[tuple[str, int, int]] = []
    for resource in SERVED_LISTS:
        table = tables.metadata.tables[resource]
        ids = select(table.c.id).where(table.c.account_id == DEMO_ACCOUNT_ID)
        removed.extend(
            (resource, DEMO_ACCOUNT_ID, row_id) for row_id in conn.execute(ids).scalars()
        )
    demo_users = select(tables.users.c.id).where(tables.users.c.account_id == DEMO_ACCOUNT_ID)
    conn.execute(delete(tables.tokens).where(tables.tokens.c.user_id.in_(demo_users)))
    for table in reversed(tables.metadata.sorted_tables):
        if table is tables.accounts or "account_id" not in table.c:
            continue
        if table is tables.deletions:
            continue  # the demo's tombstones stay, as long as the store (SEMANTICS R34)
        conn.execute(delete(table).where(table.c.account_id == DEMO_ACCOUNT_ID))
    conn.execute(delete(tables.accounts).where(tables.accounts.c.id == DEMO_ACCOUNT_ID))
    return removed


def load_demo(
    engine: Engine, bundle: dict[str, Any], *, say: Callable[[str], None] | None = None
) -> LoadReport:
    """Load the demo account afresh in one transaction, as `airoi demo` does.

    The demo's rows carry a realistic history (rows created and changed over the months
    before today). When the demo account is made, it is loaded as `airoi load --keep-stamps`
    loads, keeping the bundle's updated_at values: nobody can have copied an account that
    did not exist. A refresh is an ordinary load: every row it makes again takes the load's
    stamp, later than any a copy has seen (SEMANTICS R32), so a copy of the demo account
    stays exact. Whether the account exists is read under the store's lock.
    """
    made: list[bool] = []

    def reset(conn: Connection) -> list[tuple[str, int, int]]:
        exists = conn.execute(
            select(tables.accounts.c.id).where(tables.accounts.c.id == DEMO_ACCOUNT_ID)
        ).first()
        made.append(exists is None)
        return reset_demo_account(conn)

    return load_bundle(engine, bundle, before=reset, keep_stamps=lambda: made[0], say=say)
