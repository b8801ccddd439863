"""Read-only serving works against a PostgreSQL hot standby.

The test builds its own throwaway primary and hot standby (initdb, pg_basebackup
-R -X stream) on free loopback ports, loads the primary through the real loader,
waits until the standby has replayed the load, and serves the standby with the
real app. The machine's shared PostgreSQL is only the switch that enables
PostgreSQL tests (AIROI_TEST_POSTGRES_URL); it is never touched.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, insert, text
from sqlalchemy.exc import DBAPIError, OperationalError

from airoi.app import create_app
from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.db.tables import accounts
from airoi.settings import Settings
from tests.conftest import POSTGRES_URL, _unavailable, bearer
from tests.db.test_read_only import read_only_refusal
from tests.factories import BundleBuilder

pytestmark = pytest.mark.postgresql

# Bounds on every wait, so a server that never comes up fails the test instead of hanging it.
COMMAND_TIMEOUT_S = 60
START_TIMEOUT_S = 30
REPLAY_TIMEOUT_S = 15
DATABASE = "airoi"
FIRST_LOAD = datetime(2026, 3, 1, tzinfo=UTC)
LATER_LOAD = datetime(2026, 3, 2, tzinfo=UTC)
TODAY = date(2026, 3, 31)
SERVER_PROGRAMS = ("initdb", "pg_ctl", "pg_basebackup", "postgres")


def _server_bin_dir() -> Path | None:
    """The newest /usr/lib/postgresql/<version>/bin holding every program needed, else PATH."""

    def version(path: str) -> tuple[int, ...]:
        name = Path(path).parent.name
        return tuple(int(part) for part in name.split(".") if part.isdigit())

    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        if all(os.access(Path(candidate) / name, os.X_OK) for name in SERVER_PROGRAMS):
            return Path(candidate)
    found = [shutil.which(name) for name in SERVER_PROGRAMS]
    if all(found):
        return Path(str(found[0])).parent
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _shown(log: Path | None, lines: int = 30) -> str:
    """The end of a server's log, to show beside a failure."""
    if log is None:
        return ""
    try:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        tail = "(could not be read)"
    return f"\n--- {log.name} ---\n{tail}"


class _Servers:
    """Runs PostgreSQL's programs in one tmp directory, as `postgres` when this process is root.

    PostgreSQL refuses to run as root, so under root every program runs with the
    `postgres` user's uid and gid and the directory is handed over to that user.
    """

    def __init__(self, bin_dir: Path, root: Path) -> None:
        self.bin_dir = bin_dir
        self.root = root
        self.started: list[Path] = []
        self.as_user: dict[str, Any] = {}
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(root, owner.pw_uid, owner.pw_gid)
            self.as_user = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}

    def run(
        self,
        program: str,
        *args: str,
        timeout: float = COMMAND_TIMEOUT_S,
        log: Path | None = None,
    ) -> None:
        """Runs one program to its end; a failure shows its output and the server's log."""
        command = [str(self.bin_dir / program), *args]
        try:
            done = subprocess.run(
                command,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
                **self.as_user,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"{program} did not finish within {timeout} s: {' '.join(command)}{_shown(log)}"
            )
        if done.returncode != 0:
            pytest.fail(
                f"{program} exited {done.returncode}: {' '.join(command)}\n"
                f"{done.stdout}{done.stderr}{_shown(log)}"
            )

    def start(self, data_dir: Path) -> None:
        log = self.root / f"{data_dir.name}.log"
        self.started.append(data_dir)
        self.run(
            "pg_ctl",
            "start",
            "--wait",
            f"--timeout={START_TIMEOUT_S}",
            f"--pgdata={data_dir}",
            f"--log={log}",
            timeout=START_TIMEOUT_S + 10,
            log=log,
        )

    def stop_all(self) -> None:
        """Stops every server started here, newest first; kills one that will not stop."""
        for data_dir in reversed(self.started):
            pid_file = data_dir / "postmaster.pid"
            if not pid_file.exists():
                continue
            stop = ["stop", "--mode=immediate", "--wait", "--timeout=15", f"--pgdata={data_dir}"]
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(
                    [str(self.bin_dir / "pg_ctl"), *stop],
                    cwd=self.root,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=30,
                    check=False,
                    **self.as_user,
                )
            # The first line of postmaster.pid is the server's process id.
            with contextlib.suppress(OSError, ValueError, IndexError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        self.started.clear()


def _wait_until_reachable(url: str, log: Path) -> None:
    engine = make_engine(url)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            try:
                with engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
                return
            except OperationalError as exc:
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"{url} did not accept connections within {START_TIMEOUT_S} s: "
                        f"{exc.orig}{_shown(log)}"
                    )
                time.sleep(0.05)
    finally:
        engine.dispose()


