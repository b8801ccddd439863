"""A copy's account told by its rows when its positions tell nothing (SEMANTICS R13).

The service refuses a cursor issued to another account, and `airoi pull` stops on that
refusal. A cursor signed with another secret (AIROI_SECRET_KEY set or changed since the
copy was made, or a copy taken from another server) is refused as none of the service's:
it says nothing of the account, and the lists went on from `updated_since` with whatever
account the token read, another account's rows joining the copy's. Here the same store is
served a second time with another cursor secret, as after such a change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.copies.layout import STATE_FILE, STATE_TABLE, Format
from airoi.client.copies.lists import RESOURCES
from airoi.client.pull import pull
from airoi.client.walk import AnotherAccountsCopy, TwoAccountsCopy, UnprovenAccountCopy
from airoi.settings import Settings
from tests.client.conftest import (
    FIRST_LOAD,
    LATER,
    ROTATED_KEY,
    TODAY,
    Account,
    build_account,
)
from tests.client.test_pull import (
    FORMATS,
    InterruptAfter,
    Interrupted,
    assert_store_equals_service,
    chosen,
    delete,
    give,
    other_account,
    stored,
    target_for,
)
from tests.factories import BundleBuilder
from tests.servers import RunningServer

SHARED_KEY = b"k" * 32


@contextmanager
def store_of_its_own(
    path: Path,
    when: datetime,
    change: Callable[[Engine, Account], None] | None = None,
    key: bytes = SHARED_KEY,
) -> Iterator[tuple[str, Account]]:
    """A store of its own at `path` holding `build_account`'s account (the same ids as any
    other's, made at `when`), changed by `change`, served with the cursor key `key`: its
    /api/v1 address and the account."""
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    url = f"sqlite:///{path}"
    engine = make_engine(url)
    upgrade(engine)
    account = build_account(engine, when)
    if change is not None:
        change(engine, account)
    engine.dispose()
    settings = Settings(database_url=url, today=TODAY, rate_limit="1000000/minute", secret_key=key)
    server = RunningServer(settings)
    try:
        yield f"{server.base_url}/api/v1", account
    finally:
        server.stop()


@pytest.mark.parametrize("fmt", ["duckdb", "csv"])
def test_a_copy_from_another_store_given_the_same_secret_key_is_refused(
    tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R13: two stores served with one AIROI_SECRET_KEY (copied between
    # deployments) hold the same account, initiative and entry ids as other rows (made at
    # another time). The copy of one, pulled from the other, had its positions taken as the
    # other's own: the other's rows went on top of the copy's, exit 0. Signed with the
    # store's own secret too, the positions are refused as none of the service's, and the
    # rows tell the copy is not of this account.
    with (
        store_of_its_own(tmp_path / "one.db", FIRST_LOAD) as (one_url, one),
        store_of_its_own(tmp_path / "two.db", LATER) as (two_url, two),
    ):
        target = target_for(tmp_path, fmt)
        with Client(one_url, one.token, page_size=2) as api:
            pull(api, target, fmt)
        before = copy_of(target, fmt)
        with (
            Client(two_url, two.token, page_size=2) as api,
            pytest.raises(UnprovenAccountCopy, match="--full-refresh"),
        ):
            pull(api, target, fmt)
        assert copy_of(target, fmt) == before


def copy_of(target: Path, fmt: Format) -> dict[str, list[dict[str, Any]]]:
    return {r.name: stored(target, fmt, r.name) for r in RESOURCES}


def account_position(target: Path, fmt: Format) -> str | None:
    """The cursor the copy remembers its account by (`_account`), if any."""
    if fmt == "duckdb":
        with duckdb.connect(str(target), read_only=True) as conn:
            row = conn.execute(
                f"SELECT cursor FROM {STATE_TABLE} WHERE resource = '_account'"  # noqa: S608
            ).fetchone()
        return None if row is None else row[0]
    import json

    saved = json.loads((target / STATE_FILE).read_text())
    return saved.get("_account", {}).get("cursor")


@pytest.mark.parametrize("fmt", FORMATS)
def test_another_accounts_token_after_the_secret_changed_is_refused(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # Their token, the copy's positions refused as none of the service's: the copy's latest
    # initiatives are not served to it (404), so nothing is written (it wrote their rows
    # beside ours, exit 0).
    their_token = other_account(engine, with_costs=True)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    before = copy_of(target, fmt)
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy, match="none of initiatives was written") as refused,
    ):
        pull(api, target, fmt)
    assert refused.value.status == 400
    assert "--full-refresh" in str(refused.value)
    assert copy_of(target, fmt) == before
    # So is a copy of a few lists: one whose rows name initiatives (none of its own held).
    some = tmp_path / "costs"
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target_for(some, fmt), fmt, resources=chosen("cost_entries"))
    costs = stored(target_for(some, fmt), fmt, "cost_entries")
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy),
    ):
        pull(api, target_for(some, fmt), fmt, resources=chosen("cost_entries"))
    assert stored(target_for(some, fmt), fmt, "cost_entries") == costs
    # The copy's own token goes on through the same service (its rows are served to it).
    with Client(rotated_url, account.token, page_size=2) as api:
        pull(api, target_for(some, fmt), fmt, resources=chosen("cost_entries"))
    assert stored(target_for(some, fmt), fmt, "cost_entries") == costs


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_copys_own_token_after_the_secret_changed_goes_on(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # The copy's latest initiative is served to the token with the copy's created_at: the
    # lists go on from updated_since, saying so, and the copy equals the service after.
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    new_id = account.builder.cost_entry(account.initiatives[0], amount_cents=7, currency="USD")
    account.load(engine, LATER)
    said: list[str] = []
    with Client(rotated_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt, notice=said.append)}
        assert reports["cost_entries"].start == "updated_since"
        assert any(line.startswith("initiatives: asking from updated_since") for line in said)
        assert new_id in {row["id"] for row in stored(target, fmt, "cost_entries")}
        assert_store_equals_service(target, fmt, rotated_url, account.token)
        # Its positions are the service's again: the next run resumes at them.
        again = pull(api, target, fmt)
    lists = [r.name for r in RESOURCES if r.incremental]  # /deletions has no tombstone here
    assert {r.name: r.start for r in again if r.name in lists} == dict.fromkeys(lists, "cursor")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_copy_of_other_initiatives_under_the_same_ids_is_refused(
    base_url: str,
    rotated_url: str,
    account: Account,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # A copy taken from another server can hold ids this server serves as other rows: an
    # initiative counts only when its created_at is the copy's. Here the copy's created_at
    # are moved a day, as another server's rows under the same ids would differ.
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("initiatives"))
    if fmt == "duckdb":
        with duckdb.connect(str(target)) as conn:
            conn.execute("UPDATE initiatives SET created_at = created_at - INTERVAL 1 DAY")
    else:
        path = target / f"initiatives.{fmt}"
        moved = tmp_path / f"moved.{fmt}"
        with duckdb.connect() as conn:
            source = f"read_{fmt}('{path}')"
            conn.execute(
                f"COPY (SELECT * REPLACE (created_at - INTERVAL 1 DAY AS created_at) "  # noqa: S608
                f"FROM {source}) TO '{moved}' (FORMAT {fmt})"
            )
        moved.replace(path)
    before = stored(target, fmt, "initiatives")
    with (
        Client(rotated_url, account.token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy),
    ):
        pull(api, target, fmt, resources=chosen("initiatives"))
    assert stored(target, fmt, "initiatives") == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_budgets_copy_takes_its_account_position_again_after_the_secret_changed(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # A copy of budgets alone remembers its account by a position of its own (`_account`).
    # Refused as none of the service's, the budgets' initiatives tell the account; the copy
    # then takes a position the service signs now, so another account's token is refused
    # by it as another account's.
    their_token = other_account(engine)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("budgets"))
    before = stored(target, fmt, "budgets")
    first = account_position(target, fmt)
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy),
    ):
        pull(api, target, fmt, resources=chosen("budgets"))
    assert stored(target, fmt, "budgets") == before
    with Client(rotated_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("budgets"))
    assert stored(target, fmt, "budgets") == before
    assert account_position(target, fmt) not in (None, first)
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(AnotherAccountsCopy),
    ):
        pull(api, target, fmt, resources=chosen("budgets"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_refresh_cut_off_by_another_account_says_the_copy_holds_two(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # Our copy started over whole by their token, cut off once its initiatives were in: the
    # copy holds their initiatives and our other lists. Their next pull said the copy was
    # another account's and to pull into a new target; it says it holds two, and how to
    # make it one.
    their_token = other_account(engine, with_costs=True)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    cut = InterruptAfter(limit=1, path="/cost_entries")
    with (
        Client(base_url, their_token, page_size=2, transport=cut) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, full_refresh=True)
    assert [row["title"] for row in stored(target, fmt, "initiatives")] == ["Theirs only"]
    costs = stored(target, fmt, "cost_entries")
    assert {row["initiative_id"] for row in costs} == set(account.initiatives)
    with (
        Client(base_url, their_token, page_size=2) as api,
        pytest.raises(TwoAccountsCopy) as refused,
    ):
        pull(api, target, fmt)
    assert str(refused.value).startswith(
        "400: the copy here holds two accounts: initiatives of this token's account, "
        "cost_entries of another"
    )
    assert stored(target, fmt, "cost_entries") == costs
    # Our token is told the same (its first list, initiatives, is theirs now; the copy's
    # other positions are ours).
    with (
        Client(base_url, account.token, page_size=2) as api,
        pytest.raises(TwoAccountsCopy) as ours,
    ):
        pull(api, target, fmt)
    assert str(ours.value).startswith(
        "400: the copy here holds two accounts: cost_entries, value_entries, metrics, "
        "observations, decisions, integrations of this token's account, initiatives of another"
    )
    # A run of budgets alone (no position of its own) asks every position: it was let
    # through by the first one asked (theirs) and put their budgets beside our lists.
    budgets_before = stored(target, fmt, "budgets")
    with (
        Client(base_url, their_token, page_size=2) as api,
        pytest.raises(TwoAccountsCopy, match="nothing was written"),
    ):
        pull(api, target, fmt, resources=chosen("budgets"))
    assert stored(target, fmt, "budgets") == budgets_before
    # With the cursor secret changed too, each list is told by its own rows: their
    # initiatives go on, our cost entries are not theirs (they were joined to them).
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy) as unproven,
    ):
        pull(api, target, fmt)
    assert str(unproven.value).startswith("400: the copy of cost_entries here cannot be told")
    assert "initiatives went on as this token's account's" in str(unproven.value)
    assert stored(target, fmt, "cost_entries") == costs
    # The whole refresh run again makes the copy theirs alone.
    with Client(base_url, their_token, page_size=2) as api:
        pull(api, target, fmt, full_refresh=True)
    assert_store_equals_service(target, fmt, base_url, their_token)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ["observations", "metrics", "integrations", "decisions"])
def test_a_copy_of_one_list_is_told_by_its_own_rows(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
    name: str,
) -> None:
    # A copy of observations (metrics, integrations) alone holds no initiative and named
    # none the check asked for: the copy's own token was refused after the secret changed.
    their_token = other_account(engine, with_costs=True)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen(name))
    before = stored(target, fmt, name)
    assert before
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy, match=f"none of {name} was written"),
    ):
        pull(api, target, fmt, resources=chosen(name))
    assert stored(target, fmt, name) == before
    with Client(rotated_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen(name))
    assert stored(target, fmt, name) == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_emptied_list_is_read_whole_after_the_secret_changed(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # Their one cost entry copied, then deleted: the copy holds none, and remembers their
    # stamp (LATER). Our token, after the secret changed, asked from it and skipped every
    # one of ours (written before it); the copy holds nothing to tell an account by, so the
    # list is read whole.
    their_token = other_account(engine, with_costs=True)
    target = target_for(tmp_path, fmt)
    with Client(base_url, their_token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("cost_entries"))
        (theirs,) = [row["id"] for row in stored(target, fmt, "cost_entries")]
        delete(engine, LATER, cost_entries=[theirs])
        pull(api, target, fmt, resources=chosen("cost_entries"))
    assert stored(target, fmt, "cost_entries") == []
    said: list[str] = []
    with Client(rotated_url, account.token, page_size=2) as api:
        (report, _) = pull(api, target, fmt, resources=chosen("cost_entries"), notice=said.append)
    assert report.start == "full"
    assert said[0].startswith("cost_entries: reading it whole again")
    held = sorted(row["id"] for row in stored(target, fmt, "cost_entries"))
    assert held == sorted(account.cost_entries)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_copys_latest_rows_deleted_do_not_stop_its_own_token(
    base_url: str, rotated_url: str, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # Twelve initiatives written an hour apart; the copy's five latest deleted since. The
    # check looked at those alone and refused the copy's own token: its earliest rows tell.
    b = BundleBuilder(first_id=9000)
    acct = b.account(name="Hours")
    token = b.token(b.user(acct, role="owner"), secret="airoi_hours-" + "h" * 38)
    b.load(engine, now=FIRST_LOAD)
    made = []
    for hour in range(12):
        made.append(b.initiative(acct, title=f"Hour {hour}"))
        b.load(engine, now=FIRST_LOAD + timedelta(hours=hour + 1))
    target = target_for(tmp_path, fmt)
    with Client(base_url, token, page_size=5) as api:
        pull(api, target, fmt)
    delete(engine, LATER, initiatives=made[-5:])
    with Client(rotated_url, token, page_size=5) as api:
        pull(api, target, fmt)
        assert_store_equals_service(target, fmt, rotated_url, token)
    assert sorted(row["id"] for row in stored(target, fmt, "initiatives")) == made[:7]


def costs_copied(
    engine: Engine, base_url: str, target: Path, fmt: Format, entries: int
) -> tuple[BundleBuilder, str, int, list[int]]:
    """An account of one initiative with `entries` cost entries of one load, its cost
    entries pulled into `target`: its builder, token, initiative and entry ids."""
    b = BundleBuilder(first_id=9500)
    acct = b.account(name="Costs")
    token = b.token(b.user(acct, role="owner"), secret="airoi_costs-" + "c" * 38)
    initiative = b.initiative(acct, title="One")
    costs = [b.cost_entry(initiative, amount_cents=100 + n, currency="USD") for n in range(entries)]
    b.load(engine, now=FIRST_LOAD)
    with Client(base_url, token, page_size=50) as api:
        pull(api, target, fmt, resources=chosen("cost_entries"))
    return b, token, initiative, costs


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("change", ["deleted", "corrected"])
def test_rows_of_one_moment_changed_since_do_not_stop_the_copys_own_token(
    base_url: str, rotated_url: str, engine: Engine, tmp_path: Path, fmt: Format, change: str
) -> None:
    # One load stamps all its rows with one moment. 105 cost entries of it, and the five of
    # the lowest ids deleted or corrected since: the check looked for those five only (the
    # ends of the copy by updated_at were the same rows), or on a page of 100 rows that the
    # unchanged ones filled, and refused the copy's own token.
    target = target_for(tmp_path, fmt)
    _, token, _, costs = costs_copied(engine, base_url, target, fmt, 105)
    if change == "deleted":
        delete(engine, LATER, cost_entries=costs[:5])
    else:
        for cost in costs[:5]:
            give(engine, LATER, "cost_entries", {"id": cost, "amount_cents": 1})
    with Client(rotated_url, token, page_size=50) as api:
        pull(api, target, fmt, resources=chosen("cost_entries"))
    held = {row["id"]: row["amount_cents"] for row in stored(target, fmt, "cost_entries")}
    if change == "deleted":
        assert sorted(held) == costs[5:]
    else:
        assert [held[cost] for cost in costs[:6]] == [1, 1, 1, 1, 1, 105]


@pytest.mark.parametrize("fmt", ["duckdb", "csv"])
def test_rows_changed_behind_many_new_ones_do_not_stop_the_copys_own_token(
    base_url: str, rotated_url: str, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # Review: a copy of five entries; since, 120 entries added and the five corrected. A
    # page of 100 from the copy's moment held new rows only (the five come after them), and
    # the copy's own token was refused. The page asked is the largest (500).
    b, token, initiative, costs = costs_copied(engine, base_url, target_for(tmp_path, fmt), fmt, 5)
    target = target_for(tmp_path, fmt)
    for n in range(120):
        b.cost_entry(initiative, amount_cents=n, currency="USD")
    b.load(engine, now=LATER)
    for cost in costs:
        give(engine, LATER + timedelta(days=1), "cost_entries", {"id": cost, "amount_cents": 1})
    with Client(rotated_url, token, page_size=50) as api:
        pull(api, target, fmt, resources=chosen("cost_entries"))
    held = {row["id"]: row["amount_cents"] for row in stored(target, fmt, "cost_entries")}
    assert len(held) == 125
    assert [held[cost] for cost in costs] == [1] * 5


@pytest.mark.parametrize("fmt", ["duckdb", "csv"])
def test_deletions_after_the_secret_changed_do_not_stop_the_copys_own_token(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # Review: the copy's newest value entry deleted, the secret changed (the refused
    # position asked again from its stamp, where nothing is served), then the other value
    # entries deleted. Keeping the refused cursor (as the dlt source does) refused the
    # copy's own token on every run: its rows of the list are all gone, and the deletions
    # were never read. A pull goes on from the stamp, and the copy equals the service.
    newest = account.builder.value_entry(
        account.initiatives[0], amount_cents=9, currency="USD", status="approved"
    )
    account.load(engine, LATER)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    delete(engine, LATER + timedelta(days=1), value_entries=[newest])
    with Client(rotated_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    rest = [row["id"] for row in account.builder.data["value_entries"] if row["id"] != newest]
    delete(engine, LATER + timedelta(days=2), value_entries=rest)
    for _ in range(2):
        with Client(rotated_url, account.token, page_size=2) as api:
            pull(api, target, fmt)
    assert stored(target, fmt, "value_entries") == []
    assert_store_equals_service(target, fmt, rotated_url, account.token)


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_emptied_list_is_not_read_whole_for_another_account(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # Our integration deleted (the copy holds none), the secret changed, their token: the
    # list has no row to tell the account by and was read whole, their integration written
    # into our copy before a later list stopped the run. The copy's other lists tell first.
    b = BundleBuilder(first_id=5000)
    theirs = b.account(name="Theirs")
    their_token = b.token(b.user(theirs, email="t@example.com"), secret="airoi_th-" + "t" * 41)
    b.integration(theirs)
    b.load(engine, now=LATER)
    target = target_for(tmp_path, fmt)
    ours = [row["id"] for row in stored_after(base_url, account.token, target, fmt)]
    delete(engine, LATER, integrations=ours)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    assert stored(target, fmt, "integrations") == []
    before = copy_of(target, fmt)
    with (
        Client(rotated_url, their_token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy),
    ):
        pull(api, target, fmt, resources=chosen("integrations"))
    assert copy_of(target, fmt) == before


def stored_after(base_url: str, token: str, target: Path, fmt: Format) -> list[dict[str, Any]]:
    """The copy's integrations once a first pull of every list made it."""
    with Client(base_url, token, page_size=2) as api:
        pull(api, target, fmt)
    return stored(target, fmt, "integrations")


