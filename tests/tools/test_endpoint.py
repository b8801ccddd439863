"""The endpoint itself: mounted at exactly /mcp, behind the API's token check (SPEC 4.B, 5, 7;
SEMANTICS R27, R29), host checks from settings, and the tools' declarations."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from airoi.settings import Settings
from airoi.tools.protocol_errors import jsonrpc_code
from airoi.tools.server import transport_security
from tests.conftest import bearer
from tests.tools.conftest import Served
from tests.tools.world import World

# SPEC 4.B's seven, and the analysis tools added beside them.
SPEC_TOOLS = {
    "get_roi_summary",
    "list_initiatives",
    "get_initiative",
    "search",
    "list_integrations",
    "get_help_article",
    "get_platform_setup_guide",
}
TOOLS = SPEC_TOOLS | {
    "get_roi_breakdown",
    "get_business_cases",
    "list_decisions",
    "list_metric_readings",
}
LIST_TOOLS = (
    "list_initiatives",
    "list_integrations",
    "get_roi_breakdown",
    "get_business_cases",
    "list_decisions",
    "list_metric_readings",
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def post(served: Served, headers: dict[str, str], path: str = "/mcp") -> httpx.Response:
    return httpx.post(
        served.base_url + path,
        json=INITIALIZE,
        headers={**MCP_HEADERS, **headers},
        timeout=30,
        follow_redirects=False,
    )


def assert_error_body(response: httpx.Response, message: str, request_id: int | None = 1) -> None:
    """SPEC 7's body, which on /mcp is a JSON-RPC error too (answering `request_id`)."""
    assert response.headers["content-type"] == "application/json"
    status = response.status_code
    ref = response.headers["x-request-id"]
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": jsonrpc_code(status),
            "message": message,
            "status": status,
            "request_id": ref,
            "data": {"status": status, "request_id": ref},
        },
    }


@pytest.mark.store_independent
@pytest.mark.parametrize(
    "headers",
    [{}, bearer("airoi_not-a-real-token-" + "y" * 32), {"Authorization": "Basic abc"}],
    ids=["missing", "unknown", "not-bearer"],
)
def test_a_bad_token_is_refused_401_before_the_sdk(
    served: Served, world: World, headers: dict[str, str]
) -> None:
    # SEMANTICS R27, R29: the SPEC 7 body, from the same middleware as the HTTP API.
    response = post(served, headers)
    assert response.status_code == 401
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "error"}  # SPEC 7's and JSON-RPC's (test_sdk_errors)
    assert body["error"]["status"] == 401
    assert body["error"]["message"].endswith(".")
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_plan_without_api_access_is_refused_403(served: Served, world: World) -> None:
    response = post(served, bearer(world.token_no_api))
    assert response.status_code == 403
    assert_error_body(response, "This account's plan does not include API access.")


def test_an_expired_token_is_refused_401(served: Served, engine: Engine) -> None:
    from tests.factories import BundleBuilder

    b = BundleBuilder()
    token = b.token(b.user(b.account()), expires_at="2020-01-01T00:00:00Z")
    b.load(engine)
    assert post(served, bearer(token)).status_code == 401


@pytest.mark.store_independent
def test_a_good_token_reaches_the_sdk_at_exactly_mcp(served: Served, world: World) -> None:
    response = post(served, bearer(world.token_a))
    assert response.status_code == 200, response.text
    assert response.json()["result"]["serverInfo"]["name"] == "airoi"
    # No redirect to or from a trailing slash.
    slashed = post(served, bearer(world.token_a), "/mcp/")
    assert slashed.status_code == 200, slashed.text
    # Nothing is mounted below /mcp.
    assert post(served, bearer(world.token_a), "/mcp/other").status_code == 404


@pytest.mark.store_independent
def test_host_and_origin_checks(served: Served, world: World) -> None:
    # The loopback host is served; an unknown Host or Origin is refused (DNS rebinding).
    refused_host = post(served, {**bearer(world.token_a), "Host": "evil.example"})
    assert refused_host.status_code == 421
    refused_origin = post(served, {**bearer(world.token_a), "Origin": "https://evil.example"})
    assert refused_origin.status_code == 403
    # SPEC 7: in the error body, with the request id, not the transport's plain text.
    assert_error_body(
        refused_host,
        "This host name is not served here; AIROI_ALLOWED_HOSTS names the served ones.",
    )
    assert_error_body(refused_origin, "Requests from this Origin are not accepted here.")
    # The host of AIROI_APP_URL (https://roi.example.com in these tests) is served too.
    app_host = post(
        served,
        {**bearer(world.token_a), "Host": "roi.example.com", "Origin": "https://roi.example.com"},
    )
    assert app_host.status_code == 200, app_host.text


