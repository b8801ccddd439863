"""Liveness, readiness and database faults: 503 with the SPEC 7 body, then recovery.

/healthz and /readyz sit outside /api/v1, need no token and are not in its
description (SPEC 9: the description lists the API's endpoints). A database that
is away or too slow is answered 503 with Retry-After and no traceback, and the
service answers again by itself once the database is back.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Connection, event, text, update
from sqlalchemy.engine import make_url

import airoi.app
from airoi.app import create_app
from airoi.auth import Principal
from airoi.db import kept_connections
from airoi.db.tables import cost_entries
from airoi.settings import DEFAULT_STATEMENT_TIMEOUT_MS, Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]


def assert_503(response: Any) -> str:
    assert response.status_code == 503
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "message", "request_id"}
    assert body["error"]["status"] == 503
    assert int(response.headers["retry-after"]) >= 1
    assert "Traceback" not in response.text
    return str(body["error"]["message"])


@pytest.fixture
def app_client() -> Iterator[Any]:
    apps: list[tuple[Litestar, Client]] = []

    def make(settings: Settings) -> Client:
        app = create_app(settings)
        client = TestClient(app).__enter__()
        apps.append((app, client))
        return client

    yield make
    for app, client in apps:
        client.__exit__(None, None, None)
        app.state.engine.dispose()


def test_healthz_and_readyz_need_no_token(db_url: str, app_client: Any) -> None:
    client = app_client(Settings(database_url=db_url))
    for path, status in (("/healthz", "alive"), ("/readyz", "ready")):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.json() == {"status": status}
        assert "ratelimit-limit" not in response.headers
    document = client.get("/api/v1/openapi.json").json()
    assert not {"/healthz", "/readyz", "/metrics"} & set(document["paths"])


def test_a_database_that_cannot_be_reached_is_503(
    app_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # Port 9 (discard) on loopback: nothing listens, so the connection is refused.
    client = app_client(Settings(database_url="postgresql+psycopg://airoi@127.0.0.1:9/none"))
    assert client.get("/healthz").status_code == 200  # alive without the database
    assert_503(client.get("/readyz"))
    message = assert_503(client.get("/api/v1/initiatives", headers=bearer("airoi_" + "x" * 43)))
    assert "database" in message
    assert not [r for r in caplog.records if r.exc_info], "a fault of the database is no traceback"
    # SEMANTICS R29: without a bearer token it is a 401 all the same, on the API and on /mcp;
    # the store is not asked.
    for headers in ({}, {"Authorization": "Basic eDp5"}):
        assert client.get("/api/v1/initiatives", headers=headers).status_code == 401
        mcp = client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=headers
        )
        assert mcp.status_code == 401


def test_a_database_fault_is_logged_with_the_route_not_the_path_as_sent(app_client: Any) -> None:
    # SEMANTICS R15: the client's path can hold a token pasted into it. The warning named the
    # path as sent; it names the route the path matched (the path when in the route's form).
    client = app_client(Settings(database_url="postgresql+psycopg://airoi@127.0.0.1:9/none"))
    pasted = "airoi_" + "p" * 43
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("airoi")  # on the logger, whatever the root's handlers are
    logger.addHandler(handler)
    try:
        for path in (f"/api/v1/initiatives/{pasted}", "/api/v1/initiatives/42"):
            assert_503(client.get(path, headers=bearer("airoi_" + "x" * 43)))
    finally:
        logger.removeHandler(handler)
    messages = [r.getMessage() for r in records]
    logged = [m for m in messages if "database unavailable" in m]
    assert len(logged) == 2, messages
    assert logged[0].startswith("database unavailable on /api/v1/initiatives/{id} (request ")
    assert logged[1].startswith("database unavailable on /api/v1/initiatives/42 (request ")
    assert not any("p" * 43 in m for m in messages)


def test_a_sqlite_store_that_cannot_be_opened_is_503(tmp_path: Any, app_client: Any) -> None:
    client = app_client(Settings(database_url=f"sqlite:///{tmp_path}/no/such/dir/airoi.db"))
    assert client.get("/healthz").status_code == 200
    assert_503(client.get("/readyz"))
    assert_503(client.get("/api/v1/roi", headers=bearer("airoi_" + "x" * 43)))


class TcpProxy:
    """A loopback port forwarding to the real PostgreSQL server, that can go away and return."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Close the port and every forwarded connection, as a server going down would."""
        with self._lock:
            closing, self._sockets = self._sockets, []
        if self._listener is not None:
            # Shut down first: a plain close leaves a thread blocked in accept() listening on.
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        for sock in closing:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.mark.postgresql
def test_the_service_recovers_when_the_database_returns(
    postgresql_url: str, app_client: Any
) -> None:
    from airoi.db.engine import make_engine

    writer = make_engine(postgresql_url)
    b = BundleBuilder()
    token = b.token(b.user(b.account(name="Recovery"), role="owner"))
    b.load(writer)
    real = make_url(postgresql_url)
    proxy = TcpProxy((real.host or "127.0.0.1", real.port or 5432))
    proxy.start()
    try:
        url = real.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
        client = app_client(Settings(database_url=url))
        assert client.get("/readyz").status_code == 200
        assert client.get("/api/v1/initiatives", headers=bearer(token)).status_code == 200

        proxy.stop()  # the database goes away, pooled connections and all
        assert_503(client.get("/api/v1/initiatives", headers=bearer(token)))
        assert_503(client.get("/readyz"))
        assert client.get("/healthz").status_code == 200

        proxy.start()  # back on the same port: no restart of the service
        assert client.get("/readyz").status_code == 200
        assert client.get("/api/v1/initiatives", headers=bearer(token)).status_code == 200
    finally:
        proxy.stop()
        writer.dispose()


