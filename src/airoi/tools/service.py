"""What each tool answers, over the same computations as the HTTP API (SPEC 4.B).

Functions here take a connection, the principal and plain arguments, and return the
result models; they know nothing of MCP. A bad argument raises ToolRefusal with one
sentence (SEMANTICS R27).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import msgspec
from sqlalchemy import Connection

from airoi import catalog
from airoi.auth import Principal
from airoi.catalog import Pages
from airoi.errors import ApiError
from airoi.finance.roi import roi_percent
from airoi.listing import NOT_ISSUED, CursorCodec, Cursors, Position
from airoi.reports import lookups
from airoi.reports import search as searching
from airoi.reports.breakdown import breakdown_page
from airoi.reports.budgets import compute_budget_rows
from airoi.reports.business_cases import BUSINESS_CASE_INITIATIVES, compute_business_case_rows
from airoi.reports.decisions import DECISIONS
from airoi.reports.initiatives import STATUS_STAGES, rolled_up
from airoi.reports.observations import OBSERVATIONS
from airoi.reports.roi import compute_roi
from airoi.timeutil import format_datetime
from airoi.tools.errors import ToolRefusal
from airoi.tools.models import (
    Budget,
    BusinessCase,
    BusinessCaseListResult,
    ConnectionRef,
    CostItem,
    DecisionItem,
    DecisionListResult,
    HelpArticle,
    InitiativeDetail,
    InitiativeItem,
    InitiativeListResult,
    IntegrationItem,
    IntegrationListResult,
    NoteItem,
    PersonRef,
    PlanAgainstActuals,
    PlatformSetupGuide,
    ReadingItem,
    ReadingListResult,
    RoiBreakdown,
    RoiCost,
    RoiPeriod,
    RoiScope,
    RoiSummary,
    SearchHit,
    SearchResult,
    ValueItem,
)
from airoi.vocabulary import BreakdownBy, SearchKind

RECENT_ENTRIES = 10
MAX_CONNECTIONS_SHOWN = 20
# The tools' own lists' cursors, signed as the API's are (listing.CursorCodec).
INITIATIVES_LIST = "tool_initiatives"
INTEGRATIONS_LIST = "tool_integrations"
MAX_CURSOR = 1000  # an integrations cursor carries a platform name of up to 100 characters
CURSOR_NOT_ISSUED = (
    "The cursor is not one this tool issued; pass the next_cursor of a previous call unchanged."
)


def _no_initiative(initiative_id: int) -> ToolRefusal:
    return ToolRefusal(f"No initiative with id {initiative_id} in this account.")


def roi_summary(
    db: Connection,
    principal: Principal,
    *,
    window: str,
    initiative_id: int | None,
    today: date,
) -> RoiSummary:
    """GET /roi's figures for the same arguments, plus roi_percent (SEMANTICS R10)."""
    try:
        result = compute_roi(db, principal, window=window, initiative_id=initiative_id, today=today)
    except ApiError as exc:
        if exc.status == 404 and initiative_id is not None:
            raise _no_initiative(initiative_id) from None
        raise
    f = result.figures
    return RoiSummary(
        scope=RoiScope(type=result.scope.type, id=result.scope.id, title=result.scope.title),
        period=RoiPeriod.model_validate(
            {
                "window": result.period.window,
                "label": result.period.label,
                "from": result.period.from_,
                "through": result.period.through,
            }
        ),
        currency=result.currency,
        approved_value_cents=f.approved_value_cents,
        total_cost_cents=f.total_cost_cents,
        net_value_cents=f.net_value_cents,
        roi=f.roi,
        roi_percent=roi_percent(f.roi_exact),
        cost=RoiCost(capex_cents=f.capex_cents, opex_cents=f.opex_cents),
    )


def refused_as_tool(exc: ApiError) -> ToolRefusal:
    """The API's 400 sentence (a bad cursor, SEMANTICS R13) as the tool's (R27)."""
    if exc.message == NOT_ISSUED:
        return ToolRefusal(CURSOR_NOT_ISSUED)
    sentence = exc.message.replace("another endpoint", "another list")
    return ToolRefusal(sentence.replace("parameter", "argument"))


def _no_person(owner_id: int) -> ToolRefusal:
    return ToolRefusal(f"No person with id {owner_id} in this account.")


