"""The dashboard at `/` and its files at `/assets/NAME` (docs/dashboard.md).

The page holds no data: its script reads the public API (`/api/v1/...`) with the token the
person gives it, so these routes need no token, like `/healthz`. They serve GET and HEAD
(SEMANTICS R30, as every route: another method is 405) and are left out of the OpenAPI
description, which describes the API. Every file is shipped in the package and read once; no
script, style or font comes from anywhere else, and the Content-Security-Policy says so to
the browser: no inline script or style, requests to this server only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from litestar import Request, Response, get
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response import Redirect

from airoi.conditional import entity_tag, none_match
from airoi.errors import ApiError

__all__ = ["CONTENT_SECURITY_POLICY", "DASHBOARD_PATH", "ROUTE_HANDLERS"]

DASHBOARD_PATH: Final = "/"
ASSETS_PATH: Final = "/assets"
# airoi.app's PUBLIC_OPT and IGNORES_QUERY_OPT (imported from there would be a cycle): no token
# asked, and a query these pages do not read (?utm_source=...) is ignored, not refused.
_PUBLIC: Final = {"public": True, "ignores_query": True}

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# The page is small and changes with the package: asked again each time, answered 304 when
# it has not changed (the ETag), so an upgrade is never hidden behind a cached copy. It names
# each file it loads with that file's version (`/assets/NAME?v=VERSION`, from its bytes), and a
# file asked for at its current version is kept for a year without asking again: an upgrade
# changes the version, hence the address. Asked for without it (or at an old version), a file
# is asked again each time, as the page is.
_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
REVALIDATE: Final = "no-cache"
IMMUTABLE: Final = "public, max-age=31536000, immutable"
_MEDIA_TYPES: Final = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}


@dataclass(frozen=True)
class File:
    body: bytes
    media_type: str
    etag: str

    @property
    def version(self) -> str:
        return self.etag.strip('"')[:12]


def _read(name: str) -> File:
    body = resources.files(__package__).joinpath(name).read_bytes()
    suffix = name[name.rfind(".") :]
    return File(body, _MEDIA_TYPES[suffix], entity_tag(body))


def _assets() -> dict[str, File]:
    """The files served under /assets: those of the kinds a page loads; the vendored files'
    notes and licence stay in the package without being served."""
    folder = resources.files(__package__).joinpath("assets")
    return {
        entry.name: _read(f"assets/{entry.name}")
        for entry in folder.iterdir()
        if entry.is_file() and entry.name[entry.name.rfind(".") :] in _MEDIA_TYPES
    }


def _versioned(page: File, assets: dict[str, File]) -> File:
    """The page with each `/assets/NAME"` it names written `/assets/NAME?v=VERSION"`."""

    def versioned(match: re.Match[bytes]) -> bytes:
        name = match.group(1).decode()
        return f'{ASSETS_PATH}/{name}?v={assets[name].version}"'.encode()

    body = re.sub(rb'/assets/([\w.-]+)"', versioned, page.body)
    return File(body, page.media_type, entity_tag(body))


ASSETS: Final = _assets()
PAGE: Final = _versioned(_read("index.html"), ASSETS)


def _answer(
    file: File, request: Request[Any, Any, Any], cache_control: str = REVALIDATE
) -> Response[bytes]:
    headers = {**_HEADERS, "Cache-Control": cache_control, "ETag": file.etag}
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None and none_match(if_none_match, file.etag):
        return Response(b"", status_code=304, headers=headers)
    return Response(file.body, media_type=file.media_type, headers=headers)


@get(DASHBOARD_PATH, opt=_PUBLIC, include_in_schema=False, sync_to_thread=False)
def dashboard(request: Request[Any, Any, Any]) -> Response[bytes]:
    return _answer(PAGE, request)


@get(f"{ASSETS_PATH}/{{name:str}}", opt=_PUBLIC, include_in_schema=False, sync_to_thread=False)
def asset(name: FromPath[str], request: Request[Any, Any, Any]) -> Response[bytes]:
    file = ASSETS.get(name)
    if file is None:
        raise ApiError(404, "No such file.")
    current = request.query_params.get("v") == file.version
    return _answer(file, request, IMMUTABLE if current else REVALIDATE)


# --- the application's pages, sent to the dashboard's views --------------------------------
# The tools give out page URLs: AIROI_APP_URL plus a path of airoi/catalog/pages.json. With
# AIROI_APP_URL unset, `airoi serve` and `airoi demo` make it this server, so the pages the
# dashboard has a view of are answered here with a redirect to that view (its hash routes).
# `/` is the dashboard itself. The others stay 404: `/metrics` is the Prometheus endpoint
# (airoi.observability), and templates, assessments, help and settings have no view.
PAGE_VIEWS: Final = {
    "/roi": "/",
    "/initiatives": "/",  # the portfolio ranks every initiative, each a link to its view
    "/decisions": "/",  # decisions are shown on each initiative's view, reached from there
    "/budgets": "/budgets",
    "/integrations": "/connections",
}
# An initiative id as the API writes one: digits, no leading zero, at most 19 of them.
_INITIATIVE_ID: Final = re.compile(r"[1-9][0-9]{0,18}")


def _to_view(view: str) -> Redirect:
    # 303: the dashboard's view is another resource, fetched with GET.
    return Redirect(f"{DASHBOARD_PATH}#{view}", status_code=303)


@get(list(PAGE_VIEWS), opt=_PUBLIC, include_in_schema=False, sync_to_thread=False)
def page_view(request: Request[Any, Any, Any]) -> Redirect:
    return _to_view(PAGE_VIEWS[request.url.path.rstrip("/") or "/"])


@get("/initiatives/{id:str}", opt=_PUBLIC, include_in_schema=False, sync_to_thread=False)
def initiative_page(id: FromPath[str]) -> Redirect:
    if not _INITIATIVE_ID.fullmatch(id):
        raise ApiError(404, "No such page.")
    return _to_view(f"/initiatives/{id}")


@get(
    "/integrations/connect/{platform:str}",
    opt=_PUBLIC,
    include_in_schema=False,
    sync_to_thread=False,
)
def connect_page(platform: FromPath[str]) -> Redirect:
    # The dashboard reads and connects nothing: the nearest view is the connections'.
    return _to_view("/connections")


ROUTE_HANDLERS: Final[list[HTTPRouteHandler]] = [
    dashboard,
    asset,
    page_view,
    initiative_page,
    connect_page,
]
