"""The `airoi` command line (BUNDLE.md), run as a user would, against a scratch SQLite file."""

from __future__ import annotations

import gzip
import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import TestClient
from sqlalchemy import func, select

from airoi.app import create_app
from airoi.db.engine import make_engine
from airoi.db.tables import accounts, cost_entries, initiatives, tokens
from airoi.db.tables import vendors as vendors_table
from airoi.demo import DEMO_SECRET_MARKER
from airoi.settings import Settings
from tests.conftest import bearer

ENDPOINTS = [
    "roi",
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "budgets",
    "decisions",
    "integrations",
]


def airoi(
    tmp_path: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AIROI_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}", **(env or {})}
    if "AIROI_TODAY" not in (env or {}):
        env.pop("AIROI_TODAY", None)
    result = subprocess.run(
        [sys.executable, "-m", "airoi", *args], env=env, capture_output=True, text=True, check=False
    )
    if check:
        assert result.returncode == 0, result.stderr
    return result


def small_bundle() -> dict[str, Any]:
    return {
        "accounts": [{"id": 1, "name": "Acme"}],
        "users": [
            {"id": 10, "account_id": 1, "name": "Ada", "role": "owner", "email": "a@example.com"},
            {"id": 11, "account_id": 1, "name": "Max", "role": "member"},
        ],
        "initiatives": [{"id": 100, "account_id": 1, "title": "Bot", "stage": "live"}],
        "cost_entries": [
            {"id": 1000, "initiative_id": 100, "amount_cents": 1234, "cost_type": "software"}
        ],
    }


def test_init_load_and_reload(tmp_path: Path) -> None:
    airoi(tmp_path, "init")
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(small_bundle()))
    first = airoi(tmp_path, "load", str(path)).stdout
    assert re.search(r"total\s+│?\s*5\s", first), first  # 1 account, 2 users, 1 initiative, 1 entry
    again = airoi(tmp_path, "load", str(path)).stdout
    assert re.search(r"total\s+│?\s*0\s+│?\s*0\s+│?\s*5\s+│?\s*0", again), again
    gz = tmp_path / "bundle.json.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    airoi(tmp_path, "load", str(gz))


def test_load_says_when_it_waits_and_gives_up_after_wait(tmp_path: Path) -> None:
    # SEMANTICS R32, BUNDLE.md: loads run one at a time; --wait bounds the wait.
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(small_bundle()))
    airoi(tmp_path, "load", str(path))
    holder = make_engine(f"sqlite:///{tmp_path / 'cli.db'}").connect()
    holder.exec_driver_sql("BEGIN IMMEDIATE")  # another load holding the store
    try:
        busy = airoi(tmp_path, "load", "--wait", "1", str(path), check=False)
    finally:
        holder.exec_driver_sql("ROLLBACK")
        holder.close()
    assert busy.returncode == 75
    lines = busy.stderr.splitlines()
    assert lines[0].startswith("Another load is writing to this store; waiting"), busy.stderr
    assert "up to 1 s" in lines[0]
    assert lines[-1].startswith("Another load still holds this store after 1 s; nothing was")
    assert "Traceback" not in busy.stderr
    assert airoi(tmp_path, "load", "--wait", "0", str(path)).returncode == 0
    refused = airoi(tmp_path, "load", "--wait", "-1", str(path), check=False)
    assert refused.returncode == 2
    assert "--wait" in refused.stderr


def test_token_commands_while_a_load_writes_say_the_store_is_busy(tmp_path: Path) -> None:
    # They waited the driver's few seconds and said "The database could not be used
    # (OperationalError); check AIROI_DATABASE_URL and that the server is up": neither true.
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(small_bundle()))
    airoi(tmp_path, "load", str(path))
    secret = airoi(tmp_path, "token", "issue", "--user", "10").stdout.strip()
    holder = make_engine(f"sqlite:///{tmp_path / 'cli.db'}").connect()
    holder.exec_driver_sql("BEGIN IMMEDIATE")  # a load holding the store
    try:
        busy = [
            airoi(tmp_path, "token", "issue", "--user", "10", check=False),
            airoi(tmp_path, "token", "revoke", secret[:14], check=False),
        ]
    finally:
        holder.exec_driver_sql("ROLLBACK")
        holder.close()
    for result in busy:
        assert result.returncode == 75, result.stderr  # as a load that gave up waiting
        assert result.stderr.strip() == (
            "Another command (a load) is writing to this store; nothing was changed. "
            "Try again once it is done."
        )
        assert result.stdout == ""
    assert airoi(tmp_path, "token", "revoke", secret[:14]).returncode == 0


