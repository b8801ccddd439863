"""The tombstones of rows a load removed (SEMANTICS R34).

A copy made with `updated_since` and cursors sees every row that changed, but a removed
row simply stops being served. Each tombstone names the list that served the row and its
id, stamped with the load that removed it; an initiative's also means its budget row is
gone. A row given again later is served again with a later `updated_at`, so a copy that
drops a row only when its own `updated_at` is not later than `deleted_at` stays equal to
the service in whatever order it applies the two.
"""

from typing import Annotated

import msgspec
from sqlalchemy import bindparam

from airoi.db.tables import deletions
from airoi.listing import (
    ResumablePageInfo,
    ShapedList,
    changed_since,
)
from airoi.reports.fields import Id, note, timestamp
from airoi.rows import Row, Shape, iso_ms
from airoi.vocabulary import ServedList

Resource = ServedList


class Deletion(Row):
    resource: Annotated[Resource, note("The list the row was served in.")]
    id: Annotated[Id, note("The id of the row that was deleted.")]
    deleted_at: Annotated[str, timestamp("When the row was deleted.")]


class DeletionList(msgspec.Struct):
    data: list[Deletion]
    page: ResumablePageInfo


_c = deletions.c
DELETION = Shape(Deletion, _c.resource, _c.record_id, iso_ms(_c.deleted_at))
DELETIONS = ShapedList(
    "deletions",
    DELETION,
    deletions,
    {
        "updated_since": changed_since(deletions, "deleted_at"),
        "resource": _c.resource == bindparam("resource"),
    },
    order=("deleted_at", "seq"),
)
