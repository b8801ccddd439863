"""The client, `airoi pull` and `airoi verify` without the server's packages, and the extras that
promise it.

Each check runs a fresh Python in which a meta-path finder refuses every package of the
`server` extra (and records each attempt), as a base `pip install airoi` would leave it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import duckdb
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.client.conftest import Account, raw_walk

ROOT = Path(__file__).resolve().parents[2]
SERVER_PACKAGES = (
    "litestar",
    "msgspec",
    "sqlalchemy",
    "mcp",
    "alembic",
    "psycopg",
    "ijson",
    "uvicorn",
    "limits",
    "redis",
    "xxhash",
    "prometheus_client",
    "cryptography",
)
SERVER_COMMANDS = {
    "serve": ["serve"],
    "init": ["init"],
    "load": ["load", "bundle.json"],
    "demo": ["demo"],
    "token issue": ["token", "issue", "--user", "1"],
    "token revoke": ["token", "revoke", "airoi_abc"],
    "openapi": ["openapi"],
}
CLI = "import runpy\nsys.argv[0] = 'airoi'\nrunpy.run_module('airoi.cli', run_name='__main__')\n"


def blocker(blocked: tuple[str, ...]) -> str:
    return f"""
import sys

BLOCKED = {blocked!r}
assert not [m for m in sys.modules if m.partition(".")[0] in BLOCKED]


class Blocked:
    attempts = []

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            Blocked.attempts.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
        return None


sys.meta_path.insert(0, Blocked())
"""


def light(
    code: str,
    *args: str,
    cwd: Path | None = None,
    blocked: tuple[str, ...] = SERVER_PACKAGES,
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("AIROI_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-c", blocker(blocked) + code, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def test_the_client_imports_nothing_of_the_server() -> None:
    done = light(
        """
import json
import airoi.client

lazy = [m for m in ("pandas", "pyarrow", "polars", "duckdb", "dlt", "typer") if m in sys.modules]
import airoi.cli, airoi.client.client, airoi.client.dlt_source, airoi.client.errors
import airoi.client.frames, airoi.client.pull, airoi.client.verify, airoi.client.walk
import airoi.client.column_types, airoi.client.progress, airoi.client.schema
import airoi.client.copies.protocol, airoi.client.copies.targets
import airoi.client.verify_copy, airoi.client.verify_figures
print(json.dumps({"lazy": lazy, "attempts": Blocked.attempts}))
"""
    )
    assert done.returncode == 0, done.stderr
    # Not one import of a server package was even tried, and frames load only when asked.
    assert json.loads(done.stdout) == {"lazy": [], "attempts": []}


def test_the_client_and_pull_work_without_the_server(
    base_url: str, account: Account, tmp_path: Path
) -> None:
    done = light(
        """
import json
from airoi.client import AiroiError, Client

with Client(sys.argv[1], sys.argv[2], page_size=2) as api:
    seen = {
        "costs": list(api.cost_entries()),
        "approved": list(api.value_entries(status="approved")),
        "roi": api.roi(window="all"),
        "initiative": api.initiative(int(sys.argv[3])),
    }
    try:
        api.initiative(999_999)
    except AiroiError as exc:
        seen["missing"] = exc.status
print(json.dumps({"seen": seen, "attempts": Blocked.attempts}))
""",
        base_url,
        account.token,
        str(account.initiatives[1]),
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["attempts"] == []
    seen = answer["seen"]
    assert seen["costs"] == raw_walk(base_url, account.token, "cost_entries")
    assert [row["amount_cents"] for row in seen["costs"]] == [10_000 + n for n in range(7)]
    assert [row["amount_cents"] for row in seen["approved"]] == [50_000, 50_002, 50_004]
    assert seen["roi"]["approved_value_cents"] == 50_000 + 50_002 + 50_004
    assert seen["initiative"]["title"] == "Initiative 1"
    assert seen["missing"] == 404

    target = tmp_path / "airoi.duckdb"
    pulled = light(
        CLI, "pull", "--base-url", base_url, "--token", account.token, "--to", str(target)
    )
    assert pulled.returncode == 0, pulled.stderr
    assert "Pulled 25 rows" in pulled.stdout
    conn = duckdb.connect(str(target), read_only=True)
    try:
        amounts = conn.execute("SELECT amount_cents FROM cost_entries ORDER BY id").fetchall()
    finally:
        conn.close()
    assert [amount for (amount,) in amounts] == [10_000 + n for n in range(7)]

    verified = light(
        CLI, "verify", "--base-url", base_url, "--token", account.token, "--store", str(target)
    )
    assert verified.returncode == 0, verified.stderr
    assert "0 differ" in " ".join(verified.stdout.split())


@pytest.mark.parametrize(
    "args", [["--help"], ["pull", "--help"], ["verify", "--help"], ["serve", "--help"]]
)
def test_help_without_the_server(args: list[str]) -> None:
    done = light(CLI, *args)
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout


@pytest.mark.parametrize("command", SERVER_COMMANDS)
def test_server_commands_name_the_extra(command: str, tmp_path: Path) -> None:
    (tmp_path / "bundle.json").write_text("{}")
    done = light(CLI, *SERVER_COMMANDS[command], cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"`airoi {command}` needs the server extra (litestar, ")
    assert lines[0].endswith("pip install -e '.[server]' in the airoi clone")
    assert not (tmp_path / "airoi.db").exists()


def test_pull_without_its_extra_names_it(tmp_path: Path) -> None:
    args = ["pull", "--base-url", "http://127.0.0.1:9/api/v1", "--token", "t", "--to", "x.duckdb"]
    done = light(CLI, *args, cwd=tmp_path, blocked=(*SERVER_PACKAGES, "duckdb"))
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "`airoi pull` needs the pull extra (duckdb not installed): "
        "pip install -e '.[pull]' in the airoi clone"
    )


def test_verify_without_its_extra_names_it(tmp_path: Path) -> None:
    args = ["verify", "--base-url", "http://127.0.0.1:9/api/v1", "--token", "t", "--store", "x"]
    done = light(CLI, *args, cwd=tmp_path, blocked=(*SERVER_PACKAGES, "duckdb"))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "`airoi verify` needs the pull extra (duckdb not installed): "
        "pip install -e '.[pull]' in the airoi clone"
    )


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert found, requirement
    return found.group(0).lower().replace("_", "-")


def test_the_base_install_holds_no_server_package() -> None:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(r) for r in project["dependencies"]}
    extras: dict[str, list[str]] = project["optional-dependencies"]
    server = {_name(r) for r in extras["server"]}
    # These import names are their distribution names (with "_" for "-").
    assert server == {name.replace("_", "-") for name in SERVER_PACKAGES}
    assert base == {"httpx", "typer", "rich"}
    assert not base & server
    # The development install is everything: the server, the stores, dlt, polars, the importers
    # and the tools.
    assert "airoi[server,dataframe,pull,dlt,polars,imports]" in extras["dev"]
    # Every requirement is a range (it installs beside other tools), and constraints.txt,
    # what scripts/test and CI install with, pins each to one release inside its range.
    pinned: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pinned[canonicalize_name(name)] = version
    for text in [*project["dependencies"], *(r for rs in extras.values() for r in rs)]:
        if text.startswith("airoi["):
            continue
        requirement = Requirement(text)
        assert sorted(spec.operator for spec in requirement.specifier) == ["<", ">="], text
        tested = pinned.get(canonicalize_name(requirement.name))
        assert tested, f"{text} is not in constraints.txt: remake it (docs/packaging.md)"
        assert requirement.specifier.contains(tested), text
