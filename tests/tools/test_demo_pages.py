"""Page links follow where the demo serves (issue 23): with AIROI_APP_URL unset, `airoi demo
--serve --port N` makes the tools' page URLs point at http://localhost:N, not at the default
port; a set AIROI_APP_URL still wins."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from airoi import cli, logs
from airoi.settings import Settings
from tests.conftest import bearer
from tests.servers import free_port


def tool_result(base_url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        http = create_mcp_http_client(headers=bearer(token))
        async with (
            http,
            Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client,
        ):
            return (await client.call_tool(name, arguments)).structured_content

    return anyio.run(run)


def test_the_demo_links_its_own_pages(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "AIROI_APP_URL"}
    env["AIROI_DATABASE_URL"] = f"sqlite:///{tmp_path / 'demo.db'}"
    demo = subprocess.Popen(
        [sys.executable, "-m", "airoi", "demo", "--serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert demo.stdout is not None
        token = None
        for line in demo.stdout:
            found = re.match(r"Token:\s+(\S+)", line)
            if found:
                token = found.group(1)
                break
        assert token is not None
        base_url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert demo.poll() is None, "airoi demo --serve exited"
                time.sleep(0.1)
        listed = tool_result(base_url, token, "list_initiatives", {"limit": 1})
        initiative_id = listed["initiatives"][0]["id"]
        detail = tool_result(base_url, token, "get_initiative", {"initiative_id": initiative_id})
        assert detail["url"] == f"http://localhost:{port}/initiatives/{initiative_id}"
        guide = tool_result(base_url, token, "get_platform_setup_guide", {"platform": "openai"})
        assert guide["connect_url"].startswith(f"http://localhost:{port}/")
    finally:
        demo.terminate()
        demo.wait(timeout=30)


@pytest.mark.parametrize(
    ("host", "set_to", "expected"),
    [
        ("127.0.0.1", None, "http://localhost:8123"),
        ("0.0.0.0", "", "http://localhost:8123"),  # noqa: S104 (listening on every address)
        ("::1", None, "http://[::1]:8123"),
        ("roi.internal", None, "http://roi.internal:8123"),
        ("127.0.0.1", "https://roi.example.com", "https://roi.example.com"),
    ],
)
def test_serve_sets_the_page_base_unless_it_is_set(
    monkeypatch: pytest.MonkeyPatch, host: str, set_to: str | None, expected: str
) -> None:
    import uvicorn

    if set_to is None:
        monkeypatch.delenv("AIROI_APP_URL", raising=False)
    else:
        monkeypatch.setenv("AIROI_APP_URL", set_to)
    monkeypatch.setenv("AIROI_DATABASE_URL", "sqlite://")  # _serve sets it; restored after
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.setattr(logs, "configure_logging", lambda *a: None)  # the test's own logging
    seen: dict[str, str | None] = {}
    monkeypatch.setattr(
        uvicorn, "run", lambda *a, **k: seen.update(app_url=os.environ.get("AIROI_APP_URL"))
    )
    cli._serve(Settings(database_url="sqlite://"), host, 8123, workers=1)
    assert seen == {"app_url": expected}
    # The workers read it as the page base.
    assert Settings.from_env().app_url == expected