@pytest.mark.parametrize("fmt", ["duckdb", "csv"])
def test_a_list_emptied_as_the_secret_changed_does_not_stop_the_copys_own_token(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # Review: every value entry of the copy deleted, then the secret changed. The refused
    # position was told by the list's own rows, of which the service serves none any more:
    # the copy's own token was refused on every run until --full-refresh.
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    ours = [row["id"] for row in account.builder.data["value_entries"]]
    delete(engine, LATER + timedelta(days=1), value_entries=ours)
    for _ in range(2):
        with Client(rotated_url, account.token, page_size=2) as api:
            pull(api, target, fmt)
    assert stored(target, fmt, "value_entries") == []
    assert_store_equals_service(target, fmt, rotated_url, account.token)


@pytest.mark.parametrize("fmt", ["duckdb", "csv"])
def test_tombstones_alone_do_not_tell_a_copy_from_another_store(
    tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R13, R34: the copy's value entries, of one store; the other store (same key,
    # the same ids made at another time) deleted its own. Its tombstones name the copy's ids,
    # but ids alone may be another store's: with no other list of the copy to tell the
    # account by its rows, the copy is refused and left as it was.
    def its_value_entries_deleted(engine: Engine, account: Account) -> None:
        ids = [row["id"] for row in account.builder.data["value_entries"]]
        delete(engine, LATER + timedelta(days=1), value_entries=ids)

    with (
        store_of_its_own(tmp_path / "one.db", FIRST_LOAD) as (one_url, one),
        store_of_its_own(tmp_path / "two.db", LATER, its_value_entries_deleted) as (two_url, two),
    ):
        target = target_for(tmp_path, fmt)
        with Client(one_url, one.token, page_size=2) as api:
            pull(api, target, fmt, resources=chosen("value_entries"))
        before = stored(target, fmt, "value_entries")
        assert before
        with (
            Client(two_url, two.token, page_size=2) as api,
            pytest.raises(UnprovenAccountCopy, match="value_entries"),
        ):
            pull(api, target, fmt, resources=chosen("value_entries"))
        assert stored(target, fmt, "value_entries") == before


@pytest.mark.parametrize("fmt", ["duckdb", "csv"])
def test_a_list_known_by_its_stamp_alone_is_told_before_another_stores_rows_go_in(
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
) -> None:
    # SEMANTICS R13: the copy's newest value entry deleted, then the secret changed: asked
    # again from its stamp, the list was served nothing and kept the stamp alone. Pulled
    # later from another store (same key, the same ids made at another time), the list went
    # on from that stamp unasked and the other store's rows went in under the copy's ids;
    # /deletions' refused position stopped the run only after. Refused before anything is
    # written now.
    newest = account.builder.value_entry(
        account.initiatives[0], amount_cents=9, currency="USD", status="approved"
    )
    account.load(engine, LATER)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("value_entries"))
    delete(engine, LATER + timedelta(days=1), value_entries=[newest])
    with Client(rotated_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("value_entries"))
    before = stored(target, fmt, "value_entries")
    kept = sorted(r["id"] for r in account.builder.data["value_entries"] if r["id"] != newest)
    assert sorted(row["id"] for row in before) == kept
    # Another store, served with the key the copy's own is now.
    with (
        store_of_its_own(tmp_path / "other.db", LATER + timedelta(days=2), key=ROTATED_KEY) as (
            other_url,
            other,
        ),
        Client(other_url, other.token, page_size=2) as api,
        pytest.raises(UnprovenAccountCopy, match="value_entries"),
    ):
        pull(api, target, fmt, resources=chosen("value_entries"))
    assert stored(target, fmt, "value_entries") == before