@dataclass
class Pair:
    primary_url: str
    standby_url: str
    primary: Engine  # a writer, as the CLI would use
    standby: Engine  # plain reads, to watch replay
    standby_log: Path

    def wait_for_replay(self) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with self.primary.connect() as conn:
            target = conn.execute(text("SELECT pg_current_wal_lsn()::text")).scalar_one()
        deadline = time.monotonic() + REPLAY_TIMEOUT_S
        replayed = None
        while time.monotonic() < deadline:
            with self.standby.connect() as conn:
                replayed, caught_up = conn.execute(
                    text(
                        "SELECT pg_last_wal_replay_lsn()::text, "
                        "coalesce(pg_last_wal_replay_lsn() >= CAST(:target AS pg_lsn), false)"
                    ),
                    {"target": target},
                ).one()
            if caught_up:
                return
            time.sleep(0.02)
        pytest.fail(
            f"the standby replayed up to {replayed}, not the primary's {target}, within "
            f"{REPLAY_TIMEOUT_S} s{_shown(self.standby_log)}"
        )


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    """A primary and its hot standby, both stopped and removed afterwards."""
    if not POSTGRES_URL:
        _unavailable(
            "PostgreSQL tests need AIROI_TEST_POSTGRES_URL (for example "
            "postgresql+psycopg://postgres@127.0.0.1:5432/test); the standby test builds "
            "its own servers but runs only where PostgreSQL tests are enabled"
        )
    bin_dir = _server_bin_dir()
    if bin_dir is None:
        _unavailable(
            "the hot standby test needs PostgreSQL's server programs "
            f"({', '.join(SERVER_PROGRAMS)}) in /usr/lib/postgresql/*/bin or on PATH"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _unavailable(
                "running as root, the hot standby test needs a `postgres` OS user to run "
                "the servers as (PostgreSQL refuses to run as root)"
            )
    assert bin_dir is not None
    # Directly under the system tmp: pytest's own tmp tree is private to this user, and a
    # short path keeps the Unix socket's name within its length limit.
    root = Path(tempfile.mkdtemp(prefix="airoi-standby-"))
    servers = _Servers(bin_dir, root)
    engines: list[Engine] = []
    try:
        primary_dir, standby_dir = root / "primary", root / "standby"
        primary_port = _free_port()
        servers.run(
            "initdb",
            f"--pgdata={primary_dir}",
            "--username=postgres",
            "--auth=trust",
            "--locale=C",
            "--encoding=UTF8",
            "--no-sync",
        )
        with (primary_dir / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {primary_port}\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{root}'\n"
                "wal_level = replica\n"
                "max_wal_senders = 4\n"
                "fsync = off\n"
                "shared_buffers = 16MB\n"
            )
        with (primary_dir / "pg_hba.conf").open("a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")
        servers.start(primary_dir)
        base = "postgresql+psycopg://postgres@127.0.0.1"
        _wait_until_reachable(f"{base}:{primary_port}/postgres", root / "primary.log")
        # Chosen while the primary listens, so the two can never be handed the same port.
        standby_port = _free_port()

        admin = make_engine(f"{base}:{primary_port}/postgres")
        engines.append(admin)
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{DATABASE}"'))
        primary_url = f"{base}:{primary_port}/{DATABASE}"
        primary = make_engine(primary_url)
        engines.append(primary)
        upgrade(primary)

        servers.run(
            "pg_basebackup",
            "--host=127.0.0.1",
            f"--port={primary_port}",
            "--username=postgres",
            f"--pgdata={standby_dir}",
            "--write-recovery-conf",
            "--wal-method=stream",
            "--checkpoint=fast",
            "--no-sync",
        )
        # Later lines win: the standby copied the primary's settings, port included.
        with (standby_dir / "postgresql.conf").open("a") as conf:
            conf.write(f"port = {standby_port}\nhot_standby = on\n")
        servers.start(standby_dir)
        standby_url = f"{base}:{standby_port}/{DATABASE}"
        _wait_until_reachable(standby_url, root / "standby.log")
        standby = make_engine(standby_url)
        engines.append(standby)
        with standby.connect() as conn:
            assert conn.execute(text("SELECT pg_is_in_recovery()")).scalar_one() is True
        yield Pair(primary_url, standby_url, primary, standby, root / "standby.log")
    finally:
        for engine in engines:
            engine.dispose()
        servers.stop_all()
        shutil.rmtree(root, ignore_errors=True)


def _get(client: TestClient[Litestar], token: str, path: str, **params: Any) -> Any:
    response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def test_serving_a_hot_standby(pair: Pair) -> None:
    b = BundleBuilder()
    acct = b.account(name="Standby Co")
    token = b.token(b.user(acct))
    triage = b.initiative(acct, title="Support triage bot")
    matcher = b.initiative(acct, title="Invoice matcher")
    costs = {
        b.cost_entry(triage, amount_cents=10_000, period_start="2026-01-05"): 10_000,
        b.cost_entry(triage, amount_cents=2_500, period_start="2026-02-05"): 2_500,
        b.cost_entry(matcher, amount_cents=4_000, period_start="2026-02-10"): 4_000,
    }
    b.value_entry(triage, amount_cents=50_000, period_start="2026-02-01")
    b.budget_version(triage, effective_from="2026-01-01", opex_cents=6_000)
    b.load(pair.primary, now=FIRST_LOAD)
    pair.wait_for_replay()

    app = create_app(Settings(database_url=pair.standby_url, today=TODAY))
    try:
        with TestClient(app) as client:
            assert client.get("/readyz").status_code == 200

            initiatives = _get(client, token, "initiatives")["data"]
            assert sorted(row["id"] for row in initiatives) == [triage, matcher]
            rows = _get(client, token, "cost_entries")["data"]
            assert {row["id"]: row["amount_cents"] for row in rows} == costs

            roi = _get(client, token, "roi")
            assert roi["approved_value_cents"] == 50_000
            assert roi["total_cost_cents"] == sum(costs.values())
            budgets = _get(client, token, "budgets")["data"]
            assert sorted(row["initiative_id"] for row in budgets) == [triage, matcher]

            # SEMANTICS R13: the cursor secret is the store's, replicated with it, so a cursor
            # a server of the primary issued continues on the standby's: both issue the same.
            on_primary = create_app(Settings(database_url=pair.primary_url, today=TODAY))
            try:
                with TestClient(on_primary) as primary_client:
                    for path in ("cost_entries", "budgets"):
                        cursor = _get(primary_client, token, path, limit=1)["page"]["next_cursor"]
                        assert _get(client, token, path, limit=1)["page"]["next_cursor"] == cursor
                        assert _get(client, token, path, limit=1, cursor=cursor) == _get(
                            primary_client, token, path, limit=1, cursor=cursor
                        )
            finally:
                on_primary.state.engine.dispose()

            # A later load on the primary reaches the served standby once replayed.
            later = BundleBuilder(first_id=100)
            changed = dict(b.data["cost_entries"][0], amount_cents=12_345)
            later.data["cost_entries"].append(changed)
            added = later.cost_entry(matcher, amount_cents=777, period_start="2026-03-10")
            later.load(pair.primary, now=LATER_LOAD)
            pair.wait_for_replay()
            since = _get(client, token, "cost_entries", updated_since="2026-03-02T00:00:00Z")
            assert [(row["id"], row["amount_cents"]) for row in since["data"]] == [
                (changed["id"], 12_345),
                (added, 777),
            ]
            assert len(_get(client, token, "cost_entries")["data"]) == len(costs) + 1

            # The serving engine refuses to write, by its own setting as well as the standby's.
            serving: Engine = app.state.engine
            with pytest.raises(DBAPIError) as refused, serving.begin() as conn:
                conn.execute(insert(accounts).values(name="Intruder", currency="USD"))
            assert read_only_refusal(refused.value), refused.value.orig
            with serving.connect() as conn:
                setting = conn.execute(text("SHOW default_transaction_read_only")).scalar_one()
                assert setting == "on"
                assert conn.execute(text("SELECT pg_is_in_recovery()")).scalar_one() is True
            assert client.get("/readyz").status_code == 200
    finally:
        app.state.engine.dispose()
