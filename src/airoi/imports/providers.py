"""The model providers' cost reports (IMPORT.md): OpenAI's `GET /v1/organization/costs` and
Anthropic's `GET /v1/organizations/cost_report`, from saved responses or asked of the API.

A saved file holds one response page, a JSON array of pages, or JSON Lines of pages. Numbers
are read as decimals, never through a binary float: OpenAI's `amount.value` is in units of
`amount.currency` (lower case: `usd` is USD); Anthropic's `amount` is a decimal string in
the currency's lowest unit (cents).

With `--api` the pages are asked for one after another, following `next_page` to the end;
429 and 5xx answers are tried again after the provider's `Retry-After` (bounded), and every
wait and count has a limit. The admin key is read from the environment and never shown.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

from airoi.imports import cells
from airoi.imports.cells import BadCell
from airoi.imports.grouping import EXACT, EntryKey, Groups
from airoi.imports.problems import ImportRefused, Problems, where
from airoi.imports.rules import Rules

DEFAULT_COST_TYPE: Final = "tokens"
MAX_FILE_BYTES: Final = 512 << 20  # a saved response file read whole (JSON Lines: per line)
MAX_PAGES: Final = 10_000
MAX_TRIES: Final = 6  # one ask and five more after a 429 or 5xx
MAX_RETRY_WAIT: Final = 60.0  # seconds, whatever Retry-After asks
MAX_TOTAL_WAIT: Final = 300.0
TIMEOUT: Final = 30.0
DEFAULT_DAYS: Final = 30  # --since, when not given: this many days before --until


@dataclass(frozen=True)
class Provider:
    name: str  # openai, anthropic: the ref's first part and the connection's platform
    vendor: str
    fields: tuple[str, ...]  # what a rule's where may name
    unmatched_by: str  # the report's word for what unmatched rows are counted by
    key_variable: str
    base_variable: str
    default_base: str
    path: str  # below the API's /v1
    page_limit: int

    def read_page(
        self,
        page: Any,
        label: str,
        rules: Rules,
        groups: Groups,
        problems: Problems,
        dates: tuple[date | None, date | None],
    ) -> None:
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            problems.add(f"{label}: not a response page of {self.vendor}'s cost report (no data)")
            return
        match = rules.matcher()
        names = rules.fields
        cost_type = rules.cost_type or DEFAULT_COST_TYPE
        for b, bucket in enumerate(page["data"]):
            here = f"{label}, data[{b}]"
            if not isinstance(bucket, dict) or not isinstance(bucket.get("results"), list):
                problems.add(f"{here}: not a time bucket (no results)")
                continue
            try:
                start, end = self.bucket_times(bucket)
            except _Bad as exc:
                problems.add(f"{here}, column {exc.column}: {exc.message}")
                continue
            period_start = cells.start_date(start)
            groups.billing_accounts.add(None)
            low, high = dates
            outside = (low is not None and period_start < low) or (
                high is not None and period_start > high
            )
            for r, result in enumerate(bucket["results"]):
                at = f"{here}.results[{r}]"
                groups.rows_read += 1
                if not isinstance(result, dict):
                    problems.add(f"{at}: not an object")
                    continue
                try:
                    amount_cents, currency = self.amount(result)
                except _Bad as exc:
                    problems.add(f"{at}, column {exc.column}: {exc.message}")
                    continue
                if outside:
                    groups.rows_outside += 1
                    continue
                groups.saw(period_start, None)
                values = [_field_text(result.get(name)) for name in names]
                rule = match(values)
                if rule is None:
                    named = (_field_text(result.get(self.unmatched_by)) or "-",)
                    groups.miss(named, currency, amount_cents, 1, at)
                    continue
                entry = EntryKey(
                    initiative_id=rule.initiative_id,
                    period_start=period_start,
                    period_end=cells.end_date(end),
                    currency=currency,
                    cost_category=rule.cost_category or "opex",
                    cost_type=rule.cost_type or cost_type,
                    vendor_name=rule.vendor_name or self.vendor,
                    description=self.description(result),
                    billing_account=None,
                )
                groups.add(entry, amount_cents, 1, at)

    def bucket_times(self, bucket: Mapping[str, Any]) -> tuple[datetime, datetime]:
        if self.name == "openai":
            names = ("start_time", "end_time")
            try:
                start, end = (cells.unix_instant(bucket.get(name)) for name in names)
            except BadCell as exc:
                column = names[0] if not _is_unix(bucket.get(names[0])) else names[1]
                raise _Bad(column, str(exc)) from None
        else:
            names = ("starting_at", "ending_at")
            moments = []
            for name in names:
                try:
                    moment = cells.instant(bucket.get(name))
                except BadCell as exc:
                    raise _Bad(name, str(exc)) from None
                if moment is None:
                    raise _Bad(name, "required")
                moments.append(moment)
            start, end = moments
        if end <= start:
            raise _Bad(names[1], f"must be later than {names[0]}")
        return start, end

    def amount(self, result: Mapping[str, Any]) -> tuple[Decimal | None, str]:
        """The result's amount in cents (None when null) and its currency."""
        if self.name == "openai":
            money = result.get("amount")
            if money is None:
                return None, "USD"
            if not isinstance(money, dict):
                raise _Bad("amount", "not an object with value and currency")
            raw, code, column = money.get("value"), money.get("currency"), "amount.value"
            if isinstance(raw, str):
                raise _Bad(column, "must be a JSON number (dollars)")
        else:
            raw, code, column = result.get("amount"), result.get("currency"), "amount"
            if raw is not None and not isinstance(raw, str):
                raise _Bad(column, "must be a decimal string (cents)")
        try:
            value = cells.decimal(raw)
            currency = cells.currency(code)
        except BadCell as exc:
            raise _Bad(column if raw is not None else "currency", str(exc)) from None
        if currency is None:
            if value is None:
                return None, "USD"
            raise _Bad("amount.currency" if self.name == "openai" else "currency", "required")
        if value is None:
            return None, currency
        return (value.scaleb(2, EXACT) if self.name == "openai" else value), currency

    def description(self, result: Mapping[str, Any]) -> str | None:
        if self.name == "openai":
            return _field_text(result.get("line_item")) or "OpenAI usage"
        return _field_text(result.get("description")) or _field_text(result.get("model"))


