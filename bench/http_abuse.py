"""HTTP limits: what each way of serving does with hostile clients, and what it costs a page.

    python -m bench.http_abuse [--seconds 10] [--rounds 3] [--connections 32] [--cap 40]
                               [--setups before,h11,airoi,granian]

Setups, each one worker pinned to core 0 (wrk on core 1), serving the same SQLite store:

- before:  uvicorn with httptools, as `airoi serve` ran it before the limits;
- h11:     uvicorn with h11 and `h11_max_incomplete_event_size=16384`;
- airoi:   `airoi serve` as it is (httptools with `airoi.serving`'s limits);
- granian: Granian (when installed) with `--http1-buffer-size 16384`
           `--http1-header-read-timeout 15000`.

For each: requests/s (and p50) of `/healthz` and of a 100-row page, and requests per second
of the worker's CPU time (the fair figure on a busy machine, where a server with more threads
gets more of a shared core), driven in turn for --rounds rounds (medians). Then the abuse
cases over raw sockets: two 100 MiB headers, one 1 GiB header, half a request, a slowloris
(one header byte every 2 s), a connection that sends nothing, a 2 MiB body on /mcp. Each
says the status answered (if any), how long until the server closed the connection (`open`
when it had not after --cap seconds), the bytes the client got to send, and the worker's CPU
seconds during the case and its memory after.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from bench.ceiling import CLIENT_CORE, server
from bench.common import free_port, load
from bench.make_bundle import BENCH_TOKEN, write_bundle

MIB = 1 << 20
_UVICORN = """
import sys, uvicorn
kwargs = {"h11_max_incomplete_event_size": 16384} if sys.argv[2] == "h11" else {}
uvicorn.run("airoi.app:app_from_env", factory=True, port=int(sys.argv[1]), http=sys.argv[2],
            log_level="warning", access_log=False, **kwargs)