def test_load_ignores_given_stamps_unless_kept(tmp_path: Path) -> None:
    # SEMANTICS R32: the report says how many were ignored; --keep-stamps keeps them.
    bundle = small_bundle()
    bundle["initiatives"][0]["updated_at"] = "2020-01-01T00:00:00Z"
    bundle["cost_entries"][0]["updated_at"] = "2020-01-01T00:00:00Z"
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    printed = airoi(tmp_path, "load", str(path)).stdout
    assert "Ignored 2 updated_at value(s) the bundle gave" in printed
    assert re.search(r"Changes stamped \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\.", printed)
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        stamp = conn.execute(select(initiatives.c.updated_at)).scalar()
    assert stamp is not None and stamp.year > 2020
    bundle["initiatives"][0]["title"] = "Bot 2"
    path.write_text(json.dumps(bundle))
    kept = airoi(tmp_path, "load", "--keep-stamps", str(path)).stdout
    assert "Ignored" not in kept
    with engine.connect() as conn:
        assert conn.execute(select(initiatives.c.updated_at)).scalar().year == 2020
    engine.dispose()


def test_bad_bundle_names_record_and_field_and_writes_nothing(tmp_path: Path) -> None:
    airoi(tmp_path, "init")
    bundle = small_bundle()
    bundle["initiatives"][0]["stage"] = "liv"
    bundle["cost_entries"][0]["currency"] = "EUR"  # no FX rate for EUR
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bundle))
    result = airoi(tmp_path, "load", str(path), check=False)
    assert result.returncode != 0
    # One line per problem, whole, however long (the terminal's width does not wrap it).
    lines = result.stderr.splitlines()
    assert (
        "initiatives[id=100].stage: 'liv' is not one of identified, reviewing, implementing, "
        "live, paused, completed, rejected, dismissed"
    ) in lines
    assert "cost_entries[id=1000].currency: no FX rate for EUR in account 1" in lines
    assert lines[-1] == f"Nothing was loaded: 2 problem(s) in {path}."
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(initiatives)).scalar() == 0
        assert conn.execute(select(func.count()).select_from(cost_entries)).scalar() == 0
    engine.dispose()


def test_load_refuses_a_file_that_is_not_exactly_one_json_object(tmp_path: Path) -> None:
    airoi(tmp_path, "init")
    vendors = json.dumps([{"id": 5, "account_id": 1, "name": "OpenAI"}])
    path = tmp_path / "two.json"
    for text, expected in (
        ('{"accounts": []}{"vendors": ' + vendors + "}", "a bundle is exactly one JSON object"),
        ('{"accounts": []} trailing', "a bundle is exactly one JSON object"),
        (
            '{"accounts": [{"id": 1, "name": "Acme"}], "vendors": '
            + vendors
            + ', "vendors": [{"id": 6, "account_id": 1, "name": "Anthropic"}]}',
            "bundle: the key 'vendors' is given more than once",
        ),
    ):
        path.write_text(text)
        for given in (path, tmp_path / "two.json.gz"):
            if given.suffix == ".gz":
                given.write_bytes(gzip.compress(text.encode()))
            result = airoi(tmp_path, "load", str(given), check=False)
            assert result.returncode == 1, result.stdout
            assert expected in result.stderr and "Nothing was loaded" in result.stderr
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        for table in (accounts, vendors_table):
            assert conn.execute(select(func.count()).select_from(table)).scalar() == 0
    engine.dispose()


def test_token_issue_and_revoke(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(small_bundle()))
    airoi(tmp_path, "load", str(path))
    refused = airoi(tmp_path, "token", "issue", "--user", "11", check=False)
    assert refused.returncode != 0 and "Owner or Admin" in refused.stderr
    issued = airoi(tmp_path, "token", "issue", "--user", "10", "--expires-in", "3")
    secret = issued.stdout.strip()
    assert secret.startswith("airoi_") and len(secret) >= 49
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    with TestClient(app) as client:
        assert client.get("/api/v1/initiatives", headers=bearer(secret)).status_code == 200
        airoi(tmp_path, "token", "revoke", secret[:14])
        assert client.get("/api/v1/initiatives", headers=bearer(secret)).status_code == 401


