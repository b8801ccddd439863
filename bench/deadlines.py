"""What a frozen PostgreSQL or a frozen Redis costs `airoi serve --workers 2`.

    python -m bench.deadlines [--port-base 55430] [--freeze-s 20]

Builds its own PostgreSQL (initdb, as `postgres` when run as root) and its own Redis on
loopback ports from `--port-base`, loads a small bundle, and serves it with two workers,
the rate limit shared through Redis and set high. Eight clients ask for a page in a loop
(each request with a 60 s timeout) and a ninth asks `/healthz` every 0.2 s, while:

1. PostgreSQL is frozen (SIGSTOP, the postmaster and its backends) for `--freeze-s`, then
   continued. Prints `first_503_s` (from the freeze to the first 503 answered),
   `answered_while_frozen`, `healthz_max_s` while frozen, and `recovered_s` (from the thaw
   to the first 200 of a request sent after it);
2. Redis is frozen for `--freeze-s`. Prints `answered` (requests answered in those seconds),
   against `answered_before` in as many seconds before, with `p99_s`, and `warnings`, the
   rate-limit lines the workers logged.

To compare with another checkout, run it with `PYTHONPATH=<that checkout>/src`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from bench.common import airoi
from bench.load import serving_workers
from bench.make_bundle import BENCH_TOKEN

CLIENTS = 8
PAGE = "/api/v1/initiatives?limit=10"


def _pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        sys.exit("PostgreSQL's server programs were not found under /usr/lib/postgresql")
    return found[-1].parent


@contextlib.contextmanager
def own_postgres(root: Path, port: int) -> Iterator[tuple[str, Path]]:
    as_user: dict[str, object] = {}
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
        as_user = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
    data = root / "data"
    pg = _pg_bin()

    def run(*command: object, check: bool = True) -> None:
        subprocess.run(
            [str(part) for part in command], check=check, capture_output=True, cwd=root, **as_user
        )  # type: ignore[call-overload]

    run(pg / "initdb", f"--pgdata={data}", "--username=postgres", "--auth=trust", "--no-sync")
    with (data / "postgresql.conf").open("a") as conf:
        conf.write(
            f"port = {port}\nlisten_addresses = '127.0.0.1'\n"
            f"unix_socket_directories = '{root}'\nfsync = off\n"
        )
    run(pg / "pg_ctl", "start", "--wait", f"--pgdata={data}", f"--log={root / 'pg.log'}")
    try:
        run(pg / "createdb", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "airoi")
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/airoi", data
    finally:
        run(pg / "pg_ctl", "stop", "--mode=immediate", f"--pgdata={data}", check=False)


def _family(pid: int) -> list[int]:
    """The process and its children."""
    pids = [pid]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text()
                if int(stat.rpartition(")")[2].split()[1]) == pid:
                    pids.append(int(entry.name))
    return pids


def _signal(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


class Traffic:
    """Clients asking for a page in a loop, and one asking /healthz, until stopped."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.pages: list[tuple[float, float, int]] = []  # start, end, status (0: no answer)
        self.health: list[tuple[float, float]] = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._pages) for _ in range(CLIENTS)]
        self.threads.append(threading.Thread(target=self._healthz))
        for thread in self.threads:
            thread.start()

    def _pages(self) -> None:
        headers = {"Authorization": f"Bearer {BENCH_TOKEN}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=60) as client:
            while not self.stopping.is_set():
                start = time.monotonic()
                try:
                    status = client.get(PAGE).status_code
                except httpx.HTTPError:
                    status = 0
                self.pages.append((start, time.monotonic(), status))

    def _healthz(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as client:
            while not self.stopping.is_set():
                start = time.monotonic()
                with contextlib.suppress(httpx.HTTPError):
                    client.get("/healthz")
                self.health.append((start, time.monotonic()))
                time.sleep(0.2)

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=90)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-base", type=int, default=55430)
    parser.add_argument("--freeze-s", type=float, default=20.0)
    args = parser.parse_args()
    freeze = args.freeze_s
    root = Path(tempfile.mkdtemp(prefix="airoi-bench-deadlines-"))
    redis_port = args.port_base + 1
    redis_server = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    try:
        with own_postgres(root, args.port_base) as (url, data):
            bundle = root / "bundle.json"
            subprocess.run(
                [sys.executable, "-m", "bench.make_bundle", str(bundle), "--accounts", "1",
                 "--cost-entries", "1000", "--value-entries", "100", "--observations", "100",
                 "--initiatives", "50"],
                check=True, capture_output=True,
            )  # fmt: skip
            airoi("init", url=url)
            airoi("load", str(bundle), url=url)
            env = {
                "AIROI_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
                "AIROI_RATE_LIMIT": "100000000/minute",
            }
            log = root / "serve.log"
            with serving_workers(url, 2, log, **env) as base:
                postmaster = int((data / "postmaster.pid").read_text().split()[0])
                traffic = Traffic(base)
                try:
                    time.sleep(3)
                    frozen_at = time.monotonic()
                    pids = _family(postmaster)
                    _signal(pids, signal.SIGSTOP)
                    time.sleep(freeze)
                    thawed_at = time.monotonic()
                    _signal(pids[::-1], signal.SIGCONT)
                    time.sleep(15)
                    redis_before = time.monotonic()
                    time.sleep(freeze)
                    redis_frozen_at = time.monotonic()
                    redis_server.send_signal(signal.SIGSTOP)
                    time.sleep(freeze)
                    redis_server.send_signal(signal.SIGCONT)
                    redis_thawed_at = time.monotonic()
                    time.sleep(7)  # past the 5 s after which a worker asks Redis again
                finally:
                    traffic.stop()
            print_figures(
                traffic, frozen_at, thawed_at, redis_before, redis_frozen_at, redis_thawed_at, log
            )
    finally:
        redis_server.send_signal(signal.SIGCONT)
        redis_server.terminate()
        redis_server.wait(timeout=30)
        shutil.rmtree(root, ignore_errors=True)


def print_figures(
    traffic: Traffic,
    frozen_at: float,
    thawed_at: float,
    redis_before: float,
    redis_frozen_at: float,
    redis_thawed_at: float,
    log: Path,
) -> None:
    pages = sorted(traffic.pages)
    first_503 = min(
        (end for _, end, status in pages if status == 503 and end > frozen_at), default=None
    )
    answered_frozen = sum(1 for _, end, _ in pages if frozen_at <= end < thawed_at)
    health = [end - start for start, end in traffic.health if frozen_at <= start < thawed_at]
    recovered = min(
        (end for start, end, status in pages if status == 200 and start >= thawed_at), default=None
    )
    print(
        "postgres_frozen",
        f"first_503_s={'never' if first_503 is None else round(first_503 - frozen_at, 2)}",
        f"answered_while_frozen={answered_frozen}",
        f"healthz_max_s={round(max(health, default=0), 2)}",
        f"recovered_s={'never' if recovered is None else round(recovered - thawed_at, 2)}",
    )

    def window(start: float, end: float) -> tuple[int, float]:
        inside = [(s, e) for s, e, status in pages if start <= s and e < end and status]
        latencies = sorted(e - s for s, e in inside)
        p99 = latencies[int(len(latencies) * 0.99) - 1] if latencies else 0.0
        return len(inside), p99

    before, p99_before = window(redis_before, redis_frozen_at)
    frozen, p99_frozen = window(redis_frozen_at, redis_thawed_at)
    lines = log.read_text(errors="replace").splitlines()
    warnings = sum(1 for line in lines if "rate limit store" in line)
    for line in lines:
        if any(
            words in line
            for words in ("rate limit store", "database did not", "answers again", "ERROR")
        ):
            print("  log:", line)
    per_second = [
        sum(
            1
            for s, e, status in pages
            if status and redis_frozen_at + n <= e < redis_frozen_at + n + 1
        )
        for n in range(int(redis_thawed_at - redis_frozen_at))
    ]
    print("  answered per second with Redis frozen:", per_second)
    print(
        "redis_frozen",
        f"answered_before={before}",
        f"p99_before_s={p99_before:.3f}",
        f"answered={frozen}",
        f"p99_s={p99_frozen:.3f}",
        f"warnings={warnings}",
        f"median_before_ms={statistics.median([e - s for s, e, _ in pages]) * 1000:.1f}",
    )


if __name__ == "__main__":
    main()
