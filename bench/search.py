"""The search tool before and after issue 23: the whole query as one substring, scanned, against
every word folded and looked up in the store's trigram index.

    python -m bench.search [--initiatives 50000] [--repeats 40] [--postgres ADMIN_URL]
                           [--before REV]

For each database (SQLite, and PostgreSQL given an admin URL): the search account of
bench.tools (`--initiatives` initiatives whose titles and descriptions come from small
vocabularies, 60 people, 100 vendors) loaded with `airoi init` + `airoi load` into a scratch
store. Then, in process on one connection per call (as the tool endpoint opens one), the
search function of revision `--before` (default a7ee70a, the last one before the change: its
search.py and the repository.py it called, read with `git show` and loaded here) and this
checkout's are called in interleaved rounds for each query, so that a drift in the machine's
speed falls on both. Printed per query: the hits each finds, median and p95 of each, and the
ratio before/after. Also printed: the load's seconds, the seconds the index takes to find it
has nothing to change (what any load changing a searched kind adds at least), and to be
emptied and made again (what migration 0007 takes on such a store).

The old search finds nothing for several of these queries (words out of order, a typing
mistake): those rows time how long it takes to answer nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy import delete

from airoi.auth import Principal, authenticate
from airoi.catalog import Pages
from airoi.db import search_index, tables
from airoi.db.engine import make_engine
from airoi.reports import search as new_search
from bench.common import WARM_UP, load, scratch_databases, timed_interleaved
from bench.make_bundle import BENCH_TOKEN
from bench.tools import search_title, write_search_bundle

BEFORE = "a7ee70a"  # main before issue 23's search
PAGES = Pages("https://roi.example.com")


def queries(initiatives: int) -> tuple[tuple[str, str], ...]:
    return (
        ("exact title", search_title(max(initiatives * 5 // 8, 1))),
        ("prefix (1 in 100)", "automate invoices"),
        ("substring (1 in 10)", "for sales"),
        ("description only", "copilot"),
        ("words apart", "triage support"),
        ("accents", "SUMMARISE CONTRÂCTS"),
        ("typo in a name", "procurment vendor"),
        ("short word only", "ai"),
        ("matches nothing", "zebra quantum"),
    )


def module_at(revision: str, path: str, name: str) -> ModuleType:
    """A module of this repository as it was at `revision`, loaded under another name."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"{revision}:{path}", "exec"), module.__dict__)
    return module


def old_search(revision: str) -> ModuleType:
    repository = module_at(revision, "src/airoi/tools/repository.py", "bench_old_repository")
    search = module_at(revision, "src/airoi/tools/search.py", "bench_old_search")
    search.repository = repository  # type: ignore[attr-defined]
    return search


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)]


def p50_p95(samples: list[float]) -> dict[str, float]:
    return {"p50": percentile(samples, 0.5), "p95": percentile(samples, 0.95)}


def measure(url: str, initiatives: int, repeats: int, before: ModuleType) -> None:
    engine = make_engine(url)
    with engine.connect() as conn:
        principal: Principal = authenticate(conn, f"Bearer {BENCH_TOKEN}")
    started = time.perf_counter()
    with engine.begin() as conn:
        search_index.rebuild(conn)
    same = time.perf_counter() - started
    started = time.perf_counter()
    with engine.begin() as conn:
        conn.execute(delete(tables.search_entries))
        search_index.rebuild(conn)
    print(
        f"  index: checked unchanged {same:.2f} s; emptied and made again "
        f"{time.perf_counter() - started:.2f} s",
        flush=True,
    )

    def call(module: ModuleType, query: str) -> Any:
        with engine.connect() as db:
            return module.search(db, principal, query=query, kinds=None, pages=PAGES)

    print(
        f"  {'query':20} {'':24} {'hits before/after':>17}  "
        f"{'before p50/p95 ms':>19}  {'after p50/p95 ms':>18}  before/after",
        flush=True,
    )
    for label, query in queries(initiatives):
        old, new = call(before, query), call(new_search, query)
        figures = timed_interleaved(
            {
                "before": lambda q=query: call(before, q),
                "after": lambda q=query: call(new_search, q),
            },
            repeats,
            p50_p95,
        )
        b, a = figures["before"], figures["after"]
        found = f"{len(old.results)}{'+' if old.has_more else ''}/"
        found += f"{len(new.results)}{'+' if new.has_more else ''}"
        shown = query if len(query) <= 22 else query[:21] + "…"
        print(
            f"  {label:20} {shown!r:24} {found:>17}  {b['p50']:8.2f} {b['p95']:8.2f}  "
            f"{a['p50']:8.2f} {a['p95']:8.2f}  {b['p50'] / a['p50']:6.2f}x",
            flush=True,
        )
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initiatives", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--before", default=BEFORE, help="the revision to compare against")
    parser.add_argument("--postgres", help="an admin URL; a scratch database is made and dropped")
    args = parser.parse_args()
    before = old_search(args.before)
    with tempfile.TemporaryDirectory(prefix="airoi-bench-search-") as scratch:
        work = Path(scratch)
        bundle = work / "search.json"
        write_search_bundle(bundle, initiatives=args.initiatives)
        print(
            f"search account: {args.initiatives:,} initiatives, 60 people, 100 vendors; "
            f"before = {args.before}; {args.repeats} timed calls each after {WARM_UP} warm-up"
        )
        print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        with scratch_databases(work, args.postgres) as targets:
            for name, url in targets:
                print(f"\n{name}", flush=True)
                loaded = load(url, bundle, args.initiatives)
                print(f"  load (airoi load, index included): {loaded['load_s']:.1f} s")
                measure(url, args.initiatives, args.repeats, before)
        print("\nload average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