def test_token_revoke_takes_a_whole_token_when_prefixes_are_shared(tmp_path: Path) -> None:
    bundle = small_bundle()
    whole = ["airoi_sameprefix-" + letter * 40 for letter in "ab"]
    bundle["tokens"] = [{"user_id": 10, "token": secret} for secret in whole]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    airoi(tmp_path, "load", str(path))
    shown = whole[0][:14]
    refused = airoi(tmp_path, "token", "revoke", shown, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"2 live tokens share the prefix {shown!r}; give the whole token to revoke one of them."
    )
    revoked = airoi(tmp_path, "token", "revoke", whole[0])
    assert revoked.stdout.strip() == f"Revoked the token {shown}…"
    # SEMANTICS R15: nothing beyond the shown prefix is printed, whatever was given.
    again = airoi(tmp_path, "token", "revoke", whole[0], check=False)
    assert again.returncode == 1
    assert again.stderr.strip() == f"The token {shown}… is already revoked."
    for result in (refused, revoked, again):
        assert all(secret[14:] not in result.stdout + result.stderr for secret in whole)
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    with TestClient(app) as client:
        assert client.get("/api/v1/initiatives", headers=bearer(whole[0])).status_code == 401
        assert client.get("/api/v1/initiatives", headers=bearer(whole[1])).status_code == 200


def test_demo_serves_every_endpoint_with_the_printed_token(tmp_path: Path) -> None:
    printed = airoi(tmp_path, "demo").stdout
    assert "http://localhost:8000/api/v1" in printed and "http://localhost:8000/mcp" in printed
    token = re.search(r"Token:\s+(\S+)", printed)
    assert token, printed
    # The dashboard's ready link: the token in the fragment, which the browser never sends.
    assert f"Dashboard:     http://localhost:8000/#token={token.group(1)}\n" in printed
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    with TestClient(app) as client:
        for endpoint in ENDPOINTS:
            response = client.get(f"/api/v1/{endpoint}", headers=bearer(token.group(1)))
            assert response.status_code == 200, endpoint
            body = response.json()
            assert body if endpoint == "roi" else body["data"], endpoint
            # SEMANTICS R15: the demo's fake credentials and e-mails never come out.
            assert DEMO_SECRET_MARKER not in response.text and "@" not in response.text
    # A second run refreshes the account and prints a new token.
    again = airoi(tmp_path, "demo").stdout
    assert re.search(r"Token:\s+(\S+)", again).group(1) != token.group(1)  # type: ignore[union-attr]


def test_a_reload_does_not_bring_a_revoked_token_back(tmp_path: Path) -> None:
    # `airoi token revoke` revokes for good (SEMANTICS R29): loading the same bundle again, as a
    # nightly sync would, used to put revoked_at back to null and the token worked again.
    bundle = small_bundle()
    secret = "airoi_reloaded-" + "r" * 40
    bundle["tokens"] = [{"user_id": 10, "token": secret}]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    airoi(tmp_path, "load", str(path))
    airoi(tmp_path, "token", "revoke", secret)
    reloaded = airoi(tmp_path, "load", str(path)).stdout
    assert re.search(r"tokens\s+│?\s*0\s+│?\s*0\s+│?\s*1\s", reloaded), reloaded  # unchanged
    # A bundle that revokes a token itself still does so.
    other = "airoi_bundle-revoked-" + "s" * 40
    bundle["tokens"].append({"user_id": 10, "token": other, "revoked_at": "2026-01-01T00:00:00Z"})
    path.write_text(json.dumps(bundle))
    airoi(tmp_path, "load", str(path))
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    with TestClient(app) as client:
        assert client.get("/api/v1/initiatives", headers=bearer(secret)).status_code == 401
        assert client.get("/api/v1/initiatives", headers=bearer(other)).status_code == 401


