"""Schemathesis 4 against the served description (SPEC 9: generated from the served routes).

A real `airoi serve` over the demo account, probed by `st run` with schemathesis.toml
(the token bound through the description's bearer scheme), with `--checks all`, all four
phases (examples, coverage, fuzzing, stateful) named explicitly, 25 examples per operation,
a failure limit and a time limit. Any failure of any check fails this test, and the failure
message carries the last lines of schemathesis' own output so that a CI log suffices.

Checks named on the command line win over the per-operation switches of schemathesis.toml
(schemathesis merges CLI-named checks above the file), so `--checks all` would re-enable
the exception recorded there. The run is therefore split in two, which together apply
exactly what the file records:
- the operations the file names (the lists and the ROI breakdown, paged alike): every check
  but positive_data_acceptance (a made-up cursor string is schema-valid yet refused);
- every other operation (/initiatives/{id}, /roi, the description itself): every check.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PHASES = "examples,coverage,fuzzing,stateful"
TAIL_LINES = 60
RUN_SECONDS = 300
# The operations whose exception schemathesis.toml records (kept in step with that file).
EXCEPTED = (
    r"^/api/v1/(initiatives|cost_entries|value_entries|metrics|observations|budgets"
    r"|business_cases|decisions|integrations|deletions|roi/breakdown)$"
)


def tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


def cases_run(output: str) -> int:
    """The number of test cases schemathesis reports having generated ("N generated")."""
    found = re.search(r"Test cases:\s*\n\s*(\d+) generated", output)
    return int(found.group(1)) if found else -1


def operations_tested(output: str) -> int:
    found = re.search(r"Tested: (\d+)\b", output)
    return int(found.group(1)) if found else -1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StRun:
    returncode: int
    output: str

    @property
    def cases(self) -> int:
        return cases_run(self.output)

    @property
    def tested(self) -> int:
        return operations_tested(self.output)


def st_run(base: str, token: str, env: dict[str, str], cwd: Path, *extra: str) -> StRun:
    st = Path(sys.executable).parent / "st"
    command = [
        str(st),
        "--config-file",
        str(ROOT / "schemathesis.toml"),
        "run",
        f"{base}/api/v1/openapi.json",
        "--checks",
        "all",
        "--phases",
        PHASES,
        "--max-examples",
        "25",
        "--max-failures",
        "5",
        "--request-timeout",
        "30",
        "--no-color",
        *extra,
    ]
    try:
        run = subprocess.run(
            command,
            env={**env, "AIROI_SCHEMATHESIS_TOKEN": token},
            cwd=cwd,  # its .schemathesis cache stays out of the tree
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        pytest.fail(
            f"st run did not finish within {RUN_SECONDS}s ({' '.join(extra)}); "
            f"last {TAIL_LINES} lines:\n{tail(partial)}"
        )
    return StRun(run.returncode, run.stdout + run.stderr)


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    pytest.importorskip("schemathesis", reason="schemathesis is in the dev extra")
    env = {
        **os.environ,
        "AIROI_DATABASE_URL": f"sqlite:///{tmp_path / 'st.db'}",
        # Thousands of requests in seconds: the budget is not what is under test here.
        "AIROI_RATE_LIMIT": "1000000/minute",
    }
    env.pop("AIROI_REDIS_URL", None)
    airoi = [sys.executable, "-m", "airoi"]
    subprocess.run([*airoi, "init"], env=env, check=True, capture_output=True, timeout=120)
    demo = subprocess.run(
        [*airoi, "demo"], env=env, check=True, capture_output=True, text=True, timeout=120
    )
    found = re.search(r"Token:\s+(\S+)", demo.stdout)
    assert found, demo.stdout
    port = free_port()
    server = subprocess.Popen(
        [*airoi, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail("airoi serve did not come up")
        token = found.group(1)
        runs = {
            "recorded exceptions": st_run(
                base,
                token,
                env,
                tmp_path,
                "--include-path-regex",
                EXCEPTED,
                "--exclude-checks",
                "positive_data_acceptance",
            ),
            "everything else": st_run(base, token, env, tmp_path, "--exclude-path-regex", EXCEPTED),
        }
        for name, run in runs.items():
            (tmp_path / f"st-{name.replace(' ', '-')}.txt").write_text(run.output)
        total = sum(max(run.cases, 0) for run in runs.values())
        print(
            f"\nschemathesis ran {total} test cases over {sum(r.tested for r in runs.values())} "
            "operations ("
            + ", ".join(f"{name}: {run.cases}, exit {run.returncode}" for name, run in runs.items())
            + ")"
        )
        for name, run in runs.items():
            diagnosis = f"st run ({name}) exited {run.returncode}; last {TAIL_LINES} lines:\n"
            assert run.returncode == 0, diagnosis + tail(run.output)
            assert run.cases > 0, diagnosis + tail(run.output)
        # Every described operation is probed: the ten lists and the breakdown with the
        # exception, then /initiatives/{id}, /roi and the description.
        assert runs["recorded exceptions"].tested == 11, tail(runs["recorded exceptions"].output)
        assert runs["everything else"].tested in (2, 3), tail(runs["everything else"].output)
    finally:
        server.terminate()
        server.wait(timeout=30)
