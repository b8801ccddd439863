"""Two overlapping loads and a poller syncing the whole time: what does the copy miss?

    python -m bench.overlap [--long 40000] [--short 500]
                            [--postgres postgresql+psycopg://postgres@127.0.0.1:5432/test]

A long load of `--long` cost entries starts; once it runs, a short load of `--short` starts.
A poller syncs `/cost_entries` the whole time with the README's recipe (updated_since,
inclusive, from the largest updated_at seen; cursors within a walk), in process through the
served app. When both loads are done it syncs once more and compares its copy with a full
walk: rows missing, rows stale. Prints one line per database.

It needs only what every release had (`load_bundle(engine, bundle)` and the app), so the
same file measures an older checkout too: run it with that checkout's `src` first on
PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
import uuid
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import make_url

try:
    from airoi.load import load_bundle
except ImportError:  # an older checkout
    from airoi.bundle import load_bundle  # type: ignore[import-not-found, no-redef]
from litestar.testing import TestClient

from airoi.app import create_app
from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.settings import Settings

TOKEN = "airoi_bench-overlap-" + "x" * 40


def base_bundle() -> dict[str, Any]:
    return {
        "accounts": [{"id": 1, "name": "Overlap"}],
        "users": [{"id": 1, "account_id": 1, "name": "Ada", "role": "owner"}],
        "tokens": [{"user_id": 1, "token": TOKEN}],
        "initiatives": [{"id": 1, "account_id": 1, "title": "Bot", "stage": "live"}],
        "cost_entries": [{"id": 1, "initiative_id": 1, "amount_cents": 1}],
    }


def entries(first_id: int, count: int) -> dict[str, Any]:
    return {
        "cost_entries": [
            {"id": first_id + n, "initiative_id": 1, "amount_cents": 100 + n} for n in range(count)
        ]
    }


def sync(client: Any, copy: dict[int, Any], since: str | None) -> str | None:
    params: dict[str, Any] = {"limit": 500}
    if since is not None:
        params["updated_since"] = since
    headers = {"Authorization": f"Bearer {TOKEN}"}
    while True:
        response = client.get("/api/v1/cost_entries", params=params, headers=headers)
        if response.status_code != 200:  # a store too busy to answer in time: ask again
            time.sleep(0.05)
            continue
        page = response.json()
        for row in page["data"]:
            copy[row["id"]] = row
            if since is None or row["updated_at"] > since:
                since = row["updated_at"]
        if not page["page"]["has_more"]:
            return since
        params = {"limit": 500, "cursor": page["page"]["next_cursor"]}


def run(url: str, long: int, short: int) -> str:
    engine = make_engine(url)
    upgrade(engine)
    load_bundle(engine, base_bundle())
    app = create_app(Settings(database_url=url))
    done: dict[str, float] = {}

    def load(name: str, bundle: dict[str, Any]) -> None:
        started = time.perf_counter()
        try:
            load_bundle(engine, bundle)
        except Exception as exc:  # a load refused or failed: said in the line
            done[name + "_error"] = 1.0
            print(f"{name} load failed: {type(exc).__name__}: {exc}".splitlines()[0])
        done[name] = time.perf_counter() - started

    with TestClient(app) as client:
        copy: dict[int, Any] = {}
        since = sync(client, copy, None)
        long_load = threading.Thread(target=load, args=("long", entries(10_000, long)))
        long_load.start()
        time.sleep(0.5)
        short_load = threading.Thread(target=load, args=("short", entries(10_000_000, short)))
        short_load.start()
        polls = 0
        while long_load.is_alive() or short_load.is_alive():
            since = sync(client, copy, since)
            polls += 1
        long_load.join()
        short_load.join()
        since = sync(client, copy, since)
        served: dict[int, Any] = {}
        sync(client, served, None)
    app.state.engine.dispose()
    engine.dispose()
    missing = len(served.keys() - copy.keys())
    stale = sum(1 for i, row in served.items() if copy.get(i, row) != row)
    new = long + short
    return (
        f"{make_url(url).get_backend_name()}: long load {long} rows {done['long']:.1f} s, "
        f"short load {short} rows {done['short']:.1f} s, {polls} polls; copy: "
        f"{missing} of {new} new rows missing, {stale} stale"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", type=int, default=40_000)
    parser.add_argument("--short", type=int, default=500)
    parser.add_argument("--postgres", help="an admin URL; a scratch database is made there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        print(run(f"sqlite:///{os.path.join(scratch, 'overlap.db')}", args.long, args.short))
    if args.postgres:
        admin = make_engine(args.postgres)
        name = f"airoi_overlap_{uuid.uuid4().hex[:8]}"
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            url = make_url(args.postgres).set(database=name).render_as_string(False)
            print(run(url, args.long, args.short))
        finally:
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


if __name__ == "__main__":
    main()
