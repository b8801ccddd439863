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

Apps. `client` and `client_at` serve one app per store (and per day fixed as today) for the
whole session, as building one costs far more than most tests that use it (about 0.3 s).
Each time a test is given one, the state the app keeps between requests is made new: the
rate limiter's counts, the token cache's rows, the cursor codec (read from the store's
secret, which a test may replace), the client's cookies; the store itself is emptied by
`db_url`. A test that reaches into the app (its engine's events or pool, its token cache)
is marked `fresh_app` and gets apps of its own, built for it and disposed of after it.
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
from airoi.settings import Settings

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


# The modules whose tests start something outside this process (a fuzzer, a code generator,
# a browser, an install, `airoi serve` with workers, npm tools), longest first. They are
# scheduled first, so the run never ends waiting on one of them. scripts/test hands tests
# out with xdist's `worksteal`: each worker starts on its half, and one that runs out takes
# tests from the end of another's, so the short tests queued behind the slow ones on the
# first worker do not wait for them. (Measured on two cores: the whole run takes about as
# long in collection order as in this one; the order decides what runs last.)
SLOW_EXTERNALS = (
    "test_schemathesis.py",
    "test_generated_clients.py",
    "browser/test_dashboard.py",
    "browser/test_oauth_signin.py",
    "browser/test_docs_page.py",
    "client/test_install_beside.py",
    "bench/test_faults.py",
    "oauth/test_sign_in_clients.py",
    "test_workers.py",
    "test_http_limits.py",
    "api/test_openapi_lint.py",
    "test_logs.py",
    "client/test_light.py",
)
_TESTS = Path(__file__).parent
assert all((_TESTS / name).is_file() for name in SLOW_EXTERNALS), "a slow module was moved"
_SLOW_RANK = {str(_TESTS / name): place for place, name in enumerate(SLOW_EXTERNALS)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow externals first, in SLOW_EXTERNALS' order; the rest keep theirs."""
    items.sort(key=lambda item: _SLOW_RANK.get(str(item.path), len(_SLOW_RANK)))


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


class Apps:
    """The served apps of one store, one per day fixed as today (None: the clock's day), each
    with its test client, made when first asked for and kept until `close`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.clients: dict[date | None, TestClient[Litestar]] = {}

    def client(self, today: date | None) -> TestClient[Litestar]:
        """The client of the app for `today`, its per-request state made new (see above)."""
        from airoi.listing import Cursors
        from airoi.ratelimit import RateLimiter

        test_client = self.clients.get(today)
        if test_client is None:
            test_client = self.clients[today] = _started(self.url, today)
        state = test_client.app.state
        settings: Settings = state.settings
        state.rate_limiter = RateLimiter(settings.rate_limit, settings.redis_url)
        state.token_cache.clear()
        state.cursors = Cursors(settings.secret_key)
        test_client.cookies.clear()
        return test_client

    def close(self) -> None:
        for test_client in self.clients.values():
            _stopped(test_client)
        self.clients = {}


def _started(url: str, today: date | None) -> TestClient[Litestar]:
    from airoi.app import create_app

    test_client = TestClient(create_app(Settings(database_url=url, today=today)))
    return test_client.__enter__()


def _stopped(test_client: TestClient[Litestar]) -> None:
    test_client.__exit__(None, None, None)
    test_client.app.state.engine.dispose()


# One per store, each depending on its store's fixture so that the apps stop before the
# store is dropped.
@pytest.fixture(scope="session")
def sqlite_apps(sqlite_url: str) -> Iterator[Apps]:
    apps = Apps(sqlite_url)
    yield apps
    apps.close()


@pytest.fixture(scope="session")
def postgresql_apps(postgresql_url: str) -> Iterator[Apps]:
    apps = Apps(postgresql_url)
    yield apps
    apps.close()


@pytest.fixture
def client_at(
    db_url: str, request: pytest.FixtureRequest
) -> Iterator[Callable[[date | None], TestClient[Litestar]]]:
    """Clients of the served app with `today` fixed (SEMANTICS R1), as AIROI_TODAY would
    (None: the clock's day), reading `db_url` through its read-only engine. Each call's is as
    a new app's: the session's app of the store and day with its state made new, or for a
    test marked `fresh_app` a new app indeed."""
    if request.node.get_closest_marker("fresh_app") is None:
        shared: Apps = request.getfixturevalue(f"{_store_of(db_url)}_apps")
        yield shared.client
        return
    made: list[Apps] = []

    def fresh(today: date | None) -> TestClient[Litestar]:
        made.append(Apps(db_url))
        return made[-1].client(today)

    yield fresh
    for apps in made:
        apps.close()


def _store_of(url: str) -> str:
    return "postgresql" if make_url(url).get_backend_name() == "postgresql" else "sqlite"


@pytest.fixture
def client(client_at: Callable[[date | None], TestClient[Litestar]]) -> TestClient[Litestar]:
    """A client of the served app, reading `db_url` through its read-only engine."""
    return client_at(None)


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}