def test_demo_leaves_an_account_holding_its_id_alone(tmp_path: Path) -> None:
    # The demo lives at account 900000. An account of the store's own there is not the demo:
    # `airoi demo` used to delete it, its people, initiatives and decisions, and load over it.
    bundle = {
        "accounts": [{"id": 900000, "name": "Real Customer Co"}],
        "users": [{"id": 77, "account_id": 900000, "name": "Ada", "role": "owner"}],
        "initiatives": [{"id": 78, "account_id": 900000, "title": "Bot", "stage": "live"}],
    }
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    airoi(tmp_path, "load", str(path))
    refused = airoi(tmp_path, "demo", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "Account 900000, where the demo lives, holds another account; nothing was changed."
    )
    assert "Token" not in refused.stdout
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        assert conn.execute(select(accounts.c.name)).scalars().all() == ["Real Customer Co"]
        assert conn.execute(select(initiatives.c.id)).scalars().all() == [78]
    engine.dispose()


def test_a_demo_refresh_that_cannot_load_keeps_the_demo_it_had(tmp_path: Path) -> None:
    from airoi.demo import DEMO_ACCOUNT_ID, build_demo_bundle

    printed = airoi(tmp_path, "demo").stdout
    token = re.search(r"Token:\s+(\S+)", printed).group(1)  # type: ignore[union-attr]
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        demo_costs = conn.execute(
            select(func.count()).where(cost_entries.c.account_id == DEMO_ACCOUNT_ID)
        ).scalar()
    # One of the demo's cost entry ids freed, then taken by another account's entry.
    demo = build_demo_bundle(date.today())
    taken = demo["cost_entries"][0]
    freed = [e["id"] for e in demo["cost_entries"] if e["initiative_id"] == taken["initiative_id"]]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps({"delete": {"initiatives": [taken["initiative_id"]]}}))
    airoi(tmp_path, "load", str(path))
    mine = small_bundle()
    mine["cost_entries"][0]["id"] = taken["id"]
    path.write_text(json.dumps(mine))
    airoi(tmp_path, "load", str(path))
    with engine.connect() as conn:
        kept = conn.execute(
            select(func.count()).where(cost_entries.c.account_id == DEMO_ACCOUNT_ID)
        ).scalar()
    assert kept == demo_costs - len(freed)
    refused = airoi(tmp_path, "demo", check=False)
    assert refused.returncode == 1
    lines = refused.stderr.splitlines()
    # BUNDLE.md: one line per problem, naming the record and field.
    assert len(lines) == 2, refused.stderr
    assert lines[0].startswith(f"cost_entries[id={taken['id']}].initiative_id: "), lines[0]
    assert "belongs to account 1" in lines[0]
    assert lines[-1] == "The demo was not refreshed; it is as it was."
    assert "Traceback" not in refused.stderr
    with engine.connect() as conn:
        assert (
            conn.execute(
                select(func.count()).where(cost_entries.c.account_id == DEMO_ACCOUNT_ID)
            ).scalar()
            == kept
        )
    engine.dispose()
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    with TestClient(app) as client:
        assert client.get("/api/v1/initiatives", headers=bearer(token)).status_code == 200


@pytest.mark.parametrize("command", [["openapi"], ["init"]])
def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path, command: list[str]) -> None:
    # `airoi openapi` read the settings itself and ended in a traceback.
    result = airoi(tmp_path, *command, check=False, env={"AIROI_RATE_LIMIT": "lots"})
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "AIROI_RATE_LIMIT must read like 600/minute or 10/second: one limit, at least 1 request "
        "a window of at most a day, not 'lots'"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AIROI_REDIS_URL", "foo://:Sup3rSecretPw@127.0.0.1:6379/14"),
        ("AIROI_DATABASE_URL", "postgresql+psycopg://postgres:Sup3rSecretPw@127.0.0.1:abc/db"),
    ],
)
def test_serve_refuses_a_store_url_it_cannot_use_in_one_line_without_its_password(
    tmp_path: Path, name: str, value: str
) -> None:
    # It was a traceback quoting the URL (password and all); with workers, a loop of workers
    # dying and started again that never exited.
    result = airoi(tmp_path, "serve", "--workers", "2", check=False, env={name: value})
    assert result.returncode == 1
    assert result.stderr.startswith(f"{name} must ")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Sup3rSecretPw" not in result.stdout + result.stderr


