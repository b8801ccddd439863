"""`ListResult.to_pandas()` of a large list: seconds and peak memory, this checkout against
another revision of the client, side by side.

    python -m bench.frames [--cost-entries 200000] [--initiatives 2000] [--repeats 3]
                           [--before REV] [--work DIR]

A generated account (`bench/make_bundle.py`) is loaded into a scratch SQLite file and served
by `airoi serve` (one worker, the rate limit lifted) on a loopback port. Each measurement is
a fresh child process (so that its peak resident memory is its own) that imports the client
from a source tree, walks `/cost_entries` and reports its seconds, its peak RSS and the RSS
it started from (Python, httpx, pandas and pyarrow imported), and the CPU seconds the child
itself spent (decoding and framing, without the server's share of a shared machine's cores:
the steadier figure where other work runs). "after" is this checkout's
`src`; "before" is `git archive REV src` unpacked in the work folder (`--before`, e.g.
`main`; none by default). Besides `to_pandas()`, `to_list()` walks the same rows without
making a frame: what the walk itself costs, for both. Prints the median seconds and the
largest peak of `--repeats` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

from bench.common import load, serving
from bench.make_bundle import BENCH_TOKEN, write_bundle

ROOT = Path(__file__).resolve().parents[1]
RATE_LIMIT = "100000000/minute"

_CHILD = """
import json, resource, sys, time
import pandas, pyarrow
import airoi.client
from airoi.client import Client

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

base_url, token, call = sys.argv[1:4]
start_mb = rss_mb()
started, cpu = time.perf_counter(), time.process_time()
with Client(base_url, token) as api:
    result = getattr(api.cost_entries(), call)()
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
dtypes = {str(k): str(v) for k, v in result.dtypes.items()} if call == "to_pandas" else {}
print(json.dumps({
    "rows": len(result), "seconds": seconds, "cpu": cpu, "peak_mb": rss_mb(), "start_mb": start_mb,
    "dtypes": dtypes, "module": airoi.client.__file__,
}))
"""


def checkout(rev: str, work: Path) -> Path:
    """The `src` folder of revision `rev`, unpacked under `work`."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    target = work / f"src-{rev.replace('/', '_')}"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "src"


def measure(src: Path, base_url: str, call: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, base_url, BENCH_TOKEN, call],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not answer["module"].startswith(str(src)):
        raise SystemExit(f"the child imported {answer['module']}, not the client under {src}")
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cost-entries", type=int, default=200_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", help="a git revision whose client to compare with")
    parser.add_argument("--work", type=Path, help="scratch folder (a temporary one if not)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="airoi-bench-frames-"))
    work.mkdir(parents=True, exist_ok=True)

    bundle = work / "frames.json"
    write_bundle(bundle, cost_entries=args.cost_entries, initiatives=args.initiatives)
    url = f"sqlite:///{work / 'frames.db'}"
    for leftover in ("frames.db", "frames.db-wal", "frames.db-shm"):
        (work / leftover).unlink(missing_ok=True)
    load(url, bundle, args.cost_entries + args.initiatives)
    trees = {"after": ROOT / "src"}
    if args.before:
        trees = {"before": checkout(args.before, work), **trees}

    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with serving(url, AIROI_RATE_LIMIT=RATE_LIMIT) as client:
        base_url = str(client.base_url)
        for repeat in range(args.repeats):
            for call in ("to_list", "to_pandas"):
                # Interleaved, the order turned each round: a drift falls on both alike.
                names = list(trees)[:: -1 if repeat % 2 else 1]
                for name in names:
                    run = measure(trees[name], base_url, call)
                    results.setdefault((name, call), []).append(run)
    results = dict(sorted(results.items(), key=lambda item: (item[0][1], item[0][0] != "before")))

    print(f"{args.cost_entries:,} cost entries, median of {args.repeats} runs, each a child")
    print(
        f"{'':<8} {'call':<10} {'rows':>8} {'seconds':>8} {'CPU s':>6} {'peak MB':>8}"
        f" {'start MB':>9}"
    )
    for (name, call), runs in results.items():
        seconds = statistics.median(run["seconds"] for run in runs)
        cpu = statistics.median(run["cpu"] for run in runs)
        peak = max(run["peak_mb"] for run in runs)
        start = min(run["start_mb"] for run in runs)
        print(
            f"{name:<8} {call:<10} {runs[0]['rows']:>8,} {seconds:>8.2f} {cpu:>6.2f}"
            f" {peak:>8.0f} {start:>9.0f}"
        )
    for name in trees:
        print(f"{name} dtypes:", json.dumps(results[(name, "to_pandas")][0]["dtypes"]))


if __name__ == "__main__":
    main()
