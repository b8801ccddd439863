"""What the benchmarks share: scratch databases, `airoi load` in a child, a server on loopback,
and timing of repeated requests."""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from airoi.db.engine import make_engine
from bench.make_bundle import BENCH_TOKEN

WARM_UP = 5


def schema_head() -> str:
    """The schema revision this checkout migrates to (a reused scratch file must match it)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from airoi.db.migrate import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return str(ScriptDirectory.from_config(config).get_current_head())


def cpu_times() -> tuple[int, int] | None:
    """The machine's CPU time its host took from it (steal) and all its CPU time, in ticks
    since boot, from /proc/stat; None where the kernel does not say."""
    try:
        with open("/proc/stat") as stat:
            return parse_cpu_line(stat.readline())
    except (OSError, ValueError):
        return None


def parse_cpu_line(line: str) -> tuple[int, int]:
    """Steal and the sum of user, nice, system, idle, iowait, irq, softirq and steal from
    /proc/stat's first line (guest time is counted in user already, so not added again)."""
    fields = [int(x) for x in line.split()[1:9]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def steal_share(since: tuple[int, int] | None) -> float | None:
    """The share of the machine's CPU time its host took since `since` (`cpu_times()`): on a
    virtual machine, time neither the service nor its ceiling ran. A two-process exchange (a
    client and a server handing each request back and forth) loses more to it than one
    process's loop, so a ratio measured while it was high says as much about the host as
    about the service."""
    now = cpu_times()
    if since is None or now is None or now[1] <= since[1]:
        return None
    return (now[0] - since[0]) / (now[1] - since[1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def airoi(*args: str, url: str, **env: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "airoi", *args],
        env={**os.environ, "AIROI_DATABASE_URL": url, **env},
        capture_output=True,
        text=True,
        check=True,
    )


@contextmanager
def scratch_databases(work: Path, postgres_admin: str | None) -> Iterator[list[tuple[str, str]]]:
    """An SQLite file, and a fresh PostgreSQL database given an admin URL (dropped after)."""
    targets = [("sqlite", f"sqlite:///{work / 'bench.db'}")]
    name = f"airoi_bench_{uuid.uuid4().hex[:8]}"
    admin = make_engine(postgres_admin) if postgres_admin else None
    if admin is not None and postgres_admin:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(postgres_admin).set(database=name).render_as_string(hide_password=False)
        targets.append(("postgresql", url))
    try:
        yield targets
    finally:
        if admin is not None:
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            admin.dispose()


# `airoi load` in a child that reports its own peak RSS (KiB) as its last line on stderr.
_LOAD = """
import resource, sys
from airoi.cli import main
sys.argv = ["airoi", "load", sys.argv[1]]
try:
    main()
finally:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def load(url: str, bundle: Path, rows: int) -> dict[str, float]:
    """`airoi init`, then `airoi load` in a child: wall time, rows/s, the loader's peak RSS."""
    airoi("init", url=url)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _LOAD, str(bundle)],
        env={**os.environ, "AIROI_DATABASE_URL": url},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    peak_mb = int(done.stderr.strip().splitlines()[-1]) / 1024
    return {"load_s": seconds, "load_rows_per_s": rows / seconds, "load_peak_rss_mb": peak_mb}


@contextmanager
def serving(url: str, **env: str) -> Iterator[httpx.Client]:
    """`airoi serve` (one worker) on a free loopback port; a client holding the bench token."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "airoi", "serve", "--port", str(port)],
        env={**os.environ, "AIROI_DATABASE_URL": url, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    headers = {"Authorization": f"Bearer {BENCH_TOKEN}"}
    base = f"http://127.0.0.1:{port}/api/v1/"
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            # Up to a minute to start: on a busy machine the imports alone can take 10 s.
            deadline = time.monotonic() + 60
            while True:
                try:
                    client.get("openapi.json")
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        raise
                    time.sleep(0.05)
            yield client
    finally:
        server.terminate()
        server.wait()


def summary(samples: list[float]) -> dict[str, float]:
    """Median and p99 of samples in milliseconds."""
    samples = sorted(samples)
    return {
        "p50_ms": statistics.median(samples),
        "p99_ms": samples[max(int(len(samples) * 0.99) - 1, 0)],
    }


def timed(call: Callable[[], Any], repeats: int) -> dict[str, float]:
    """Median and p99 in milliseconds of `call`, after a short warm-up."""
    samples = []
    for i in range(repeats + WARM_UP):
        started = time.perf_counter()
        call()
        if i >= WARM_UP:
            samples.append((time.perf_counter() - started) * 1000)
    return summary(samples)


def timed_interleaved(
    calls: dict[str, Callable[[], Any]],
    repeats: int,
    summarize: Callable[[list[float]], dict[str, float]] = summary,
) -> dict[str, dict[str, float]]:
    """Each call once per round, the order rotated every round, after a warm-up: a drift in
    the machine's speed falls on every call alike, so their ratio is the calls' own. Each
    call's milliseconds are summed up by `summarize` (median and p99 unless given)."""
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeats + WARM_UP):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            calls[name]()
            if i >= WARM_UP:
                samples[name].append((time.perf_counter() - started) * 1000)
    return {name: summarize(values) for name, values in samples.items()}


def ok(response: httpx.Response) -> httpx.Response:
    assert response.status_code == 200, response.text
    return response
