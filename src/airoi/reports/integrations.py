"""The connections as served (SPEC 2.9, 4.A.12).

Credentials, settings and error prose are never read.
"""

from typing import Annotated

import msgspec
from sqlalchemy import bindparam

from airoi.db.tables import integrations, users
from airoi.listing import ResumablePageInfo, ShapedList, changed_since
from airoi.reports.fields import (
    CreatedAt,
    DateTimeText,
    Id,
    Person,
    UpdatedAt,
    note,
    person_shape,
)
from airoi.rows import Row, Shape, iso_ms
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
_c = integrations.c
# SEMANTICS R15: the secret columns (credentials, settings, last_error) are never selected.
INTEGRATION = Shape(
    Integration,
    _c.id,
    _c.platform,
    _c.name,
    _c.description,
    _c.status,
    _c.auth_type,
    _c.last_sync_status,
    iso_ms(_c.last_synced_at),
    iso_ms(_c.reauth_required_at),
    _c.external_account_id,
    _c.external_account_name,
    # Stored as JSON arrays (the loader writes [] for none given), read back as lists.
    _c.primary_source_categories,
    _c.metric_categories,
    _c.simulated,
    person_shape(_c.connected_by_id, connector.c.name),
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
INTEGRATIONS = ShapedList(
    "integrations",
    INTEGRATION,
    integrations,
    {
        "updated_since": changed_since(integrations),
        "platform": _c.platform == bindparam("platform"),
        "status": _c.status == bindparam("status"),
    },
    source=integrations.outerjoin(connector, connector.c.id == _c.connected_by_id),
)
