"""A copy synced during overlapping loads ends equal to the service (SEMANTICS R32, R36).

The case that lost rows for good: two loads overlap, the shorter commits first with a later
stamp, a poller syncing the whole time moves past it, and the longer one's rows, stamped
earlier, land behind the poller. Loads now run one at a time per store and stamp once they
hold it, so a poller with the README's recipe (updated_since, inclusive, from the largest
updated_at seen) and one resuming from `page.resume_cursor` both end with every row, as
it is served, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.load import LoadBusy, LoadReport, load_bundle
from airoi.load.stamping import locked
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
LONG_LOAD = 12_000  # cost entries of the long load
SHORT_LOAD = 300  # of the short one, started while the long one runs


@pytest.fixture
def client(db_url: str) -> Iterator[Client]:
    """The served app with its rate limit lifted: the copies poll without a pause for as long
    as the loads run, which on a busy machine was more requests than the default allows."""
    app = create_app(Settings(database_url=db_url, rate_limit="1000000/minute"))
    with TestClient(app) as test_client:
        yield test_client
    app.state.engine.dispose()


class Copy:
    """A consumer's copy of /cost_entries, kept by one of two sync recipes."""

    def __init__(self, client: Client, token: str, *, resume: bool) -> None:
        self.client = client
        self.token = token
        self.resume = resume
        self.rows: dict[int, dict[str, Any]] = {}
        self.since: str | None = None  # the README's recipe: the largest updated_at seen
        self.cursor: str | None = None  # R36: the last page's resume_cursor
        self.fetched = 0

    def sync(self) -> None:
        params: dict[str, Any] = {"limit": 500}
        if self.resume and self.cursor is not None:
            params["cursor"] = self.cursor
        elif not self.resume and self.since is not None:
            params["updated_since"] = self.since
        while True:
            response = self.client.get(
                "/api/v1/cost_entries", params=params, headers=bearer(self.token)
            )
            assert response.status_code == 200, response.text
            page = response.json()
            for row in page["data"]:
                self.rows[row["id"]] = row  # upsert by id
                if self.since is None or row["updated_at"] > self.since:
                    self.since = row["updated_at"]
            self.fetched += len(page["data"])
            if page["page"]["resume_cursor"] is not None:
                self.cursor = page["page"]["resume_cursor"]
            if not page["page"]["has_more"]:
                return
            params = {**params, "cursor": page["page"]["next_cursor"]}
            params.pop("updated_since", None)


def entries(initiative: int, first_id: int, count: int) -> list[dict[str, Any]]:
    return [
        {"id": first_id + n, "initiative_id": initiative, "amount_cents": 100 + n}
        for n in range(count)
    ]


def run_in_thread(work: Callable[[], LoadReport], into: list[Any]) -> threading.Thread:
    def target() -> None:
        try:
            into.append(work())
        except BaseException as exc:
            into.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread


def wait_until_a_load_holds(engine: Engine, seconds: float = 30.0) -> None:
    """Until another load holds the store's write lock (SEMANTICS R32): a load asking for it
    without waiting is refused. Taken and given back at once while no load holds it."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with locked(engine, wait=0):
                pass
        except LoadBusy:
            return
        time.sleep(0.005)
    raise AssertionError(f"no load took the store's write lock in {seconds:g} s")


def test_a_copy_synced_during_two_overlapping_loads_misses_nothing(
    client: Client, engine: Engine
) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    b.cost_entry(initiative, id=1)
    b.load(engine)
    copies = [Copy(client, token, resume=False), Copy(client, token, resume=True)]
    for copy in copies:
        copy.sync()

    long_report: list[Any] = []
    short_report: list[Any] = []
    waited: list[str] = []
    long_load = run_in_thread(
        lambda: load_bundle(engine, {"cost_entries": entries(initiative, 10_000, LONG_LOAD)}),
        long_report,
    )
    # Not a fixed pause: on a busy machine the long load took longer than that to begin.
    wait_until_a_load_holds(engine)
    short_load = run_in_thread(
        lambda: load_bundle(
            engine,
            {"cost_entries": entries(initiative, 100_000, SHORT_LOAD)},
            say=waited.append,
        ),
        short_report,
    )
    polls = 0
    while long_load.is_alive() or short_load.is_alive():
        for copy in copies:
            copy.sync()
        polls += 1
    long_load.join()
    short_load.join()
    for copy in copies:
        copy.sync()

    assert all(isinstance(r, LoadReport) for r in long_report + short_report), (
        long_report,
        short_report,
    )
    # The two loads overlapped: the short one waited for the long one (R32).
    assert waited, "the short load never waited: the loads did not overlap"
    assert short_report[0].stamp > long_report[0].stamp
    served = Copy(client, token, resume=False)
    served.sync()
    assert len(served.rows) == 1 + LONG_LOAD + SHORT_LOAD
    for copy in copies:
        missing = served.rows.keys() - copy.rows.keys()
        stale = [i for i, row in served.rows.items() if copy.rows.get(i, row) != row]
        assert (len(missing), len(stale)) == (0, 0), (copy.resume, polls)
    # Resumed from its cursor, an idle copy reads nothing again (R36); the inclusive
    # updated_since reads again every row stamped at the last moment (the short load's).
    for copy in copies:
        copy.fetched = 0
        copy.sync()
    assert copies[1].fetched == 0
    assert copies[0].fetched == SHORT_LOAD
