"""Load rate and page cost on SQLite and PostgreSQL (the foundation's figures).

    python -m bench.pages --cost-entries 1000000 [--postgres URL]

For each database: `airoi load` of a generated bundle (wall time, rows/s, peak RSS of the
loading process), then `airoi serve` on loopback and GET /cost_entries?limit=500 for the
first page and for a page deep in the table (the cursor after all but the last 501 rows),
median and p99 over repeated requests.
"""

from __future__ import annotations

import argparse
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from airoi.db.engine import make_engine
from airoi.db.secret import read_store_secret
from airoi.db.tables import cost_entries
from airoi.listing import CursorCodec, Position
from bench.common import load, ok, scratch_databases, serving, timed
from bench.make_bundle import write_bundle


def deep_cursor(url: str, rows: int) -> str:
    engine = make_engine(url)
    with engine.connect() as conn:
        deep = conn.execute(
            select(cost_entries.c.account_id, cost_entries.c.updated_at, cost_entries.c.id)
            .order_by(cost_entries.c.updated_at, cost_entries.c.id)
            .offset(max(rows - 501, 0))
            .limit(1)
        ).one()
        secret = read_store_secret(conn)
    engine.dispose()
    assert secret is not None
    position = Position(deep.updated_at, deep.id)
    return CursorCodec(secret).encode("cost_entries", deep.account_id, position)


def ask(client: httpx.Client, params: dict[str, Any]) -> httpx.Response:
    return ok(client.get("cost_entries", params=params))


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
    print(f"bundle: {args.cost_entries:,} cost entries, {bundle.stat().st_size / 1e6:,.0f} MB")
    with scratch_databases(work, args.postgres) as targets:
        for name, url in targets:
            figures = load(url, bundle, args.cost_entries + args.initiatives)
            cursor = deep_cursor(url, args.cost_entries)
            with serving(url) as client:
                for label, params in (("first", {}), ("deep", {"cursor": cursor})):
                    page = {"limit": 500, **params}
                    result = timed(partial(ask, client, page), args.repeats)
                    figures |= {f"{label}_{k}": v for k, v in result.items()}
            figures["deep_over_first"] = figures["deep_p50_ms"] / figures["first_p50_ms"]
            print(name, " ".join(f"{k}={v:,.2f}" for k, v in figures.items()), flush=True)


if __name__ == "__main__":
    main()
