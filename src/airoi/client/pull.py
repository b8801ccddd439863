"""`airoi pull`: every list resource of the account into DuckDB, Parquet or CSV, incrementally.

Per resource the store remembers the `resume_cursor` of the last page it wrote and asks
with it next time: the service serves only the rows changed since, none of those it has,
so a run with nothing changed reads no row again (SEMANTICS R36). It also remembers the
largest `updated_at` written, to ask from with `updated_since` when there is no cursor to
use: a store written by an earlier version of `airoi pull` (which remembered only that),
or a cursor the service refuses (see `airoi.client.walk`). Rows are written in batches of
whole pages (`batch_rows`), each in one DuckDB transaction with the position after them, so
an interruption anywhere neither loses nor duplicates a row: the next run asks again for
the pages after the last batch written. The next page is fetched while a page is written
(`read_ahead`).

Then /deletions, with a cursor of its own: each tombstone removes the row of its resource
and id unless the stored row's `updated_at` is later than `deleted_at` (the row was given
again, SEMANTICS R34), in batches written with their position in the same way. Because of
that comparison the order of the two walks does not matter: a row deleted and given again,
or given again and deleted, ends as the service has it whichever walk sees it first.

Budgets have no `updated_since` (SPEC 4.A.10): they are re-read whole into a staging table
that replaces the previous one when the walk ends (so an initiative's tombstone needs no
work there).

Nothing is created before the first write: a pull refused at its first request leaves no
file and no directory. `--full-refresh` drops a list's copy with its walk's first batch.
The copy itself (its tables or files, and the positions beside them) is kept by
`airoi.client.copies`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

from airoi.client.client import Client
from airoi.client.copies.layout import BATCH_ROWS, Format
from airoi.client.copies.lists import ACCOUNT, ACCOUNT_LIST, DELETIONS, RESOURCES, Resource
from airoi.client.copies.protocol import CopyStore, open_store
from airoi.client.errors import AiroiError
from airoi.client.walk import (
    ANOTHER_ACCOUNTS_CURSOR,
    EPOCH,
    PROOF_PAGE,
    AnotherAccountsCopy,
    Start,
    TwoAccountsCopy,
    UnprovenAccountCopy,
    Walk,
    WalkState,
    served_from,
)

T = TypeVar("T")


@dataclass
class ResourceReport:
    name: str
    rows: int = 0
    pages: int = 0
    seconds: float = 0.0
    start: Start = "full"  # how the walk began: at the remembered cursor, updated_since, or whole
    since: str | None = None  # the largest updated_at (deleted_at) the store held before
    refused: str | None = None  # why the remembered cursor was given up, when it was
    deleted: int = 0  # rows the tombstones read removed from the store (/deletions only)

    @property
    def resumed(self) -> bool:
        """Whether the walk began at the position the store remembered."""
        return self.start == "cursor"


ProgressHook = Callable[[str, int, bool], None]
NoticeHook = Callable[[str], None]


def read_ahead(pages: Iterator[T]) -> Generator[T, None, None]:
    """The same pages, each next one fetched in a thread while the caller writes this one.

    Pages and errors come in order: a request that fails is raised after the pages before
    it have been written. At most one request is in flight. When the caller stops (an
    error writing a page, Ctrl-C), the request in flight is not waited for: it may be
    sitting out a Retry-After, which closing the client ends.
    """
    fetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="airoi-pull")
    try:
        upcoming = fetcher.submit(next, pages, None)
        while (page := upcoming.result()) is not None:
            upcoming = fetcher.submit(next, pages, None)
            yield page
    except BaseException:
        fetcher.shutdown(wait=False, cancel_futures=True)
        raise
    fetcher.shutdown()


# The budget rows of the copy looked for, when no position can tell its account.
PROOF_ROWS = 5


class AccountCheck:
    """Whether the token reads the account of the copy's lists (SEMANTICS R13).

    A remembered position the service continues, or refuses as another account's, tells it.
    One it refuses as none of its own (its cursor secret changed, or the copy came from
    another server) tells nothing: the list would go on from `updated_since` with whatever
    account the token reads. Then, before any of it is written, the list's own rows must tell
    it: a page served to the token from the copy's earliest `updated_at` of the list, or from
    its latest, must hold a row the copy holds, with the same id and `created_at`. A list the
    service serves nothing of from there (every row the copy holds deleted since) is told by
    its tombstones: one must name a row the copy holds, and another list must tell the
    account by its rows (ids alone may be another store's). A list the copy holds no row of
    tells nothing: it is read whole, once another list told the copy's account (or the copy
    holds no row at all). Each list is told on its own, as a copy cut off while it was
    started over holds two accounts.
    """

    def __init__(self, client: Client, store: CopyStore) -> None:
        self.client = client
        self.store = store
        # The lists the service continued (or served the copy's rows of) for the token.
        self.taken: list[str] = []
        # The copy's own account position (`_account`) was refused: one is taken again.
        self.witness_refused = False
        # The lists the service served nothing of from the copy's earliest stamp of them, each
        # with the copy's latest stamp of it (microseconds since 1970).
        self.emptied: dict[str, int] = {}

    def holds(self, name: str) -> bool:
        """Whether the copy holds a row of `name`."""
        return bool(self.store.held(name, ["1"], 1, order=None))

    def refused(self, resource: Resource, refusal: AiroiError) -> None:
        """`resource`'s position was refused as none of the service's: go on only when the
        copy's rows of it are served to the token (UnprovenAccountCopy otherwise)."""
        if resource.name in self.taken:
            return
        if not resource.incremental:
            served = self._budgets_served(resource)
        else:
            served = self._rows_served(resource) or self._rows_deleted(resource)
        if not served:
            raise UnprovenAccountCopy(resource.name, refusal, self.taken)
        self.taken.append(resource.name)

    def copy_refused(self, refusal: AiroiError) -> None:
        """A position was refused as none of the service's where no row of its own can tell
        the account (/deletions, whose tombstones remove rows of every list; a list the copy
        holds no row of): one list the copy holds rows of must be told the token's, unless
        one was already (this run's walks tell theirs first)."""
        if self.taken:
            return
        for resource in RESOURCES:
            if resource.incremental and self.holds(resource.name):
                self.refused(resource, refusal)
                return

    def _rows_served(self, resource: Resource) -> bool:
        """Whether a page the service serves the token, from the copy's earliest `updated_at`
        of the list and from its latest, holds a row the copy holds with the same id and
        created_at (rows the copy holds come first there, unless changed or deleted since)."""
        created = "epoch_us(TRY_CAST(created_at AS TIMESTAMPTZ))"
        updated = "epoch_us(TRY_CAST(updated_at AS TIMESTAMPTZ))"
        ends = self.store.held(resource.name, [f"min({updated})", f"max({updated})"], 2, None)
        # One row per place the list is held (its table or file, rows staged for it).
        firsts = [row[0] for row in ends if row[0] is not None]
        lasts = [row[1] for row in ends if row[1] is not None]
        moments = set()
        if firsts:
            moments = {min(firsts), max(lasts)}
        for moment in sorted(moments):
            since = EPOCH + timedelta(microseconds=moment)  # the client writes milliseconds
            served = served_from(self.client, resource.name, resource.params, since)
            if not served:
                # Nothing from the earliest: nothing from the latest either.
                self.emptied[resource.name] = max(lasts)
                return False
            ids = sorted({row_id for row_id, _ in served})
            held = self.store.held(resource.name, ["id", created], len(ids), None, ids=ids)
            if any((row[0], row[1]) in served for row in held):
                return True
        return False

    def _rows_deleted(self, resource: Resource) -> bool:
        """Whether the service, serving the token none of the list from the copy's earliest
        stamp of it, serves a tombstone of the list naming a row the copy holds (a page from
        the copy's latest stamp of it: a row's tombstone comes after its last change), and
        another list of the copy tells the account by its own rows."""
        latest = self.emptied.get(resource.name)
        if latest is None:
            return False
        since = EPOCH + timedelta(microseconds=latest)
        tombstones = self.client.rows(
            DELETIONS, resource=resource.name, updated_since=since, limit=PROOF_PAGE
        )
        ids = sorted({row["id"] for row in next(tombstones.pages()).data})
        if not ids or not self.store.held(resource.name, ["id"], 1, None, ids=ids):
            return False
        return self._told_by_another(resource)

    def _told_by_another(self, resource: Resource) -> bool:
        """Whether a list of the copy other than `resource` was, or now is, told the token's
        account by its own rows."""
        if any(name != resource.name for name in self.taken):
            return True
        others = (r for r in RESOURCES if r.incremental and r.name != resource.name)
        for other in others:
            if self.holds(other.name) and self._rows_served(other):
                self.taken.append(other.name)
                return True
        return False

    def _budgets_served(self, resource: Resource) -> bool:
        """Budgets (no id, no stamp): a row of the copy's whose budget version the service
        serves for the same initiative; or, when the copy holds no budgeted row, one of its
        initiatives served at all."""
        held = self.store.held(
            resource.name,
            ["initiative_id", "current_version_id"],
            PROOF_ROWS,
            "current_version_id IS NULL, initiative_id",
        )
        for initiative_id, version in held:
            rows = self.client.rows(
                resource.name, **resource.params, initiative_id=int(initiative_id)
            )
            try:
                page = next(rows.pages())
            except AiroiError as exc:
                if exc.status == 404:
                    continue  # an initiative the token's account cannot see
                raise
            for row in page.data:
                served = (row.get("current_version") or {}).get("id")
                if row.get("initiative_id") == initiative_id and served == version:
                    return True
        return False