@pytest.mark.store_independent
def test_a_body_that_is_not_json_is_refused_in_the_error_body(served: Served, world: World) -> None:
    response = httpx.post(
        served.base_url + "/mcp",
        content=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        headers={**MCP_HEADERS, **bearer(world.token_a), "Content-Type": "text/plain"},
        timeout=30,
    )
    assert response.status_code == 400
    assert_error_body(response, "Send the request as JSON, with Content-Type: application/json.")


def test_transport_security_covers_every_served_name() -> None:
    security = transport_security(
        Settings(app_url="https://roi.example.com:8443", allowed_hosts=("api.example.org",))
    )
    assert security.enable_dns_rebinding_protection
    for host in (
        "localhost:*",
        "127.0.0.1:*",
        "roi.example.com:8443",
        "api.example.org",
        "api.example.org:*",
    ):
        assert host in security.allowed_hosts
    # A test client's name is no host the service is served under (settings alone say so).
    assert not [host for host in security.allowed_hosts if host.startswith("testserver")]
    assert "https://roi.example.com:8443" in security.allowed_origins
    assert "https://api.example.org" in security.allowed_origins
    anything = transport_security(Settings(allowed_hosts=("*",)))
    assert not anything.enable_dns_rebinding_protection


@pytest.mark.store_independent
def test_tools_list_declares_read_only_typed_tools(served: Served, world: World) -> None:
    tools = {tool.name: tool for tool in served.list_tools(world.token_a)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.title
        assert tool.description and len(tool.description) > 60
        annotations = tool.annotations
        assert annotations is not None
        assert annotations.read_only_hint is True
        assert annotations.destructive_hint is False
        assert annotations.idempotent_hint is True
        assert annotations.open_world_hint is False
        assert tool.input_schema["type"] == "object"
        # SEMANTICS R12, R27: an undeclared argument is refused, and the schema says so.
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"

    def props(name: str) -> dict[str, Any]:
        return tools[name].input_schema["properties"]  # type: ignore[no-any-return]

    def enum_of(schema: dict[str, Any]) -> list[str]:
        for option in schema.get("anyOf", [schema]):
            if "enum" in option:
                return option["enum"]  # type: ignore[no-any-return]
            if option.get("type") == "array":
                return enum_of(option["items"])
        raise AssertionError(schema)

    assert enum_of(props("get_roi_summary")["window"]) == ["1yr", "3yr", "5yr", "all"]
    assert props("get_roi_summary")["window"]["default"] == "all"
    assert enum_of(props("list_initiatives")["status"]) == [
        "not_started",
        "active",
        "completed",
        "inactive",
    ]

    def types_of(schema: dict[str, Any]) -> set[str]:
        return {option["type"] for option in schema.get("anyOf", [schema])}

    # Strict checking keeps the advertised types: integers stay integers, null means omitted.
    assert types_of(props("get_roi_summary")["initiative_id"]) == {"integer", "null"}
    assert types_of(props("get_initiative")["initiative_id"]) == {"integer"}
    assert types_of(props("get_help_article")["id"]) == {"integer", "null"}
    assert types_of(props("search")["query"]) == {"string"}
    assert types_of(props("search")["types"]) == {"array", "null"}
    limit = props("list_initiatives")["limit"]
    # null is the advertised "omit" of every optional argument: {integer, null}.
    (integer,) = [option for option in limit["anyOf"] if option["type"] == "integer"]
    assert types_of(limit) == {"integer", "null"}
    assert (limit["default"], integer["minimum"], integer["maximum"]) == (20, 1, 50)  # SPEC 8
    assert types_of(props("get_roi_summary")["window"]) == {"string", "null"}
    assert props("get_roi_summary")["window"]["default"] == "all"
    assert tools["get_initiative"].input_schema["required"] == ["initiative_id"]
    assert props("search")["query"]["minLength"] == 2  # SPEC 8
    assert tools["search"].input_schema["required"] == ["query"]
    assert "help_article" in enum_of(props("search")["types"])
    assert set(props("list_integrations")) == {"limit", "cursor"}
    # Every list takes a cursor and returns next_cursor (issue 23).
    for name in LIST_TOOLS:
        assert types_of(props(name)["cursor"]) == {"string", "null"}, name
        assert "next_cursor" in tools[name].output_schema["properties"], name  # type: ignore[index]
    assert tools["get_roi_breakdown"].input_schema["required"] == ["by"]
    assert enum_of(props("get_roi_breakdown")["by"]) == [
        "initiative",
        "month",
        "quarter",
        "cost_type",
        "vendor",
        "value_status",  # SEMANTICS R37, added
    ]
    breakdown_limit = props("get_roi_breakdown")["limit"]
    (integer,) = [o for o in breakdown_limit["anyOf"] if o["type"] == "integer"]
    assert (breakdown_limit["default"], integer["maximum"]) == (20, 50)
    # Ids of search hits are taken somewhere, and the descriptions say where.
    assert "person" in props("list_initiatives")["owner_id"]["description"]
    assert "vendor" in props("get_roi_breakdown")["vendor_id"]["description"]
    assert "metric" in props("list_metric_readings")["metric_key"]["description"]
    for feeds in ("owner_id", "vendor_id", "metric_key"):
        assert feeds in (tools["search"].description or ""), feeds
    guide = tools["get_platform_setup_guide"].output_schema["properties"]  # type: ignore[index]
    assert {"connected", "has_connection", "has_working_connection"} <= set(guide)
    assert set(props("get_help_article")) == {"slug", "id"}
    assert tools["get_platform_setup_guide"].input_schema["required"] == ["platform"]
    assert "roi_percent" in tools["get_roi_summary"].output_schema["properties"]  # type: ignore[index]


@pytest.mark.store_independent
def test_the_http_api_still_declares_only_get(served: Served, world: World) -> None:
    document = httpx.get(served.base_url + "/api/v1/openapi.json", timeout=30).json()
    assert not any(path.startswith("/mcp") for path in document["paths"])


def test_a_crash_is_one_sentence_that_says_nothing_of_its_cause() -> None:
    # SEMANTICS R27: never a crash on the wire, and nothing of the exception's text.
    import anyio
    from mcp import Client

    from airoi.db.engine import make_engine
    from airoi.tools import create_mcp_server

    server = create_mcp_server(make_engine("sqlite://"), Settings())

    def explode() -> str:
        raise RuntimeError("secret detail of the failure")

    server.add_tool(explode, name="explode")

    async def run() -> Any:
        async with Client(server) as client:
            return await client.call_tool("explode", {})

    result = anyio.run(run)
    assert result.is_error
    text = result.content[0].text
    assert text == "The tool failed to answer; the error has been logged."


NOT_SERVED = ("GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def token_headers(world: World, who: str) -> dict[str, str]:
    tokens = {
        "unknown": "airoi_not-a-real-token-" + "y" * 32,
        "good": world.token_a,
        "no_api": world.token_no_api,
    }
    return bearer(tokens[who]) if who in tokens else {}


@pytest.mark.store_independent
@pytest.mark.parametrize("who", ["none", "unknown", "good", "no_api"])
@pytest.mark.parametrize("method", NOT_SERVED)
def test_a_method_mcp_does_not_serve_is_405_before_auth(
    served: Served, world: World, method: str, who: str
) -> None:
    # SEMANTICS R30: 405 (with Allow and the SPEC 7 body) comes before the token: without one
    # these were 401, and with one the SDK answered its own body and Allow: GET, POST, DELETE
    # while answering DELETE itself 405.
    headers = {**MCP_HEADERS, **token_headers(world, who)}
    for path in ("/mcp", "/mcp/"):
        response = httpx.request(method, served.base_url + path, headers=headers, timeout=10)
        assert response.status_code == 405, (path, response.status_code, response.text)
        assert response.headers["allow"] == "POST"
        if method == "HEAD":
            assert response.content == b""
            continue
        assert_error_body(response, "Only POST is served here.", request_id=None)


@pytest.mark.store_independent
def test_allow_names_exactly_the_methods_mcp_serves(served: Served, world: World) -> None:
    allowed = httpx.put(served.mcp_url, timeout=10).headers["allow"].split(", ")
    assert allowed == ["POST"]
    # Each method Allow names is answered by the SDK, with a token and without one.
    for method in allowed:
        response = httpx.request(
            method,
            served.mcp_url,
            json=INITIALIZE,
            headers={**MCP_HEADERS, **bearer(world.token_a)},
            timeout=10,
        )
        assert response.status_code == 200, response.text
        assert response.json()["result"]["serverInfo"]["name"] == "airoi"
        assert httpx.request(method, served.mcp_url, json=INITIALIZE, timeout=10).status_code == 401


@pytest.mark.store_independent
@pytest.mark.parametrize("name", ["nope", "get_roi_summary ", "GET_ROI_SUMMARY", ""])
def test_an_unknown_tool_is_a_protocol_error(served: Served, world: World, name: str) -> None:
    # MCP specification, server/tools "Error Handling": an unknown tool is a JSON-RPC error
    # -32602, not a tool result. The message is fixed; the name sent is not repeated.
    call = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}},
    }
    response = httpx.post(
        served.mcp_url,
        json=call,
        headers={**MCP_HEADERS, **bearer(world.token_a), "mcp-protocol-version": "2025-06-18"},
        timeout=30,
    )
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {"code": -32602, "message": "Unknown tool"},
    }


@pytest.mark.store_independent
def test_the_client_sees_an_unknown_tool_as_an_error(served: Served, world: World) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    async def work(client: Client) -> MCPError | None:
        try:
            await client.call_tool("delete_everything", {})
        except MCPError as exc:
            return exc
        return None

    error = served.with_client(world.token_a, work)
    assert error is not None
    assert (error.code, error.message) == (-32602, "Unknown tool")