def slow_query(conn: Connection) -> None:
    """A statement that runs for half a minute unless the statement timeout cuts it."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_sleep(30)"))
    else:
        conn.execute(
            text(
                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n "
                "WHERE x < 3000000000) SELECT count(*) FROM n"
            )
        )


def test_a_slow_query_is_cut_and_answered_503(
    db_url: str, engine: Any, app_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = BundleBuilder()
    token = b.token(b.user(b.account(), role="owner"))
    b.load(engine)
    client = app_client(Settings(database_url=db_url, statement_timeout_ms=100))
    real_authenticate = airoi.app.authenticate

    def slow_authenticate(conn: Connection, authorization: str | None, **kw: Any) -> Principal:
        slow_query(conn)
        return real_authenticate(conn, authorization, **kw)

    monkeypatch.setattr(airoi.app, "authenticate", slow_authenticate)
    message = assert_503(client.get("/api/v1/initiatives", headers=bearer(token)))
    assert "longer than the service allows" in message
    monkeypatch.setattr(airoi.app, "authenticate", real_authenticate)
    # The connection the timeout cut is usable again (or replaced): the next request reads.
    for _ in range(3):
        assert client.get("/api/v1/initiatives", headers=bearer(token)).status_code == 200


def test_statement_timeout_setting() -> None:
    assert Settings.from_env({}).statement_timeout_ms == DEFAULT_STATEMENT_TIMEOUT_MS == 5000
    env = {"AIROI_STATEMENT_TIMEOUT_MS": "250"}
    assert Settings.from_env(env).statement_timeout_ms == 250
    for bad in ("0", "-5", "5s"):
        with pytest.raises(ValueError, match="AIROI_STATEMENT_TIMEOUT_MS"):
            Settings.from_env({"AIROI_STATEMENT_TIMEOUT_MS": bad})


def test_a_sum_past_64_bits_on_sqlite_is_a_500_not_a_database_away(
    tmp_path: Any, app_client: Any
) -> None:
    # Two costs of 2**62 cents each: their sum is not a 64-bit integer, and SQLite's SUM
    # stops with "integer overflow". That is no database away (503): a 500. The loader
    # refuses such a store (SEMANTICS R38), so the amounts are written past it, as a
    # store changed by hand would hold them.
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    url = f"sqlite:///{tmp_path / 'big.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    account = b.account()
    token = b.token(b.user(account, role="owner"))
    initiative = b.initiative(account)
    for _ in range(2):
        b.cost_entry(initiative, amount_cents=100, period_start="2026-01-05")
    b.load(engine)
    with engine.begin() as conn:
        conn.execute(update(cost_entries).values(amount_cents=2**62, account_amount_cents=2**62))
    engine.dispose()
    client = app_client(Settings(database_url=url))
    response = client.get("/api/v1/roi", headers=bearer(token))
    assert response.status_code == 500
    assert set(response.json()["error"]) == {"status", "message", "request_id"}


def migrated_sqlite(path: Path) -> str:
    """The URL of a new SQLite store at `path`, migrated, with no connection left open."""
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    url = f"sqlite:///{path}"
    writer = make_engine(url)
    upgrade(writer)
    writer.dispose()
    return url


@pytest.fixture
def scratch_url(db_url: str, tmp_path: Any) -> Iterator[str]:
    """A migrated store of `db_url`'s kind of its own, for a test that breaks it."""
    import uuid

    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    if db_url.startswith("sqlite"):
        yield migrated_sqlite(tmp_path / "scratch.db")
        return
    admin = make_engine(db_url)
    name = f"airoi_scratch_{uuid.uuid4().hex[:12]}"
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(db_url).set(database=name).render_as_string(hide_password=False)
    writer = make_engine(url)
    upgrade(writer)
    writer.dispose()
    yield url
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def test_readyz_reads_through_the_serving_engine_and_healthz_touches_nothing(
    db_url: str, app_client: Any
) -> None:
    client = app_client(Settings(database_url=db_url))
    engine = client.app.state.engine
    checkouts: list[int] = []
    event.listen(engine, "checkout", lambda *_: checkouts.append(1))
    assert client.get("/healthz").status_code == 200
    assert checkouts == []  # no dependency behind liveness
    assert client.get("/readyz").status_code == 200
    assert checkouts == [1]  # one connection of the serving pool, as a request holds one
    assert kept_connections.held(engine) == 0


