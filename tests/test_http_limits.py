"""What `airoi serve` holds a client to before the app sees a request: the head (request line
and headers) at most 16 KiB (431; a target past 8 KiB 414), a body at most 1 MiB (413), the
head sent within the header timeout of its first byte and the body within as long again
(408), whatever the client does; each refused with SPEC 7's error body and the connection
closed. A real `airoi serve --workers 2` over raw sockets, with a 2 s header timeout.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.serving import MAX_BODY_BYTES, MAX_HEAD_BYTES, MAX_TARGET_BYTES
from airoi.settings import DEFAULT_HEADER_TIMEOUT_SECONDS, Settings
from tests.conftest import _empty
from tests.factories import BundleBuilder
from tests.servers import airoi_serve, free_port

TIMEOUT = 2.0  # AIROI_HEADER_TIMEOUT_SECONDS of the server under test
# Long enough for any loaded machine, short of never: a server that waits for the client
# forever, as uvicorn did, fails it.
WAIT = 15.0
MIB = 1 << 20


# What the server holds a client to is decided before the app, whatever the store: SQLite
# alone, as for `store_independent` tests (tests/conftest.py).
@pytest.fixture(scope="module")
def served(sqlite_url: str) -> Iterator[tuple[int, str]]:
    """The port of `airoi serve --workers 2` over a store with one account, and its token."""
    url = sqlite_url
    engine = make_engine(url)
    _empty(engine)
    b = BundleBuilder()
    account = b.account()
    token = b.token(b.user(account), secret=f"airoi_{uuid.uuid4().hex}{uuid.uuid4().hex}")
    b.initiative(account)
    b.load(engine)
    engine.dispose()
    env = {"AIROI_HEADER_TIMEOUT_SECONDS": str(TIMEOUT), "AIROI_RATE_LIMIT": "100000/minute"}
    with airoi_serve(url, "--workers", "2", **env) as port:
        yield port, token


class Answer:
    """What the server sent on one connection, and whether it closed it."""

    def __init__(self, data: bytes, closed: bool) -> None:
        self.data = data
        self.closed = closed
        head, _, self.body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ")[1]) if lines[0].startswith("HTTP/1.1 ") else 0
        self.headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:])
        }

    def error(self) -> dict[str, Any]:
        """SPEC 7's body, checked whole."""
        assert self.headers["content-type"] == "application/json"
        assert int(self.headers["content-length"]) == len(self.body)
        error = json.loads(self.body)["error"]
        assert set(error) == {"status", "message", "request_id"}
        assert error["status"] == self.status
        assert error["request_id"] == self.headers["x-request-id"]
        return dict(error)


def read_answer(sock: socket.socket, wait: float = WAIT) -> Answer:
    """Read until the server closes the connection or `wait` seconds pass."""
    deadline = time.monotonic() + wait
    data = b""
    while True:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return Answer(data, closed=False)
        except ConnectionResetError:
            return Answer(data, closed=True)
        if not chunk:
            return Answer(data, closed=True)
        data += chunk


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=WAIT)


def request(port: int, data: bytes) -> Answer:
    with connect(port) as sock:
        sock.sendall(data)
        return read_answer(sock)


def get(path: str, token: str, extra: bytes = b"", *, close: bool = True) -> bytes:
    """A GET, by default the connection's last (so the answer ends with the close)."""
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n".encode()
        + extra
        + (b"Connection: close\r\n" if close else b"")
        + b"\r\n"
    )


def mcp_post(
    token: str,
    body: bytes,
    *,
    length: int | None = None,
    chunked: bool = False,
    close: bool = False,
) -> bytes:
    """A POST to /mcp: the body's length said, or chunked (the chunks sent by the caller)."""
    size = len(body) if length is None else length
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n"
        f"{framing}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    )
    return head.encode() + body


def test_a_head_past_16_kib_is_answered_431_and_the_connection_closed(
    served: tuple[int, str],
) -> None:
    port, token = served
    # Past the limit by little, and in many headers as well as in one.
    one = b"X-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n"
    many = b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 100) for i in range(200))
    for extra in (one, many):
        answer = request(port, get("/api/v1/initiatives", token, extra))
        assert answer.status == 431
        assert answer.closed
        assert answer.headers["connection"] == "close"
        assert "16384 bytes" in answer.error()["message"]
    # Under the limit, the same request is served.
    answer = request(port, get("/api/v1/initiatives", token, b"X-Fits: " + b"c" * 8000 + b"\r\n"))
    assert answer.status == 200


