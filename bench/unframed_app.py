"""The service's own work for one list page, without the framework: the unframed floor.

`bench.ceiling` serves this ASGI app on the same server as `airoi serve` (one uvicorn worker
pinned to the same core, driven by the same wrk) and drives GET /api/v1/cost_entries?limit=N
at it, to show what the service's per-request duties cost once no framework stands between
them and HTTP. It runs the project's own code for each of them, in the service's order:

- the bearer token looked up on a pooled connection (`airoi.auth.authenticate`);
- the token's rate-limit budget counted (`airoi.ratelimit.RateLimiter`), its headers sent;
- query names checked against the endpoint's, `limit` read as a whole number in range;
- the page read (`COST_ENTRIES.served`: on SQLite its rows as the JSON the database writes),
  encoded by msgspec;
- the strong ETag (`airoi.conditional.entity_tag`), a request id, one access-log line and
  the request counted in the metrics (`airoi.observability.Metrics`).

What it leaves out, because the framework does it in the service: routing beyond the one
path, every other parameter's validation, HEAD, 304 and the SPEC 7 error bodies (a refusal
here is a bare status). Its body is checked equal to the ceiling's before it is driven.

`page_only` is the same app without the per-request duties: no token lookup (the bench's
account is read), no rate limit, ETag, log line or metrics; it checks out a connection,
reads the page and encodes it. The two side by side show what those duties cost served.
"""

from __future__ import annotations

import time
import uuid
from typing import Any
from urllib.parse import parse_qsl

import msgspec

from airoi.auth import authenticate, authorization_of, bearer_secret
from airoi.conditional import entity_tag
from airoi.db.engine import make_engine
from airoi.errors import ApiError
from airoi.listing import MAX_LIMIT, Cursors, served_rows
from airoi.logs import configure_logging
from airoi.observability import Metrics, log_access, loggable_path
from airoi.ratelimit import RateLimiter
from airoi.reports.cost_entries import COST_ENTRIES, CostEntryList
from airoi.settings import Settings
from airoi.tokens import hash_token
from bench.make_bundle import ACCOUNT_ID

PATH = "/api/v1/cost_entries"
QUERY_NAMES = frozenset({"limit", "cursor"})

settings = Settings.from_env()
engine = make_engine(
    settings.database_url, read_only=True, statement_timeout_ms=settings.statement_timeout_ms
)
limiter = RateLimiter(settings.rate_limit, settings.redis_url)
metrics = Metrics()
cursors = Cursors(settings.secret_key)  # the store's own secret, as the service's (R13)
encoder = msgspec.json.Encoder()
configure_logging(settings.log_format, settings.log_level)  # as `airoi serve` does


def _page(scope: dict[str, Any], duties: bool) -> tuple[bytes, dict[str, str], int]:
    """The body, the rate-limit headers and the account of one request."""
    authorization = authorization_of(scope)
    conn = engine.connect()
    try:
        account_id, standing = ACCOUNT_ID, None
        if duties:
            secret = bearer_secret(authorization)
            account_id = authenticate(conn, authorization).account_id
            standing = limiter.hit_here(hash_token(secret))
            if standing is not None and not standing.allowed:
                raise ApiError(429, "Too many requests.")
        query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
        if any(name not in QUERY_NAMES for name, _ in query):
            raise ApiError(400, "Unknown query parameter.")
        values = dict(query)
        limit_text = values.get("limit", "100")
        if not limit_text.isdigit() or not 1 <= int(limit_text) <= MAX_LIMIT:
            raise ApiError(400, "The limit parameter is not valid.")
        page = COST_ENTRIES.served(
            conn,
            account_id,
            cursors=cursors,
            cursor=values.get("cursor"),
            limit=int(limit_text),
        )
        body = encoder.encode(CostEntryList(data=served_rows(page), page=page.info))
    finally:
        conn.close()
    headers = standing.headers() if standing is not None else {}
    return body, headers, account_id


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await _serve(scope, receive, send, duties=True)


async def page_only(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await _serve(scope, receive, send, duties=False)


async def _serve(scope: dict[str, Any], receive: Any, send: Any, *, duties: bool) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": f"{message['type']}.complete"})
            if message["type"] == "lifespan.shutdown":
                return
    started = time.perf_counter()
    request_id = uuid.uuid4().hex
    account_id = None
    status = 404
    headers = [(b"x-request-id", request_id.encode())]
    body = b""
    if scope["path"] == PATH:
        try:
            body, extra, account_id = _page(scope, duties)
            status = 200
            headers += [(k.lower().encode(), v.encode()) for k, v in extra.items()]
            headers.append((b"content-type", b"application/json"))
            if duties:
                headers.append((b"etag", entity_tag(body).encode()))
        except ApiError as exc:
            status = exc.status
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
    if not duties:
        return
    seconds = time.perf_counter() - started
    metrics.observe(scope["method"], PATH, status, seconds)
    path = loggable_path(scope["path"], PATH)
    log_access(scope["method"], path, PATH, status, seconds, account_id, request_id)
