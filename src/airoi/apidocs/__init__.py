"""The interactive API reference at /api/v1/docs, and the index at /api/v1.

The reference is Swagger UI (vendored in `assets/`, VENDORED.md says from where) drawing the
description the service serves at /api/v1/openapi.json; its "Try it out" sends the bearer token
typed into Authorize. Reading the page needs no token, as reading the description needs none.

It is served the framework's way, by a render plugin of the OpenAPI configuration
(`OpenAPIConfig.render_plugins`) on a router of our own (`OpenAPIConfig.openapi_router`):
- The page is our own HTML, not the plugin's: the plugin's page inlines its start-up script and
  the whole description, and a strict Content-Security-Policy (`script-src 'self'`, no
  'unsafe-inline') would refuse to run it. Ours loads the bundle, then `assets/docs.js`, which
  starts Swagger UI on the served description.
- Its assets are served by the service from the package (`/api/v1/docs/assets/{name}`), never
  from a CDN: the page works with no network beyond the server.
- The description stays airoi's own handler at /api/v1/openapi.json (described in itself, with
  SEMANTICS R12's parameters): the plugin claims the framework's `/openapi.json` so that no
  second, different copy is added under the docs. None of these routes is in the description:
  they are pages for people, not operations of the API.
- The framework adds a catch-all under the docs router, answering an HTML 404 page; anything
  there but the page and its assets answers the API's own 404 instead (SPEC 7).
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Awaitable, Callable
from functools import cache
from html import escape
from importlib.resources import files
from typing import Any, Final

import msgspec
from litestar import Request, Response, Router, get
from litestar.datastructures import ResponseHeader
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.params import FromPath

from airoi import __version__
from airoi.conditional import takes_gzip
from airoi.errors import ApiError

__all__ = [
    "ASSETS_PATH",
    "CONTENT_SECURITY_POLICY",
    "DESCRIPTION_PATH",
    "DOCS_PATH",
    "INDEX_PATH",
    "SWAGGER_UI_VERSION",
    "ApiDocsPage",
    "api_index",
    "docs_router",
]

INDEX_PATH: Final = "/api/v1"
# airoi.app.OPENAPI_PATH (that module imports this one); tests/apidocs/test_api_docs.py holds
# them equal.
DESCRIPTION_PATH: Final = f"{INDEX_PATH}/openapi.json"
DOCS_PATH: Final = f"{INDEX_PATH}/docs"
ASSETS_PATH: Final = f"{DOCS_PATH}/assets"
DASHBOARD_PATH: Final = "/"
SWAGGER_UI_VERSION: Final = "5.35.0"

# Everything the page loads comes from the server: scripts and styles from files (no inline
# code, no eval), the description and "Try it out" by fetch to the same origin, and images
# only from the server or as data: URLs (Swagger UI's icons are data: URLs in its CSS). It may
# not be framed, and a form on it may not post anywhere.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
# What the asset route serves: the vendored bundle and stylesheet, and the page's own two files.
ASSET_TYPES: Final = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "docs.js": "text/javascript",
    "docs.css": "text/css",
}
NO_SUCH_ROUTE: Final = "No such route."


# An asset asked for at its current version (the page names each as NAME?v=VERSION, from its
# bytes) is kept a year without asking again: an upgrade changes the address. Asked for
# otherwise, it is asked again each time and answered 304 while unchanged (the ETag).
IMMUTABLE: Final = "public, max-age=31536000, immutable"
REVALIDATE: Final = "no-cache"


def asset_url(name: str) -> str:
    return f"{ASSETS_PATH}/{name}"


@cache
def asset_version(name: str) -> str:
    """A shipped asset's version: the start of a digest of its bytes."""
    return hashlib.sha256(asset_bytes(name)).hexdigest()[:12]


def versioned_url(name: str) -> str:
    return f"{asset_url(name)}?v={asset_version(name)}"


@cache
def asset_bytes(name: str) -> bytes:
    """A shipped asset's bytes, read from the package once."""
    return (files(__package__) / "assets" / name).read_bytes()


@cache
def asset_gzipped(name: str) -> bytes:
    """A shipped asset gzipped once. Compressed per request by airoi.conditional, the 1.7 MB
    bundle took about 37 ms of the event loop each time; once, at level 9, it is 0.46 MB."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container, no time
    return compressor.compress(asset_bytes(name)) + compressor.flush()


class ApiDocsPage(SwaggerRenderPlugin):
    """Swagger UI at the docs router's root, from the shipped assets, with no inline script."""

    def __init__(self) -> None:
        super().__init__(
            version=SWAGGER_UI_VERSION,
            js_url=asset_url("swagger-ui-bundle.js"),
            css_url=asset_url("swagger-ui.css"),
            # Not loaded: the page uses the API preset alone (no top bar with an address box
            # to load another description). Named so that no CDN address is left in the plugin.
            standalone_preset_js_url=asset_url("swagger-ui-bundle.js"),
            path="/",
            favicon='<link rel="icon" href="data:,">',  # no request for /favicon.ico
            style="",
        )

    def render(self, request: Request[Any, Any, Any], openapi_schema: dict[str, Any]) -> bytes:
        title = escape(f"{openapi_schema['info']['title']} API reference")
        return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{self.favicon}
