"""The HTTP floor: an ASGI app that answers every GET with a fixed body, nothing else.

`bench.ceiling` serves it with the same server and options as `airoi serve` (one uvicorn
worker pinned to the same core, driven by the same wrk) with the ceiling's own page as the
body, to show what HTTP alone costs per page on this machine. The body's file is named by
`AIROI_FLOOR_BODY`.

`framework` is the framework floor: the same body from one GET route of the framework the
service is built on (Litestar), with no parameter, dependency or middleware, sent as bytes
the handler already holds. It shows what routing a request to a handler and sending its
answer cost before any of the service's own work.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from litestar import Litestar, Response, get

BODY = Path(os.environ["AIROI_FLOOR_BODY"]).read_bytes()
START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(BODY)).encode()),
    ],
}
END = {"type": "http.response.body", "body": BODY, "more_body": False}


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send(START)
    await send(END)


@get("/", sync_to_thread=False, media_type="application/json")
def _body() -> Response[bytes]:
    return Response(BODY, media_type="application/json")


framework = Litestar([_body], openapi_config=None)
