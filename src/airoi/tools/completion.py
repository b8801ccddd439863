"""What the tool endpoint offers besides tools, resources and prompts: `completion/complete`
for the prompts' arguments, and `logging/setLevel`.

Completion suggests the values a prompt argument takes, starting with what was typed:
`window` the four windows, `month` the 24 months up to the last complete one (newest first),
`min_overrun_percent` a few round figures. The server runs stateless over HTTP and sends no
log messages of its own to a client, so `logging/setLevel` takes a valid level and answers
(an MCP client asks for it at start-up; one refused would stop there).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any, Final

from mcp.server.mcpserver import MCPServer
from mcp_types import (
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    PromptReference,
    SetLevelRequestParams,
)

from airoi.tools.prompts import WINDOWS, last_complete_month

MONTHS: Final = 24
OVERRUNS: Final = ("0", "10", "25", "50", "100")
MAX_VALUES: Final = 100  # MCP: a completion answers at most 100 values


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


def register_completion(server: MCPServer[Any], today: Callable[[], date]) -> None:
    """completion/complete for the prompts' arguments, and logging/setLevel, on `server`
    (the SDK's low-level server: its decorator for completion is untyped)."""

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        values: list[str] = []
        if isinstance(params.ref, PromptReference):
            values = suggestions(params.argument.name, params.argument.value, today()) or []
        return CompleteResult(
            completion=Completion(values=values, total=len(values), has_more=False)
        )

    async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        return EmptyResult()

    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("completion/complete", CompleteRequestParams, complete)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