def _began(
    walk: Walk,
    report: ResourceReport,
    notice: NoticeHook | None,
    check: AccountCheck | None,
    resource: Resource | None = None,
) -> None:
    """Say in the report how the walk began, once its first page is in and before any of it
    is written; tell `notice` when the remembered cursor was refused, and `check` how the
    walk began (of /deletions when `resource` is None): it stops the run when the copy's
    account cannot be told."""
    report.start = walk.start
    if check is not None and walk.start == "cursor":
        check.taken.append(report.name)  # the service continued the copy's position
    if walk.refused is None:
        return
    if check is not None and walk.start == "updated_since":
        if resource is not None:
            check.refused(resource, walk.refused)
        else:
            check.copy_refused(walk.refused)
    report.refused = str(walk.refused)
    if notice is not None:
        again = (
            f"asking from updated_since {walk.state.updated_since} instead"
            if walk.start == "updated_since"
            else "reading it whole again"
        )
        notice(
            f"{report.name}: {again}, as the service refused the position this store "
            f"remembered: {walk.refused}"
        )


def pull_resource(
    client: Client,
    store: CopyStore,
    resource: Resource,
    progress: ProgressHook | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
    notice: NoticeHook | None = None,
    check: AccountCheck | None = None,
) -> ResourceReport:
    """Walk one resource from where the store stands, writing its rows with the position
    after them every `batch_rows` rows (and at the end): a run cut off resumes after the
    last batch written. `check` is told how the walk began before anything is written."""
    started = time.perf_counter()
    state = store.state(resource.name)
    if not resource.incremental:
        # Read whole on every run, and whole within one: a walk cut off starts over, and the
        # pages it staged go, as they hold figures of another moment (a load since may have
        # changed or removed their rows).
        store.start_full_walk(resource)
        state = WalkState()
    report = ResourceReport(resource.name, since=state.updated_since)
    walk = Walk(client, resource.name, resource.params, state)
    batch: list[dict[str, Any]] = []
    # Every request, the first included, is made in read_ahead's thread: this one only
    # writes, and a Ctrl-C here never lands in a wait for a Retry-After.
    pages = read_ahead(iter(walk))
    first = next(pages)
    if (
        check is not None
        and walk.refused is not None
        and walk.start == "updated_since"
        and not check.holds(resource.name)
    ):
        # Refused, and the copy holds no row of the list: nothing to tell its account by,
        # and no stamp of its own to ask from (another account's would skip rows): whole,
        # once the copy's other lists tell the account.
        pages.close()
        check.copy_refused(walk.refused)
        refused, walk = walk.refused, Walk(client, resource.name, resource.params, WalkState())
        walk.refused = refused
        pages = read_ahead(iter(walk))
        first = next(pages)
    _began(walk, report, notice, check, resource)
    for page in chain([first], pages):
        state = walk.advance(page)
        done = not page.has_more or not page.next_cursor
        batch += page.data
        if done or len(batch) >= batch_rows:
            store.apply_page(resource, batch, state, done=done)
            batch = []
        report.rows += len(page.data)
        report.pages += 1
        if progress is not None:
            progress(resource.name, len(page.data), done)
    report.seconds = time.perf_counter() - started
    return report


