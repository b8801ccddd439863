"""GET /initiatives and GET /initiatives/{id} (SPEC 2.2, 4.A.4, 4.A.5)."""

from typing import Annotated, Any

import msgspec
from litestar import get
from litestar.params import Parameter
from sqlalchemy import Select, select

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cents,
    CreatedAt,
    Cursor,
    DateTimeText,
    Id,
    IncludeSample,
    Int64,
    Limit,
    Person,
    UpdatedAt,
    UpdatedSince,
    note,
    person,
    reading_of,
    text_datetime,
)
from airoi.db.tables import initiatives, users
from airoi.errors import bad_parameter, not_found
from airoi.listing import (
    MAX_ID,
    ListQuery,
    ResumablePageInfo,
    changed_since,
    parse_updated_since,
)
from airoi.rows import Row
from airoi.vocabulary import Stage


class Initiative(Row):
    id: Id
    title: str
    description: str | None
    hypothesis: str | None
    stage: Annotated[Stage, note("Where the initiative stands (SPEC 3).")]
    is_sample: Annotated[bool, note("Provisioned demo data.")]
    category: str | None
    priority: Annotated[Int64 | None, note("Lower is higher priority.")]
    source: Annotated[str | None, note("How the initiative came to exist.")]
    business_unit: str | None
    department: str | None
    gl_dimension_value: str | None
    owner: Annotated[Person | None, note("The owner, by name only.")]
    confidence_score: float | None
    roi_time_horizon_years: Int64 | None
    currency: Annotated[str | None, note("ISO 4217 code of the expected_* amounts.", "USD")]
    expected_capex_cents: Annotated[Cents | None, note("Business case, in cents, in currency.")]
    expected_opex_cents: Annotated[Cents | None, note("Same as expected_capex_cents.")]
    expected_cost_savings_cents: Annotated[Cents | None, note("Same as expected_capex_cents.")]
    expected_revenue_uplift_cents: Annotated[Cents | None, note("Same as expected_capex_cents.")]
    started_at: Annotated[DateTimeText | None, note("When work on it started.")]
    went_live_at: Annotated[DateTimeText | None, note("When it went live.")]
    approved_at: Annotated[DateTimeText | None, note("When it was approved.")]
    closed_at: Annotated[
        DateTimeText | None, note("When it was closed (completed, rejected or dismissed).")
    ]
    submitted_for_review_at: Annotated[
        DateTimeText | None, note("When it was submitted for review.")
    ]
    created_at: CreatedAt
    updated_at: UpdatedAt


class InitiativeList(msgspec.Struct):
    data: list[Initiative]
    page: ResumablePageInfo


owner = users.alias("owner")

_columns = [c for c in initiatives.c if c.name not in ("account_id",)]


def initiative_query() -> Select[Any]:
    return select(*_columns, owner.c.name.label("owner_name")).outerjoin(
        owner, owner.c.id == initiatives.c.owner_id
    )


def build_initiative(row: Any) -> Initiative:
    return Initiative(
        id=row.id,
        title=row.title,
        description=row.description,
        hypothesis=row.hypothesis,
        stage=row.stage,
        is_sample=row.is_sample,
        category=row.category,
        priority=row.priority,
        source=row.source,
        business_unit=row.business_unit,
        department=row.department,
        gl_dimension_value=row.gl_dimension_value,
        owner=person(row.owner_id, row.owner_name),
        confidence_score=row.confidence_score,
        roi_time_horizon_years=row.roi_time_horizon_years,
        currency=row.currency,
        expected_capex_cents=row.expected_capex_cents,
        expected_opex_cents=row.expected_opex_cents,
        expected_cost_savings_cents=row.expected_cost_savings_cents,
        expected_revenue_uplift_cents=row.expected_revenue_uplift_cents,
        started_at=text_datetime(row.started_at),
        went_live_at=text_datetime(row.went_live_at),
        approved_at=text_datetime(row.approved_at),
        closed_at=text_datetime(row.closed_at),
        submitted_for_review_at=text_datetime(row.submitted_for_review_at),
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


INITIATIVES = ListQuery(
    "initiatives",
    initiative_query(),
    initiatives,
    {
        "updated_since": changed_since(initiatives),
        "without_samples": initiatives.c.is_sample.is_(False),
    },
)


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
    sync_to_thread=True,  # its database work in a worker thread (airoi.store)
)
def list_initiatives(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    include_sample: IncludeSample = False,
) -> InitiativeList:
    reading = reading_of(request)
    page = INITIATIVES.page(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        build=build_initiative,
        updated_since=parse_updated_since(updated_since),
        without_samples=None if include_sample else True,
    )
    return InitiativeList(data=list(page.rows), page=page.info)


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
    sync_to_thread=True,  # its database work in a worker thread (airoi.store)
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
    row = reading.db.execute(
        initiative_query().where(
            initiatives.c.id == parse_id(id),
            initiatives.c.account_id == reading.principal.account_id,
        )
    ).first()
    if row is None:
        raise not_found("initiative")
    return build_initiative(row)
