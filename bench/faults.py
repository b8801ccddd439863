"""Faults against a running service: what clients see, how soon it recovers, what is lost.

    python -m bench.faults [--quick] [--window 10] [--rate 20] [--faults NAME,...]
                           [--port-base PORT] [--json out.json] [--keep]

The script starts everything it measures and stops it again: its own PostgreSQL cluster
(initdb + pg_ctl on a free loopback port, run as the `postgres` user when started as root),
its own Redis (`redis-server --save ''`, the rate limit's shared counter), and `airoi serve
--workers 2` on the demo account (`airoi init` + `airoi demo`). It never connects to
the machine's shared servers (5432, 6379).

A load generator sends an open-loop, steady mix (`--rate` requests a second, whatever the
answers: a stalled server does not slow the sending) of GET /api/v1/cost_entries?limit=100,
GET /api/v1/roi, GET /api/v1/budgets and a JSON-RPC `tools/call` of get_roi_summary POSTed
to /mcp, each bounded by `--timeout` (10 s). Beside it, /healthz and /readyz are asked four
times a second on their own connections. Each fault in turn: a baseline, the fault held for
`--window` seconds, then the wait for recovery (the first run of `--run` consecutive 2xx
answers among the requests sent after the fault ended, at most `--recovery` seconds), then
the check that nothing was lost (a full walk of /cost_entries against the store's own count,
and /roi against its answer before the fault). Faults:

- pg-terminate: `pg_terminate_backend` of every backend of the service's database, every 0.5 s;
- pg-freeze: SIGSTOP the postmaster and all its children, SIGCONT at the end;
- pg-restart: `pg_ctl stop -m fast`, down for the window, `pg_ctl start`;
- redis-freeze: SIGSTOP redis-server, SIGCONT at the end;
- redis-restart: redis-server stopped, down for the window, started again on its port;
- http-abuse: beside the normal traffic, slowloris connections (a request's head sent one
  header line a second, never ended) and one request with a 100 MiB header;
- then a second service on an SQLite file (the demo loaded alike; under root the server
  runs without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, through `setpriv`, so that file
  modes hold for it): sqlite-read-only (file, WAL and
  directory made read-only), sqlite-unreadable (chmod 000) under the running server,
  sqlite-unreadable-restart (chmod 000, the server started again on it, then held for the
  window; the restart itself is not counted), and sqlite-garbage (the file, its WAL and
  its -shm index overwritten in place with random bytes, their bytes put back at the end).

One row per fault; see bench/README.md for the columns. The run is bounded: every request,
every wait and every fault has a deadline, and every process started is stopped on the way
out (Ctrl-C included).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import glob
import json
import os
import pwd
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

TOKEN_LINE = "Token:"
DATABASE = "airoi"
DEMO_ACCOUNT_ID = 900_000
SHARED_PORTS = (5432, 6379)  # the machine's own servers: never ours
MCP_VERSION = "2025-11-25"
PROBE_EVERY_S = 0.25
TERMINATE_EVERY_S = 0.5
SLOWLORIS_CONNECTIONS = 8
BIG_HEADER_BYTES = 100 * 1024 * 1024
CHUNK = 1024 * 1024
WALK_LIMIT = 500

PG_FAULTS = (
    "pg-terminate",
    "pg-freeze",
    "pg-restart",
    "redis-freeze",
    "redis-restart",
    "http-abuse",
)
SQLITE_FAULTS = (
    "sqlite-read-only",
    "sqlite-unreadable",
    "sqlite-unreadable-restart",
    "sqlite-garbage",
)
FAULTS = PG_FAULTS + SQLITE_FAULTS

TOOL_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_roi_summary", "arguments": {"window": "all"}},
    }
).encode()
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MCP_VERSION,
}
KINDS = ("list", "roi", "budgets", "tool")
PATHS = {
    "list": "/api/v1/cost_entries?limit=100",
    "roi": "/api/v1/roi",
    "budgets": "/api/v1/budgets",
}


# processes: every one started is registered, and stopped on the way out ---------------------

_cleanups: list[Callable[[], None]] = []


def _on_exit(cleanup: Callable[[], None]) -> Callable[[], None]:
    _cleanups.append(cleanup)
    return cleanup


def _clean_up() -> None:
    while _cleanups:
        cleanup = _cleanups.pop()
        with contextlib.suppress(Exception):
            cleanup()


def _stop_signal(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def free_port() -> int:
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in SHARED_PORTS:
            return port


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Ports:
    """Ports for this run's servers: from `--port-base` on, or chosen by the OS."""

    def __init__(self, base: int | None) -> None:
        self.next = base

    def take(self) -> int:
        if self.next is None:
            return free_port()
        while not _port_is_free(self.next) or self.next in SHARED_PORTS:
            self.next += 1
        port, self.next = self.next, self.next + 1
        return port


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (read from /proc)."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.split("/")[2]))
    return found


