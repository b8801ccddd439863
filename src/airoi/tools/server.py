"""The MCP server and its read-only tools (SPEC 4.B and more), served at exactly /mcp.

The streamable HTTP app runs stateless with JSON responses, behind the app's own
authentication middleware: a method other than POST is refused 405 (SEMANTICS R30),
then a request without a good token 401/403, each with the SPEC 7 body before the SDK
sees it (SEMANTICS R27), and every tool reads the Principal that middleware put in the
request's scope. The session manager runs inside the Litestar lifespan.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from datetime import date
from typing import Annotated, Any
from urllib.parse import urlsplit

from litestar import Litestar, asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field, ValidationError
from sqlalchemy import Connection, Engine

from airoi import __version__
from airoi.auth import Principal
from airoi.catalog import Pages
from airoi.db.engine import close_or_discard
from airoi.failures import log_discarded, log_failure
from airoi.listing import MAX_ID, Cursors
from airoi.oauth.urls import LOOPBACK
from airoi.observability import RequestContext, request_context
from airoi.settings import Settings
from airoi.tools import service
from airoi.tools.arguments import argument_names, strict_tool
from airoi.tools.completion import register_completion
from airoi.tools.errors import ToolRefusal, validation_sentence
from airoi.tools.models import (
    BusinessCaseListResult,
    DecisionListResult,
    HelpArticle,
    InitiativeDetail,
    InitiativeListResult,
    IntegrationListResult,
    PlatformSetupGuide,
    ReadingListResult,
    RoiBreakdown,
    RoiSummary,
    SearchResult,
)
from airoi.tools.prompts import PromptServing, register_prompts
from airoi.tools.protocol_errors import FixedTransportErrors, UnavailableAs503
from airoi.tools.resources import ResourceReading, register_resources
from airoi.tools.summaries import SUMMARIES
from airoi.vocabulary import SEARCH_KINDS, BreakdownBy, Outcome, RolledUpStatus, SearchKind, Window

MCP_PATH = "/mcp"
# SEMANTICS R30: the methods /mcp answers. Stateless, the SDK gives no session to end
# (DELETE is its own 405) and no server-initiated messages: a GET opens an event stream
# on which nothing is ever sent, held until the client hangs up (its newer protocol
# revisions answer 405, Allow: POST, as the MCP transport allows); its client only POSTs.
MCP_METHODS = ("POST",)
LIST_INITIATIVES_DEFAULT = 20
LIST_INITIATIVES_MAX = 50  # SPEC 8
# The other lists' pages: get_roi_breakdown, get_business_cases, list_decisions,
# list_metric_readings as
# list_initiatives; list_integrations as many as it always showed.
PAGE_DEFAULT = LIST_INITIATIVES_DEFAULT
PAGE_MAX = LIST_INITIATIVES_MAX
INTEGRATIONS_DEFAULT = INTEGRATIONS_MAX = 100
SEARCH_MIN_QUERY = 2  # SPEC 8
SEARCH_MAX_QUERY = 200

READ_ONLY = ToolAnnotations(
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)

INSTRUCTIONS = (
    "Read-only tools over one account's AI initiatives: ROI, initiatives with budgets and "
    "spend, ROI split by initiative, month, quarter, cost type, vendor or value status, "
    "business cases against actuals (value due by now, payback), portfolio decisions, "
    "metric readings, connections, help articles and platform setup guides. Amounts are "
    "integer cents with their currency beside them. Use search to find ids and page URLs; a "
    "list returns next_cursor while more follow: pass it back as cursor."
)


Cursor = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=service.MAX_CURSOR,
        description=(
            "The next_cursor of the previous call, passed back unchanged with the same other "
            "arguments; omit for the first page."
        ),
    ),
]
PageLimit = Annotated[
    int,
    Field(
        ge=1,
        le=PAGE_MAX,
        description=f"How many to return, 1 to {PAGE_MAX} (default {PAGE_DEFAULT}).",
    ),
]
IntegrationsLimit = Annotated[
    int,
    Field(ge=1, le=INTEGRATIONS_MAX, description=f"How many to return, 1 to {INTEGRATIONS_MAX}."),
]
InitiativeFilter = Annotated[
    int | None,
    Field(ge=1, le=MAX_ID, description="Only this initiative of the account; omit for all."),
]


class AccountToolServer(ResourceReading, PromptServing, MCPServer[Any]):
    """MCPServer whose tool errors are one sentence each (SEMANTICS R27).

    An argument that fails the strict check (arguments.py) is named in the sentence; one the
    tool does not declare is named with those it does, as the HTTP API's 400 does (R12).
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            # The MCP specification (server/tools, "Error Handling") makes an unknown tool a
            # protocol error, -32602; the SDK answered it as a tool result. The name sent is
            # not repeated (SEMANTICS R15: no input echoed in a protocol error).
            raise MCPError(INVALID_PARAMS, "Unknown tool")
        # Every failure is answered here rather than raised to the SDK, which logs a crash
        # with its traceback (the statement, its parameters, the driver's text) and a
        # refusal with its text (the caller's input): SEMANTICS R15.
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            return self._failed(exc.__cause__ or exc, name, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return refusal(validation_sentence(cause, argument_names(tool)))
            if isinstance(cause, ToolRefusal):
                return refusal(str(cause))
            return refusal(str(exc))

    @staticmethod
    def _failed(exc: BaseException, name: str, context: Context[Any] | None) -> CallToolResult:
        """Log a tool's failure as the API logs one; a database failure makes the HTTP
        answer a 503 with Retry-After (the caller may retry), not a final tool error."""
        request = _request_of(context)
        where = f"{MCP_PATH} tool {name}"
        unavailable = log_failure(exc, where, request.request_id if request else None)
        if unavailable is None:
            # The caller learns only that it failed (SEMANTICS R27).
            return refusal("The tool failed to answer; the error has been logged.")
        if request is not None:
            request.unavailable = unavailable  # UnavailableAs503 answers the POST with it
        return refusal(unavailable.message)


def refusal(sentence: str) -> CallToolResult:
    """A tool's isError answer of one sentence, as the SDK makes one."""
    return CallToolResult(content=[TextContent(type="text", text=sentence)], is_error=True)


def _request_of(context: Context[Any] | None) -> RequestContext | None:
    """The HTTP request's context of a tool call (None for a call made in process)."""
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # no request context: a call made outside a session
        return None
    scope = getattr(request, "scope", None)
    return request_context(scope) if isinstance(scope, dict) else None


def principal_of(ctx: Context) -> Principal:
    """The account and user of this call, put in the scope by the authentication middleware."""
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    principal = scope.get("user")
    if not isinstance(principal, Principal):  # only reachable when mounted without the middleware
        raise ToolRefusal("This call carries no account; send the bearer token.")
    return principal


class AccountTools:
    """The tools, each reading one account through a read-only engine."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.engine = engine
        self.settings = settings
        self.pages = Pages(settings.app_url)
        self.cursors = Cursors(settings.secret_key)

    def today(self) -> date:
        return self.settings.current_date()

    @contextmanager
    def reading(self, ctx: Context) -> Iterator[Connection]:
        """A connection of the read-only engine for one call. When it fails to go back to
        the pool after the answer is built (its server gone), it is discarded and logged,
        and the answer stands."""
        connection = self.engine.connect()
        try:
            yield connection
        except BaseException:
            close_or_discard(connection)  # the call failed already: that failure is logged
            raise
        failure = close_or_discard(connection)
        if failure is not None:
            request = _request_of(ctx)
            log_discarded(failure, MCP_PATH, request.request_id if request else None)

    def get_roi_summary(
        self,
        ctx: Context,
        initiative_id: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_ID,
                description="One initiative of the account; omit for the whole portfolio.",
            ),
        ] = None,
        window: Annotated[
            Window,
            Field(
                description=(
                    "all (default) counts every entry; 1yr, 3yr and 5yr count only entries "
                    "dated in that trailing span ending today."
                )
            ),
        ] = "all",
    ) -> RoiSummary:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.roi_summary(
                db, principal, window=window, initiative_id=initiative_id, today=self.today()
            )

    def list_initiatives(
        self,
        ctx: Context,
        status: Annotated[
            RolledUpStatus | None,
            Field(
                description=(
                    "Only initiatives with this rolled-up status: not_started (identified, "
                    "reviewing), active (implementing, live), completed, or inactive (paused, "
                    "rejected, dismissed). Omit for all."
                )
            ),
        ] = None,
        limit: Annotated[
            int,
            Field(
                ge=1,
                le=LIST_INITIATIVES_MAX,
                description=f"How many to return, 1 to {LIST_INITIATIVES_MAX}.",
            ),
        ] = LIST_INITIATIVES_DEFAULT,
        owner_id: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_ID,
                description=(
                    "Only initiatives this person owns: the id of a search hit of kind person."
                ),
            ),
        ] = None,
        cursor: Cursor = None,
    ) -> InitiativeListResult:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.initiative_list(
                db,
                principal,
                status=status,
                limit=limit,
                owner_id=owner_id,
                cursor=cursor,
                cursors=self.cursors,
            )

    def get_initiative(
        self,
        ctx: Context,
        initiative_id: Annotated[
            int, Field(ge=1, le=MAX_ID, description="The initiative's id (see list_initiatives).")
        ],
    ) -> InitiativeDetail:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.initiative_detail(
                db, principal, initiative_id=initiative_id, today=self.today(), pages=self.pages
            )

    def search(
        self,
        ctx: Context,
        query: Annotated[
            str,
            Field(
                min_length=SEARCH_MIN_QUERY,
                max_length=SEARCH_MAX_QUERY,
                description="What to look for, at least 2 characters; matched in titles and names.",
            ),
        ],
        types: Annotated[
            list[SearchKind] | None,
            Field(
                min_length=1,
                max_length=len(SEARCH_KINDS),
                description="Only these kinds of result, at least one; omit for every kind.",
            ),
        ] = None,
    ) -> SearchResult:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.search(db, principal, query=query, kinds=types, pages=self.pages)

    def list_integrations(
        self,
        ctx: Context,
        limit: IntegrationsLimit = INTEGRATIONS_DEFAULT,
        cursor: Cursor = None,
    ) -> IntegrationListResult:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.integration_list(
                db, principal, limit=limit, cursor=cursor, cursors=self.cursors
            )

    def get_roi_breakdown(
        self,
        ctx: Context,
        by: Annotated[
            BreakdownBy,
            Field(
                description=(
                    "initiative, month, quarter (of the account's fiscal year), cost_type, vendor "
                    "or value_status (value by the status of its entries)."
                )
            ),
        ],
        window: Annotated[
            Window,
            Field(description="all (default), 1yr, 3yr or 5yr, as for get_roi_summary."),
        ] = "all",
        initiative_id: InitiativeFilter = None,
        vendor_id: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_ID,
                description=(
                    "Only this vendor's cost (the id of a search hit of kind vendor); value, "
                    "net value and roi are then null. Not with by=value_status."
                ),
            ),
        ] = None,
        limit: PageLimit = PAGE_DEFAULT,
        cursor: Cursor = None,
    ) -> RoiBreakdown:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.roi_breakdown(
                db,
                principal,
                by=by,
                window=window,
                initiative_id=initiative_id,
                vendor_id=vendor_id,
                limit=limit,
                cursor=cursor,
                cursors=self.cursors,
                today=self.today(),
            )

    def get_business_cases(
        self,
        ctx: Context,
        initiative_id: InitiativeFilter = None,
        limit: PageLimit = PAGE_DEFAULT,
        cursor: Cursor = None,
    ) -> BusinessCaseListResult:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.business_case_list(
                db,
                principal,
                initiative_id=initiative_id,
                limit=limit,
                cursor=cursor,
                cursors=self.cursors,
                today=self.today(),
            )

    def list_decisions(
        self,
        ctx: Context,
        initiative_id: InitiativeFilter = None,
        outcome: Annotated[
            Outcome | None,
            Field(
                description="Only decisions with this outcome: continue, scale, fix, pause, retire."
            ),
        ] = None,
        limit: PageLimit = PAGE_DEFAULT,
        cursor: Cursor = None,
    ) -> DecisionListResult:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.decision_list(
                db,
                principal,
                initiative_id=initiative_id,
                outcome=outcome,
                limit=limit,
                cursor=cursor,
                cursors=self.cursors,
            )

    def list_metric_readings(
        self,
        ctx: Context,
        metric_key: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=200,
                description="Only readings of this metric: the key of a search hit of kind metric.",
            ),
        ] = None,
        initiative_id: InitiativeFilter = None,
        limit: PageLimit = PAGE_DEFAULT,
        cursor: Cursor = None,
    ) -> ReadingListResult:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.reading_list(
                db,
                principal,
                metric_key=metric_key,
                initiative_id=initiative_id,
                limit=limit,
                cursor=cursor,
                cursors=self.cursors,
            )

    def get_help_article(
        self,
        ctx: Context,
        slug: Annotated[
            str | None,
            Field(min_length=1, max_length=200, description="The article's slug."),
        ] = None,
        id: Annotated[
            int | None,
            Field(ge=1, le=MAX_ID, description="The article's id; wins when slug is given too."),
        ] = None,
    ) -> HelpArticle:
        principal_of(ctx)  # help is the same for every account, but only for a good token
        return service.help_article(article_id=id, slug=slug, pages=self.pages)

    def get_platform_setup_guide(
        self,
        ctx: Context,
        platform: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="The platform's name or key, such as 'OpenAI' or 'github_copilot'.",
            ),
        ],
    ) -> PlatformSetupGuide:
        principal = principal_of(ctx)
        with self.reading(ctx) as db:
            return service.platform_setup_guide(db, principal, platform=platform, pages=self.pages)


TOOL_TEXTS: dict[str, tuple[str, str]] = {
    "get_roi_summary": (
        "ROI summary",
        "ROI of the whole portfolio (sample initiatives excluded) or of one initiative over a "
        "trailing window: approved value, total cost split into capex and opex, net value, "
        "roi and roi_percent. The same figures as the ROI dashboard and GET /roi. Only "
        "approved value entries count. roi is null (not zero) when there is no cost.",
    ),
    "get_roi_breakdown": (
        "ROI breakdown",
        "The ROI of a window split by initiative, month, fiscal quarter, cost type, vendor or "
        "value entry status in one call: which initiative has the best ROI, spend by vendor, "
        "value against cost by month, how much value is still draft or disputed. Each row in "
        "data has key, label, approved value, capex, opex, total cost, net value, roi and "
        "value_cents: the rows of GET /roi/breakdown, which add up to get_roi_summary. "
        "cost_type and vendor split cost only (value fields null). value_status splits value "
        "only: a row for each status (draft, calculated, reviewed, approved, disputed, "
        "archived) with its value in value_cents, approved value on the approved row alone, "
        "cost fields null. vendor_id takes the id of a search hit of kind vendor and splits "
        "that vendor's cost alone. Paged by limit and cursor.",
    ),
    "list_initiatives": (
        "List initiatives",
        "The account's initiatives (sample ones left out), most recently changed first, with "
        "id, title, stage and rolled-up status. Filter by status, or by owner_id: the id of a "
        "search hit of kind person. total says how many match; pass next_cursor back as cursor "
        "for the next page. Use get_initiative with an id for detail.",
    ),
    "get_initiative": (
        "Initiative detail",
        "One initiative: stage, category, owner, business case (expected capex, opex, savings "
        "and revenue uplift), the plan against actuals to date (planned and actual ROI, value "
        "due by now against value realized, payback month), the approved budget against "
        "spend to date, the 10 most recent "
        "cost and value entries (value entries count toward ROI only when approved) and the "
        "most recent notes.",
    ),
    "search": (
        "Search the account",
        "Find initiatives, application pages, metric definitions (library and the account's "
        "own), connections and platforms not yet connected, vendors, people (names only), "
        "initiative templates, help articles and active assessments. Exact title matches come "
        "first, then prefixes, then other matches. Each hit has its id or key and, where it has "
        "one, the URL of its page. Restrict with types. A person hit's id filters "
        "list_initiatives (owner_id), a vendor hit's id get_roi_breakdown (vendor_id), a metric "
        "hit's key list_metric_readings (metric_key).",
    ),
    "list_integrations": (
        "List connections",
        "The account's connections to other platforms with status, last sync outcome and time, "
        "and whether the platform needs reconnecting, by platform. Credentials are never shown. "
        "total says how many there are; pass next_cursor back as cursor for the next page.",
    ),
    "get_business_cases": (
        "Business cases against actuals",
        "Each initiative's business case held against what it has cost and delivered to date: "
        "the plan (capex, opex, value, net and ROI over its horizon), the value and cost the "
        "plan should have reached by today, the actuals to date, roi_to_date, "
        "value_realization_ratio (approved value over the value due by now) and payback_month. "
        "In the initiative's currency; sample initiatives left out unless initiative_id names "
        "one. The rows of GET /business_cases; pass next_cursor back as cursor.",
    ),
    "list_decisions": (
        "List portfolio decisions",
        "The account's portfolio decisions on initiatives (continue, scale, fix, pause, "
        "retire) with rationale, who decided, the stage before and after, the next review and "
        "the figures as they stood when decided: the rows of GET /decisions, oldest change "
        "first. Filter by initiative_id or outcome; pass next_cursor back as cursor.",
    ),
    "list_metric_readings": (
        "List metric readings",
        "Readings and baselines of the account's metrics: value in the metric's unit, when it "
        "was observed, the period it covers, whether it is estimated, and where it came from: "
        "the rows of GET /observations, oldest change first. Filter by metric_key (the key of "
        "a search hit of kind metric) and initiative_id; pass next_cursor back as cursor.",
    ),
    "get_help_article": (
        "Help article",
        "The full text (Markdown) of a published help article, by id or slug; when both are "
        "given the id is used. Find articles with search and types ['help_article'].",
    ),
    "get_platform_setup_guide": (
        "Platform setup guide",
        "How to connect one platform: how it authenticates, the steps, where to find the "
        "credential, any setup script and tips, whether this account has a connection to it "
        "(has_connection) and whether one is working (has_working_connection), with each "
        "connection's status, and the URL of the page to connect it from.",
    ),
}


def create_mcp_server(engine: Engine, settings: Settings) -> AccountToolServer:
    tools = AccountTools(engine, settings)
    server = AccountToolServer(
        name="airoi",
        title="AI ROI",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[
            strict_tool(
                getattr(tools, name),
                name=name,
                title=title,
                description=description,
                annotations=READ_ONLY,
                summary=SUMMARIES[name],
            )
            for name, (title, description) in TOOL_TEXTS.items()
        ],
        # Nothing served changes while the server runs, and a stateless server has no stream
        # to tell of it: no subscriptions/listen, so no listChanged and no subscribe.
        subscriptions=False,
    )
    # Help articles and the metric library as resources; the finance lead's prompts.
    register_resources(server)
    register_prompts(server, settings.current_date)
    register_completion(server, settings.current_date, engine)  # and logging/setLevel
    return server


def _host_names(settings: Settings) -> list[str]:
    """Every host name the app is served under (CONVENTIONS: host checks need them all)."""
    names = {*LOOPBACK, *settings.allowed_hosts}
    app_host = urlsplit(settings.app_url).netloc.rpartition("@")[2]
    if app_host:
        names.add(app_host)
    return sorted(names)


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host and Origin checks (DNS rebinding) over every served name; "*" turns them off."""
    names = _host_names(settings)
    if "*" in names:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = []
    origins: list[str] = []
    for name in names:
        hosts.append(name)
        has_port = name.rsplit("]", 1)[-1].count(":") == 1
        if not has_port:
            hosts.append(f"{name}:*")
        for scheme in ("http", "https"):
            origins.append(f"{scheme}://{name}")
            if not has_port:
                origins.append(f"{scheme}://{name}:*")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class McpEndpoint:
    """The /mcp route handler and the lifespan that runs its session manager."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.server = create_mcp_server(engine, settings)
        self._app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=transport_security(settings),
        )
        # SEMANTICS R15: the transport's own 400s carry a fixed message, not the client's input;
        # a tool the database failed under answers 503 with Retry-After (SPEC 7).
        inner = UnavailableAs503(FixedTransportErrors(self._app))

        @asgi(
            MCP_PATH,
            copy_scope=True,
            name="mcp",
            # app.SERVED_METHODS_OPT: any other method is 405 before the token is looked at.
            opt={"served_methods": MCP_METHODS},
        )
        async def serve_mcp(scope: Scope, receive: Receive, send: Send) -> None:
            # Exactly /mcp: "/mcp/" is routed here too and must not be answered by a redirect.
            scope["path"] = MCP_PATH
            scope["raw_path"] = MCP_PATH.encode()
            await inner(scope, receive, send)  # type: ignore[arg-type]

        self.route_handler: ASGIRouteHandler = serve_mcp

    def lifespan(self, _app: Litestar) -> AbstractAsyncContextManager[None]:
        return self._run()

    @asynccontextmanager
    async def _run(self) -> AsyncIterator[None]:
        async with self.server.session_manager.run():
            yield


def mcp_endpoint(engine: Engine, settings: Settings) -> McpEndpoint:
    return McpEndpoint(engine, settings)


__all__ = ["MCP_METHODS", "MCP_PATH", "McpEndpoint", "create_mcp_server", "mcp_endpoint"]
