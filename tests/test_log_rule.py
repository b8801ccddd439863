"""One log rule on every path (SEMANTICS R15): a failure is logged as its class, the route and
the request id; never SQL text, parameters, a connection string or a driver's message.

Canaries are planted where a failure's text could pick them up: a connection's credentials,
stored settings and error prose, people's e-mail addresses, a token and its hash, the
database and Redis URLs' passwords, a tool argument, and the column, table and parameter of
a statement that fails. Failures are then forced on the HTTP API, on /mcp, on /readyz, in
the rate limiter and at start-up, with uvicorn serving, while every record of every logger
is kept (the root logger at DEBUG; records caught as each logger hands them to its handlers,
whether or not they propagate) and formatted with its exception's traceback, plainly and in
both formats of `airoi serve`'s log (AIROI_LOG_FORMAT json and text). No canary may appear in
any of them.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, event
from sqlalchemy.engine import make_url

import airoi.db.kept_connections
import airoi.tools.server
from airoi.app import serving_schema_check
from airoi.db.engine import make_engine
from airoi.logs import JsonFormatter, TextFormatter
from airoi.settings import Settings
from airoi.tokens import hash_token
from tests.conftest import bearer
from tests.db.test_dead_connections import call_tool, on_checkout, on_return
from tests.servers import RunningServer
from tests.tools.world import EMAILS, SECRETS, World, build_world

DATABASE_PASSWORD = "db-pass-CANARY-3f9a"
REDIS_PASSWORD = "redis-pass-CANARY-81c2"
COLUMN = "canary_column_5e7d"
TABLE = "canary_table_0b4c"
PARAMETER = "param-CANARY-a61f"
ARGUMENT = "argument-CANARY-c03e"
FORMAT = logging.Formatter("%(name)s %(levelname)s %(message)s")
SERVE_FORMATS = (JsonFormatter(), TextFormatter())


class Kept:
    """Every record of every logger, formatted with its traceback."""

    def __init__(self) -> None:
        self.records: list[logging.LogRecord] = []
        self.stream = io.StringIO()

    def texts(self) -> list[str]:
        formats = (FORMAT, *SERVE_FORMATS)
        return [f.format(r) for f in formats for r in self.records] + [self.stream.getvalue()]

    def messages(self, name: str = "airoi") -> list[str]:
        return [r.getMessage() for r in self.records if r.name == name]


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    kept = Kept()
    real = logging.Logger.callHandlers

    def keep(self: logging.Logger, record: logging.LogRecord) -> None:
        kept.records.append(record)
        real(self, record)

    monkeypatch.setattr(logging.Logger, "callHandlers", keep)
    root = logging.getLogger()
    handler = logging.StreamHandler(kept.stream)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(FORMAT)
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    yield kept
    root.removeHandler(handler)
    root.setLevel(level)


def failing_statement(engine: Engine) -> tuple[list[int], Callable[[], None]]:
    """Every statement the app's engine runs through SQLAlchemy from now on (the token lookup
    excepted) is one naming a column and a table that do not exist, with a bound value."""
    failed: list[int] = []
    named = "%(canary)s" if engine.dialect.name == "postgresql" else "?"

    def rewrite(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> tuple[str, Any]:
        if "token_hash" in statement:
            return statement, parameters
        failed.append(1)
        sql = f"SELECT {COLUMN} FROM {TABLE} WHERE {COLUMN} = {named}"  # noqa: S608 - fixed
        return sql, {"canary": PARAMETER} if named != "?" else (PARAMETER,)

    event.listen(engine, "before_cursor_execute", rewrite, retval=True)
    return failed, lambda: event.remove(engine, "before_cursor_execute", rewrite)


def test_no_failure_logs_a_secret(
    db_url: str, engine: Engine, kept: Kept, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "/api/v1/roi"
    world: World = build_world(engine)
    token = world.token_a
    canaries = [
        *SECRETS,
        *EMAILS,
        token,
        hash_token(token),
        DATABASE_PASSWORD,
        REDIS_PASSWORD,
        COLUMN,
        TABLE,
        PARAMETER,
        ARGUMENT,
    ]
    url = db_url
    admin = None
    if db_url.startswith("postgresql"):
        # The server trusts loopback connections: the password is sent and ignored.
        url = make_url(db_url).set(password=DATABASE_PASSWORD).render_as_string(False)
        admin = make_engine(db_url)
    server = RunningServer(
        Settings(
            database_url=url,
            # The counter store is away: every authenticated request logs that it is.
            redis_url=f"redis://:{REDIS_PASSWORD}@127.0.0.1:9/0",
        )
    )
    app_engine = server.app.state.engine
    api = server.base_url + path
    statuses: dict[str, int] = {}
    try:
        # What succeeds: an answer, a tool result, a tool refusal repeating an argument.
        assert httpx.get(api, headers=bearer(token), timeout=30).status_code == 200
        assert call_tool(server, token, "list_integrations").status_code == 200
        assert call_tool(server, token, "search", query=EMAILS[0]).status_code == 200
        assert call_tool(server, token, "get_platform_setup_guide", platform=ARGUMENT).json()[
            "result"
        ]["isError"]

        # A statement that fails, on every path that reads.
        failed, undo_failing = failing_statement(app_engine)
        statuses["api statement"] = httpx.get(api, headers=bearer(token), timeout=30).status_code
        statuses["tool statement"] = call_tool(server, token, "list_integrations").status_code
        statuses["readyz statement"] = httpx.get(server.base_url + "/readyz").status_code
        undo_failing()
        assert len(failed) >= 3  # each path did run the failing statement

        # A connection that dies after the answer is built.
        killed = on_return(monkeypatch, airoi.db.kept_connections, "give_back", admin)
        statuses["api on return"] = httpx.get(api, headers=bearer(token), timeout=30).status_code
        assert killed
        killed = on_return(monkeypatch, airoi.tools.server, "close_or_discard", admin)
        statuses["tool on return"] = call_tool(server, token, "list_integrations").status_code
        assert killed

        if admin is not None:  # a backend terminated before the answer
            for name, nth, ask in (
                ("api terminated", 1, lambda: httpx.get(api, headers=bearer(token), timeout=30)),
                ("tool terminated", 2, lambda: call_tool(server, token, "list_integrations")),
            ):
                undo = on_checkout(app_engine, admin, nth)
                try:
                    statuses[name] = ask().status_code
                finally:
                    undo()
    finally:
        server.stop()
        if admin is not None:
            admin.dispose()

    # Start-up against a server that is not there, its URL carrying the password.
    away_url = f"postgresql+psycopg://airoi:{DATABASE_PASSWORD}@127.0.0.1:9/airoi"
    away = make_engine(away_url)
    serving_schema_check(away, Settings(database_url=away_url))
    away.dispose()

    # A table the statement names is not there: the store cannot be read as it is, 503 on
    # both stores (PostgreSQL's UndefinedTable was a 500).
    assert statuses["api statement"] == 503, statuses
    assert statuses["readyz statement"] == 503, statuses
    assert statuses["tool statement"] == 503, statuses
    assert statuses["api on return"] == statuses["tool on return"] == 200, statuses
    if admin is not None:
        assert statuses["api terminated"] == statuses["tool terminated"] == 503, statuses

    texts = kept.texts()
    for canary in canaries:
        leaked = [text for text in texts if canary in text]
        assert not leaked, (canary, leaked[:1])
    # The failures were logged, by the one rule: what failed, where, which request.
    airoi_lines = "\n".join(kept.messages())
    assert "on /mcp tool list_integrations (request " in airoi_lines
    assert f"on {path} (request " in airoi_lines
    assert "on /readyz (request " in airoi_lines
    if admin is None:
        # SQLite: returning a closed connection fails. A PostgreSQL serving connection is in
        # autocommit: returning it asks nothing of the server, and a dead one is not noticed.
        assert "connection discarded after the answer on /mcp (request " in airoi_lines
        assert f"connection discarded after the answer on {path} (request " in airoi_lines
    assert "the store cannot be reached at start (OperationalError)" in airoi_lines
    limiter = "\n".join(kept.messages("airoi.ratelimit"))
    assert f"rate limit store unreachable on {path} (request " in limiter
    assert not [r for r in kept.records if r.name.startswith("airoi") and r.exc_info]


def test_a_library_record_keeps_its_fixed_words_and_the_class_only(db_url: str, kept: Kept) -> None:
    # What SQLAlchemy's pool, psycopg and the MCP SDK log of a failure carries its text: a
    # connection's summary, the driver's message, the statement with its values.
    from airoi.app import create_app

    app = create_app(Settings(database_url=db_url))
    try:
        error = RuntimeError(
            f"SELECT {COLUMN} WHERE x = '{PARAMETER}' password={DATABASE_PASSWORD}"
        )
        for name in (app.state.engine.pool.logger.name, "psycopg", "mcp.server.streamable_http"):
            logger = logging.getLogger(name)
            try:
                raise error
            except RuntimeError:
                logger.exception(
                    "error ignored in rollback on %s: %s", f"<conn {PARAMETER}>", error
                )
            logger.error(f"Exception closing connection <host=db password={DATABASE_PASSWORD}>")
    finally:
        app.state.engine.dispose()
    texts = kept.texts()
    for canary in (COLUMN, PARAMETER, DATABASE_PASSWORD):
        assert not [text for text in texts if canary in text], canary
    messages = [r.getMessage() for r in kept.records if r.levelno >= logging.ERROR]
    assert "psycopg: error ignored in rollback on (RuntimeError, RuntimeError)" in messages
    assert "psycopg: Exception closing connection" in messages
