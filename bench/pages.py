"""Load rate and page cost on SQLite and PostgreSQL: figures for the foundation issue.

    python -m bench.pages --cost-entries 1000000 [--postgres URL]

For each database: `airoi load` of a generated bundle in a child process (wall time,
rows/s, the child's peak RSS), then `airoi serve` on loopback and GET /cost_entries at
limit=500 for the first page and for a page deep in the table (the cursor after the
row `--cost-entries - 500` rows in), timed over repeated requests (median, p99).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
from sqlalchemy import select, text
from sqlalchemy.engine import make_url

from airoi.db.engine import make_engine
from airoi.db.tables import cost_entries
from airoi.listing import Position, encode_cursor
from bench.make_bundle import BENCH_TOKEN, write_bundle


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _airoi(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "airoi", *args], env=env, capture_output=True, text=True, check=True
    )


def load(url: str, bundle: Path, rows: int) -> dict[str, float]:
    env = {**os.environ, "AIROI_DATABASE_URL": url}
    _airoi("init", env=env)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    _airoi("load", str(bundle), env=env)
    seconds = time.perf_counter() - started
    peak_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    return {"load_s": seconds, "rows_per_s": rows / seconds, "load_peak_rss_mb": peak_mb}


def time_pages(url: str, rows: int, repeats: int) -> dict[str, float]:
    engine = make_engine(url)
    with engine.connect() as conn:
        deep = conn.execute(
            select(cost_entries.c.updated_at, cost_entries.c.id)
            .order_by(cost_entries.c.updated_at, cost_entries.c.id)
            .offset(max(rows - 501, 0))
            .limit(1)
        ).one()
    engine.dispose()
    deep_cursor = encode_cursor("cost_entries", Position(deep.updated_at, deep.id))
    port = _free_port()
    env = {**os.environ, "AIROI_DATABASE_URL": url}
    server = subprocess.Popen(
        [sys.executable, "-m", "airoi", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    figures: dict[str, float] = {}
    try:
        base = f"http://127.0.0.1:{port}/api/v1/cost_entries"
        headers = {"Authorization": f"Bearer {BENCH_TOKEN}"}
        with httpx.Client(headers=headers, timeout=30) as client:
            for _ in range(100):
                try:
                    client.get(f"http://127.0.0.1:{port}/api/v1/openapi.json")
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            for name, params in (
                ("first", {"limit": 500}),
                ("deep", {"limit": 500, "cursor": deep_cursor}),
            ):
                samples = []
                for i in range(repeats + 5):
                    started = time.perf_counter()
                    response = client.get(base, params=params)
                    elapsed = time.perf_counter() - started
                    assert response.status_code == 200, response.text
                    assert len(response.json()["data"]) == 500
                    if i >= 5:  # warm-up
                        samples.append(elapsed * 1000)
                samples.sort()
                figures[f"{name}_p50_ms"] = statistics.median(samples)
                figures[f"{name}_p99_ms"] = samples[int(len(samples) * 0.99) - 1]
    finally:
        server.terminate()
        server.wait()
    figures["deep_over_first"] = figures["deep_p50_ms"] / figures["first_p50_ms"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost-entries", type=int, default=1_000_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--postgres", help="an admin URL; a scratch database is made and dropped")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="airoi-bench-"))
    bundle = work / "bundle.json"
    write_bundle(bundle, cost_entries=args.cost_entries, initiatives=args.initiatives)
    print(f"bundle: {args.cost_entries} cost entries, {bundle.stat().st_size / 1e6:.0f} MB")
    targets = [("sqlite", f"sqlite:///{work / 'bench.db'}")]
    scratch = None
    if args.postgres:
        scratch = f"airoi_bench_{uuid.uuid4().hex[:8]}"
        admin = make_engine(args.postgres)
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{scratch}"'))
        url = make_url(args.postgres).set(database=scratch).render_as_string(hide_password=False)
        targets.append(("postgresql", url))
    try:
        for name, url in targets:
            figures = load(url, bundle, args.cost_entries) | time_pages(
                url, args.cost_entries, args.repeats
            )
            print(name, " ".join(f"{k}={v:,.2f}" for k, v in figures.items()), flush=True)
    finally:
        if scratch:
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
