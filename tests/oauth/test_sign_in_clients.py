"""End to end: the Python SDK's own OAuth client against `airoi serve` (issue 23).

The client finds the metadata from /mcp's 401, registers itself, sends the "browser" to the
authorization endpoint; the browser here is httpx, which opens the sign-in page and submits
its form with a personal access token as a person would. The client then exchanges the code
with its PKCE verifier, lists the tools and calls one, all with the OAuth access token.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl
from sqlalchemy import Engine

from tests.factories import BundleBuilder
from tests.servers import airoi_serve

REDIRECT = "http://127.0.0.1:33418/callback"


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Person:
    """The browser and the person at it: opens the page the client sends them to, pastes
    the token, presses Allow; the redirect's query is what the client's callback gets."""

    def __init__(self, pat: str) -> None:
        self.pat = pat
        self.pages: list[str] = []
        self.callback: dict[str, str] = {}

    async def open(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as browser:
            answer = await browser.get(authorization_url)
            assert answer.status_code == 302, answer.text
            sign_in = answer.headers["location"]
            self.pages += [authorization_url, sign_in]
            page = await browser.get(sign_in)
            assert page.status_code == 200, page.text
            fields = dict(
                re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page.text)
            )
            fields = {name: value.replace("&amp;", "&") for name, value in fields.items()}
            origin = "{0.scheme}://{0.netloc}".format(urlsplit(sign_in))
            allowed = await browser.post(
                f"{origin}/oauth/sign-in",
                data={**fields, "token": self.pat, "action": "allow"},
                headers={"Origin": origin},
            )
            assert allowed.status_code == 303, allowed.text
            location = allowed.headers["location"]
            assert location.startswith(REDIRECT + "?")
            self.pages.append(location)
            self.callback = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}

    async def come_back(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(**self.callback)


def served_store(tmp_path: Path, engine: Engine) -> str:
    b = BundleBuilder()
    account = b.account(name="Acme")
    owner = b.user(account, role="owner")
    pat = b.token(owner)
    b.initiative(account, title="Ticket triage", stage="live")
    b.load(engine)
    return pat


def test_the_sdk_oauth_client_signs_in_and_calls_a_tool(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    pat = served_store(tmp_path, engine)
    log = tmp_path / "serve.log"
    # Two workers: each step may land on either, so what a grant needs lives in the store.
    with airoi_serve(db_url, "--workers", "2", stderr_to=log) as port:
        mcp_url = f"http://127.0.0.1:{port}/mcp"
        person = Person(pat)
        storage = MemoryStorage()
        provider = OAuthClientProvider(
            server_url=mcp_url,
            client_metadata=OAuthClientMetadata(
                client_name="SDK test client",
                redirect_uris=[AnyUrl(REDIRECT)],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=storage,
            redirect_handler=person.open,
            callback_handler=person.come_back,
        )

        async def run() -> tuple[list[str], Any]:
            http = create_mcp_http_client(auth=provider)
            async with http, Client(streamable_http_client(mcp_url, http_client=http)) as client:
                tools = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool("list_initiatives", {})
            return tools, result

        tools, result = anyio.run(run)
    assert "list_initiatives" in tools and "get_roi_summary" in tools
    assert not result.is_error
    titles = [row["title"] for row in result.structured_content["initiatives"]]
    assert titles == ["Ticket triage"]
    # The client holds OAuth tokens, not the personal one; the personal token was only ever
    # in the form's body: in no URL the browser opened and no line of the server's log.
    assert storage.tokens is not None
    assert storage.tokens.access_token.startswith("airoi-at_")
    assert storage.tokens.refresh_token is not None
    assert storage.client_info is not None and storage.client_info.client_id
    served_log = log.read_text()
    for secret in (pat, storage.tokens.access_token, storage.tokens.refresh_token):
        assert secret not in served_log
        assert all(secret not in page for page in person.pages)
    assert person.callback["code"] not in served_log


# --- mcp-remote (Node.js), when one is installed ----------------------------------------

MCP_REMOTE = os.environ.get("AIROI_TEST_MCP_REMOTE", "")


class StdioPeer:
    """A stdio MCP server process (mcp-remote), spoken to in JSON-RPC lines."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.stderr: list[str] = []
        self.authorization_urls: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            found = re.search(r"(https?://\S+/oauth/authorize\?\S+)", line)
            if found:
                self.authorization_urls.put(found.group(1))

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            if message.get("id") == request_id:
                return message  # type: ignore[no-any-return]
        raise AssertionError("mcp-remote ended:\n" + "".join(self.stderr[-30:]))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def browse_and_allow(authorization_url: str, pat: str) -> None:
    """The person: the sign-in page, the token, Allow, then on to the client's callback."""
    with httpx.Client(timeout=30) as browser:
        sign_in = browser.get(authorization_url).headers["location"]
        page = browser.get(sign_in)
        fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page.text))
        fields = {name: value.replace("&amp;", "&") for name, value in fields.items()}
        origin = "{0.scheme}://{0.netloc}".format(urlsplit(sign_in))
        allowed = browser.post(
            f"{origin}/oauth/sign-in",
            data={**fields, "token": pat, "action": "allow"},
            headers={"Origin": origin},
        )
        assert allowed.status_code == 303, allowed.text
        assert back_at_the_client(browser, allowed.headers["location"]).status_code == 200


def back_at_the_client(browser: httpx.Client, callback: str) -> httpx.Response:
    """The client's callback page, reloaded while nothing listens there yet (for up to 30 s).

    mcp-remote prints the sign-in address before it opens its callback port when the
    unauthenticated probe of /mcp is not a 401 (a GET is 405 first, SEMANTICS R30), so a
    quick person can arrive before it listens; a real one would reload the page."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return browser.get(callback)
        except httpx.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.store_independent  # the bridge's side; grants on both stores: the test above
@pytest.mark.skipif(not MCP_REMOTE, reason="AIROI_TEST_MCP_REMOTE names no mcp-remote to run")
@pytest.mark.parametrize("mode", ["header", "oauth"])
def test_mcp_remote_lists_and_calls(mode: str, db_url: str, engine: Engine, tmp_path: Path) -> None:
    pat = served_store(tmp_path, engine)
    with airoi_serve(db_url) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        extra = ["--header", "Authorization:${AIROI_AUTH}"] if mode == "header" else []
        env = {
            **os.environ,
            "AIROI_AUTH": f"Bearer {pat}",
            "MCP_REMOTE_CONFIG_DIR": str(tmp_path / "mcp-auth"),
            "BROWSER": "true",  # no browser here: the test is the person at it
        }
        peer = StdioPeer([MCP_REMOTE, url, *extra], env)
        try:
            peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "test", "version": "1"},
                    },
                }
            )
            if mode == "oauth":
                browse_and_allow(peer.authorization_urls.get(timeout=60), pat)
            assert peer.answer(1)["result"]["serverInfo"]["name"] == "airoi"
            peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            names = {tool["name"] for tool in peer.answer(2)["result"]["tools"]}
            assert "list_initiatives" in names
            call = {"name": "list_initiatives", "arguments": {}}
            peer.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
            result = peer.answer(3)["result"]
            assert not result.get("isError")
            assert "Ticket triage" in "".join(block["text"] for block in result["content"])
        finally:
            peer.stop()
        assert pat not in "".join(peer.stderr)
