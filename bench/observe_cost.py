"""The per-request cost of counting a request in the metrics (`Metrics.observe`), in µs,
and the time to write /metrics' text with 92 series (the mix's 12 and 80 more), in ms.

    python -m bench.observe_cost [--multiprocess]

`--multiprocess` records as a worker of `airoi serve` does: into files in a fresh
PROMETHEUS_MULTIPROC_DIR (set before the metrics library is imported, as serve does).
A handful of routes and statuses, as a served mix has; the best of five rounds.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

ROUTES = ("/api/v1/initiatives", "/api/v1/initiatives/{id:str}", "/api/v1/cost_entries", "/healthz")
STATUSES = (200, 304, 404)
CALLS = 200_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--multiprocess", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="airoi-bench-metrics-") as directory:
        if args.multiprocess:
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
        from airoi.observability import Metrics

        metrics = Metrics()
        keys = [(route, status) for route in ROUTES for status in STATUSES]
        seconds = [0.0004, 0.0013, 0.003, 0.02, 0.3]
        for route, status in keys:  # the first request of each series makes it
            metrics.observe("GET", route, status, 0.001)
        rounds = []
        for _ in range(5):
            started = time.perf_counter()
            for index in range(CALLS):
                route, status = keys[index % len(keys)]
                metrics.observe("GET", route, status, seconds[index % 5])
            rounds.append((time.perf_counter() - started) / CALLS * 1e6)
        # The loop's own cost (indexing the mix), to take away.
        started = time.perf_counter()
        for index in range(CALLS):
            route, status = keys[index % len(keys)]
            _ = seconds[index % 5]
        loop = (time.perf_counter() - started) / CALLS * 1e6
        for index in range(80):  # 80 series more, each a count, a sum and 14 buckets
            metrics.observe("GET", f"/api/v1/route{index // 4}", 200 + index % 4, 0.002)
        scrapes = []
        for _ in range(20):
            started = time.perf_counter()
            metrics.render()
            scrapes.append((time.perf_counter() - started) * 1e3)
        scrapes.sort()
        mode = "multiprocess files" if args.multiprocess else "in memory"
        print(
            f"observe ({mode}): {min(rounds) - loop:.2f} µs a request (rounds: "
            + ", ".join(f"{r - loop:.2f}" for r in rounds)
            + ")"
        )
        print(f"/metrics text ({mode}): {scrapes[len(scrapes) // 2]:.1f} ms a scrape (median)")


if __name__ == "__main__":
    main()
