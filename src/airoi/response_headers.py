"""Headers every answer carries, whatever made it (the API's handlers, the tool endpoint, the
OAuth routes, the dashboard's files, an error or a 405 from an outer layer).

- `X-Content-Type-Options: nosniff` on every response: a browser takes each body for the type
  it is served as, never sniffs JSON or text into HTML.
- `Cache-Control: private, no-cache` on the answers that carry an account's data (`/api/v1`
  and `/mcp`), unless the answer says something of its own (the API reference's assets say
  `immutable`, its description `no-cache`): no shared cache keeps an account's figures, and a
  client's own cache keeps them only to revalidate with the ETag (a 304 costs the service no
  body).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from litestar import Litestar

NOSNIFF: Final = (b"x-content-type-options", b"nosniff")
PRIVATE: Final = (b"cache-control", b"private, no-cache")


def protective_headers(app: Litestar, private: Iterable[str]) -> None:
    """Wrap the app's ASGI handler so every response has nosniff, and those under the
    `private` paths (and their subpaths) a private Cache-Control when they give none."""
    inner: Any = app.asgi_handler
    roots = tuple(path.rstrip("/") for path in private)

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        path: str = scope.get("path", "")
        keep_private = any(path == root or path.startswith(f"{root}/") for root in roots)

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {bytes(name).lower() for name, _ in headers}
                if NOSNIFF[0] not in names:
                    headers.append(NOSNIFF)
                if keep_private and PRIVATE[0] not in names:
                    headers.append(PRIVATE)
                message = {**message, "headers": headers}
            await send(message)

        await inner(scope, receive, sending)

    app.asgi_handler = handler
