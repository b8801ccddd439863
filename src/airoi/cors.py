"""Cross-origin requests from the origins `AIROI_CORS_ORIGINS` names (SEMANTICS R30).

A notebook or dashboard in a browser (JupyterLite, Observable, a page on another host) reads
the API with a bearer token in the Authorization header, never with cookies: so the answers
allow the origin and never credentials. An allowed origin's preflight (`OPTIONS` with
`Origin` and `Access-Control-Request-Method`) on a served route is answered 204 here, before
the token is looked at; on an unknown route it stays 404, and any other `OPTIONS` stays 405
(R30). Every answer to an allowed origin (errors too, so a page can show the API's message)
names it in `Access-Control-Allow-Origin` and exposes the headers a client reads. With no
origins set (the default) this layer is not installed at all.

The framework's own CORS support answers preflights through the OPTIONS handlers it adds to
every route; the service refuses OPTIONS as R30 says (airoi.app.only_get_and_head), so the
two rules are kept together here instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from litestar import Litestar
from litestar.types import Receive, Send

from airoi.settings import ANY_ORIGIN

__all__ = ["allow_cross_origin"]

# What a page may send: the token, the conditional GET, its own request id (answered and
# logged as the request's), and the tool endpoint's own headers.
ALLOWED_HEADERS: Final = (
    "Authorization, Content-Type, Accept, If-None-Match, X-Request-Id, "
    "Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
)
# What a page may read besides the simple headers.
EXPOSED_HEADERS: Final = (
    "ETag, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, "
    "X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, WWW-Authenticate, "
    "Mcp-Session-Id"
)
MAX_AGE_SECONDS: Final = 600


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _varied(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`headers` with Origin named in their `Vary` (one header: Accept-Encoding's joined)."""
    out = []
    varied = False
    for name, value in headers:
        if name.lower() == b"vary" and not varied:
            varied = True
            named = b"origin" in value.lower()
            out.append((name, value if named else value + b", Origin"))
        else:
            out.append((name, value))
    if not varied:
        out.append((b"vary", b"Origin"))
    return out


def _route_patterns(app: Litestar) -> list[tuple[re.Pattern[str], str]]:
    """Each served path, as a pattern, with the methods a preflight may name for it."""
    patterns = []
    for route in app.routes:
        handlers: list[Any] = list(getattr(route, "route_handlers", ()))
        if not handlers:
            handlers = [getattr(route, "route_handler", None)]
        served: set[str] = set()
        named: Iterable[str] = ()
        for handler in handlers:
            served |= set(getattr(handler, "http_methods", None) or ())
            named = getattr(handler, "opt", {}).get("served_methods", named)
        # An ASGI route names what it serves in its opt (airoi.app.SERVED_METHODS_OPT).
        methods = sorted(set(named) or (served - {"OPTIONS"}) | {"HEAD"})
        parts = re.split(r"\{[^}]+\}", route.path_format)
        pattern = "[^/]+".join(re.escape(part) for part in parts)
        patterns.append((re.compile(pattern), ", ".join(methods)))
    return patterns


def allow_cross_origin(app: Litestar, origins: tuple[str, ...]) -> None:
    """Wrap the app's ASGI handler with the CORS answers for `origins` (none: unchanged)."""
    if not origins:
        return
    inner: Any = app.asgi_handler
    routes = _route_patterns(app)
    any_origin = origins == (ANY_ORIGIN,)
    allowed = frozenset(origins)

    async def handler(scope: Any, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        if origin is None or not (any_origin or origin.lower() in allowed):
            # Varied by Origin all the same: a shared cache must not give this answer (no
            # CORS headers) to an allowed origin, nor an allowed origin's to anyone else.
            async def send_varied(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": _varied(message.get("headers", ()))}
                await send(message)

            await inner(scope, receive, send_varied)
            return
        allow = [
            (b"access-control-allow-origin", b"*" if any_origin else origin.encode("latin-1")),
        ]
        if scope["method"] == "OPTIONS" and _header(scope, b"access-control-request-method"):
            methods = next((m for p, m in routes if p.fullmatch(scope["path"])), None)
            if methods is not None:
                start: Any = {
                    "type": "http.response.start",
                    "status": 204,
                    "headers": [
                        *allow,
                        (b"vary", b"Origin"),
                        (b"access-control-allow-methods", methods.encode()),
                        (b"access-control-allow-headers", ALLOWED_HEADERS.encode()),
                        (b"access-control-max-age", str(MAX_AGE_SECONDS).encode()),
                    ],
                }
                await send(start)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return

        async def send_allowed(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [
                        *_varied(message.get("headers", ())),
                        *allow,
                        (b"access-control-expose-headers", EXPOSED_HEADERS.encode()),
                    ],
                }
            await send(message)

        await inner(scope, receive, send_allowed)

    app.asgi_handler = handler
