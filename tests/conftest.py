"""Databases for the tests: SQLite always, PostgreSQL when AIROI_TEST_POSTGRES_URL names one.

Each test gets a migrated, empty store (`db_url`, `engine`) that it fills through the real
loader (see factories.py). `.ci/run` sets AIROI_TEST_REQUIRE_SERVICES=1, and then a missing
server fails instead of skipping.

Which stores a test runs on. A test of `db_url` runs on SQLite and again on PostgreSQL
wherever SQL or the store can answer differently: the lists and their filters, money, ROI,
breakdowns and budgets, the loader and the importers, cursors and copies, token lookups and
OAuth grants, deletions, isolation between accounts, abuse that reaches a statement,
migrations, and the store's own faults, deadlines and pools. A test of a layer above the
store (HTTP framing and headers, CORS, conditional requests, HEAD, error bodies, rate-limit
framing, the API description and docs pages, the dashboard's files, the tool endpoint's
protocol and argument errors, settings, logs) is marked `store_independent`, on its module
(`pytestmark`) or on the test, and runs on SQLite alone: on PostgreSQL it would run the same
code over the same rows. A test that parametrizes `db_url` itself names its stores.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import pytest
from hypothesis import settings
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.db.tables import metadata

# The tests' apps keep their own metrics, and each `airoi serve` they start makes its own
# directory: one set in the shell would be shared by all of them.
os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
# No property test is timed: an example's duration says how busy the machine is, not whether
# the property holds (Hypothesis' default 200 ms deadline failed under a loaded CI).
settings.register_profile("airoi", deadline=None)
settings.load_profile("airoi")
POSTGRES_URL = os.environ.get("AIROI_TEST_POSTGRES_URL", "")
REQUIRE_SERVICES = os.environ.get("AIROI_TEST_REQUIRE_SERVICES") == "1"


def _unavailable(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (AIROI_TEST_REQUIRE_SERVICES=1, so this fails instead of skipping)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def sqlite_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    path: Path = tmp_path_factory.mktemp("store") / "airoi-test.db"
    url = f"sqlite:///{path}"
    upgrade(make_engine(url))
    return url


@pytest.fixture(scope="session")
def postgresql_url() -> Iterator[str]:
    if not POSTGRES_URL:
        _unavailable(
            "PostgreSQL tests need AIROI_TEST_POSTGRES_URL (for example "
            "postgresql+psycopg://postgres@127.0.0.1:5432/test)"
        )
    admin = make_engine(POSTGRES_URL)
    name = f"airoi_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        admin.dispose()
        _unavailable(
            f"PostgreSQL at AIROI_TEST_POSTGRES_URL is not reachable: {type(exc).__name__}"
        )
    url = make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
    upgrade(make_engine(url))
    yield url
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis database for shared rate-limit counters (AIROI_TEST_REDIS_URL)."""
    url = os.environ.get("AIROI_TEST_REDIS_URL", "")
    if not url:
        _unavailable(
            "Redis tests need AIROI_TEST_REDIS_URL (for example redis://127.0.0.1:6379/15)"
        )
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        _unavailable(f"Redis at AIROI_TEST_REDIS_URL is not reachable: {type(exc).__name__}")
    return url


_engines: dict[str, Engine] = {}


def _empty(engine: Engine) -> None:
    # The store's secret stays, as every store keeps it (SEMANTICS R13).
    names = [t.name for t in reversed(metadata.sorted_tables) if t.name != "store_secret"]
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("TRUNCATE " + ", ".join(names) + " CASCADE"))
        else:
            for name in names:
                conn.execute(text(f"DELETE FROM {name}"))  # noqa: S608 - fixed table names


# Every store a test of `db_url` runs on, unless it is `store_independent` (see above).
STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "db_url" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs["argnames"]
        if "db_url" in ([n.strip() for n in names.split(",")] if isinstance(names, str) else names):
            return  # the test names its stores itself
    independent = metafunc.definition.get_closest_marker("store_independent") is not None
    metafunc.parametrize("db_url", STORES[:1] if independent else STORES, indirect=True)


@pytest.fixture
def db_url(request: pytest.FixtureRequest) -> str:
    """The URL of an empty, migrated store, on each store the test runs on (see above)."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    if url not in _engines:
        _engines[url] = make_engine(url)
    _empty(_engines[url])
    return url


@pytest.fixture
def engine(db_url: str) -> Engine:
    """A writing engine on the empty store of `db_url`."""
    return _engines[db_url]


@pytest.fixture
def client(db_url: str) -> Iterator[TestClient[Litestar]]:
    """A client of the served app, reading `db_url` through its read-only engine."""
    from airoi.app import create_app
    from airoi.settings import Settings

    app = create_app(Settings(database_url=db_url))
    with TestClient(app) as test_client:
        yield test_client
    app.state.engine.dispose()


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def client_at(db_url: str) -> Iterator[Callable[[date], TestClient[Litestar]]]:
    """Clients of the served app with `today` fixed (SEMANTICS R1), as AIROI_TODAY would."""
    from airoi.app import create_app
    from airoi.settings import Settings

    apps: list[Litestar] = []
    clients: list[TestClient[Litestar]] = []

    def make(today: date) -> TestClient[Litestar]:
        app = create_app(Settings(database_url=db_url, today=today))
        apps.append(app)
        clients.append(TestClient(app).__enter__())
        return clients[-1]

    yield make
    for test_client in clients:
        test_client.__exit__(None, None, None)
    for app in apps:
        app.state.engine.dispose()
