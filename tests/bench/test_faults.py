"""The fault table (bench/faults.py) runs to its end: one fault on SQLite, held for a second,
makes its row, nothing is lost, and every server the script started is stopped again."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import _unavailable

ROOT = Path(__file__).resolve().parents[2]
OUTCOMES = ("2xx", "4xx", "503", "5xx", "tool_err", "timeout", "conn")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_a_read_only_sqlite_file_makes_a_row_loses_nothing_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    if shutil.which("redis-server") is None:
        _unavailable("redis-server is not installed")
    figures = tmp_path / "faults.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.faults", "--faults", "sqlite-read-only", "--window", "1",
         "--baseline", "0.5", "--recovery", "15", "--rate", "10", "--json", str(figures)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads(figures.read_text())
    assert row["fault"] == "sqlite-read-only"
    assert row["sent"] > 0
    assert sum(row[outcome] for outcome in OUTCOMES) == row["sent"]
    # A read-only service reading a file made read-only: no request fails on it.
    assert row["503"] == row["5xx"] == 0
    assert row["recovery_s"] is not None
    assert row["nothing_lost"] == "yes"
    assert re.search(r"^\s*sqlite-read-only\s+\d", done.stdout, re.M), done.stdout
    started = re.search(r"redis on :(\d+), airoi serve --workers 2 on :(\d+)", done.stdout)
    assert started, done.stdout
    assert not any(_listening(int(port)) for port in started.groups())
