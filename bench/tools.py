"""The tool endpoint at /mcp against the HTTP API: get_roi_summary beside GET /roi, and search.

    python -m bench.tools [--postgres URL] [--cost-entries 200000 --value-entries 40000
                          --initiatives 2000 --search-initiatives 50000 --repeats 60]

For each database (SQLite, and PostgreSQL given an admin URL), two scratch stores:

1. ROI: a generated account (bench.make_bundle) served by `airoi serve` on loopback. Over one
   keep-alive httpx client, GET /api/v1/roi and a raw JSON-RPC `tools/call` of get_roi_summary
   POSTed to /mcp with the same arguments (window all and 1yr), and the same computation in
   process, are timed in interleaved rounds, so background load falls on all of them alike.
   The raw call is sent in both wire forms the SDK's server answers: the handshake era
   (MCP-Protocol-Version 2025-11-25, no session in stateless mode) and the per-request
   envelope (2026-07-28: Mcp-Method and Mcp-Name headers, the version and client capabilities
   in params._meta). Printed: median and p99 of each and the ratio tool/API (target: within
   1.5x). Then once through the official SDK client (mcp.Client over streamable_http_client,
   which probes server/discover and then speaks 2026-07-28), with the HTTP requests its
   connection and each call cost.
2. search: an account of `--search-initiatives` initiatives (titles and descriptions from
   small vocabularies, written by `write_search_bundle` below) plus people and vendors; the
   search tool through /mcp for an exact title, a prefix, a title substring that matches many,
   a description-only substring and a query matching nothing (target: median under 50 ms on
   SQLite), interleaved with the same search run in process.

The machine has 2 cores and other work may run on it: the load average is printed before and
after, and the figures are only as quiet as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from functools import partial
from itertools import count
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
)

from airoi.auth import Principal, authenticate
from airoi.catalog import Pages
from airoi.db.engine import make_engine
from airoi.reports import search as search_module
from airoi.reports.roi import compute_roi
from airoi.settings import Settings
from bench.common import WARM_UP, load, ok, scratch_databases, serving, summary, timed_interleaved
from bench.make_bundle import ACCOUNT_ID, BENCH_TOKEN, OWNER_ID, _write_array, write_bundle

TODAY = date(2026, 6, 15)
TARGET_ROI_RATIO = 1.5
TARGET_SEARCH_MS = 50.0
HANDSHAKE_VERSION = "2025-11-25"
ENVELOPE_VERSION = "2026-07-28"
SDK_CALLS = 20

# search account vocabularies: title = "<action> <object> for <area> #<n>"
ACTIONS = (
    "Automate",
    "Summarise",
    "Draft",
    "Classify",
    "Forecast",
    "Review",
    "Translate",
    "Search",
    "Triage",
    "Extract",
)
OBJECTS = (
    "invoices",
    "tickets",
    "contracts",
    "emails",
    "reports",
    "code changes",
    "sales calls",
    "documents",
    "leads",
    "policies",
)
AREAS = (
    "Finance",
    "Sales",
    "Support",
    "Legal",
    "People",
    "Marketing",
    "Engineering",
    "Operations",
    "Procurement",
    "Security",
)
MODELS = ("Copilot", "Claude", "ChatGPT", "Gemini", "an in-house model")
STAGES = ("identified", "reviewing", "implementing", "live", "paused", "completed")


def search_title(i: int) -> str:
    return f"{ACTIONS[i % 10]} {OBJECTS[i // 10 % 10]} for {AREAS[i // 100 % 10]} #{i}"


def search_queries(initiatives: int) -> tuple[tuple[str, str], ...]:
    return (
        ("exact title", search_title(max(initiatives * 5 // 8, 1))),
        ("prefix (1 in 100)", "automate invoices"),
        ("substring (1 in 10)", "for sales"),
        ("description only", "copilot"),
        ("matches nothing", "zebra quantum"),
    )


def write_search_bundle(path: Path, *, initiatives: int, seed: int = 11) -> None:
    """One account (BENCH_TOKEN) with `initiatives` initiatives, 60 people and 100 vendors."""
    rng = random.Random(seed)
    with path.open("w") as out:
        out.write("{\n")
        _write_array(out, "accounts", [{"id": ACCOUNT_ID, "name": "Search Co"}], first=True)
        people = [
            {"id": OWNER_ID, "account_id": ACCOUNT_ID, "name": "Bench Owner", "role": "owner"}
        ]
        people += [
            {
                "id": i,
                "account_id": ACCOUNT_ID,
                "name": f"Person {i} {AREAS[i % 10]}",
                "role": "member",
            }
            for i in range(2, 61)
        ]
        _write_array(out, "users", people)
        _write_array(out, "tokens", [{"user_id": OWNER_ID, "token": BENCH_TOKEN}])
        _write_array(
            out,
            "vendors",
            (
                {"id": i, "account_id": ACCOUNT_ID, "name": f"{AREAS[i % 10]} Vendor {i}"}
                for i in range(1, 101)
            ),
        )
        _write_array(
            out,
            "initiatives",
            (
                {
                    "id": i,
                    "account_id": ACCOUNT_ID,
                    "title": search_title(i),
                    "description": (
                        f"Use {MODELS[i % 5]} to {ACTIONS[i % 10].lower()} "
                        f"{OBJECTS[i // 10 % 10]} in {AREAS[i // 100 % 10]}; "
                        f"pilot with {rng.randint(5, 500)} users."
                    ),
                    "stage": STAGES[i % len(STAGES)],
                    "category": AREAS[i // 100 % 10],
                }
                for i in range(1, initiatives + 1)
            ),
        )
        out.write("\n}\n")


# the two wire forms of a raw tools/call ---------------------------------------------------


class RawToolCaller:
    """JSON-RPC `tools/call` POSTed to /mcp as an assistant's HTTP client sends it."""

    def __init__(self, client: httpx.Client, version: str) -> None:
        self.client = client
        self.url = str(client.base_url.copy_with(path="/mcp"))
        self.version = version
        self.ids = count(1)

    def request(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, str], bytes]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": self.version,
        }
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if self.version == ENVELOPE_VERSION:
            headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
            params["_meta"] = {
                PROTOCOL_VERSION_META_KEY: self.version,
                CLIENT_CAPABILITIES_META_KEY: {},
                CLIENT_INFO_META_KEY: {"name": "airoi-bench", "version": "0"},
            }
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call", "params": params}
        return headers, json.dumps(body).encode()

    def __call__(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        headers, body = self.request(name, arguments)
        response = ok(self.client.post(self.url, content=body, headers=headers))
        result = response.json()["result"]
        assert not result.get("isError"), result
        return result["structuredContent"]  # type: ignore[no-any-return]


def api_get(client: httpx.Client, path: str, params: dict[str, Any]) -> Any:
    return ok(client.get(path, params=params)).json()


def principal_for(url: str) -> tuple[Any, Principal]:
    engine = make_engine(url)
    with engine.connect() as conn:
        principal = authenticate(conn, f"Bearer {BENCH_TOKEN}")
    return engine, principal


# the SDK client ----------------------------------------------------------------------------


def sdk_figures(base: str, name: str, arguments: dict[str, Any], calls: int) -> dict[str, Any]:
    """Connect the official client once, then `calls` calls: times and HTTP requests seen."""
    seen: list[str] = []

    async def on_request(request: Any) -> None:
        method = request.headers.get("mcp-method") or ""
        version = request.headers.get("mcp-protocol-version") or "-"
        seen.append(f"{request.method} {method or 'body'} v{version}")

    async def run() -> dict[str, Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {BENCH_TOKEN}"})
        http.event_hooks = {"request": [on_request], "response": []}
        started = time.perf_counter()
        async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http)) as c:
            connect_ms = (time.perf_counter() - started) * 1000
            connect_requests = list(seen)
            samples = []
            for i in range(calls + WARM_UP):
                before = len(seen)
                began = time.perf_counter()
                result = await c.call_tool(name, arguments)
                if i >= WARM_UP:
                    samples.append((time.perf_counter() - began) * 1000)
                per_call = seen[before:]
                assert not result.is_error, result.content
            return {
                "protocol": c.protocol_version,
                "connect_ms": connect_ms,
                "connect_requests": connect_requests,
                "call_requests": per_call,
                **summary(samples),
            }

    return anyio.run(run)