<link rel="stylesheet" href="{versioned_url("swagger-ui.css")}">
<link rel="stylesheet" href="{versioned_url("docs.css")}">
<script src="{versioned_url("swagger-ui-bundle.js")}" defer></script>
<script src="{versioned_url("docs.js")}" defer></script>
</head>
<body>
<noscript>This reference needs JavaScript; the description itself is at
<a href="{DESCRIPTION_PATH}">{DESCRIPTION_PATH}</a>.</noscript>
<div id="swagger-ui" data-description-url="{DESCRIPTION_PATH}"></div>
</body>
</html>
""".encode()

    def has_path(self, path: str) -> bool:
        # Claiming the framework's /openapi.json keeps it from adding its own copy of the
        # description under the docs: the one served is airoi's, at DESCRIPTION_PATH.
        return path == "/openapi.json" or super().has_path(path)

    def receive_router(self, router: Router) -> None:
        # The assets, in place of the plugin's OAuth2 redirect page (the API takes a bearer
        # token, typed into Authorize; there is no OAuth2 flow to come back from).
        router.register(docs_asset)


# In a worker thread: the first request for an asset reads and compresses it.
@get("/assets/{name:str}", include_in_schema=False, sync_to_thread=True)
def docs_asset(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[bytes]:
    media_type = ASSET_TYPES.get(name)
    if media_type is None:
        raise ApiError(404, NO_SUCH_ROUTE)
    # Tagged, answered 304 on a match and given Vary by airoi.conditional, as every /api/v1/ 200.
    current = request.query_params.get("v") == asset_version(name)
    headers = {"Cache-Control": IMMUTABLE if current else REVALIDATE}
    if takes_gzip(request.headers.get("accept-encoding")):
        gzipped = asset_gzipped(name)
        headers["Content-Encoding"] = "gzip"
        return Response(gzipped, media_type=media_type, headers=headers)
    return Response(asset_bytes(name), media_type=media_type, headers=headers)


BeforeRequest = Callable[[Request[Any, Any, Any]], Awaitable[Any]]


def docs_router(before_request: BeforeRequest) -> Router:
    """The router the OpenAPI configuration fills with the docs page (its `openapi_router`).

    `before_request` is the app's own hook (SEMANTICS R12's strict parameters): a router's hook
    replaces the app's, so it is run from this one."""
    served = {DOCS_PATH, f"{ASSETS_PATH}/{{name}}"}

    async def only_the_page_and_its_assets(request: Request[Any, Any, Any]) -> Any:
        if request.scope.get("path_template") not in served:  # the framework's catch-all
            raise ApiError(404, NO_SUCH_ROUTE)
        return await before_request(request)

    return Router(
        DOCS_PATH,
        route_handlers=[],
        include_in_schema=False,
        # No token to read the page (airoi.app.PUBLIC_OPT); a query it does not read is ignored
        # (airoi.app.IGNORES_QUERY_OPT): ?url= loads no other description (queryConfigEnabled
        # is off in docs.js), and ?utm_source= from a pasted link is no error for a person.
        opt={"public": True, "ignores_query": True},
        before_request=only_the_page_and_its_assets,
        response_headers=[
            ResponseHeader(name="Content-Security-Policy", value=CONTENT_SECURITY_POLICY),
            ResponseHeader(name="X-Content-Type-Options", value="nosniff"),
            ResponseHeader(name="Referrer-Policy", value="no-referrer"),
            # The page, asked again each time (304 while unchanged); an asset sets its own.
            ResponseHeader(name="Cache-Control", value=REVALIDATE),
        ],
    )


class IndexLinks(msgspec.Struct):
    openapi: str
    docs: str
    dashboard: str


class ApiIndex(msgspec.Struct):
    name: str
    version: str
    links: IndexLinks


_INDEX = ApiIndex(
    name="airoi",
    version=__version__,
    links=IndexLinks(openapi=DESCRIPTION_PATH, docs=DOCS_PATH, dashboard=DASHBOARD_PATH),
)


# Public, as the description is: it says where things are and nothing about an account. Not in
# the description: it is a signpost for a person who opens the base URL, not an operation a
# generated client would call, and the description it points to stays the API's alone.
@get(INDEX_PATH, opt={"public": True}, include_in_schema=False, sync_to_thread=False)
def api_index() -> ApiIndex:
    return _INDEX
