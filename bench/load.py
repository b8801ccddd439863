"""Load test: wrk against `airoi serve --workers 2` on PostgreSQL, with an incremental walker
and a concurrent writer, then a check that the walker lost, duplicated or kept stale nothing.

    python -m bench.load --postgres ADMIN_URL [--seconds 60] [--connections 32] [--json out.json]

A scratch PostgreSQL database gets a generated account (`--cost-entries` cost entries,
`--initiatives` initiatives, budgets). It is served by `airoi serve --workers 2` on a free
loopback port, the rate limit shared through Redis (`--redis`, flushed first) and set high
enough never to trigger. For `--seconds`:

- wrk (2 threads, `--connections`) rotates GETs over cost_entries, initiatives, approved
  value entries, roi, roi?window=1yr and budgets; its Lua `response` hook counts 5xx;
- one Python client walks /cost_entries incrementally (updated_since inclusive + cursor,
  limit 500), upserting rows by id into a dict and remembering the largest updated_at;
- a writer runs `airoi load` `--rounds` times on bundles that change the amount and the
  updated_at (later than anything before) of `--changed` rows each.

Then one more walk from the last remembered updated_at, and the check: the walker's rows
against the database's (lost, unknown, stale), plus any id seen twice in one page.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select

from airoi.db.engine import make_engine
from airoi.db.tables import cost_entries
from bench.common import free_port, load, scratch_databases
from bench.make_bundle import ACCOUNT_ID, BENCH_TOKEN, write_bundle

PATHS = (
    "/api/v1/cost_entries?limit=100",
    "/api/v1/initiatives",
    "/api/v1/value_entries?status=approved",
    "/api/v1/roi",
    "/api/v1/roi?window=1yr",
    "/api/v1/budgets?limit=100",
)
WALK_LIMIT = 500
MAX_WALKS = 10_000

LUA = """
local paths = {%(paths)s}
wrk.headers["Authorization"] = "Bearer %(token)s"
local threads = {}
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
  table.insert(threads, thread)
end

function init(args)
  n = id
  s5xx = 0
  s4xx = 0
  s429 = 0
  ok = 0
end