def test_a_100_mib_header_is_refused_without_being_read(served: tuple[int, str]) -> None:
    port, _ = served
    sent = 0
    with connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        chunk = b"a" * MIB
        hung_up = False
        while sent < 100 * MIB and not hung_up:
            try:
                sock.sendall(chunk)
            except OSError:  # BrokenPipe or ConnectionReset
                hung_up = True
            else:
                sent += len(chunk)
        answer = read_answer(sock)
    assert hung_up
    # What the client got to send before the close: the kernel's buffers, not 100 MiB.
    assert sent < 16 * MIB
    assert answer.closed
    assert answer.status in (0, 431)  # the answer may be lost to the reset
    # The worker that refused it is fine.
    assert request(port, get("/healthz", "")).status == 200


def test_a_target_past_8_kib_is_answered_414(served: tuple[int, str]) -> None:
    port, token = served
    answer = request(port, get("/api/v1/initiatives?x=" + "9" * MAX_TARGET_BYTES, token))
    assert answer.status == 414
    assert answer.closed
    assert answer.headers["x-content-type-options"] == "nosniff"  # refused before the app too
    answer.error()


def test_half_a_request_is_answered_408_and_closed_at_the_header_timeout(
    served: tuple[int, str],
) -> None:
    port, _ = served
    with connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        answer = read_answer(sock)
    assert answer.closed
    assert answer.status == 408
    assert answer.error()["message"] == "The request's headers did not arrive within 2 s."
    # The same, for the next request on a kept-alive connection.
    with connect(port) as sock:
        sock.sendall(get("/healthz", "", close=False) + b"GET /healthz HTTP/1.1\r\nHost: x")
        answer = read_answer(sock)
    assert answer.closed
    assert answer.data.startswith(b"HTTP/1.1 200 OK")
    assert b"HTTP/1.1 408 Request Timeout" in answer.data