# the two parts -----------------------------------------------------------------------------


def row(label: str, via: str, figures: dict[str, float], note: str = "") -> None:
    print(
        f"  {label:22} {via:34} p50 {figures['p50_ms']:8.2f} ms  p99 {figures['p99_ms']:8.2f} ms"
        + (f"  {note}" if note else ""),
        flush=True,
    )


def verdict(passed: bool) -> str:
    return "PASS" if passed else "MISS"


def roi_part(url: str, repeats: int) -> None:
    engine, principal = principal_for(url)
    with serving(url, AIROI_TODAY=TODAY.isoformat()) as client:
        handshake = RawToolCaller(client, HANDSHAKE_VERSION)
        envelope = RawToolCaller(client, ENVELOPE_VERSION)
        api_p50: dict[str, float] = {}
        for window in ("all", "1yr"):
            args = {"window": window}
            # The same figures both ways (the tool adds roi_percent, and carries its period
            # with a `from` key).
            api = api_get(client, "roi", args)
            for caller in (handshake, envelope):
                tool = caller("get_roi_summary", args)
                for key in ("approved_value_cents", "total_cost_cents", "net_value_cents", "cost"):
                    assert tool[key] == api[key], (key, tool[key], api[key])

            def in_process(w: str = window) -> None:
                with engine.connect() as db:
                    compute_roi(db, principal, window=w, initiative_id=None, today=TODAY)

            results = timed_interleaved(
                {
                    "api": partial(api_get, client, "roi", args),
                    "handshake": partial(handshake, "get_roi_summary", args),
                    "envelope": partial(envelope, "get_roi_summary", args),
                    "direct": in_process,
                },
                repeats,
            )
            label = f"roi window={window}"
            base = api_p50[window] = results["api"]["p50_ms"]
            row(label, "GET /api/v1/roi", results["api"])
            for key, via in (
                ("handshake", f"/mcp tools/call (v{HANDSHAKE_VERSION})"),
                ("envelope", f"/mcp tools/call (v{ENVELOPE_VERSION})"),
            ):
                ratio = results[key]["p50_ms"] / base
                row(
                    label,
                    via,
                    results[key],
                    f"ratio {ratio:.2f}x {verdict(ratio <= TARGET_ROI_RATIO)}"
                    f" (<= {TARGET_ROI_RATIO}x)",
                )
            row(label, "compute_roi in process (no HTTP)", results["direct"])
        base_url = str(client.base_url.copy_with(path="")).rstrip("/")
        sdk = sdk_figures(base_url, "get_roi_summary", {"window": "all"}, SDK_CALLS)
        ratio = sdk["p50_ms"] / api_p50["all"]
        row(
            "roi window=all",
            f"SDK Client.call_tool (v{sdk['protocol']})",
            sdk,
            f"ratio {ratio:.2f}x (GET /roi measured above)",
        )
        print(
            f"  SDK connect {sdk['connect_ms']:.1f} ms over {len(sdk['connect_requests'])} "
            f"HTTP request(s) {sdk['connect_requests']}; each call "
            f"{len(sdk['call_requests'])} request(s) {sdk['call_requests']}",
            flush=True,
        )
    engine.dispose()


