"""`airoi verify --rows`: every row of a copy against the service's, by id, with what changed
in the service after the copy told apart from what the copy got wrong (SEMANTICS R34, R36).

The account (tests/client/conftest.py) holds 3 initiatives, 7 cost entries, 6 value entries,
1 metric, 3 observations, 1 decision and 1 integration; the counts below are those.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.copies.layout import PENDING_FILE, Format
from airoi.client.copies.lists import RESOURCES
from airoi.client.errors import CopyError
from airoi.client.pull import pull
from airoi.load import load_bundle
from tests.client.conftest import ACCOUNT_ROWS, LATER, Account
from tests.factories import BundleBuilder

duckdb = pytest.importorskip("duckdb")

from airoi.client.verify import Verification, verify  # noqa: E402 - needs duckdb
from airoi.client.verify_rows import ListCheck  # noqa: E402

FORMATS: list[Format] = ["duckdb", "parquet", "csv"]
HELD = {name: count for name, count in ACCOUNT_ROWS.items() if name != "budgets"}


def after_the_pull() -> datetime:
    """A load's moment later than any copy written in this test (the service stamps rows by
    its clock, the copy's files are dated by the machine's)."""
    return datetime.now(UTC).replace(tzinfo=None) + timedelta(minutes=5)


def target_for(tmp_path: Path, fmt: Format) -> Path:
    return tmp_path / "copy.duckdb" if fmt == "duckdb" else tmp_path / f"copy-{fmt}"


def pulled(api: Client, tmp_path: Path, fmt: Format = "duckdb", **options: object) -> Path:
    target = target_for(tmp_path, fmt)
    pull(api, target, fmt, **options)  # type: ignore[arg-type]
    return target


def checked(api: Client, target: Path) -> Verification:
    result = verify(api, target, rows=True, workers=2)
    assert result.lists is not None
    return result


def verify_command(
    base_url: str, token: str, target: Path
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`airoi verify` of the copy at `target`, with the arguments given to what it returns."""
    env = {**os.environ, "AIROI_TOKEN": token, "COLUMNS": "200"}
    command = [sys.executable, "-m", "airoi", "verify", "--base-url", base_url, "--store",
               str(target)]  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *args], env=env, capture_output=True, text=True, check=False, timeout=120
        )

    return run


def lists(result: Verification) -> dict[str, ListCheck]:
    assert result.lists is not None
    return {check.resource: check for check in result.lists}


def differences(result: Verification) -> set[tuple[str, int, str, tuple[str, ...]]]:
    return {(d.resource, d.id, d.kind, d.columns) for d in result.row_differences}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_fresh_copy_equals_the_service_row_for_row(
    api: Client, account: Account, tmp_path: Path, fmt: Format
) -> None:
    result = checked(api, pulled(api, tmp_path, fmt))
    found = lists(result)
    # Budgets are read whole and recomputed as figures, never compared row by row.
    assert set(found) == set(HELD)
    assert {name: (c.served, c.held) for name, c in found.items()} == {
        name: (count, count) for name, count in HELD.items()
    }
    assert result.row_differences == []
    assert all(c.changed_since == c.deleted_since == 0 for c in found.values())
    assert result.differences == []  # the figures, as without --rows


def test_rows_edited_removed_or_added_in_the_copy_are_named(
    api: Client, account: Account, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path)
    first, second, third = account.cost_entries[:3]
    conn = duckdb.connect(str(target))
    # Edits no figure would show (a note, a vendor name), a cent, a row gone, a row added.
    conn.execute("UPDATE cost_entries SET notes = 'edited' WHERE id = ?", [first])
    conn.execute(
        "UPDATE cost_entries SET vendor_name = 'Other', amount_cents = amount_cents + 1"
        " WHERE id = ?",
        [second],
    )
    conn.execute("DELETE FROM cost_entries WHERE id = ?", [third])
    conn.execute(
        "INSERT INTO observations SELECT * REPLACE (999001 AS id) FROM observations LIMIT 1"
    )
    renamed = account.initiatives[2]
    conn.execute("UPDATE initiatives SET title = title || ' ' WHERE id = ?", [renamed])
    conn.close()

    result = checked(api, target)

    assert differences(result) == {
        ("cost_entries", first, "different", ("notes",)),
        ("cost_entries", second, "different", ("amount_cents", "vendor_name")),
        ("cost_entries", third, "missing", ()),
        ("observations", 999001, "extra", ()),
        ("initiatives", renamed, "different", ("title",)),
    }
    assert lists(result)["cost_entries"].held == 6