def test_a_head_trickled_a_byte_at_a_time_is_cut_at_the_header_timeout(
    served: tuple[int, str],
) -> None:
    """A slowloris: each byte well within the timeout, the head never done."""
    port, _ = served
    with connect(port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nX-Slow: ")
        deadline = time.monotonic() + WAIT
        closed = False
        while time.monotonic() < deadline and not closed:
            sock.settimeout(TIMEOUT / 4)
            try:
                closed = sock.recv(65536) == b""  # the 408, then the close
            except TimeoutError:
                try:
                    sock.sendall(b"a")
                except OSError:
                    closed = True
            except ConnectionResetError:
                closed = True
    assert closed


def test_a_connection_that_sends_nothing_is_closed(served: tuple[int, str]) -> None:
    port, _ = served
    with connect(port) as sock:
        answer = read_answer(sock)
    assert answer.closed
    assert answer.data == b""  # no request, no answer


def chunked_past_the_limit(port: int, token: str) -> Answer:
    """A /mcp POST whose chunked body (no length said) grows past the limit; its answer."""
    with connect(port) as sock:
        sock.sendall(mcp_post(token, b"", chunked=True))
        chunk = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
        try:
            for _ in range(MAX_BODY_BYTES // (64 * 1024) + 1):
                sock.sendall(chunk)
        except OSError:
            pass
        return read_answer(sock)


def test_a_body_that_stops_short_is_answered_408(served: tuple[int, str]) -> None:
    port, token = served
    with connect(port) as sock:
        sock.sendall(mcp_post(token, b'{"jsonrpc": "2.0", ', length=100))
        answer = read_answer(sock)
    assert answer.closed
    assert answer.status == 408
    assert "body" in answer.error()["message"]


def test_a_body_past_1_mib_on_mcp_is_answered_413(served: tuple[int, str]) -> None:
    port, token = served
    # Declared: refused before a byte of the body is read.
    with connect(port) as sock:
        sock.sendall(mcp_post(token, b"", length=MAX_BODY_BYTES + 1))
        answer = read_answer(sock)
    assert answer.status == 413
    assert answer.closed
    assert "1048576 bytes" in answer.error()["message"]
    # Chunked, with no length said: refused when it passes the limit.
    answer = chunked_past_the_limit(port, token)
    assert answer.status == 413
    assert answer.closed


@pytest.mark.parametrize("trailer", [60_000, 8 * MIB], ids=["many trailers", "one huge trailer"])
def test_trailers_count_against_the_body(served: tuple[int, str], trailer: int) -> None:
    # A chunked body's trailers are headers past the head: neither its limit nor the body's
    # counted them (200 trailers of 60 KB were kept, and answered 200).
    port, token = served
    sent = 0
    with connect(port) as sock:
        sock.sendall(mcp_post(token, b"", chunked=True) + b"1\r\n{\r\n0\r\n")
        hung_up = False
        while sent < 16 * MIB and not hung_up:
            try:
                sock.sendall(b"X-T%d: " % sent + b"a" * trailer + b"\r\n")
            except OSError:
                hung_up = True
            else:
                sent += trailer
        answer = read_answer(sock)
    assert hung_up  # refused while it was sent, a few MiB in, not read to the end
    assert answer.closed
    assert answer.status in (0, 413)  # the answer may be lost to the reset
    assert request(port, get("/healthz", "")).status == 200


def test_a_malformed_request_is_answered_400_with_the_error_body(served: tuple[int, str]) -> None:
    port, _ = served
    answer = request(port, b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n")
    assert answer.status == 400
    assert answer.closed
    assert answer.error()["message"] == "The request is not valid HTTP/1.1."


def test_requests_within_the_limits_are_served_by_both_workers(served: tuple[int, str]) -> None:
    port, token = served
    listing = get("/api/v1/initiatives", token, close=False)
    rpc = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    for _ in range(8):  # new connections, which the kernel spreads over the two workers
        assert request(port, get("/healthz", token)).status == 200
    # Several requests on one connection, pipelined too, and a body near the limit.
    with connect(port) as sock:
        sock.sendall(listing + listing + mcp_post(token, rpc) + mcp_post(token, rpc))
        time.sleep(TIMEOUT * 1.5)  # idle past the header timeout: keep-alive is not cut by it
        sock.sendall(get("/api/v1/initiatives", token))
        answer = read_answer(sock)
    assert answer.data.count(b"HTTP/1.1 200 OK") == 5
    assert answer.data.count(b'"tools"') == 2
    padded = rpc[:-1] + b', "params": {"pad": "' + b"x" * (MAX_BODY_BYTES - 200) + b'"}}'
    assert len(padded) <= MAX_BODY_BYTES
    answer = request(port, mcp_post(token, padded, close=True))
    assert answer.status == 200


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "301", "soon"])
def test_the_header_timeout_setting_is_checked(value: str) -> None:
    with pytest.raises(ValueError, match="AIROI_HEADER_TIMEOUT_SECONDS"):
        Settings.from_env({"AIROI_HEADER_TIMEOUT_SECONDS": value})


def test_the_header_timeout_defaults_under_30_seconds() -> None:
    assert Settings.from_env({}).header_timeout_seconds == DEFAULT_HEADER_TIMEOUT_SECONDS <= 30
    assert Settings.from_env({"AIROI_HEADER_TIMEOUT_SECONDS": "2.5"}).header_timeout_seconds == 2.5


def test_a_bad_header_timeout_stops_serve_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "airoi", "serve", "--port", str(free_port())],
        env={
            **os.environ,
            "AIROI_DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}",
            "AIROI_HEADER_TIMEOUT_SECONDS": "never",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "AIROI_HEADER_TIMEOUT_SECONDS must be a number of seconds above 0 and at most 300, "
        "not 'never'"
    )


