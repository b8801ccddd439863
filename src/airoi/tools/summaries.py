"""The one line each tool result's text content starts with (the JSON follows it).

An assistant that reads only text gets the gist at once, amounts as money people read
("$1,234.56"), while `structuredContent` keeps the integer cents (SPEC 1: never formatted
strings there). Each function takes the result model its tool returned.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any, Final

# Symbols written before the amount; any other currency is written as its code after it.
_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "CAD": "CA$", "AUD": "A$"}


# Characters a line shows escaped: controls (a new line would read as the tool's own next line),
# format characters (the bidirectional overrides and isolates that reorder what is read, the
# zero-width ones), separators of lines and paragraphs, and what is not a character at all.
_HIDDEN: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _visible(char: str) -> str:
    if unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def neutralised(text: str) -> str:
    """`text` with every control, format (bidirectional override, zero-width) and line
    separating character written as its escape, so it reads as it is stored, on one line."""
    return "".join(map(_visible, text))


def quoted(text: str | None) -> str:
    """Stored text as a summary line shows it: in quotes, neutralised, so a title reads as a
    title and never as the tool's own words. The JSON beside the line keeps it exact."""
    if text is None:
        return "(none)"
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{neutralised(escaped)}"'


def money(cents: int | None, currency: str | None) -> str:
    """`cents` hundredths of `currency` as people write it: $1,234.56, -€5.00, 12.30 CHF."""
    if cents is None:
        return "n/a"
    sign = "-" if cents < 0 else ""
    whole, part = divmod(abs(cents), 100)
    amount = f"{whole:,}.{part:02d}"
    code = (currency or "").upper()
    symbol = _SYMBOLS.get(code)
    if symbol is not None:
        return f"{sign}{symbol}{amount}"
    return f"{sign}{amount} {code}".rstrip()


def _percent(roi: float | None) -> str:
    return "n/a (no cost)" if roi is None else f"{roi * 100:,.2f}%"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _more(has_more: bool) -> str:
    return "; more follow: pass next_cursor as cursor" if has_more else ""


def roi_summary(r: Any) -> str:
    scope = "portfolio" if r.scope.type == "portfolio" else f"initiative {quoted(r.scope.title)}"
    c = r.currency
    return (
        f"ROI {r.period.label}, {scope}: approved value {money(r.approved_value_cents, c)}, "
        f"cost {money(r.total_cost_cents, c)}, net value {money(r.net_value_cents, c)}, "
        f"ROI {_percent(r.roi)}."
    )


def roi_breakdown(r: Any) -> str:
    c = r.currency
    cost = sum(row.total_cost_cents or 0 for row in r.data)
    vendor = "" if r.vendor_id is None else f" (vendor {r.vendor_id}'s cost only)"
    line = f"ROI {r.period.label} by {r.by}{vendor}: {_count(len(r.data), 'row')} on this page"
    if r.data and r.by == "value_status":  # SEMANTICS R37: value alone, cost fields null
        line += f", value {money(sum(row.value_cents or 0 for row in r.data), c)}"
    elif r.data:
        line += f", cost {money(cost, c)}"
        values = [row.approved_value_cents for row in r.data]
        if all(v is not None for v in values):
            line += f", approved value {money(sum(values), c)}"
    return line + _more(r.has_more) + "."


def initiative_list(r: Any) -> str:
    return (
        f"{_count(len(r.initiatives), 'initiative')} on this page of {r.total:,} matching"
        f"{_more(r.has_more)}."
    )


def initiative_detail(r: Any) -> str:
    b = r.budget
    c = b.currency or r.business_case.currency
    line = f"{quoted(r.title)} ({r.stage})"
    if not b.budgeted:
        return line + ": no approved budget."
    if b.status == "scheduled":  # SEMANTICS R25: every budget figure 0; the spend stands apart
        spent = money(b.spent_before_budget_cents, c)
        return f"{line}: budget not begun (scheduled), spent {spent} so far."
    line += (
        f": budget to date {money(b.budget_to_date_cents, c)}, spent "
        f"{money(b.actual_to_date_cents, c)} ({b.status.replace('_', ' ')})"
    )
    if b.spent_before_budget_cents:  # R21: in neither figure above
        line += f", and {money(b.spent_before_budget_cents, c)} before it began"
    return line + "."


def search(r: Any) -> str:
    more = "; more matched than are shown" if r.has_more else ""
    return f"{_count(len(r.results), 'hit')} for {quoted(r.query)}{more}."


def integration_list(r: Any) -> str:
    attention = sum(1 for i in r.integrations if i.status != "active" or i.reauth_required)
    return (
        f"{_count(len(r.integrations), 'connection')} on this page of {r.total:,}, "
        f"{attention:,} not active or needing reconnection{_more(r.has_more)}."
    )


def help_article(r: Any) -> str:
    return f"Help article {quoted(r.title)} ({r.slug})."


def platform_setup_guide(r: Any) -> str:
    if r.has_working_connection:
        state = "this account has a working connection"
    elif r.has_connection:
        state = "this account has a connection, none of them working"
    else:
        state = "this account has no connection to it"
    return f"How to connect {r.name} ({r.auth_type}); {state}."


def decision_list(r: Any) -> str:
    line = f"{_count(len(r.decisions), 'decision')} on this page"
    if r.decisions:
        last = r.decisions[-1]
        line += f"; the last: {last.outcome_label} on {quoted(last.subject_title)}"
        if last.net_cents is not None:
            line += f", net {money(last.net_cents, last.currency)} then"
    return line + _more(r.has_more) + "."


def business_case_list(r: Any) -> str:
    rows = r.business_cases
    line = f"{_count(len(rows), 'initiative')} on this page"
    cased = [row for row in rows if row.has_business_case]
    if rows:
        line += f", {len(cased):,} with a business case"
    behind = sum(
        1
        for row in cased
        if row.value_realization_ratio is not None and row.value_realization_ratio < 1
    )
    if behind:
        line += f", {behind:,} with less value realized than due by now"
    paid = sum(1 for row in rows if row.payback_month is not None)
    if rows:
        line += f", {paid:,} paid back"
    return line + _more(r.has_more) + "."


def reading_list(r: Any) -> str:
    keys = sorted({row.metric_key for row in r.readings if row.metric_key})
    shown = ", ".join(quoted(key) for key in keys[:3])
    of = f" of {shown}{' and others' if len(keys) > 3 else ''}" if keys else ""
    return f"{_count(len(r.readings), 'metric reading')}{of} on this page{_more(r.has_more)}."


SUMMARIES: dict[str, Callable[[Any], str]] = {
    "get_roi_summary": roi_summary,
    "get_roi_breakdown": roi_breakdown,
    "list_initiatives": initiative_list,
    "get_initiative": initiative_detail,
    "search": search,
    "list_integrations": integration_list,
    "get_help_article": help_article,
    "get_platform_setup_guide": platform_setup_guide,
    "get_business_cases": business_case_list,
    "list_decisions": decision_list,
    "list_metric_readings": reading_list,
}