def test_changes_made_in_the_service_after_the_pull_are_not_differences(
    api: Client, account: Account, engine: Engine, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path)
    # SEMANTICS R34, R36: a changed row and a new one carry a later updated_at, later than
    # the copy was written; a deleted one a tombstone after the copy's position.
    rows = {r["id"]: r for r in account.builder.data["cost_entries"]}
    changed, deleted = account.cost_entries[0], account.cost_entries[1]
    new = dict(rows[changed], id=999_002)
    load_bundle(
        engine,
        {
            "cost_entries": [{**rows[changed], "notes": "changed later"}, new],
            "delete": {"cost_entries": [deleted]},
        },
        now=after_the_pull(),
    )

    result = checked(api, target)

    costs = lists(result)["cost_entries"]
    assert (costs.served, costs.held) == (7, 7)  # 7 - 1 deleted + 1 new; the copy's 7
    assert (costs.changed_since, costs.deleted_since) == (2, 1)
    assert result.row_differences == []

    pull(api, target, "duckdb")  # pulled again: nothing left to tell apart
    again = lists(checked(api, target))["cost_entries"]
    assert (again.served, again.held, again.changed_since, again.deleted_since) == (7, 7, 0, 0)


def test_rows_older_than_the_copy_that_it_lacks_are_missing_past_its_position(
    api: Client, account: Account, engine: Engine, tmp_path: Path
) -> None:
    # A pull cut off, or rows stamped before the copy was written (a --keep-stamps load):
    # past the copy's position, yet no pull will bring them as changes made since.
    target = pulled(api, tmp_path)
    rows = {r["id"]: r for r in account.builder.data["cost_entries"]}
    first = account.cost_entries[0]
    load_bundle(
        engine,
        {"cost_entries": [{**rows[first], "notes": "before"}, dict(rows[first], id=999_003)]},
        now=LATER,  # 2026-06-10: later than the copy's rows, earlier than its files
    )
    result = checked(api, target)
    assert differences(result) == {
        ("cost_entries", first, "different", ("notes", "updated_at")),
        ("cost_entries", 999_003, "missing", ()),
    }
    assert lists(result)["cost_entries"].changed_since == 0


def test_a_row_twice_or_without_an_id_in_the_copy_is_a_difference(
    api: Client, account: Account, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path)
    metric = account.builder.data["metrics"][0]["id"]
    conn = duckdb.connect(str(target))
    conn.execute("INSERT INTO metrics SELECT * FROM metrics")  # each row twice
    conn.execute("UPDATE decisions SET id = NULL")
    conn.close()
    (decision,) = account.builder.data["decisions"]
    result = checked(api, target)
    assert differences(result) == {
        ("metrics", metric, "duplicate", ()),
        ("decisions", None, "extra", ()),
        ("decisions", decision["id"], "missing", ()),
    }


def test_a_cut_off_pull_into_files_is_refused(
    api: Client, account: Account, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path, "parquet")
    (target / PENDING_FILE).write_bytes(b"")  # what a pull killed mid-list leaves
    with pytest.raises(CopyError, match="was cut off: rows it read are still in"):
        checked(api, target)


def test_a_deletion_the_copy_kept_past_its_position_is_a_difference(
    api: Client, account: Account, engine: Engine, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path)
    gone = account.cost_entries[4]
    conn = duckdb.connect(str(target))
    conn.execute("CREATE TABLE kept AS SELECT * FROM cost_entries WHERE id = ?", [gone])
    conn.close()
    load_bundle(engine, {"delete": {"cost_entries": [gone]}}, now=LATER)
    pull(api, target, "duckdb")  # the copy applies the tombstone and moves past it
    conn = duckdb.connect(str(target))
    conn.execute("INSERT INTO cost_entries SELECT * FROM kept")
    conn.close()

    result = checked(api, target)

    # The tombstone is behind the copy's /deletions position: the row should not be there.
    assert differences(result) == {("cost_entries", gone, "extra", ())}
    assert lists(result)["cost_entries"].deleted_since == 0