@pytest.mark.parametrize("table", ["tokens", "accounts", "cost_entries"])
def test_a_store_missing_a_table_is_not_ready(
    scratch_url: str, app_client: Any, table: str
) -> None:
    from airoi.db.engine import make_engine

    client = app_client(Settings(database_url=scratch_url))
    assert client.get("/readyz").status_code == 200
    writer = make_engine(scratch_url)
    with writer.begin() as conn:
        cascade = " CASCADE" if writer.dialect.name == "postgresql" else ""
        conn.execute(text(f"DROP TABLE {table}{cascade}"))
    writer.dispose()
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("airoi")
    logger.addHandler(handler)
    try:
        response = client.get("/readyz")
    finally:
        logger.removeHandler(handler)
    assert_503(response)  # it was 200: SELECT 1 reads no table
    request_id = response.headers["x-request-id"]
    lines = [r.getMessage() for r in records if r.name == "airoi"]
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"store cannot be read on /readyz (request {request_id}): ") or (
        lines[0].startswith(f"database unavailable on /readyz (request {request_id}): ")
    )
    assert table not in lines[0]  # the class alone, never the driver's text (SEMANTICS R15)


@pytest.mark.parametrize("dropped", ["search_fts", "search_fts_idx", "search_fts_data"])
def test_a_sqlite_store_missing_its_search_index_is_not_ready(
    tmp_path: Any, app_client: Any, dropped: str
) -> None:
    # The search tool answered 503 while /readyz said ready: the index is not among the
    # tables of the schema's metadata.
    from airoi.db.engine import make_engine

    url = migrated_sqlite(tmp_path / "airoi.db")
    client = app_client(Settings(database_url=url))
    writer = make_engine(url)
    b = BundleBuilder()
    account = b.account()
    for n in range(3):  # entries in the index, so that a search reads its tables
        b.initiative(account, title=f"Ready for launch {n}")
    b.load(writer)
    assert client.get("/readyz").status_code == 200
    with writer.begin() as conn:
        conn.execute(text(f"DROP TABLE {dropped}"))
    writer.dispose()
    assert_503(client.get("/readyz"))


def test_a_sqlite_file_that_is_not_a_database_is_not_ready(tmp_path: Any, app_client: Any) -> None:
    path = tmp_path / "airoi.db"
    client = app_client(Settings(database_url=migrated_sqlite(path)))
    assert client.get("/readyz").status_code == 200
    client.app.state.engine.dispose()  # a new connection reads the file as it now is
    with path.open("r+b") as store:
        store.write(b"this is no SQLite header" * 8)
    assert_503(client.get("/readyz"))  # it was 200: SQLite opens a file lazily


def test_a_sqlite_store_in_a_directory_that_cannot_be_written_is_not_ready(
    tmp_path: Any, app_client: Any
) -> None:
    # A store in WAL mode is read through files beside it (-shm, -wal) that SQLite creates:
    # in a directory it cannot write, every request was 503 and /readyz said 200.
    import subprocess

    directory = tmp_path / "store"
    directory.mkdir()
    url = migrated_sqlite(directory / "airoi.db")
    for leftover in directory.glob("airoi.db-*"):
        leftover.unlink()
    # Read-only even for root: an immutable directory (chattr), where the file system has it.
    immutable = subprocess.run(["chattr", "+i", str(directory)], check=False, capture_output=True)
    if immutable.returncode:
        pytest.skip("this file system cannot make a directory immutable (chattr +i)")
    try:
        client = app_client(Settings(database_url=url))
        assert_503(client.get("/api/v1/initiatives", headers=bearer("airoi_" + "x" * 43)))
        assert_503(client.get("/readyz"))
        assert client.get("/healthz").status_code == 200
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


def test_a_table_renamed_under_the_service_is_503_on_every_store(
    scratch_url: str, app_client: Any
) -> None:
    # PostgreSQL answered 500 (an undefined table taken for a fault of the service's own),
    # SQLite 503; /readyz said ready meanwhile.
    from airoi.db.engine import make_engine

    writer = make_engine(scratch_url)
    b = BundleBuilder()
    token = b.token(b.user(b.account()))
    b.load(writer)
    client = app_client(Settings(database_url=scratch_url))
    assert client.get("/api/v1/cost_entries", headers=bearer(token)).status_code == 200
    with writer.begin() as conn:
        conn.execute(text("ALTER TABLE cost_entries RENAME TO cost_entries_away"))
    writer.dispose()
    assert_503(client.get("/api/v1/cost_entries", headers=bearer(token)))
    assert_503(client.get("/readyz"))


def test_a_sqlite_store_removed_under_the_service_is_not_ready(
    tmp_path: Any, app_client: Any
) -> None:
    # The connections the pool kept still read the removed file, so /readyz said 200 while
    # every request on a new connection was answered 503.
    path = tmp_path / "airoi.db"
    client = app_client(Settings(database_url=migrated_sqlite(path)))
    assert client.get("/readyz").status_code == 200
    for file in tmp_path.glob("airoi.db*"):
        file.unlink()
    assert_503(client.get("/readyz"))
    assert client.get("/healthz").status_code == 200