def _group_rss_mb(pgid: int) -> float:
    """The resident memory of every process in a process group, in MB."""
    total_kb = 0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        pid = stat.split("/")[2]
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:
                continue
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
        except OSError:
            continue
    return total_kb / 1024


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


# the servers ------------------------------------------------------------------------------


def _pg_bin() -> Path:
    def version(path: str) -> tuple[int, ...]:
        return tuple(int(p) for p in Path(path).parent.name.split(".") if p.isdigit())

    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True):
        if all(os.access(Path(candidate) / name, os.X_OK) for name in ("initdb", "pg_ctl")):
            return Path(candidate)
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    raise SystemExit("PostgreSQL's server programs (initdb, pg_ctl) were not found")


class Postgres:
    """A throwaway cluster of our own: initdb, pg_ctl start/stop; run as `postgres` under root."""

    def __init__(self, root: Path, port: int) -> None:
        assert port not in SHARED_PORTS
        self.bin = _pg_bin()
        self.root = root
        self.port = port
        self.data = root / "data"
        self.log = root / "postgres.log"
        root.mkdir(mode=0o755)
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            owner = pwd.getpwnam("postgres")
            os.chown(root, owner.pw_uid, owner.pw_gid)

    def _run(self, program: str, *args: str, timeout: float = 60) -> None:
        command = [str(self.bin / program), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            command,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            start_new_session=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} exited {done.returncode}: {done.stderr[-500:]}")

    def init(self) -> None:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync")
        _on_exit(self.kill)
        self.start()
        with self.admin() as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1"
        self._run(
            "pg_ctl", "start", "-w", "-t", "30", "-D", str(self.data), "-l", str(self.log),
            "-o", options, timeout=45,
        )  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "stop", "-w", "-t", "30", "-m", "fast", "-D", str(self.data))

    def postmaster(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def pids(self) -> list[int]:
        postmaster = self.postmaster()
        return [] if postmaster is None else [postmaster, *_children(postmaster)]

    def kill(self) -> None:
        """On the way out: thawed first (a stopped process does not stop), then stopped."""
        _signal(self.pids(), signal.SIGCONT)
        try:
            self._run("pg_ctl", "stop", "-w", "-t", "20", "-m", "immediate", "-D", str(self.data))
        except Exception:
            _signal(self.pids(), signal.SIGKILL)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @contextlib.contextmanager
    def admin(self, database: str = "postgres") -> Iterator[Any]:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user="postgres",
            dbname=database,
            autocommit=True,
            connect_timeout=3,
        ) as conn:
            conn.execute("SET statement_timeout = 5000")
            yield conn

    def cost_entries(self) -> int:
        with self.admin(DATABASE) as conn:
            row = conn.execute(
                "SELECT count(*) FROM cost_entries WHERE account_id = %s", (DEMO_ACCOUNT_ID,)
            ).fetchone()
        return int(row[0])


class Redis:
    """redis-server on its own port, not persisting; a child of ours, so its pid is known."""

    def __init__(self, root: Path, port: int) -> None:
        assert port not in SHARED_PORTS
        self.root = root
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        _on_exit(self.stop)

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server was not found")
        with (self.root / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", str(self.root)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=1) as s,
            ):
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not answer")

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGCONT)
            process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