@pytest.mark.parametrize("workers", ["0", "-3"])
def test_serve_needs_at_least_one_worker(tmp_path: Path, workers: str) -> None:
    result = airoi(tmp_path, "serve", "--workers", workers, "--port", "1", check=False)
    assert result.returncode == 2
    assert "Invalid value for '--workers'" in result.stderr  # typer's usage error, exit 2
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("given", ["file", "missing", ""])
def test_serve_refuses_a_metrics_directory_that_is_not_one(tmp_path: Path, given: str) -> None:
    # The operator's PROMETHEUS_MULTIPROC_DIR is honoured, so it must be a directory: a file
    # or a missing path would leave /metrics empty or failing once the workers record.
    path = tmp_path / given if given else ""
    if given == "file":
        (tmp_path / "file").write_text("not a directory")
    env = {"PROMETHEUS_MULTIPROC_DIR": str(path)}
    for command in (["serve"], ["demo", "--serve"]):
        refused = airoi(tmp_path, *command, "--port", "1", check=False, env=env)
        assert refused.returncode == 1, refused.stderr
        assert refused.stderr.strip() == (
            f"PROMETHEUS_MULTIPROC_DIR={str(path)!r} is not a directory this user can write: "
            "name one, or unset it and `airoi serve` makes its own."
        )
        assert "Serving" not in refused.stderr
    assert not (tmp_path / "cli.db").exists()  # stopped before the demo was loaded


@pytest.mark.parametrize("command", [["--help"], ["token", "--help"], ["load", "--help"]])
def test_help_lists_the_commands(tmp_path: Path, command: list[str]) -> None:
    out = airoi(tmp_path, *command).stdout
    if command == ["--help"]:
        for name in ("init", "load", "demo", "token", "serve", "openapi", "pull", "verify"):
            assert name in out


def test_version_is_the_installed_distributions(tmp_path: Path) -> None:
    from airoi import __version__

    shown = airoi(tmp_path, "--version")
    # The package's own number and the installed distribution's agree (pyproject.toml reads
    # the version from the package).
    assert shown.stdout == f"airoi {__version__}\n"
    assert re.fullmatch(r"airoi \d+\.\d+\.\d+\S*\n", shown.stdout)
    assert shown.stderr == ""
    assert not (tmp_path / "cli.db").exists()  # eager: no command ran


# The shell named rather than found among the process's parents (a run with none, such as
# one started in the background, has none to find): the completion library's own switch.
NAMED_SHELL = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}