def test_demo_serve_holds_the_same_limits(tmp_path: Path) -> None:
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "airoi", "demo", "--serve", "--port", str(port)],
        env={
            **os.environ,
            "AIROI_DATABASE_URL": f"sqlite:///{tmp_path / 'demo.db'}",
            "AIROI_HEADER_TIMEOUT_SECONDS": str(TIMEOUT),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            try:
                with connect(port):
                    break
            except OSError:
                assert demo.poll() is None, "airoi demo --serve exited"
                time.sleep(0.1)
        assert request(port, get("/healthz", "")).status == 200
        assert request(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n").status == 408
        big = request(port, get("/healthz", "", b"X-Big: " + b"a" * MAX_HEAD_BYTES + b"\r\n"))
        assert big.status == 431
    finally:
        demo.terminate()
        demo.wait(timeout=30)


def logged_until(
    log: Path, done: Callable[[list[dict[str, Any]]], bool]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The server's JSON log lines and its access lines, once `done(access lines)` (or WAIT)."""
    deadline = time.monotonic() + WAIT
    while True:
        lines = [json.loads(line) for line in log.read_text().splitlines() if line]
        access = [line for line in lines if line["logger"] == "airoi.access"]
        if done(access) or time.monotonic() > deadline:
            return lines, access
        time.sleep(0.1)


def test_a_client_gone_mid_body_is_logged_and_counted_as_such_not_as_a_failure(
    tmp_path: Path,
) -> None:
    # A client that went away while its /mcp body was read, or whose body the server
    # refused as the app read it, was logged as the tool SDK's ERROR with an access line of
    # 500 under another request id, and counted as a 500: any client could fill the error
    # log and the 5xx rate at will.
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    b = BundleBuilder()
    token = b.token(b.user(b.account()), secret=f"airoi_{uuid.uuid4().hex}{uuid.uuid4().hex}")
    b.load(engine)
    engine.dispose()
    log = tmp_path / "serve.log"
    env = {"AIROI_HEADER_TIMEOUT_SECONDS": str(TIMEOUT), "AIROI_LOG_FORMAT": "json"}
    with airoi_serve(url, stderr_to=log, **env) as port:
        with connect(port) as sock:  # gone with 20 of the 100 bytes said
            sock.sendall(mcp_post(token, b'{"jsonrpc": "2.0", ', length=100))
        refused = chunked_past_the_limit(port, token)  # refused as it is read
        assert refused.status == 413
        refused_id = refused.error()["request_id"]
        # Until both access lines are written (after the /healthz of start-up).
        lines, access = logged_until(log, lambda access: len(access) >= 3)
        metrics = request(port, get("/metrics", "")).body.decode()
    posts = [line for line in access if line["method"] == "POST"]
    assert sorted(line["status"] for line in posts) == [413, 499], posts
    assert all(line["route"] == "/mcp" for line in posts)
    # The refusal's one warning line and the access line name the same request.
    (warning,) = [line for line in lines if line["logger"] == "airoi.http"]
    assert warning["level"] == "WARNING"
    assert "refused 413 while the app read it" in warning["message"]
    assert refused_id in warning["message"]
    assert [line["request_id"] for line in posts if line["status"] == 413] == [refused_id]
    assert [line for line in lines if line["level"] == "ERROR"] == []
    assert 'route="/mcp",status="500"' not in metrics
    assert 'route="/mcp",status="499"' in metrics


def test_a_client_gone_while_its_answers_were_written_is_a_499_not_an_error(
    tmp_path: Path,
) -> None:
    # A client that asked for several answers on one connection (pipelined) and left before
    # reading them: the answer still being written met a closed transport. It was logged as an
    # unhandled failure with a traceback, the server added an ERROR that the answer was left
    # unfinished, and the access line and the metrics said 200.
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    log = tmp_path / "serve.log"
    with airoi_serve(url, stderr_to=log, AIROI_LOG_FORMAT="json") as port:
        sock = socket.socket()
        # A small receive window, never read: the server's writes stop while the client stays.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.sendall(get("/api/v1/openapi.json", "", close=False) * 30)
        time.sleep(2)
        sock.close()
        # Until the answer in flight is logged.
        lines, access = logged_until(log, lambda access: any(a["status"] == 499 for a in access))
        metrics = request(port, get("/metrics", "")).body.decode()
    assert [line for line in lines if line["level"] == "ERROR"] == []
    gone = [line for line in access if line["status"] == 499]
    assert len(gone) == 1, access
    assert gone[0]["route"] == "/api/v1/openapi.json"
    assert 'route="/api/v1/openapi.json",status="499"' in metrics