def _env(database_url: str, **more: str) -> dict[str, str]:
    """The environment of our children: nothing of the caller's AIROI_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIROI_")}
    return {**env, "AIROI_DATABASE_URL": database_url, **more}


def airoi(*args: str, env: dict[str, str], timeout: float = 120) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "airoi", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"airoi {args[0]} exited {done.returncode}: {done.stderr[-800:]}")
    return done.stdout


def load_demo(env: dict[str, str]) -> str:
    """`airoi init` + `airoi demo`: the demo account, and the token it printed."""
    airoi("init", env=env)
    for line in airoi("demo", env=env).splitlines():
        if line.startswith(TOKEN_LINE):
            return line.split(TOKEN_LINE, 1)[1].strip()
    raise RuntimeError("airoi demo printed no token")


class Server:
    """`airoi serve --workers 2` in a session of its own; stopped by its process group."""

    def __init__(self, env: dict[str, str], port: int, log: Path, file_modes: bool) -> None:
        self.env = env
        self.port = port
        self.log = log
        self.file_modes = file_modes
        self.process: subprocess.Popen[bytes] | None = None
        _on_exit(self.stop)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready: str = "/readyz", seconds: float = 60) -> None:
        """Start, and wait for `ready` to answer 200; a server that exits first is an error."""
        command = [sys.executable, "-m", "airoi", "serve", "--host", "127.0.0.1",
                   "--port", str(self.port), "--workers", "2"]  # fmt: skip
        if self.file_modes and os.geteuid() == 0:
            # Root reads any file whatever its mode: without these two capabilities it is
            # held to the modes as any other user is.
            command = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *command]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command,
                env=self.env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"airoi serve exited {self.process.returncode}: {self.said()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base + ready, timeout=5).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"airoi serve: {ready} not 200 within {seconds:g} s")

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def said(self) -> str:
        """The last line the server wrote to its log."""
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    def stop(self) -> None:
        if self.process is None:
            return
        process, self.process = self.process, None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def rss_mb(self) -> float:
        return _group_rss_mb(self.process.pid) if self.process else 0.0


# traffic ----------------------------------------------------------------------------------


@dataclass
class Shot:
    """One request: when it was sent, what it was, and (once answered) its outcome."""

    sent: float
    kind: str
    took: float | None = None
    outcome: str | None = None  # 2xx, 4xx, 503, 5xx, tool_err, timeout, conn


def classify(kind: str, response: httpx.Response) -> str:
    status = response.status_code
    if status == 503:
        return "503"
    if status >= 500:
        return "5xx"
    if status >= 400:
        return "4xx"
    if status >= 300:
        return "5xx"  # nothing here redirects: counted as a wrong answer
    if kind == "tool":
        try:
            body = response.json()
        except ValueError:
            return "tool_err"
        if "error" in body or body.get("result", {}).get("isError"):
            return "tool_err"
    return "2xx"


class Traffic(threading.Thread):
    """The open-loop load and the health probes, on an asyncio loop in a thread of its own."""

    def __init__(self, base: str, token: str, rate: float, timeout: float) -> None:
        super().__init__(daemon=True)
        self.base = base
        self.token = token
        self.rate = rate
        self.timeout = timeout
        self.shots: list[Shot] = []
        self.probes: list[Shot] = []
        self.stopping = threading.Event()
        self.failed: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # shown by the caller
            self.failed = exc

    async def _main(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        limits = httpx.Limits(max_connections=400, max_keepalive_connections=50)
        pending: set[asyncio.Task[None]] = set()
        async with (
            httpx.AsyncClient(
                base_url=self.base, headers=headers, timeout=self.timeout, limits=limits
            ) as load,
            httpx.AsyncClient(base_url=self.base, timeout=self.timeout, limits=limits) as probe,
        ):
            start = time.monotonic()
            sent = probed = 0
            while not self.stopping.is_set():
                now = time.monotonic()
                while start + sent / self.rate <= now:
                    shot = Shot(sent=time.monotonic(), kind=KINDS[sent % len(KINDS)])
                    self.shots.append(shot)
                    self._spawn(pending, self._request(load, shot))
                    sent += 1
                while start + probed * PROBE_EVERY_S <= now:
                    for kind in ("healthz", "readyz"):
                        shot = Shot(sent=time.monotonic(), kind=kind)
                        self.probes.append(shot)
                        self._spawn(pending, self._request(probe, shot))
                    probed += 1
                wake = min(start + sent / self.rate, start + probed * PROBE_EVERY_S)
                await asyncio.sleep(max(0.0, wake - time.monotonic()))
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    @staticmethod
    def _spawn(pending: set[asyncio.Task[None]], work: Any) -> None:
        task = asyncio.create_task(work)
        pending.add(task)
        task.add_done_callback(pending.discard)

    async def _request(self, client: httpx.AsyncClient, shot: Shot) -> None:
        outcome = "conn"
        try:
            async with asyncio.timeout(self.timeout):
                if shot.kind == "tool":
                    response = await client.post("/mcp", content=TOOL_BODY, headers=MCP_HEADERS)
                else:
                    response = await client.get(PATHS.get(shot.kind, f"/{shot.kind}"))
            outcome = classify(shot.kind, response)
        except (TimeoutError, httpx.TimeoutException):
            outcome = "timeout"
        except asyncio.CancelledError:
            outcome = "timeout"
            raise
        except Exception:  # refused, reset, closed: a connection error
            outcome = "conn"
        finally:
            shot.took = time.monotonic() - shot.sent
            shot.outcome = outcome

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=self.timeout + 5)

    def sent_between(self, start: float, end: float, probes: bool = False) -> list[Shot]:
        shots = self.probes if probes else self.shots
        return [s for s in list(shots) if start <= s.sent < end]

    def recovered_at(self, after: float, run: int) -> float | None:
        """The send time of the first of `run` consecutive 2xx sent after `after`."""
        streak = 0
        first = None
        for shot in list(self.shots):
            if shot.sent < after:
                continue
            if shot.outcome is None:
                return None  # not answered yet: the run, if any, is not known
            if shot.outcome == "2xx":
                if streak == 0:
                    first = shot.sent
                streak += 1
                if streak >= run:
                    return first
            else:
                streak = 0
        return None


# the faults -------------------------------------------------------------------------------


@dataclass
class Stage:
    """Where a fault runs, and what it can act on."""

    name: str
    server: Server
    traffic: Traffic
    token: str
    store_count: Callable[[], int]
    postgres: Postgres | None = None
    redis: Redis | None = None
    sqlite_file: Path | None = None


@dataclass
class Row:
    fault: str
    store: str
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _until(deadline: float, every: float, action: Callable[[], None]) -> None:
    while time.monotonic() < deadline:
        action()
        time.sleep(max(0.0, min(every, deadline - time.monotonic())))


def fault_pg_terminate(stage: Stage, window: float, row: Row) -> None:
    assert stage.postgres is not None
    terminated = 0

    def terminate() -> None:
        nonlocal terminated
        assert stage.postgres is not None
        with stage.postgres.admin() as conn:
            found = conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (DATABASE,),
            ).fetchone()
        terminated += int(found[0])

    _until(time.monotonic() + window, TERMINATE_EVERY_S, terminate)
    row.notes.append(f"{terminated} backends terminated")


def fault_pg_freeze(stage: Stage, window: float, row: Row) -> None:
    assert stage.postgres is not None
    postmaster = stage.postgres.postmaster()
    assert postmaster is not None
    stopped = [postmaster]
    try:
        os.kill(postmaster, signal.SIGSTOP)  # first: it forks no new child while stopped
        stopped += _children(postmaster)
        _signal(stopped[1:], signal.SIGSTOP)
        row.notes.append(f"{len(stopped)} processes stopped")
        time.sleep(window)
    finally:
        _signal(stopped[1:] + _children(postmaster), signal.SIGCONT)
        _signal([postmaster], signal.SIGCONT)


def fault_pg_restart(stage: Stage, window: float, row: Row) -> None:
    assert stage.postgres is not None
    started = time.monotonic()
    try:
        stage.postgres.stop()
        row.notes.append(f"stop took {time.monotonic() - started:.1f} s")
        time.sleep(max(0.0, started + window - time.monotonic()))
    finally:
        begun = time.monotonic()
        stage.postgres.start()
        row.notes.append(f"start took {time.monotonic() - begun:.1f} s")


def fault_redis_freeze(stage: Stage, window: float, row: Row) -> None:
    assert stage.redis is not None
    pid = stage.redis.pid
    try:
        os.kill(pid, signal.SIGSTOP)
        time.sleep(window)
    finally:
        os.kill(pid, signal.SIGCONT)


def fault_redis_restart(stage: Stage, window: float, row: Row) -> None:
    assert stage.redis is not None
    started = time.monotonic()
    try:
        stage.redis.stop()
        time.sleep(max(0.0, started + window - time.monotonic()))
    finally:
        stage.redis.start()


class Slowloris(threading.Thread):
    """A request's head sent one header line a second, never ended: how long is it kept?"""

    def __init__(self, port: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.stop = stop
        self.open_s: float | None = None  # None: still open when we let go
        self.answer = ""
        self.held_s = 0.0

    def run(self) -> None:
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
                started = time.monotonic()
                sock.sendall(b"GET /api/v1/roi HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                line = 0
                while not self.stop.is_set():
                    readable, _, _ = select.select([sock], [], [], 1.0)
                    if readable:
                        data = sock.recv(4096)
                        if data:
                            self.answer = data.split(b"\r\n", 1)[0].decode("latin-1")
                        self.open_s = time.monotonic() - started
                        return
                    line += 1
                    sock.sendall(f"X-Slow-{line}: {line}\r\n".encode())
        except OSError:
            self.open_s = time.monotonic() - started
        finally:
            self.held_s = time.monotonic() - started


class BigHeader(threading.Thread):
    """One request whose header is 100 MiB: how much is read, what is answered, when closed."""

    def __init__(self, port: int, size: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.size = size
        self.sent = 0
        self.answer = ""
        self.error = ""
        self.closed_s: float | None = None  # None: the server had not closed it
        self.took_s = 0.0
        self.sock: socket.socket | None = None
        self.let_go_at: float | None = None

    def run(self) -> None:
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
                self.sock = sock
                sock.sendall(b"GET /api/v1/roi HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
                chunk = b"a" * CHUNK
                try:
                    while self.sent < self.size:
                        part = chunk[: self.size - self.sent]
                        sock.sendall(part)
                        self.sent += len(part)
                    sock.sendall(b"\r\n\r\n")
                except OSError as exc:
                    self.error = type(exc).__name__
                data = sock.recv(4096)
                if data:
                    self.answer = data.split(b"\r\n", 1)[0].decode("latin-1")
                    while data:
                        data = sock.recv(65536)
                if self.let_go_at is None:
                    self.closed_s = time.monotonic() - started
        except OSError as exc:
            self.error = self.error or type(exc).__name__
            if self.let_go_at is None and not isinstance(exc, TimeoutError):
                self.closed_s = time.monotonic() - started
        finally:
            self.took_s = time.monotonic() - started

    def let_go(self) -> None:
        """Our end closed: the server had not finished with it in time."""
        if self.is_alive() and self.sock is not None:
            self.let_go_at = time.monotonic()
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        self.join(timeout=5)


def fault_http_abuse(stage: Stage, window: float, row: Row) -> None:
    """Slowloris connections for the window; the big header until answered, at most
    max(3 windows, 10 s)."""
    stop = threading.Event()
    rss_before = rss_peak = stage.server.rss_mb()
    slow = [Slowloris(stage.server.port, stop) for _ in range(SLOWLORIS_CONNECTIONS)]
    big = BigHeader(stage.server.port, BIG_HEADER_BYTES)
    started = time.monotonic()
    try:
        for thread in slow:
            thread.start()
        big.start()
        big_deadline = started + max(3 * window, 10.0)
        while time.monotonic() < started + window or (
            big.is_alive() and time.monotonic() < big_deadline
        ):
            if time.monotonic() >= started + window:
                stop.set()
            rss_peak = max(rss_peak, stage.server.rss_mb())
            time.sleep(0.25)
    finally:
        stop.set()
        for thread in slow:
            thread.join(timeout=5)
        big.let_go()
    closed = [t.open_s for t in slow if t.open_s is not None]
    answers = sorted({t.answer for t in slow if t.answer})
    kept = (
        f"closed by the server after {min(closed):.1f}-{max(closed):.1f} s"
        if len(closed) == len(slow)
        else f"{len(slow) - len(closed)} of {len(slow)} still open when let go at "
        f"{max(t.held_s for t in slow):.1f} s"
    )
    row.notes.append(
        f"slowloris x{len(slow)}: {kept}" + (f" (answered {', '.join(answers)})" if answers else "")
    )
    if big.closed_s is not None:
        fate = f"closed by the server after {big.closed_s:.1f} s"
    else:
        fate = f"still open when let go at {big.took_s:.1f} s"
    row.notes.append(
        f"100 MiB header: {big.sent / CHUNK:.0f} MiB accepted"
        + (f", answered '{big.answer}'" if big.answer else ", no answer")
        + (f" ({big.error})" if big.error else "")
        + f", {fate}"
    )
    row.notes.append(f"server RSS {rss_before:.0f} MB before, {rss_peak:.0f} MB at most during")


def _sqlite_paths(path: Path) -> list[Path]:
    return [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]


def fault_sqlite_modes(file_mode: int, dir_mode: int | None) -> Callable[[Stage, float, Row], None]:
    def inject(stage: Stage, window: float, row: Row) -> None:
        assert stage.sqlite_file is not None
        paths = _sqlite_paths(stage.sqlite_file)
        modes = {p: p.stat().st_mode & 0o777 for p in paths}
        directory = stage.sqlite_file.parent
        old_dir = directory.stat().st_mode & 0o777
        try:
            for p in paths:
                p.chmod(file_mode)
            if dir_mode is not None:
                directory.chmod(dir_mode)
            time.sleep(window)
        finally:
            directory.chmod(old_dir)
            for p, mode in modes.items():
                with contextlib.suppress(OSError):
                    p.chmod(mode)

    return inject


def fault_sqlite_restart(stage: Stage, window: float, row: Row) -> float:
    """The file made unreadable, the server started again on it, and then held for the window.

    The row counts from the moment the server answers /healthz again (or has exited): the
    restart itself is the script's doing, not the fault's, and is only noted."""
    assert stage.sqlite_file is not None
    paths = _sqlite_paths(stage.sqlite_file)
    modes = {p: p.stat().st_mode & 0o777 for p in paths}
    try:
        for p in paths:
            p.chmod(0o000)
        begun = time.monotonic()
        stage.server.stop()
        try:
            stage.server.start(ready="/healthz", seconds=60)
            row.notes.append(
                f"serve started on the unreadable file in {time.monotonic() - begun:.1f} s "
                f"(not counted in the row)"
            )
        except RuntimeError as exc:
            row.notes.append(str(exc))
        took_hold = time.monotonic()
        time.sleep(window)
        return took_hold
    finally:
        for p, mode in modes.items():
            with contextlib.suppress(OSError):
                p.chmod(mode)
        if not stage.server.running():
            stage.server.process = None
            stage.server.start()


def fault_sqlite_garbage(stage: Stage, window: float, row: Row) -> None:
    """The file, its WAL and its shared-memory index overwritten in place with random bytes."""
    assert stage.sqlite_file is not None
    originals = {p: p.read_bytes() for p in _sqlite_paths(stage.sqlite_file)}
    try:
        for p, data in originals.items():
            with p.open("r+b") as f:
                f.write(os.urandom(len(data)))
        time.sleep(window)
    finally:
        for p, data in originals.items():
            with p.open("r+b") as f:
                f.write(data)
                f.truncate()


# Each holds its fault for the window and undoes it; one that returns a moment is counted
# from then on (what came before was the script's doing).
INJECT: dict[str, Callable[[Stage, float, Row], float | None]] = {
    "pg-terminate": fault_pg_terminate,
    "pg-freeze": fault_pg_freeze,
    "pg-restart": fault_pg_restart,
    "redis-freeze": fault_redis_freeze,
    "redis-restart": fault_redis_restart,
    "http-abuse": fault_http_abuse,
    "sqlite-read-only": fault_sqlite_modes(0o444, 0o555),
    "sqlite-unreadable": fault_sqlite_modes(0o000, None),
    "sqlite-unreadable-restart": fault_sqlite_restart,
    "sqlite-garbage": fault_sqlite_garbage,
}


# measuring one fault ----------------------------------------------------------------------


def _percentile(values: list[float], pct: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(len(values) * pct + 0.5) - 1))]


def _latencies_ms(shots: list[Shot]) -> list[float]:
    return [s.took * 1000 for s in shots if s.took is not None]


def snapshot_roi(base: str, token: str, deadline: float) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            response = httpx.get(base + "/api/v1/roi", headers=headers, timeout=10)
            if response.status_code == 200:
                return response.json()
        time.sleep(0.25)
    return None


def walk(base: str, token: str, deadline: float) -> tuple[int, int] | str:
    """Every cost entry, page after page (a failed page asked again): rows and distinct ids."""
    ids: list[int] = []
    params: dict[str, Any] = {"limit": WALK_LIMIT}
    headers = {"Authorization": f"Bearer {token}"}
    last = ""
    with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
        while time.monotonic() < deadline:
            try:
                response = client.get("/api/v1/cost_entries", params=params)
            except httpx.HTTPError as exc:
                last = type(exc).__name__
                time.sleep(0.25)
                continue
            if response.status_code != 200:
                last = str(response.status_code)
                time.sleep(0.25)
                continue
            page = response.json()
            ids.extend(row["id"] for row in page["data"])
            if not page["page"]["has_more"]:
                return len(ids), len(set(ids))
            params = {"limit": WALK_LIMIT, "cursor": page["page"]["next_cursor"]}
    return f"walk unfinished ({last or 'deadline'})"


def nothing_lost(stage: Stage, roi_before: Any, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    walked = walk(stage.server.base, stage.token, deadline)
    if isinstance(walked, str):
        return walked
    rows, distinct = walked
    try:
        stored = stage.store_count()
    except Exception as exc:
        return f"store unreadable ({type(exc).__name__})"
    roi = snapshot_roi(stage.server.base, stage.token, deadline)
    problems = []
    if rows != stored or distinct != rows:
        problems.append(f"walk {rows} rows ({distinct} ids), store {stored}")
    if roi_before is None:
        problems.append("no /roi before the fault to compare with")
    elif roi is None:
        problems.append("no /roi")
    elif roi != roi_before:
        problems.append("/roi changed")
    return "yes" if not problems else "NO: " + "; ".join(problems)


@dataclass
class Timing:
    window: float
    baseline: float
    recovery: float
    run: int
    check: float


def measure(stage: Stage, fault: str, timing: Timing) -> Row:
    row = Row(fault=fault, store=stage.name)
    traffic = stage.traffic
    begun = time.monotonic()
    print(f"  {fault}: baseline", end="", flush=True)
    roi_before = snapshot_roi(stage.server.base, stage.token, time.monotonic() + 15)
    base_start = time.monotonic()
    time.sleep(timing.baseline)
    print(", fault", end="", flush=True)
    started = time.monotonic()
    try:
        started = INJECT[fault](stage, timing.window, row) or started
    except Exception as exc:  # the fault could not be injected or undone: said in the row
        row.notes.append(f"injection failed: {_said(exc)}")
    ended = time.monotonic()
    print(", recovery", end="", flush=True)
    deadline = ended + timing.recovery
    recovered = None
    while time.monotonic() < deadline:
        recovered = traffic.recovered_at(ended, timing.run)
        if recovered is not None:
            break
        time.sleep(0.1)
    # the requests sent during the fault have all been answered or timed out by now
    settle = time.monotonic() + traffic.timeout + 1
    while time.monotonic() < settle and any(
        s.outcome is None for s in traffic.sent_between(base_start, ended)
    ):
        time.sleep(0.1)
    during = traffic.sent_between(started, ended)
    # the baseline: requests sent and answered before the fault began
    baseline = [
        s
        for s in traffic.sent_between(base_start, started)
        if s.took is not None and s.sent + s.took <= started
    ]
    outcomes = [s.outcome or "timeout" for s in during]
    latencies = _latencies_ms(during)
    health = traffic.sent_between(started, ended, probes=True)
    healthz = _latencies_ms([s for s in health if s.kind == "healthz"])
    readyz: dict[str, int] = {}
    for s in health:
        if s.kind == "readyz":
            key = {"2xx": "200"}.get(s.outcome or "timeout", s.outcome or "timeout")
            readyz[key] = readyz.get(key, 0) + 1
    row.figures = {
        "window_s": round(ended - started, 1),
        "sent": len(during),
        **{
            k: outcomes.count(k)
            for k in ("2xx", "4xx", "503", "5xx", "tool_err", "timeout", "conn")
        },
        "p50_ms": _percentile(latencies, 0.5),
        "p99_ms": _percentile(latencies, 0.99),
        "baseline_p99_ms": _percentile(_latencies_ms(baseline), 0.99),
        "healthz_p99_ms": _percentile(healthz, 0.99),
        "healthz_max_ms": max(healthz) if healthz else None,
        "healthz_failed": sum(1 for s in health if s.kind == "healthz" and s.outcome != "2xx"),
        "readyz": readyz,
        "recovery_s": None if recovered is None else round(max(0.0, recovered - ended), 2),
    }
    if recovered is None:
        row.notes.append(f"no {timing.run} consecutive 2xx within {timing.recovery:.0f} s")
    print(", check", end="", flush=True)
    row.figures["nothing_lost"] = nothing_lost(stage, roi_before, timing.check)
    if recovered is None:
        row.notes.append("server restarted before the next fault")
        stage.server.restart()
    print(f" done ({time.monotonic() - begun:.0f} s)", flush=True)
    return row


# the runs ---------------------------------------------------------------------------------


def measure_all(stage: Stage, faults: list[str], timing: Timing, rows: list[Row]) -> None:
    for fault in faults:
        try:
            rows.append(measure(stage, fault, timing))
        except Exception as exc:  # said in the table; the next fault still runs
            print(f" failed: {type(exc).__name__}", flush=True)
            rows.append(Row(fault, stage.name, notes=[f"not measured: {_said(exc)}"]))


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def run_postgres(
    work: Path,
    ports: Ports,
    faults: list[str],
    timing: Timing,
    rate: float,
    timeout: float,
    rows: list[Row],
) -> None:
    postgres = Postgres(work / "pg", ports.take())
    postgres.init()
    redis = Redis(work, ports.take())
    redis.start()
    env = _env(
        postgres.url,
        AIROI_REDIS_URL=redis.url,
        AIROI_RATE_LIMIT="100000000/minute",
    )
    token = load_demo(env)
    server = Server(env, ports.take(), work / "serve-postgresql.log", file_modes=False)
    server.start()
    print(
        f"postgresql: cluster on :{postgres.port}, redis on :{redis.port}, "
        f"airoi serve --workers 2 on :{server.port}",
        flush=True,
    )
    traffic = Traffic(server.base, token, rate, timeout)
    stage = Stage("postgresql", server, traffic, token, postgres.cost_entries, postgres, redis)
    traffic.start()
    try:
        measure_all(stage, faults, timing, rows)
    finally:
        traffic.stop()
        server.stop()
        redis.stop()
        postgres.kill()


def run_sqlite(
    work: Path,
    ports: Ports,
    faults: list[str],
    timing: Timing,
    rate: float,
    timeout: float,
    rows: list[Row],
) -> None:
    directory = work / "sqlite"
    directory.mkdir(mode=0o755)
    file = directory / "airoi.db"
    redis = Redis(work, ports.take())
    redis.start()
    env = _env(f"sqlite:///{file}", AIROI_REDIS_URL=redis.url, AIROI_RATE_LIMIT="100000000/minute")
    token = load_demo(env)
    server = Server(env, ports.take(), work / "serve-sqlite.log", file_modes=True)
    server.start()
    print(f"sqlite: redis on :{redis.port}, airoi serve --workers 2 on :{server.port}", flush=True)

    def count() -> int:
        with contextlib.closing(sqlite3.connect(f"file:{file}?mode=ro", uri=True)) as conn:
            found = conn.execute(
                "SELECT count(*) FROM cost_entries WHERE account_id = ?", (DEMO_ACCOUNT_ID,)
            ).fetchone()
        return int(found[0])

    traffic = Traffic(server.base, token, rate, timeout)
    stage = Stage("sqlite", server, traffic, token, count, sqlite_file=file)
    traffic.start()
    try:
        measure_all(stage, faults, timing, rows)
    finally:
        traffic.stop()
        server.stop()
        redis.stop()


# the table --------------------------------------------------------------------------------

COLUMNS = (
    ("fault", 25),
    ("held s", 6),
    ("sent", 5),
    ("2xx", 5),
    ("4xx", 4),
    ("503", 4),
    ("5xx", 4),
    ("tool err", 8),
    ("t/o", 4),
    ("conn", 4),
    ("p50 ms", 7),
    ("p99 ms", 7),
    ("base p99", 8),
    ("healthz max", 11),
    ("readyz", 14),
    ("recovery s", 10),
    ("nothing lost", 12),
)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def table(rows: list[Row]) -> str:
    lines = ["  ".join(f"{name:>{width}}" for name, width in COLUMNS)]
    for row in rows:
        f = row.figures
        if not f:
            lines.append(f"{row.fault:>{COLUMNS[0][1]}}  (not measured)")
            continue
        readyz = " ".join(f"{k}x{v}" for k, v in sorted(f["readyz"].items())) or "-"
        cells = [
            row.fault,
            f"{f['window_s']:.1f}",
            str(f["sent"]),
            *(str(f[k]) for k in ("2xx", "4xx", "503", "5xx", "tool_err", "timeout", "conn")),
            _ms(f["p50_ms"]),
            _ms(f["p99_ms"]),
            _ms(f["baseline_p99_ms"]),
            _ms(f["healthz_max_ms"]),
            readyz,
            "never" if f["recovery_s"] is None else f"{f['recovery_s']:.1f}",
            f["nothing_lost"] if f["nothing_lost"] == "yes" else "NO",
        ]
        lines.append("  ".join(f"{c:>{w}}" for c, (_, w) in zip(cells, COLUMNS, strict=True)))
    lines.append("")
    for row in rows:
        notes = list(row.notes)
        if row.figures and row.figures["nothing_lost"] != "yes":
            notes.append(f"nothing lost: {row.figures['nothing_lost']}")
        if row.figures and row.figures["healthz_failed"]:
            notes.append(f"{row.figures['healthz_failed']} /healthz probes failed")
        if notes:
            lines.append(f"{row.fault}: " + "; ".join(notes))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short windows: about 3 minutes")
    parser.add_argument("--window", type=float, help="seconds each fault is held (10; quick 2)")
    parser.add_argument("--baseline", type=float, help="seconds of traffic before (3; quick 1)")
    parser.add_argument("--recovery", type=float, help="most seconds to wait (60; quick 15)")
    parser.add_argument("--run", type=int, default=10, help="consecutive 2xx that mean recovered")
    parser.add_argument("--rate", type=float, default=20.0, help="requests a second")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    parser.add_argument("--faults", help=f"comma-separated, of: {', '.join(FAULTS)}")
    parser.add_argument("--port-base", type=int, help="first port to try (else the OS picks)")
    parser.add_argument("--json", type=Path, help="write every figure there too")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs)")
    args = parser.parse_args()
    faults = args.faults.split(",") if args.faults else list(FAULTS)
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        parser.error(f"unknown faults: {', '.join(unknown)}")
    timing = Timing(
        window=args.window or (2.0 if args.quick else 10.0),
        baseline=args.baseline or (1.0 if args.quick else 3.0),
        recovery=args.recovery or (15.0 if args.quick else 60.0),
        run=args.run,
        check=30.0,
    )
    assert 0 < args.rate <= 500 and 0 < args.timeout <= 60 and timing.window > 0

    signal.signal(signal.SIGTERM, _stop_signal)
    signal.signal(signal.SIGHUP, _stop_signal)
    atexit.register(_clean_up)
    work = Path(tempfile.mkdtemp(prefix="airoi-bench-faults-"))
    work.chmod(0o755)  # the postgres user reaches its own directory inside
    if not args.keep:
        _on_exit(lambda: shutil.rmtree(work, ignore_errors=True))
    ports = Ports(args.port_base)
    print(
        f"window {timing.window:g} s, baseline {timing.baseline:g} s, rate {args.rate:g}/s, "
        f"timeout {args.timeout:g} s, recovered = {timing.run} consecutive 2xx; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    started = time.monotonic()
    rows: list[Row] = []
    interrupted = False
    try:
        for run, chosen in ((run_postgres, PG_FAULTS), (run_sqlite, SQLITE_FAULTS)):
            stage = [f for f in faults if f in chosen]
            if not stage:
                continue
            try:
                run(work, ports, stage, timing, args.rate, args.timeout, rows)
            except Exception as exc:  # a server that would not start: said, and on to the next
                print(f"\n{run.__name__} stopped: {_said(exc)}", flush=True)
                done = {r.fault for r in rows}
                rows += [Row(f, "-", notes=[f"not measured: {_said(exc)}"]) for f in stage
                         if f not in done]  # fmt: skip
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: stopping what was started", flush=True)
    finally:
        _clean_up()
        if args.keep:
            print(f"logs kept in {work}")
    print()
    print(table(rows))
    print(
        f"\n{time.monotonic() - started:.0f} s in all; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                [{"fault": r.fault, "store": r.store, **r.figures, "notes": r.notes} for r in rows],
                indent=2,
            )
        )
    if interrupted:
        sys.exit(130)


if __name__ == "__main__":
    main()
