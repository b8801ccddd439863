"""Client: one typed method per endpoint of SPEC 4.A; list methods follow cursors."""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from airoi.client.errors import AiroiError, require
from airoi.tokens import sendable
from airoi.vocabulary import IntegrationStatus, Outcome, ServedList, ValueStatus, Window

if TYPE_CHECKING:
    import pandas  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import pyarrow  # type: ignore[import-untyped, import-not-found, unused-ignore]

Row = dict[str, Any]
DateTimeLike = datetime | date | str  # a date is its first moment, UTC
DateLike = date | str
# SPEC's enumerations, by the names the client has always given them (airoi/vocabulary.py
# needs nothing of the server).
DeletedResource = ServedList

API_PATH = "/api/v1"
MAX_PAGE_SIZE = 500
RETRIED_STATUSES = frozenset({429, 503})

log = logging.getLogger("airoi.client")


def _datetime_text(value: DateTimeLike) -> str:
    """A datetime as the API reads it: ISO 8601, UTC with Z (a naive datetime is UTC)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, datetime):  # a date: from its first moment, UTC
        value = datetime.combine(value, time.min)
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(timespec="milliseconds") + "Z"


def _date_text(value: DateLike) -> str:
    if isinstance(value, datetime):  # a datetime is a date too; keep only the day
        return value.date().isoformat()
    return value if isinstance(value, str) else value.isoformat()


def _query(params: Mapping[str, Any]) -> dict[str, str]:
    """Drop unset parameters and spell the rest as the API reads them."""
    query: dict[str, str] = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            query[name] = "true" if value else "false"
        elif isinstance(value, datetime):
            query[name] = _datetime_text(value)
        elif isinstance(value, date):
            query[name] = value.isoformat()
        else:
            query[name] = str(value)
    return query


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """The wait a Retry-After header asks for: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _error_from(response: httpx.Response) -> AiroiError:
    body: dict[str, Any] | None = None
    message = response.reason_phrase or "The request failed."
    request_id = response.headers.get("x-request-id")
    try:
        decoded = response.json()
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        body = decoded
        error = decoded.get("error")
        if isinstance(error, dict):
            message = str(error.get("message") or message)
            request_id = request_id or error.get("request_id")
    return AiroiError(response.status_code, message, request_id, body=body)


@dataclass(frozen=True)
class Page:
    """One page of a list: its rows, and the cursors that continue after it."""

    data: list[Row]
    has_more: bool
    next_cursor: str | None
    cursor: str | None  # the cursor this page was asked for with (None for the first)
    # After this page's last row, the last page included: passed as `cursor` on a later run
    # (with the same filters) it serves only what changed since (SEMANTICS R36). None on
    # /budgets, on a page with no rows asked without a cursor, and from a service that
    # does not serve it.
    resume_cursor: str | None = None


