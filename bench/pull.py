"""`airoi pull` rows/s: the demo account and a generated large one, into DuckDB and Parquet.

    python -m bench.pull [--cost-entries 200000] [--value-entries 40000] [--initiatives 2000]
                         [--repeats 3] [--work DIR] [--formats duckdb,parquet,csv]
                         [--changed 2000] [--deleted 200] [--json FILE]
    python -m bench.pull --idle [--cost-entries 160000] [--value-entries 38000] ...

The demo account (`airoi demo`) and a generated account (`bench/make_bundle.py`, with
budgets, loaded with `airoi init` + `airoi load`) go into scratch SQLite files, each served by
`airoi serve` (one worker, the rate limit lifted) on a free loopback port. For each account
and store, `--repeats` times into a fresh target: `airoi pull` run as a user runs it (a child
process), then again with nothing changed. Prints per case the rows, the median seconds and
rows/s of the full pull (as the command reports them, interpreter start-up apart, and the
child's wall time), and the second run's rows and seconds. For the large account, each repeat
then loads a change (`--changed` cost entries given new amounts, `--deleted` deleted, by
`airoi load` while the server runs) and pulls once more: the incremental run's rows, seconds
and the removals it applied.

`--idle` measures what a run with nothing changed reads again after one bulk load: the
generated account is written without any `updated_at`, so the load stamps every row with
one moment (SEMANTICS R32), and served as above. For DuckDB and Parquet, in this process:
a full pull into a fresh target; then the store's positions are put back as the previous
version of `airoi pull` left them (the largest updated_at per list, no cursor), so the next
run asks as that version asked every time, with the inclusive `updated_since` ("before");
then one more run, from the resume cursors that one stored ("after", SEMANTICS R36). Prints
the rows each run fetched from the incremental lists (budgets, read whole every run, apart)
and its seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import airoi, load, serving
from bench.make_bundle import BENCH_TOKEN, write_bundle

FORMATS = ("duckdb", "parquet")
STORES = ("duckdb", "parquet", "csv")

RATE_LIMIT = "100000000/minute"
PULLED = re.compile(r"Pulled (\d+) rows into .+? in ([\d.]+) s")
REMOVED = re.compile(r"Removed (\d+) rows deleted on the server")


def pull(base_url: str, token: str, target: Path, fmt: str) -> dict[str, float]:
    """One `airoi pull` in a child: the rows and seconds it reports, and its wall time."""
    started = time.perf_counter()
    command = ["pull", "--base-url", base_url, "--token", token, "--to", str(target)]
    done = subprocess.run(
        [sys.executable, "-m", "airoi", *command, "--format", fmt],
        env={**os.environ, "COLUMNS": "400"},
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - started
    text = " ".join(done.stdout.split())
    found = PULLED.search(text)
    assert found, done.stdout + done.stderr
    removed = REMOVED.search(text)
    return {
        "rows": int(found.group(1)),
        "seconds": float(found.group(2)),
        "wall_s": wall,
        "removed": int(removed.group(1)) if removed else 0,
    }


class Changes:
    """Small loads between runs: `changed` cost entries given new amounts and `deleted`
    removed, each load on ids no earlier load deleted (account 1's are 1..cost_entries)."""

    def __init__(self, url: str, work: Path, changed: int, deleted: int) -> None:
        self.url, self.work = url, work
        self.changed, self.deleted = changed, deleted
        self.next_id = 1
        self.loads = 0

    def load(self) -> None:
        self.loads += 1
        doomed = list(range(self.next_id, self.next_id + self.deleted))
        first = self.next_id + self.deleted
        kept = range(first, first + self.changed)
        self.next_id = first + self.changed
        bundle = {
            "cost_entries": [{"id": i, "amount_cents": 1_000 + self.loads} for i in kept],
            "delete": {"cost_entries": doomed},
        }
        path = self.work / f"change-{self.loads}.json"
        path.write_text(json.dumps(bundle))
        airoi("load", str(path), url=self.url)


def measure(
    base_url: str,
    token: str,
    work: Path,
    fmt: str,
    repeats: int,
    changes: Changes | None = None,
) -> dict[str, Any]:
    full: list[dict[str, float]] = []
    again: list[dict[str, float]] = []
    changed: list[dict[str, float]] = []
    for i in range(repeats):
        target = work / (f"pull-{i}.duckdb" if fmt == "duckdb" else f"pull-{i}")
        full.append(pull(base_url, token, target, fmt))
        again.append(pull(base_url, token, target, fmt))
        if changes is not None:
            changes.load()
            changed.append(pull(base_url, token, target, fmt))
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    rows = full[0]["rows"]
    # Each change load deletes rows: later full pulls hold fewer.
    assert changes is not None or all(run["rows"] == rows for run in full), full
    seconds = statistics.median(run["seconds"] for run in full)
    figures: dict[str, Any] = {
        "rows": rows,
        "full_s": seconds,
        "full_rows_per_s": rows / seconds,
        "full_wall_s": statistics.median(run["wall_s"] for run in full),
        "all_full_s": [run["seconds"] for run in full],
        "again_rows": statistics.median(run["rows"] for run in again),
        "again_s": statistics.median(run["seconds"] for run in again),
    }
    if changed:
        figures |= {
            "changed_rows": statistics.median(run["rows"] for run in changed),
            "changed_removed": statistics.median(run["removed"] for run in changed),
            "changed_s": statistics.median(run["seconds"] for run in changed),
            "all_changed_s": [run["seconds"] for run in changed],
        }
    return figures


def report(account: str, fmt: str, figures: dict[str, Any]) -> None:
    changed = ""
    if "changed_s" in figures:
        changed = (
            f"  changed: {figures['changed_rows']:,.0f} rows and {figures['changed_removed']:,.0f}"
            f" removed in {figures['changed_s']:.2f} s"
            f" (runs {', '.join(f'{s:.2f}' for s in figures['all_changed_s'])})"
        )
    print(
        f"{account:<6} {fmt:<8} rows {figures['rows']:>8,}  full {figures['full_s']:7.2f} s"
        f" ({figures['full_rows_per_s']:>8,.0f} rows/s; wall {figures['full_wall_s']:.2f} s;"
        f" runs {', '.join(f'{s:.2f}' for s in figures['all_full_s'])})"
        f"  again: {figures['again_rows']:,.0f} rows in {figures['again_s']:.2f} s{changed}",
        flush=True,
    )


def forget_cursors(target: Path, fmt: str) -> None:
    """The store's positions as the previous version left them: the largest updated_at of
    each list, no cursor, no walk of /deletions."""
    import duckdb

    from airoi.client.copies.layout import STATE_FILE, STATE_TABLE
    from airoi.client.copies.lists import DELETIONS

    if fmt == "duckdb":
        conn = duckdb.connect(str(target))
        try:
            conn.execute(f"DELETE FROM {STATE_TABLE} WHERE resource = ?", [DELETIONS])
            conn.execute(f"UPDATE {STATE_TABLE} SET cursor = NULL")
        finally:
            conn.close()
        return
    path = target / STATE_FILE
    saved = json.loads(path.read_text())
    saved.pop(DELETIONS, None)
    path.write_text(json.dumps({name: {**state, "cursor": None} for name, state in saved.items()}))


def pull_once(base_url: str, target: Path, fmt: str) -> dict[str, Any]:
    """One pull in this process: rows fetched from the incremental lists, budget rows, s."""
    from airoi.client import Client
    from airoi.client.copies.layout import Format
    from airoi.client.copies.lists import DELETIONS
    from airoi.client.pull import pull as run_pull

    started = time.perf_counter()
    with Client(base_url, BENCH_TOKEN) as api:
        format_: Format = "duckdb" if fmt == "duckdb" else "parquet"
        reports = run_pull(api, target, format_)
    seconds = time.perf_counter() - started
    lists = [r for r in reports if r.name not in ("budgets", DELETIONS)]
    return {
        "rows": sum(r.rows for r in lists),
        "budgets": sum(r.rows for r in reports if r.name == "budgets"),
        # How the lists that had a position began (a list with no rows has none: "full").
        "from": ",".join(sorted({r.start for r in lists} - {"full"}) or ["full"]),
        "seconds": seconds,
    }


def idle(args: argparse.Namespace, work: Path) -> None:
    bundle = work / "bulk.json"
    started = time.perf_counter()
    records = write_bundle(
        bundle,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
        budgets=True,
        stamped=False,
    )
    print(f"bundle of {records:,} records written in {time.perf_counter() - started:.1f} s")
    url = f"sqlite:///{work / 'bulk.db'}"
    (work / "bulk.db").unlink(missing_ok=True)
    loaded = load(url, bundle, args.cost_entries + args.value_entries + args.initiatives)
    print(
        f"loaded in one load in {loaded['load_s']:.1f} s ({loaded['load_rows_per_s']:,.0f} rows/s)",
        flush=True,
    )
    with serving(url, AIROI_RATE_LIMIT=RATE_LIMIT) as client:
        base_url = str(client.base_url)
        for fmt in FORMATS:
            target = work / ("idle.duckdb" if fmt == "duckdb" else "idle")
            full = pull_once(base_url, target, fmt)
            forget_cursors(target, fmt)
            before = pull_once(base_url, target, fmt)
            after = pull_once(base_url, target, fmt)
            for name, run in (("full", full), ("before", before), ("after", after)):
                print(
                    f"{fmt:<8} {name:<7} {run['rows']:>8,.0f} list rows fetched"
                    f" (+{run['budgets']:,.0f} budget rows) in {run['seconds']:6.2f} s"
                    f"  from {run['from']}",
                    flush=True,
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost-entries", type=int, default=200_000)
    parser.add_argument("--value-entries", type=int, default=40_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, help="keep scratch files here (default: a temp dir)")
    parser.add_argument(
        "--idle", action="store_true", help="rows an idle run reads again after a bulk load"
    )
    parser.add_argument(
        "--formats", default=",".join(STORES), help="stores of the large account (comma-separated)"
    )
    parser.add_argument("--changed", type=int, default=2_000, help="cost entries changed per load")
    parser.add_argument("--deleted", type=int, default=200, help="cost entries deleted per load")
    parser.add_argument("--json", type=Path, help="write every figure here as JSON")
    parser.add_argument("--no-demo", action="store_true", help="the large account only")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="airoi-bench-pull-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}", flush=True)
    if args.idle:
        idle(args, work)
        print(f"load average after: {os.getloadavg()}", flush=True)
        return

    formats = [name for name in args.formats.split(",") if name]
    assert set(formats) <= set(STORES), f"--formats takes {', '.join(STORES)}"
    results: dict[str, Any] = {}
    if not args.no_demo:
        demo_url = f"sqlite:///{work / 'demo.db'}"
        demo = subprocess.run(
            [sys.executable, "-m", "airoi", "demo"],
            env={**os.environ, "AIROI_DATABASE_URL": demo_url},
            capture_output=True,
            text=True,
            check=True,
        )
        token = re.search(r"Token:\s+(\S+)", demo.stdout)
        assert token, demo.stdout
        with serving(demo_url, AIROI_RATE_LIMIT=RATE_LIMIT) as client:
            figures = measure(str(client.base_url), token.group(1), work, "duckdb", args.repeats)
            results["demo duckdb"] = figures
            report("demo", "duckdb", figures)

    bundle = work / "bundle.json"
    write_bundle(
        bundle,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
        budgets=True,
    )
    large_url = f"sqlite:///{work / 'large.db'}"
    (work / "large.db").unlink(missing_ok=True)
    loaded = load(large_url, bundle, args.cost_entries + args.value_entries + args.initiatives)
    print(f"large account loaded in {loaded['load_s']:.1f} s", flush=True)
    changes = Changes(large_url, work, args.changed, args.deleted)
    with serving(large_url, AIROI_RATE_LIMIT=RATE_LIMIT) as client:
        for fmt in formats:
            figures = measure(
                str(client.base_url), BENCH_TOKEN, work, fmt, args.repeats, changes=changes
            )
            results[f"large {fmt}"] = figures
            report("large", fmt, figures)
    print(f"load average after: {os.getloadavg()}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
