"""Clients generated from `airoi openapi` (SPEC 1, 9): what a generator reads there it can trust.

Two generators are run on the description the command prints:
- openapi-typescript (npm), with every `format: int64` typed as `bigint`; a TypeScript check
  then proves a cent field takes 299,966,852,112n and refuses a (53-bit) number;
- openapi-python-client (PyPI), whose client is run against a real server: a cent field past
  2**31 comes back whole, and a matching If-None-Match is a declared 304, not an
  `UnexpectedStatus`.

Each generator is installed once, pinned, into a directory of pytest's cache that these tests
own (openapi-python-client into a virtual environment of its own: it pins typer below the
version airoi's command line uses). Without node/npm the TypeScript test skips, naming what is
missing; a generator that cannot be installed skips its test too, except with
AIROI_TEST_REQUIRE_SERVICES=1, where it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from airoi.settings import Settings
from tests.cache_lock import held
from tests.conftest import REQUIRE_SERVICES
from tests.factories import BundleBuilder
from tests.servers import RunningServer

PYTHON_GENERATOR = "openapi-python-client==0.29.1"
NODE_GENERATOR = ("openapi-typescript@7.13.0", "typescript@5.9.3")
# A large account's total cost: more than a 32-bit integer holds.
LARGE_CENTS = 299_966_852_112
INSTALL_SECONDS = 600


def _unavailable(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (AIROI_TEST_REQUIRE_SERVICES=1, so this fails instead of skipping)")
    pytest.skip(reason)


def _run(command: list[str], what: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command, capture_output=True, text=True, timeout=INSTALL_SECONDS, check=False, **kwargs
    )
    assert result.returncode == 0, f"{what} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result


def _installed(cache: Path, name: str, install: Any) -> Path:
    """`cache/name`, made by `install(path)` unless a finished install is there. A marker
    written last tells a finished one (a virtual environment cannot be moved into place: its
    scripts name their own path)."""
    target = cache / name
    done = target / ".installed"
    with held(cache, INSTALL_SECONDS + 60):  # another test process may be installing
        if done.is_file():
            return target
        shutil.rmtree(target, ignore_errors=True)
        install(target)
        done.write_text("")
    return target


@pytest.fixture(scope="module")
def tools(request: pytest.FixtureRequest) -> Path:
    return Path(request.config.cache.mkdir("client-generators"))


@pytest.fixture(scope="module")
def description(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `airoi openapi` prints, as a file."""
    result = _run(
        [sys.executable, "-m", "airoi", "openapi"],
        "airoi openapi",
        env={**os.environ, "AIROI_DATABASE_URL": "sqlite:///:memory:"},
    )
    path = tmp_path_factory.mktemp("description") / "openapi.json"
    path.write_text(result.stdout)
    return path