def initiative_list(
    db: Connection,
    principal: Principal,
    *,
    status: str | None,
    limit: int,
    cursors: Cursors,
    owner_id: int | None = None,
    cursor: str | None = None,
) -> InitiativeListResult:
    codec = cursors.codec(db)
    before = None
    if cursor is not None:
        try:
            position = codec.decode(INITIATIVES_LIST, principal.account_id, cursor)
        except ApiError as exc:
            raise refused_as_tool(exc) from None
        before = (position.updated_at, position.id)
    if owner_id is not None and not lookups.person_exists(db, principal, owner_id):
        raise _no_person(owner_id)
    stages = STATUS_STAGES[status] if status is not None else None
    rows = lookups.list_initiatives(db, principal, stages, limit + 1, owner_id, before)
    total = lookups.count_initiatives(db, principal, stages, owner_id)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = (
        codec.encode(
            INITIATIVES_LIST, principal.account_id, Position(rows[-1].updated_at, rows[-1].id)
        )
        if more
        else None
    )
    return InitiativeListResult(
        initiatives=[
            InitiativeItem(id=r.id, title=r.title, stage=r.stage, status=rolled_up(r.stage))
            for r in rows
        ],
        total=total,
        has_more=more,
        next_cursor=next_cursor,
    )


def roi_breakdown(
    db: Connection,
    principal: Principal,
    *,
    by: BreakdownBy,
    window: str,
    initiative_id: int | None,
    vendor_id: int | None,
    limit: int,
    cursor: str | None,
    cursors: Cursors,
    today: date,
) -> RoiBreakdown:
    """GET /roi/breakdown's page for the same arguments, by the same code (SEMANTICS R37)."""
    if vendor_id is not None and not lookups.vendor_exists(db, principal, vendor_id):
        raise ToolRefusal(f"No vendor with id {vendor_id} in this account.")
    try:
        page = breakdown_page(
            db,
            principal,
            cursors.codec(db),
            by=by,
            window=window,
            initiative_id=initiative_id,
            today=today,
            limit=limit,
            cursor=cursor,
            vendor_id=vendor_id,
        )
    except ApiError as exc:
        if exc.status == 404 and initiative_id is not None:
            raise _no_initiative(initiative_id) from None
        if exc.status == 400:
            raise refused_as_tool(exc) from None
        raise
    served = msgspec.to_builtins(page)
    return RoiBreakdown.model_validate(
        {
            **{k: served[k] for k in ("scope", "period", "currency", "by", "data")},
            "scope": {"id": None, "title": None, **served["scope"]},
            "period": {"from": None, "through": None, **served["period"]},
            "vendor_id": vendor_id,
            "has_more": page.page.has_more,
            "next_cursor": page.page.next_cursor,
        }
    )


def decision_list(
    db: Connection,
    principal: Principal,
    *,
    initiative_id: int | None,
    outcome: str | None,
    limit: int,
    cursor: str | None,
    cursors: Cursors,
) -> DecisionListResult:
    """GET /decisions's page for the same filters, by the same query."""
    try:
        page = DECISIONS.rows(
            db,
            principal.account_id,
            cursors=cursors,
            cursor=cursor,
            limit=limit,
            updated_since=None,
            initiative_id=initiative_id,
            outcome=outcome,
        )
    except ApiError as exc:
        raise _refused(exc, initiative_id) from None
    return DecisionListResult(
        decisions=[DecisionItem.model_validate(msgspec.to_builtins(row)) for row in page.rows],
        has_more=page.has_more,
        next_cursor=page.next_cursor,
    )


def reading_list(
    db: Connection,
    principal: Principal,
    *,
    metric_key: str | None,
    initiative_id: int | None,
    limit: int,
    cursor: str | None,
    cursors: Cursors,
) -> ReadingListResult:
    """GET /observations's page for the same filters, by the same query."""
    try:
        page = OBSERVATIONS.rows(
            db,
            principal.account_id,
            cursors=cursors,
            cursor=cursor,
            limit=limit,
            updated_since=None,
            initiative_id=initiative_id,
            metric_key=metric_key,
        )
    except ApiError as exc:
        raise _refused(exc, initiative_id) from None
    return ReadingListResult(
        readings=[ReadingItem.model_validate(msgspec.to_builtins(row)) for row in page.rows],
        has_more=page.has_more,
        next_cursor=page.next_cursor,
    )


