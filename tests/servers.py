"""The served app for real: uvicorn in a thread, on a loopback port the OS chose."""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal

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