class ListResult:
    """A list endpoint's rows, fetched lazily page by page as it is iterated.

    Iterating yields every row of every page (like Stripe's `auto_paging_iter`); `pages()`
    yields the pages with their cursors, for callers that remember where they stopped.
    Each iteration walks again from the first page (or from `cursor`).
    """

    def __init__(
        self,
        client: Client,
        resource: str,
        params: Mapping[str, Any],
        *,
        cursor: str | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.params = _query(params)
        self.cursor = cursor

    def pages(self, cursor: str | None = None) -> Iterator[Page]:
        cursor = cursor if cursor is not None else self.cursor
        while True:
            query = dict(self.params)
            if cursor is not None:
                query["cursor"] = cursor
            body = self.client.get_json(f"/{self.resource}", query)
            page_info = body.get("page") or {}
            page = Page(
                data=list(body.get("data") or []),
                has_more=bool(page_info.get("has_more")),
                next_cursor=page_info.get("next_cursor"),
                cursor=cursor,
                resume_cursor=page_info.get("resume_cursor"),
            )
            yield page
            if not page.has_more or not page.next_cursor:
                return
            cursor = page.next_cursor

    def __iter__(self) -> Iterator[Row]:
        for page in self.pages():
            yield from page.data

    def auto_paging_iter(self) -> Iterator[Row]:
        return iter(self)

    def to_list(self) -> list[Row]:
        return list(self)

    def to_arrow(self, *, progress: bool | None = None) -> pyarrow.Table:
        """Every row as an Arrow table: integers (cents among them) int64, dates date32,
        datetimes UTC timestamps, with the list's columns even when it has no rows.

        Nested objects are flattened with `_` (owner -> owner_id, owner_name). Each page
        becomes Arrow as it arrives, so the decoded rows of only one page are held at a
        time. `progress`: a line counting the rows fetched; None shows it when standard
        error is a terminal (so not in a notebook, unless True). Needs pyarrow
        (`pip install -e '.[dataframe]'`; MissingExtraError says so before any row is
        asked).
        """
        require("to_arrow()", "dataframe", "pyarrow")
        return self._arrow(progress)

    def to_pandas(self, *, progress: bool | None = None) -> pandas.DataFrame:
        """Every row as a DataFrame (see `to_arrow`): every `*_cents` column `Int64`
        whether or not a value is null, other integers `int64` where the list never serves
        a null and `Int64` where it may, dates `datetime64[ms]`, datetimes
        `datetime64[us, UTC]`, lists Arrow lists of strings. Needs pandas and pyarrow."""
        require("to_pandas()", "dataframe", "pandas", "pyarrow")
        from airoi.client.frames import arrow_to_pandas

        return arrow_to_pandas(self._arrow(progress), self.resource)

    def to_polars(self, *, progress: bool | None = None) -> Any:
        """Every row as a polars DataFrame, made from `to_arrow`'s table so that its types
        carry over (dates `Date`, datetimes `Datetime("us", "UTC")`). Needs polars and
        pyarrow (`pip install -e '.[polars]'`)."""
        require("to_polars()", "polars", "polars", "pyarrow")
        from airoi.client.frames import arrow_to_polars

        return arrow_to_polars(self._arrow(progress))

    def _arrow(self, progress: bool | None) -> pyarrow.Table:
        from airoi.client.frames import concat_pages, rows_to_arrow
        from airoi.client.progress import counting

        tables: list[pyarrow.Table] = []
        with counting(self.resource, progress) as advance:
            for page in self.pages():
                tables.append(rows_to_arrow(page.data, self.resource))
                advance(len(page.data))
        return concat_pages(tables, self.resource)


def _address_alone(base_url: str) -> str:
    """The base URL, refused (AiroiError) when it holds a query or a fragment, which every
    request would carry and no endpoint takes ("Unknown query parameter 'include_sample'"),
    or when an http(s) URL names no host. Neither is repeated: a query can hold a token."""
    try:
        parts = urlsplit(base_url)
        host = parts.hostname
    except ValueError:  # an unclosed [ of an IPv6 address, say
        raise AiroiError(0, "The base URL is not a URL that can be asked.") from None
    address = without_userinfo(urlunsplit((*parts[:3], "", "")))
    if parts.query or parts.fragment:
        raise AiroiError(
            0,
            f"The base URL holds a query or a fragment (after ? or #), which no request of the "
            f"API takes: give the service's address alone ({address}).",
        )
    if parts.scheme.lower() in ("http", "https") and not host:
        raise AiroiError(
            0, f"{address} names no host: give the service's address (https://host/api/v1)."
        )
    return base_url


def without_userinfo(url: str) -> str:
    """`url` without the user:password@ of its authority, if it has one: a credential never
    goes into a message (which ends up on a terminal or in a log). Read as text, so that an
    address no parser accepts (a message is often about one) is shown too, never refused."""
    scheme, separator, rest = url.partition("://")
    if not separator or any(mark in scheme for mark in "/?#@"):
        # No scheme: a "://" further on (in a query, say) is not one.
        scheme, separator, rest = "", "", url
    ends = [at for at in (rest.find(mark) for mark in "/?#") if at >= 0]
    end = min(ends, default=len(rest))
    authority = rest[:end]
    if "@" not in authority:
        return url
    return f"{scheme}{separator}{authority.rpartition('@')[2]}{rest[end:]}"


def sendable_token(token: str) -> str:
    """`token` without the whitespace around it (a token read from a file ends in a line
    break). One a header cannot carry is refused here, never quoted: the HTTP library's own
    error would quote the header, and the token with it."""
    token = token.strip()
    if not token:
        raise AiroiError(0, "No token was given.")
    if not sendable(token):
        raise AiroiError(
            0,
            "The token cannot be sent: it holds a space, a line break or a character that is "
            "not ASCII (the token is not shown).",
        )
    return token


class Client:
    """The airoi HTTP API for one token.

    `base_url` is the API's base address (`http://host:8000/api/v1`); a bare origin
    (`http://host:8000`) gets `/api/v1` added, and a user:password@ in it is dropped (the
    API takes only the token). Requests answered 429 or 503 are retried up to
    `max_retries` times, waiting as `Retry-After` asks (or backing off exponentially when
    it does not say), and never waiting more than `max_wait` seconds in total for one
    request. Every failure is raised as `AiroiError`. `on_wait`, when
    given, is told of each wait before it starts: the seconds, and why (the refusal, or the
    failure to get an answer), as an `AiroiError`. Without it, a request that gets no
    answer at all (the service is down, say) is logged at once as a warning on the
    `airoi.client` logger, naming the base URL (never the token), before it is retried.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 30,
        max_retries: int = 5,
        max_wait: float = 120.0,
        page_size: int = MAX_PAGE_SIZE,
        sleep: Callable[[float], None] | None = None,
        on_wait: Callable[[float, AiroiError], None] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        base = _address_alone(base_url).rstrip("/")
        if not base.endswith(API_PATH):
            base += API_PATH
        # What is asked and what messages name: the address without any user:password@ it was
        # given with. The API takes only the token; httpx would send a user:password as Basic
        # credentials in place of it.
        self.base_url = without_userinfo(base)
        token = sendable_token(token)
        self.max_retries = max_retries
        self.max_wait = max_wait
        self.page_size = page_size
        self._closed = threading.Event()
        self.sleep = sleep if sleep is not None else self._wait
        self.on_wait = on_wait
        self.requests_sent = 0
        try:
            self._http = httpx.Client(
                base_url=self.base_url,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json",
                    # The service gzips a page for a client that asks: about a tenth the bytes.
                    "Accept-Encoding": "gzip",
                },
                timeout=timeout,
                transport=transport,
            )
        except httpx.InvalidURL as exc:  # a port that is not a number, say
            raise AiroiError(0, f"{self.base_url} is not a URL that can be asked.") from exc

    def close(self) -> None:
        self._closed.set()  # ends a wait in progress, in whichever thread it is
        self._http.close()

    def _wait(self, seconds: float) -> None:
        """Sleep `seconds` before asking again, unless the client is closed meanwhile: a
        pull interrupted while a page is fetched ahead in another thread must not sit out
        that page's Retry-After (up to `max_wait`) before the process can end."""
        if self._closed.wait(seconds):
            raise AiroiError(0, "The client was closed while it waited to ask again.")

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        return float(min(30.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2))

    def get_json(self, path: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """GET `path` (relative to the base URL) and decode it, retrying 429 and 503."""
        waited = 0.0
        attempt = 0
        while True:
            self.requests_sent += 1
            try:
                response = self._http.get(path, params=dict(params or {}))
            except httpx.LocalProtocolError as exc:
                # The request could not be written (a header value); its text quotes headers.
                raise AiroiError(0, f"The request to {self.base_url} could not be sent.") from exc
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                # A base URL without http:// or https:// fails the same way every time. The
                # error's own text is left out: it can quote what stood before an "@".
                raise AiroiError(0, f"{self.base_url} is not an http:// or https:// URL.") from exc
            except httpx.TransportError as exc:
                # A GET is safe to repeat; a connection that fails counts as a retry.
                error = AiroiError(0, f"No response from {self.base_url}: {exc}")
                if attempt >= self.max_retries:
                    raise error from exc
                delay = self._backoff(attempt)
                if attempt == 0 and self.on_wait is None:
                    # Said at once, not after the retries (12 s with the defaults); a caller
                    # that gave `on_wait` is told of this wait there instead.
                    log.warning(
                        "%s; asking again up to %d times within %.0f s.",
                        error.message,
                        self.max_retries,
                        self.max_wait,
                    )
            else:
                if response.status_code == 200:
                    try:
                        body = response.json()
                    except ValueError:  # a proxy's HTML page, a body cut short
                        body = None
                    if not isinstance(body, dict):
                        raise AiroiError(
                            200,
                            "The response is not a JSON object.",
                            response.headers.get("x-request-id"),
                        )
                    return body
                error = _error_from(response)
                if response.status_code not in RETRIED_STATUSES or attempt >= self.max_retries:
                    raise error
                asked = retry_after_seconds(response.headers.get("retry-after"))
                delay = asked if asked is not None else self._backoff(attempt)
                if waited + delay > self.max_wait:
                    raise error
            if waited + delay > self.max_wait:
                raise AiroiError(0, f"No response from {self.base_url} in {waited:.0f} s.")
            if self.on_wait is not None:
                self.on_wait(delay, error)
            self.sleep(delay)
            waited += delay
            attempt += 1

    def _list(self, resource: str, params: Mapping[str, Any]) -> ListResult:
        limit = params.get("limit")
        merged = {**params, "limit": limit if limit is not None else self.page_size}
        if merged.get("updated_since") is not None:
            merged["updated_since"] = _datetime_text(merged["updated_since"])
        for name in ("period_from", "period_to"):
            if merged.get(name) is not None:
                merged[name] = _date_text(merged[name])
        cursor = merged.pop("cursor", None)
        return ListResult(self, resource, merged, cursor=cursor)

    # -- endpoints (SPEC 4.A.3 to 4.A.12) ------------------------------------------------

    def roi(self, *, window: Window | None = None, initiative_id: int | None = None) -> Row:
        """The ROI summary (SPEC 2.10) over `window` for the portfolio or one initiative."""
        return self.get_json("/roi", _query({"window": window, "initiative_id": initiative_id}))

    def initiative(self, initiative_id: int) -> Row:
        return self.get_json(f"/initiatives/{int(initiative_id)}")

    def initiatives(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        include_sample: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "initiatives",
            {
                "updated_since": updated_since,
                "include_sample": include_sample,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def cost_entries(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        initiative_id: int | None = None,
        period_from: DateLike | None = None,
        period_to: DateLike | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "cost_entries",
            {
                "updated_since": updated_since,
                "initiative_id": initiative_id,
                "period_from": period_from,
                "period_to": period_to,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def value_entries(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        initiative_id: int | None = None,
        period_from: DateLike | None = None,
        period_to: DateLike | None = None,
        status: ValueStatus | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "value_entries",
            {
                "updated_since": updated_since,
                "initiative_id": initiative_id,
                "period_from": period_from,
                "period_to": period_to,
                "status": status,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def metrics(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "metrics", {"updated_since": updated_since, "limit": limit, "cursor": cursor}
        )

    def observations(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        initiative_id: int | None = None,
        metric_key: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "observations",
            {
                "updated_since": updated_since,
                "initiative_id": initiative_id,
                "metric_key": metric_key,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def budgets(
        self,
        *,
        initiative_id: int | None = None,
        include_sample: bool | None = None,
        budgeted: bool | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        """Budget rows (SPEC 4.A.10); there is no updated_since: budgets are re-read whole."""
        return self._list(
            "budgets",
            {
                "initiative_id": initiative_id,
                "include_sample": include_sample,
                "budgeted": budgeted,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def decisions(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        initiative_id: int | None = None,
        outcome: Outcome | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "decisions",
            {
                "updated_since": updated_since,
                "initiative_id": initiative_id,
                "outcome": outcome,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def integrations(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        platform: str | None = None,
        status: IntegrationStatus | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        return self._list(
            "integrations",
            {
                "updated_since": updated_since,
                "platform": platform,
                "status": status,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def deletions(
        self,
        *,
        updated_since: DateTimeLike | None = None,
        resource: DeletedResource | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> ListResult:
        """Tombstones `{resource, id, deleted_at}` of rows a load removed (SEMANTICS R34);
        `updated_since` matches `deleted_at`."""
        return self._list(
            "deletions",
            {
                "updated_since": updated_since,
                "resource": resource,
                "limit": limit,
                "cursor": cursor,
            },
        )

    def rows(self, resource: str, /, **params: Any) -> ListResult:
        """Any list endpoint by name, for generic callers such as `airoi pull`; positional,
        so that /deletions' own `resource=` filter can be passed."""
        return self._list(resource, params)
