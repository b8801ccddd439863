"""Prompts a finance lead would pick from an assistant's menu, each naming the tools to call
and their arguments.

| Prompt | Arguments (all optional) |
| --- | --- |
| `monthly_roi_review` | `month`: YYYY-MM, default the last complete month |
| `initiatives_over_budget` | `min_overrun_percent`: a whole number 0 to 1000, default 0 |
| `what_to_retire` | `window`: 1yr (default), 3yr, 5yr or all |
| `initiative_review` | `initiative_id`: an id (completion suggests them by title); default: ask |

A prompt is written from the tools the server has when it is asked for: a step that needs a
tool (`get_roi_breakdown`, `list_decisions`) or an argument (`cursor`) the server lacks
falls back to the tools it has, so a prompt never names a call that would be refused.

Arguments are strings (MCP). One that is not (null included), one the prompt does not take,
a value it does not accept, and an unknown prompt are each a JSON-RPC error -32602 with one
sentence that does not repeat what was sent (SEMANTICS R15).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Annotated, Any, Final

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, GetPromptResult, InputRequiredResult, Tool
from pydantic import Field

from airoi.vocabulary import Window

PLACEHOLDER: Final = re.compile(r'"(<[a-z_]+>)"')
MONTH: Final = re.compile(r"([0-9]{4})-(0[1-9]|1[0-2])")
FIRST_MONTH: Final = (1, 2)  # the first month with a month before it in the calendar
WINDOWS: Final[tuple[Window, ...]] = ("1yr", "3yr", "5yr", "all")
WINDOW_WORDS: Final[dict[str, str]] = {
    "1yr": "trailing year",
    "3yr": "trailing three years",
    "5yr": "trailing five years",
    "all": "whole history",
}
# The months before the current one that each trailing window holds whole.
TRAILING_MONTHS: Final[tuple[tuple[Window, int], ...]] = (("1yr", 11), ("3yr", 35), ("5yr", 59))
MAX_OVERRUN_PERCENT: Final = 1000
PAGE: Final = 50  # list_initiatives' largest page (SPEC 8)
ID: Final = "<id>"  # an initiative's id, which the assistant takes from an earlier answer

MONEY_RULES: Final = (
    "Rules for the figures: amounts are integer cents with their currency beside them; "
    "divide by 100 and show them as money (1234567 with USD is $12,345.67). Only approved "
    "value counts toward ROI: value awaiting approval is shown apart and never added in. roi "
    "is null when there is no cost: say so rather than 0%. Name initiatives by title and give "
    "the page URL a tool returned for them. The tools only read; nothing you call changes "
    "the account."
)


def call(tool: str, arguments: Mapping[str, Any]) -> str:
    """How a prompt names a call: the tool, and its arguments as JSON (`<id>` stands for a
    value the assistant takes from an earlier answer)."""
    text = PLACEHOLDER.sub(r"\1", json.dumps(arguments, separators=(", ", ": ")))
    return f"call `{tool}` with `{text}`"


class Toolbox:
    """The tools a server has, by name, to write each step with the best of them."""

    def __init__(self, tools: list[Tool]) -> None:
        self.tools = {tool.name: tool for tool in tools}

    def accepts(self, name: str, *arguments: str) -> bool:
        tool = self.tools.get(name)
        if tool is None:
            return False
        properties = tool.input_schema.get("properties", {})
        return all(argument in properties for argument in arguments)


def _refused(sentence: str) -> MCPError:
    return MCPError(INVALID_PARAMS, sentence)


def last_complete_month(today: date) -> date:
    first = today.replace(day=1)
    return (
        first.replace(year=first.year - 1, month=12)
        if first.month == 1
        else first.replace(month=first.month - 1)
    )


def month_before(month: date) -> date:
    return (
        month.replace(year=month.year - 1, month=12)
        if month.month == 1
        else month.replace(month=month.month - 1)
    )


def _paging(tools: Toolbox, status: str) -> str:
    arguments: dict[str, Any] = {"status": status, "limit": PAGE}
    if tools.accepts("list_initiatives", "cursor"):
        again = call("list_initiatives", {**arguments, "cursor": "<next_cursor>"})
        rest = f"While the answer carries a next_cursor, {again}."
    else:
        rest = (
            f"If its total is above {PAGE}, say that only the {PAGE} most recently changed "
            "were checked."
        )
    return f"{call('list_initiatives', arguments)}. {rest}"


def window_covering(first: date, today: date) -> Window:
    """The shortest trailing window holding the month starting `first` and the one before it
    (whole months: a year's window is taken to hold the current month and the 11 before)."""
    back = (today.year - first.year) * 12 + today.month - first.month + 1
    for window, months in TRAILING_MONTHS:
        if back <= months:
            return window
    return "all"


def _breakdown(tools: Toolbox, by: str, window: str) -> str:
    """A get_roi_breakdown call over every row: the largest page, and the cursor after it."""
    arguments: dict[str, Any] = {"by": by, "window": window}
    if not tools.accepts("get_roi_breakdown", "limit"):
        return call("get_roi_breakdown", arguments)
    arguments["limit"] = PAGE
    text = call("get_roi_breakdown", arguments)
    if tools.accepts("get_roi_breakdown", "cursor"):
        again = call("get_roi_breakdown", {**arguments, "cursor": "<next_cursor>"})
        text += f" (while the answer carries a next_cursor, {again})"
    return text


def monthly_roi_review(tools: Toolbox, today: date, month: str | None) -> str:
    if month is None:
        first = last_complete_month(today)
    else:
        matched = MONTH.fullmatch(month)
        if matched is None:
            raise _refused("The month must be written YYYY-MM, such as 2026-05.")
        year, number = int(matched[1]), int(matched[2])
        if (year, number) < FIRST_MONTH:  # it and the month before must be calendar months
            raise _refused("The month must be 0001-02 or later.")
        first = date(year, number, 1)
        if first > today:
            raise _refused("The month must not be later than the current one.")
    label = f"{first:%B} {first.year:04d}"  # %Y is not four digits before year 1000 here
    previous = month_before(first)
    steps = [
        f"{call('get_roi_summary', {'window': '1yr'})} for the portfolio's trailing year, and "
        f"{call('get_roi_summary', {'window': 'all'})} for all time."
    ]
    if tools.accepts("get_roi_breakdown", "by", "window"):
        window = window_covering(first, today)
        steps += [
            f"{_breakdown(tools, 'month', window)}. The row keyed {first.isoformat()} is "
            f"{label}: compare it with the row keyed {previous.isoformat()} (the month before) "
            "and with the average of the twelve rows up to it.",
            f"{_breakdown(tools, 'initiative', '1yr')} to rank the initiatives by net value "
            "and ROI over the trailing year.",
        ]
    else:
        steps += [
            f"{_paging(tools, 'active')}",
            f"For each of them {call('get_roi_summary', {'initiative_id': ID, 'window': '1yr'})} "
            "to rank them by net value and ROI.",
        ]
    steps.append(
        f"For the three best and the three worst, {call('get_initiative', {'initiative_id': ID})} "
        f"for their recent costs and value entries and their budget against spend; the entries "
        f"dated in {label} are the month's (say the figure is partial when an initiative has "
        "more entries than it lists)."
    )
    return _numbered(
        f"Prepare the monthly AI ROI review for {label} for a finance lead, with the airoi tools.",
        steps,
        "Write it as: a headline (approved value, total cost split into capex and opex, net "
        f"value and ROI, for the trailing year and all time); {label} against the month before, "
        "saying plainly if the month had no entries; the initiatives that drive the return "
        "and those that drag it, one reason each; and three things to watch next month (an "
        "initiative over budget, value awaiting approval, a cost that is rising).",
    )


def initiatives_over_budget(tools: Toolbox, min_overrun_percent: str | None) -> str:
    threshold = 0
    if min_overrun_percent is not None:
        if not re.fullmatch(r"[0-9]{1,4}", min_overrun_percent) or (
            int(min_overrun_percent) > MAX_OVERRUN_PERCENT
        ):
            raise _refused(
                f"The min_overrun_percent must be a whole number from 0 to {MAX_OVERRUN_PERCENT}."
            )
        threshold = int(min_overrun_percent)
    over = (
        "any overrun"
        if threshold == 0
        else f"an overrun (minus variance_cents over budget_to_date_cents) of at least {threshold}%"
    )
    steps = [
        _paging(tools, "active"),
        f"For each initiative {call('get_initiative', {'initiative_id': ID})} and read its "
        "budget: status (over, within, scheduled, no_budget), over_parts (capex, opex), "
        "budget_to_date_cents, actual_to_date_cents, variance_cents (negative when over), "
        "used_ratio, budget_monthly_run_rate_cents, actual_monthly_run_rate_cents and "
        "revision_pending.",
        f"Over budget: status over, with {over}. Heading over: status within, but "
        "actual_monthly_run_rate_cents above budget_monthly_run_rate_cents.",
        "With no approved budget (budgeted false) every budget figure is 0: for the spend of "
        f"each such initiative {call('get_roi_summary', {'initiative_id': ID, 'window': 'all'})}"
        " and read total_cost_cents.",
    ]
    return _numbered(
        "Find the AI initiatives that are over budget, for a finance lead, with the airoi tools.",
        steps,
        "Answer with a table of the initiatives over budget, largest overrun first: title, the "
        "part over (capex, opex), budget to date, actual to date, the overrun in money and per "
        "cent, and the monthly run rate against the budgeted one. Then those heading over. Then, "
        "apart, the initiatives spending with no approved budget (budgeted false) and their "
        "spend, which belong in no variance total. Say where a revision is pending: the figures "
        "shown are still the approved ones.",
    )


def what_to_retire(tools: Toolbox, window: str | None) -> str:
    chosen = window if window is not None else "1yr"
    if chosen not in WINDOWS:
        raise _refused("The window must be one of 1yr, 3yr, 5yr or all.")
    span = WINDOW_WORDS[chosen]
    steps = [_paging(tools, "active")]
    if tools.accepts("get_roi_breakdown", "by", "window"):
        steps.append(
            f"{_breakdown(tools, 'initiative', chosen)} for each initiative's approved value, "
            "cost, net value and ROI."
        )
    else:
        summary = call("get_roi_summary", {"initiative_id": ID, "window": chosen})
        steps.append(f"For each initiative {summary}.")
    steps.append(
        "For each with negative net value, an ROI below zero or no approved value at all, "
        f"{call('get_initiative', {'initiative_id': ID})}: set the business case (expected "
        "savings and revenue uplift) against what was approved, look at the dates of its "
        "value entries (none approved in six months is a warning) and its recent costs and "
        "budget."
    )
    if tools.accepts("list_decisions", "initiative_id"):
        steps.append(
            f"For each candidate {call('list_decisions', {'initiative_id': ID})} to see "
            "what was decided about it before."
        )
    return _numbered(
        f"Find the AI initiatives a finance lead should consider retiring, judged on the {span}, "
        "with the airoi tools.",
        steps,
        "For each candidate recommend one of Continue, Scale, Fix, Pause or Retire, with the "
        "figures behind it and one sentence of reason. Retire is for an initiative that costs "
        "more than it returns with no sign of turning; Fix or Pause where the value is there "
        "but not yet approved, or the cost was one-off capex already spent. Do not judge an "
        "initiative on its first months alone: say so when it is young.",
    )


def initiative_review(tools: Toolbox, initiative_id: str | None) -> str:
    if initiative_id is not None and not (initiative_id.isascii() and initiative_id.isdigit()):
        raise _refused("The initiative_id must be an initiative's id, a whole number.")
    chosen: Any = int(initiative_id) if initiative_id is not None else ID
    steps = []
    if initiative_id is None:
        steps.append(
            "Ask which initiative to review, or take it from what was said; "
            f"{call('list_initiatives', {'limit': PAGE})} finds its id by title."
        )
    steps.append(
        f"{call('get_initiative', {'initiative_id': chosen})}: its stage, its business case "
        "(expected costs, savings and revenue uplift over its horizon) and its budget against "
        "spend."
    )
    for window in ("1yr", "all"):
        summary = call("get_roi_summary", {"initiative_id": chosen, "window": window})
        steps.append(f"{summary} for its approved value, cost, net value and ROI.")
    if tools.accepts("list_decisions", "initiative_id"):
        steps.append(
            f"{call('list_decisions', {'initiative_id': chosen})} for what was decided before."
        )
    return _numbered(
        "Review one AI initiative for a finance lead with the airoi tools.",
        steps,
        "Say whether it delivers what its business case promised by now, whether it will end "
        "the year within its budget, and recommend one of Continue, Scale, Fix, Pause or "
        "Retire with the figures behind it.",
    )


def _numbered(opening: str, steps: list[str], closing: str) -> str:
    lines = [opening, ""]
    lines += [f"{number}. {step[0].upper()}{step[1:]}" for number, step in enumerate(steps, 1)]
    return "\n".join([*lines, "", closing, "", MONEY_RULES])


PROMPT_TEXTS: Final[dict[str, tuple[str, str]]] = {
    "monthly_roi_review": (
        "Monthly ROI review",
        "Review one month of the AI portfolio: ROI for the trailing year and all time, the "
        "month against the one before, the initiatives that drive and drag the return, and "
        "what to watch.",
    ),
    "initiatives_over_budget": (
        "Initiatives over budget",
        "The active initiatives spending more than their approved budget to date, those "
        "heading over on their monthly run rate, and those spending with no budget.",
    ),
    "what_to_retire": (
        "What to retire",
        "The active initiatives that cost more than they return, each with a recommendation "
        "(continue, scale, fix, pause or retire) and the figures behind it.",
    ),
    "initiative_review": (
        "Initiative review",
        "One initiative: its business case against what was approved and spent, its budget, "
        "its ROI over the trailing year and all time, the decisions taken, and what to do next.",
    ),
}


def register_prompts(server: MCPServer[Any], today: Callable[[], date]) -> None:
    """Add the prompts to `server` (create_mcp_server's hook); `today` gives the default month."""

    async def toolbox() -> Toolbox:
        return Toolbox(await server.list_tools())

    async def review(
        month: Annotated[
            str | None,
            Field(description="The month to review, YYYY-MM; default the last complete month."),
        ] = None,
    ) -> str:
        return monthly_roi_review(await toolbox(), today(), month)

    async def over_budget(
        min_overrun_percent: Annotated[
            str | None,
            Field(
                description=(
                    "Only overruns of at least this many per cent of the budget to date, a "
                    f"whole number 0 to {MAX_OVERRUN_PERCENT}; default 0 (any overrun)."
                )
            ),
        ] = None,
    ) -> str:
        return initiatives_over_budget(await toolbox(), min_overrun_percent)

    async def retire(
        window: Annotated[
            str | None,
            Field(description="The span judged: 1yr (default), 3yr, 5yr or all."),
        ] = None,
    ) -> str:
        return what_to_retire(await toolbox(), window)

    async def one(
        initiative_id: Annotated[
            str | None,
            Field(
                description=(
                    "The initiative's id; completion suggests the ids of the account's "
                    "initiatives whose title holds what was typed."
                )
            ),
        ] = None,
    ) -> str:
        return initiative_review(await toolbox(), initiative_id)

    functions = {
        "monthly_roi_review": review,
        "initiatives_over_budget": over_budget,
        "what_to_retire": retire,
        "initiative_review": one,
    }
    for name, (title, description) in PROMPT_TEXTS.items():
        server.prompt(name=name, title=title, description=description)(functions[name])


class PromptServing(MCPServer[Any]):
    """MCPServer whose prompt requests are checked before the SDK renders them: an unknown
    prompt or argument is a fixed -32602. (An argument that is not a string, null included,
    never reaches here: the SDK refuses the request, -32602 "Invalid request parameters".)"""

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        prompt = next((p for p in await self.list_prompts() if p.name == name), None)
        if prompt is None:
            raise _refused("Unknown prompt")
        taken = sorted(argument.name for argument in prompt.arguments or [])
        if any(key not in taken for key in arguments or {}):
            raise _refused(
                f"This prompt takes only: {', '.join(taken)}."
                if taken
                else "This prompt takes no arguments."
            )
        return await super().get_prompt(name, arguments, context)


__all__ = ["PROMPT_TEXTS", "PromptServing", "register_prompts"]