def test_shell_completion_prints_a_script(tmp_path: Path) -> None:
    script = airoi(tmp_path, "--show-completion", "bash", env=NAMED_SHELL).stdout
    assert "complete " in script
    assert "_AIROI_COMPLETE=complete_bash" in script
    # The completion it installs answers with the commands.
    env = {"_AIROI_COMPLETE": "complete_bash", "COMP_WORDS": "airoi to", "COMP_CWORD": "1"}
    answered = subprocess.run(
        [sys.executable, "-m", "airoi"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert answered.stdout.split() == ["token"], answered.stderr
    help_text = airoi(tmp_path, "--help").stdout
    for option in ("--version", "--install-completion", "--show-completion"):
        assert option in help_text


def test_serve_refuses_a_store_of_an_older_schema_and_names_the_fix(tmp_path: Path) -> None:
    # Schema revision 0002 changed how SQLite keeps datetimes; an older store is not served.
    from airoi.db.engine import make_engine
    from airoi.db.migrate import upgrade

    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    upgrade(engine, "0001")
    engine.dispose()
    refused = airoi(tmp_path, "serve", "--port", "1", check=False)
    assert refused.returncode == 1
    assert "revision 0001" in refused.stderr
    assert "Run `airoi init`" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_serve_refuses_a_file_that_is_not_a_store_in_one_line(tmp_path: Path) -> None:
    # SEMANTICS R15: the driver's error was raised with its SQL, as a traceback.
    (tmp_path / "cli.db").write_bytes(b"no SQLite header here " * 50)
    refused = airoi(tmp_path, "serve", "--port", "1", check=False)
    assert refused.returncode == 1
    assert "The store cannot be read" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert "SELECT" not in refused.stderr and "alembic_version" not in refused.stderr


def _stored_secret(tmp_path: Path) -> bytes | None:
    from airoi.db.secret import read_store_secret

    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        secret = read_store_secret(conn)
    engine.dispose()
    return secret


@pytest.mark.parametrize("command", ["load", "demo"])
def test_a_fresh_store_gets_a_secret_and_init_remakes_a_removed_one(
    tmp_path: Path, command: str
) -> None:
    # SEMANTICS R13: every command that makes a store leaves it with a secret of its own, and
    # `airoi serve` refuses one whose secret was removed, naming the fix.
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(small_bundle()))
    airoi(tmp_path, *(["load", str(path)] if command == "load" else ["demo"]))
    made = _stored_secret(tmp_path)
    assert made is not None and len(made) == 32
    airoi(tmp_path, "init")
    assert _stored_secret(tmp_path) == made  # kept: the cursors issued stay good
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM store_secret")
    engine.dispose()
    refused = airoi(tmp_path, "serve", "--port", "1", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "The store holds no secret to sign cursors with. Run `airoi init` against it (which "
        "makes one), or set AIROI_SECRET_KEY, then serve again."
    )
    airoi(tmp_path, "init")
    remade = _stored_secret(tmp_path)
    assert remade is not None and len(remade) == 32 and remade != made


def test_a_bad_secret_key_is_one_line_without_the_value(tmp_path: Path) -> None:
    result = airoi(
        tmp_path, "serve", "--port", "1", check=False, env={"AIROI_SECRET_KEY": "hunter2"}
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "AIROI_SECRET_KEY must be 32 to 512 characters of printable ASCII with no spaces, such "
        "as the output of `openssl rand -hex 32`; the value set has 7 characters."
    )


@pytest.mark.parametrize("command", [["demo", "--serve"], ["serve"]])
def test_a_port_in_use_is_named_before_anything_is_loaded_or_printed(
    tmp_path: Path, command: list[str]
) -> None:
    airoi(tmp_path, "init")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        refused = airoi(tmp_path, *command, "--port", str(port), check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"Port {port} on 127.0.0.1 is already in use (an earlier `airoi serve` or "
        f"`airoi demo --serve` still running?). Stop it, or give another port: --port {port + 1}."
    )
    assert "Token" not in refused.stdout and "Traceback" not in refused.stderr
    # Nothing was loaded and no token issued for a server that could not start.
    engine = make_engine(f"sqlite:///{tmp_path / 'cli.db'}")
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(tokens)).scalar() == 0
        assert conn.execute(select(func.count()).select_from(accounts)).scalar() == 0
    engine.dispose()


def test_serve_starts_when_the_database_accepts_but_never_answers(tmp_path: Path) -> None:
    # The start-up schema check connected with no time limit: a server that accepts and never
    # answers (a half-dead database, a firewall) kept `airoi serve` from ever listening. It
    # now gives up as the serving engine does, serves, and answers 503 until the store answers.
    with socket.socket() as silent, socket.socket() as probe:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        database = f"postgresql+psycopg://airoi@127.0.0.1:{silent.getsockname()[1]}/none"
        env = {
            **os.environ,
            "AIROI_DATABASE_URL": database,
            "AIROI_STATEMENT_TIMEOUT_MS": "1000",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "airoi", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            healthz = None
            for _ in range(100):  # up to 20 s: the check gives up after 2 s
                try:
                    healthz = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                    break
                except httpx.TransportError:
                    time.sleep(0.2)
            assert healthz is not None and healthz.status_code == 200
            assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10).status_code == 503
        finally:
            server.terminate()
            _, stderr = server.communicate(timeout=20)
    assert "the store cannot be reached at start" in stderr


@pytest.mark.parametrize("port", ["0", "70000", "-1"])
def test_a_port_outside_1_to_65535_is_refused_by_name(tmp_path: Path, port: str) -> None:
    refused = airoi(tmp_path, "serve", "--port", port, check=False)
    assert refused.returncode == 2
    assert "--port" in refused.stderr and "Traceback" not in refused.stderr