class _Bad(Exception):
    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column = column
        self.message = message


def _is_unix(value: Any) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def _field_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, default=str)


OPENAI: Final = Provider(
    name="openai",
    vendor="OpenAI",
    fields=("project_id", "line_item"),
    unmatched_by="project_id",
    key_variable="OPENAI_ADMIN_KEY",
    base_variable="OPENAI_BASE_URL",
    default_base="https://api.openai.com/v1",
    path="/organization/costs",
    page_limit=180,
)
ANTHROPIC: Final = Provider(
    name="anthropic",
    vendor="Anthropic",
    fields=(
        "workspace_id",
        "description",
        "model",
        "cost_type",
        "token_type",
        "service_tier",
        "context_window",
    ),
    unmatched_by="workspace_id",
    key_variable="ANTHROPIC_ADMIN_KEY",
    base_variable="ANTHROPIC_BASE_URL",
    default_base="https://api.anthropic.com",
    path="/organizations/cost_report",
    page_limit=31,
)
PROVIDERS: Final = {provider.name: provider for provider in (OPENAI, ANTHROPIC)}


# ------------------------------------------------------------------ saved responses


def _loads(text: str | bytes) -> Any:
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def _pages_of(path: Path) -> Iterator[tuple[str, Any]]:
    """(label, page) of a saved file; raises ValueError or OSError when it cannot be read."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        first = handle.readline(MAX_FILE_BYTES + 1)
        rest = handle.read(1)
    lines = first.strip() and rest
    if lines:
        try:
            head = _loads(first)
        except ValueError:
            head = None
        if isinstance(head, dict):  # JSON Lines: one page a line
            with path.open("rb") as handle:
                for number, line in enumerate(handle, start=1):
                    if len(line) > MAX_FILE_BYTES:
                        raise ValueError(f"line {number} is larger than {MAX_FILE_BYTES:,} bytes")
                    if line.strip():
                        yield f"line {number}", _loads(line)
            return
    if size > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES:,} bytes (save it as JSON Lines)")
    document = _loads(path.read_bytes())
    if isinstance(document, list):
        for number, page in enumerate(document, start=1):
            yield f"page {number}", page
    else:
        yield "page 1", document


def read_saved(
    provider: Provider,
    paths: Sequence[Path],
    rules: Rules,
    *,
    dates: tuple[date | None, date | None],
    problems: Problems,
) -> Groups:
    groups = Groups(provider.name)
    for path in paths:
        try:
            for label, page in _pages_of(path):
                provider.read_page(page, where(path, label), rules, groups, problems, dates)
        except (OSError, ValueError, RecursionError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:200]
            problems.add(
                f"{where(path)}: cannot be read as saved {provider.vendor} cost "
                f"responses ({reason})"
            )
    return groups


# ------------------------------------------------------------------ the API


def api_window(since: date | None, until: date | None, today: date) -> tuple[date, date]:
    """The days asked for, both included: --until defaults to today, --since to
    DEFAULT_DAYS days before it."""
    last = until or today
    first = since or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise ImportRefused(["--since: must not be later than --until"])
    return first, last


def _endpoint(provider: Provider, base: str) -> str:
    base = base.rstrip("/")
    return base + provider.path if base.endswith("/v1") else base + "/v1" + provider.path


def _retry_after(value: str | None, attempt: int) -> float:
    if value:
        try:
            seconds = float(value)
        except ValueError:
            moment = email.utils.parsedate_to_datetime(value)
            if moment is not None:
                seconds = (moment - datetime.now(UTC)).total_seconds()
            else:
                seconds = 2.0**attempt
        return min(max(seconds, 0.0), MAX_RETRY_WAIT)
    return min(2.0**attempt, MAX_RETRY_WAIT)


def fetch_pages(
    provider: Provider,
    environ: Mapping[str, str],
    first: date,
    last: date,
    *,
    sleep: Callable[[float], None] = time.sleep,
    on_page: Callable[[int], None] | None = None,
) -> Iterator[tuple[str, Any]]:
    """Every page of the report for [first, last], `next_page` followed to the end."""
    import httpx

    key = environ.get(provider.key_variable)
    if not key:
        raise ImportRefused([f"{provider.key_variable}: not set; --api reads the admin key there"])
    url = _endpoint(provider, environ.get(provider.base_variable) or provider.default_base)
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    end = datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1)
    if provider.name == "openai":
        headers = {"Authorization": f"Bearer {key}"}
        params: list[tuple[str, str | int | float | bool | None]] = [
            ("start_time", str(int(start.timestamp()))),
            ("end_time", str(int(end.timestamp()))),
            ("bucket_width", "1d"),
            ("group_by", "project_id"),
            ("group_by", "line_item"),
            ("limit", str(provider.page_limit)),
        ]
    else:
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
        params = [
            ("starting_at", start.strftime("%Y-%m-%dT%H:%M:%SZ")),
            ("ending_at", end.strftime("%Y-%m-%dT%H:%M:%SZ")),
            ("bucket_width", "1d"),
            ("group_by[]", "workspace_id"),
            ("group_by[]", "description"),
            ("limit", str(provider.page_limit)),
        ]
    waited = 0.0
    next_page: str | None = None
    with httpx.Client(timeout=TIMEOUT, headers=headers, follow_redirects=False) as client:
        for number in range(1, MAX_PAGES + 1):
            asked = params + ([("page", next_page)] if next_page else [])
            for attempt in range(MAX_TRIES):
                try:
                    response = client.get(url, params=asked)
                except httpx.TimeoutException:
                    status, retry = None, None
                except httpx.HTTPError as exc:
                    raise ImportRefused(
                        [
                            f"{provider.vendor} API: page {number}: cannot be reached "
                            f"({type(exc).__name__})"
                        ]
                    ) from None
                else:
                    status, retry = response.status_code, response.headers.get("retry-after")
                    if status == 200:
                        break
                    if status != 429 and status < 500:
                        raise ImportRefused([_refusal(provider, number, status)])
                pause = _retry_after(retry, attempt)
                if attempt == MAX_TRIES - 1 or waited + pause > MAX_TOTAL_WAIT:
                    said = "timed out" if status is None else f"answered {status}"
                    raise ImportRefused(
                        [
                            f"{provider.vendor} API: page {number}: {said} {attempt + 1} times; "
                            "try again later"
                        ]
                    )
                waited += pause
                sleep(pause)
            try:
                page = _loads(response.content)
            except ValueError:
                raise ImportRefused(
                    [f"{provider.vendor} API: page {number}: the answer is not JSON"]
                ) from None
            yield f"{provider.vendor} API: page {number}", page
            if on_page is not None:
                on_page(number)
            more = isinstance(page, dict) and page.get("has_more") is True
            next_page = page.get("next_page") if isinstance(page, dict) else None
            if not more or not isinstance(next_page, str) or not next_page:
                return
        raise ImportRefused([f"{provider.vendor} API: more than {MAX_PAGES:,} pages"])


def _refusal(provider: Provider, number: int, status: int) -> str:
    if status in (401, 403):
        return (
            f"{provider.vendor} API: page {number}: answered {status}; "
            f"{provider.key_variable} must hold an admin key of the organization"
        )
    return f"{provider.vendor} API: page {number}: answered {status}"


def read_api(
    provider: Provider,
    environ: Mapping[str, str],
    rules: Rules,
    *,
    window: tuple[date, date],
    dates: tuple[date | None, date | None],
    problems: Problems,
    sleep: Callable[[float], None] = time.sleep,
) -> Groups:
    groups = Groups(provider.name)
    for label, page in fetch_pages(provider, environ, *window, sleep=sleep):
        provider.read_page(page, label, rules, groups, problems, dates)
    return groups