def business_case_list(
    db: Connection,
    principal: Principal,
    *,
    initiative_id: int | None,
    limit: int,
    cursor: str | None,
    cursors: Cursors,
    today: date,
) -> BusinessCaseListResult:
    """GET /business_cases's page for the same filters, by the same code (samples left out
    unless initiative_id names one, as there)."""
    try:
        page = BUSINESS_CASE_INITIATIVES.rows(
            db,
            principal.account_id,
            cursors=cursors,
            cursor=cursor,
            limit=limit,
            initiative_id=initiative_id,
            without_samples=None if initiative_id is not None else True,
        )
    except ApiError as exc:
        raise _refused(exc, initiative_id) from None
    rows = compute_business_case_rows(db, principal, page.rows, today)
    return BusinessCaseListResult(
        business_cases=[
            PlanAgainstActuals.model_validate(msgspec.to_builtins(row)) for row in rows
        ],
        has_more=page.has_more,
        next_cursor=page.next_cursor,
    )


def _refused(exc: ApiError, initiative_id: int | None) -> Exception:
    """A list's 400 or 404 as the tool's sentence; anything else (a 503) as it was."""
    if exc.status == 404 and initiative_id is not None:
        return _no_initiative(initiative_id)
    if exc.status == 400:
        return refused_as_tool(exc)
    return exc


def initiative_detail(
    db: Connection, principal: Principal, *, initiative_id: int, today: date, pages: Pages
) -> InitiativeDetail:
    row = lookups.initiative(db, principal, initiative_id)
    if row is None:
        raise _no_initiative(initiative_id)
    currency = row.currency or principal.account_currency
    (budget_row,) = compute_budget_rows(db, principal, [row], today)
    (plan_row,) = compute_business_case_rows(db, principal, [row], today)
    costs, cost_count = lookups.recent_costs(db, principal, initiative_id, RECENT_ENTRIES)
    values, value_count = lookups.recent_values(db, principal, initiative_id, RECENT_ENTRIES)
    notes, note_count = lookups.recent_notes(db, principal, initiative_id, RECENT_ENTRIES)
    return InitiativeDetail(
        id=row.id,
        title=row.title,
        description=row.description,
        stage=row.stage,
        status=rolled_up(row.stage),
        category=row.category,
        is_sample=row.is_sample,
        owner=None if row.owner_id is None else PersonRef(id=row.owner_id, name=row.owner_name),
        url=pages.url("initiative", id=row.id),
        business_case=BusinessCase(
            currency=currency,
            expected_capex_cents=row.expected_capex_cents,
            expected_opex_cents=row.expected_opex_cents,
            expected_cost_savings_cents=row.expected_cost_savings_cents,
            expected_revenue_uplift_cents=row.expected_revenue_uplift_cents,
            roi_time_horizon_years=row.roi_time_horizon_years,
            confidence_score=row.confidence_score,
        ),
        # The very rows GET /business_cases and GET /budgets serve for this initiative,
        # through the same code.
        plan=PlanAgainstActuals.model_validate(msgspec.to_builtins(plan_row)),
        budget=Budget.model_validate(msgspec.to_builtins(budget_row)),
        recent_costs=[
            CostItem(
                id=c.id,
                amount_cents=c.amount_cents,
                currency=c.currency,
                cost_category=c.cost_category,
                cost_type=c.cost_type,
                vendor_name=c.vendor_name,
                description=c.description,
                entry_date=c.entry_date,
            )
            for c in costs
        ],
        cost_entry_count=cost_count,
        recent_value_entries=[
            ValueItem(
                id=v.id,
                amount_cents=v.amount_cents,
                currency=v.currency,
                status=v.status,
                counts_toward_roi=v.status == "approved",  # SEMANTICS R14
                entry_type=v.entry_type,
                entry_date=v.entry_date,
            )
            for v in values
        ],
        value_entry_count=value_count,
        notes=[
            NoteItem(
                id=n.id,
                author=n.author_name,
                body=n.body,
                created_at=format_datetime(n.created_at),
            )
            for n in notes
        ],
        note_count=note_count,
    )


def _integration_item(row: Any) -> IntegrationItem:
    return IntegrationItem(
        id=row.id,
        platform=row.platform,
        name=row.name,
        status=row.status,
        last_sync_status=row.last_sync_status,
        last_synced_at=None if row.last_synced_at is None else format_datetime(row.last_synced_at),
        reauth_required=row.reauth_required_at is not None,
    )