def _schema(description: Path, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(description.read_text())["components"]["schemas"][name]
    return schema


# --- openapi-typescript -------------------------------------------------------------------

_GENERATE_TS = """\
// openapi-typescript over a description, every int64 typed as bigint: TOOLS IN OUT
const fs = require("node:fs");
const path = require("node:path");
const { createRequire } = require("node:module");
const [tools, input, output] = process.argv.slice(2);
const load = createRequire(path.join(path.resolve(tools), "package.json"));
const openapiTS = load("openapi-typescript");
const ts = load("typescript");
const BIGINT = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword);
(async () => {
  const schema = JSON.parse(fs.readFileSync(input, "utf8"));
  const ast = await openapiTS.default(schema, {
    transform(object) {
      return object.format === "int64" ? BIGINT : undefined;
    },
  });
  fs.writeFileSync(output, openapiTS.astToString(ast));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
"""

# Compiles only where the cent fields are bigint: a number is refused where the
# @ts-expect-error lines stand (and an unused @ts-expect-error is itself an error).
_CHECK_TS = f"""\
import type {{ components }} from "./client";
type Schemas = components["schemas"];
export const total: Schemas["RoiSummary"]["total_cost_cents"] = {LARGE_CENTS}n;
export const amount: Schemas["CostEntry"]["amount_cents"] = null;
export const id: Schemas["Initiative"]["id"] = 9223372036854775807n;
// @ts-expect-error a cent field is not a (53-bit) number
export const totalAsNumber: Schemas["RoiSummary"]["total_cost_cents"] = 1;
// @ts-expect-error nor is a nullable one
export const amountAsNumber: Schemas["CostEntry"]["amount_cents"] = 1;
// @ts-expect-error nor an id
export const idAsNumber: Schemas["Initiative"]["id"] = 1;
"""


@pytest.fixture(scope="module")
def node_tools(tools: Path) -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        missing = " and ".join(name for name, path in (("node", node), ("npm", npm)) if not path)
        pytest.skip(f"{missing} not found on PATH: the TypeScript client cannot be generated")
    assert npm is not None

    def install(path: Path) -> None:
        path.mkdir(parents=True)
        result = subprocess.run(
            [npm, "install", "--prefix", str(path), "--no-audit", "--no-fund", *NODE_GENERATOR],
            capture_output=True,
            text=True,
            timeout=INSTALL_SECONDS,
            check=False,
        )
        if result.returncode != 0:
            _unavailable(
                f"npm could not install {' '.join(NODE_GENERATOR)}: {result.stderr[-500:]}"
            )

    return _installed(tools, "openapi-typescript-7.13.0", install)


def test_typescript_client_types_ids_and_cents_as_bigint(
    node_tools: Path, description: Path, tmp_path: Path
) -> None:
    # The description says so first: the generator reads nothing it does not say.
    for name, field in (("RoiSummary", "total_cost_cents"), ("Initiative", "id")):
        assert _schema(description, name)["properties"][field]["format"] == "int64"
    script = tmp_path / "generate.cjs"
    script.write_text(_GENERATE_TS)
    client = tmp_path / "client.ts"
    _run(
        ["node", str(script), str(node_tools), str(description), str(client)], "openapi-typescript"
    )
    generated = client.read_text()
    assert "total_cost_cents: bigint;" in generated
    assert "amount_cents: bigint | null;" in generated
    check = tmp_path / "check.ts"
    check.write_text(_CHECK_TS)
    tsc = node_tools / "node_modules" / "typescript" / "bin" / "tsc"
    _run(
        [
            *("node", str(tsc), "--noEmit", "--strict", "--target", "es2020"),
            *("--module", "esnext", "--moduleResolution", "bundler", str(check)),
        ],
        "tsc on the generated types",
    )


# --- openapi-python-client ----------------------------------------------------------------

_RUN_PYTHON_CLIENT = """\
import json, sys
from airoi_generated import AuthenticatedClient
from airoi_generated.api.initiatives import get_initiative
from airoi_generated.api.roi import get_roi_summary
from airoi_generated.models import Initiative, RoiSummary

base_url, token, initiative_id = sys.argv[1], sys.argv[2], int(sys.argv[3])
with AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=True) as c:
    first = get_initiative.sync_detailed(client=c, id=initiative_id)
    roi = get_roi_summary.sync(client=c)
etag = first.headers["etag"]
with AuthenticatedClient(
    base_url=base_url,
    token=token,
    raise_on_unexpected_status=True,
    headers={"If-None-Match": etag},
) as c:
    again = get_initiative.sync_detailed(client=c, id=initiative_id)
print(json.dumps({
    "first_status": first.status_code,
    "first_parsed": type(first.parsed).__name__,
    "first_id": first.parsed.id,
    "again_status": again.status_code,
    "again_body": again.content.decode(),
    "again_etag": again.headers.get("etag"),
    "total_cost_cents": roi.total_cost_cents,
    "total_cost_cents_type": type(roi.total_cost_cents).__name__,
    "annotations": {
        "RoiSummary.total_cost_cents": str(RoiSummary.__annotations__["total_cost_cents"]),
        "Initiative.id": str(Initiative.__annotations__["id"]),
    },
}))
"""


@pytest.fixture(scope="module")
def python_generator(tools: Path) -> Path:
    """The generator's own virtual environment; its python runs the generated client too
    (the generator brings what that client imports: httpx, attrs, python-dateutil)."""

    def install(path: Path) -> None:
        venv.EnvBuilder(with_pip=True).create(path)
        result = subprocess.run(
            [str(path / "bin" / "python"), "-m", "pip", "install", "-q", PYTHON_GENERATOR],
            capture_output=True,
            text=True,
            timeout=INSTALL_SECONDS,
            check=False,
        )
        if result.returncode != 0:
            _unavailable(f"pip could not install {PYTHON_GENERATOR}: {result.stderr[-500:]}")

    return _installed(tools, "openapi-python-client-0.29.1", install)


@pytest.fixture
def server(db_url: str) -> Iterator[RunningServer]:
    running = RunningServer(Settings(database_url=db_url))
    yield running
    running.stop()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_python_client_reads_large_cents_and_a_304(
    python_generator: Path,
    description: Path,
    engine: Engine,
    server: RunningServer,
    tmp_path: Path,
) -> None:
    assert _schema(description, "RoiSummary")["properties"]["total_cost_cents"]["format"] == (
        "int64"
    )
    bin_dir = python_generator / "bin"
    package = tmp_path / "out" / "airoi_generated"
    _run(
        [
            *(str(bin_dir / "openapi-python-client"), "generate", "--path", str(description)),
            *("--output-path", str(package), "--meta", "none"),
        ],
        "openapi-python-client",
        # Its ruff post-hooks are found on PATH.
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"},
    )

    b = BundleBuilder()
    account = b.account()
    token = b.token(b.user(account))
    initiative = b.initiative(account)
    b.cost_entry(initiative, amount_cents=LARGE_CENTS, currency="USD")
    b.load(engine)

    script = tmp_path / "run_client.py"
    script.write_text(_RUN_PYTHON_CLIENT)
    result = _run(
        [str(bin_dir / "python"), str(script), server.base_url, token, str(initiative)],
        "the generated Python client",
        cwd=package.parent,
        env={**os.environ, "PYTHONPATH": str(package.parent)},
    )
    seen = json.loads(result.stdout)
    assert seen["first_status"] == 200
    assert (seen["first_parsed"], seen["first_id"]) == ("Initiative", initiative)
    # SEMANTICS R9, R38: total_cost_cents sums the cost whole (past 2**31, within 64 bits),
    # and the generated client reads it whole.
    assert seen["total_cost_cents"] == LARGE_CENTS
    assert seen["total_cost_cents_type"] == "int"
    assert seen["annotations"] == {"RoiSummary.total_cost_cents": "int", "Initiative.id": "int"}
    # The 304 is declared, so the client built to raise on an undeclared status does not.
    assert seen["again_status"] == 304
    assert seen["again_body"] == ""
    assert seen["again_etag"]
