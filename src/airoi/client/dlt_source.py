"""A dlt source for this API: every list into any dlt destination, incrementally.

    import dlt
    from airoi.client.dlt_source import airoi_source

    pipeline = dlt.pipeline("airoi_sync", destination="duckdb", dataset_name="airoi")
    pipeline.run(airoi_source("http://localhost:8000/api/v1", token))

Needs `pip install -e ".[dlt]"` (dlt itself is imported only by `airoi_source`;
`rest_api_config` is plain data). Each list is a dlt resource that walks it with
`airoi.client.Client` from the `resume_cursor` of the last page it loaded, kept in the
resource's dlt state, so a run reads only what changed since and nothing twice (SEMANTICS
R36; see `airoi.client.walk` for the fallback to `updated_since`). After its rows, it walks
`/deletions?resource=<list>` from a cursor of its own and yields each tombstone as a row
with `_airoi_deleted` true: the resources merge on `id` (delete-insert) with that column as
dlt's `hard_delete` and `updated_at` as `dedup_sort`, so within a load the latest of a row
and its tombstones wins, a tombstone on a tie (R34: a copy drops a row unless its
updated_at is later than deleted_at).

A tombstone removes the destination's row whatever its `updated_at` (dlt cannot compare),
which is right because a list's tombstones are read after its rows in the same load: a row
given again after a deletion has a later `updated_at` than the tombstone, so the load that
reads that row also reads the tombstone (or an earlier load applied it already), and dedup
keeps the row. Budgets have no `updated_since` and no `id` (SPEC 4.A.10): they are replaced
whole on every run, keyed by `initiative_id`, which also drops a deleted initiative's row.

A position the service refuses as none of its own (its cursor secret set or changed, or a
pipeline first loaded from another server) says nothing of the account, and the list goes
on from `updated_since` with whatever account the token reads. So each list keeps, in its
state, a few rows it loaded (id and `created_at`: the first rows it ever loaded and the first
at its latest `updated_at`), and after such a refusal a page served from each of those
moments must hold one of them, as loaded, before anything is loaded (`UnprovenPipelineCopy`
otherwise). A list keeping none is told by another list's; one with no position (budgets,
an empty list) asks a position another list keeps. A state of an earlier version keeps
rows from its first run whose position is continued; until then a refused one goes on,
with a warning.

Pages become Arrow tables through `airoi.client.frames.rows_to_arrow`, as in `airoi pull`,
so both have the same columns: nested objects flattened with `_` (`owner_id`,
`owner_name`, `source_type`), arrays one `json` column each, dates `date`, datetimes UTC
timestamps and cents bigint.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping, MutableMapping
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, get_args

from airoi.client.client import Client, Page, sendable_token
from airoi.client.column_types import COLUMNS
from airoi.client.errors import AiroiError
from airoi.client.frames import rows_to_arrow
from airoi.client.walk import (
    ANOTHER_ACCOUNTS_CURSOR,
    AnotherAccountsCopy,
    Walk,
    WalkState,
    epoch_us,
    later,
    served_from,
)
from airoi.vocabulary import ServedList

if TYPE_CHECKING:
    import pyarrow  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from dlt.sources import (  # type: ignore[import-not-found, import-untyped, unused-ignore]
        DltSource,
    )

log = logging.getLogger(__name__)

# The lists with updated_since and tombstones (SEMANTICS R34, R36).
INCREMENTAL: tuple[str, ...] = get_args(ServedList)
# Sample (demo) initiatives are included so that every cost or value row has its initiative;
# the is_sample column tells them apart (as in `airoi pull`).
WITH_SAMPLES = frozenset({"initiatives", "budgets"})
# dlt's hard_delete column: true on a tombstone, which is never stored; null on every row.
DELETED = "_airoi_deleted"
# Fields the OpenAPI description types `string (date)`, by resource, as the rest_api source's
# dlt names the flattened columns (`current_version__effective_from`): from the one table of
# column types the frames use too.
DATE_COLUMNS: dict[str, tuple[str, ...]] = {
    resource: tuple(
        path.replace(".", "__") for path, (kind, _) in columns.items() if kind == "date"
    )
    for resource, columns in COLUMNS.items()
}
PAGE_SIZE = 500
EPOCH = "1970-01-01T00:00:00.000Z"
# The rows a list keeps of each end it loaded (as [id, created_at]), to find one of them
# again among a page served from that end (`served_from`).
SAMPLE_ROWS = 100


class UnprovenPipelineCopy(AiroiError):
    """A list's remembered position is none of the service's any more, and none of the rows
    the pipeline keeps is served to the token as loaded: the token may read another account
    than the one the pipeline holds."""

    def __init__(self, resource: str, refused: AiroiError) -> None:
        self.resource = resource
        super().__init__(
            refused.status,
            f"the pipeline's {resource} cannot be told to be this token's account's: the "
            "service refused its remembered position as none of its own, and none of the rows "
            "the pipeline keeps to tell its account by is served to this token as loaded; "
            "nothing was loaded. If this token reads the pipeline's account, load it again "
            'from the start (pipeline.run(source, refresh="drop_sources")); otherwise load it '
            "with a pipeline and dataset of its own.",
            refused.request_id,
            body=refused.body,
        )


def _params(resource: str) -> dict[str, Any]:
    return {"include_sample": True} if resource in WITH_SAMPLES else {}


class Samples:
    """The rows a list keeps in its resource state (`saved["samples"]`) to tell its account
    by: the first `SAMPLE_ROWS` it ever loaded, and the first `SAMPLE_ROWS` at the latest
    `updated_at` it loaded, each as [id, created_at] with the moment they were served from.
    A page served from that moment begins with them (rows come in (updated_at, id) order),
    unless they were changed or deleted since.

    A state of an earlier version has a position and no samples (`known` false): it keeps
    them from the first row it is given, and the state holds none until then. `keep=False`
    reads another list's state without writing it."""

    def __init__(self, saved: MutableMapping[str, Any], *, keep: bool = True) -> None:
        self.known = "samples" in saved or "rows" not in saved
        self.kept: dict[str, Any] = saved.get("samples", {})
        self._saved = saved if keep else None
        if keep and self.known:
            saved["samples"] = self.kept

    def any(self) -> bool:
        return any(entries for _, entries in self.kept.values())

    def add(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            moment, row_id, created = row.get("updated_at"), row.get("id"), row.get("created_at")
            if not (isinstance(moment, str) and isinstance(row_id, int)):
                continue
            entry = [row_id, created]
            first = self.kept.setdefault("first", [moment, []])
            if len(first[1]) < SAMPLE_ROWS and entry not in first[1]:
                first[1].append(entry)
            last = self.kept.get("last")
            if last is None or later(last[0], moment) != last[0]:
                self.kept["last"] = [moment, [entry]]
            elif last[0] == moment and len(last[1]) < SAMPLE_ROWS and entry not in last[1]:
                last[1].append(entry)
        if self._saved is not None and self.kept:
            self._saved["samples"] = self.kept

    def seed(self, api: Client, resource: str, since: str | None) -> None:
        """For a state of an earlier version whose position the service continued (so the
        token reads its account): keep the rows served from its latest stamp, rows it
        loaded or newer ones of the same account. One request, once."""
        if self.known or self.any() or since is None:
            return
        rows = api.rows(resource, **_params(resource), updated_since=since, limit=SAMPLE_ROWS)
        self.add(next(rows.pages()).data)

    def served(self, api: Client, resource: str) -> bool:
        """Whether a page served to the token from either end holds a kept row with the
        same id and created_at."""
        ends: dict[str, list[Any]] = {}
        for moment, entries in self.kept.values():
            ends.setdefault(moment, []).extend(entries)
        for moment, entries in ends.items():
            served = served_from(api, resource, _params(resource), moment)
            if any((row_id, epoch_us(created)) in served for row_id, created in entries):
                return True
        return False


def _account_told(
    api: Client, resource: str, states: Mapping[str, Any], untold: Collection[str] = ()
) -> bool | None:
    """After `resource`'s position was refused as none of the service's: whether the token
    reads the pipeline's account, by a row a list keeps (`resource`'s first, then the
    others', as `airoi pull` tells a list it holds no row of) served to it as loaded. Lists
    in `untold` went on untold this run: what they keep now tells nothing. True when no list
    keeps any (nothing loaded to mix with); None when only a state of an earlier version
    could tell."""
    asked = False
    for name in (resource, *(other for other in INCREMENTAL if other != resource)):
        kept = Samples(states.get(name, {}), keep=False)
        if name in untold or not kept.any():
            continue
        if kept.served(api, name):
            return True  # rows of one list deleted or changed since do not stop the others
        asked = True
    if asked:
        return False
    if not Samples(states.get(resource, {}), keep=False).known:
        return None
    return True


def _told_by_a_position(api: Client, name: str, states: Mapping[str, Any]) -> None:
    """A list with no position of its own (budgets, which have none; one never loaded, or
    loaded empty) asks one another list keeps (a page of one row), so that it is not loaded
    for another account than the lists' beside it, picked alone or not. Raises as a
    refused walk would."""
    for resource in INCREMENTAL:
        cursor = (states.get(resource, {}).get("rows") or {}).get("cursor")
        if resource != name and cursor:
            break
    else:
        return  # no list remembers a position: nothing loaded to mix with
    try:
        next(api.rows(resource, **_params(resource), limit=1).pages(cursor=cursor))
    except AiroiError as exc:
        if exc.status != 400:
            raise
        if exc.message.startswith(ANOTHER_ACCOUNTS_CURSOR):
            raise AnotherAccountsCopy(name, exc) from None
        if _account_told(api, resource, states) is False:  # None: only an earlier state
            raise UnprovenPipelineCopy(name, exc) from None


def api_datetime(value: datetime | str) -> str:
    """`value` spelt exactly as the API writes `updated_at` (UTC, milliseconds, Z).

    dlt compares the incremental cursor with the rows' `updated_at` strings as they are, so
    the start must share their spelling: `...T09:00:00Z` would sort after `...T09:00:00.500Z`.
    """
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


def _columns(name: str) -> dict[str, dict[str, str]]:
    return {column: {"data_type": "date"} for column in DATE_COLUMNS.get(name, ())}


def _without_null_version(row: dict[str, Any]) -> dict[str, Any]:
    """An unbudgeted row's `current_version` is null; left in, dlt would warn on every run of
    a column it cannot type next to the `current_version__*` columns of the budgeted rows."""
    if row.get("current_version", ...) is None:
        del row["current_version"]
    return row


def rest_api_config(
    base_url: str, token: str, *, start: datetime | str = EPOCH, page_size: int = PAGE_SIZE
) -> dict[str, Any]:
    """A `RESTAPIConfig` for dlt's plain `rest_api_source` (building it imports nothing of
    dlt), to adapt; `airoi_source` does not use it.

    `start` is where the first run begins (`updated_since`); later runs begin at the
    largest `updated_at` dlt kept in the pipeline's state. What it does not do: resume from
    `page.resume_cursor` (the rest_api source cannot read it from the page), so every run
    reads again the rows stamped at that moment and dlt drops them; apply `/deletions`, so
    rows deleted on the server stay; or name columns as `airoi pull` does: nested objects
    become `owner__name` and arrays child tables (`integrations__metric_categories`).
    """
    resources: list[dict[str, Any]] = []
    for name in INCREMENTAL:
        params: dict[str, Any] = {
            "updated_since": {
                "type": "incremental",
                "cursor_path": "updated_at",
                "initial_value": api_datetime(start),
            }
        }
        if name in WITH_SAMPLES:
            params["include_sample"] = "true"
        resources.append(
            {
                "name": name,
                "primary_key": "id",
                "write_disposition": "merge",
                "columns": _columns(name),
                "endpoint": {"path": name, "params": params},
            }
        )
    resources.append(
        {
            "name": "budgets",
            "primary_key": "initiative_id",
            "write_disposition": "replace",
            "columns": _columns("budgets"),
            "endpoint": {"path": "budgets", "params": {"include_sample": "true"}},
            "processing_steps": [{"map": _without_null_version}],
        }
    )
    return {
        "client": {
            "base_url": base_url.rstrip("/") + "/",
            "auth": {"type": "bearer", "token": sendable_token(token)},
            "paginator": {
                "type": "cursor",
                "cursor_path": "page.next_cursor",
                "cursor_param": "cursor",
                "has_more_path": "page.has_more",
            },
        },
        "resource_defaults": {
            "endpoint": {"data_selector": "data", "params": {"limit": page_size}},
        },
        "resources": resources,
    }


def airoi_source(
    base_url: str,
    token: str,
    *,
    start: datetime | str = EPOCH,
    page_size: int = PAGE_SIZE,
    name: str = "airoi",
) -> DltSource:
    """The dlt source (needs `pip install -e ".[dlt]"`); its schema is named `name`.

    `start` is where a first run begins (`updated_since`, for rows and tombstones alike);
    later runs resume where the last one ended. Pick resources with
    `.with_resources("cost_entries", "value_entries")`.
    """
    import dlt  # type: ignore[import-not-found, import-untyped, unused-ignore]

    token = sendable_token(token)
    first = WalkState(None, api_datetime(start))
    untold: set[str] = set()  # lists that went on without their account told (earlier state)
    told_by_a_position: list[str] = []  # asked once a run (`_told_by_a_position`)

    def changed(resource: str) -> Iterator[pyarrow.Table]:
        saved = dlt.current.resource_state(resource)
        states = dlt.current.source_state().get("resources", {})
        samples = Samples(saved)
        with Client(base_url, token, page_size=page_size) as api:
            if not (saved.get("rows") or {}).get("cursor") and not told_by_a_position:
                _told_by_a_position(api, resource, states)
                told_by_a_position.append(resource)
            told = (samples, states, untold)
            rows = _walk(api, resource, _params(resource), saved, "rows", first, "updated_at", told)
            for page in rows:
                if page.data:
                    samples.add(page.data)
                    yield _keyed(rows_to_arrow(page.data, resource), "id")
            deleted = {"resource": resource}
            for page in _walk(api, "deletions", deleted, saved, "deletions", first, "deleted_at"):
                if page.data:
                    yield _tombstones(page.data, resource)

    def budgets() -> Iterator[pyarrow.Table]:
        with Client(base_url, token, page_size=page_size) as api:
            if not told_by_a_position:
                _told_by_a_position(api, "budgets", dlt.current.source_state().get("resources", {}))
                told_by_a_position.append("budgets")
            for row_page in api.budgets(include_sample=True).pages():
                if row_page.data:
                    yield _keyed(rows_to_arrow(row_page.data, "budgets"), "initiative_id")

    merged = [
        dlt.resource(
            changed,
            name=resource,
            primary_key="id",
            write_disposition={"disposition": "merge", "strategy": "delete-insert"},
            columns={
                DELETED: {"data_type": "bool", "hard_delete": True},
                "updated_at": {"dedup_sort": "desc"},
            },
        )(resource)
        for resource in INCREMENTAL
    ]
    replaced = dlt.resource(
        budgets, name="budgets", primary_key="initiative_id", write_disposition="replace"
    )

    @dlt.source(name=name, max_table_nesting=0)  # type: ignore[misc, unused-ignore]
    def airoi() -> list[Any]:
        return [*merged, replaced]

    source: DltSource = airoi()
    return source


def _walk(
    api: Client,
    resource: str,
    params: dict[str, Any],
    saved: MutableMapping[str, Any],
    key: str,
    first: WalkState,
    stamp: str,
    told: tuple[Samples, Mapping[str, Any], set[str]] | None = None,
) -> Iterator[Page]:
    """The pages of a list from the state `saved[key]` (dlt's resource state), or `first`;
    the state after each page is kept there (dlt commits it with the load). Given the list's
    samples, the states of the source's lists and the lists gone on untold this run, a
    position refused as none of the service's goes on only once kept rows tell the account
    (`_account_told`)."""
    kept = saved.get(key)
    state = WalkState(**kept) if kept else first
    walk = Walk(api, resource, params, state, stamp=stamp, keep_refused=told is not None)
    pages = walk.open()
    if told is not None and walk.start == "cursor":
        told[0].seed(api, resource, walk.state.updated_since)
    if told is not None and walk.refused is not None and walk.start == "updated_since":
        account = _account_told(api, resource, told[1], told[2])
        if account is None:
            told[2].add(resource)
            log.warning(
                "%s: this pipeline was loaded by an earlier version, which kept no rows to "
                "tell its account by; going on as this token's account's",
                resource,
            )
        elif not account:
            raise UnprovenPipelineCopy(resource, walk.refused)
    if walk.refused is not None:
        log.warning(
            "%s: asking from updated_since %s, as the service refused the position this "
            "pipeline remembered: %s",
            resource,
            walk.state.updated_since,
            walk.refused,
        )
    for page in pages:
        saved[key] = asdict(walk.advance(page))
        yield page


def _keyed(table: pyarrow.Table, key: str) -> pyarrow.Table:
    """`table` with its key column declared non-null, as dlt declares a primary key (else
    dlt warns on every load that the two disagree)."""
    index = table.schema.get_field_index(key)
    return table.cast(table.schema.set(index, table.schema.field(index).with_nullable(False)))


def _tombstones(rows: list[dict[str, Any]], resource: str) -> pyarrow.Table:
    """Tombstones as rows dlt hard-deletes: the id, and as `updated_at` a microsecond after
    `deleted_at`, so that `dedup_sort` ranks a tombstone above a row stamped at the same
    moment and below one given again later (the API's stamps are milliseconds, R3). Every
    other column of the list is there too, null, with the rows' own type: dlt puts the
    pages of one list together, and fills a column a page lacks as its schema has it (an
    array as text), which a page of rows holding arrays then cannot be put with."""
    import pyarrow as pa  # type: ignore[import-untyped, import-not-found, unused-ignore]

    after = timedelta(microseconds=1)
    moments = [datetime.fromisoformat(row["deleted_at"]) + after for row in rows]
    schema = _keyed(rows_to_arrow([], resource), "id").schema
    columns = []
    for field in schema:
        if field.name == "id":
            columns.append(pa.array([row["id"] for row in rows], type=field.type))
        elif field.name == "updated_at":
            columns.append(pa.array(moments, type=pa.timestamp("us", tz="UTC")).cast(field.type))
        else:
            columns.append(pa.nulls(len(rows), type=field.type))
    columns.append(pa.array([True] * len(rows), type=pa.bool_()))
    return pa.Table.from_arrays(columns, schema=schema.append(pa.field(DELETED, pa.bool_())))
