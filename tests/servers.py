"""The served app for real: uvicorn in a thread, on a loopback port the OS chose; or
`airoi serve` itself in a child process."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
import uvicorn

from airoi.app import create_app
from airoi.settings import Settings


class RunningServer:
    """`create_app(settings)` under uvicorn in a daemon thread, until `stop()`.

    `http` picks uvicorn's HTTP implementation ("httptools", "h11"; "auto" prefers httptools).
    """

    def __init__(
        self, settings: Settings, http: Literal["auto", "h11", "httptools"] = "auto"
    ) -> None:
        self.app = create_app(settings)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, http=http, log_level="warning", access_log=False, lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        self.sock.close()
        self.app.state.engine.dispose()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def airoi_serve(
    database_url: str, *args: str, stderr_to: Path | None = None, **env: str
) -> Iterator[int]:
    """`airoi serve ARGS` on a free loopback port, with `env` added; yields the port once
    /healthz answers. Its stderr (its log) is written to `stderr_to`, if given."""
    port = free_port()
    with ExitStack() as stack:
        stderr = stack.enter_context(stderr_to.open("w")) if stderr_to else subprocess.DEVNULL
        server = subprocess.Popen(
            [sys.executable, "-m", "airoi", "serve", "--port", str(port), *args],
            env={**os.environ, "AIROI_DATABASE_URL": database_url, **env},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            for _ in range(300):
                if server.poll() is not None:
                    raise RuntimeError(f"airoi serve exited with {server.returncode}")
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.05)
            else:
                raise RuntimeError("airoi serve did not come up")
            yield port
        finally:
            server.terminate()
            server.wait(timeout=30)


@dataclass(frozen=True)
class ServedDemo:
    origin: str  # http://127.0.0.1:PORT
    token: str  # the token `airoi demo` printed
    printed: str  # all it printed
    database_url: str


@contextmanager
def demo_served(directory: Path, **env: str) -> Iterator[ServedDemo]:
    """`airoi demo` into a fresh store in `directory`, then `airoi serve` on a free port, as a
    newcomer runs them (`env` added to both)."""
    url = f"sqlite:///{directory / 'airoi.db'}"
    printed = subprocess.run(
        [sys.executable, "-m", "airoi", "demo", "--database-url", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **env},
    ).stdout
    token = re.search(r"^Token:\s+(\S+)$", printed, re.MULTILINE)
    assert token, printed
    with airoi_serve(url, **env) as port:
        yield ServedDemo(f"http://127.0.0.1:{port}", token.group(1), printed, url)