def integration_list(
    db: Connection,
    principal: Principal,
    *,
    limit: int,
    cursor: str | None,
    cursors: Cursors,
) -> IntegrationListResult:
    codec = cursors.codec(db)
    after = None if cursor is None else _integrations_after(codec, cursor, principal)
    rows, total = lookups.list_integrations(db, principal, limit + 1, after=after)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if more:
        payload = [INTEGRATIONS_LIST, principal.account_id, rows[-1].platform, rows[-1].id]
        next_cursor = codec.seal(msgspec.json.encode(payload))
    return IntegrationListResult(
        integrations=[_integration_item(r) for r in rows],
        total=total,
        has_more=more,
        next_cursor=next_cursor,
    )


def _integrations_after(codec: CursorCodec, cursor: str, principal: Principal) -> tuple[str, int]:
    """The (platform, id) an integrations cursor continues after; a refusal for any other."""
    try:
        issued_for, issued_to, platform, row_id = msgspec.json.decode(
            codec.unseal(cursor, MAX_CURSOR), type=tuple[str, int, str, int]
        )
    except (ApiError, msgspec.DecodeError):
        raise ToolRefusal(CURSOR_NOT_ISSUED) from None
    if issued_for != INTEGRATIONS_LIST:
        raise ToolRefusal(CURSOR_NOT_ISSUED)
    if issued_to != principal.account_id:
        raise ToolRefusal(
            "The cursor was issued to another account; a cursor only continues a list for "
            "the account of the token it was served to."
        )
    return platform, row_id


def help_article(*, article_id: int | None, slug: str | None, pages: Pages) -> HelpArticle:
    """SEMANTICS R28: the id wins over the slug; neither is a refusal; published only."""
    if article_id is None and slug is None:
        raise ToolRefusal("Give the article's id or its slug.")
    article = catalog.help_article(id=article_id, slug=slug)
    if article is None:
        named = f"id {article_id}" if article_id is not None else f"slug {slug!r}"
        raise ToolRefusal(f"No published help article has the {named}.")
    return HelpArticle(
        id=article.id,
        slug=article.slug,
        title=article.title,
        summary=article.summary,
        body=article.body,
        url=pages.url("help_article", slug=article.slug),
    )


def platform_setup_guide(
    db: Connection, principal: Principal, *, platform: str, pages: Pages
) -> PlatformSetupGuide:
    entry = catalog.find_platform(platform)
    if entry is None:
        raise ToolRefusal(
            f"No platform is named {platform.strip()[:80]!r}; search with types "
            "['platform', 'connection'] to find its name."
        )
    rows, _ = lookups.list_integrations(
        db, principal, MAX_CONNECTIONS_SHOWN, platforms=_platform_names(entry)
    )
    return PlatformSetupGuide(
        key=entry.key,
        name=entry.name,
        category=entry.category,
        auth_type=entry.auth_type,
        metric_categories=list(entry.metric_categories),
        steps=list(entry.steps),
        credential_location=entry.credential_location,
        setup_script=entry.setup_script,
        tips=list(entry.tips),
        docs_hint=entry.docs_hint,
        connected=bool(rows),
        has_connection=bool(rows),
        has_working_connection=any(
            r.status == "active" and r.reauth_required_at is None for r in rows
        ),
        connections=[
            ConnectionRef(
                id=r.id,
                name=r.name,
                status=r.status,
                last_synced_at=None
                if r.last_synced_at is None
                else format_datetime(r.last_synced_at),
            )
            for r in rows
        ],
        connect_url=pages.url("integration_connect", platform=entry.key),
    )


def _platform_names(entry: catalog.Platform) -> Sequence[str]:
    """A connection names its platform by the catalog key (or, loosely, by its name)."""
    return (entry.key, entry.name)


def search(
    db: Connection,
    principal: Principal,
    *,
    query: str,
    kinds: Sequence[SearchKind] | None,
    pages: Pages,
) -> SearchResult:
    """The search tool's answer (airoi.reports.search); a query it cannot search is refused."""
    try:
        found = searching.search(db, principal, query=query, kinds=kinds, pages=pages)
    except searching.QueryRefused as exc:
        raise ToolRefusal(str(exc)) from None
    return SearchResult(
        query=found.query,
        results=[
            SearchHit(
                kind=hit.kind,
                id=hit.id,
                key=hit.key,
                title=hit.title,
                snippet=hit.snippet,
                url=hit.url,
            )
            for hit in found.results
        ],
        has_more=found.has_more,
    )
