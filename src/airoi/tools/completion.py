"""What the tool endpoint offers besides tools, resources and prompts: `completion/complete`
for the prompts' arguments, and `logging/setLevel`.

Completion suggests the values a prompt argument takes, starting with what was typed: `window`
the four windows, `month` the 24 months up to the last complete one (newest first),
`min_overrun_percent` a few round figures, `initiative_id` the ids of the account's initiatives
whose title holds what was typed (or whose id starts with it), sample ones included, at most
100, read for the token's account alone. The server runs stateless over HTTP and sends no log
messages of its own to a client, so `logging/setLevel` takes a valid level and answers (an MCP
client asks for it at start-up; one refused would stop there).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any, Final

import anyio
from mcp.server.mcpserver import MCPServer
from mcp_types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    PromptReference,
    SetLevelRequestParams,
)
from sqlalchemy import Engine, String, cast, func, or_, select

from airoi.auth import Principal
from airoi.db import tables
from airoi.tools.prompts import WINDOWS, last_complete_month

MONTHS: Final = 24
OVERRUNS: Final = ("0", "10", "25", "50", "100")
MAX_VALUES: Final = 100  # MCP: a completion answers at most 100 values
MAX_TYPED: Final = 200  # characters of a partial value looked for


def _principal(ctx: Any) -> Principal | None:
    """The account of the request, put in its scope by the authentication middleware."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    principal = scope.get("user")
    return principal if isinstance(principal, Principal) else None


def months_up_to(last: date, count: int = MONTHS) -> list[str]:
    """`count` months ending with `last`, newest first, as YYYY-MM."""
    found = []
    year, month = last.year, last.month
    for _ in range(count):
        found.append(f"{year:04d}-{month:02d}")
        year, month = (year - 1, 12) if month == 1 else (year, month - 1)
    return found


def suggestions(argument: str, typed: str, today: date) -> list[str] | None:
    """The values a prompt argument takes that start with what was typed; None for an
    argument no prompt takes."""
    choices: tuple[str, ...] | list[str]
    if argument == "window":
        choices = WINDOWS
    elif argument == "month":
        choices = months_up_to(last_complete_month(today))
    elif argument == "min_overrun_percent":
        choices = OVERRUNS
    else:
        return None
    return [choice for choice in choices if choice.startswith(typed)][:MAX_VALUES]


def initiative_ids(engine: Engine, account_id: int, typed: str) -> list[str]:
    """The ids of the account's initiatives whose title holds `typed` (any case), or whose
    id starts with it, ordered by title; at most MAX_VALUES."""
    table = tables.initiatives
    wanted = typed.strip()
    query = select(table.c.id).where(table.c.account_id == account_id)
    if wanted:
        holds = func.lower(table.c.title).contains(wanted.lower(), autoescape=True)
        if wanted.isascii() and wanted.isdigit():
            holds = or_(holds, cast(table.c.id, String).startswith(wanted))
        query = query.where(holds)
    query = query.order_by(table.c.title, table.c.id).limit(MAX_VALUES)
    with engine.connect() as conn:
        return [str(found) for found in conn.execute(query).scalars()]


def register_completion(
    server: MCPServer[Any], today: Callable[[], date], engine: Engine | None = None
) -> None:
    """completion/complete for the prompts' arguments, and logging/setLevel, on `server`
    (the SDK's low-level server: its decorator for completion is untyped)."""

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        values: list[str] = []
        if isinstance(params.ref, PromptReference):
            argument = params.argument
            if argument.name == "initiative_id" and engine is not None:
                principal = _principal(ctx)
                if principal is not None:
                    values = await anyio.to_thread.run_sync(
                        initiative_ids, engine, principal.account_id, argument.value[:MAX_TYPED]
                    )
            else:
                values = suggestions(argument.name, argument.value, today()) or []
        return CompleteResult(
            completion=Completion(values=values, total=len(values), has_more=False)
        )

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("completion/complete", CompleteRequestParams, complete)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