def test_cli_faults_are_one_line_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(small_bundle()))
    airoi(tmp_path, "load", str(path))
    # A token whose expiry no date can hold.
    refused = airoi(
        tmp_path, "token", "issue", "--user", "10", "--expires-in", "3000000", check=False
    )
    assert (refused.returncode, refused.stderr.strip()) == (
        1,
        "--expires-in must be a whole number of days from 1 to 36500.",
    )
    # A setting that is not one.
    bad_today = airoi(tmp_path, "load", str(path), check=False, env={"AIROI_TODAY": "bogus"})
    assert bad_today.returncode == 1
    assert "AIROI_TODAY" in bad_today.stderr and "Traceback" not in bad_today.stderr
    assert len(bad_today.stderr.strip().splitlines()) == 1
    # A database that cannot be reached: one line, without the URL's user or password.
    away_url = "postgresql+psycopg://who:hunter2@127.0.0.1:9/none"
    away = airoi(tmp_path, "load", str(path), check=False, env={"AIROI_DATABASE_URL": away_url})
    assert away.returncode == 1
    assert away.stderr.strip() == (
        "The database could not be used (OperationalError); check AIROI_DATABASE_URL and that "
        "the server is up."
    )


def test_pull_into_a_store_it_cannot_write_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    target = tmp_path / "not-a-store.duckdb"
    target.write_text("not a database")
    env = {**os.environ, "AIROI_TOKEN": "airoi_" + "x" * 43}
    result = subprocess.run(
        [sys.executable, "-m", "airoi", "pull", "--base-url", "http://127.0.0.1:9/api/v1",
         "--to", str(target)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    # Refused before the service is asked, and the file left as it was.
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"{target} is not a DuckDB file (it does not begin as one does); airoi pull writes "
        "its copy into a DuckDB file of its own: give a new .duckdb name."
    ]
    assert target.read_text() == "not a database"


class _Refusing(http.server.BaseHTTPRequestHandler):
    """Answers 429 (Retry-After: `wait`) to the first `refusals` requests, then an empty page."""

    refusals = 1
    wait = "1"

    def do_GET(self) -> None:
        cls = type(self)
        if cls.refusals > 0:
            cls.refusals -= 1
            status, headers = 429, {"Retry-After": cls.wait, "X-Request-Id": "req-429"}
            body: dict[str, Any] = {
                "error": {"status": 429, "message": "Too many requests with this token."}
            }
        else:
            status, headers = 200, {}
            body = {"data": [], "page": {"has_more": False, "next_cursor": None}}
        encoded = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {**headers, "Content-Type": "application/json"}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(encoded)))
        self.end_headers()
        self.wfile.write(encoded)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def refusing_api(refusals: int, wait: str) -> Iterator[str]:
    handler = type("Handler", (_Refusing,), {"refusals": refusals, "wait": wait})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    finally:
        server.shutdown()
        server.server_close()


PULL_TOKEN = "airoi_" + "x" * 43


def pull_command(base_url: str, target: Path) -> tuple[list[str], dict[str, str]]:
    """`airoi pull` of `base_url` into `target`, its token given as AIROI_TOKEN."""
    argv = [sys.executable, "-m", "airoi", "pull", "--base-url", base_url, "--to", str(target)]
    return argv, {**os.environ, "AIROI_TOKEN": PULL_TOKEN}


def test_pull_of_a_base_url_that_cannot_be_asked_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    argv, env = pull_command("http://reader:pa55word@host:port/api/v1", tmp_path / "s.duckdb")
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "Pull stopped: http://host:port/api/v1 is not a URL that can be asked."
    )
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize(
    ("base_url", "said"),
    [
        (
            "http://127.0.0.1:9/api/v1?token=s3cr3t",
            "The base URL holds a query or a fragment (after ? or #), which no request of the "
            "API takes: give the service's address alone (http://127.0.0.1:9/api/v1).",
        ),
        (
            "https://reader:pa55word@airoi.example/api/v1#s3cr3t",
            "The base URL holds a query or a fragment (after ? or #), which no request of the "
            "API takes: give the service's address alone (https://airoi.example/api/v1).",
        ),
        ("http://", "http:// names no host: give the service's address (https://host/api/v1)."),
    ],
)
def test_pull_of_a_base_url_with_a_query_or_no_host_is_refused_at_once(
    tmp_path: Path, base_url: str, said: str
) -> None:
    # A query was sent with every request ("Unknown query parameter 'include_sample'"); no
    # host was retried for 11 s, then "No response from http:/api/v1".
    pytest.importorskip("duckdb")
    argv, env = pull_command(base_url, tmp_path / "s.duckdb")
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
    assert (result.returncode, result.stderr.strip()) == (2, f"Pull stopped: {said}")
    assert "s3cr3t" not in result.stderr and "pa55word" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_pull_says_when_it_waits_on_a_429(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    with refusing_api(refusals=1, wait="1") as base_url:
        argv, env = pull_command(base_url, tmp_path / "store.duckdb")
        result = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False, timeout=60
        )
    assert result.returncode == 0, result.stderr
    waits = [line for line in result.stderr.splitlines() if line.startswith("Waiting")]
    assert waits == [
        "Waiting 1.0 s before asking again: 429: Too many requests with this token. "
        "(request req-429)"
    ]
    assert PULL_TOKEN not in result.stderr + result.stdout