def pull_deletions(
    client: Client,
    store: CopyStore,
    progress: ProgressHook | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
    notice: NoticeHook | None = None,
    check: AccountCheck | None = None,
) -> ResourceReport:
    """Walk /deletions from where the store stands and remove the rows it names, writing
    the position after each batch with the removal (SEMANTICS R34); `check` as in
    `pull_resource`."""
    started = time.perf_counter()
    state = store.state(DELETIONS)
    report = ResourceReport(DELETIONS, since=state.updated_since)
    walk = Walk(client, DELETIONS, {}, state, stamp="deleted_at")
    batch: list[dict[str, Any]] = []
    for page in read_ahead(iter(walk)):
        if not report.pages:
            _began(walk, report, notice, check, None)
        state = walk.advance(page)
        done = not page.has_more or not page.next_cursor
        batch += page.data
        if done or len(batch) >= batch_rows:
            report.deleted += store.apply_deletions(batch, state, done=done)
            batch = []
        report.rows += len(page.data)
        report.pages += 1
        if progress is not None:
            progress(DELETIONS, len(page.data), done)
    report.seconds = time.perf_counter() - started
    return report


def walks(resources: Iterable[Resource] = RESOURCES) -> list[str]:
    """The names of the walks `pull` makes, in order: the incremental lists, /deletions
    after them (when any incremental list is pulled), then the lists replaced whole."""
    chosen = list(resources)
    incremental = [r.name for r in chosen if r.incremental]
    return [
        *incremental,
        *([DELETIONS] if incremental else []),
        *(r.name for r in chosen if not r.incremental),
    ]


