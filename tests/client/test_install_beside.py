"""The client installs beside other tools: its dependencies are ranges, and the oldest release
each range allows works.

pyproject.toml gives the base install (the client) and the `dataframe` and `pull` extras as
ranges from the oldest release tested to below the next major; the exact set CI runs is
constraints.txt. Here a virtual environment of its own, in a directory of pytest's cache that
this test owns (as tests/test_generated_clients.py does for its generators), gets airoi built
from this tree with those extras and, pinned, the lowest release of every range: pip must find
them compatible (an exact pin made `pip install airoi 'rich<15'` impossible). That environment
then reads a real server: frames keep their cents, `airoi pull` fills a DuckDB file, and
`--version`, `--help` and `--show-completion` answer.

The first run downloads those releases (a few minutes); later runs reuse the environment and
only rebuild airoi. Without a package index the test skips, except with
AIROI_TEST_REQUIRE_SERVICES=1, where it fails; a resolution that fails always fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from airoi import __version__
from tests.cache_lock import held
from tests.client.conftest import Account
from tests.conftest import REQUIRE_SERVICES

ROOT = Path(__file__).resolve().parents[2]
CLIENT_EXTRAS = ("dataframe", "pull")
INSTALL_SECONDS = 900
RUN_SECONDS = 120


def requirements_of(extras: tuple[str, ...]) -> list[Requirement]:
    """The base install's dependencies and those of `extras`, as pyproject.toml gives them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    texts = list(project["dependencies"])
    for extra in extras:
        texts += project["optional-dependencies"][extra]
    return [Requirement(text) for text in texts]


def lowest(requirement: Requirement) -> str:
    (bound,) = [spec.version for spec in requirement.specifier if spec.operator == ">="]
    return bound


def oldest_pins() -> list[str]:
    """`name==lowest` for each dependency of the base install and the frames and pull extras."""
    return sorted({f"{r.name}=={lowest(r)}" for r in requirements_of(CLIENT_EXTRAS)})


def test_client_dependencies_are_ranges_below_a_major() -> None:
    requirements = requirements_of((*CLIENT_EXTRAS, "dlt"))
    assert {r.name for r in requirements} >= {"httpx", "typer", "rich", "pandas", "pyarrow"}
    for requirement in requirements:
        operators = sorted(spec.operator for spec in requirement.specifier)
        assert operators == ["<", ">="], f"{requirement} is not a range (>=oldest,<next major)"
        (upper,) = [spec.version for spec in requirement.specifier if spec.operator == "<"]
        assert requirement.specifier.contains(lowest(requirement))
        assert not requirement.specifier.contains(upper)


def _unavailable(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (AIROI_TEST_REQUIRE_SERVICES=1, so this fails instead of skipping)")
    pytest.skip(reason)


def _source_copy(target: Path) -> Path:
    """What a build of airoi reads, copied: a stale build/ or egg-info in the tree stays out."""
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(ROOT / "src", target / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture(scope="module")
def oldest_python(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of an environment holding airoi and the oldest releases its ranges allow."""
    pins = oldest_pins()
    cache = Path(request.config.cache.mkdir("install-beside"))
    key = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:12]
    home = cache / key
    python = home / "bin" / "python"
    source = _source_copy(tmp_path_factory.mktemp("airoi-source"))
    extras = ",".join(CLIENT_EXTRAS)
    command = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    with held(cache, INSTALL_SECONDS + 60):  # another test process may be installing
        for stale in cache.iterdir():  # one environment at a time: a changed range replaces it
            if stale.is_dir() and stale.name != key:
                shutil.rmtree(stale, ignore_errors=True)
        if not python.exists():
            shutil.rmtree(home, ignore_errors=True)
            venv.create(home, with_pip=True)
        try:
            result = subprocess.run(
                [*command, f"{source}[{extras}]", *pins],
                capture_output=True,
                text=True,
                timeout=INSTALL_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired:
            _unavailable(f"installing {pins} took over {INSTALL_SECONDS} s")
    output = result.stdout[-3000:] + result.stderr[-3000:]
    if "ResolutionImpossible" in output or "conflicting dependencies" in output:
        pytest.fail(f"airoi cannot be installed beside {pins}:\n{output}")
    if result.returncode != 0:
        _unavailable(f"pip could not install {pins}:\n{output}")
    return python


def _run(program: Path, *args: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(program), *args],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert result.returncode == 0, f"{args} failed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    return result.stdout


# Run in the environment with the oldest releases: what it has installed, the account's frames
# and what `airoi pull` left in DuckDB, as JSON.
_READ = """\
import json, sys
from importlib.metadata import version
import duckdb
from airoi.client import Client

base_url, token, store, *names = sys.argv[1:]
with Client(base_url, token, page_size=2) as api:
    costs = api.cost_entries().to_pandas()
    values = api.value_entries().to_pandas()
conn = duckdb.connect(store, read_only=True)
pulled = conn.execute("SELECT count(*), sum(amount_cents) FROM cost_entries").fetchone()
print(json.dumps({
    "versions": {name: version(name) for name in names},
    "cost_dtype": str(costs["amount_cents"].dtype),
    "cost_sum": int(costs["amount_cents"].sum()),
    "date_dtype": str(costs["period_start"].dtype),
    "updated_at_tz": str(costs["updated_at"].dt.tz),
    "value_dtype": str(values["amount_cents"].dtype),
    "value_nulls": int(values["amount_cents"].isna().sum()),
    "pulled": [int(pulled[0]), int(pulled[1])],
}))
"""


def test_the_client_works_with_the_oldest_releases_it_allows(
    oldest_python: Path, base_url: str, account: Account, tmp_path: Path
) -> None:
    airoi = oldest_python.parent / "airoi"
    store = tmp_path / "airoi.duckdb"
    token = {"AIROI_TOKEN": account.token}
    _run(airoi, "pull", "--base-url", base_url, "--to", str(store), env=token)
    pins = dict(pin.split("==") for pin in oldest_pins())
    read = json.loads(
        _run(oldest_python, "-c", _READ, base_url, account.token, str(store), *sorted(pins))
    )
    assert read["versions"] == pins
    # Seven cost entries of 10,000 + n cents, n = 0..6: 70,000 + 21. Cents are Int64 whether
    # or not a null is there, dates datetime64 (the types come from the description).
    assert read["cost_dtype"] == "Int64"
    assert read["cost_sum"] == 70_021
    assert read["date_dtype"] == "datetime64[ms]"
    assert read["updated_at_tz"] == "UTC"
    # One value entry has no amount: the same integer type, nullable.
    assert read["value_dtype"] == "Int64"
    assert read["value_nulls"] == 1
    assert read["pulled"] == [7, 70_021]

    assert _run(airoi, "--version") == f"airoi {__version__}\n"
    assert "pull" in _run(airoi, "--help")
    # The shell named, not found among the parents (a run in the background has none).
    named = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    completion = _run(airoi, "--show-completion", "bash", env=named)
    assert "complete -o default -F _airoi_completion airoi" in completion


def test_the_server_is_not_part_of_the_client(oldest_python: Path) -> None:
    # The base install brings none of the service's packages.
    script = (
        "import importlib.util, sys; "
        "print([n for n in sys.argv[1:] if importlib.util.find_spec(n)])"
    )
    found = _run(oldest_python, "-c", script, "litestar", "sqlalchemy", "uvicorn", "msgspec")
    assert found.strip() == "[]"
