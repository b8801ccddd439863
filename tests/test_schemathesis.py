"""Schemathesis 4 against the served description (SPEC 9: generated from the served routes).

A real `airoi serve` over the demo account, probed by `st run` with schemathesis.toml
(the token bound through the description's bearer scheme, 25 examples per operation,
the recorded exceptions). Any failure of any check fails this test.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_schemathesis_finds_no_failure(tmp_path: Path) -> None:
    pytest.importorskip("schemathesis", reason="schemathesis is in the dev extra")
    st = Path(sys.executable).parent / "st"
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
        run = subprocess.run(
            [
                str(st),
                "--config-file",
                str(ROOT / "schemathesis.toml"),
                "run",
                f"{base}/api/v1/openapi.json",
                "--max-examples",
                "25",
                "--no-color",
            ],
            env={**env, "AIROI_SCHEMATHESIS_TOKEN": found.group(1)},
            cwd=tmp_path,  # its .schemathesis cache stays out of the tree
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
        # Every described operation is probed, the description's own included or not.
        assert re.search(r"Tested: (9|10|11)\b", run.stdout), run.stdout[-2000:]
    finally:
        server.terminate()
        server.wait(timeout=30)