def test_a_csv_copy_is_read_back_with_its_types(
    api: Client, account: Account, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path, "csv")
    path = target / "cost_entries.csv"
    with path.open(newline="") as f:
        table = list(csv.DictReader(f))
    edited = int(table[0]["id"])
    table[0]["description"] = "typed by hand"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)

    result = checked(api, target)

    # Everything else read back from text equals what is served (dates, stamps, booleans,
    # lists, nulls and empty text).
    assert differences(result) == {("cost_entries", edited, "different", ("description",))}


def test_lists_not_pulled_into_the_copy_are_said_and_left_out(
    api: Client, account: Account, tmp_path: Path
) -> None:
    chosen = [r for r in RESOURCES if r.name in ("initiatives", "cost_entries", "value_entries")]
    result = checked(api, pulled(api, tmp_path, resources=chosen))
    assert set(lists(result)) == {"initiatives", "cost_entries", "value_entries"}
    assert result.lists_not_pulled == ["metrics", "observations", "decisions", "integrations"]
    assert result.row_differences == []


def test_the_command_compares_rows_with_rows_and_exits_1_on_a_difference(
    base_url: str, api: Client, account: Account, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path)
    run = verify_command(base_url, account.token, target)

    equal = run("--rows")
    assert equal.returncode == 0, equal.stderr
    said = " ".join(equal.stdout.split())
    assert "22 rows of 7 lists compared: 0 differ" in said  # 3 + 7 + 6 + 1 + 3 + 1 + 1
    # served, copy, missing, extra, differ, changed since, deleted since
    assert "│ cost_entries │ 7 │ 7 │ 0 │ 0 │ 0 │ 0 │ 0 │" in said

    conn = duckdb.connect(str(target))
    conn.execute("UPDATE decisions SET rationale = 'rewritten'")
    conn.close()
    assert run().returncode == 0  # the figures alone do not see it
    differ = run("--rows")
    assert differ.returncode == 1, differ.stderr
    said = " ".join(differ.stdout.split())
    assert "22 rows of 7 lists compared: 1 differ" in said
    assert "│ decisions │ 1 │ 1 │ 0 │ 0 │ 1 │ 0 │ 0 │" in said
    assert "│ different │ rationale │" in said
    assert account.token not in differ.stdout + differ.stderr