def choose_resources(names: str | None) -> tuple[Resource, ...]:
    """The lists `--resources` names (comma-separated, in any order), in pull order; every
    list when None. An unknown or empty name is refused with ValueError, naming it."""
    if names is None:
        return RESOURCES
    known = {resource.name: resource for resource in RESOURCES}
    asked = [name.strip() for name in names.split(",")]
    unknown = [name for name in asked if name not in known]
    if unknown:
        shown = ", ".join(repr(name) for name in unknown)
        raise ValueError(
            f"Unknown resource {shown} in --resources: use one or more of "
            f"{', '.join(known)}, separated by commas."
        )
    return tuple(resource for resource in RESOURCES if resource.name in asked)


def pull(
    client: Client,
    target: Path,
    fmt: Format = "duckdb",
    *,
    resources: Iterable[Resource] = RESOURCES,
    progress: ProgressHook | None = None,
    notice: NoticeHook | None = None,
    flush_rows: int | None = None,
    batch_rows: int = BATCH_ROWS,
    full_refresh: bool = False,
) -> list[ResourceReport]:
    """Pull `resources` (every list) into `target` (a .duckdb file, or a directory for
    parquet/csv), then apply /deletions, then replace the resources read whole (budgets).

    Rows are written with the walk's position every `batch_rows` rows. Parquet and CSV files
    are written at the end of each walk, and also every `flush_rows` rows when given.
    `full_refresh` starts each list pulled over: its copy and position are dropped at its
    walk's first batch (and the position of /deletions too, when every list is pulled).
    `notice` is told, in a sentence, of a remembered position the service refused.
    Nothing is created before the first row or position is written.
    """
    by_name = {resource.name: resource for resource in resources}
    refresh: set[str] = set()
    if full_refresh:
        refresh = set(by_name)
        if refresh >= {resource.name for resource in RESOURCES}:
            refresh.add(DELETIONS)
    store = open_store(target, fmt, flush_rows=flush_rows, full_refresh=refresh)
    try:
        order = walks(by_name.values())
        check = AccountCheck(client, store)
        _same_account(client, store, refresh, order[0] if order else None, check)
        try:
            reports = _walk_all(client, store, order, by_name, progress, notice, batch_rows, check)
        except AnotherAccountsCopy as exc:
            # The copy's other positions tell whether it holds this token's account too.
            taken = check.taken or _asked(client, store.positions())[0]
            if taken:
                raise TwoAccountsCopy(taken, exc) from None
            raise
        positions = store.positions()
        anew = ACCOUNT not in positions or DELETIONS in refresh or check.witness_refused
        if not set(positions) - {ACCOUNT} and anew:
            # No list remembers a position: the copy remembers its account by one of its own.
            page = client.get_json(f"/{ACCOUNT_LIST}", {"include_sample": "true", "limit": "1"})
            cursor = page.get("page", {}).get("resume_cursor")
            if isinstance(cursor, str):
                store.remember_account(cursor)
            elif ACCOUNT in positions:  # started over by an account with no initiative
                store.forget_account()
        store.finish()
        return reports
    finally:
        store.close()


