"""Walking a list from where a copy stands: the position `airoi pull` and the dlt source keep.

A copy remembers, per list, the `resume_cursor` of the last page it kept and the largest
stamp (`updated_at`, or `deleted_at` for /deletions) it kept. The next walk passes the
cursor and gets only what changed since, none of what it has (SEMANTICS R36). Asking with
`updated_since` instead is the fallback: for a copy that has a stamp and no cursor (made by
an earlier version, or from a service that serves no `resume_cursor`), and for a cursor the
service refuses with 400 (a copy taken from another server, or a service whose cursor secret
changed, R13). The bound is inclusive, so the rows at that moment come once more and the
upsert absorbs them; from its first page on, the walk has a cursor again. A cursor refused as
another account's stops the walk instead: the token reads another account than the copy's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any, Literal

from airoi.client.client import Client, Page
from airoi.client.errors import AiroiError

Start = Literal["cursor", "updated_since", "full"]

# How the service's refusal of a cursor issued to another account begins (SEMANTICS R13;
# tests/client/test_pull.py holds the two to the same words).
ANOTHER_ACCOUNTS_CURSOR = "The cursor was issued to another account"


class AnotherAccountsCopy(AiroiError):
    """The copy's remembered position is another account's: the token reads another account
    than the one the copy holds, and continuing would put the two in one copy."""

    def __init__(
        self, resource: str | None, refused: AiroiError, *, whole_copy: bool = False
    ) -> None:
        self.resource = resource
        self.whole_copy = whole_copy
        written = "nothing" if whole_copy else f"none of {resource}"
        copy = "the copy" if resource is None else f"the copy of {resource}"
        super().__init__(
            refused.status,
            f"{copy} here is of another account than this token's (the "
            "service refused its remembered position as issued to another account); "
            f"{written} was written. Pull this token's account into a new target.",
            refused.request_id,
            body=refused.body,
        )


class TwoAccountsCopy(AiroiError):
    """The copy holds lists of two accounts: some positions the service continued for the
    token, another it refused as another account's. A `--full-refresh` of every list cut off
    before its end leaves a copy so (the lists it reached are the new account's)."""

    def __init__(self, taken: list[str], refused: AnotherAccountsCopy) -> None:
        lists = ", ".join(taken)
        other = refused.resource or "its account position"
        written = "nothing" if refused.whole_copy else f"none of {other}"
        super().__init__(
            refused.status,
            f"the copy here holds two accounts: {lists} of this token's account, {other} of "
            "another (a --full-refresh cut off before its end leaves a copy so); "
            f"{written} was written. --full-refresh (of every list) starts the whole copy "
            "over as this token's account's; or pull into a new target.",
            refused.request_id,
            body=refused.body,
        )


class UnprovenAccountCopy(AiroiError):
    """A list's remembered position is none of the service's any more (its cursor secret
    changed, or the copy came from another server), and none of the copy's rows of it is
    served to the token as the copy holds it: the token may read another account."""

    def __init__(self, resource: str, refused: AiroiError, taken: list[str]) -> None:
        self.resource = resource
        before = (
            f" {', '.join(taken)} went on as this token's account's, so the copy may now hold "
            "two accounts."
            if taken
            else ""
        )
        super().__init__(
            refused.status,
            f"the copy of {resource} here cannot be told to be this token's account's: the "
            "service refused its remembered position as none of its own, and none of the "
            f"copy's {resource} rows it was asked for is served to this token as the copy "
            f"holds it; none of {resource} was written.{before} If this token reads the "
            "copy's account, --full-refresh (of every list) starts the copy over; otherwise "
            "pull into a new target.",
            refused.request_id,
            body=refused.body,
        )


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us(stamp: Any) -> int | None:
    """An API datetime in microseconds since 1970 (as DuckDB's epoch_us), to compare
    whatever its spelling; None if not one."""
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - EPOCH) // timedelta(microseconds=1)


# The rows asked from a moment to find there rows a copy holds (`served_from`): the largest
# page, so that rows of that moment changed since (gone later in the order) leave others.
PROOF_PAGE = 500