def test_a_copy_pulled_with_resources_is_verified_with_the_same_resources(
    api: Client, account: Account, tmp_path: Path
) -> None:
    subset = ["decisions", "metrics"]
    target = pulled(api, tmp_path, resources=[r for r in RESOURCES if r.name in subset])
    # Without --resources the figures are compared, and differ: the copy has none of the
    # lists they are recomputed from, which a note says.
    whole = verify(api, target, workers=2)
    assert whole.figures and whole.differences
    assert any("holds no initiatives, cost_entries, value_entries" in n for n in whole.notes)
    # With them: nothing to compare but rows, so --rows is needed.
    with pytest.raises(CopyError, match="leaves out initiatives, cost_entries, value_entries"):
        verify(api, target, workers=2, resources=subset)
    rows = verify(api, target, rows=True, workers=2, resources=subset)
    assert not rows.figures
    assert rows.compared == []
    assert {name: (c.served, c.held) for name, c in lists(rows).items()} == {
        "decisions": (1, 1),
        "metrics": (1, 1),
    }
    assert rows.row_differences == [] and rows.lists_not_pulled == []
    # Budgets alone are neither figures nor rows compared one by one: nothing to compare,
    # with --rows too (it said "0 rows of 0 lists compared" and passed).
    budgets = pulled(
        api, tmp_path / "budgets", resources=[r for r in RESOURCES if r.name == "budgets"]
    )
    for with_rows in (True, False):  # without --rows it said to add --rows, which was refused
        with pytest.raises(CopyError, match="names no list compared row by row"):
            verify(api, budgets, rows=with_rows, workers=2, resources=["budgets"])
    # A list named that the copy does not hold is compared all the same: its rows missing.
    more = verify(api, target, rows=True, workers=2, resources=[*subset, "observations"])
    assert {(d.resource, d.kind) for d in more.row_differences} == {("observations", "missing")}
    assert len(more.row_differences) == ACCOUNT_ROWS["observations"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_list_empty_when_pulled_is_held_and_compared(
    base_url: str, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # An account with no value entry, metric, observation, decision or integration.
    b = BundleBuilder(first_id=5000)
    acct = b.account()
    owner = b.user(acct, role="owner")
    token = b.token(owner)
    initiative = b.initiative(acct, currency="USD", owner_id=owner)
    b.cost_entry(
        initiative, amount_cents=12_345, currency="USD", period_start="2026-01-01",
        period_end="2026-01-31",
    )  # fmt: skip
    b.load(engine)
    with Client(base_url, token, page_size=2) as api:
        target = pulled(api, tmp_path, fmt)
        result = checked(api, target)
        whole = verify(api, target, workers=2)
    # Each empty list is recorded as pulled: compared (0 and 0), not said to be left out.
    assert result.lists_not_pulled == []
    found = lists(result)
    assert set(found) == set(HELD)
    assert (found["value_entries"].served, found["value_entries"].held) == (0, 0)
    assert (found["cost_entries"].served, found["cost_entries"].held) == (1, 1)
    assert result.row_differences == [] and result.differences == []
    assert whole.differences == [] and whole.notes == []


def test_the_command_takes_the_resources_a_copy_was_pulled_with(
    base_url: str, api: Client, account: Account, tmp_path: Path
) -> None:
    target = pulled(api, tmp_path, resources=[r for r in RESOURCES if r.name == "decisions"])
    run = verify_command(base_url, account.token, target)

    unknown = run("--resources", "decisions,budget")
    assert unknown.returncode == 2
    assert "Unknown resource 'budget' in --resources" in unknown.stderr
    figures_only = run("--resources", "decisions")
    assert figures_only.returncode == 2
    assert "--resources leaves out initiatives, cost_entries, value_entries" in " ".join(
        figures_only.stderr.split()
    )
    rows = run("--rows", "--resources", "decisions")
    assert rows.returncode == 0, rows.stderr
    said = " ".join(rows.stdout.split())
    assert "1 rows of 1 lists compared: 0 differ" in said
    assert "Figures not compared" in said


@pytest.mark.store_independent
def test_figures_printed_to_a_file_or_pipe_are_never_cut_short(
    base_url: str, api: Client, account: Account, tmp_path: Path
) -> None:
    # Into cron's mail or a CI log (no terminal, no COLUMNS) rich laid the table out in 80
    # columns and cut figures to "70,0…".
    target = pulled(api, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"AIROI_TOKEN": account.token}
    command = [sys.executable, "-m", "airoi", "verify", "--base-url", base_url, "--store",
               str(target), "--all"]  # fmt: skip
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "…" not in run.stdout
    said = " ".join(run.stdout.split())
    # By hand: costs 10,000 + n for n in 0..6; approved value 50,000 + n for n = 0, 2, 4.
    cost, value = 7 * 10_000 + sum(range(7)), 3 * 50_000 + 0 + 2 + 4
    assert f"│ total_cost_cents │ portfolio │ all │ {cost} │ {cost} │" in said
    assert f"│ approved_value_cents │ portfolio │ all │ {value} │ {value} │" in said
    assert f"│ roi │ portfolio │ all │ {(value - cost) / cost!r} │" in said


@pytest.mark.store_independent
@pytest.mark.parametrize("store", ["", " "])
def test_an_empty_store_is_refused_not_taken_for_this_directory(
    base_url: str, account: Account, tmp_path: Path, store: str
) -> None:
    # --store "" (a variable left unset) verified the directory the command ran in.
    env = {**os.environ, "AIROI_TOKEN": account.token, "COLUMNS": "200"}
    command = [sys.executable, "-m", "airoi", "verify", "--base-url", base_url, "--store", store]
    run = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path
    )
    assert run.returncode == 2
    assert run.stderr.strip() == (
        "--store names no copy: give the .duckdb file or the directory airoi pull made."
    )
