"""`airoi pull`'s files written once per walk, its targets, `--resources`, `--full-refresh`,
`--quiet`, and a refused pull that leaves nothing behind."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.copies.layout import PENDING_FILE, Format
from airoi.client.copies.lists import DELETIONS, RESOURCES
from airoi.client.pull import choose_resources, pull
from tests.client.conftest import LATER, Account
from tests.client.test_pull import (
    FORMATS,
    THEN,
    InterruptAfter,
    Interrupted,
    assert_store_equals_service,
    delete,
    expected_ids,
    give,
    stored,
    target_for,
)

duckdb = pytest.importorskip("duckdb")

FILE_FORMATS: list[Format] = ["parquet", "csv"]


def written_at(target: Path) -> dict[str, int]:
    return {path.name: path.stat().st_mtime_ns for path in target.iterdir()}


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_a_run_writes_only_the_files_whose_list_changed_each_once(
    base_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airoi.client.copies.files import FileStore

    writes: list[str] = []
    real_write = FileStore._write_file

    def counted(self: Any, name: str, query: str) -> int:
        writes.append(name)
        return int(real_write(self, name, query))

    monkeypatch.setattr(FileStore, "_write_file", counted)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, batch_rows=2)
    # Pages of two rows, written two rows at a time: still each file once, at its walk's end.
    assert sorted(writes) == sorted(r.name for r in RESOURCES)
    assert PENDING_FILE not in os.listdir(target)
    before = written_at(target)

    # One cost entry changed, one deleted: its file is written twice (rows, then the
    # tombstone), budgets once (read whole); no other list's file is written.
    changed = account.builder.data["cost_entries"][3]
    changed["amount_cents"] = 77_777
    account.load(engine, LATER)
    delete(engine, THEN[0], cost_entries=[account.cost_entries[5]])
    writes.clear()
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    assert writes == ["cost_entries", "cost_entries", "budgets"]
    assert (reports[DELETIONS].rows, reports[DELETIONS].deleted) == (1, 1)
    after = written_at(target)
    unchanged = {f"{r.name}.{fmt}" for r in RESOURCES} - {f"cost_entries.{fmt}", f"budgets.{fmt}"}
    assert {name for name in unchanged if before[name] != after[name]} == set()
    costs = stored(target, fmt, "cost_entries")
    assert len({row["id"] for row in costs}) == len(costs) == 6
    assert {row["id"]: row["amount_cents"] for row in costs}[changed["id"]] == 77_777
    assert_store_equals_service(target, fmt, base_url, account.token)
    assert PENDING_FILE not in os.listdir(target)


@pytest.mark.parametrize("fmt", FILE_FORMATS)
def test_a_run_cut_off_keeps_the_files_whole_and_the_next_run_finishes_them(
    base_url: str, account: Account, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    # Two requests for initiatives, then cost pages 1 and 2 (written, batch of one page);
    # the request for page 3 is cut off.
    cut = InterruptAfter(limit=5)
    with (
        Client(base_url, account.token, page_size=2, transport=cut) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, batch_rows=1)
    # The rows written wait beside the files, which hold only finished walks.
    assert len(stored(target, fmt, "initiatives")) == 3
    assert not (target / f"cost_entries.{fmt}").exists()
    assert (target / PENDING_FILE).exists()

    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    assert reports["cost_entries"].resumed
    assert reports["cost_entries"].rows == 3  # pages 3 and 4, and only those
    costs = stored(target, fmt, "cost_entries")
    assert [row["id"] for row in costs] == expected_ids(base_url, account.token, "cost_entries")
    assert [row["amount_cents"] for row in costs] == [10_000 + n for n in range(7)]
    assert PENDING_FILE not in os.listdir(target)


@pytest.mark.parametrize("fmt", FORMATS)
def test_resources_pulls_only_the_lists_named(
    base_url: str, account: Account, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    chosen = choose_resources("budgets, cost_entries")
    assert [r.name for r in chosen] == ["cost_entries", "budgets"]
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r.rows for r in pull(api, target, fmt, resources=chosen)}
        assert reports == {"cost_entries": 7, DELETIONS: 0, "budgets": 3}
        if fmt == "duckdb":
            conn = duckdb.connect(str(target), read_only=True)
            tables = {row[0] for row in conn.execute("SHOW TABLES").fetchall()}
            conn.close()
            assert tables == {"_airoi_state", "cost_entries", "budgets"}
        else:
            assert sorted(p.name for p in target.glob(f"*.{fmt}")) == [
                f"budgets.{fmt}",
                f"cost_entries.{fmt}",
            ]
        # Budgets alone: /deletions, which removes rows of the incremental lists, is not read.
        only = {
            r.name: r.rows for r in pull(api, target, fmt, resources=choose_resources("budgets"))
        }
        assert only == {"budgets": 3}
        # The other lists, later: each from the beginning.
        rest = {r.name: r for r in pull(api, target, fmt)}
    assert rest["initiatives"].start == "full" and rest["initiatives"].rows == 3
    assert rest["cost_entries"].resumed and rest["cost_entries"].rows == 0
    assert_store_equals_service(target, fmt, base_url, account.token)


def test_an_unknown_resource_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"Unknown resource 'costs' in --resources: use one"):
        choose_resources("initiatives,costs")
    with pytest.raises(ValueError, match=r"Unknown resource ''"):
        choose_resources("initiatives,")
    assert choose_resources(None) == RESOURCES


def add_stale_row(target: Path, fmt: Format) -> None:
    """A cost entry the service never served, as a copy from another server would hold."""
    conn = duckdb.connect(str(target) if fmt == "duckdb" else ":memory:")
    try:
        if fmt == "duckdb":
            conn.execute("INSERT INTO cost_entries BY NAME SELECT 999999 AS id")
            conn.execute("INSERT INTO initiatives BY NAME SELECT 999999 AS id")
            return
        for name in ("cost_entries", "initiatives"):
            path = target / f"{name}.{fmt}"
            reader = "read_parquet" if fmt == "parquet" else "read_csv"
            options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
            conn.execute(f"CREATE TABLE t AS SELECT * FROM {reader}('{path}')")  # noqa: S608
            conn.execute("INSERT INTO t BY NAME SELECT 999999 AS id")
            conn.execute(f"COPY t TO '{path}' ({options})")
            conn.execute("DROP TABLE t")
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_full_refresh_starts_the_lists_named_over(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
        add_stale_row(target, fmt)
        delete(engine, THEN[0], cost_entries=[account.cost_entries[0]])
        # cost_entries alone: read whole, its stale row gone; initiatives untouched.
        refreshed = {
            r.name: r
            for r in pull(
                api, target, fmt, resources=choose_resources("cost_entries"), full_refresh=True
            )
        }
        assert (refreshed["cost_entries"].start, refreshed["cost_entries"].rows) == ("full", 6)
        # The tombstone is read (the list read again no longer holds its row).
        assert (refreshed[DELETIONS].rows, refreshed[DELETIONS].deleted) == (1, 0)
        costs = [row["id"] for row in stored(target, fmt, "cost_entries")]
        assert costs == expected_ids(base_url, account.token, "cost_entries")
        assert 999999 in {row["id"] for row in stored(target, fmt, "initiatives")}

        # Every list: everything read again, /deletions too; the store is as served.
        again = {r.name: r for r in pull(api, target, fmt, full_refresh=True)}
    # /deletions is read from its beginning again only when every list starts over.
    assert {r.start for r in again.values()} == {"full"}
    assert (again["initiatives"].rows, again[DELETIONS].rows) == (3, 1)
    assert_store_equals_service(target, fmt, base_url, account.token)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_list_whose_table_or_file_is_gone_is_read_whole_again(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # Its file removed (or its table dropped) by hand, a list was made again of the rows
    # changed since its position alone (27 of about 40,000 cost entries), exit 0.
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
        if fmt == "duckdb":
            conn = duckdb.connect(str(target))
            conn.execute("DROP TABLE cost_entries")
            conn.close()
        else:
            (target / f"cost_entries.{fmt}").unlink()
        changed = account.builder.data["cost_entries"][0]
        give(engine, THEN[0], "cost_entries", {**changed, "amount_cents": 777})
        again = {r.name: r for r in pull(api, target, fmt)}
    assert (again["cost_entries"].start, again["cost_entries"].rows) == ("full", 7)
    assert again["initiatives"].start != "full"  # the others go on where they were
    assert_store_equals_service(target, fmt, base_url, account.token)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_full_refresh_refused_at_its_first_request_drops_nothing(
    base_url: str, account: Account, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    with (
        Client(base_url, account.token, page_size=2, transport=InterruptAfter(1)) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, full_refresh=True)
    assert len(stored(target, fmt, "cost_entries")) == 7
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    assert reports["cost_entries"].resumed and reports["cost_entries"].rows == 0


def airoi_pull(
    base_url: str, token: str, *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "airoi", "pull", "--base-url", base_url, *args]
    env = {**os.environ, "AIROI_TOKEN": token, "COLUMNS": "400"}
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, check=False, timeout=120, cwd=cwd
    )


@pytest.mark.store_independent
def test_the_command_refuses_leaving_nothing_and_quiet_says_nothing(
    base_url: str, account: Account, tmp_path: Path
) -> None:
    # A refused pull: bad target, unknown list, a token the service refuses.
    refused = airoi_pull(base_url, account.token, "--to", str(tmp_path / "out.txt"))
    assert refused.returncode == 2
    assert ".txt is no format airoi pull writes" in refused.stderr
    refused = airoi_pull(
        base_url, account.token, "--to", str(tmp_path / "a.duckdb"), "--resources", "costs"
    )
    assert refused.returncode == 2
    assert "Unknown resource 'costs' in --resources" in refused.stderr
    bad_token = "airoi_" + "z" * 43
    for target, extra in ((tmp_path / "a.duckdb", []), (tmp_path / "data", ["--format", "csv"])):
        refused = airoi_pull(base_url, bad_token, "--to", str(target), *extra)
        assert refused.returncode == 1
        assert refused.stderr.startswith("Pull stopped: 401")
        assert bad_token not in refused.stdout + refused.stderr
    assert list(tmp_path.iterdir()) == []

    target = tmp_path / "data"
    quiet = airoi_pull(
        base_url, account.token, "--to", str(target), "--quiet", "--resources", "cost_entries"
    )
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert sorted(p.name for p in target.iterdir()) == ["_airoi_state.json", "cost_entries.parquet"]
    loud = airoi_pull(base_url, account.token, "--to", str(target), "--full-refresh")
    assert loud.returncode == 0, loud.stderr
    assert "Pulled 25 rows into" in " ".join(loud.stdout.split())
    # Quiet, a failure is still said.
    failed = airoi_pull(base_url, bad_token, "--to", str(target), "--quiet")
    assert failed.returncode == 1 and failed.stderr.startswith("Pull stopped: 401")


@pytest.mark.store_independent
def test_a_database_pull_did_not_make_is_left_as_it_is(
    base_url: str, account: Account, db_url: str, tmp_path: Path
) -> None:
    # An SQLite file named as a store (the service's own file, say), and a DuckDB database of
    # someone else's with a table of the same name as a list: refused, and not a byte changed.
    sqlite_file = tmp_path / "airoi.db"
    with sqlite3.connect(sqlite_file) as conn:
        conn.execute("CREATE TABLE initiatives (id INTEGER PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO initiatives VALUES (1001, 'theirs')")
    theirs = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(theirs)) as conn:
        conn.execute("CREATE TABLE initiatives (id BIGINT, title VARCHAR)")
        conn.execute("INSERT INTO initiatives VALUES (1001, 'theirs')")
    before = {path: path.read_bytes() for path in (sqlite_file, theirs)}
    refused = airoi_pull(base_url, account.token, "--to", str(sqlite_file))
    assert refused.returncode == 2
    assert " ".join(refused.stderr.split()) == (
        f"{sqlite_file} is not a DuckDB file (it is an SQLite database); airoi "
        "pull writes its copy into a DuckDB file of its own: give a new .duckdb name."
    )
    refused = airoi_pull(base_url, account.token, "--to", str(theirs), "--resources", "initiatives")
    assert refused.returncode == 2
    assert " ".join(refused.stderr.split()) == (
        f"{theirs} is a DuckDB database airoi pull did not make (it holds "
        "initiatives and no _airoi_state); nothing in it was changed. Give a new .duckdb name."
    )
    assert {path: path.read_bytes() for path in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["airoi.db", "theirs.duckdb"]
    # verify says the same of the SQLite file, instead of DuckDB's attempt to read it.
    checked = subprocess.run(
        [sys.executable, "-m", "airoi", "verify", "--base-url", base_url, "--store",
         str(sqlite_file)],
        env={**os.environ, "AIROI_TOKEN": account.token, "COLUMNS": "400"},
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert checked.returncode != 0
    assert "is not a DuckDB file (it is an SQLite database)" in " ".join(checked.stderr.split())


@pytest.mark.store_independent
def test_a_directory_pull_did_not_make_is_left_as_it_is(
    base_url: str, account: Account, tmp_path: Path
) -> None:
    # Someone's own cost_entries.csv: it was rewritten, its rows kept beside the service's.
    theirs = tmp_path / "exports"
    theirs.mkdir()
    (theirs / "cost_entries.csv").write_text("id,amount_cents,note\n1,100,mine\n")
    refused = airoi_pull(base_url, account.token, "--to", str(theirs))
    assert refused.returncode == 2
    assert " ".join(refused.stderr.split()) == (
        f"{theirs} is a directory airoi pull did not make (it holds cost_entries.csv and no "
        "_airoi_state.json); nothing in it was changed. Give a new or empty directory."
    )
    assert [p.name for p in theirs.iterdir()] == ["cost_entries.csv"]
    assert (theirs / "cost_entries.csv").read_text() == "id,amount_cents,note\n1,100,mine\n"
    # An empty --to (a variable left unset) named the working directory.
    empty = airoi_pull(base_url, account.token, "--to", "")
    assert empty.returncode == 2
    assert "--to names no target" in empty.stderr
    blank = airoi_pull(base_url, account.token, "--to", " ")
    assert blank.returncode == 2
    assert "--to names no target" in blank.stderr
    assert not (Path.cwd() / " ").exists()
    # An empty directory, and one a first run left cut off, are the copy's own.
    (tmp_path / "fresh").mkdir()
    pulled = airoi_pull(base_url, account.token, "--to", str(tmp_path / "fresh"), "--quiet")
    assert pulled.returncode == 0, pulled.stderr
    # "." is the directory the command runs in, as any other name (it was taken for "").
    (tmp_path / "here").mkdir()
    here = airoi_pull(base_url, account.token, "--to", ".", "--quiet", cwd=tmp_path / "here")
    assert here.returncode == 0, here.stderr
    assert (tmp_path / "here" / "cost_entries.parquet").exists()
    again = airoi_pull(base_url, account.token, "--to", "./", "--quiet", cwd=tmp_path / "here")
    assert again.returncode == 0, again.stderr


@pytest.mark.store_independent
def test_a_duckdb_copy_another_process_holds_stops_the_pull_plainly(
    base_url: str, account: Account, tmp_path: Path
) -> None:
    target = tmp_path / "held.duckdb"
    assert airoi_pull(base_url, account.token, "--to", str(target), "-q").returncode == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]);"
         " print('held', flush=True); time.sleep(60)", str(target)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        refused = airoi_pull(base_url, account.token, "--to", str(target))
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 1
    said = " ".join(refused.stderr.split())
    assert said.startswith(f"Pull stopped: the store at {target} could not be written (IOException")
    assert "Traceback" not in refused.stderr


@pytest.mark.store_independent
def test_quiet_says_nothing_of_a_wait_that_ended_in_answers(
    base_url: str, account: Account, tmp_path: Path
) -> None:
    # The service answers only after the first attempts found nothing listening: a run that
    # then succeeds says nothing (cron mails what a quiet run prints).
    service = urlsplit(base_url)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def forward(source: socket.socket, sink: socket.socket) -> None:
        with source, sink:
            while data := source.recv(65536):
                sink.sendall(data)

    def proxy() -> None:
        time.sleep(1.5)  # nothing listens meanwhile: connections are refused
        listener = socket.create_server(("127.0.0.1", port))
        listener.settimeout(30)
        with listener:
            while True:
                try:
                    client, _ = listener.accept()
                except TimeoutError:
                    return
                upstream = socket.create_connection((service.hostname, service.port))
                threading.Thread(target=forward, args=(client, upstream), daemon=True).start()
                threading.Thread(target=forward, args=(upstream, client), daemon=True).start()

    threading.Thread(target=proxy, daemon=True).start()
    late = f"http://127.0.0.1:{port}{service.path}"
    quiet = airoi_pull(late, account.token, "--to", str(tmp_path / "q.duckdb"), "--quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