def _walk_all(
    client: Client,
    store: CopyStore,
    order: list[str],
    by_name: dict[str, Resource],
    progress: ProgressHook | None,
    notice: NoticeHook | None,
    batch_rows: int,
    check: AccountCheck,
) -> list[ResourceReport]:
    """The run's walks, in `order`."""
    reports: list[ResourceReport] = []
    for name in order:
        if name == DELETIONS:
            report = pull_deletions(
                client, store, progress, batch_rows=batch_rows, notice=notice, check=check
            )
        else:
            report = pull_resource(
                client,
                store,
                by_name[name],
                progress,
                batch_rows=batch_rows,
                notice=notice,
                check=check,
            )
        reports.append(report)
    return reports


def _same_account(
    client: Client,
    store: CopyStore,
    starting_over: set[str],
    first: str | None,
    check: AccountCheck,
) -> None:
    """Before anything is written, refuse a copy of another account than the token's: the
    copy's remembered positions are asked for a page each, and the service refuses a cursor
    issued to another account (SEMANTICS R13). A list read whole (budgets) or not in the copy
    yet has no position of its own to be refused with: without this its rows would join
    another account's. The position of a list started over counts too (the copy's other
    lists stay), unless the run starts the whole copy over (/deletions too), which then
    becomes the token's account's. When the run's `first` walk starts from a position of its
    own, that walk is the check (before it writes): nothing is asked. A position refused as
    none of the service's leaves it to `check`: the copy's rows of that list, or of another
    list when it holds none (/deletions), as a list remembered by its stamp alone (served
    nothing from there when its position was last refused) has no position to be refused."""
    if DELETIONS in starting_over:
        return
    positions = store.positions()
    if first is not None and first not in starting_over and first in positions:
        return
    taken, another, invalid = _asked(client, positions)
    if another:
        name, exc = another[0]
        refused = AnotherAccountsCopy(None if name == ACCOUNT else name, exc, whole_copy=True)
        if taken:
            raise TwoAccountsCopy(taken, refused)
        raise refused
    check.taken += taken
    by_name = {resource.name: resource for resource in RESOURCES}
    for name, exc in invalid:
        # The copy's account position: its only rows are budgets, when it has any.
        held = "budgets" if name == ACCOUNT else name
        check.witness_refused |= name == ACCOUNT
        if check.holds(held):
            check.refused(by_name[held], exc)
        else:
            # /deletions, or a list with no row: a list the copy holds rows of tells, before
            # a list remembered by its stamp alone (no position to be refused) goes on.
            check.copy_refused(exc)


def _asked(
    client: Client, positions: dict[str, str]
) -> tuple[list[str], list[tuple[str, AiroiError]], list[tuple[str, AiroiError]]]:
    """Each of `positions` asked for a page: the lists the service continues (not the
    account's own position), those it refuses as another account's, and those it refuses
    as none of its own. Any other failure is left to the walks, which meet it."""
    taken: list[str] = []
    another: list[tuple[str, AiroiError]] = []
    invalid: list[tuple[str, AiroiError]] = []
    for name, remembered in positions.items():
        path = f"/{ACCOUNT_LIST if name == ACCOUNT else name}"
        try:
            client.get_json(path, {"cursor": remembered, "limit": "1"})
        except AiroiError as exc:
            if exc.status == 400:
                mine = not exc.message.startswith(ANOTHER_ACCOUNTS_CURSOR)
                (invalid if mine else another).append((name, exc))
            continue
        if name != ACCOUNT:
            taken.append(name)
    return taken, another, invalid
