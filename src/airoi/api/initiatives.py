"""GET /initiatives and GET /initiatives/{id} (SPEC 2.2, 4.A.4, 4.A.5)."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    IncludeSample,
    Limit,
    UpdatedSince,
    reading_of,
)
from airoi.errors import bad_parameter, not_found
from airoi.listing import MAX_ID, parse_updated_since, served_rows
from airoi.reports.initiatives import (
    INITIATIVES,
    Initiative,
    InitiativeList,
    initiative_of,
)
from airoi.store_access import keyset_page


@get(
    "/initiatives",
    operation_id="listInitiatives",
    summary="List initiatives",
    description=(
        "The account's AI initiatives, oldest change first, one page at a time. "
        "Sample (demo) initiatives are left out unless include_sample is true."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Initiatives"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_initiatives(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    include_sample: IncludeSample = False,
) -> InitiativeList:
    reading = reading_of(request)
    page = INITIATIVES.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        without_samples=None if include_sample else True,
    )
    return InitiativeList(data=served_rows(page), page=page.info)


def parse_id(value: str) -> int:
    """Path ids are routed as text so that `/initiatives/abc` is a 400, not a missing route."""
    # The length check first: int() refuses more than 4300 digits with a ValueError (a 500).
    if (
        not value.isascii()
        or not value.isdigit()
        or value.startswith("0")
        or len(value) > len(str(MAX_ID))
        or not 1 <= int(value) <= MAX_ID
    ):
        raise bad_parameter(
            f"The id must be a whole number from 1 to {MAX_ID}, with no leading zero."
        )
    return int(value)


@get(
    "/initiatives/{id:str}",
    operation_id="getInitiative",
    summary="Get one initiative",
    description="One initiative of the account. An id of another account answers 404, not 403.",
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Initiatives"],
    sync_to_thread=True,  # its database work in a worker thread (airoi.store_access)
)
def get_initiative(
    request: ApiRequest,
    # Described as the integer it is (SPEC 4.A.5); routed as text, see `parse_id`.
    id: Annotated[
        str,
        Parameter(
            description="The initiative's id.",
            schema_extra={"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID},
        ),
    ],
) -> Initiative:
    reading = reading_of(request)
    initiative = initiative_of(reading.db, reading.principal.account_id, parse_id(id))
    if initiative is None:
        raise not_found("initiative")
    return initiative