"""


def setups(port: int) -> dict[str, list[str]]:
    found = {
        "before": [sys.executable, "-c", _UVICORN, str(port), "httptools"],
        "h11": [sys.executable, "-c", _UVICORN, str(port), "h11"],
        "airoi": [sys.executable, "-m", "airoi", "serve", "--port", str(port)],
    }
    granian = shutil.which("granian") or str(Path(sys.executable).with_name("granian"))
    if Path(granian).exists():
        found["granian"] = [
            granian, "--interface", "asgi", "--factory", "airoi.app:app_from_env",
            "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--http", "1",
            "--no-ws", "--http1-buffer-size", "16384", "--http1-header-read-timeout", "15000",
            "--log-level", "warning",
        ]  # fmt: skip
    return found


# ---------------------------------------------------------------- the worker: CPU and memory


def _tree(pid: int) -> list[int]:
    """The process and its descendants (Granian's worker is a child)."""
    pids, queue = [], [pid]
    while queue:
        current = queue.pop()
        pids.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            children = (task / "children").read_text().split()
            queue += [int(child) for child in children]
    return pids


def cpu_seconds(pid: int) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for each in _tree(pid):
        fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def rss_mb(pid: int) -> float:
    total = 0
    for each in _tree(pid):
        match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{each}/status").read_text())
        total += int(match.group(1)) if match else 0
    return total / 1024


# ---------------------------------------------------------------- the abuse cases


class Outcome:
    def __init__(self) -> None:
        self.status = "-"
        self.closed_after: float | None = None
        self.sent = 0

    def read_answer(self, sock: socket.socket, started: float, cap: float) -> None:
        """Read until the server closes (or `cap` seconds from `started` pass)."""
        answer = b""
        while True:
            left = started + cap - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            except OSError:
                self.closed_after = time.monotonic() - started
                break
            if not data:
                self.closed_after = time.monotonic() - started
                break
            answer += data
        if answer.startswith(b"HTTP/1."):
            self.status = answer.split(b" ", 2)[1].decode()

    def shown(self) -> str:
        closed = "open" if self.closed_after is None else f"closed {self.closed_after:.1f}s"
        sent = f", sent {self.sent / MIB:.1f}MiB" if self.sent >= MIB else ""
        return f"{self.status}, {closed}{sent}"


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _send(sock: socket.socket, outcome: Outcome, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    outcome.sent += len(data)
    return True


def big_header(port: int, size: int, cap: float) -> Outcome:
    """GET /healthz with one header `size` bytes long, sent for at most `cap` seconds."""
    outcome = Outcome()
    started = time.monotonic()
    with _connect(port) as sock:
        ok = _send(sock, outcome, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        chunk = b"a" * MIB
        while ok and outcome.sent < size and time.monotonic() - started < cap:
            ok = _send(sock, outcome, chunk)
        if ok and outcome.sent >= size:
            ok = _send(sock, outcome, b"\r\n\r\n")
        outcome.read_answer(sock, started, cap)
    return outcome


def half_request(port: int, cap: float) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    with _connect(port) as sock:
        _send(sock, outcome, b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        outcome.read_answer(sock, started, cap)
    return outcome


def slowloris(port: int, cap: float, every: float = 2.0) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    with _connect(port) as sock:
        _send(sock, outcome, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        while time.monotonic() - started < cap:
            sock.settimeout(every)
            try:
                data = sock.recv(65536)
                if data.startswith(b"HTTP/1."):
                    outcome.status = data.split(b" ", 2)[1].decode()
                if not data:
                    outcome.closed_after = time.monotonic() - started
                    return outcome
            except TimeoutError:
                pass
            except OSError:
                outcome.closed_after = time.monotonic() - started
                return outcome
            if not _send(sock, outcome, b"a"):
                outcome.closed_after = time.monotonic() - started
                return outcome
    return outcome


def silent(port: int, cap: float) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    with _connect(port) as sock:
        outcome.read_answer(sock, started, cap)
    return outcome


def big_body(port: int, cap: float) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    body = b" " * (2 * MIB)
    with _connect(port) as sock:
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"Authorization: Bearer {BENCH_TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        if _send(sock, outcome, head.encode()):
            _send(sock, outcome, body)
        outcome.read_answer(sock, started, cap)
    return outcome


def abuse(pid: int, name: str, run: Callable[[], Outcome]) -> dict[str, str]:
    cpu = cpu_seconds(pid)
    outcome = run()
    time.sleep(0.5)
    used = cpu_seconds(pid) - cpu
    return {name: f"{outcome.shown()}; cpu {used:.1f}s, rss {rss_mb(pid):.0f}MB"}


PAGES = (("healthz", "/healthz"), ("page_100", "/api/v1/cost_entries?limit=100"))


def rate(url: str, pid: int, seconds: float, connections: int) -> tuple[float, float, float]:
    """wrk's requests/s and p50 (ms) of GET `url`, and requests per CPU-second the server
    used meanwhile (which other work on the machine does not change). A timeout is not fatal
    here: it is counted in the figures it lowers."""
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
    argv += ["-H", f"Authorization: Bearer {BENCH_TOKEN}", url]
    if shutil.which("taskset"):
        argv = ["taskset", "-c", str(CLIENT_CORE), *argv]
    cpu = cpu_seconds(pid)
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    used = cpu_seconds(pid) - cpu
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    p50 = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)$", out, re.M)
    scale = {"us": 1e-3, "ms": 1.0, "s": 1000.0}
    p50_ms = float(p50.group(1)) * scale[p50.group(2)] if p50 else float("nan")
    return rps, p50_ms, done / used if used else float("nan")


def throughput(
    ports: dict[str, int], pids: dict[str, int], args: argparse.Namespace
) -> dict[str, dict[str, str]]:
    """Every setup's pages, driven in turn for --rounds rounds; the median of each."""
    seen: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(args.rounds):
        for name, port in ports.items():
            for page, path in PAGES:
                url = f"http://127.0.0.1:{port}{path}"
                figures = rate(url, pids[name], args.seconds, args.connections)
                seen.setdefault((name, page), []).append(figures)
    shown: dict[str, dict[str, str]] = {name: {} for name in ports}
    for (name, page), runs in seen.items():
        rps, p50, per_cpu = (statistics.median(run[i] for run in runs) for i in range(3))
        shown[name][page] = f"{rps:.0f} req/s (p50 {p50:.1f}ms), {per_cpu:.0f} req/CPU-s"
    return shown


def abuse_all(pid: int, port: int, cap: float) -> dict[str, str]:
    figures = {"rss at rest": f"{rss_mb(pid):.0f}MB"}
    figures |= abuse(pid, "2 x 100 MiB header", lambda: _twice(port, cap))
    figures |= abuse(pid, "1 GiB header", lambda: big_header(port, 1024 * MIB, cap))
    figures |= abuse(pid, "half request", lambda: half_request(port, cap))
    figures |= abuse(pid, "slowloris 1 B/2 s", lambda: slowloris(port, cap))
    figures |= abuse(pid, "silent connection", lambda: silent(port, cap))
    figures |= abuse(pid, "2 MiB body on /mcp", lambda: big_body(port, cap))
    return figures


def _twice(port: int, cap: float) -> Outcome:
    first = big_header(port, 100 * MIB, cap)
    second = big_header(port, 100 * MIB, cap)
    second.sent += first.sent
    if first.status != second.status:
        second.status = f"{first.status}/{second.status}"
    return second


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--cap", type=float, default=40, help="seconds each abuse case may take")
    parser.add_argument("--setups", default="before,h11,airoi,granian")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        work = Path(scratch)
        bundle = work / "bundle.json"
        rows = write_bundle(bundle, cost_entries=5_000, initiatives=50)
        url = f"sqlite:///{work / 'bench.db'}"
        load(url, bundle, rows)
        env = {"AIROI_DATABASE_URL": url, "AIROI_RATE_LIMIT": "100000000/minute"}
        ports: dict[str, int] = {}
        pids: dict[str, int] = {}
        for name in args.setups.split(","):
            port = free_port()
            argv = setups(port).get(name)
            if argv is None:
                continue
            pids[name] = stack.enter_context(server(argv, env, f"http://127.0.0.1:{port}/healthz"))
            ports[name] = port
        print(f"measuring {', '.join(ports)} ...", file=sys.stderr, flush=True)
        results = throughput(ports, pids, args)
        for name, port in ports.items():
            print(f"abusing {name} ...", file=sys.stderr, flush=True)
            results[name] |= abuse_all(pids[name], port, args.cap)
    print(
        f"load average {os.getloadavg()[0]:.2f}; {args.connections} connections, "
        f"{args.rounds} rounds of {args.seconds:g} s (medians); abuse cases capped at "
        f"{args.cap:g} s; status, when the server closed, what the client sent; the worker's "
        "CPU seconds during the case and its memory after"
    )
    for name, figures in results.items():
        print(f"\n{name}")
        for row, value in figures.items():
            print(f"  {row:<20} {value}")


if __name__ == "__main__":
    main()
