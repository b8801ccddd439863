"""Every query the tools run. Each one is narrowed to the principal's account here, so a tool
cannot see another account's rows by forgetting a condition (SEMANTICS R27).

Every list is bounded by a `limit` given by the caller; nothing here reads a whole table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, func, or_, select

from airoi.auth import Principal
from airoi.db.tables import (
    cost_entries,
    initiative_notes,
    initiatives,
    integrations,
    users,
    value_entries,
    vendors,
)

# The columns a tool may read of a connection: never credentials, settings or last_error
# (SEMANTICS R15).
INTEGRATION_COLUMNS = (
    integrations.c.id,
    integrations.c.platform,
    integrations.c.name,
    integrations.c.status,
    integrations.c.last_sync_status,
    integrations.c.last_synced_at,
    integrations.c.reauth_required_at,
)

owner = users.alias("owner")
author = users.alias("author")


def count_initiatives(
    db: Connection, principal: Principal, stages: Sequence[str] | None, owner_id: int | None = None
) -> int:
    query = (
        select(func.count()).select_from(initiatives).where(*_listed(principal, stages, owner_id))
    )
    return int(db.execute(query).scalar_one())


def list_initiatives(
    db: Connection,
    principal: Principal,
    stages: Sequence[str] | None,
    limit: int,
    owner_id: int | None = None,
    before: tuple[Any, int] | None = None,
) -> Sequence[Any]:
    """Most recently changed first; sample initiatives left out, as on GET /initiatives.
    `before`: the (updated_at, id) of the last row of the previous page."""
    conditions = _listed(principal, stages, owner_id)
    if before is not None:
        stamp, row_id = before
        conditions.append(
            or_(
                initiatives.c.updated_at < stamp,
                and_(initiatives.c.updated_at == stamp, initiatives.c.id < row_id),
            )
        )
    return db.execute(
        select(initiatives.c.id, initiatives.c.title, initiatives.c.stage, initiatives.c.updated_at)
        .where(*conditions)
        .order_by(initiatives.c.updated_at.desc(), initiatives.c.id.desc())
        .limit(limit)
    ).all()


def _listed(
    principal: Principal, stages: Sequence[str] | None, owner_id: int | None = None
) -> list[ColumnElement[bool]]:
    conditions = [
        initiatives.c.account_id == principal.account_id,
        initiatives.c.is_sample.is_(False),
    ]
    if stages is not None:
        conditions.append(initiatives.c.stage.in_(stages))
    if owner_id is not None:
        conditions.append(initiatives.c.owner_id == owner_id)
    return conditions


def person_exists(db: Connection, principal: Principal, user_id: int) -> bool:
    """Whether `user_id` is a person of the account (removed ones too: they still own)."""
    query = select(users.c.id).where(
        users.c.id == user_id, users.c.account_id == principal.account_id
    )
    return db.execute(query).first() is not None


def vendor_exists(db: Connection, principal: Principal, vendor_id: int) -> bool:
    query = select(vendors.c.id).where(
        vendors.c.id == vendor_id, vendors.c.account_id == principal.account_id
    )
    return db.execute(query).first() is not None


def initiative(db: Connection, principal: Principal, initiative_id: int) -> Any | None:
    """One initiative of the account (sample or not), with its owner's name; None if unseen."""
    return db.execute(
        select(initiatives, owner.c.name.label("owner_name"))
        .outerjoin(owner, owner.c.id == initiatives.c.owner_id)
        .where(
            initiatives.c.id == initiative_id,
            initiatives.c.account_id == principal.account_id,
        )
    ).first()


def recent_costs(
    db: Connection, principal: Principal, initiative_id: int, limit: int
) -> tuple[Sequence[Any], int]:
    """The most recent cost entries by reported date (SEMANTICS R2), and how many there are."""
    where = (
        cost_entries.c.account_id == principal.account_id,
        cost_entries.c.initiative_id == initiative_id,
    )
    rows = db.execute(
        select(
            cost_entries.c.id,
            cost_entries.c.amount_cents,
            cost_entries.c.currency,
            cost_entries.c.cost_category,
            cost_entries.c.cost_type,
            cost_entries.c.vendor_name,
            cost_entries.c.description,
            cost_entries.c.entry_date,
        )
        .where(*where)
        .order_by(cost_entries.c.entry_date.desc(), cost_entries.c.id.desc())
        .limit(limit)
    ).all()
    total = db.execute(select(func.count()).select_from(cost_entries).where(*where)).scalar_one()
    return rows, int(total)


def recent_values(
    db: Connection, principal: Principal, initiative_id: int, limit: int
) -> tuple[Sequence[Any], int]:
    where = (
        value_entries.c.account_id == principal.account_id,
        value_entries.c.initiative_id == initiative_id,
    )
    rows = db.execute(
        select(
            value_entries.c.id,
            value_entries.c.amount_cents,
            value_entries.c.currency,
            value_entries.c.status,
            value_entries.c.entry_type,
            value_entries.c.entry_date,
        )
        .where(*where)
        .order_by(value_entries.c.entry_date.desc(), value_entries.c.id.desc())
        .limit(limit)
    ).all()
    total = db.execute(select(func.count()).select_from(value_entries).where(*where)).scalar_one()
    return rows, int(total)


def recent_notes(
    db: Connection, principal: Principal, initiative_id: int, limit: int
) -> tuple[Sequence[Any], int]:
    where = (
        initiative_notes.c.account_id == principal.account_id,
        initiative_notes.c.initiative_id == initiative_id,
    )
    rows = db.execute(
        select(
            initiative_notes.c.id,
            initiative_notes.c.body,
            initiative_notes.c.created_at,
            author.c.name.label("author_name"),
        )
        .outerjoin(author, author.c.id == initiative_notes.c.author_id)
        .where(*where)
        .order_by(initiative_notes.c.created_at.desc(), initiative_notes.c.id.desc())
        .limit(limit)
    ).all()
    total = db.execute(
        select(func.count()).select_from(initiative_notes).where(*where)
    ).scalar_one()
    return rows, int(total)


def list_integrations(
    db: Connection,
    principal: Principal,
    limit: int,
    platforms: Sequence[str] | None = None,
    after: tuple[str, int] | None = None,
) -> tuple[Sequence[Any], int]:
    """By platform, then id; `after`: the (platform, id) of the last row of the previous page."""
    where = [integrations.c.account_id == principal.account_id]
    if platforms is not None:
        where.append(func.lower(integrations.c.platform).in_([p.lower() for p in platforms]))
    page = list(where)
    if after is not None:
        platform, row_id = after
        page.append(
            or_(
                integrations.c.platform > platform,
                and_(integrations.c.platform == platform, integrations.c.id > row_id),
            )
        )
    rows = db.execute(
        select(*INTEGRATION_COLUMNS)
        .where(*page)
        .order_by(integrations.c.platform, integrations.c.id)
        .limit(limit)
    ).all()
    total = db.execute(select(func.count()).select_from(integrations).where(*where)).scalar_one()
    return rows, int(total)


def connected_platforms(db: Connection, principal: Principal) -> set[str]:
    """The platforms this account has a connection to, lower-cased."""
    rows = db.execute(
        select(func.lower(integrations.c.platform))
        .where(integrations.c.account_id == principal.account_id)
        .distinct()
    )
    return {str(platform) for (platform,) in rows}
