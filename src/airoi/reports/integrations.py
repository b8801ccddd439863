"""The connections as served (SPEC 2.9, 4.A.12).

Credentials, settings and error prose are never read.
"""

from typing import Annotated, Any

import msgspec
from sqlalchemy import bindparam, select

from airoi.db.tables import integrations, users
from airoi.listing import ListQuery, ResumablePageInfo, changed_since
from airoi.reports.fields import (
    CreatedAt,
    DateTimeText,
    Id,
    Person,
    UpdatedAt,
    note,
    person,
    text_datetime,
)
from airoi.rows import Row
from airoi.vocabulary import AuthType, IntegrationStatus


class Integration(Row):
    id: Id
    platform: Annotated[str, note("Which system it connects to.")]
    name: str | None
    description: str | None
    status: Annotated[
        IntegrationStatus,
        note(
            "active, paused, error or disconnected. error means syncs are failing; paused and "
            "disconnected mean somebody stopped it."
        ),
    ]
    auth_type: AuthType | None
    last_sync_status: Annotated[str | None, note("How the latest sync ended.")]
    last_synced_at: Annotated[
        DateTimeText | None, note("When data last arrived; may be old while status is active.")
    ]
    reauth_required_at: Annotated[
        DateTimeText | None,
        note(
            "Set when the platform refused the grant; non-null means retrying cannot fix it and a "
            "person must reconnect."
        ),
    ]
    external_account_id: str | None
    external_account_name: str | None
    primary_source_categories: Annotated[
        list[str],
        note(
            "Categories this connection is the canonical source for; where two connections could "
            "serve a category only the primary one's readings are used."
        ),
    ]
    metric_categories: Annotated[
        list[str], note("What this platform's connections can serve at all.")
    ]
    simulated: Annotated[
        bool, note("Syncs answered by a simulator; only an internal account can hold one.")
    ]
    connected_by: Annotated[Person | None, note("Who connected it, by name only.")]
    created_at: CreatedAt
    updated_at: UpdatedAt


class IntegrationList(msgspec.Struct):
    data: list[Integration]
    page: ResumablePageInfo


connector = users.alias("connector")

# SEMANTICS R15: the secret columns (credentials, settings, last_error) are never selected.
SERVED_COLUMNS = [
    c for c in integrations.c if c.name not in ("credentials", "settings", "last_error")
]


def integration_query() -> Any:
    return select(*SERVED_COLUMNS, connector.c.name.label("connected_by_name")).outerjoin(
        connector, connector.c.id == integrations.c.connected_by_id
    )


def build_integration(row: Any) -> Integration:
    return Integration(
        id=row.id,
        platform=row.platform,
        name=row.name,
        description=row.description,
        status=row.status,
        auth_type=row.auth_type,
        last_sync_status=row.last_sync_status,
        last_synced_at=text_datetime(row.last_synced_at),
        reauth_required_at=text_datetime(row.reauth_required_at),
        external_account_id=row.external_account_id,
        external_account_name=row.external_account_name,
        primary_source_categories=list(row.primary_source_categories or []),
        metric_categories=list(row.metric_categories or []),
        simulated=row.simulated,
        connected_by=person(row.connected_by_id, row.connected_by_name),
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


INTEGRATIONS = ListQuery(
    "integrations",
    integration_query(),
    integrations,
    {
        "updated_since": changed_since(integrations),
        "platform": integrations.c.platform == bindparam("platform"),
        "status": integrations.c.status == bindparam("status"),
    },
)
