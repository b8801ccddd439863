"""Servers of the tests' own that a test may freeze: PostgreSQL and Redis, stopped with SIGSTOP
as a network partition or a stuck host would leave them (connections open, no answer).

The machine's shared servers are never touched. PostgreSQL is built as tests/db/test_standby.py
builds its pair (initdb, pg_ctl, as `postgres` under root); Redis is `redis-server` run in the
foreground without persistence. Ports are chosen free by the system, or within
`AIROI_TEST_PORT_RANGE` (such as 55430-55439) when it is set, for machines where several
suites run side by side. A missing program skips, or fails under AIROI_TEST_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import _unavailable
from tests.db.test_standby import (
    START_TIMEOUT_S,
    _server_bin_dir,
    _Servers,
    _wait_until_reachable,
)


def free_port() -> int:
    """A free loopback port: in AIROI_TEST_PORT_RANGE when it is set, else the system's pick."""
    given = os.environ.get("AIROI_TEST_PORT_RANGE", "")
    if not given:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    low, _, high = given.partition("-")
    for port in range(int(low), int(high or low) + 1):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.fail(f"no free port in AIROI_TEST_PORT_RANGE={given}")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (PostgreSQL's backends and helpers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            # The parent is the second field after the command, which is in parentheses.
            stat = (entry / "stat").read_text()
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _signal(pids: Iterable[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


@contextlib.contextmanager
def frozen(pid: int, *, with_children: bool = False) -> Iterator[None]:
    """The process (and its children) stopped for the block, continued after it, whatever
    happens inside: a frozen server must never outlive its test."""
    _signal([pid], signal.SIGSTOP)  # first, so that it forks nothing meanwhile
    stopped = [pid, *(_children(pid) if with_children else [])]
    _signal(stopped[1:], signal.SIGSTOP)
    try:
        yield
    finally:
        _signal(stopped[1:], signal.SIGCONT)
        _signal([pid], signal.SIGCONT)


@dataclass
class OwnPostgres:
    url: str  # postgresql+psycopg://postgres@127.0.0.1:PORT/airoi
    postmaster_pid: int


@contextlib.contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A throwaway PostgreSQL server with an empty `airoi` database, removed afterwards."""
    from sqlalchemy import text

    from airoi.db.engine import make_engine

    bin_dir = _server_bin_dir()
    if bin_dir is None:
        _unavailable("freezing PostgreSQL needs its server programs (initdb, pg_ctl, postgres)")
    assert bin_dir is not None
    root = Path(tempfile.mkdtemp(prefix="airoi-frozen-"))
    servers = _Servers(bin_dir, root)
    try:
        data_dir = root / "data"
        servers.run(
            "initdb",
            f"--pgdata={data_dir}",
            "--username=postgres",
            "--auth=trust",
            "--locale=C",
            "--encoding=UTF8",
            "--no-sync",
        )
        port = free_port()
        with (data_dir / "postgresql.conf").open("a") as conf:
            conf.write(
                f"port = {port}\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{root}'\n"
                "fsync = off\n"
                "shared_buffers = 16MB\n"
            )
        servers.start(data_dir)
        base = f"postgresql+psycopg://postgres@127.0.0.1:{port}"
        _wait_until_reachable(f"{base}/postgres", root / "data.log")
        admin = make_engine(f"{base}/postgres")
        try:
            with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text('CREATE DATABASE "airoi"'))
        finally:
            admin.dispose()
        pid = int((data_dir / "postmaster.pid").read_text().split()[0])
        yield OwnPostgres(f"{base}/airoi", pid)
    finally:
        servers.stop_all()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def own_redis() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A throwaway redis-server (no persistence); its URL and process, stopped afterwards."""
    program = shutil.which("redis-server")
    if program is None:
        _unavailable("freezing Redis needs redis-server on PATH")
    assert program is not None
    import redis

    port = free_port()
    process = subprocess.Popen(
        [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                redis.Redis.from_url(url, socket_connect_timeout=1).ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail(f"redis-server on port {port} did not answer")
                time.sleep(0.05)
        yield url, process
    finally:
        process.send_signal(signal.SIGCONT)
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def logged(name: str) -> Iterator[list[logging.LogRecord]]:
    """The records of logger `name` (and below) at WARNING and up, during the block.

    On the logger itself: the served app's logging set-up (airoi.logs) replaces the root's
    handlers, caplog's among them.
    """
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger(name)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