def search_part(url: str, initiatives: int, repeats: int, sqlite: bool) -> None:
    engine, principal = principal_for(url)
    pages = Pages(Settings.from_env().app_url)
    with serving(url, AIROI_TODAY=TODAY.isoformat()) as client:
        handshake = RawToolCaller(client, HANDSHAKE_VERSION)
        for label, query in search_queries(initiatives):
            found = handshake("search", {"query": query})
            kinds: dict[str, int] = {}
            for hit in found["results"]:
                kinds[hit["kind"]] = kinds.get(hit["kind"], 0) + 1
            top = found["results"][0]["title"] if found["results"] else None

            def in_process(q: str = query) -> None:
                with engine.connect() as db:
                    search_module.search(db, principal, query=q, kinds=None, pages=pages)

            results = timed_interleaved(
                {"mcp": partial(handshake, "search", {"query": query}), "direct": in_process},
                repeats,
            )
            over_mcp, direct = results["mcp"], results["direct"]
            note = (
                f"{verdict(over_mcp['p50_ms'] < TARGET_SEARCH_MS)} (< {TARGET_SEARCH_MS:.0f} ms)"
                if sqlite
                else ""
            )
            shown = query if len(query) <= 30 else query[:29] + "…"
            print(
                f"  search {label:20} {shown!r:34} {len(found['results'])} hits "
                f"{kinds} has_more={found['has_more']}; first {top!r}",
                flush=True,
            )
            row("", f"/mcp tools/call (v{HANDSHAKE_VERSION})", over_mcp, note)
            row("", "search() in process (no HTTP)", direct)
    engine.dispose()


@contextmanager
def stage(what: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    print(f"  ({what}: {time.perf_counter() - started:.0f} s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cost-entries", type=int, default=200_000)
    parser.add_argument("--value-entries", type=int, default=40_000)
    parser.add_argument("--initiatives", type=int, default=2_000)
    parser.add_argument("--search-initiatives", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--postgres", help="an admin URL; scratch databases are made and dropped")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="airoi-bench-tools-") as scratch:
        run(args, Path(scratch))


def run(args: argparse.Namespace, work: Path) -> None:
    started = time.perf_counter()
    (work / "roi").mkdir()
    (work / "search").mkdir()
    roi_bundle = work / "roi.json"
    search_bundle = work / "search.json"
    write_bundle(
        roi_bundle,
        cost_entries=args.cost_entries,
        initiatives=args.initiatives,
        value_entries=args.value_entries,
    )
    write_search_bundle(search_bundle, initiatives=args.search_initiatives)
    roi_rows = args.cost_entries + args.value_entries + args.initiatives
    print(
        f"roi account: {args.cost_entries:,} cost entries, {args.value_entries:,} value entries, "
        f"{args.initiatives:,} initiatives; search account: {args.search_initiatives:,} "
        f"initiatives; today {TODAY}; {args.repeats} timed calls each after {WARM_UP} warm-up"
    )
    print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    with (
        scratch_databases(work / "roi", args.postgres) as roi_targets,
        scratch_databases(work / "search", args.postgres) as search_targets,
    ):
        for (name, roi_url), (_, search_url) in zip(roi_targets, search_targets, strict=True):
            print(f"\n{name}", flush=True)
            with stage(f"load {roi_rows:,} rows"):
                load(roi_url, roi_bundle, roi_rows)
            with stage(f"load {args.search_initiatives:,} initiatives"):
                load(search_url, search_bundle, args.search_initiatives)
            with stage("roi timings"):
                roi_part(roi_url, args.repeats)
            with stage("search timings"):
                search_part(
                    search_url, args.search_initiatives, args.repeats, sqlite=name == "sqlite"
                )
    print(
        "\nload average after: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + f"; total {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
