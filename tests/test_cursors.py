"""Cursors: signed with the store's own secret, bound to the account, range-checked.

SEMANTICS R13 (and R36 for the resume cursor they share the codec with).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, delete

from airoi.app import create_app
from airoi.db.secret import ensure_store_secret, read_store_secret
from airoi.db.tables import store_secret
from airoi.listing import MAX_ID, CursorCodec, Position
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
# /budgets has its own page (no resume_cursor), /deletions its own keyset (deleted_at, seq).
LISTS = ["cost_entries", "budgets", "initiatives", "deletions"]
EPOCH = datetime(1970, 1, 1)


def _secret(engine: Engine) -> bytes:
    with engine.connect() as conn:
        secret = read_store_secret(conn)
    assert secret is not None
    return secret


def _two_accounts(engine: Engine, entries: int = 3) -> tuple[str, str]:
    """Accounts A and B, each with `entries` cost entries on one initiative: their tokens."""
    b = BundleBuilder()
    tokens = []
    for name in ("Alpha", "Beta"):
        account = b.account(name=name)
        tokens.append(b.token(b.user(account, role="owner")))
        initiative = b.initiative(account)
        for _ in range(entries):
            b.cost_entry(initiative)
        b.initiative(account)  # two initiatives: /initiatives and /budgets have a next page
    b.load(engine)
    return tokens[0], tokens[1]


def _ask(client: Client, token: str, path: str, **params: Any) -> Any:
    return client.get(f"/api/v1/{path}", params=params, headers=bearer(token))


def _refused(response: Any) -> str:
    assert response.status_code == 400, response.text
    body = response.json()
    # SPEC 7's body.
    assert body == {
        "error": {
            "status": 400,
            "message": body["error"]["message"],
            "request_id": response.headers["x-request-id"],
        }
    }
    return str(body["error"]["message"])


@contextmanager
def _app(db_url: str, secret_key: bytes | None = None) -> Iterator[Client]:
    app = create_app(Settings(database_url=db_url, secret_key=secret_key))
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


def _first_cursor(client: Client, token: str, path: str = "cost_entries") -> str:
    response = _ask(client, token, path, limit=1)
    assert response.status_code == 200, response.text
    cursor = response.json()["page"]["next_cursor"]
    assert isinstance(cursor, str)
    return cursor


def _account_of(token: str, client: Client, engine: Engine) -> int:
    """The account id the token's cursors are bound to, read back from a cursor it got
    (opened with the store's own secret: a cursor reads as nothing without it)."""
    cursor = _first_cursor(client, token)
    return int(CursorCodec(_secret(engine)).unseal(cursor).split(b"|")[1])


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(
    ("micros", "row_id"),
    [
        (0, 2**63),  # one past BIGINT: the store's own error, a 500, before R13 was kept
        (0, 10**19 - 1),
        (0, 0),
        (10**18, 1),  # the year 33658
        (-(10**18), 1),  # before the year 1
        (253402300800 * 10**6, 1),  # 10000-01-01T00:00:00
        (-62135596800 * 10**6 - 1, 1),  # the last microsecond of the year 0
    ],
)
def test_a_signed_position_out_of_range_is_400_not_500(
    client: Client, engine: Engine, path: str, micros: int, row_id: int
) -> None:
    # SEMANTICS R13: every decoded number is checked before it reaches SQL. Signed here with
    # the store's own secret, as if it had leaked: the position is still refused.
    token, _ = _two_accounts(engine)
    account = _account_of(token, client, engine)
    cursor = CursorCodec(_secret(engine)).seal(f"{path}|{account}|{micros}|{row_id}".encode())
    assert "out of range" in _refused(_ask(client, token, path, cursor=cursor))


@pytest.mark.parametrize("path", LISTS)
def test_the_edges_of_the_range_are_served(client: Client, engine: Engine, path: str) -> None:
    # SEMANTICS R13: the largest id and the first and last instants a store can hold.
    token, _ = _two_accounts(engine)
    account = _account_of(token, client, engine)
    codec = CursorCodec(_secret(engine))
    for stamp, row_id in (
        (datetime(1, 1, 1), MAX_ID),
        (datetime(9999, 12, 31, 23, 59, 59, 999_999), MAX_ID),
        (datetime(1, 1, 1), 1),
    ):
        cursor = codec.encode(path, account, Position(stamp, row_id))
        response = _ask(client, token, path, cursor=cursor)
        assert response.status_code == 200, response.text
        after_last = stamp.year == 9999
        assert (response.json()["data"] == []) is (after_last or path == "deletions")


@pytest.mark.parametrize("path", LISTS)
def test_a_payload_the_service_never_writes_is_refused(
    client: Client, engine: Engine, path: str
) -> None:
    # SEMANTICS R13: even signed, only the service's own shape of payload is read.
    token, _ = _two_accounts(engine)
    account = _account_of(token, client, engine)
    codec = CursorCodec(_secret(engine))
    for payload in (
        f"{path}|{account}|0|-5",
        f"{path}|{account}|0| 5",
        f"{path}|{account}|0|1_0",
        f"{path}|{account}|0|+5",
        f"{path}|{account}|0|1|1",
        f"{path}|{account}|0",
        f"{path}|{account}|0|{'9' * 40}",
        f"{path}|{account}|0|٥",  # a digit int() reads
        "",
    ):
        cursor = codec.seal(payload.encode())
        assert "not a cursor this endpoint issued" in _refused(
            _ask(client, token, path, cursor=cursor)
        )


@pytest.mark.parametrize("path", LISTS)
def test_a_cursor_signed_with_the_constant_of_the_source_is_refused(
    client: Client, engine: Engine, path: str
) -> None:
    # SEMANTICS R13: the key of earlier versions was in the source, so anyone could sign
    # with it; those cursors (also every one issued before) are refused now.
    token, _ = _two_accounts(engine)
    for payload in (f"{path}|0|{2**63}", f"{path}|0|1"):
        raw = payload.encode()
        tag = hmac.new(b"airoi cursor v1", raw, hashlib.blake2b).digest()[:8]
        cursor = base64.urlsafe_b64encode(raw + tag).decode().rstrip("=")
        assert "not a cursor this endpoint issued" in _refused(
            _ask(client, token, path, cursor=cursor)
        )


@pytest.mark.parametrize("path", LISTS)
def test_a_cursor_of_another_account_is_refused(client: Client, engine: Engine, path: str) -> None:
    # SEMANTICS R13: before, B's token with A's cursor walked B's rows from A's position,
    # silently leaving out those of B's before it.
    token_a, token_b = _two_accounts(engine)
    path_with_rows = "cost_entries" if path == "deletions" else path
    cursor_a = _first_cursor(client, token_a, path_with_rows)
    if path == "deletions":  # a cursor of the list the tombstones would be served from
        account_a = _account_of(token_a, client, engine)
        cursor_a = CursorCodec(_secret(engine)).encode(
            "deletions", account_a, Position(datetime(2026, 1, 1), 1)
        )
    message = _refused(_ask(client, token_b, path, cursor=cursor_a))
    assert message == (
        "The cursor was issued to another account; a cursor only continues a list for the "
        "account of the token it was served to."
    )
    # The cursor is good for the account it was served to.
    assert _ask(client, token_a, path, cursor=cursor_a).status_code == 200


def test_the_resume_cursor_is_bound_alike(client: Client, engine: Engine) -> None:
    # SEMANTICS R36: the resume cursor of the last page, and an empty page's (the cursor
    # passed), are the account's own as well.
    token_a, token_b = _two_accounts(engine, entries=1)
    last = _ask(client, token_a, "cost_entries").json()["page"]
    assert last["next_cursor"] is None
    resume = last["resume_cursor"]
    empty = _ask(client, token_a, "cost_entries", cursor=resume).json()
    assert empty == {
        "data": [],
        "page": {"has_more": False, "next_cursor": None, "resume_cursor": resume},
    }
    assert "another account" in _refused(_ask(client, token_b, "cost_entries", cursor=resume))


def test_a_cursor_of_another_endpoint_is_still_refused(client: Client, engine: Engine) -> None:
    # SEMANTICS R13
    token, _ = _two_accounts(engine)
    cursor = _first_cursor(client, token, "initiatives")
    message = _refused(_ask(client, token, "budgets", cursor=cursor))
    assert message == (
        "The cursor was issued by another endpoint (initiatives); a cursor only continues "
        "the list it came from."
    )


def test_two_apps_over_one_store_serve_each_others_cursors(db_url: str, engine: Engine) -> None:
    # SEMANTICS R13: the secret is the store's, so every server of it (more workers, a hot
    # standby) reads the cursors any of them issued.
    token, _ = _two_accounts(engine)
    with _app(db_url) as first, _app(db_url) as second:
        for path in ("cost_entries", "budgets"):
            from_first = _first_cursor(first, token, path)
            from_second = _first_cursor(second, token, path)
            assert from_first == from_second
            again = _ask(second, token, path, cursor=from_first, limit=1)
            assert again.status_code == 200, again.text
            assert again.json() == _ask(first, token, path, cursor=from_first, limit=1).json()


def test_airoi_secret_key_signs_with_the_stores(db_url: str, engine: Engine) -> None:
    # SEMANTICS R13: AIROI_SECRET_KEY changes what the store signs with; apps given different
    # keys (or none) refuse each other's cursors, apps given the same one read them.
    token, _ = _two_accounts(engine)
    one = Settings.from_env({"AIROI_SECRET_KEY": "k" * 32}).secret_key
    other = Settings.from_env({"AIROI_SECRET_KEY": "q" * 64}).secret_key
    with (
        _app(db_url) as stored,
        _app(db_url, one) as first,
        _app(db_url, one) as same,
        _app(db_url, other) as second,
    ):
        cursors = {
            name: _first_cursor(app, token)
            for name, app in (("stored", stored), ("first", first), ("second", second))
        }
        assert len(set(cursors.values())) == 3
        assert _ask(same, token, "cost_entries", cursor=cursors["first"]).status_code == 200
        for app, foreign in (
            (first, "second"),
            (second, "first"),
            (first, "stored"),
            (stored, "first"),
        ):
            message = _refused(_ask(app, token, "cost_entries", cursor=cursors[foreign]))
            assert "not a cursor this endpoint issued" in message


@pytest.mark.parametrize(
    ("value", "told"),
    [
        ("short", "has 5 characters"),
        ("k" * 513, "has 513 characters"),
        ("k" * 31 + " ", "holds a space"),
        ("é" * 40, "outside printable ASCII"),
    ],
)
def test_a_secret_key_of_the_wrong_form_is_named_and_not_repeated(value: str, told: str) -> None:
    with pytest.raises(ValueError, match="AIROI_SECRET_KEY must be 32 to 512") as refused:
        Settings.from_env({"AIROI_SECRET_KEY": value})
    assert told in str(refused.value)
    assert value not in str(refused.value)


def test_the_secret_key_is_not_in_the_settings_repr() -> None:
    settings = Settings.from_env({"AIROI_SECRET_KEY": "s3cret-" * 6})
    assert settings.secret_key == ("s3cret-" * 6).encode()
    assert "s3cret" not in repr(settings)


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def _every_log_line() -> Iterator[list[str]]:
    """Every line logged meanwhile, at any level, whether its logger propagates or not."""
    handler = _Lines()
    names = ["", "airoi", "airoi.access", "airoi.ratelimit", "litestar", "uvicorn"]
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


def _forms(secret: bytes) -> list[str]:
    """The ways a secret could be written out."""
    key = hmac.new(secret, b"airoi cursor v2", hashlib.sha256).digest()
    forms = []
    for value in (secret, key):
        forms += [
            value.hex(),
            base64.b64encode(value).decode(),
            base64.urlsafe_b64encode(value).decode().rstrip("="),
            repr(value)[2:-1],
        ]
    return forms


def test_the_secret_is_in_no_response_and_no_log_line(db_url: str, engine: Engine) -> None:
    # SEMANTICS R13, R15: the secret signs cursors and is never shown.
    token, _ = _two_accounts(engine)
    given = "given-" + "g" * 40
    forms = _forms(_secret(engine)) + _forms(given.encode()) + [given]
    answers: list[str] = []
    with _every_log_line() as lines:
        for secret_key in (None, given.encode()):
            with _app(db_url, secret_key) as client:
                for path in ("cost_entries", "budgets", "initiatives", "deletions", "roi"):
                    cursor = None
                    while True:
                        response = _ask(
                            client, token, path, limit=1, **({"cursor": cursor} if cursor else {})
                        )
                        answers.append(response.text + repr(response.headers))
                        page = response.json().get("page")
                        if not page or not page["next_cursor"]:
                            break
                        cursor = page["next_cursor"]
                    for bad in ("x" * 300, "AAAA", cursor or "bogus"):
                        answers.append(_ask(client, token, path, cursor=bad).text)
                answers.append(client.get("/api/v1/openapi.json").text)
                answers.append(client.get("/metrics").text)
    assert lines  # the access log and the framework's wrote lines meanwhile
    written = "\n".join(answers + lines)
    for form in forms:
        assert form not in written


def test_a_store_whose_secret_was_removed_is_503_and_init_makes_one(
    db_url: str, engine: Engine
) -> None:
    # SEMANTICS R13: a served store has a secret (migration 0005 makes it; `airoi serve`
    # checks it); removed by hand, a list answers 503 rather than sign with nothing.
    from airoi.app import serving_schema_check
    from airoi.db.secret import NoStoreSecret

    token, _ = _two_accounts(engine)
    before = _secret(engine)
    with engine.begin() as conn:
        conn.execute(delete(store_secret))
    try:
        with pytest.raises(NoStoreSecret, match="Run `airoi init`"):
            serving_schema_check(engine, Settings(database_url=db_url))
        serving_schema_check(engine, Settings(database_url=db_url, secret_key=b"k" * 32))
        with _app(db_url) as client:
            response = _ask(client, token, "cost_entries")
            assert response.status_code == 503
            assert response.json()["error"]["status"] == 503
            # Lists with no cursor to make are served all the same.
            assert _ask(client, token, "roi").status_code == 200
        with _app(db_url, b"k" * 32) as client:
            assert _ask(client, token, "cost_entries").status_code == 200
    finally:
        ensure_store_secret(engine)
    made = _secret(engine)
    assert len(made) == 32 and made != before
    ensure_store_secret(engine)  # kept once there, so cursors issued stay good
    assert _secret(engine) == made
    serving_schema_check(engine, Settings(database_url=db_url))


def test_each_store_has_a_secret_of_its_own(tmp_path: Path, engine: Engine) -> None:
    # SEMANTICS R13: made at random per store, never a constant.
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    other = make_engine(f"sqlite:///{tmp_path / 'other.db'}")
    upgrade(other)
    assert len(_secret(other)) == len(_secret(engine)) == 32
    assert _secret(other) != _secret(engine)
    other.dispose()


def test_two_stores_given_one_secret_key_refuse_each_others_cursors(tmp_path: Path) -> None:
    # SEMANTICS R13: a secret of the store's own. Two stores served with the same
    # AIROI_SECRET_KEY (a key copied from one deployment to another) hold the same account
    # ids here; a cursor of one, taken by the other, would go on from a position of rows it
    # never served (a copy pulled from the wrong server, mixed without a word).
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    key = Settings.from_env({"AIROI_SECRET_KEY": "k" * 32}).secret_key
    urls = [f"sqlite:///{tmp_path / name}" for name in ("one.db", "two.db")]
    b = BundleBuilder()
    account = b.account(name="Alpha")
    token = b.token(b.user(account, role="owner"))
    initiative = b.initiative(account)
    for _ in range(3):
        b.cost_entry(initiative)
    for url in urls:
        engine = make_engine(url)
        upgrade(engine)
        b.load(engine)
        engine.dispose()
    with _app(urls[0], key) as one, _app(urls[1], key) as two, _app(urls[0], key) as same:
        first = _first_cursor(one, token)
        second = _first_cursor(two, token)
        assert first != second
        for app, foreign in ((one, second), (two, first)):
            message = _refused(_ask(app, token, "cost_entries", cursor=foreign))
            assert "not a cursor this endpoint issued" in message
        # Another server of the same store, given the same key, goes on from it.
        went_on = _ask(same, token, "cost_entries", cursor=first, limit=1)
        assert went_on.status_code == 200, went_on.text
        assert went_on.json() == _ask(one, token, "cost_entries", cursor=first, limit=1).json()