def served_from(
    client: Client, resource: str, params: Mapping[str, Any], since: datetime | str
) -> set[tuple[int, int | None]]:
    """The rows a page served to the token from `since` holds, as (id, created_at in
    microseconds): what the account checks of `airoi pull` and the dlt source look for the
    copy's own rows among (SEMANTICS R13)."""
    page = next(client.rows(resource, **params, updated_since=since, limit=PROOF_PAGE).pages())
    return {
        (row["id"], epoch_us(row.get("created_at")))
        for row in page.data
        if isinstance(row.get("id"), int)
    }


def later(current: str | None, candidate: str | None) -> str | None:
    """The later of two API datetimes (either may be None)."""
    if candidate is None:
        return current
    if current is None:
        return candidate
    parse = datetime.fromisoformat
    return candidate if parse(candidate) > parse(current) else current


@dataclass(frozen=True)
class WalkState:
    """Where a copy of one list stands (strings as the API wrote them)."""

    # Where the next walk starts: after the last row kept. A walk cut off resumes here too:
    # within a walk, a page's resume_cursor is its next_cursor.
    cursor: str | None = None
    # The largest stamp kept: what to ask from with updated_since when no cursor can be used.
    updated_since: str | None = None

    def after(self, page: Page, stamp: str) -> WalkState:
        """The state once `page` is kept. Pages come in (stamp, id) order, so the last row's
        stamp is the page's largest."""
        if not page.data:
            # SEMANTICS R36: an empty page's resume_cursor is the cursor it was asked with.
            return self
        last = page.data[-1].get(stamp)
        resume = page.resume_cursor
        if resume is None:
            # A service without resume_cursor (or /budgets): within a walk the next page's
            # cursor is the same position; after the last page, updated_since from the stamp.
            resume = page.next_cursor if page.has_more else None
        return WalkState(resume, later(self.updated_since, last))


class Walk:
    """The pages of one list from `state`; `advance(page)` gives the state once it is kept.

    `open()` asks for the first page at once; iterating asks for it when the first page is
    wanted (in whichever thread asks). Once the first page is in, `start` says how the walk
    began and `refused` holds the 400 when the remembered cursor was given up.
    """

    def __init__(
        self,
        client: Client,
        resource: str,
        params: Mapping[str, Any],
        state: WalkState,
        *,
        stamp: str = "updated_at",
        keep_refused: bool = False,
    ) -> None:
        self.client = client
        self.keep_refused = keep_refused
        self.resource = resource
        self.params = dict(params)
        self.state = state
        self.stamp = stamp
        self.refused: AiroiError | None = None
        self._given_up: str | None = None  # the remembered cursor the service refused
        self.start: Start = "cursor" if state.cursor is not None else self._without_cursor()

    def _without_cursor(self) -> Start:
        return "updated_since" if self.state.updated_since is not None else "full"

    def open(self) -> Iterator[Page]:
        if self.state.cursor is not None:
            pages = self.client.rows(self.resource, **self.params).pages(cursor=self.state.cursor)
            try:
                first = next(pages)
            except AiroiError as exc:
                if exc.status != 400:
                    raise
                if exc.message.startswith(ANOTHER_ACCOUNTS_CURSOR):
                    raise AnotherAccountsCopy(self.resource, exc) from None
                # The cursor is refused (not issued by this service, or not with its current
                # secret). Were it another parameter, the request below fails the same way.
                self.refused = exc
                self._given_up = self.state.cursor
                self.state = WalkState(None, self.state.updated_since)
                self.start = self._without_cursor()
            else:
                return chain([first], pages)
        params = dict(self.params)
        if self.state.updated_since is not None:
            params["updated_since"] = self.state.updated_since
        pages = self.client.rows(self.resource, **params).pages()
        return chain([next(pages)], pages)

    def __iter__(self) -> Iterator[Page]:
        yield from self.open()

    def advance(self, page: Page) -> WalkState:
        state = self.state.after(page, self.stamp)
        if state.cursor is None and self._given_up is not None and self.keep_refused:
            # Asked again from updated_since, nothing served there (its rows deleted since):
            # no cursor to keep. With `keep_refused` the refused one is kept, so the next
            # walk is refused again and its account told again; a stamp alone goes on from
            # there unasked (with another server's rows, under the copy's ids). The dlt
            # source keeps it: any list's kept rows tell its account. `airoi pull` does not:
            # each list is told by its own rows, and a list whose rows were all deleted
            # since would be refused on every run.
            state = WalkState(self._given_up, state.updated_since)
        self.state = state
        return state