function request()
  n = n + 1
  return wrk.format("GET", paths[(n %% #paths) + 1])
end

function response(status, headers, body)
  if status >= 500 then
    s5xx = s5xx + 1
  elseif status == 429 then
    s429 = s429 + 1
  elseif status >= 400 then
    s4xx = s4xx + 1
  else
    ok = ok + 1
  end
end

function done(summary, latency, requests)
  local t5, t4, t429, tok = 0, 0, 0, 0
  for _, t in ipairs(threads) do
    t5 = t5 + t:get("s5xx")
    t4 = t4 + t:get("s4xx")
    t429 = t429 + t:get("s429")
    tok = tok + t:get("ok")
  end
  io.write(string.format("LUA_COUNTS ok=%%d s4xx=%%d s429=%%d s5xx=%%d\\n", tok, t4, t429, t5))
end
"""

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value)
    assert match, value
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_wrk(out: str) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    figures["requests_per_s"] = float(m.group(1)) if m else None
    m = re.search(r"(\d+) requests in ([\d.]+\w+)", out)
    figures["requests"] = int(m.group(1)) if m else None
    for pct in ("50", "75", "90", "99"):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+\w+)\s*$", out, re.M)
        figures[f"p{pct}_ms"] = _ms(m.group(1)) if m else None
    m = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    figures["non_2xx_3xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    figures["socket_errors"] = (
        dict(zip(("connect", "read", "write", "timeout"), map(int, m.groups()), strict=True))
        if m
        else {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    )
    m = re.search(r"LUA_COUNTS ok=(\d+) s4xx=(\d+) s429=(\d+) s5xx=(\d+)", out)
    if m:
        figures |= {
            "lua_ok": int(m.group(1)),
            "lua_4xx": int(m.group(2)),
            "lua_429": int(m.group(3)),
            "lua_5xx": int(m.group(4)),
        }
    else:
        figures["lua_5xx"] = None
    return figures


@contextmanager
def serving_workers(url: str, workers: int, log: Path, **env: str) -> Iterator[str]:
    """`airoi serve --workers N` on a free loopback port; yields the base URL."""
    port = free_port()
    with log.open("w") as err:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "airoi",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                str(workers),
            ],
            env={**os.environ, "AIROI_DATABASE_URL": url, **env},
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        for _ in range(600):
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"server did not come up; see {log}")
            try:
                if httpx.get(base + "/api/v1/openapi.json", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("server did not come up")
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def _utc(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    instant: datetime = value.astimezone(UTC)
    return instant


class Walker:
    """One client walking /cost_entries incrementally, upserting by id."""

    def __init__(self, base: str, seconds_cap: float) -> None:
        self.client = httpx.Client(
            base_url=base + "/api/v1/",
            headers={"Authorization": f"Bearer {BENCH_TOKEN}"},
            timeout=60,
        )
        self.rows: dict[int, dict[str, Any]] = {}
        self.since: str | None = None
        self.since_dt: datetime | None = None
        self.walks = 0
        self.pages = 0
        self.rows_received = 0
        self.dup_in_page = 0
        self.errors: list[str] = []
        self.seconds_cap = seconds_cap
        self.stop = threading.Event()

    def walk(self, max_pages: int) -> None:
        cursor: str | None = None
        since = self.since
        for _ in range(max_pages):
            params: dict[str, Any] = {"limit": WALK_LIMIT}
            if since:
                params["updated_since"] = since
            if cursor:
                params["cursor"] = cursor
            response = self.client.get("cost_entries", params=params)
            if response.status_code != 200:
                self.errors.append(f"{response.status_code} {response.text[:200]}")
                time.sleep(0.2)
                if len(self.errors) > 50:
                    raise RuntimeError(f"walker: too many errors: {self.errors[-1]}")
                continue  # retry the same page
            page = response.json()
            self.pages += 1
            ids = [row["id"] for row in page["data"]]
            self.dup_in_page += len(ids) - len(set(ids))
            for row in page["data"]:
                self.rows_received += 1
                self.rows[row["id"]] = row
                stamp = _utc(row["updated_at"])
                if self.since_dt is None or stamp > self.since_dt:
                    self.since_dt, self.since = stamp, row["updated_at"]
            if not page["page"]["has_more"]:
                self.walks += 1
                return
            cursor = page["page"]["next_cursor"]
        raise RuntimeError(f"walker: walk did not end within {max_pages} pages")

    def run(self, max_pages: int) -> None:
        started = time.monotonic()
        try:
            for _ in range(MAX_WALKS):
                if self.stop.is_set() or time.monotonic() - started > self.seconds_cap:
                    break
                self.walk(max_pages)
                time.sleep(0.05)
        except Exception as exc:  # reported, and the check will fail
            self.errors.append(f"walker died: {exc!r}")


def write_change_bundle(url: str, path: Path, ids: list[int], round_no: int) -> dict[int, int]:
    """A bundle re-stating `ids` with a new amount and an updated_at of now."""
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(select(cost_entries).where(cost_entries.c.id.in_(ids))).mappings().all()
    engine.dispose()
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    new_amounts: dict[int, int] = {}
    records = []
    for row in rows:
        amount = (row["amount_cents"] or 0) + 1000 * round_no + 7
        new_amounts[row["id"]] = amount
        records.append(
            {
                "id": row["id"],
                "initiative_id": row["initiative_id"],
                "amount_cents": amount,
                "currency": row["currency"],
                "cost_type": row["cost_type"],
                "cost_category": row["cost_category"],
                "period_start": row["period_start"].isoformat(),
                "vendor_name": row["vendor_name"],
                "description": row["description"],
                "created_at": _utc(row["created_at"]).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "updated_at": now,
            }
        )
    path.write_text(json.dumps({"cost_entries": records}))
    return new_amounts


def writer(
    url: str,
    work: Path,
    total: int,
    rounds: int,
    changed: int,
    seconds: float,
    started: float,
    out: dict[str, Any],
) -> None:
    rng = random.Random(11)
    out["rounds"] = []
    try:
        for k in range(rounds):
            at = started + seconds * (k + 1) / (rounds + 1)
            time.sleep(max(0.0, min(at - time.monotonic(), seconds)))
            ids = rng.sample(range(1, total + 1), changed)
            bundle = work / f"change_{k + 1}.json"
            write_change_bundle(url, bundle, ids, k + 1)
            t0 = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "airoi", "load", str(bundle)],
                env={**os.environ, "AIROI_DATABASE_URL": url},
                check=False,
                capture_output=True,
                text=True,
                timeout=600,
            )
            took = time.monotonic() - t0
            out["rounds"].append(
                {"round": k + 1, "rows": changed, "load_s": round(took, 2), "rc": done.returncode}
            )
            if done.returncode != 0:
                out.setdefault("errors", []).append(done.stderr[-2000:])
    except Exception as exc:
        out.setdefault("errors", []).append(repr(exc))


def check(url: str, walker: Walker, since: datetime) -> dict[str, int]:
    engine = make_engine(url)
    with engine.connect() as conn:
        db = {
            r.id: (r.amount_cents, _utc(r.updated_at))
            for r in conn.execute(
                select(
                    cost_entries.c.id, cost_entries.c.amount_cents, cost_entries.c.updated_at
                ).where(cost_entries.c.account_id == ACCOUNT_ID)
            )
        }
    engine.dispose()
    lost = sum(1 for i in db if i not in walker.rows)
    unknown = sum(1 for i in walker.rows if i not in db)
    stale_amount = stale_stamp = 0
    for i, (amount, stamp) in db.items():
        row = walker.rows.get(i)
        if row is None:
            continue
        if row["amount_cents"] != amount:
            stale_amount += 1
        if _utc(row["updated_at"]) != stamp:
            stale_stamp += 1
    return {
        "db_rows": len(db),
        "walker_rows": len(walker.rows),
        "lost": lost,
        "duplicated": unknown + walker.dup_in_page,
        "duplicated_unknown_ids": unknown,
        "duplicated_in_page": walker.dup_in_page,
        "stale_amount": stale_amount,
        "stale_updated_at": stale_stamp,
        "db_rows_changed_during_run": sum(1 for _, stamp in db.values() if stamp >= since),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", required=True, help="an admin URL; a scratch db is made")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cost-entries", type=int, default=200_000)
    parser.add_argument("--value-entries", type=int, default=20_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--changed", type=int, default=5_000)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--rate-limit", default="100000000/minute")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    assert 1 <= args.seconds <= 3600 and 1 <= args.connections <= 1024

    import redis

    figures: dict[str, Any] = {
        "seconds": args.seconds,
        "connections": args.connections,
        "threads": args.threads,
        "workers": args.workers,
        "cost_entries": args.cost_entries,
        "initiatives": args.initiatives,
        "value_entries": args.value_entries,
        "rounds": args.rounds,
        "changed_per_round": args.changed,
        "loadavg_before": os.getloadavg(),
    }
    work = Path(tempfile.mkdtemp(prefix="airoi-bench-load-"))
    bundle = work / "bundle.json"
    write_bundle(
        bundle,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
        budgets=True,
    )
    client = redis.Redis.from_url(args.redis)
    client.flushdb()
    client.close()
    lua = work / "rotate.lua"
    lua.write_text(LUA % {"paths": ", ".join(json.dumps(p) for p in PATHS), "token": BENCH_TOKEN})

    with scratch_databases(work, args.postgres) as targets:
        url = dict(targets)["postgresql"]
        figures |= load(url, bundle, args.cost_entries + args.initiatives + args.value_entries)
        print(f"loaded in {figures['load_s']:.1f}s", flush=True)
        env = {
            "AIROI_REDIS_URL": args.redis,
            "AIROI_RATE_LIMIT": args.rate_limit,
            "AIROI_TODAY": "2026-06-15",
        }
        with serving_workers(url, args.workers, work / "server.log", **env) as base:
            walker = Walker(base, seconds_cap=args.seconds * 3 + 120)
            max_pages = args.cost_entries // WALK_LIMIT * 3 + 100
            # The first walk (the whole account) runs before the load starts, as a
            # client that has synced once; later walks are incremental.
            t0 = time.monotonic()
            walker.walk(max_pages)
            figures["walker_first_walk_s"] = round(time.monotonic() - t0, 2)
            run_started = datetime.now(UTC)
            walk_thread = threading.Thread(target=walker.run, args=(max_pages,), daemon=True)
            write_out: dict[str, Any] = {}
            started = time.monotonic()
            write_thread = threading.Thread(
                target=writer,
                args=(
                    url,
                    work,
                    args.cost_entries,
                    args.rounds,
                    args.changed,
                    args.seconds,
                    started,
                    write_out,
                ),
                daemon=True,
            )
            walk_thread.start()
            write_thread.start()
            wrk = subprocess.run(
                [
                    "wrk",
                    "-t",
                    str(args.threads),
                    "-c",
                    str(args.connections),
                    "-d",
                    f"{args.seconds}s",
                    "--timeout",
                    "30s",
                    "--latency",
                    "-s",
                    str(lua),
                    base,
                ],
                check=False,
                capture_output=True,
                text=True,
                timeout=args.seconds + 120,
            )
            print(wrk.stdout, flush=True)
            if wrk.returncode != 0:
                print(wrk.stderr, file=sys.stderr)
            figures["loadavg_after_wrk"] = os.getloadavg()
            figures |= parse_wrk(wrk.stdout)
            write_thread.join(timeout=args.seconds * 2 + 600)
            walker.stop.set()
            walk_thread.join(timeout=600)
            figures["writer"] = write_out
            # The last walk, from the last remembered updated_at.
            walker.walk(max_pages)
            figures |= {
                "walker_walks": walker.walks,
                "walker_pages": walker.pages,
                "walker_rows_received": walker.rows_received,
                "walker_errors": walker.errors[:10],
                "walker_error_count": len(walker.errors),
            }
            figures |= check(url, walker, run_started)
            walker.client.close()

    failures = []
    if figures.get("lua_5xx") != 0:
        failures.append(f"5xx responses: {figures.get('lua_5xx')}")
    if figures["lost"] or figures["duplicated"] or figures["stale_amount"]:
        failures.append("walker check")
    if figures["db_rows"] != args.cost_entries or figures["walker_rows"] != figures["db_rows"]:
        failures.append("row counts")
    if write_out.get("errors") or len(write_out.get("rounds", [])) != args.rounds:
        failures.append("writer")
    figures["failures"] = failures
    for key, value in figures.items():
        print(f"{key}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