def test_pull_interrupted_says_what_stays(tmp_path: Path) -> None:
    pytest.importorskip("duckdb")
    with refusing_api(refusals=1_000, wait="30") as base_url:
        argv, env = pull_command(base_url, tmp_path / "store.duckdb")
        process = subprocess.Popen(
            argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # the first wait: the pull is inside its walk
            seen.append(line)
            if line.startswith("Waiting 30.0 s"):
                break
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=30)
    assert process.returncode == 130, "".join(seen) + rest
    assert "Pull interrupted. What was written before stays; run again to go on." in rest
    assert "Traceback" not in rest


@pytest.mark.parametrize("command", ["pull", "verify"])
def test_ctrl_c_inside_a_store_statement_is_an_interruption(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Review: DuckDB stops a statement on SIGINT with an error of its own ("Query
    # interrupted", then a rollback that fails), not KeyboardInterrupt: a pull Ctrl-C'd
    # inside a batch said its store could not be written (exit 1) or printed a traceback.
    duckdb = pytest.importorskip("duckdb")
    from typer.testing import CliRunner

    import airoi.client.pull
    import airoi.client.verify
    from airoi.cli import app

    def a_statement_interrupted(*args: Any, **kwargs: Any) -> None:
        conn = duckdb.connect()
        conn.execute("SET enable_progress_bar = false")
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
        # About 9 s on this machine uninterrupted: bounded if the signal were lost.
        conn.execute("SELECT sum(hash(range)) FROM range(1000000000)").fetchall()

    module = airoi.client.pull if command == "pull" else airoi.client.verify
    monkeypatch.setattr(module, command, a_statement_interrupted)
    target = tmp_path / "store.duckdb"
    duckdb.connect(str(target)).close()
    where = ["--to" if command == "pull" else "--store", str(target)]
    result = CliRunner().invoke(
        app,
        [command, "--base-url", "http://127.0.0.1:9/api/v1", *where],
        env={"AIROI_TOKEN": PULL_TOKEN},
    )
    said = {"pull": "Pull interrupted.", "verify": "Verify interrupted: nothing was compared."}
    assert result.exit_code == 130, result.output
    assert said[command] in result.output
    assert "could not be written" not in result.output
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_serve_on_a_store_that_is_not_there_says_so_and_makes_no_file(tmp_path: Path) -> None:
    # A mistyped path once left an empty file behind, and then a refusal about its schema.
    refused = airoi(tmp_path, "serve", "--port", "1", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"There is no store at {tmp_path / 'cli.db'}. Run `airoi init` (or `airoi demo`) to make "
        "one, or set AIROI_DATABASE_URL to the store, then serve again."
    )
    assert not (tmp_path / "cli.db").exists()


@pytest.mark.parametrize(
    "command", [["token", "issue", "--user", "10"], ["token", "revoke", "airoi_abc"]]
)
def test_a_token_command_on_a_store_that_is_not_there_makes_none(
    tmp_path: Path, command: list[str]
) -> None:
    # A mistyped path made a whole new, empty store, then said the user was not found.
    refused = airoi(tmp_path, *command, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f"There is no store at {tmp_path / 'cli.db'}. Run `airoi init` (or `airoi demo`) to make "
        "one, or set AIROI_DATABASE_URL to the store."
    )
    assert not (tmp_path / "cli.db").exists()
